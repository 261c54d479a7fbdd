"""LG102 on annotation records: an integer class id past the spec (>= num_classes, or not
among its values).

The code (``class-id-out-of-range``) is defined in :mod:`labelguard.checks.classes`; the
message comes from :func:`labelguard.checks.labels.id_findings`.
"""

from __future__ import annotations

from labelguard.checks.classes import ID_TOO_LARGE
from labelguard.checks.labels import id_findings
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.rules._examples import yolo_rows
from labelguard.rules.lg101 import object_ids

EXAMPLES = (
    Example(True, "a YOLO row of class 3 with nc=3",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (3, .4, .4, .1, .1)])},
            spec={"num_classes": 3}),
    Example(False, "YOLO rows of classes 0..2 with nc=3",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (2, .4, .4, .1, .1)])},
            spec={"num_classes": 3}),
)


@rule(ID_TOO_LARGE, "annotation", EXAMPLES)
def ids_past_the_spec(record: AnnotationRecord, spec: LabelSpec):
    ids, places = object_ids(record, spec)
    if not ids:
        return ()
    return [f for f in id_findings(record.display, ids, spec, unit=record.unit, places=places)
            if f.code == ID_TOO_LARGE.code]
