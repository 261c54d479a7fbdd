"""The label-table editor of ``labelguard fix``: label cells (or a one-hot header's names)
rewritten in place; the other cells keep their exact text, and a row with quoted cells is
written back by the csv module."""

from __future__ import annotations

import csv
import io
import re
from typing import Callable

from labelguard.errors import CannotFix
from labelguard.layouts.formats import Planner, describe, lookup
from labelguard.layouts.tables.reader import read_table
from labelguard.readers.base import ReadError


def _decode(data: bytes) -> tuple[bytes, str, str]:
    """(BOM, text, encoding) of a table, decoded as the reader decodes it."""
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    body = data[len(bom):]
    try:
        return bom, body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return bom, body.decode("latin-1"), "latin-1"


def _set_cell(line: str, separator: str | None, column: int, width: int, value: str, number: int) -> str:
    """``line`` with cell ``column`` set to exactly ``value`` (whitespace around the old text goes
    with it); the other cells keep their exact text."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if separator is None:
        spans = [m.span() for m in re.finditer(r"\S+", body)]
        start, end = spans[-1] if width == 2 and column == 1 else spans[column]
        return body[:start] + value + body[end:] + ending
    if '"' not in body and separator not in value and '"' not in value:
        cells = body.split(separator)
        if len(cells) != width:
            raise CannotFix(f"line {number}: {len(cells)} fields, expected {width}")
        cells[column] = value
        return separator.join(cells) + ending
    cells = next(csv.reader([body], delimiter=separator))
    if len(cells) != width:
        raise CannotFix(f"line {number}: a quoted field spans lines; edit this row by hand")
    cells[column] = value
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=separator, lineterminator="").writerow(cells)
    return buffer.getvalue() + ending


def _cell_text(line: str, separator: str | None, column: int, width: int, number: int) -> str:
    """The exact text of cell ``column`` (whitespace around it included), as the csv module and
    pandas hand it to a dataset class."""
    body = line.rstrip("\r\n")
    if separator is None:
        tokens = re.findall(r"\S+", body)
        # Two-field lines name the label last, whatever spaces the path holds.
        cells = [" ".join(tokens[:-1]), tokens[-1]] if width == 2 and tokens else tokens
    elif '"' in body:
        cells = next(csv.reader([body], delimiter=separator), [])
    else:
        cells = body.split(separator)
    if column >= len(cells):
        raise CannotFix(f"line {number}: {len(cells)} fields, expected {width}")
    return cells[column]


# change(cell text) -> (the label it counts as, its new text), or None to keep the cell
CellChange = Callable[[str], "tuple[str, str] | None"]


def _table_edit(change: CellChange, rename_header: bool
                ) -> Callable[[str, bytes], tuple[bytes | None, dict[str, int]]]:
    """``edit(path, data) -> (new bytes or None, changed rows per old label)`` for label tables."""
    def edit(path: str, data: bytes):
        try:
            table = read_table(path)
        except ReadError as exc:
            raise CannotFix(str(exc)) from None
        bom, text, encoding = _decode(data)
        lines = text.splitlines(keepends=True)
        layout = table.layout
        counts: dict[str, int] = {}
        if layout.onehot_columns:
            if not rename_header:
                raise CannotFix("a one-hot table names its classes in the header; it has no class ids to remap")
            header_line = next(i for i, line in enumerate(lines) if line.strip())
            names = [_cell_text(lines[header_line], layout.separator, k, layout.width, header_line + 1)
                     for k in range(layout.width)]
            changed = []
            for k in layout.onehot_columns:
                renamed = change(names[k])
                if renamed is not None:
                    counts[renamed[0]] = 1
                    names[k] = renamed[1]
                    changed.append(k)
            merged = [n for n in set(names) if names.count(n) > 1]
            if merged:
                raise CannotFix(f"the map would give two one-hot columns the name {merged[0]!r}; merge them by hand")
            for k in changed:
                lines[header_line] = _set_cell(lines[header_line], layout.separator, k, layout.width, names[k],
                                               header_line + 1)
        else:
            column = layout.label_column
            # Not a user mistake: a table read without one-hot columns always has a label column.
            assert column is not None
            for number in table.lines:
                cell = _cell_text(lines[number - 1], layout.separator, column, layout.width, number)
                renamed = change(cell)
                if renamed is None:
                    continue
                counts[renamed[0]] = counts.get(renamed[0], 0) + 1
                lines[number - 1] = _set_cell(lines[number - 1], layout.separator, column,
                                              layout.width, renamed[1], number)
        if not counts:
            return None, counts
        return bom + "".join(lines).encode(encoding), counts

    return edit


def rename(mapping: dict[str, str]) -> Planner:
    def change(cell: str) -> tuple[str, str] | None:
        key = lookup(mapping, cell)
        return None if key is None else (key, mapping[key])

    edit = _table_edit(change, True)

    def plan(path: str, data: bytes):
        new, counts = edit(path, data)
        if new is None:
            return None, "no label of the map occurs", {}
        return new, describe(counts, mapping, unit="rows"), {"renamed": counts}

    return plan


def remap(mapping: dict[int, int]) -> Planner:
    def change(cell: str) -> tuple[str, str] | None:
        if not re.fullmatch(r"\s*[+-]?\d+\s*", cell) or int(cell) not in mapping:
            return None
        return str(int(cell)), str(mapping[int(cell)])

    edit = _table_edit(change, False)

    def plan(path: str, data: bytes):
        new, counts = edit(path, data)
        if new is None:
            return None, "no class id of the map occurs", {}
        by_id = {int(k): n for k, n in counts.items()}
        return new, describe(by_id, mapping, unit="rows"), {"remapped": by_id}

    return plan
