"""LG101 on annotation records: a class name that the spec does not hold.

The code (``unknown-class-name``) is defined with the class codes in
:mod:`labelguard.checks.classes`; the message and its "did you mean" come from
:func:`labelguard.checks.labels.name_findings`, shared with the class-folder and table checks.
"""

from __future__ import annotations

from functools import lru_cache

from labelguard.checks.classes import UNKNOWN_CLASS
from labelguard.checks.labels import name_findings
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.rules._examples import voc_xml

EXAMPLES = (
    Example(True, "a VOC object named 'dgo' in a dataset of cat and dog",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("dgo", (2, 2, 8, 8))])},
            spec={"classes": ("cat", "dog")}),
    Example(False, "VOC objects of the spec's classes",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("dog", (2, 2, 8, 8))])},
            spec={"classes": ("cat", "dog")}),
)


@rule(UNKNOWN_CLASS, "annotation", EXAMPLES)
def unknown_class_names(record: AnnotationRecord, spec: LabelSpec):
    """LG101 for each name the spec does not allow; under a spec of ids only, each name that
    is not an integer (integer names are ids: LG102/LG103 judge them)."""
    labels = record.labels
    if not labels:
        return ()
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


@lru_cache(maxsize=16)
def _class_set(classes: tuple[str, ...]) -> frozenset[str]:
    return frozenset(classes)


def named_objects(record: AnnotationRecord) -> tuple[list[str], list[int]]:
    """The class names of a record's objects and their places (objects given by id left out)."""
    labels = record.labels
    if all(type(label) is str for label in labels):
        return labels, record.places or list(range(1, len(labels) + 1))
    names, places = [], []
    for i, label in enumerate(labels):
        if isinstance(label, str):
            names.append(label)
            places.append(record.place(i))
    return names, places


def object_ids(record: AnnotationRecord, spec: LabelSpec) -> tuple[list[int], list[int]]:
    """The integer class ids of a record's objects and their places: ids as given, and under a
    spec that names no classes, names that are integers (VOC files labelled "0", "1")."""
    names_are_ids = spec.classes is None
    if not names_are_ids and all(type(label) is str for label in record.labels):
        return [], []
    ids, places = [], []
    for i, label in enumerate(record.labels):
        if isinstance(label, str):
            if not (names_are_ids and _integer(label)):
                continue
            label = int(label)
        ids.append(label)
        places.append(record.place(i))
    return ids, places


def _integer(name: str) -> bool:
    try:
        int(name)
    except ValueError:
        return False
    return True
