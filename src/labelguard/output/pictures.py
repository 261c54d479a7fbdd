"""Pictures of flagged files for the HTML report: the mask with the offending pixels marked.

The report keeps the task of each file a finding names (``Report.flagged_tasks``); a picture
reads that file again through the audit's own reader and decoding
(:func:`labelguard.rules._masks.read_sample`: the same key, colour map and encoding, under the
audit's read limits) and draws it with Pillow. The HTML report asks for at most N pictures
per code, so an audit of a million files reads a few dozen again, never all of them.

What is marked is what the finding names:

* LG201: the pixels holding the values outside the spec (or the colours the map lacks);
* LG202: the stray values along the class edges (the JPEG or interpolation fringe);
* LG203: the colour mask as stored, with its commonest colours as swatches;
* LG206: the image and the mask side by side, at one scale, so the size difference shows;
* LG301 (a file of one image): the image with the bad boxes drawn, on a canvas large enough
  to show the part of a box that lies outside the image.

Labels are coloured with the VOC palette and dimmed; marked pixels are magenta. A plane
larger than the picture is shrunk so that every marked pixel stays visible (a block holding
one is marked); a smaller one is enlarged without smoothing. A volume shows the slice holding
the most marked pixels.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from labelguard.readers.base import ReadError
from labelguard.readers.colormap import voc_palette_colors

# The longest side of a picture, in pixels.
SIDE = 224
MARK = (255, 0, 255)
BOX_COLOUR = (255, 32, 32)
# The codes a picture is drawn for.
PICTURED = ("LG201", "LG202", "LG203", "LG206", "LG301")
_PALETTE = np.array(voc_palette_colors(256), dtype=np.uint8)
# Resampling filters. Pillow 9.0 has no Image.Resampling; later versions still set these names,
# in a loop that their type stubs do not show.
_NEAREST = Image.NEAREST  # type: ignore[attr-defined]
_BOX = Image.BOX  # type: ignore[attr-defined]


@dataclass
class Panel:
    """One picture: PNG bytes, what it shows, and colour swatches when the colours matter."""

    png: bytes
    caption: str
    swatches: list[tuple[str, str]] = field(default_factory=list)  # (css colour, label)

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class Picture:
    """The panels drawn for one finding, or why none could be drawn."""

    panels: list[Panel] = field(default_factory=list)
    problem: str | None = None


def can_picture(finding, task) -> bool:
    """True when a picture of ``finding`` can be drawn from its file's task."""
    if task is None or finding.code not in PICTURED:
        return False
    if finding.code == "LG301":
        return task.image is not None and isinstance(finding.data.get("boxes"), list) and bool(finding.data["boxes"])
    return _is_mask_task(task)


def _is_mask_task(task) -> bool:
    from labelguard.rules._masks import process_mask

    return task.processor is process_mask


def picture(finding, task) -> Picture:
    """The panels of one finding (see the module docstring); a file that cannot be read again
    (changed or removed since the audit) gives a Picture with its problem, never an error."""
    try:
        if finding.code == "LG301":
            return Picture([_boxes_panel(finding, task)])
        return Picture(_mask_panels(finding, task))
    except (ReadError, OSError) as exc:
        return Picture(problem=f"could not read {task.display} again: {exc}")


def _mask_panels(finding, task) -> list[Panel]:
    from labelguard.rules._masks import read_sample

    sample = read_sample(task.path, task.display, task.option("key"), task.option("color_map"),
                         task.option("image_key"), task.option("encoding"))
    data = finding.data
    stored = sample.record.array
    if sample.color_container and (sample.labels is None or sample.labels.ndim < 2):
        rgb = _as_bytes(stored[..., :3] if stored.shape[-1] >= 3 else np.repeat(stored[..., :1], 3, axis=-1))
        marked = None
        if finding.code == "LG201":
            marked = _colour_marks(rgb, data.get("colors"))
            if marked is None and sample.color_map is not None:
                from labelguard.readers.colormap import decode

                marked = _value_marks(finding, decode(rgb, sample.color_map)[0])
        plane_rgb, caption = rgb, "the colour mask as stored"
    else:
        # The label plane (a grey mask stored in colour channels too); a float plane holding
        # fractions keeps only its whole pixels as labels, so it is shown as stored.
        plane = sample.labels if sample.labels is not None and sample.labels.ndim >= 2 else stored
        marks = _value_marks(finding, plane)
        plane, marks, where = _one_slice(plane, marks)
        plane_rgb = _colourise(plane)
        marked, caption = marks, "the mask" + where
    if finding.code == "LG206":
        return _side_by_side(sample, task, plane_rgb)
    count = int(marked.sum()) if marked is not None else 0
    if marked is not None and count:
        caption += f": {count} marked pixel{'s' if count != 1 else ''} in magenta"
    elif data.get("looks_like_image"):
        caption += ": a photograph where a label should be"
    swatches = _swatches(data.get("colors")) if finding.code in ("LG201", "LG203") else []
    return [Panel(_png(_scaled(plane_rgb, marked, _scale(plane_rgb.shape[:2]))), caption, swatches)]


