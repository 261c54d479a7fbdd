"""How annotation rules name a record's objects, boxes and images in messages.

One wording for every format: a place as the format writes it (``object 3``, ``line 4``,
``annotations[2] (id 7)``), a box as the file writes it (corners, or COCO's
``bbox [x, y, width, height]``), a class as a name or as a category of the file's own table.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.records import AnnotationRecord
from labelguard.core.text import SHOWN, shorten


def number(value: float) -> str:
    """A coordinate: an integer as such, else four significant digits."""
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.4g}"


def sample(items: list[str], count: int) -> str:
    """The first few of ``count`` items (``items`` may hold only the first of them)."""
    return shorten(items, SHOWN, total=count, sep="; ")


def box_of(record: AnnotationRecord, index: int) -> tuple[float, ...] | None:
    """Object ``index``'s box as the file writes it: corners, or [x, y, width, height]."""
    box = record.boxes[index]
    if box is None:
        return None
    xmin, ymin, xmax, ymax = (float(v) for v in box)
    if record.box_style == "xywh":
        return (xmin, ymin, xmax - xmin, ymax - ymin)
    return (xmin, ymin, xmax, ymax)


def box_text(record: AnnotationRecord, index: int) -> str:
    """``bbox [4, 4, 10, 8]`` for COCO's [x, y, width, height], ``box 1, 1, 9, 9`` for corners."""
    box = box_of(record, index)
    if box is None:
        return "no box"
    if record.box_style == "xywh":
        return "bbox [" + ", ".join(number(v) for v in box) + "]"
    return "box " + ", ".join(f"{v:g}" for v in box)


def label_text(record: AnnotationRecord, index: int) -> str:
    """Object ``index``'s class: a quoted name, names joined for a multi-label row, or a
    category of the file's own table ("category 3 'dog'")."""
    label = record.labels[index]
    if record.classes is not None:
        value = int(label)
        name = record.classes.names.get(value)
        return f"category {value}" + (f" {name!r}" if name is not None else "")
    if isinstance(label, tuple):
        return "+".join(label)
    return repr(label)


def image_sizes(record: AnnotationRecord) -> tuple[np.ndarray, np.ndarray]:
    """Per object, the width and height of its image (NaN when unknown): from the image table
    for a file of many images, else the file's one image size."""
    n = len(record.labels)
    if record.images is not None and record.image_of is not None and record.images.widths is not None:
        rows = np.asarray(record.image_of)
        known = rows >= 0
        at = rows.clip(min=0)
        widths, heights = record.images.widths, record.images.heights
        assert heights is not None  # not a user mistake: an image table gives heights with its widths
        if not len(widths):
            return np.full(n, np.nan), np.full(n, np.nan)
        return np.where(known, widths[at], np.nan), np.where(known, heights[at], np.nan)
    if record.image_size is not None:
        width, height = record.image_size
        return np.full(n, float(width)), np.full(n, float(height))
    return np.full(n, np.nan), np.full(n, np.nan)
