"""LG303 on annotation records: an object repeated in one file (same class, same geometry,
same image): VOC objects, YOLO rows, COCO annotations, table rows; and an image that a
single-label table lists with two labels.

A record gives what makes two objects the same as ``keys``: one hashable per object for a
small file, or integer columns for a file of up to millions of annotations, compared by one
sort.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, plural, shorten, verb
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml, yolo_rows
from labelguard.rules._objects import box_text, label_text, sample

DUPLICATE_BOX = define(
    "LG303", "duplicate-annotation", "warning",
    summary="duplicate boxes or rows in one annotation",
    why="Duplicates double the weight of an object in the loss and distort the matching of anchors.",
    bad="two identical rows '0 0.5 0.5 0.2 0.2' in one label file",
    good="one row per object",
    fix="Remove the repeated rows or objects.",
)

EXAMPLES = (
    Example(True, "a YOLO row written twice",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (0, .5, .5, .2, .2)])}),
    Example(True, "a VOC object written twice",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("cat", (1, 1, 9, 9))])}),
    Example(False, "two objects of one class in different places",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("cat", (2, 2, 9, 9))])}),
    Example(True, "a COCO annotation exported twice",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 1)])}),
    Example(False, "one COCO box in two categories",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 2)])}),
    Example(True, "a CSV row written twice",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog"), ("a.jpg", "cat")]),
                     "a.jpg": image(), "b.jpg": image()}),
    Example(False, "CSV rows of distinct images",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]), "a.jpg": image(), "b.jpg": image()}),
)

CONFLICT_EXAMPLES = (
    Example(True, "a single-label CSV listing a.jpg as cat and as dog",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("a.jpg", "dog")]), "a.jpg": image()}),
    Example(False, "a single-label CSV with one label per image",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]), "a.jpg": image(), "b.jpg": image()}),
)

_HINTS = {
    "row": "Remove the repeated rows (Ultralytics drops them with a warning).",
    "object": "Remove the repeated <object> elements.",
    "line": "Remove the repeated rows: they oversample those images.",
    "annotation": "Remove the repeated annotations (a double export); they double the object's weight in the loss.",
}


@rule(DUPLICATE_BOX, "annotation", EXAMPLES, files_only=True)
def repeated_objects(record: AnnotationRecord, spec):
    keys = record.keys
    if keys is None:
        boxes = record.boxes
        if boxes is None or not len(boxes):
            return ()
        keys = list(zip(record.labels, boxes))
    if type(keys) is list and len(set(keys)) == len(keys):  # the common case, in one set
        return ()
    repeats = _repeats(keys, record.compared)
    if not repeats:
        return ()
    unit = record.unit

    def describe(item) -> str:
        index, first = item
        return f"{record.where(index)} repeats {record.where(first)}{_detail(record, index)}"

    return [DUPLICATE_BOX.finding(
        record.display,
        f"{plural(len(repeats), f'duplicate {unit}')}: {shorten(repeats, SHOWN, describe, sep='; ')}",
        hint=_HINTS.get(unit, f"Remove the repeated {unit}s."),
        pairs=[[record.place(first), record.place(index)] for index, first in repeats[:PLACES_KEPT]],
        count=len(repeats),
    )]


def _repeats(keys, compared: np.ndarray | None) -> list[tuple[int, int]]:
    """(object, the earlier object it repeats) for every repeated object, in file order."""
    if isinstance(keys, tuple):
        return _repeated_rows(keys, compared)
    seen: dict = {}
    repeats = []
    for index, key in enumerate(keys):
        first = seen.setdefault(key, index)
        if first != index:
            repeats.append((index, first))
    return repeats


def _repeated_rows(keys: tuple[np.ndarray, ...], compared: np.ndarray | None) -> list[tuple[int, int]]:
    """The repeats among objects whose key columns are equal: one sort on a hash of the
    columns, then an exact comparison of neighbours."""
    rows = np.flatnonzero(compared) if compared is not None else np.arange(len(keys[0]))
    if len(rows) < 2:
        return []
    columns = [np.ascontiguousarray(column[rows]).view(np.uint64) for column in keys]
    mixed = np.zeros(len(rows), np.uint64)
    with np.errstate(over="ignore"):
        for column in columns:
            mixed = (mixed ^ column) * np.uint64(0x100000001B3)
            mixed ^= mixed >> np.uint64(29)
    order = np.argsort(mixed, kind="stable")
    same = mixed[order[1:]] == mixed[order[:-1]]
    for column in columns:
        ordered = column[order]
        same &= ordered[1:] == ordered[:-1]
    repeats = rows[order[1:][same]]
    firsts = rows[order[:-1][same]]
    return sorted(zip(repeats.tolist(), firsts.tolist()))


def _detail(record: AnnotationRecord, index: int) -> str:
    """What the repeated object is: its image in a file of many, its class and its box."""
    parts = []
    if record.images is not None:
        row = int(record.image_of[index])
        if row >= 0 and record.images.names[row]:
            parts.append(repr(record.images.names[row]))
    elif record.boxes is None:
        return ""
    parts.append(label_text(record, index))
    if record.boxes is not None:
        parts.append(box_text(record, index))
    return f" ({', '.join(parts)})"


@rule(DUPLICATE_BOX, "annotation", CONFLICT_EXAMPLES, reads="images", files_only=True)
def images_with_conflicting_labels(record: AnnotationRecord, spec):
    """LG303 for an image a single-label table lists more than once with different labels:
    the loader takes whichever row it meets."""
    images = record.images
    if not record.one_label_per_image or images is None:
        return ()
    label_of: dict[int, object] = {}
    conflicting: dict[int, set] = {}
    for label, row in zip(record.labels, record.image_of):
        known = label_of.setdefault(row, label)
        if known != label:
            conflicting.setdefault(row, {known}).add(label)
    if not conflicting:
        return ()
    conflicts = [f"{images.names[row]!r} is labelled {', '.join(repr(v) for v in sorted(labels))}"
                 for row, labels in conflicting.items()]
    n = len(conflicts)
    return [DUPLICATE_BOX.finding(
        record.display,
        f"{plural(n, images.noun)} {verb(n, 'is')} listed more than once with different labels in a "
        f"single-label table: {sample(conflicts, n)}",
        hint="Keep one label per image (or use a multi-label format); the loader takes whichever row it meets.",
        conflicts=conflicts[:PLACES_KEPT], count=n,
    )]
