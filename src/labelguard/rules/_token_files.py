"""The per-file work of a tokenized data file: its batches streamed through the ``tokens``
rules, their findings merged per file."""

from __future__ import annotations

from typing import Callable, Iterator

from labelguard.core.findings import Finding
from labelguard.core.rules import run_rules
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.tokens import TokenBatch
from labelguard.readers.base import ReadError
from labelguard.rules._tokens import merge_findings
from labelguard.rules._unread import not_read
from labelguard.rules.lg001 import UNREADABLE

Reader = Callable[[FileTask], Iterator[TokenBatch]]


def process_token_file(task: FileTask, spec: LabelSpec, reader: Reader) -> FileResult:
    """Stream one tokenized data file through the ``tokens`` rules, batch by batch, and merge
    the findings of its batches; a file that breaks midway keeps the findings of the rows
    before it and adds LG001 saying where it broke."""
    result = FileResult(task.display)
    summary = result.summary
    summary.kinds["tokens"] += 1
    found: list[Finding] = []
    errors: list[str] = []
    rows = 0
    try:
        for batch in reader(task):
            rows += batch.rows
            run_rules("tokens", batch, spec, task.display, found, errors)
            if spec.tokens is None:
                _count_columns(summary, batch)
    except ReadError as exc:
        if rows:
            found.append(UNREADABLE.finding(task.display, f"{exc} (after row {rows - 1}: the rows before it were "
                                            "checked)"))
        else:
            summary.unreadable += 1
            found.append(not_read(task.display, exc))
    summary.samples += rows
    result.findings = merge_findings(found)
    result.errors = list(dict.fromkeys(errors))
    return result


def _count_columns(summary, batch: TokenBatch) -> None:
    """Without a token spec, what the rules could not check: per token column, its rows and
    its highest value (LG006 lists them)."""
    for name, column in batch.columns.items():
        summary.token_rows[name] += batch.rows
        if len(column.values) and column.values.dtype.kind in "iu":
            highest = int(column.values.max())
            summary.token_highest[name] = max(highest, summary.token_highest.get(name, highest))