def _value_marks(finding, plane: np.ndarray) -> np.ndarray | None:
    """The pixels holding the values the finding names (LG201 values, LG202 stray values)."""
    data = finding.data
    values = data.get("values") if finding.code == "LG201" else data.get("stray_values")
    if not values or data.get("looks_like_image") or plane.dtype.kind not in "iub":
        return None
    return np.isin(plane, np.asarray(values, dtype=np.int64))


def _colour_marks(rgb: np.ndarray, colours: Any) -> np.ndarray | None:
    if not isinstance(colours, dict) or not colours:
        return None
    packed = (rgb[..., 0].astype(np.int32) << 16) | (rgb[..., 1].astype(np.int32) << 8) | rgb[..., 2]
    wanted = [(int(r) << 16) | (int(g) << 8) | int(b) for r, g, b in (c.split(",") for c in colours)]
    return np.isin(packed, np.asarray(wanted, dtype=np.int32))


def _one_slice(plane: np.ndarray, marks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, str]:
    """A 2D plane of a volume: along its shortest axis, the slice with the most marks (the
    middle one when nothing is marked)."""
    if plane.ndim == 2:
        return plane, marks, ""
    while plane.ndim > 3:  # a leading axis of one (a batch, a channel)
        plane = plane[0]
        marks = marks[0] if marks is not None else None
    axis = int(np.argmin(plane.shape))
    if marks is not None and marks.any():
        index = int(np.argmax(marks.sum(axis=tuple(a for a in range(3) if a != axis))))
    else:
        index = plane.shape[axis] // 2
    taken = np.take(plane, index, axis=axis)
    return taken, (np.take(marks, index, axis=axis) if marks is not None else None), \
        f" (slice {index} of {plane.shape[axis]} along axis {axis})"


def _colourise(plane: np.ndarray) -> np.ndarray:
    """Label values as VOC palette colours (values past 255 wrap), other dtypes as grey."""
    if plane.dtype.kind in "iub":
        return _PALETTE[np.mod(plane.astype(np.int64), 256)]
    grey = _as_bytes(plane)
    return np.repeat(grey[..., None], 3, axis=-1)


