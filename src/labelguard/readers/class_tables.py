"""Class tables: CSV files that map label values to class names and are no samples.

Roboflow's PNG-mask export writes one per split, ``_classes.csv``::

    Pixel Value, Class
    0, background
    1, cabinet

A header names a value column (``Pixel Value``, ``value``) and a class-name column
(``Class``, ``name``); every row is an integer value and its name. Blanks around the cells
(Roboflow writes ``", "`` between them) are not part of either.
"""

from __future__ import annotations

import csv
import io
import os
import re

from labelguard.core.text import clipped
from labelguard.readers.base import ReadError, read_text

VALUE_COLUMNS = ("pixel value", "pixel_value", "value")
NAME_COLUMNS = ("class", "class name", "class_name", "name")
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
# Rows of a class table: a table longer than this is no list of classes.
MOST_CLASSES = 65536


def class_table_columns(header: list[str]) -> tuple[int, int] | None:
    """(value column, name column) of a class table's header, or None when the header is
    not a class table's: exactly a value column and a name column, as :data:`VALUE_COLUMNS`
    and :data:`NAME_COLUMNS` spell them (case and blanks ignored)."""
    lowered = [cell.strip().lower() for cell in header]
    if len(lowered) != 2:
        return None
    value = next((k for k, cell in enumerate(lowered) if cell in VALUE_COLUMNS), None)
    name = next((k for k, cell in enumerate(lowered) if cell in NAME_COLUMNS), None)
    return (value, name) if value is not None and name is not None else None


def is_class_table_text(text: str) -> bool:
    """True when the first line of ``text`` is a class table's header."""
    first = text.split("\n", 1)[0].lstrip("\ufeff").strip()
    try:
        return bool(first) and class_table_columns(next(csv.reader([first]), [])) is not None
    except csv.Error:  # a carriage return inside the line: no header of a table
        return False


def read_class_table(path: str) -> list[tuple[int, str]]:
    """(value, class name) of each row of a class table, in file order; ReadError when the
    file cannot be read, has no class table header, or a row is not an integer value and a
    name (the row is named)."""
    shown = os.path.basename(path)
    rows = csv.reader(io.StringIO(read_text(path).lstrip("\ufeff")))
    try:
        header = next(rows, [])
        columns = class_table_columns(header)
        if columns is None:
            raise ReadError(f"{shown} has no 'Pixel Value, Class' header (found {clipped(', '.join(header), 80)!r})")
        value_column, name_column = columns
        found: list[tuple[int, str]] = []
        for row in rows:
            if not any(cell.strip() for cell in row):
                continue
            if len(found) >= MOST_CLASSES:
                raise ReadError(f"{shown} has more than {MOST_CLASSES} rows: not a table of classes")
            if len(row) != 2:
                raise ReadError(f"row {rows.line_num} of {shown} has {len(row)} cells, not a value and a class")
            value, name = row[value_column].strip(), row[name_column].strip()
            if not _INTEGER.fullmatch(value) or not name:
                raise ReadError(f"row {rows.line_num} of {shown} is not an integer value and a class name: "
                                f"{clipped(', '.join(row), 80)!r}")
            found.append((int(value), name))
    except csv.Error as exc:
        raise ReadError(f"{shown} is not a readable CSV: {exc}") from None
    if not found:
        raise ReadError(f"{shown} holds no classes")
    return found
