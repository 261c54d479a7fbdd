"""Records: what readers make of a file, and what the rules read.

A :class:`MaskRecord` is a mask as stored (the array, its container, mode, palette and the
shapes stored beside it). A :class:`MaskSample` is that record as the rules see it: the label
plane with colours decoded, its value histogram, the colour information, the values a lossy
fringe explains, and the geometry of the paired image. An :class:`AnnotationRecord` is one
annotation file's objects (class name or id, box, place in the file) with the image it names
(:class:`ImageReference`); :class:`ObjectRecord` is one of its objects. All are plain data: the core builds
no record and reads no file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class MaskRecord:
    """A mask as stored.

    Attributes:
        array: the label array as stored: (H, W), (D, H, W) / (H, W, D), or (H, W, C) for colour.
        container: the format found in the bytes (png, jpeg, tiff, npy, zip (npz), hdf5, nifti...).
        declared: the format the file name claims.
        mode: the Pillow mode or the array dtype.
        palette: the RGB palette of a palette (P) image, flattened, when there is one.
        image_shape: the shape of the image stored in the same file (npz/HDF5 ``image``).
        key: the array key used in an NPZ/HDF5 file.
        image_key: the key of the image stored beside it, when there is one.
    """

    array: np.ndarray
    container: str
    declared: str | None
    mode: str
    palette: tuple[int, ...] | None = None
    image_shape: tuple[int, ...] | None = None
    key: str | None = None
    image_key: str | None = None

    @property
    def lossy(self) -> bool:
        return self.container == "jpeg"

    @property
    def renamed(self) -> bool:
        """True when the bytes are of another format than the name says."""
        return self.declared is not None and self.declared != self.container and not (
            self.declared == "gzip" and self.container == "nifti"
        )


@dataclass
class MaskSample:
    """One mask as the per-file rules see it.

    Attributes:
        display: the file as shown in findings.
        record: the mask as stored.
        color_container: True when the stored array is an image's colour channels (H, W, C).
        labels: the label values to check (colours decoded), or None when nothing can be checked.
        unusable: why the labels cannot be checked (a single number, an empty array...).
        values / counts: the histogram of the whole-number labels.
        non_integer / non_finite / fraction_examples: float labels that are not whole numbers.
        beyond_int64 / beyond_examples: whole-number float labels too large for any integer
            label type (1e300), kept out of the histogram instead of wrapping around.
        channels: the colour channels of a colour-stored mask; alpha: the first of LA/PA is used;
            grey: the channels were identical and the first one is used.
        colors / color_count: a colour mask read without a colour map: the most frequent
            colours ("r,g,b" -> pixels) and how many there are.
        color_map: the map colours were decoded through; unmapped: the colours it lacks.
        looks_like_image: the plane is a photograph, not a label map (many values, and most
            neighbouring pixels differ); image_evidence: the numbers that say so.
        fringe_values / fringe_pixels / main_values: values that a lossy fringe explains (JPEG
            storage, or thin stray lines along class edges), kept out of class statistics.
        paired_display / paired_shape: the paired image file as shown, and its geometry once read.
    """

    display: str
    record: MaskRecord
    color_container: bool = False
    labels: np.ndarray | None = None
    unusable: str | None = None
    values: np.ndarray | None = None
    counts: np.ndarray | None = None
    non_integer: int = 0
    non_finite: int = 0
    fraction_examples: list = field(default_factory=list)
    beyond_int64: int = 0
    beyond_examples: list = field(default_factory=list)
    channels: int = 0
    alpha: bool = False
    grey: bool = False
    colors: dict[str, int] | None = None
    color_count: int = 0
    color_map: Any = None
    unmapped: dict[tuple[int, int, int], int] | None = None
    looks_like_image: bool = False
    image_evidence: dict[str, Any] = field(default_factory=dict)
    fringe_values: tuple[int, ...] = ()
    fringe_pixels: int = 0
    main_values: tuple[int, ...] = ()
    paired_display: str | None = None
    paired_shape: tuple[int, ...] | None = None

    @property
    def stored_shape(self) -> tuple[int, ...]:
        """The mask's geometry: colour channels of an image do not count."""
        shape = tuple(self.record.array.shape)
        return shape[:2] if self.color_container else shape


Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class ImageReference:
    """What an annotation says about its image, resolved by the layout that read it.

    Attributes:
        field: how the format names the reference (``<filename>``, ``file_name``, a CSV column).
        written: the reference as written, None when the annotation names no image.
        folder: the folder it was looked for in, as shown.
        found: the named file exists there.
        escapes: the reference leads outside that folder (``../``, an absolute path).
        paired: the image paired with the annotation by name, as shown, when there is one.
        expected: what an image of the annotation's own name would be called (``a.*``).
    """

    field: str
    written: str | None
    folder: str
    found: bool = False
    escapes: bool = False
    paired: str | None = None
    expected: str | None = None


@dataclass(frozen=True)
class ObjectRecord:
    """One annotated object: its class, its box and where the file holds it."""

    label: str | int
    box: Box | None
    place: int
    unit: str


@dataclass
class AnnotationRecord:
    """One annotation file (a VOC XML, a YOLO label file, a COCO image's annotations...) as
    the annotation rules see it. Objects are held column by column (object ``i`` is
    ``labels[i]``, ``boxes[i]``, ``places[i]``): a file is read once and every rule walks the
    columns it needs.

    Attributes:
        display: the file as shown in findings.
        format: the format read (``voc``, ``yolo``, ``coco``, ``csv``, ``folder``).
        unit: what a place counts (``object``, ``row``, ``annotation``).
        labels: each object's class: a name (str) or an integer id.
        places: each object's 1-based place in the file (object index, line or row number);
            None when it is the position + 1.
        boxes: each object's box as (xmin, ymin, xmax, ymax) in the units of ``image_size``
            (None for an object without one); None when the format has no boxes.
        image_size: (width, height) the boxes must lie inside, None when unknown (or when
            another rule checks the range, as LG302 checks YOLO's normalised values).
        keys: what makes two objects duplicates (class + box, class + polygon...), one per
            object; None to use (label, box).
        normalised: per object, the values that must lie in [0, 1] (YOLO rows), or None.
        extents: per object, the size (width, height) a degenerate box test reads when the
            format stores sizes rather than corners (YOLO), or None.
        problems: (place, what is wrong) of objects that could not be read; place 0 for the
            file as a whole.
        problem_hint: the hint for those.
        image: the image the annotation names, resolved; None when the format names none.
    """

    display: str
    format: str
    unit: str = "object"
    labels: list = field(default_factory=list)
    places: list[int] | None = None
    boxes: list[Box | None] | None = None
    image_size: tuple[float, float] | None = None
    keys: list | None = None
    normalised: list[tuple[float, ...]] | None = None
    extents: list[tuple[float, float] | None] | None = None
    problems: list[tuple[int, str]] = field(default_factory=list)
    problem_hint: str | None = None
    image: ImageReference | None = None

    def place(self, index: int) -> int:
        """The 1-based place of object ``index`` (0-based)."""
        return self.places[index] if self.places is not None else index + 1

    def objects(self) -> list[ObjectRecord]:
        """The objects one by one."""
        boxes = self.boxes or [None] * len(self.labels)
        return [ObjectRecord(label, box, self.place(i), self.unit)
                for i, (label, box) in enumerate(zip(self.labels, boxes))]
