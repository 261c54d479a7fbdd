"""LG101 on annotation records: a class name that the spec does not hold, in every format.

* Names of objects, rows and lines (VOC, YOLO, CSV/TSV tables, multi-label one-hot rows)
  and the category names of a COCO file against the spec's classes: the message and its
  "did you mean" come from :func:`name_findings`.
* A file with its own class table (COCO ``categories``): an object of a category id the
  table does not declare, and, when the user gave no classes, a category name missing from
  the reference file of the dataset (the training split of the same flavour).
* An ImageFolder class folder whose name is not a class of the spec.
"""

from __future__ import annotations

from typing import Sequence


import numpy as np

from labelguard.core.registry import FixExample, define
from labelguard.core.findings import Finding
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import did_you_mean, plural, spans, verb
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml
from labelguard.rules._labels import (PLACES_KEPT, class_set, declared_ids, declared_objects, integer_name,
                                      labelled_rows, named_objects, places_at, places_of, places_text)
from labelguard.rules._objects import sample

UNKNOWN_CLASS = define(
    "LG101", "class-name-not-in-spec", "error",
    summary="a class name is not in the spec",
    why="""
The dataset looks the name up in its class list: a KeyError, or an index past the head of
the model that becomes "device-side assert triggered" in the loss. A stray annotation file
from another dataset is the classic cause.""",
    bad="<object><name>dgo</name></object>  with classes [cat, dog]",
    good="<object><name>dog</name></object>",
    fix="Rename the class (`labelguard fix rename --map dgo=dog`), add it to the spec, or remove the stray file.",
    fix_safety="unsafe", fix_command="labelguard fix rename",
    fix_examples=(FixExample(
        "a VOC object named 'dgo' with classes cat, dog -> `--map dgo=dog`",
        lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("dgo", (2, 2, 8, 8))]),
                 "JPEGImages/a.jpg": image()},
        "rename", {"mapping": {"dgo": "dog"}},
        lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("dog", (2, 2, 8, 8))])},
        spec={"classes": ("cat", "dog")}),),
)

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


@rule(UNKNOWN_CLASS, "annotation", EXAMPLES, files_only=True)
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
        if class_set(spec.classes).issuperset(labels):
            return ()
    elif not spec.is_known:
        return ()
    names, places = named_objects(record)
    return name_findings(record.display, names, spec, unit=record.unit, places=places)


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
    allowed = class_set(classes)
    bad_ids = [c for c in np.unique(ids).tolist() if table.names[c] not in allowed]
    if not bad_ids:
        return []
    bad_rows = rows[np.isin(ids, bad_ids)]
    names = [table.names[int(c)] for c in np.asarray(record.labels)[bad_rows]]
    return name_findings(record.display, names, spec, unit=record.unit, places=places_of(record, bad_rows))


@rule(UNKNOWN_CLASS, "annotation", UNDECLARED_EXAMPLES, reads="classes", files_only=True)
def undeclared_category_ids(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for objects of a category id that the file's own class table does not declare
    (code that maps category ids through 'categories' raises KeyError on them)."""
    if record.classes is None or not len(record.labels):
        return ()
    labels = np.asarray(record.labels)
    labelled = labelled_rows(record)
    rows = labelled[~np.isin(labels[labelled], declared_ids(record))]
    if not len(rows):
        return ()
    declared = sorted(record.classes.names)
    n = len(declared)
    findings = []
    values, counts = np.unique(labels[rows], return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist()):
        where = rows[labels[rows] == value]
        shown = [record.where(int(r)) for r in where[:PLACES_KEPT]]
        users = f"{plural(count, record.unit)} {verb(count, 'uses')}"
        findings.append(UNKNOWN_CLASS.finding(
            record.display,
            f"category id {value} is not among the {plural(n, 'category')} of this file (ids {spans(declared)}); "
            f"{users} it: {sample(shown, count)}" if n else
            f"this file declares no categories, yet {users} category id {value}: {sample(shown, count)}",
            hint=f"Add category {value} to 'categories', or fix or remove these annotations; code that "
            "maps category ids through 'categories' raises KeyError on them.",
            **{"class": str(value)}, category_id=value, suggestions=[], unit=record.unit,
            places=places_of(record, where[:PLACES_KEPT]), annotations=shown, count=count,
            declared_ids=declared[:PLACES_KEPT],
        ))
    return findings


@rule(UNKNOWN_CLASS, "annotation", REFERENCE_EXAMPLES, reads="classes", files_only=True)
def names_missing_from_the_reference(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for a category name that the reference file of the dataset does not declare
    (training code builds its class list from one file), when the user gave no classes."""
    table = record.classes
    if table is None or table.reference is None or table.user_classes(spec) is not None or not len(record.labels):
        return ()
    rows = declared_objects(record)
    allowed = class_set(table.reference)
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
        among = _not_among(len(table.reference), "category", str(table.reference_source))
        findings.append(UNKNOWN_CLASS.finding(
            record.display,
            f"category {name!r} (id {value}) {among}: "
            f"{plural(count, record.unit)} ({sample(shown, count)}){guess}",
            hint="Use the same categories in every split (training code builds its class list from "
            "one file), or rename the category.",
            **{"class": name}, category_id=value, suggestions=suggestions, unit=record.unit,
            places=places_of(record, where[:PLACES_KEPT]), annotations=shown, count=count,
            reference=table.reference_source,
        ))
    return findings


@rule(UNKNOWN_CLASS, "annotation", FOLDER_EXAMPLES, reads="folder", files_only=True)
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
        f"class folder {folder.name!r}{where} ({plural(folder.images, 'image')}) "
        f"{_not_among(len(spec.classes), 'class', 'the spec')}{guess}",
        hint=(f"Rename the folder to {suggestions[0]!r}" if suggestions else "Rename the folder")
        + ", add the class to the spec, or move the folder out of the dataset.",
        **{"class": folder.name}, suggestions=suggestions, unit="image", places=[], count=folder.images,
    ),)


