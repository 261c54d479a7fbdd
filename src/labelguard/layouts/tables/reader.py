"""Classification tables: CSV/TSV files and "path label" text lists, read into rows.

Shapes read:

* a table with a header naming a path column and a label column (``image_name,label_name``;
  ``filename,class``; ``--path-column``/``--label-column`` choose others);
* a header with a path column and one 0/1 column per class (multi-label one-hot);
* "path label" lists without a header (ImageNet ``train.txt``: ``n01440764/x.JPEG 0``,
  Kaggle ``ann.txt``: ``1.jpg dog``), whitespace or comma separated;
* MNIST-style CSV: a label column and pixel columns, no path (rows are samples by number);
* detection-style tables (``path,label,x1,y1,x2,y2``): the label of each row is read, the
  other columns are kept for the duplicate-row check.

Rows that cannot be read (a wrong number of fields, an empty label, a one-hot cell that is
not 0 or 1) are listed as problems with their line number; the other rows are still read.
A label name keeps the blanks of its cell, as pandas and ``csv.DictReader`` keep them.
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field

from labelguard.core import storage
from labelguard.core.text import LISTED, clipped, plural, shorten
from labelguard.readers.class_tables import is_class_table_text
from labelguard.readers.base import (
    IMAGE_EXTENSIONS, LABEL_MAP_FILE, PLAIN_NAME_FILES, SYNSETS_FILE, ProblemLog, ReadError, decode_text,
    read_text_bytes,
)

PATH_NAMES = ("path", "image_path", "filepath", "file_path", "img_path", "image", "image_name", "img_name",
              "filename", "file_name", "fname", "file", "img", "image_id", "img_id", "imageid", "id_code",
              "id", "name")
LABEL_NAMES = ("label", "labels", "label_name", "label_id", "class", "class_name", "classname", "class_id",
               "category", "category_name", "category_id", "target", "y", "species", "breed", "diagnosis",
               "level", "has_cactus")
TABLE_EXTENSIONS = (".csv", ".tsv", ".txt")
# Rows past which the layout detection stops looking.
SNIFF_ROWS = 20
_SYNSET = re.compile(r"^n\d{8}\s")
_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class TableLayout:
    """How a table is read: separator, header and the roles of its columns."""

    separator: str | None  # None: whitespace ("path label", the label after the last blank)
    header: list[str] | None
    path_column: int | None
    label_column: int | None
    onehot_columns: list[int] = field(default_factory=list)  # multi-label 0/1 columns
    width: int = 0  # fields per row

    @property
    def kind(self) -> str:
        if self.onehot_columns:
            return "multi-label"
        return "classification" if self.path_column is not None else "label-only"


@dataclass
class TableRows(ProblemLog):
    """The rows of one table.

    Attributes:
        layout: how it was read.
        lines: the 1-based line of each row.
        paths: the path cell of each row ("" when the table has no path column).
        labels: per row, the label text (single-label) or the tuple of class names (multi-label).
        rest: per row, the other cells joined (for detection tables: the box), for duplicates.
        problems: (line, what is wrong) for rows that could not be read (capped).
        problem_count: how many rows could not be read.
    """

    layout: TableLayout
    lines: list[int] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    labels: list = field(default_factory=list)
    rest: list[str] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    problem_count: int = 0


def looks_like_path(cell: str) -> bool:
    """A cell that names an image file (by its extension)."""
    return os.path.splitext(cell.strip())[1].lower() in IMAGE_EXTENSIONS


def is_int(cell: str) -> bool:
    return bool(_INT.match(cell.strip()))


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.match(cell.strip()))


def read_text(path: str) -> str:
    """The file as text (UTF-8, BOM dropped; Latin-1 as the fallback); ReadError when binary."""
    return table_text(read_text_bytes(path, "text table"))


def table_text(data: bytes) -> str:
    """:func:`read_text` of bytes already read."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return decode_text(data)


def _separator(path: str, lines: list[str]) -> str | None:
    if path.lower().endswith(".tsv"):
        return "\t"
    sample = [line for line in lines[:SNIFF_ROWS] if line.strip()]
    if not sample:
        return ","
    if all("\t" in line for line in sample):
        return "\t"
    if all("," in line for line in sample):
        return ","
    if path.lower().endswith(".csv") and any("," in line for line in sample):
        return ","
    if all(";" in line for line in sample) and not any(" " in line.strip() for line in sample):
        return ";"
    return None


# The longest row read: an MNIST-style row of 512 x 512 pixel values fits, a 100 MB line of
# commas (a hundred million cells) does not.
MAX_ROW = 1 << 22
# The csv module refuses fields over this many characters; its default is kept on purpose
# (raising it is global to the process): no path or label is that long.
FIELD_LIMIT = csv.field_size_limit()


