"""The findings the ``tokens`` rules share, and how a file's batches merge them.

A tokenized file's batches each go through the ``tokens`` rules
(:func:`labelguard.rules._token_files.process_token_file`), and :func:`merge_findings` merges
the findings of all batches into one per problem and column for the file (every offending row
counted, the first :data:`ROWS_KEPT` named), so a 10 GB file streams in the memory of one
batch and reports as few lines as a small one.

The rules build their findings with :func:`offending_values` and
:func:`offending_sequences`: a column's values (or its sequences' lengths) outside what is
legal, asked of a :class:`~labelguard.core.spec.LabelSpec` like every other label value; what
is legal in words (``expected``) may be given as a function, called only for a finding (a
clean batch, the common case, costs no text). The
finding's data holds what the message says (``column``, ``rows``, ``row_count``, ``count``,
``values``, ``lowest``, ``highest``, ``expected``), which is what lets batches merge; ``rows``
count from 0 as ``dataset[i]`` does, and a JSON-lines file's tally adds the ``lines`` of the
rows it names (the CI formats point at them).
"""

from __future__ import annotations

from typing import Callable, Union

import numpy as np

from labelguard.core.findings import Finding
from labelguard.core.registry import Check
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun, plural, shorten, verb
from labelguard.core.tokens import TokenBatch, TokenColumn

# Rows a finding's data names (its row_count counts them all), and the first of them a
# message shows; the lowest offending values kept and shown.
ROWS_KEPT = 100
ROWS_SHOWN = 10
VALUES_KEPT = 20
VALUES_SHOWN = 6


Expected = Union[str, Callable[[], str]]


def offending_values(check: Check, batch: TokenBatch, column: TokenColumn, legal: LabelSpec, *, phrase: str,
                     noun: str, expected: Expected, hint: str = "", **data) -> list[Finding]:
    """The finding of ``column``'s values that ``legal`` does not allow (none when all are
    legal): which rows hold them and which values they are."""
    values = column.values
    if not len(values) or _within(column, legal):
        return []
    bad = ~legal.legal(values, reduce=False)
    if column.missing is not None:
        bad &= ~column.missing  # a value that is no number is LG001's, not a value out of range
    positions = np.flatnonzero(bad)
    if not len(positions):
        return []
    rows = np.unique(column.rows_of_values(positions)) + batch.start
    return [tally_finding(check, batch, column.name, rows, values[positions], len(positions), phrase=phrase,
                          noun=noun, expected=expected, hint=hint, **data)]


def offending_sequences(check: Check, batch: TokenBatch, column: TokenColumn, sequences: np.ndarray,
                        lengths: np.ndarray, *, phrase: str, noun: str, expected: Expected, hint: str = "",
                        **data) -> list[Finding]:
    """The finding of ``column``'s ``sequences`` (indices) that are too long, with their
    ``lengths``."""
    if not len(sequences):
        return []
    rows = np.unique(column.rows_of_sequences(sequences)) + batch.start
    return [tally_finding(check, batch, column.name, rows, lengths, len(sequences), phrase=phrase, noun=noun,
                          expected=expected, hint=hint, **data)]


def _within(column: TokenColumn, legal: LabelSpec) -> bool:
    """True when every value lies inside the interval of legal values: the column's lowest
    and highest values compared, and the common case of clean data ends here."""
    allowed = legal.legal_values(reduce=False)
    bounds = column.bounds()
    if allowed is None or allowed.stop <= allowed.start or bounds is None:
        return False
    return bounds[0] >= allowed.start and bounds[1] < allowed.stop


def tally_finding(check: Check, batch: TokenBatch, column: str, rows: np.ndarray, values: np.ndarray,
                  count: int, *, phrase: str, noun: str, expected: Expected, hint: str = "",
                  **data) -> Finding:
    """A finding about ``rows`` (file rows, sorted) of ``column`` holding ``count`` offending
    ``values``; its data is what :func:`merge_findings` adds up across batches."""
    if callable(expected):
        expected = expected()
    distinct = np.unique(values)
    tally = {
        "column": column, "unit": batch.unit, "phrase": phrase, "noun": noun, "expected": expected,
        "rows": [int(r) for r in rows[:ROWS_KEPT]], "row_count": int(len(rows)), "count": int(count),
        "values": [_number(v) for v in distinct[:VALUES_KEPT]],
        "lowest": _number(distinct[0]) if len(distinct) else None,
        "highest": _number(distinct[-1]) if len(distinct) else None,
    }
    if batch.lines is not None:  # JSON lines: the line of each row named, for the formats that point at lines
        tally["lines"] = [int(line) for line in batch.lines[rows[:ROWS_KEPT] - batch.start]]
    tally.update(data)
    return check.finding(batch.display, render(tally), hint=hint, **tally)


def _number(value) -> int | float:
    number = value.item() if hasattr(value, "item") else value
    return int(number) if isinstance(number, float) and number.is_integer() else number


def render(data: dict) -> str:
    """The message of a tally: ``'input_ids': 3 rows hold token ids outside the embedding's 100
    rows (vocab_size from config.json): ids 100, 104; rows 4, 17, 256``. The phrase is
    written for one row (``holds ...``) and agrees with the count."""
    rows = shorten(data["rows"], ROWS_SHOWN, total=data["row_count"])
    unit, count = data["unit"], data["row_count"]
    first, _, rest = data["phrase"].partition(" ")
    text = f"{data['column']!r}: {plural(count, unit)} {verb(count, first)} {rest}"
    if data["expected"]:
        text += f" {data['expected']}"
    if data["values"]:
        values = [str(v) for v in data["values"][:VALUES_SHOWN]]
        if data["highest"] not in data["values"][:VALUES_SHOWN]:
            values.append(f"... {data['highest']}")
        text += f": {data['noun']} {', '.join(values)}"
    return f"{text}; {noun(count, unit)} {rows}"


def merge_findings(findings: list[Finding]) -> list[Finding]:
    """The findings of a file's batches, one per (code, column, problem): rows and counts
    added up, values and rows kept as a single batch keeps them; other findings deduplicated."""
    merged: dict[tuple, Finding] = {}
    for finding in findings:
        data = finding.data
        if "row_count" in data:
            key: tuple = (finding.code, finding.path, data["column"], data["phrase"], data["expected"])
        else:
            key = (finding.code, finding.path, finding.message)
        first = merged.get(key)
        merged[key] = finding if first is None or "row_count" not in data else _added(first, finding)
    return list(merged.values())


def _added(first: Finding, other: Finding) -> Finding:
    a, b = first.data, other.data
    values = sorted(set(a["values"]) | set(b["values"]))[:VALUES_KEPT]
    tally = {**a, "rows": (a["rows"] + b["rows"])[:ROWS_KEPT], "row_count": a["row_count"] + b["row_count"],
             **({"lines": (a["lines"] + b["lines"])[:ROWS_KEPT]} if "lines" in a else {}),
             "count": a["count"] + b["count"], "values": values,
             "lowest": _extreme(min, a["lowest"], b["lowest"]), "highest": _extreme(max, a["highest"], b["highest"])}
    return Finding(first.code, first.severity, first.path, render(tally), first.hint, tally)


def _extreme(pick, a, b):
    """``pick`` of two values, either of which may be None (a tally without values)."""
    return b if a is None else a if b is None else pick(a, b)
