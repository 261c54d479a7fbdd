"""What the ``entries`` rules (LG003, LG005) share: one finding per entry for the first
:data:`ENTRY_FINDINGS` problems of a file, then one finding that counts the rest, so that a list
of 50,000 stale entries is not 50,000 findings, a report stays small and nothing is left out
silently."""

from __future__ import annotations

from typing import Any, Sequence

from labelguard.core.findings import Finding
from labelguard.core.records import EntriesRecord, EntryProblem
from labelguard.core.registry import Check
from labelguard.core.text import SHOWN, clipped, plural, shorten

# Findings of one kind (LG003, LG005) made for the entries of one file, one each; the
# entries past them are counted and named in one more finding.
ENTRY_FINDINGS = 100
# Entries the finding of the rest names in its data (a report stays small); its count says all.
ENTRIES_KEPT = 1000
# Characters of one entry a finding quotes: a path is shorter; a longer line (a key, a dump
# read as a list) is cut, so that a file named as a list is never copied into the report.
ENTRY_SHOWN = 256
LIST_HINT = "Regenerate the list from the files on disk, or restore the file."


def entry_problem_findings(check: Check, record: EntriesRecord, problems: Sequence[EntryProblem], says: str,
                           what: str, hint: str) -> list[Finding]:
    """``check``'s findings about ``problems`` of ``record``: each of the first
    :data:`ENTRY_FINDINGS` says what is wrong with it (``says``, or the problem's own words),
    the rest are one finding that says how many there are (``count``) and names the first of
    them (its data holds the first :data:`ENTRIES_KEPT`); ``what`` says it of many."""
    findings = []
    for problem in problems[:ENTRY_FINDINGS]:
        detail = f" ({problem.detail})" if problem.detail else ""
        entry = clipped(problem.entry, ENTRY_SHOWN)
        findings.append(check.finding(record.display, f"{problem.place}: {entry!r} {problem.says or says}{detail}",
                                      hint=hint, **dict(problem.data), entry=entry))
    rest = problems[ENTRY_FINDINGS:]
    if rest:
        kept = rest[:ENTRIES_KEPT]
        data: dict[str, Any] = {"entries": [clipped(p.entry, ENTRY_SHOWN) for p in kept], "count": len(rest)}
        for key in dict.fromkeys(key for p in kept for key, _ in p.data):
            data[f"{key}s"] = [dict(p.data).get(key) for p in kept]
        findings.append(check.finding(
            record.display,
            f"{plural(len(rest), 'more entry')} {what}: "
            f"{shorten(rest, SHOWN, lambda p: f'{p.place} {clipped(p.entry, ENTRY_SHOWN)!r}', what='entry')}",
            hint=hint, **data,
        ))
    return findings
