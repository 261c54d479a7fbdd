"""LG103 on annotation records: a negative class id that the spec does not ignore (object
ids, integer names and CSV labels; a COCO file's category ids when a number of classes is
given).

The message comes from :func:`negative_findings`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from labelguard.core.registry import FixExample, define
from labelguard.core.findings import Finding
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import LISTED, noun, shorten
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml
from labelguard.rules._labels import PLACES_KEPT, illegal_places, object_ids, places_at, places_text

NEGATIVE_ID = define(
    "LG103", "class-id-negative", "error",
    summary="a negative class id that is not the ignore index",
    why="""
-1 is a common "unknown" marker, but losses only skip it when it is their ignore_index
(CrossEntropyLoss's default is -100); otherwise the same out-of-range assert fires.""",
    bad="label -1 with ignore_index=-100",
    good="label -1 with ignore_index=-1, or the sample dropped",
    fix="Declare the value as ignore index (`--ignore-index -1`) and pass it to the loss, or drop those samples.",
    fix_safety="unsafe", fix_command="labelguard fix remap --ids",
    fix_examples=(FixExample(
        "a CSV label -1 with num_classes=2, where -1 meant class 1 -> `--ids --map -1:1`",
        lambda: {"train.csv": csv_table([("a.jpg", 0), ("b.jpg", -1)]), "a.jpg": image(), "b.jpg": image()},
        "remap_ids", {"mapping": {-1: 1}}, lambda: {"train.csv": csv_table([("a.jpg", 0), ("b.jpg", 1)])},
        spec={"num_classes": 2}),),
)

EXAMPLES = (
    Example(True, "a VOC object of class -1 under a spec of ids 0..2",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("-1", (2, 2, 8, 8))])},
            spec={"num_classes": 3}),
    Example(False, "-1 declared as the ignore index",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("-1", (2, 2, 8, 8))])},
            spec={"num_classes": 3, "ignore": (-1,)}),
    Example(True, "a CSV label -1 with num_classes=2",
            lambda: {"train.csv": csv_table([("a.jpg", 0), ("b.jpg", -1)]), "a.jpg": image(), "b.jpg": image()},
            spec={"num_classes": 2}),
    Example(False, "CSV labels 0 and 1 with num_classes=2",
            lambda: {"train.csv": csv_table([("a.jpg", 0), ("b.jpg", 1)]), "a.jpg": image(), "b.jpg": image()},
            spec={"num_classes": 2}),
    Example(True, "a COCO category id -1 with num_classes=2",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 0), coco_box(2, -1)], categories=((-1, "unknown"), (0, "cat")))},
            spec={"num_classes": 2}),
    Example(False, "COCO category ids 0 and 1 with num_classes=2",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 0), coco_box(2, 1)], categories=((0, "cat"), (1, "dog")))},
            spec={"num_classes": 2}),
)


@rule(NEGATIVE_ID, "annotation", EXAMPLES, only_bad_values=True)
def negative_ids(record: AnnotationRecord, spec: LabelSpec):
    ids, places = object_ids(record, spec)
    if type(ids) is not list:  # category ids of a large file: the negative ones only
        negative = np.flatnonzero(ids < 0)
        ids, places = ids[negative].tolist(), places[negative].tolist()
    if not ids or min(ids) >= 0:
        return ()
    return negative_findings(record.display, ids, spec, unit=record.unit, places=places)


def negative_findings(display: str | None, ids: Sequence[int], spec: LabelSpec, *, unit: str = "row",
                      places: Sequence[int] | None = None) -> list[Finding]:
    """LG103 for the negative ids of one file that the spec does not ignore: one finding
    naming the ids and every place (``data``: ``ids``, ``ignore``, ``unit``, ``places``,
    ``count``)."""
    negative = illegal_places(ids, spec)[0]
    if not negative:
        return []
    found = sorted({ids[i] for i in negative})
    where = places_at(negative, places)
    ignore = list(spec.ignore)
    declared = f"ignore index {ignore}" if ignore else "no ignore index"
    return [NEGATIVE_ID.finding(
        display,
        f"negative {noun(len(found), 'class id')} {shorten(found, LISTED)} "
        f"({declared} declared): {places_text(unit, where)}",
        hint=f"Declare {found[0]} as the ignore index (`--ignore-index {found[0]}`, ignore_index={found[0]}) and "
        "pass it to the loss, or drop those labels.",
        ids=found, ignore=ignore, unit=unit, places=where[:PLACES_KEPT], count=len(where),
    )]