def _as_bytes(array: np.ndarray) -> np.ndarray:
    """An array as uint8 for display: uint8 as is, others stretched between their extremes."""
    if array.dtype == np.uint8:
        return array
    values = np.nan_to_num(array.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    low, high = float(values.min(initial=0.0)), float(values.max(initial=0.0))
    if high <= low:
        return np.zeros(array.shape, dtype=np.uint8)
    return ((values - low) * (255.0 / (high - low))).astype(np.uint8)


def _scale(shape: tuple[int, ...]) -> float:
    return SIDE / max(shape[0], shape[1], 1)


def _scaled(rgb: np.ndarray, marks: np.ndarray | None, scale: float) -> Image.Image:
    """``rgb`` resized by ``scale`` without smoothing, dimmed where ``marks`` are given, the
    marks in magenta: a block of the source holding one mark is marked."""
    height, width = rgb.shape[:2]
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    image = Image.fromarray(np.ascontiguousarray(rgb)).resize(size, _NEAREST)
    if marks is None or not marks.any():
        return image
    shown = np.asarray(image).astype(np.uint16)
    dimmed = ((shown + 2 * 60) // 3).astype(np.uint8)  # toward grey, so the magenta stands out
    resample = _BOX if scale < 1 else _NEAREST
    marked = np.asarray(Image.fromarray(marks.astype(np.uint8) * 255).resize(size, resample)) > 0
    dimmed[marked] = MARK
    return Image.fromarray(dimmed)


def _side_by_side(sample, task, mask_rgb: np.ndarray) -> list[Panel]:
    """The image and the mask at one scale (LG206)."""
    from labelguard.readers.masks import read_mask

    record = sample.record
    if task.image is not None:
        image = read_mask(task.image).array
        name = task.image_display or task.image
    elif record.image_key is not None:
        image = read_mask(task.path, key=record.image_key).array
        name = f"{task.display} {record.image_key!r}"
    else:
        raise ReadError("the finding names no image to show beside the mask")
    if image.ndim == 3 and image.shape[-1] in (3, 4):
        image_rgb = _as_bytes(image[..., :3])
    else:
        grey, _, _ = _one_slice(image, None)
        image_rgb = np.repeat(_as_bytes(grey)[..., None], 3, axis=-1)
    scale = SIDE / max(*image_rgb.shape[:2], *mask_rgb.shape[:2], 1)
    return [Panel(_png(_scaled(image_rgb, None, scale)), f"image {name}: {image_rgb.shape[1]}x{image_rgb.shape[0]}"),
            Panel(_png(_scaled(mask_rgb, None, scale)),
                  f"mask {task.display}: {mask_rgb.shape[1]}x{mask_rgb.shape[0]}")]


def _boxes_panel(finding, task) -> Panel:
    """The image with the finding's boxes drawn (LG301 of a file of one image)."""
    from labelguard.readers.masks import read_mask

    image = read_mask(task.image).array
    rgb = _as_bytes(image[..., :3]) if image.ndim == 3 and image.shape[-1] >= 3 else \
        np.repeat(_as_bytes(image if image.ndim == 2 else image[..., 0])[..., None], 3, axis=-1)
    height, width = rgb.shape[:2]
    resized = ""
    declared = finding.data.get("width"), finding.data.get("height")
    if all(isinstance(v, (int, float)) and 1 <= v <= 1 << 16 for v in declared) and declared != (width, height):
        # Boxes are in the size the annotation states: the image is drawn at that size.
        resized = f", drawn at the annotation's size {declared[0]:g}x{declared[1]:g}"
        rgb = np.asarray(Image.fromarray(rgb).resize((round(declared[0]), round(declared[1])), _NEAREST))
        height, width = rgb.shape[:2]
    boxes = [b for b in finding.data["boxes"] if isinstance(b, dict) and isinstance(b.get("box"), list)]
    corners = np.array([b["box"] for b in boxes], dtype=np.float64).reshape(-1, 4)
    corners = corners[np.isfinite(corners).all(axis=1)]
    # A canvas holding the image and the boxes (a box far outside is cut at three image sizes).
    left = max(-2.0 * width, min(0.0, *corners[:, [0, 2]].ravel())) if len(corners) else 0.0
    top = max(-2.0 * height, min(0.0, *corners[:, [1, 3]].ravel())) if len(corners) else 0.0
    right = min(3.0 * width, max(float(width), *corners[:, [0, 2]].ravel())) if len(corners) else width
    bottom = min(3.0 * height, max(float(height), *corners[:, [1, 3]].ravel())) if len(corners) else height
    scale = SIDE / max(right - left, bottom - top, 1.0)
    canvas = Image.new("RGB", (max(1, round((right - left) * scale)), max(1, round((bottom - top) * scale))),
                       (40, 40, 40))
    canvas.paste(_scaled(rgb, None, scale), (round(-left * scale), round(-top * scale)))
    draw = ImageDraw.Draw(canvas)
    for box in boxes:
        x0, y0, x1, y1 = ((v - offset) * scale for v, offset in zip(box["box"], (left, top, left, top)))
        draw.rectangle((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)), outline=BOX_COLOUR, width=2)
    named = ", ".join(f"{k} {b[k]} {b.get('class')!r} ({b.get('problem')})"
                      for b in boxes[:4] for k in ("object", "row", "line", "annotation") if k in b)
    return Panel(_png(canvas), f"image {task.image_display or task.image} ({image.shape[1]}x{image.shape[0]}"
                 f"{resized}) with the boxes in red: {named}")


def _swatches(colours: Any) -> list[tuple[str, str]]:
    if not isinstance(colours, dict):
        return []
    shown = []
    for colour, pixels in list(colours.items())[:8]:
        r, g, b = (int(part) for part in str(colour).split(","))
        shown.append((f"rgb({r},{g},{b})", f"({colour}) {pixels} px"))
    return shown


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
