"""LG003 on annotation records: the image an annotation names does not exist.

The layout resolves the reference (:class:`~labelguard.core.records.ImageReference`); this
rule judges it. Missing list entries are the pairing engine's (:func:`resolve_entry`).
"""

from __future__ import annotations

from labelguard.checks.files import MISSING
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.rules._examples import voc_xml
from labelguard.rules.lg002 import _image

EXAMPLES = (
    Example(True, "<filename> names b.jpg; only c.jpg exists",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="b.jpg"),
                     "JPEGImages/c.jpg": _image()}),
    Example(False, "<filename> names the JPEG beside",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="a.jpg"),
                     "JPEGImages/a.jpg": _image()}),
)


@rule(MISSING, "annotation", EXAMPLES)
def named_image_missing(record: AnnotationRecord, spec):
    image = record.image
    if image is None or not image.written or image.found or image.escapes:
        return ()
    paired = (f"; the image by this file's name is {image.paired}" if image.paired
              else f", and no image named {image.expected} exists either" if image.expected else "")
    return (MISSING.finding(
        record.display,
        f"{image.field} names {image.written!r}, which does not exist in {image.folder}{paired}",
        hint=f"Correct {image.field} (loaders that read it fail), or restore the image.",
        filename=image.written, image=image.paired,
    ),)
