"""LG005 on annotation records: the image an annotation names lies outside its image folder.

The layout resolves the reference with the one inside-root test
(:func:`labelguard.layouts.pairing.inside_root`); this rule judges it.
"""

from __future__ import annotations

from labelguard.checks.files import ESCAPES_ROOT
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.rules._examples import voc_xml
from labelguard.rules.lg002 import _image

EXAMPLES = (
    Example(True, "<filename> climbs out of JPEGImages",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="../../a.jpg"),
                     "JPEGImages/a.jpg": _image()}),
    Example(False, "<filename> names a file inside JPEGImages",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="a.jpg"),
                     "JPEGImages/a.jpg": _image()}),
)


@rule(ESCAPES_ROOT, "annotation", EXAMPLES)
def named_image_outside(record: AnnotationRecord, spec):
    image = record.image
    if image is None or not image.escapes:
        return ()
    return (ESCAPES_ROOT.finding(
        record.display, f"{image.field} {image.written!r} points outside the image folder {image.folder}",
        hint=f"Write the image's path inside its folder in {image.field}.", filename=image.written,
    ),)