def _split(line: str, separator: str | None, width: int = 0, number: int = 0) -> list[str]:
    """The cells of one line (``number``, 1-based, for messages; 0 when unknown)."""
    if separator is None:
        if len(line) > FIELD_LIMIT and max(map(len, line.split())) > FIELD_LIMIT:
            raise _field_too_long(number)
        if width == 2:  # "path label": the path may hold blanks, the label does not
            parts = line.strip().rsplit(None, 1)
            return parts
        return line.split()
    try:
        return next(csv.reader([line], delimiter=separator))
    except csv.Error as exc:
        raise _csv_error(number, exc) from None


def _field_too_long(number: int) -> ReadError:
    where = f"line {number}: " if number else ""
    return ReadError(f"{where}a field holds more than {FIELD_LIMIT:,} characters, the csv module's limit: "
                     "no path or label is that long, so this is no classification table")


def _csv_error(number: int, exc: csv.Error) -> ReadError:
    if "field larger than field limit" in str(exc):
        return _field_too_long(number)
    return ReadError(f"line {number}: {exc}" if number else str(exc))


class UnknownColumn(ReadError):
    """A column named by the caller (``--path-column``/``--label-column``) is not in the header.

    Attributes:
        what: "path" or "label".
        wanted: the name given.
        header: the cells of the header line.
    """

    def __init__(self, what: str, wanted: str, header: list[str]) -> None:
        self.what, self.wanted, self.header = what, wanted, header
        super().__init__(f"{what} column {wanted!r} is not in the header, whose columns are "
                         f"{shorten(header, LISTED, repr)}")


def _find(header: list[str], wanted: str | None, names: tuple[str, ...], what: str) -> int | None:
    lowered = [h.strip().lower() for h in header]
    if wanted is not None:
        if wanted in header:
            return header.index(wanted)
        if wanted.strip().lower() in lowered:
            return lowered.index(wanted.strip().lower())
        if wanted.isdecimal() and len(wanted) < 10 and int(wanted) < len(header):
            return int(wanted)
        raise UnknownColumn(what, wanted, header)
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return None


def sniff_layout(path: str, text: str, path_column: str | None = None,
                 label_column: str | None = None) -> TableLayout | None:
    """The layout of a classification table, or None when ``text`` is not one."""
    numbered = [(number, line) for number, line in enumerate(text.splitlines()[: SNIFF_ROWS + 1], 1)
                if line.strip()]
    lines = [line for _, line in numbered]
    if not lines:
        return None
    separator = _separator(path, lines)
    rows = [_split(line, separator, number=number) for number, line in numbered]
    widths = {len(r) for r in rows[1:]} or {len(rows[0])}
    width = max(widths)
    if width < 2:
        return None
    first = [c.strip() for c in rows[0]]
    lowered = {c.lower() for c in first}
    named = bool(lowered & (set(PATH_NAMES) | set(LABEL_NAMES))) or path_column is not None \
        or label_column is not None
    body = rows[1:]
    # A header: known column names, or words above a body of numbers.
    typed_below = any(not _is_number(first[k]) and body and all(k < len(r) and _is_number(r[k]) for r in body)
                      for k in range(len(first)))
    if named or (typed_below and not any(looks_like_path(c) for c in first)):
        header = first
        p = _find(header, path_column, PATH_NAMES, "path")
        lab = _find(header, label_column, LABEL_NAMES, "label")
        if p is not None and lab is None:
            others = [k for k in range(len(header)) if k != p]
            if len(others) == 1:
                lab = others[0]
            elif len(others) >= 2 and body and all(is_int(r[k]) or not r[k].strip() for r in body
                                                    for k in others if k < len(r)):
                return TableLayout(separator, header, p, None, others, len(header))
        if lab is None and p is None and typed_below and body:
            lab = 0  # MNIST with a header: "label,1x1,1x2,..."
        if lab is None:
            return None
        if p is None and path_column is None:
            texts = [k for k in range(len(header)) if k != lab and body
                     and all(k < len(r) and looks_like_path(r[k]) for r in body)]
            p = texts[0] if texts else None
        if p is not None and p == lab:
            return None
        return TableLayout(separator, header, p, lab, [], len(header))
    # No header.
    if separator is None and width == 2 or width == 2:
        rows = [_split(line, separator, 2, number) for number, line in numbered]
        left_path = all(looks_like_path(r[0]) for r in rows if len(r) == 2)
        right_path = all(looks_like_path(r[-1]) for r in rows if len(r) == 2)
        if right_path and not left_path:
            return None  # "image mask" pairs or a reversed list: not a label list
        if right_path and left_path:
            return None
        return TableLayout(separator, None, 0, 1, [], 2)
    if all(is_int(c) for r in rows for c in r) and width >= 10:
        return TableLayout(separator, None, None, 0, [], width)  # MNIST: label, then pixels
    if all(looks_like_path(r[0]) for r in rows) and not any(looks_like_path(c) for r in rows for c in r[1:]):
        return TableLayout(separator, None, 0, 1, [], width)  # path,label,box...
    return None


