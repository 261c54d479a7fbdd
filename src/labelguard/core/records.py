"""Records: what readers make of a file, and what the rules read.

A :class:`MaskRecord` is a mask as stored (the array, its container, mode, palette and the
shapes stored beside it). A :class:`MaskSample` is that record as the rules see it: the label
plane with colours decoded, its value histogram, the colour information, the values a lossy
fringe explains, and the geometry of the paired image. Both are plain data: the core builds
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
