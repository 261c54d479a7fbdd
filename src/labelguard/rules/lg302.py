"""LG302 on annotation records: YOLO values outside [0, 1] (pixel coordinates, most often).

The record's ``normalised`` column holds, per row, the values a YOLO loader takes for
fractions of the image: the box and the polygon or keypoint coordinates (pose visibility
flags left out).
"""

from __future__ import annotations

from labelguard.core.registry import define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, plural, shorten
from labelguard.rules._examples import yolo_rows

YOLO_NOT_NORMALISED = define(
    "LG302", "yolo-coordinates-not-normalised", "error",
    summary="YOLO coordinates are not normalised to [0, 1]",
    why="""
YOLO rows hold centre and size as fractions of the image; pixel coordinates put every box
far outside the image and the loader drops or clips them.""",
    bad="0 320 240 64 48",
    good="0 0.5 0.5 0.1 0.1",
    fix="Divide x and width by the image width, y and height by the image height.",
)

# Coordinates above this are taken for pixels in the message.
PIXEL_HINT = 2.0

EXAMPLES = (
    Example(True, "a YOLO row in pixels", lambda: {"labels/a.txt": yolo_rows([(0, 320, 240, 64, 48)])}),
    Example(False, "a YOLO row in fractions of the image",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .1, .1)])}),
)


@rule(YOLO_NOT_NORMALISED, "annotation", EXAMPLES, reads="normalised")
def values_outside_the_unit_range(record: AnnotationRecord, spec):
    if not record.normalised:
        return ()
    outside = [(record.place(i), values) for i, values in enumerate(record.normalised)
               if values and (min(values) < 0.0 or max(values) > 1.0)]
    if not outside:
        return ()
    largest = max(max(v) for _, v in outside)
    smallest = min(min(v) for _, v in outside)
    shown = shorten(outside, SHOWN, lambda item: f"{record.unit} {item[0]} "
                    f"({' '.join(f'{x:g}' for x in item[1][:4])}{' ...' if len(item[1]) > 4 else ''})", sep="; ")
    pixels = " (these look like pixel coordinates)" if largest > PIXEL_HINT else ""
    return [YOLO_NOT_NORMALISED.finding(
        record.display,
        f"{plural(len(outside), record.unit)} with coordinates outside [0, 1] "
        f"(from {smallest:g} to {largest:g}){pixels}: {shown}",
        hint="Divide x and width by the image width, y and height by the image height; "
        "clip values that are slightly outside to [0, 1].",
        rows=[p for p, _ in outside[:PLACES_KEPT]], count=len(outside),
        min=smallest, max=largest,
    )]
