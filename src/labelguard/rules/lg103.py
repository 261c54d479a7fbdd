"""LG103 on annotation records: a negative class id that the spec does not ignore (object
ids, integer names and CSV labels; a COCO file's category ids when a number of classes is
given).

The code (``negative-class-id``) is defined in :mod:`labelguard.checks.classes`; the message
comes from :func:`labelguard.checks.labels.id_findings`.
"""

from __future__ import annotations

import numpy as np

from labelguard.checks.classes import NEGATIVE_ID
from labelguard.checks.labels import id_findings
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml
from labelguard.rules.lg101 import object_ids

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


@rule(NEGATIVE_ID, "annotation", EXAMPLES)
def negative_ids(record: AnnotationRecord, spec: LabelSpec):
    ids, places = object_ids(record, spec)
    if type(ids) is not list:  # category ids of a large file: the negative ones only
        negative = np.flatnonzero(ids < 0)
        ids, places = ids[negative].tolist(), places[negative].tolist()
    if not ids or min(ids) >= 0:
        return ()
    return [f for f in id_findings(record.display, ids, spec, unit=record.unit, places=places)
            if f.code == NEGATIVE_ID.code]
