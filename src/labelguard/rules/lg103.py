"""LG103 on annotation records: a negative class id that the spec does not ignore.

The code (``negative-class-id``) is defined in :mod:`labelguard.checks.classes`; the message
comes from :func:`labelguard.checks.labels.id_findings`.
"""

from __future__ import annotations

from labelguard.checks.classes import NEGATIVE_ID
from labelguard.checks.labels import id_findings
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.rules._examples import voc_xml
from labelguard.rules.lg101 import object_ids

EXAMPLES = (
    Example(True, "a VOC object of class -1 under a spec of ids 0..2",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("-1", (2, 2, 8, 8))])},
            spec={"num_classes": 3}),
    Example(False, "-1 declared as the ignore index",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("-1", (2, 2, 8, 8))])},
            spec={"num_classes": 3, "ignore": (-1,)}),
)


@rule(NEGATIVE_ID, "annotation", EXAMPLES)
def negative_ids(record: AnnotationRecord, spec: LabelSpec):
    ids, places = object_ids(record, spec)
    if not ids or min(ids) >= 0:
        return ()
    return [f for f in id_findings(record.display, ids, spec, unit=record.unit, places=places)
            if f.code == NEGATIVE_ID.code]
