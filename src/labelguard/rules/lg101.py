"""LG101 on annotation records: a class name that the spec does not hold, in every format.

* Names of objects, rows and lines (VOC, YOLO, CSV/TSV tables, multi-label one-hot rows)
  and the category names of a COCO file against the spec's classes: the message and its
  "did you mean" come from :func:`labelguard.checks.labels.name_findings`.
* A file with its own class table (COCO ``categories``): an object of a category id the
  table does not declare, and, when the user gave no classes, a category name missing from
  the reference file of the dataset (the training split of the same flavour).
* An ImageFolder class folder whose name is not a class of the spec.

The code (``unknown-class-name``) is defined with the class codes in
:mod:`labelguard.checks.classes`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from labelguard.checks.classes import UNKNOWN_CLASS
from labelguard.checks.labels import PLACES_KEPT, name_findings
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import did_you_mean, plural, spans
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml
from labelguard.rules._objects import sample

EXAMPLES = (
    Example(True, "a VOC object named 'dgo' in a dataset of cat and dog",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("dgo", (2, 2, 8, 8))])},
            spec={"classes": ("cat", "dog")}),
    Example(False, "VOC objects of the spec's classes",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("dog", (2, 2, 8, 8))])},
            spec={"classes": ("cat", "dog")}),
    Example(True, "a CSV label 'dgo' for classes cat and dog",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dgo")]), "a.jpg": image(), "b.jpg": image()},
            spec={"classes": ("cat", "dog")}),
    Example(False, "CSV labels of the spec's classes",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]), "a.jpg": image(), "b.jpg": image()},
            spec={"classes": ("cat", "dog")}),
    Example(True, "a COCO category 'dgo' for classes cat and dog",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1), coco_box(2, 2)], categories=((1, "cat"), (2, "dgo")))},
            spec={"classes": ("cat", "dog")}),
    Example(False, "COCO categories of the spec's classes",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 2)])},
            spec={"classes": ("cat", "dog")}),
)

UNDECLARED_EXAMPLES = (
    Example(True, "a COCO annotation of category 9, which 'categories' does not declare",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 9)])}),
    Example(False, "COCO annotations of declared categories",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 2)])}),
)

REFERENCE_EXAMPLES = (
    Example(True, "a COCO validation split with a category 'dgo' the training split lacks",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 2)]),
                     "annotations/instances_val.json": coco_json(
                         [coco_box(1, 1), coco_box(2, 2)], categories=((1, "cat"), (2, "dgo")))}),
    Example(False, "COCO splits with the same categories",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 2)]),
                     "annotations/instances_val.json": coco_json([coco_box(1, 1)])}),
)

FOLDER_EXAMPLES = (
    Example(True, "an ImageFolder class folder 'dgo' for classes cat and dog",
            lambda: {"train/cat/a.jpg": image(), "train/dgo/b.jpg": image()}, spec={"classes": ("cat", "dog")}),
    Example(False, "ImageFolder class folders of the spec's classes",
            lambda: {"train/cat/a.jpg": image(), "train/dog/b.jpg": image()}, spec={"classes": ("cat", "dog")}),
)


@rule(UNKNOWN_CLASS, "annotation", EXAMPLES)
def unknown_class_names(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for each name the spec does not allow; under a spec of ids only, each name that
    is not an integer (integer names are ids: LG102/LG103 judge them)."""
    labels = record.labels
    if not len(labels):
        return ()
    if record.classes is not None:
        return _category_names_outside_the_classes(record, spec)
    if spec.classes is not None:
        # The common case, every name a class of the spec, is one subset test.
        if _class_set(spec.classes).issuperset(labels):
            return ()
    elif not spec.is_known:
        return ()
    names, places = named_objects(record)
    if spec.classes is None:
        kept = [i for i, name in enumerate(names) if not _integer(name)]
        names, places = [names[i] for i in kept], [places[i] for i in kept]
    return [f for f in name_findings(record.display, names, spec, unit=record.unit, places=places)
            if f.code == UNKNOWN_CLASS.code]


