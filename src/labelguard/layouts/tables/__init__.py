"""The ``csv`` layout: label tables in the dataset's folder (or the table given as the path):
``path,label`` CSVs, one-hot multi-label CSVs, ImageNet ``train.txt`` with ``synsets.txt``,
Kaggle ``ann.txt``, MNIST-style ``label,pixels...`` CSVs, OpenMMLab annotation files
(mmpretrain's ``ann.json``, :mod:`labelguard.layouts.tables.data_list`). A ``synsets.txt``/``labels.txt``/
``classes.txt`` beside the table is the dataset's class list (ids index into it).

Each table is one task: :func:`table_record` reads it into an annotation record (the files
its path column names looked up under its image folders first) and the annotation rules
judge it: labels outside the spec LG101/LG102/LG103, rows naming missing files LG003, paths
leaving the dataset LG005, unreadable rows LG001 with the line, repeated rows and
conflicting labels LG303. A ``--path-column``/``--label-column`` that no table has is a
:class:`~labelguard.errors.ColumnError` naming each table's columns.
"""

from __future__ import annotations

import os
import re

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.spec import class_list_spec
from labelguard.core.tasks import FileTask
from labelguard.core.text import LISTED, noun, shorten
from labelguard.errors import ColumnError
from labelguard.core.paths import display_path
from labelguard.layouts.base import (
    CONTENT, IMAGES, METADATA_FILES, TABLES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.layouts.conventions import CLASS_TABLE_FILES
from labelguard.readers.base import CLASS_NAME_FILES, SYNSETS_FILE, ReadError, read_head
from labelguard.readers.class_tables import is_class_table_text
from labelguard.readers.colormap import COLOR_MAP_FILES
from labelguard.layouts.formats import AnnotationFormat, ColumnOptions, register_format
from labelguard.layouts.tables import editor
from labelguard.layouts.tables.data_list import is_data_list_head
from labelguard.layouts.tables.reader import (
    TABLE_EXTENSIONS, UnknownColumn, head_layout, label_names_file, read_names, table_text,
)
from labelguard.layouts.tables.record import data_list_record, process_table, table_record

__all__ = ["data_list_record", "discover_tables", "is_table", "process_table", "table_record"]

NAME_FILES = frozenset({*CLASS_NAME_FILES, SYNSETS_FILE, "readme.txt", "license.txt", "requirements.txt",
                        "dataset.txt"})
# Files that describe a dataset (class lists, colour maps such as CamVid's class_dict.csv),
# never a table of samples.
NOT_TABLES = NAME_FILES | METADATA_FILES | frozenset(COLOR_MAP_FILES)


def _table_candidates(folder: str) -> list[str]:
    """The files of a folder that may be label tables, by name (a JSON file: an OpenMMLab
    annotation file, perhaps)."""
    try:
        names = storage.names_with_suffix(folder, (*TABLE_EXTENSIONS, ".json"))
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        lower = name.lower()
        if name.startswith(".") or not lower.endswith((*TABLE_EXTENSIONS, ".json")) or not storage.isfile(path):
            continue
        if lower in NOT_TABLES or lower.startswith("synsets") or lower.startswith("readme"):
            continue
        found.append(path)
    return found


def _table_files(folder: str, options: AuditOptions) -> list[str]:
    return [path for path in _table_candidates(folder) if is_table(path, options)]


# The bytes of a file that tell whether it is a table (a larger file: its whole lines in them).
TABLE_HEAD = 1 << 16


def _sniff_table(path: str, options: ColumnOptions):
    """The table layout of a file (True for an OpenMMLab annotation file), or None; OSError
    or ReadError when it cannot be read."""
    head = read_head(path, TABLE_HEAD)  # one ranged request for an object of object storage
    if path.lower().endswith(".json"):
        # Its fields are img_path and gt_label: a column named by flag is a CSV's, never its.
        columns = options.path_column or options.label_column
        return True if not columns and b"\x00" not in head and is_data_list_head(head[:4096]) else None
    if os.path.basename(path).lower() in CLASS_TABLE_FILES:
        return None  # Roboflow's _classes.csv ("Pixel Value, Class"): it declares classes
    return head_layout(path, head, len(head) < TABLE_HEAD, options.path_column, options.label_column)


def _is_class_table(path: str) -> bool:
    """True for a class table (label values and their class names: Roboflow's
    ``_classes.csv``, "Pixel Value, Class"), which declares a dataset's classes and holds no
    samples."""
    if os.path.basename(path).lower() in CLASS_TABLE_FILES:
        return True
    try:
        return is_class_table_text(table_text(read_head(path, 4096)))
    except (OSError, ReadError):
        return False


def is_table(path: str, options: ColumnOptions) -> bool:
    """True when the file ``path`` is a table of samples this layout reads (a class table, a
    file of another kind or one that cannot be read is not)."""
    try:
        return _sniff_table(path, options) is not None
    except (OSError, ReadError):
        return False


def check_columns(root: str, options: AuditOptions) -> None:
    """ColumnError when ``--path-column``/``--label-column`` name a column that no table at
    ``root`` has: auditing nothing and reporting no findings would read as a clean dataset."""
    if not (options.path_column or options.label_column):
        return
    candidates = [root] if storage.isfile(root) else _table_candidates(root)
    headers = []
    for path in candidates:
        try:
            if _sniff_table(path, options) is not None:
                return
        except UnknownColumn as exc:
            headers.append((path, exc))
        except (OSError, ReadError):
            continue
    if not headers:
        return
    listing = shorten(headers, LISTED, lambda item: f"{display_path(item[0])}: {item[1]}", sep="; ", what="table")
    if storage.isfile(root):
        raise ColumnError(listing)
    given = [f"--{what}-column {wanted!r}" for what, wanted in
             (("path", options.path_column), ("label", options.label_column)) if wanted]
    raise ColumnError(f"no table in {display_path(root)} has the {noun(len(given), 'column')} given "
                      f"({', '.join(given)}): {listing}")


def table_image_dirs(path: str, options: AuditOptions) -> tuple[str, ...]:
    """Where the files a table names are looked for: ``--images``, else the image folders
    beside it, then its own folder."""
    folder = os.path.dirname(storage.abspath(path))
    if options.images:
        return (storage.abspath(options.images),)
    stem = os.path.splitext(os.path.basename(path))[0]
    names = ["images", "imgs", "img", "data", stem, f"{stem}_images", f"{stem}_imgs", f"{stem}_img"]
    found = [os.path.join(folder, n) for n in names if storage.isdir(os.path.join(folder, n))]
    return tuple(dict.fromkeys(found + [folder]))


def discover_tables(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("csv", root)
    check_columns(root, options)
    if storage.isfile(root):
        tables = [storage.abspath(root)]
        folder = os.path.dirname(storage.abspath(root))
    else:
        folder = root
        tables = _table_files(root, options)
        if not tables:
            discovery.findings.append(unreadable(
                display_path(root), "no classification table found (a CSV/TSV with path and label "
                "columns, or a 'path label' text list)"))
            return discovery
    names_file = label_names_file(folder)
    if names_file is not None and names_file not in tables:
        try:
            names = read_names(names_file)
        except ReadError as exc:
            discovery.notes.append(f"class names ignored: {display_path(names_file)}: {exc}")
        else:
            discovery.spec = class_list_spec(names, display_path(names_file))
    extra: list[tuple[str, object]] = []
    if options.path_column:
        extra.append(("path_column", options.path_column))
    if options.label_column:
        extra.append(("label_column", options.label_column))
    for table in tables:
        if table.lower().endswith(".json") and _multi_task(table):
            discovery.notes.append(f"{display_path(table)} holds multi-task labels (the ids of each task's own "
                                   "classes, metainfo.tasks): its img_path files are looked for, its labels are "
                                   "not checked against the spec")
        discovery.tasks.append(FileTask(
            processor=process_table, path=table, display=display_path(table),
            options=tuple(extra) + (("image_dirs", table_image_dirs(table, options)), ("root", folder))))
    return discovery


def _detect_tables(root: str, options: AuditOptions) -> Evidence:
    check_columns(root, options)
    if storage.isfile(root):
        if root.lower().endswith((*TABLE_EXTENSIONS, ".json")) and is_table(root, options):
            return evidence(0.29, Seen(_what_table(root), CONTENT))
        return no(*_class_table_reasons([root]))
    tables = _table_files(root, options) if storage.isdir(root) else []
    if not tables:
        return no(*_class_table_reasons(_table_candidates(root) if storage.isdir(root) else []))
    return evidence(0.29, Seen(f"{display_path(tables[0])} is {_what_table(tables[0])}", CONTENT))


def _multi_task(path: str) -> bool:
    """True when the first samples of the OpenMMLab annotation file ``path`` have a
    ``gt_label`` per task (an object)."""
    try:
        return b"{" in b"".join(re.findall(rb'"gt_label"\s*:\s*(.)', read_head(path, TABLE_HEAD)))
    except (OSError, ReadError):
        return False


def _what_table(path: str) -> str:
    if path.lower().endswith(".json"):
        return "an OpenMMLab data_list of img_path and gt_label"
    return "a table of paths and labels"


def _class_table_reasons(paths: list[str]) -> list[str]:
    """Why the class tables among ``paths`` are not read as tables of samples."""
    return [f"{display_path(path)} is a class table (label value -> class name), not a table of samples"
            for path in paths if path.lower().endswith(TABLE_EXTENSIONS) and _is_class_table(path)]


discover_tables.detect = _detect_tables  # type: ignore[attr-defined]  # read by register_layout
register_layout("csv", "classification tables: CSV/TSV path + label columns, 'path label' lists "
                "(ImageNet train.txt + synsets.txt), MNIST-style CSV, OpenMMLab data_list JSON (mmpretrain)",
                0.29, (TABLES, IMAGES))(discover_tables)
register_format(AnnotationFormat("csv", (".csv", ".tsv"), process_table, sniff=is_table, rename=editor.rename,
                                 remap=editor.remap))