def name_findings(
    display: str | None,
    names: Sequence[str],
    spec: LabelSpec,
    *,
    unit: str = "object",
    places: Sequence[int] | None = None,
) -> list[Finding]:
    """LG101 for every name of one file that the spec does not allow (one finding per name).

    Args:
        display: the file as shown in findings.
        names: the class names in file order.
        spec: the label spec.
        unit: what a place counts ("object", "row", "annotation").
        places: the 1-based place of each name (defaults to its position + 1).
    """
    allowed = class_set(spec.classes) if spec.classes is not None else None
    if allowed is None:
        return _names_as_ids(display, names, spec, unit, places) if spec.is_known else []
    unknown = [i for i, name in enumerate(names) if name not in allowed]
    if not unknown:
        return []
    by_name: dict[str, list[int]] = {}
    for i in unknown:
        by_name.setdefault(names[i], []).append(i)
    findings = []
    n = len(allowed)
    for name, indices in by_name.items():
        where = places_at(indices, places)
        suggestions = spec.closest_classes(name)
        guess = did_you_mean(suggestions)
        findings.append(UNKNOWN_CLASS.finding(
            display,
            f"class {name!r} {_not_among(n, 'class', 'the spec')} ({places_text(unit, where)}){guess}",
            hint=(f"Rename it to {suggestions[0]!r}" if suggestions else "Rename it to a class of the spec")
            + ", add it to the class list, or remove the file if it comes from another dataset "
            "(`labelguard fix drop FILE` takes it out with its list entries, undoably).",
            **{"class": name},
            suggestions=suggestions, unit=unit, places=where[:PLACES_KEPT], count=len(where),
        ))
    return findings
def _names_as_ids(display: str | None, names: Sequence[str], spec: LabelSpec, unit: str,
                  places: Sequence[int] | None) -> list[Finding]:
    """A spec of ids only: a name that is no integer is unknown (integer names are ids, which
    LG102/LG103 judge)."""
    findings = []
    others: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        if not integer_name(name):
            others.setdefault(name, []).append(i)
    for name, indices in others.items():
        where = places_at(indices, places)
        findings.append(UNKNOWN_CLASS.finding(
            display,
            f"class {name!r} is not an integer id, and the spec names no classes "
            f"({spec.describe()}): {places_text(unit, where)}",
            hint="Give the class names (--classes, a labels.txt beside the annotations), "
            "or remove the file if it comes from another dataset.",
            **{"class": name},
            suggestions=[], unit=unit, places=where[:PLACES_KEPT], count=len(where),
        ))
    return findings


def _not_among(count: int, noun_: str, whose: str) -> str:
    """"is not one of the 20 classes of the spec", or "is not the only class of the spec"."""
    if count == 1:
        return f"is not the only {noun_} of {whose}"
    return f"is not one of the {plural(count, noun_)} of {whose}"
