"""LG102 on annotation records: an integer class id past the spec (>= num_classes, or not
among its values), in every format.

* Ids of objects, rows and lines (YOLO, VOC names that are integers, CSV labels): the
  message comes from :func:`too_large_findings`.
* The category ids of a file's own class table (COCO): they are not class indices, so they
  are judged only against a number of classes or values given, and the finding carries the
  contiguous ``category_index_map`` (id -> index, ids sorted as torchvision, detectron2 and
  mmdet build it).
* An ImageFolder class folder's index (its place among the split's sorted class folders)
  under a spec of ids only.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from labelguard.core.registry import FixExample, define
from labelguard.core.findings import Finding
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import LISTED, noun, plural, shorten, spans, verb
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, yolo_rows
from labelguard.rules._objects import sample
from labelguard.rules._labels import (PLACES_KEPT, illegal_places, judged_category_objects, object_ids, places_at,
                                      places_of, places_text)

ID_TOO_LARGE = define(
    "LG102", "class-id-out-of-range", "error",
    summary="an integer class id is >= num_classes",
    why="""
cross_entropy / nll_loss index the logits with the id; an id >= num_classes is the
"t >= 0 && t < n_classes" device-side assert on a GPU and "Target N is out of bounds" on the CPU.""",
    bad="YOLO row '3 0.5 0.5 0.2 0.2' with nc: 3",
    good="YOLO row '2 0.5 0.5 0.2 0.2' with nc: 3",
    fix="Set num_classes to the real number of classes, or remap the ids to 0..num_classes-1.",
    fix_safety="unsafe", fix_command="labelguard fix remap --ids",
    fix_examples=(FixExample(
        "a YOLO row of class 3 with nc=3, where 3 was meant as 2 -> `--ids --map 3:2`",
        lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (3, .4, .4, .1, .1)])},
        "remap_ids", {"mapping": {3: 2}},
        lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (2, .4, .4, .1, .1)])}, spec={"num_classes": 3}),),
)

EXAMPLES = (
    Example(True, "a YOLO row of class 3 with nc=3",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (3, .4, .4, .1, .1)])},
            spec={"num_classes": 3}),
    Example(False, "YOLO rows of classes 0..2 with nc=3",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (2, .4, .4, .1, .1)])},
            spec={"num_classes": 3}),
    Example(True, "a CSV label 3 with num_classes=3",
            lambda: {"train.csv": csv_table([("a.jpg", 0), ("b.jpg", 3)]), "a.jpg": image(), "b.jpg": image()},
            spec={"num_classes": 3}),
    Example(False, "CSV labels 0..2 with num_classes=3",
            lambda: {"train.csv": csv_table([("a.jpg", 0), ("b.jpg", 2)]), "a.jpg": image(), "b.jpg": image()},
            spec={"num_classes": 3}),
)

# 80 categories with ids 1..89 and gaps, as COCO's 80 keep theirs 1..90.
COCO_STYLE = tuple((i, f"class{i}") for i in range(1, 90) if i % 9)

CATEGORY_EXAMPLES = (
    Example(True, "80 COCO category ids up to 89 for num_classes=80",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1), coco_box(2, 89)], categories=COCO_STYLE)}, spec={"num_classes": 80}),
    Example(False, "80 COCO category ids up to 89 with num_classes=90",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1), coco_box(2, 89)], categories=COCO_STYLE)}, spec={"num_classes": 90}),
)

FOLDER_EXAMPLES = (
    Example(True, "three ImageFolder class folders with num_classes=2",
            lambda: {"train/ant/a.jpg": image(), "train/bee/a.jpg": image(), "train/cat/a.jpg": image()},
            spec={"num_classes": 2}),
    Example(False, "three ImageFolder class folders with num_classes=3",
            lambda: {"train/ant/a.jpg": image(), "train/bee/a.jpg": image(), "train/cat/a.jpg": image()},
            spec={"num_classes": 3}),
)


@rule(ID_TOO_LARGE, "annotation", EXAMPLES, only_bad_values=True)
def ids_past_the_spec(record: AnnotationRecord, spec: LabelSpec):
    if record.classes is not None:  # category ids: category_ids_past_the_spec
        return ()
    ids, places = object_ids(record, spec)
    if type(ids) is not list:  # ids of an array: the illegal ones only, found vectorised
        bad = np.flatnonzero(~spec.legal(ids, reduce=False) & (ids >= 0))
        ids, places = ids[bad].tolist(), places[bad].tolist()
    if not ids:
        return ()
    return too_large_findings(record.display, ids, spec, unit=record.unit, places=places)


@rule(ID_TOO_LARGE, "annotation", CATEGORY_EXAMPLES, reads="classes", files_only=True)
def category_ids_past_the_spec(record: AnnotationRecord, spec: LabelSpec):
    """LG102 for category ids of a file's own class table that a number of classes (or the
    values) given does not allow, with the contiguous map training code must build."""
    if record.classes is None:
        return ()
    rows = judged_category_objects(record, spec)
    allowed = spec.allowed_values()
    if not len(rows) or allowed is None:
        return ()
    labels = np.asarray(record.labels)
    ids = labels[rows]
    categories = record.classes.names
    over = rows[(ids >= 0) & ~spec.legal(ids, reduce=False)]
    if not len(over):
        return ()
    mapping = category_index_map(categories)
    found = np.unique(labels[over]).tolist()
    n_cats = len(categories)
    n = spec.effective_num_classes
    listing = spans(found)
    where = [record.where(int(r)) for r in over[:PLACES_KEPT]]
    if spec.is_contiguous():
        assert n is not None  # not a user mistake: a spec with allowed values (checked above) counts its classes
        head = (f"{noun(len(found), 'category id')} {listing} {verb(len(found), 'is')} "
                f">= num_classes={n} in {plural(len(over), record.unit)}")
        if n_cats <= n:
            tail = (f": the {n_cats} category ids ({spans(sorted(categories))}) are not "
                    f"contiguous; map them to indices with {short_map(mapping)} "
                    "(category_index_map)")
            hint = ("Build the contiguous map in the dataset (as torchvision/detectron2 do: "
                    "{id: i for i, id in enumerate(sorted(ids))}), shifted by one if index 0 is "
                    f"background; or set num_classes to {max(categories) + 1}.")
        else:
            tail = (f": this file declares {n_cats} categories, more than num_classes={n} even after "
                    f"mapping them to contiguous indices {short_map(mapping)} (category_index_map)")
            hint = f"Set num_classes to {n_cats} (or {n_cats + 1} with a background class), or drop categories."
    else:
        head = f"{noun(len(found), 'category id')} {listing} not among the allowed values"
        tail = f" {shorten(allowed, LISTED)} in {plural(len(over), record.unit)}"
        hint = "Remap the category ids to the spec's values (category_index_map gives contiguous indices)."
    return [ID_TOO_LARGE.finding(
        record.display, f"{head}{tail} ({sample(where, len(over))})", hint=hint,
        ids=found, num_classes=n if spec.is_contiguous() else None,
        allowed=None if spec.is_contiguous() else list(allowed),
        unit=record.unit, places=places_of(record, over[:PLACES_KEPT]),
        annotations=where, count=int(len(over)),
        category_index_map={str(k): v for k, v in mapping.items()},
        category_names={str(k): v for k, v in categories.items()},
    )]


@rule(ID_TOO_LARGE, "annotation", FOLDER_EXAMPLES, reads="folder", files_only=True)
def class_folder_index_past_the_spec(record: AnnotationRecord, spec: LabelSpec):
    """LG102 for an ImageFolder class folder whose index a spec of ids only does not allow:
    a folder's id is its place among the split's sorted class folders, as torchvision's
    ImageFolder numbers them."""
    folder = record.folder
    if folder is None or not folder.images or not spec.is_known or (
            spec.classes is not None and not spec.count_disagrees):
        return ()
    allowed, n = spec.allowed_values(), spec.effective_num_classes
    assert allowed is not None and n is not None  # not a user mistake: a known spec (checked above) has both
    if folder.index in allowed:
        return ()
    where = f"{folder.split}/" if folder.split else "the dataset"
    expected = f"0..{n - 1} (num_classes={n})" if spec.is_contiguous() else shorten(allowed, LISTED)
    return (ID_TOO_LARGE.finding(
        record.display,
        f"class folder {folder.name!r} ({plural(folder.images, 'image')}) gets class index {folder.index}: "
        f"{where} has {folder.classes:,} class folders, which ImageFolder numbers 0..{folder.classes - 1} in "
        f"sorted order, but the spec allows {expected}",
        hint=f"Set num_classes to {folder.classes}, or remove the class folders that are not classes.",
        ids=[folder.index], num_classes=n if spec.is_contiguous() else None,
        allowed=None if spec.is_contiguous() else list(allowed), unit="image", places=[], count=folder.images,
    ),)


def category_index_map(categories: dict[int, str]) -> dict[int, int]:
    """The contiguous id -> index map training code builds from COCO category ids (sorted)."""
    return {cat_id: index for index, cat_id in enumerate(sorted(categories))}


def short_map(mapping: dict[int, int], limit: int = 6) -> str:
    """A map shown by its first and last entries: ``{1: 0, 2: 1, ..., 90: 79}``."""
    items = list(mapping.items())
    if len(items) <= limit:
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    head = ", ".join(f"{k}: {v}" for k, v in items[: limit - 2])
    tail = ", ".join(f"{k}: {v}" for k, v in items[-2:])
    return "{" + head + ", ..., " + tail + "}"


def too_large_findings(display: str | None, ids: Sequence[int], spec: LabelSpec, *, unit: str = "row",
                       places: Sequence[int] | None = None) -> list[Finding]:
    """LG102 for the ids of one file that are not negative and not allowed by the spec: one
    finding naming the ids and every place (``data``: ``ids``, ``num_classes`` or, for a spec
    of values that are not 0..n-1, ``allowed``, ``unit``, ``places``, ``count``)."""
    too_large = illegal_places(ids, spec)[1]
    if not too_large:
        return []
    found = sorted({ids[i] for i in too_large})
    where = places_at(too_large, places)
    listing = shorten(found, 10)
    what = noun(len(found), "class id")
    if spec.is_contiguous():
        n = spec.effective_num_classes
        assert n is not None  # not a user mistake: a known spec (checked above) counts its classes
        names = f" ({plural(len(spec.classes), 'class name')})" if spec.classes else ""
        message = (f"{what} {listing} {verb(len(found), 'is')} >= num_classes={n}{names}: "
                   f"ids must be 0..{n - 1} ({places_text(unit, where)})")
        hint = (f"If the data is right, set num_classes (YOLO: nc) to the largest id found + 1; "
                f"otherwise remap the ids to 0..{n - 1}.")
        if found[-1] == n and 0 not in ids and len(set(ids)) > 1:
            hint += f" Ids of 1..{n} with no 0 are often 1-based: subtract 1."
        extra: dict[str, int | list[int] | None] = {"num_classes": n, "allowed": None}
    else:
        allowed = spec.allowed_values()
        assert allowed is not None  # not a user mistake: a known spec (checked above) has its values
        values = list(allowed)  # not an interval from 0: the spec's own values
        message = (f"{what} {listing} {verb(len(found), 'is')} not among the allowed "
                   f"values [{shorten(values, LISTED)}] ({places_text(unit, where)})")
        hint = "Remap the ids to the spec's values, or add them to the spec."
        extra = {"num_classes": None, "allowed": values}
    return [ID_TOO_LARGE.finding(
        display, message, hint=hint,
        ids=found, **extra, unit=unit, places=where[:PLACES_KEPT], count=len(where),
    )]