def _category_names_outside_the_classes(record: AnnotationRecord, spec: LabelSpec) -> list:
    """The names of a file's own categories against the classes the user gave (one finding
    per name, every object of it placed); the ids are judged per category, not per object."""
    table = record.classes
    assert table is not None  # not a user mistake: called only for a file with its own class table
    classes = table.user_classes(spec)
    if classes is None:
        return []
    rows = declared_objects(record)
    ids = np.asarray(record.labels)[rows]
    allowed = _class_set(classes)
    bad_ids = [c for c in np.unique(ids).tolist() if table.names[c] not in allowed]
    if not bad_ids:
        return []
    bad_rows = rows[np.isin(ids, bad_ids)]
    names = [table.names[int(c)] for c in np.asarray(record.labels)[bad_rows]]
    return name_findings(record.display, names, spec, unit=record.unit, places=places_of(record, bad_rows))


@rule(UNKNOWN_CLASS, "annotation", UNDECLARED_EXAMPLES, reads="classes")
def undeclared_category_ids(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for objects of a category id that the file's own class table does not declare
    (code that maps category ids through 'categories' raises KeyError on them)."""
    if record.classes is None or not len(record.labels):
        return ()
    labels = np.asarray(record.labels)
    labelled = _labelled(record)
    rows = labelled[~np.isin(labels[labelled], _declared_ids(record))]
    if not len(rows):
        return ()
    declared = sorted(record.classes.names)
    n = len(declared)
    among = (f"the {plural(n, 'category')} of this file (ids {spans(declared)})" if n
             else "the categories of this file: it declares none")
    findings = []
    values, counts = np.unique(labels[rows], return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist()):
        where = rows[labels[rows] == value]
        shown = [record.where(int(r)) for r in where[:PLACES_KEPT]]
        findings.append(UNKNOWN_CLASS.finding(
            record.display,
            f"category id {value} is not among {among}: {plural(count, record.unit)} ({sample(shown, count)})",
            hint=f"Add category {value} to 'categories', or fix or remove these annotations; code that "
            "maps category ids through 'categories' raises KeyError on them.",
            **{"class": str(value)}, category_id=value, suggestions=[], unit=record.unit,
            places=places_of(record, where[:PLACES_KEPT]), annotations=shown, count=count,
            declared_ids=declared[:PLACES_KEPT],
        ))
    return findings


@rule(UNKNOWN_CLASS, "annotation", REFERENCE_EXAMPLES, reads="classes")
def names_missing_from_the_reference(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for a category name that the reference file of the dataset does not declare
    (training code builds its class list from one file), when the user gave no classes."""
    table = record.classes
    if table is None or table.reference is None or table.user_classes(spec) is not None or not len(record.labels):
        return ()
    rows = declared_objects(record)
    allowed = _class_set(table.reference)
    labels = np.asarray(record.labels)
    values, counts = np.unique(labels[rows], return_counts=True)
    reference_spec = LabelSpec(classes=table.reference)
    findings = []
    for value, count in zip(values.tolist(), counts.tolist()):
        name = table.names[value]
        if name in allowed:
            continue
        where = rows[labels[rows] == value]
        shown = [record.where(int(r)) for r in where[:PLACES_KEPT]]
        suggestions = reference_spec.closest_classes(name)
        guess = did_you_mean(suggestions)
        findings.append(UNKNOWN_CLASS.finding(
            record.display,
            f"category {name!r} (id {value}) is not among the {len(table.reference)} categories of "
            f"{table.reference_source}: {plural(count, record.unit)} ({sample(shown, count)}){guess}",
            hint="Use the same categories in every split (training code builds its class list from "
            "one file), or rename the category.",
            **{"class": name}, category_id=value, suggestions=suggestions, unit=record.unit,
            places=places_of(record, where[:PLACES_KEPT]), annotations=shown, count=count,
            reference=table.reference_source,
        ))
    return findings


@rule(UNKNOWN_CLASS, "annotation", FOLDER_EXAMPLES, reads="folder")
def class_folder_not_in_the_spec(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for an ImageFolder class folder whose name is not a class of the spec."""
    folder = record.folder
    if folder is None or not folder.images or spec.classes is None or spec.count_disagrees \
            or folder.name in spec.classes:
        return ()
    suggestions = spec.closest_classes(folder.name)
    guess = did_you_mean(suggestions)
    where = f" in {folder.split}/" if folder.split else ""
    return (UNKNOWN_CLASS.finding(
        record.display,
        f"class folder {folder.name!r}{where} ({plural(folder.images, 'image')}) is not one of the "
        f"{len(spec.classes)} classes of the spec{guess}",
        hint=(f"Rename the folder to {suggestions[0]!r}" if suggestions else "Rename the folder")
        + ", add the class to the spec, or move the folder out of the dataset.",
        **{"class": folder.name}, suggestions=suggestions, unit="image", places=[], count=folder.images,
    ),)


@lru_cache(maxsize=16)
def _class_set(classes: tuple[str, ...]) -> frozenset[str]:
    return frozenset(classes)


def named_objects(record: AnnotationRecord) -> tuple[list[str], list[int]]:
    """The class names of a record's objects and their places (objects given by id left out;
    each name of a multi-label row at the row's place)."""
    labels = record.labels
    if all(type(label) is str for label in labels):
        return labels, record.places or list(range(1, len(labels) + 1))
    names, places = [], []
    for i, label in enumerate(labels):
        if isinstance(label, str):
            names.append(label)
            places.append(record.place(i))
        elif isinstance(label, tuple):
            names.extend(label)
            places.extend([record.place(i)] * len(label))
    return names, places


def object_ids(record: AnnotationRecord, spec: LabelSpec):
    """The integer class ids of a record's objects and their places: ids as given, and under a
    spec that names no classes, names that are integers (VOC files labelled "0", "1"). The
    category ids of a file's own class table count only against a number of classes or
    values given (they are not class indices), and come as arrays."""
    if record.classes is not None:
        rows = judged_category_objects(record, spec)
        places = np.asarray(record.places)[rows] if record.places is not None else rows + 1
        return np.asarray(record.labels)[rows], places
    names_are_ids = spec.classes is None
    if not names_are_ids and all(type(label) is str for label in record.labels):
        return [], []
    ids: list[int] = []
    places = []
    for i, label in enumerate(record.labels):
        if isinstance(label, tuple):
            if names_are_ids:
                ids.extend(int(name) for name in label if _integer(name))
                places.extend(record.place(i) for name in label if _integer(name))
            continue
        if isinstance(label, str):
            if not (names_are_ids and _integer(label)):
                continue
            label = int(label)
        ids.append(label)
        places.append(record.place(i))
    return ids, places


def judged_category_objects(record: AnnotationRecord, spec: LabelSpec) -> np.ndarray:
    """The objects whose category id is judged as a class id: those of declared categories,
    when a number of classes or values is given (category ids are not class indices)."""
    if spec.num_classes is None and spec.values is None:
        return np.zeros(0, np.int64)
    return declared_objects(record)


def declared_objects(record: AnnotationRecord) -> np.ndarray:
    """The indices of the objects whose class is an id the file's own class table declares."""
    labelled = _labelled(record)
    return labelled[np.isin(np.asarray(record.labels)[labelled], _declared_ids(record))]


def places_of(record: AnnotationRecord, rows) -> list[int]:
    """The 1-based places of the objects at ``rows``."""
    if record.places is None:
        return [int(r) + 1 for r in rows]
    return np.asarray(record.places)[rows].tolist()


def _labelled(record: AnnotationRecord) -> np.ndarray:
    return np.flatnonzero(record.labelled) if record.labelled is not None else np.arange(len(record.labels))


def _declared_ids(record: AnnotationRecord) -> np.ndarray:
    # not a user mistake: asked only of a file with its own class table (callers check record.classes)
    assert record.classes is not None
    names = record.classes.names
    return np.fromiter(names, dtype=np.int64, count=len(names))


def _integer(name: str) -> bool:
    try:
        int(name)
    except ValueError:
        return False
    return True
