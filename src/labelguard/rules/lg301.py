"""LG301 on annotation records: boxes that are degenerate or lie outside the image.

A box given by its corners (VOC, COCO after conversion) is degenerate when a minimum is not
below its maximum (NaN included) and outside when ``image_size`` is known and a corner leaves
it. A box given by its size (YOLO's width and height, in ``extents``) is degenerate when a
size is not positive; whether its values leave the image is LG302's.
"""

from __future__ import annotations

from labelguard.checks.boxes import BAD_BOX
from labelguard.checks.labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, plural, shorten
from labelguard.rules._examples import voc_xml, yolo_rows

BOXES_LISTED = 20

EXAMPLES = (
    Example(True, "a VOC box with flipped corners",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (60, 10, 20, 40))])}),
    Example(True, "a VOC box past the width of <size>",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (60, 10, 120, 40))], size=(100, 80))}),
    Example(True, "a YOLO box of zero width",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, 0, .2)])}),
    Example(False, "VOC boxes inside <size>",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (0, 0, 100, 80)), ("dog", (5, 5, 10, 10))])}),
    Example(False, "a YOLO box of positive size",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .1, .2)])}),
)


@rule(BAD_BOX, "annotation", EXAMPLES)
def bad_boxes(record: AnnotationRecord, spec):
    findings = []
    if record.boxes:
        findings.extend(_corner_findings(record))
    if record.extents:
        findings.extend(_extent_findings(record))
    return findings


def _corner_findings(record: AnnotationRecord) -> list:
    boxes = record.boxes
    size = record.image_size
    # The common case, every box sound, costs one comparison chain per box.
    if None not in boxes:
        if size is not None:
            width, height = size
            if all(0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height for x0, y0, x1, y1 in boxes):  # type: ignore[misc]
                return []
        elif all(x0 < x1 and y0 < y1 for x0, y0, x1, y1 in boxes):  # type: ignore[misc]
            return []
    bad = []
    for index, box in enumerate(boxes):
        if box is None:
            continue
        problem = _corner_problem(box, size)
        if problem is not None:
            bad.append((record.place(index), record.labels[index], box, *problem))
    if not bad:
        return []
    shown_size = f" of the {size[0]:g}x{size[1]:g} image" if size is not None else ""
    listing = shorten(bad, SHOWN, lambda item: f"{record.unit} {item[0]} {item[1]!r}: {item[4]}", sep="; ")
    kinds = {kind for _, _, _, kind, _ in bad}
    what = " or ".join(k for k in ("degenerate", "outside") if k in kinds)
    return [BAD_BOX.finding(
        record.display,
        f"{plural(len(bad), 'box')} {what}{shown_size}: {listing}",
        hint="Swap flipped corners, clip boxes to the image size, drop zero-area boxes; "
        "check the image size the annotation states when every box of a file lies outside.",
        width=size[0] if size else None, height=size[1] if size else None,
        boxes=[{record.unit: p, "class": label, "box": list(box), "problem": kind}
               for p, label, box, kind, _ in bad[:BOXES_LISTED]],
        count=len(bad),
    )]


def _corner_problem(box, size) -> tuple[str, str] | None:
    """(kind, what) of a box given by its corners, None when it is sound."""
    xmin, ymin, xmax, ymax = box
    # Written as "not (a < b)" so that NaN coordinates count as degenerate too.
    if not (xmin < xmax and ymin < ymax):
        return "degenerate", (f"xmin {xmin:g} >= xmax {xmax:g}" if not (xmin < xmax)
                              else f"ymin {ymin:g} >= ymax {ymax:g}")
    if size is None:
        return None
    width, height = size
    if xmin >= 0 and ymin >= 0 and xmax <= width and ymax <= height:
        return None
    return "outside", ", ".join(text for text, out in (
        (f"xmin {xmin:g} < 0", not xmin >= 0), (f"ymin {ymin:g} < 0", not ymin >= 0),
        (f"xmax {xmax:g} > width {width:g}", not xmax <= width),
        (f"ymax {ymax:g} > height {height:g}", not ymax <= height)) if out)


def _extent_findings(record: AnnotationRecord) -> list:
    degenerate = [(record.place(i), extent) for i, extent in enumerate(record.extents)
                  if extent is not None and not (extent[0] > 0.0 and extent[1] > 0.0)]
    if not degenerate:
        return []
    shown = shorten(degenerate, SHOWN, lambda item: f"{record.unit} {item[0]} (width {item[1][0]:g}, "
                    f"height {item[1][1]:g})", sep="; ")
    return [BAD_BOX.finding(
        record.display,
        f"{plural(len(degenerate), 'box')} of zero size: {shown}",
        hint="Remove zero-size boxes, or re-export them from the source annotations.",
        rows=[p for p, _ in degenerate[:PLACES_KEPT]], count=len(degenerate),
    )]
