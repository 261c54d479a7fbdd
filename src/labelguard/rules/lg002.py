"""LG002 on annotation records: an annotation that names no image, with no image of its name.

The layout resolves the reference (:class:`~labelguard.core.records.ImageReference`); this
rule judges it. Images without an annotation are found by the pairing engine at discovery.
"""

from __future__ import annotations

from labelguard.checks.files import UNPAIRED
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.rules._examples import voc_xml

EXAMPLES = (
    Example(True, "a VOC annotation without <filename> and without a JPEG of its name",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename=None),
                     "JPEGImages/b.jpg": _image()}),
    Example(False, "a VOC annotation without <filename>, its JPEG beside",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename=None),
                     "JPEGImages/a.jpg": _image()}),
)


def _image():
    import numpy as np

    return np.full((8, 10, 3), 120, np.uint8)


@rule(UNPAIRED, "annotation", EXAMPLES)
def annotation_without_image(record: AnnotationRecord, spec):
    image = record.image
    if image is None or image.written or image.paired is not None:
        return ()
    return (UNPAIRED.finding(
        record.display,
        f"annotation has no image: no {image.field}, and no image of the same name in {image.folder}",
        hint="Restore the image, or remove the annotation from the dataset and its lists.",
        side="annotation",
    ),)
