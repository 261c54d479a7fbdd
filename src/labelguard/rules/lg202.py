"""LG202 mask-stored-lossily: a JPEG-stored mask, or a lossless mask carrying the thin stray
lines that JPEG or interpolation leaves along class edges."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.text import shorten
from labelguard.core.rules import Example, rule
from labelguard.rules._analysis import RARE_SHARE

LOSSY = define(
    "LG202", "mask-stored-lossily", "error",
    summary="a mask is stored lossily (JPEG) or shows compression artifacts along edges",
    why="""
JPEG smears the values at every class edge: a mask of {0, 1} comes back holding 2, 3, 254...
in thin fringes, so a few hundred pixels per file are out of range or of the wrong class.
Resizing a mask with bilinear interpolation leaves the same fringes.""",
    bad="masks/0001.jpg, or a JPEG renamed masks/0001.png; values {0, 1, 2, 3, 252, 253, 254, 255}",
    good="masks/0001.png written losslessly from the label array; resized with nearest neighbour",
    fix="Re-export the masks losslessly (PNG, TIFF, NPY) from the source labels; resize masks "
    "with nearest-neighbour interpolation only.",
)

# Stray values kept in a finding's data.
STRAY_KEPT = 50
ARRAY_CONTAINERS = {"zip": "NPZ", "npy": "NPY", "hdf5": "HDF5", "nifti": "NIfTI"}


def _blobs() -> np.ndarray:
    mask = np.zeros((64, 64), np.uint8)
    mask[8:40, 8:40] = 100
    mask[30:60, 30:60] = 200
    return mask


def _smeared() -> np.ndarray:
    """Two classes with a one-pixel line of in-between values along their edges."""
    mask = np.zeros((64, 64), np.uint8)
    mask[:, 32:] = 4
    mask[:32, 31] = 1
    mask[32:, 31] = 3
    return mask


EXAMPLES = (
    Example(True, "a mask saved as JPEG", lambda: {"masks/a.jpg": _blobs()}),
    Example(False, "the same classes saved as PNG", lambda: {"masks/a.png": _blobs()}),
)

FRINGE_EXAMPLES = (
    Example(True, "stray in-between values in thin lines along the class edges of a PNG",
            lambda: {"masks/a.png": _smeared()}),
    Example(True, "the same stray lines in the label array of an NPZ",
            lambda: {"data/a.npz": {"label": _smeared()}}),
    Example(False, "two classes meeting along a clean edge", lambda: {"masks/a.png": _blobs()}),
)


@rule(LOSSY, "mask", EXAMPLES, files_only=True)
def jpeg_stored(sample: MaskSample, spec):
    record = sample.record
    if not record.lossy:
        return ()
    if record.renamed:
        message = (f"this mask is a JPEG file named .{record.declared}: JPEG compression smears the "
                   "label values along every edge")
    else:
        message = "this mask is stored as JPEG: lossy compression smears the label values along every edge"
    stray: dict = {}
    if sample.fringe_values:
        values = list(sample.fringe_values)
        stray = {"stray_values": values[:STRAY_KEPT], "stray_pixels": sample.fringe_pixels}
        message += (f"; {sample.fringe_pixels} pixels hold {len(values)} stray values "
                    f"({shorten(values, 8)}), each under {RARE_SHARE:.0%} of the mask")
    return (LOSSY.finding(
        sample.display, message,
        hint="Re-export the mask losslessly (PNG, TIFF, NPY) from the source labels; "
        "a renamed JPEG stays a JPEG.",
        container="jpeg", renamed=record.renamed, **stray,
    ),)


@rule(LOSSY, "mask", FRINGE_EXAMPLES, files_only=True)
def edge_fringe(sample: MaskSample, spec):
    """Lossless containers (PNG, NPY, NPZ, HDF5, TIFF...) holding an array that went through
    JPEG or interpolation once."""
    if sample.record.lossy or not sample.fringe_values:
        return ()
    rare, common = list(sample.fringe_values), list(sample.main_values)
    record = sample.record
    where = "" if record.container in ("png", "tiff", "bmp", "gif", "riff") else \
        f" (the {ARRAY_CONTAINERS.get(record.container, record.container)} array" \
        f"{' ' + repr(record.key) if record.key else ''})"
    return (LOSSY.finding(
        sample.display,
        f"{sample.fringe_pixels} pixels along class edges{where} hold {len(rare)} stray values "
        f"({shorten(rare, 8)}) between the main "
        f"values {common[:6]}: the mask went through JPEG or was resized with interpolation",
        hint="Re-export the mask losslessly from the source labels, and resize masks with nearest-neighbour "
        "interpolation only.",
        stray_values=rare[:STRAY_KEPT], stray_pixels=sample.fringe_pixels, main_values=common,
    ),)
