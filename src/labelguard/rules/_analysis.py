"""What several mask rules read from one label plane: which values a lossy fringe explains,
and whether the plane is a photograph rather than a label map.

Both are computed once per file while its sample is built, because the rules (LG201, LG202,
LG203) and the summary (class statistics leave fringe values and photographs out) need them.
"""

from __future__ import annotations

import numpy as np

# Values holding less than this share of a mask's pixels are "rare" for the artifact check.
RARE_SHARE = 0.01
# Rare pixels that lie on class edges this often are compression or interpolation fringes.
FRINGE_EDGE_SHARE = 0.9

# A photograph has many grey levels or colours ...
IMAGE_MIN_VALUES = 32
# ... no handful of which covers most of it (a JPEG-smeared mask keeps its few main values) ...
IMAGE_TOP_VALUES = 8
IMAGE_TOP_SHARE = 0.5
# ... and neighbouring pixels that often differ, where a label map is flat regions: real
# masks (instance masks with hundreds of ids included) stay far below this.
IMAGE_NEIGHBOUR_CHANGE = 0.25
# Where most neighbours differ, a dark background's few grey levels (microscopy, CT) may
# cover most pixels: no JPEG-smeared mask comes near this.
IMAGE_NEIGHBOUR_CHANGE_ALONE = 0.5
# Planes sampled from a volume for the neighbour test.
IMAGE_SLICES = 16


def jpeg_stray(values: np.ndarray, counts: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Values of a JPEG-stored mask that hold under :data:`RARE_SHARE` of its pixels each:
    what compression smeared along the edges, and the pixels they hold."""
    if not len(values):
        return (), 0
    rare = counts < RARE_SHARE * int(counts.sum())
    if not rare.any():
        return (), 0
    return tuple(values[rare].tolist()), int(counts[rare].sum())


def lossless_fringe(array: np.ndarray, values: np.ndarray, counts: np.ndarray):
    """(stray values, their pixels, main values) when the rare values of a lossless mask lie in
    thin lines along class edges between its main values (JPEG or interpolation fringes);
    None otherwise."""
    if array.ndim < 2 or len(values) < 3:
        return None
    # This gate runs on every mask: plain Python on a handful of values, no numpy calls.
    pairs = list(zip(values.tolist(), counts.tolist()))
    threshold = RARE_SHARE * sum(c for _, c in pairs)
    rare_values = [v for v, c in pairs if c < threshold]
    common_values = [v for v, c in pairs if c >= threshold]
    if len(rare_values) < 2 or len(common_values) < 2:
        return None
    low, high = min(common_values), max(common_values)
    if sum(low < v < high for v in rare_values) < 2:
        return None
    rare = np.array(rare_values, dtype=values.dtype)
    is_rare = np.isin(array, rare)
    rare_pixels = int(is_rare.sum())
    edge = np.zeros(array.shape, dtype=bool)
    for axis in (-1, -2):
        differs = np.diff(array, axis=axis) != 0
        edge[tuple(_shift(array.ndim, axis, -1))] |= differs
        edge[tuple(_shift(array.ndim, axis, 1))] |= differs
    on_edge = int((is_rare & edge).sum())
    if on_edge < FRINGE_EDGE_SHARE * rare_pixels or not _thin(is_rare):
        return None
    return tuple(rare_values), rare_pixels, tuple(common_values)


def _thin(is_rare: np.ndarray) -> bool:
    """True when rare pixels form thin lines (few have a rare pixel on every side)."""
    core = is_rare.copy()
    for axis in (-1, -2):
        core[tuple(_shift(is_rare.ndim, axis, 1))] &= is_rare[tuple(_shift(is_rare.ndim, axis, -1))]
        core[tuple(_shift(is_rare.ndim, axis, -1))] &= is_rare[tuple(_shift(is_rare.ndim, axis, 1))]
    return int(core.sum()) <= 0.5 * int(is_rare.sum())


def _shift(ndim: int, axis: int, direction: int) -> list:
    index = [slice(None)] * ndim
    index[axis] = slice(1, None) if direction > 0 else slice(0, -1)
    return index


def image_evidence(plane: np.ndarray, counts: np.ndarray) -> dict | None:
    """The numbers that show ``plane`` (grey levels, or packed colours) is a photograph: its
    distinct values, the share of its most frequent few and the share of neighbouring pixels
    that differ; None when it may be a label map."""
    distinct = len(counts)
    if distinct < IMAGE_MIN_VALUES or plane.ndim < 2:
        return None
    total = int(counts.sum())
    top = int(np.sort(counts)[-IMAGE_TOP_VALUES:].sum())
    if plane.ndim > 2:
        plane = plane.reshape(-1, *plane.shape[-2:])[:IMAGE_SLICES]
    changes = []
    for axis in (-1, -2):
        if plane.shape[axis] > 1:
            changes.append(float(np.count_nonzero(np.diff(plane, axis=axis))) / max(1, plane.size))
    if not changes or min(changes) < IMAGE_NEIGHBOUR_CHANGE:
        return None
    if top >= IMAGE_TOP_SHARE * total and min(changes) < IMAGE_NEIGHBOUR_CHANGE_ALONE:
        return None
    return {"distinct": distinct, "top_share": round(top / total, 3),
            "neighbour_change": round(min(changes), 3), "low": plane.min().item(), "high": plane.max().item()}
