"""What the class-label rules (LG101, LG102, LG103) share: the objects of a record as names
or integer ids with their places, and how places are kept and shown.

``places`` are 1-based (object index, row number) and capped at :data:`PLACES_KEPT` in a
finding's ``data``; ``count`` is always the full number.
"""

from __future__ import annotations

from functools import lru_cache

from typing import Sequence

import numpy as np

from labelguard.core.records import AnnotationRecord
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun, shorten

PLACES_KEPT = 50
PLACES_SHOWN = 5


def places_at(indices: Sequence[int], places: Sequence[int] | None) -> list[int]:
    return [places[i] if places is not None else i + 1 for i in indices]


def places_text(unit: str, places: list[int]) -> str:
    return f"{noun(len(places), unit)} {shorten(places, PLACES_SHOWN)}"


def illegal_places(ids: Sequence[int], spec: LabelSpec) -> tuple[list[int], list[int]]:
    """The indices of ``ids`` the spec does not allow, split into (negative, the others);
    the spec is asked once per distinct id (class ids are never shifted by reduce_zero_label)."""
    if not spec.is_known:
        return [], []
    illegal = {value for value in set(ids) if not spec.is_legal(value, reduce=False)}
    if not illegal:
        return [], []
    bad = [i for i, value in enumerate(ids) if value in illegal]
    return [i for i in bad if ids[i] < 0], [i for i in bad if ids[i] >= 0]


@lru_cache(maxsize=16)
def class_set(classes: tuple[str, ...]) -> frozenset[str]:
    """The class names as a set, built once per class list (a list of 21,841 names costs about
    1 ms to hash into a set, on every annotation file)."""
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
    values given (they are not class indices), and come as arrays, as do ids given as an array."""
    if record.classes is not None:
        rows = judged_category_objects(record, spec)
        places = np.asarray(record.places)[rows] if record.places is not None else rows + 1
        return np.asarray(record.labels)[rows], places
    if isinstance(record.labels, np.ndarray):  # integer ids as an array (a target of the guard)
        places = np.asarray(record.places) if record.places is not None else np.arange(1, len(record.labels) + 1)
        return record.labels, places
    names_are_ids = spec.classes is None
    if not names_are_ids and all(type(label) is str for label in record.labels):
        return [], []
    ids: list[int] = []
    places = []
    for i, label in enumerate(record.labels):
        if isinstance(label, tuple):
            if names_are_ids:
                ids.extend(int(name) for name in label if integer_name(name))
                places.extend(record.place(i) for name in label if integer_name(name))
            continue
        if isinstance(label, str):
            if not (names_are_ids and integer_name(label)):
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
    labelled = labelled_rows(record)
    return labelled[np.isin(np.asarray(record.labels)[labelled], declared_ids(record))]


def places_of(record: AnnotationRecord, rows) -> list[int]:
    """The 1-based places of the objects at ``rows``."""
    if record.places is None:
        return [int(r) + 1 for r in rows]
    return np.asarray(record.places)[rows].tolist()


def labelled_rows(record: AnnotationRecord) -> np.ndarray:
    return np.flatnonzero(record.labelled) if record.labelled is not None else np.arange(len(record.labels))


def declared_ids(record: AnnotationRecord) -> np.ndarray:
    # not a user mistake: asked only of a file with its own class table (callers check record.classes)
    assert record.classes is not None
    names = record.classes.names
    return np.fromiter(names, dtype=np.int64, count=len(names))


def integer_name(name: str) -> bool:
    try:
        int(name)
    except ValueError:
        return False
    return True
