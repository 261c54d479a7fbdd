"""One label table (or OpenMMLab annotation file) as the annotation record the rules judge,
and the audit's processor of it."""

from __future__ import annotations

import os

from labelguard.core import storage
from labelguard.core.paths import display_path
from labelguard.core.records import AnnotationRecord, ImageTable
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts.references import resolve_names
from labelguard.layouts.tables.data_list import read_data_list
from labelguard.layouts.tables.reader import TableRows, is_int, read_table
from labelguard.rules._annotations import process_annotation

ROW_HINT = ("Fix or remove these rows: a Dataset that splits them fails (ValueError, IndexError) or reads "
            "a wrong label when it reaches them.")


def table_record(task: FileTask) -> AnnotationRecord:
    """One label table as an annotation record: a row per line (its label a name, an integer
    id when every label is one, or the names of a one-hot row), the files its path column
    names as an image table looked up under the image folders, and what makes two rows the
    same (path, label and the other cells). An OpenMMLab annotation file is a table too
    (:func:`data_list_record`)."""
    if task.path.lower().endswith(".json"):
        return data_list_record(task)
    table = read_table(task.path, task.option("path_column"), task.option("label_column"))
    layout = table.layout
    labels = table.labels
    if not layout.onehot_columns and labels and all(is_int(label) for label in labels):
        labels = [int(label) for label in labels]
    if layout.path_column is not None:
        images, image_of = _path_table(task, table)
        keys = list(zip(table.paths, labels, table.rest or [""] * len(labels)))
    else:  # MNIST-style: each row is a sample of its own
        images = ImageTable("path", "file", "line", "line {}", [""] * len(labels), places=table.lines)
        image_of, keys = list(range(len(labels))), None
    return AnnotationRecord(
        task.display, "csv", "line", labels, table.lines, keys=keys,
        problems=table.problems, problem_count=table.problem_count, problem_hint=ROW_HINT,
        images=images, image_of=image_of,
        one_label_per_image=layout.path_column is not None and not table.rest and not layout.onehot_columns,
    )


def data_list_record(task: FileTask) -> AnnotationRecord:
    """An OpenMMLab annotation file as an annotation record: an object per class id of each
    sample (one for a single-label sample, each of a multi-label one's), placed at its
    number (``data_list`` index + 1), with the ``img_path`` files looked up under the image folders. A
    multi-task sample's ids are of its tasks' own classes: its image is looked for, its
    labels are not checked."""
    found = read_data_list(task.path)
    labels: list[int] = []
    places: list[int] = []
    image_of: list[int] = []
    for row, (sample, ids) in enumerate(zip(found.samples, found.labels)):
        for label in ids or ():
            labels.append(label)
            places.append(sample + 1)  # the sample's number, 1-based as lines are
            image_of.append(row)
    images = _named_images(task, found.paths, found.samples, "img_path", "sample", "data_list[{}]")
    return AnnotationRecord(
        task.display, "csv", "sample", labels, places,
        problems=found.problems, problem_count=found.problem_count,
        problem_hint=SAMPLE_HINT, images=images, image_of=image_of,
        keys=[(found.paths[row], label) for row, label in zip(image_of, labels)],
        one_label_per_image=found.kind == "single-label",
    )


SAMPLE_HINT = ("Fix or remove these samples: mmengine's BaseDataset reads img_path and gt_label of every "
               "sample and fails (KeyError, TypeError) or reads a wrong label when it reaches them.")


def process_table(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one label table and run the annotation rules on it."""
    return process_annotation(task, spec, table_record, "csv")


# Its result is a function of the task, the spec, the table's bytes and the image folders'
# listings and paths it notes (labelguard.core.cache).
process_table.cacheable = True  # type: ignore[attr-defined]


def _path_table(task: FileTask, table: TableRows) -> tuple[ImageTable, list[int]]:
    """The distinct files a table names (each at the first line naming it), looked up under
    the task's image folders, and each row's file."""
    row_of: dict[str, int] = {}
    names: list[str] = []
    places: list[int] = []
    image_of = []
    for line, path in zip(table.lines, table.paths):
        row = row_of.get(path)
        if row is None:
            row = row_of[path] = len(names)
            names.append(path)
            places.append(line)
        image_of.append(row)
    return _named_images(task, names, places, "path", "line", "line {}"), image_of


def _named_images(task: FileTask, names: list[str], places: list[int], what: str, unit: str,
                  place_format: str) -> ImageTable:
    """The files ``names`` (each first named at its place of ``places``), looked up under the
    task's image folders and kept inside its root."""
    folder = os.path.dirname(storage.abspath(task.path))
    bases = task.option("image_dirs") or (folder,)
    root = task.option("root") or folder
    missing, escaping = resolve_names(names, bases, storage.abspath(root))
    return ImageTable(what, "file", unit, place_format, names, places=places,
                      folders=tuple(display_path(b) for b in bases), root=display_path(root),
                      looked_for=sum(1 for name in names if name), missing=missing, escaping=escaping)
