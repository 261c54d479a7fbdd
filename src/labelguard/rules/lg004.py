"""LG004 on entries records: the unclean lines of a file list (a BOM, CRLF endings, whitespace
around an entry, blank, comment and duplicated lines), which loaders that do not strip each
line open as file names; the entries themselves still resolve."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import EntriesRecord
from labelguard.core.registry import FixExample, define
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, clipped, shorten
from labelguard.rules._entries import ENTRY_SHOWN

UNCLEAN_LIST = define(
    "LG004", "list-entry-unclean", "warning",
    summary="a file-list entry has stray whitespace, CRLF, a BOM, or is blank or duplicated",
    why="""
Code that builds paths with line.rstrip('\\n') keeps the trailing space or '\\r', and
np.load('case_001.npz ') fails with 'No such file'; duplicated lines silently oversample.""",
    bad="'case_001.npz '  (trailing space)  /  'case_002\\r\\n'  (Windows line ending)",
    good="'case_001.npz'",
    fix="Strip every line, drop blank and duplicate lines, save with LF endings and no BOM "
    "(`labelguard fix list`).",
    fix_safety="safe", fix_command="labelguard fix list",
    fix_examples=(FixExample(
        "train.txt with CRLF endings, a trailing space, a blank and a duplicated line -> 'a.png\\nb.png\\n'",
        lambda: {"a.png": _mask(), "b.png": _mask(), "train.txt": "a.png \r\nb.png\r\n\r\nb.png\r\n"},
        "clean_list", {"lists": ["train.txt"]}, lambda: {"train.txt": "a.png\nb.png\n"},
        spec={"num_classes": 2}, options={"lists": ["train.txt"]}),),
)


def _mask():
    return np.eye(4, dtype=np.uint8)


EXAMPLES = (
    Example(True, "a list with CRLF endings and a trailing space",
            lambda: {"a.png": _mask(), "b.png": _mask(), "train.txt": "a.png \r\nb.png\r\n"},
            spec={"num_classes": 2}, options={"lists": ("train.txt",)}),
    Example(False, "a clean list", lambda: {"a.png": _mask(), "b.png": _mask(), "train.txt": "a.png\nb.png\n"},
            spec={"num_classes": 2}, options={"lists": ("train.txt",)}),
)

_PROBLEMS = {
    "bom": "starts with a UTF-8 byte order mark",
    "crlf": "has Windows (CRLF) line endings",
    "whitespace": "has leading/trailing whitespace",
    "blank": "has blank lines",
    "comment": "has # comment lines, which a loader reading every line opens as file names",
    "duplicate": "has duplicated entries",
}
# Problems whose lines a finding quotes (the others are seen in the line numbers alone).
_QUOTED = ("whitespace", "comment", "duplicate")


@rule(UNCLEAN_LIST, "entries", EXAMPLES)
def unclean_lines(record: EntriesRecord, spec):
    """One finding per kind of unclean line, naming the lines (quoted where the text shows it)."""
    findings = []
    for problem, lines in (record.unclean or {}).items():
        quoted = problem in _QUOTED

        def line_shown(n: int, quoted: bool = quoted) -> str:
            return f"line {n}" + (f" {clipped(record.lines[n], ENTRY_SHOWN)!r}" if quoted else "")

        findings.append(UNCLEAN_LIST.finding(
            record.display,
            f"the list {_PROBLEMS.get(problem, problem)}: {shorten(lines, SHOWN, line_shown)}",
            hint="Code that does not strip each line opens 'name ' or 'name\\r' and fails; "
            "clean the list (`labelguard fix list`).",
            problem=problem, lines=list(lines),
        ))
    return findings