def head_layout(path: str, head: bytes, complete: bool, path_column: str | None = None,
                label_column: str | None = None) -> TableLayout | None:
    """The layout of a table of samples from ``head``, the first bytes of ``path`` (the whole
    file when ``complete``); None for binary data, a class table (label values and their
    class names, which declares classes and holds no samples) or no table at all."""
    if b"\x00" in head:
        return None
    # Its text as read_text gives it: a file longer than the head by the whole lines in it.
    text = table_text(head if complete else head.rsplit(b"\n", 1)[0])
    if is_class_table_text(text):
        return None
    return sniff_layout(path, text, path_column, label_column)


def read_table(path: str, path_column: str | None = None, label_column: str | None = None) -> TableRows:
    """Read a classification table; ReadError when it cannot be read or is not one."""
    text = read_text(path)
    lines = text.splitlines()
    if len(text) > MAX_ROW:
        number, longest = max(enumerate(map(len, lines), 1), key=lambda item: item[1])
        if longest > MAX_ROW:
            # Split into cells, such a line would cost many times its size (a list of millions).
            raise ReadError(f"line {number} holds {longest:,} characters: no row of paths and labels is "
                            f"that long (at most {MAX_ROW:,} are read as one row), so this is no "
                            "classification table")
    layout = sniff_layout(path, text, path_column, label_column)
    if layout is None:
        raise ReadError("not a classification table: no path and label columns found "
                        "(name them with --path-column and --label-column)")
    table = TableRows(layout)
    start = 0
    if layout.header is not None:
        start = next(i for i, line in enumerate(lines) if line.strip()) + 1
    separator, width = layout.separator, layout.width
    p, lab, onehot = layout.path_column, layout.label_column, layout.onehot_columns
    header = layout.header
    if separator is not None:
        records = _csv_records(text, separator, start)
    else:
        records = ((number, _split(line, separator, width, number)) for number, line in
                   enumerate(lines[start:], start + 1) if line.strip())
    for number, cells in records:
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(cells) != width:
            table.problem(number, f"has {plural(len(cells), 'field')}, expected {width}")
            continue
        label: str | tuple[str, ...]
        if onehot:
            assert header is not None  # not a user mistake: one-hot columns are only found by name, in a header
            names: list[str] = []
            bad = None
            for k in onehot:
                cell = cells[k].strip()
                if cell == "1":
                    names.append(header[k])
                elif cell not in ("0", ""):
                    bad = f"column {header[k]!r} holds {cell!r}, expected 0 or 1"
                    break
            if bad:
                table.problem(number, bad)
                continue
            label = tuple(names)
        else:
            cell = cells[lab] if lab is not None and lab < len(cells) else ""
            if not cell.strip():
                table.problem(number, "has an empty label")
                continue
            # pandas and csv.DictReader key a class by its raw cell, so "dog " and "dog" are two
            # labels to them: a name keeps its blanks; an integer id is read as the number.
            integer = is_int(cell)
            label = cell.strip() if integer else cell
            if integer and not _is_int64(label):
                table.problem(number, f"the label {clipped(label, 24)} is an integer beyond the "
                                      "64-bit range: no class id")
                continue
        path = cells[p].strip() if p is not None and p < len(cells) else ""
        if "\x00" in path:
            table.problem(number, "the path holds a NUL byte, which no file name can")
            continue
        table.lines.append(number)
        table.paths.append(path)
        table.labels.append(label)
        if width > 2 and not onehot and p is not None:
            table.rest.append(",".join(c.strip() for k, c in enumerate(cells) if k not in (p, lab)))
    return table


def _csv_records(text: str, separator: str, start: int):
    """(line, cells) with quoted fields that may span lines, as the csv module reads them."""
    reader = csv.reader(io.StringIO(text), delimiter=separator)
    try:
        for cells in reader:
            if reader.line_num > start:
                yield reader.line_num, cells
    except csv.Error as exc:
        raise _csv_error(reader.line_num, exc) from None


def _is_int64(text: str) -> bool:
    """True for the text of an integer that an int64 holds (digits counted before ``int()``,
    which refuses more than 4,300 of them)."""
    digits = text.lstrip("+-")
    return len(digits) <= 19 and -2 ** 63 <= int(text) < 2 ** 63


def label_names_file(folder: str) -> str | None:
    """A class-name file beside a table: synsets.txt (ImageNet), labels.txt, classes.txt."""
    try:
        names = sorted(storage.listdir(folder))
    except OSError:
        return None
    for wanted in (SYNSETS_FILE, *PLAIN_NAME_FILES, LABEL_MAP_FILE):
        if wanted in names:
            return os.path.join(folder, wanted)
    synsets = [n for n in names if n.startswith("synsets") and n.endswith(".txt")]
    return os.path.join(folder, synsets[0]) if len(synsets) == 1 else None


def read_names(path: str) -> list[str]:
    """Class names, one per line; ``n01440764 tench, Tinca tinca`` gives its WordNet id, a
    ``labelmap.txt`` line ``name:r,g,b::`` its name."""
    text = read_text(path)
    names = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if os.path.basename(path).lower() == LABEL_MAP_FILE:
            line = line.split(":")[0].strip()
        elif _SYNSET.match(line):
            line = line.split()[0]
        names.append(line)
    return names
