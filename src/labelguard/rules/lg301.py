"""LG301 on annotation records: boxes that are degenerate or lie outside their image, and
polygons too small to have an area.

A box given by its corners (VOC, COCO's [x, y, width, height] as corners) is degenerate when
a minimum is not below its maximum (NaN included) and outside when its image's size is known
(``image_size``, or the image table's sizes for a file of many images) and a corner leaves
it by more than the format's ``border_tolerance``. A file of one image gets one finding
naming the image size; a file of many images one finding per kind, each box with its image.
A box given by its size (YOLO's width and height, in ``extents``) is degenerate when a size
is not positive; whether its values leave the image is LG302's.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, plural, shorten, verb
from labelguard.rules._examples import coco_box, coco_json, voc_xml, yolo_rows
from labelguard.rules._objects import box_text, image_sizes, number, sample

BAD_BOX = define(
    "LG301", "box-degenerate-or-outside", "error",
    summary="a box is degenerate (xmin >= xmax, ymin >= ymax) or lies outside the image",
    why="""
Zero or negative box sizes give NaN/Inf in IoU and box-regression losses (log of a width
of 0), which later surfaces as a NaN loss or a device-side assert in a sampling kernel.""",
    bad="<bndbox><xmin>120</xmin><xmax>80</xmax>...  (corners flipped)",
    good="<bndbox><xmin>80</xmin><xmax>120</xmax>...",
    fix="Swap flipped corners, clip boxes to the image, drop zero-area boxes.",
)

BOXES_LISTED = 20
# The hint for a detection target's boxes at run time (the guard's), where no annotation states a size.
RUN_TIME_HINT = ("Swap flipped corners, clip boxes to the image, drop zero-area boxes where the dataset or its "
                 "transforms build them; if the boxes are not corners in the input's pixels, say how they are "
                 "written: guard(..., boxes='cxcywh'), 'xywh', 'xyxyn'...")

EXAMPLES = (
    Example(True, "a VOC box with flipped corners",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (60, 10, 20, 40))])}),
    Example(True, "a VOC box past the width of <size>",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (60, 10, 120, 40))], size=(100, 80))}),
    Example(False, "VOC boxes inside <size>",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (0, 0, 100, 80)), ("dog", (5, 5, 10, 10))])}),
    Example(True, "a COCO bbox ending past the width of its 10x8 image",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1, (6, 1, 8, 4))])}),
    Example(True, "a COCO bbox of width 0",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1, (6, 1, 0, 4))])}),
    Example(False, "a COCO bbox passing the border by less than the rounding tolerance",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1, (-0.5, 0, 10.5, 8))])}),
)

EXTENT_EXAMPLES = (
    Example(True, "a YOLO box of zero width",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, 0, .2)])}),
    Example(False, "a YOLO box of positive size",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .1, .2)])}),
)

POLYGON_EXAMPLES = (
    Example(True, "a COCO polygon of two points",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1, segmentation=[[1, 1, 4, 4]])])}),
    Example(False, "a COCO polygon of four points",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1, segmentation=[[1, 1, 5, 1, 5, 5, 1, 5]])])}),
)


@rule(BAD_BOX, "annotation", EXAMPLES, reads="boxes")
def bad_boxes(record: AnnotationRecord, spec):
    """Boxes given by their corners; also the guard's detection targets (torchvision's
    ``boxes``, COCO's ``bbox``), in the pixels of the sample's input when its size is known."""
    boxes = record.boxes
    if not len(boxes):
        return []
    # The common case of a small file, every box sound, in one comparison chain per box.
    if type(boxes) is list and None not in boxes:
        size = record.image_size
        if size is None:
            if all(x0 < x1 and y0 < y1 for x0, y0, x1, y1 in boxes):
                return []
        else:
            low = -record.border_tolerance
            width, height = size[0] - low, size[1] - low
            if all(low <= x0 < x1 <= width and low <= y0 < y1 <= height for x0, y0, x1, y1 in boxes):
                return []
    degenerate, outside = _judge_corners(record)
    if not len(degenerate) and not len(outside):
        return []
    if record.images is None:
        return [_one_image_finding(record, np.union1d(degenerate, outside))]
    return _many_images_findings(record, degenerate, outside)


def _judge_corners(record: AnnotationRecord) -> tuple[np.ndarray, np.ndarray]:
    """The indices of degenerate boxes and of sound boxes outside their image."""
    if isinstance(record.boxes, np.ndarray):
        boxes = record.boxes
        present = ~np.isnan(boxes).any(axis=1)
    else:
        present = np.array([box is not None for box in record.boxes], bool)
        boxes = np.array([box if box is not None else (np.nan,) * 4 for box in record.boxes], float).reshape(-1, 4)
    width, height = image_sizes(record)
    tolerance = record.border_tolerance
    x0, y0, x1, y1 = boxes.T
    with np.errstate(invalid="ignore"):
        # Written as "not (a < b)" so that NaN coordinates of a present box count as degenerate.
        degenerate = present & ~((x0 < x1) & (y0 < y1))
        outside = present & ~degenerate & ((x0 < -tolerance) | (y0 < -tolerance)
                                           | (x1 > width + tolerance) | (y1 > height + tolerance))
    return np.flatnonzero(degenerate), np.flatnonzero(outside)


def _one_image_finding(record: AnnotationRecord, indices: np.ndarray):
    """One finding for the bad boxes of a file of one image, naming its size."""
    size = record.image_size
    bad = []
    for index in indices.tolist():
        box = tuple(float(v) for v in record.boxes[index])
        kind, what = _corner_problem(box, size)
        bad.append((record.place(index), record.labels[index], box, kind, what))
    image = f"the {size[0]:g}x{size[1]:g} image" if size is not None else "the image"
    listing = shorten(bad, SHOWN, lambda item: f"{record.unit} {item[0]} {item[1]!r}: {item[4]}", sep="; ")
    kinds = {kind for _, _, _, kind, _ in bad}
    n = len(bad)
    if kinds == {"degenerate"}:
        what = f"{verb(n, 'is')} degenerate (width or height <= 0) in {image}"
    elif kinds == {"outside"}:
        what = f"{verb(n, 'lies')} outside {image}"
    else:
        what = f"{verb(n, 'is')} degenerate (width or height <= 0) or outside {image}"
    return BAD_BOX.finding(
        record.display,
        f"{plural(n, 'box')} {what}: {listing}",
        hint=RUN_TIME_HINT if record.format == "tensor" else
        "Swap flipped corners, clip boxes to the image size, drop zero-area boxes; "
        "check the image size the annotation states when every box of a file lies outside.",
        width=size[0] if size else None, height=size[1] if size else None,
        boxes=[{record.unit: p, "class": label, "box": list(box), "problem": kind}
               for p, label, box, kind, _ in bad[:BOXES_LISTED]],
        count=len(bad),
    )


def _many_images_findings(record: AnnotationRecord, degenerate: np.ndarray, outside: np.ndarray) -> list:
    """One finding per kind for a file of many images, each box with its image."""
    images = record.images
    assert images is not None  # not a user mistake: called only for a record with an image table
    rows = np.asarray(record.image_of)
    findings = []
    if len(degenerate):
        items = [f"{record.where(int(r))} {box_text(record, int(r))} on image {images.describe(int(rows[r]))}"
                 for r in degenerate[:PLACES_KEPT]]
        n = len(degenerate)
        findings.append(BAD_BOX.finding(
            record.display,
            f"{n} box{'es have' if n > 1 else ' has'} a width or height <= 0: {sample(items, n)}",
            hint="Fix or drop zero-size boxes: IoU and box-regression losses divide by the box size "
            "(log of 0 gives -inf).",
            problem="degenerate", annotations=items, count=int(n),
        ))
    if len(outside):
        width, height = image_sizes(record)
        boxes = record.boxes
        items = [f"{record.where(int(r))} {box_text(record, int(r))} ends at "
                 f"({number(boxes[r][2])}, {number(boxes[r][3])}) on image {images.describe(int(rows[r]))} "
                 f"of {number(width[r])}x{number(height[r])}" for r in outside[:PLACES_KEPT]]
        n = len(outside)
        written = ("; bbox is [x, y, width, height] in pixels (not corners, not normalised)"
                   if record.box_style == "xywh" else "")
        findings.append(BAD_BOX.finding(
            record.display,
            f"{n} box{'es lie' if n > 1 else ' lies'} outside {'their images' if n > 1 else 'its image'}: "
            f"{sample(items, n)}",
            hint=f"Clip the boxes to the image, or fix the image width/height in 'images'{written}.",
            problem="outside", annotations=items, count=int(n), tolerance=record.border_tolerance,
        ))
    return findings


def _corner_problem(box, size) -> tuple[str, str]:
    """(kind, what) of a box given by its corners that is not sound."""
    xmin, ymin, xmax, ymax = box
    # Written as "not (a < b)" so that NaN coordinates count as degenerate too.
    if not (xmin < xmax and ymin < ymax):
        return "degenerate", (f"xmin {xmin:g} >= xmax {xmax:g}" if not (xmin < xmax)
                              else f"ymin {ymin:g} >= ymax {ymax:g}")
    width, height = size
    return "outside", ", ".join(text for text, out in (
        (f"xmin {xmin:g} < 0", not xmin >= 0), (f"ymin {ymin:g} < 0", not ymin >= 0),
        (f"xmax {xmax:g} > width {width:g}", not xmax <= width),
        (f"ymax {ymax:g} > height {height:g}", not ymax <= height)) if out)


@rule(BAD_BOX, "annotation", EXTENT_EXAMPLES, reads="extents")
def zero_size_boxes(record: AnnotationRecord, spec):
    """Boxes given by their size (YOLO rows; the guard's YOLO or Ultralytics targets)."""
    assert record.extents is not None  # not a user mistake: the runner passes only records with extents
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


@rule(BAD_BOX, "annotation", POLYGON_EXAMPLES, reads="small_polygons", files_only=True)
def polygons_too_small(record: AnnotationRecord, spec):
    """LG301 for segmentation polygons of fewer than 3 points (no area; pycocotools takes a
    4-value polygon for a box)."""
    small = record.small_polygons
    if small is None or not small.count:
        return ()
    return [BAD_BOX.finding(
        record.display,
        f"{small.count} segmentation polygon{'s have' if small.count > 1 else ' has'} fewer than 3 points: "
        f"{sample(small.details, small.count)}",
        hint="Drop these polygons or redraw them: pycocotools takes a 4-value polygon for a box, and a "
        "polygon of fewer than 3 points has no area.",
        problem="polygon", annotations=small.details, count=small.count,
    )]
