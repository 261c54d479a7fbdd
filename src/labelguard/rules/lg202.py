"""LG202 mask-stored-lossily: a JPEG-stored mask, or a lossless mask carrying the thin stray
lines that JPEG or interpolation leaves along class edges, or the ringing of a JPEG save it
went through once (a mask re-encoded as PNG or NPZ keeps the damage)."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun, plural, shorten, verb
from labelguard.core.rules import Example, rule
from labelguard.core.values import histogram
from labelguard.rules._analysis import RARE_SHARE

LOSSY = define(
    "LG202", "mask-stored-lossily", "error",
    summary="a mask is stored lossily (JPEG) or shows compression artifacts along edges",
    why="""
JPEG smears the values at every class edge: a mask of {0, 1} comes back holding 2, 3, 254...
in thin fringes, so a few hundred pixels per file are out of range or of the wrong class.
Re-encoding such a mask as PNG or NPZ keeps the damage. Resizing a mask with bilinear
interpolation leaves the same fringes.""",
    bad="masks/0001.jpg, or a JPEG renamed masks/0001.png; values {0, 1, 2, 3, 252, 253, 254, 255}; "
    "a PNG of classes {0, 1, 2} holding a few 3s and 4s beside the 2s (saved as JPEG once)",
    good="masks/0001.png written losslessly from the label array; resized with nearest neighbour",
    fix="Re-export the masks losslessly (PNG, TIFF, NPY) from the source labels; resize masks "
    "with nearest-neighbour interpolation only.",
)

# Stray values kept in a finding's data.
STRAY_KEPT = 50
ARRAY_CONTAINERS = {"zip": "NPZ", "npy": "NPY", "hdf5": "HDF5", "nifti": "NIfTI"}
IMAGE_CONTAINERS = ("png", "tiff", "bmp", "gif", "riff")

# JPEG's ringing overshoots the class values: past the highest (or below the lowest) class
# value of a mask, each stray value lies within this many units of the one before it. (Bilinear
# interpolation never leaves the range of the values it interpolates; a bicubic resize does, see
# JPEG_GRID_PEAK.)
RINGING_STEP = 4
# ... and the run of them ends within this many units: a longer run of rare values is the ids
# of small objects or instances.
RINGING_SPAN = 16
# Fewer stray pixels than this are no evidence either way.
RINGING_MIN_PIXELS = 16
# A rare value most of whose pixels have four neighbours of their own value is a small class
# (an object, a cell), not a fringe.
SOLID_SHARE = 0.5
# JPEG's strays are specks: few of them have four neighbours of their own value ...
RINGING_MAX_INTERIOR = 0.35
# ... most touch the class they overshoot (a thin real class beside a class whose number is
# close, a pole beside a building, touches it far less) ...
RINGING_MIN_BESIDE = 0.45
# ... and they lie in the 8x8 blocks JPEG codes, where two classes meet: nearly all in a block
# that holds, or touches one that holds, pixels of two classes touching. (The boundary class of
# a cell target lies between its classes, which then never touch.)
JPEG_BLOCK = 8
RINGING_MIN_NEAR_EDGE = 0.9
# A bicubic or Lanczos resize overshoots too, but it knows no grid: JPEG codes each 8x8 block
# on its own, so its strays start and stop at the block borders. Where a stray meets a pixel
# that is none is this many times likelier between two blocks than at any other place of a
# block, and not by chance (this many standard deviations above), the strays are JPEG's
# (resizes of masks by 1/8 to 8 stay below 1.4 times).
JPEG_GRID_PEAK = 1.5
JPEG_GRID_SIGNIFICANCE = 4
# Values looked for one comparison each; more go through np.isin.
HOLDING_COMPARED = 8
# Between two class values this far apart, JPEG's strays crowd within an eighth of the gap of
# either value, where interpolation spreads them over the whole gap.
WIDE_GAP = 16
CROWDED_SHARE = 0.85


@dataclass(frozen=True)
class Ringing:
    """The stray values of a lossless mask that show a JPEG save it went through.

    Attributes:
        values: the stray values; pixels: how many pixels hold them.
        classes: the class values they surround; share: the strays' share of the mask's pixels.
        jpeg: the strays follow JPEG's 8x8 grid (False: a bicubic or Lanczos resize may have
            left them as well).
    """

    values: tuple[int, ...]
    pixels: int
    classes: tuple[int, ...]
    share: float
    jpeg: bool = True


def jpeg_overshoot(array: np.ndarray, values: np.ndarray, counts: np.ndarray,
                   spec: LabelSpec | None = None) -> Ringing | None:
    """The values just past the class values of a lossless integer label plane (or stack of
    planes), when they lie as ringing leaves them (the constants above), JPEG's or a bicubic
    resize's (``Ringing.jpeg`` tells them apart); None otherwise. A value ``spec`` declares (a
    class or an ignore value) is a class, never a stray.

    Only the shape of the strays is read, so the JPEG saves that ring little are missed: a
    save at quality 90 or more may leave too few strays (or ones no higher than the classes
    allow) to be told from a thin class; a missed detection is cheaper than calling a clean
    mask damaged.

    The gate runs on every mask and is plain Python over the histogram: the pixels are read
    only for a mask with a short run of rare values just past its common ones, and then only
    those pixels until the last test."""
    if array.ndim < 2 or len(values) < 3 or array.dtype.kind not in "iu":
        return None
    pairs = list(zip(values.tolist(), counts.tolist()))
    total = sum(c for _, c in pairs)
    threshold = RARE_SHARE * total
    common = [v for v, c in pairs if c >= threshold]
    if not common:
        return None
    above = _run([v for v, c in pairs if v > common[-1] and c < threshold], common[-1])
    below = _run([v for v, c in reversed(pairs) if v < common[0] and c < threshold], common[0])
    if above is None or below is None:
        return None
    declared = {v for v in above + below if _declares(spec, v)}
    count_of = dict(pairs)
    if sum(count_of[v] for v in above + below if v not in declared) < RINGING_MIN_PIXELS:
        return None
    planes = array.reshape(-1, *array.shape[-2:])
    # Every value between the common ones and the end of a run is in the run: two comparisons.
    candidate = np.zeros(planes.shape, dtype=bool)
    if above:
        candidate |= (planes > common[-1]) & (planes <= above[-1])
    if below:
        candidate |= (planes < common[0]) & (planes >= below[-1])
    where = np.unravel_index(np.flatnonzero(candidate), planes.shape)  # np.nonzero of 3-D is 6x slower
    interior = _interior_at(planes, where)
    inner_values, inner_counts = histogram(planes[where][interior])
    solid = {v for v, n in zip(inner_values.tolist(), inner_counts.tolist()) if n >= SOLID_SHARE * count_of[v]}
    classes = sorted(set(common) | solid | declared)
    high, low = classes[-1], classes[0]
    strays = [v for v in above if v > high and v not in solid] + [v for v in below if v < low and v not in solid]
    pixels = sum(count_of[v] for v in strays)
    if pixels < RINGING_MIN_PIXELS or not _smeared_between(pairs, classes):
        return None
    kept = _holding(planes[where], strays)
    if int(np.count_nonzero(interior & kept)) > RINGING_MAX_INTERIOR * pixels:
        return None
    where = tuple(axis[kept] for axis in where)
    is_stray = np.zeros(planes.shape, dtype=bool)
    is_stray[where] = True
    if _beside(planes, where, high, low) < RINGING_MIN_BESIDE * pixels:
        return None
    if _near_edges(planes, is_stray, where) < RINGING_MIN_NEAR_EDGE * pixels:
        return None
    return Ringing(tuple(sorted(strays)), pixels, tuple(classes), pixels / total,
                   jpeg=on_jpeg_grid(is_stray))


def _declares(spec: LabelSpec | None, value: int) -> bool:
    """True when ``spec`` names ``value`` legal: a class or an ignore value (a spec that says
    nothing names none)."""
    if spec is None:
        return False
    legal = spec.legal_values()
    return (legal is not None and value in legal) or spec.is_ignored(value)


def _smeared_between(pairs: list[tuple[int, int]], classes: list[int]) -> bool:
    """False when ``classes`` leave gaps in their numbers and no value of the mask (``pairs`` of
    value and pixels) lies in one. JPEG smears every edge where two classes meet, and between
    class values more than one apart it leaves values between them: a mask of classes 1, 4,
    6, 8... holding nothing but them and a rare 0 (ADE20K's unlabelled seams between polygons)
    went through no JPEG."""
    if classes[-1] - classes[0] + 1 == len(classes):
        return True
    members, low, high = set(classes), classes[0], classes[-1]
    return any(low < value < high and value not in members for value, _ in pairs)


def _run(rare: list[int], start: int) -> list[int] | None:
    """The rare values (sorted away from the class value ``start``) that follow it in steps of
    at most :data:`RINGING_STEP`; None when the run goes on past :data:`RINGING_SPAN` (the ids of
    small objects or instances, not a ringing)."""
    run, previous = [], start
    for value in rare:
        if abs(value - previous) > RINGING_STEP:
            break
        if abs(value - start) > RINGING_SPAN:
            return None
        run.append(value)
        previous = value
    return run


def _holding(array: np.ndarray, wanted: list[int]) -> np.ndarray:
    """Where ``array`` holds one of the values ``wanted``: one comparison each for a few (np.isin
    sorts or tabulates the whole value range, slow for the wide ids of an int64 volume)."""
    if len(wanted) > HOLDING_COMPARED:
        return np.isin(array, np.array(wanted, dtype=array.dtype))
    found = np.zeros(array.shape, dtype=bool)
    for value in wanted:
        found |= array == value
    return found


def _interior_at(planes: np.ndarray, where: tuple[np.ndarray, ...]) -> np.ndarray:
    """For each pixel ``where``: its four neighbours all hold its value (a plane's border
    pixels never do)."""
    plane, row, col = where
    rows, cols = planes.shape[1:]
    inside = (row > 0) & (row < rows - 1) & (col > 0) & (col < cols - 1)
    interior = np.zeros(len(row), dtype=bool)
    plane, row, col = plane[inside], row[inside], col[inside]
    own = planes[plane, row, col]
    interior[inside] = ((planes[plane, row - 1, col] == own) & (planes[plane, row + 1, col] == own)
                        & (planes[plane, row, col - 1] == own) & (planes[plane, row, col + 1] == own))
    return interior


def _beside(planes: np.ndarray, where: tuple[np.ndarray, ...], high: int, low: int) -> int:
    """How many stray pixels ``where`` have the class value they overshoot among their eight
    neighbours: ``high`` for a value above it, ``low`` below."""
    plane, row, col = where
    own = np.where(planes[where] > high, high, low)
    beside = np.zeros(len(row), dtype=bool)
    rows, cols = planes.shape[1:]
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                y, x = row + dy, col + dx
                inside = (y >= 0) & (y < rows) & (x >= 0) & (x < cols)
                beside[inside] |= planes[plane[inside], y[inside], x[inside]] == own[inside]
    return int(np.count_nonzero(beside))


def on_jpeg_grid(is_stray: np.ndarray) -> bool:
    """True when stray pixels meet pixels that are none across the borders of JPEG's 8x8 blocks
    :data:`JPEG_GRID_PEAK` times as often as at the likeliest other place of a block, and
    :data:`JPEG_GRID_SIGNIFICANCE` standard deviations above what that place's rate gives (rows
    and columns together; ``is_stray`` of shape (planes, rows, cols)); False for planes too
    narrow to hold two blocks side by side."""
    if min(is_stray.shape[1:]) <= JPEG_BLOCK:
        return False  # no border between two blocks across the plane: no grid to follow
    changes = np.zeros(JPEG_BLOCK)
    seen = np.zeros(JPEG_BLOCK)
    for axis in (1, 2):
        flips = np.moveaxis(is_stray, axis, -1)
        per_column = (flips[..., 1:] != flips[..., :-1]).reshape(-1, flips.shape[-1] - 1).sum(axis=0)
        place = np.arange(len(per_column)) % JPEG_BLOCK
        changes += np.bincount(place, weights=per_column, minlength=JPEG_BLOCK)
        seen += np.bincount(place, minlength=JPEG_BLOCK) * (flips.size // flips.shape[-1])
    if not seen[-1] or not seen[:-1].all():
        return False
    expected = float((changes[:-1] / seen[:-1]).max() * seen[-1])
    border = float(changes[-1])
    return border >= JPEG_GRID_PEAK * expected and border - expected >= JPEG_GRID_SIGNIFICANCE * max(expected, 1) ** 0.5


def _near_edges(planes: np.ndarray, is_stray: np.ndarray, where: tuple[np.ndarray, ...]) -> int:
    """How many stray pixels lie in an 8x8 block of JPEG's grid that holds, or touches a block
    that holds, two touching pixels of different values, neither of them a stray."""
    count, rows, cols = planes.shape
    blocks = np.zeros((count, -(-rows // JPEG_BLOCK), -(-cols // JPEG_BLOCK)), dtype=bool)
    for axis in (1, 2):
        first = [slice(None)] * 3
        second = [slice(None)] * 3
        first[axis], second[axis] = slice(None, -1), slice(1, None)
        meet = (planes[tuple(first)] != planes[tuple(second)]) & ~is_stray[tuple(first)] & ~is_stray[tuple(second)]
        plane, row, col = np.nonzero(meet)
        blocks[plane, row // JPEG_BLOCK, col // JPEG_BLOCK] = True
    near = blocks.copy()
    near[:, 1:] |= blocks[:, :-1]
    near[:, :-1] |= blocks[:, 1:]
    wide = near.copy()
    wide[:, :, 1:] |= near[:, :, :-1]
    wide[:, :, :-1] |= near[:, :, 1:]
    plane, row, col = where
    return int(np.count_nonzero(wide[plane, row // JPEG_BLOCK, col // JPEG_BLOCK]))


def crowded_fringe(values: np.ndarray, counts: np.ndarray, fringe: tuple[int, ...],
                   classes: tuple[int, ...]) -> bool:
    """True when the fringe values that lie between two class values at least
    :data:`WIDE_GAP` apart crowd within an eighth of the gap of either (JPEG's ringing around
    0 and 255: 1..4 and 251..254), where interpolation spreads them evenly."""
    ordered = sorted(classes)
    count_of = dict(zip(values.tolist(), counts.tolist()))
    wide = crowded = 0
    for value in fringe:
        at = int(np.searchsorted(ordered, value))
        if at == 0 or at == len(ordered) or ordered[at] - ordered[at - 1] < WIDE_GAP:
            continue
        below, above = ordered[at - 1], ordered[at]
        wide += count_of.get(value, 0)
        if min(value - below, above - value) <= (above - below) / 8:
            crowded += count_of.get(value, 0)
    return wide > 0 and 2 * wide >= sum(count_of.get(v, 0) for v in fringe) and crowded >= CROWDED_SHARE * wide


def jpeg_ringing(sample: MaskSample, spec: LabelSpec | None = None) -> Ringing | None:
    """The JPEG damage a lossless mask carries (its stray values overshoot the class values in
    JPEG's 8x8 grid, crowd around two far-apart ones, or follow that grid), or None: a fringe
    that may as well come from interpolation, or no fringe. A value ``spec`` declares (a class,
    an ignore value) is never called JPEG damage."""
    labels, values, counts = sample.labels, sample.values, sample.counts
    if sample.record.lossy or not sample.fringe_values or labels is None or values is None or counts is None:
        return None
    ringing = jpeg_overshoot(labels, values, counts, spec)
    if ringing is not None and ringing.jpeg:
        return ringing
    if not (crowded_fringe(values, counts, sample.fringe_values, sample.main_values) or on_jpeg_grid(
            _holding(labels.reshape(-1, *labels.shape[-2:]), list(sample.fringe_values)))):
        return None
    strays = [value for value in sample.fringe_values if not _declares(spec, value)]
    if not strays:
        return None
    count_of = dict(zip(values.tolist(), counts.tolist()))
    pixels = sum(count_of[value] for value in strays)
    return Ringing(tuple(strays), pixels, sample.main_values, pixels / int(counts.sum()))


def _place(values: list[int], classes: list[int]) -> str:
    """Where stray ``values`` lie against the class values, for messages."""
    low, high = min(classes), max(classes)
    if all(low < value < high for value in values):
        return "between"
    if all(value > high for value in values):
        return "above"
    if all(value < low for value in values):
        return "below"
    return "around"


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


def _discs(shape: tuple[int, int], discs) -> np.ndarray:
    """A label plane of class 0 with (row, col, radius, value) discs painted in order."""
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    mask = np.zeros(shape, np.uint8)
    for row, col, radius, value in discs:
        mask[(yy - row) ** 2 + (xx - col) ** 2 < radius ** 2] = value
    return mask


def _three_classes() -> np.ndarray:
    return _discs((128, 128), [(50, 45, 30, 1), (80, 85, 28, 2), (30, 100, 14, 2)])


def _through_jpeg(mask: np.ndarray) -> np.ndarray:
    """``mask`` after one save as JPEG (quality 75) and a reload: what a PNG or NPZ holds that
    was written from it."""
    from PIL import Image  # imported where an example is written, not when the rules register

    buffer = io.BytesIO()
    Image.fromarray(mask).save(buffer, format="JPEG", quality=75)
    buffer.seek(0)
    return np.asarray(Image.open(buffer))


def _cell_targets() -> np.ndarray:
    """Background 0, cell interiors 1 and a one-pixel boundary class 2 around each cell (a rare,
    thin class just above the others, as a three-class nuclei target has it)."""
    cells = _discs((128, 128), [(30, 30, 9, 1), (40, 90, 10, 2), (90, 40, 8, 3), (95, 95, 11, 4)])
    edge = np.zeros(cells.shape, dtype=bool)
    edge[1:] |= cells[1:] != cells[:-1]
    edge[:-1] |= cells[1:] != cells[:-1]
    edge[:, 1:] |= cells[:, 1:] != cells[:, :-1]
    edge[:, :-1] |= cells[:, 1:] != cells[:, :-1]
    target = (cells > 0).astype(np.uint8)
    target[edge & (cells > 0)] = 2
    return target


def _small_object() -> np.ndarray:
    """Classes 0..2 and a small but whole object of class 3 beside a class-2 region."""
    mask = _three_classes()
    mask[100:108, 100:110] = 3
    return mask


def _lane_markings() -> np.ndarray:
    """A dash-cam frame: background 0, the road 1 widening towards the bottom and dashed lane
    markings 2 a few pixels inside its edges (a thin, rare class numbered one past the others,
    every pixel of it beside the road)."""
    rows, cols = 180, 320
    mask = np.zeros((rows, cols), np.uint8)
    for row in range(rows // 2, rows):
        half = int((row - rows // 2) * 1.6) + 10
        left, right = cols // 2 - half, cols // 2 + half
        mask[row, max(left, 0):min(right, cols)] = 1
        width = max(1, (row - rows // 2) // 40)
        if (row // 20) % 2 == 0:
            for col in (left + 6, right - 6 - width):
                if 0 <= col < cols:
                    mask[row, col:col + width] = 2
    return mask


def _lesions_at_an_organ_border() -> np.ndarray:
    """Background 0, an organ 1 and eight lesions 2 of one to five pixels across on the organ's
    border (a small class numbered one past the others, lying where they meet)."""
    rng = np.random.default_rng(1)
    discs: list[tuple[float, float, float, int]] = [(64, 64, 35, 1)]
    for _ in range(8):
        angle, distance = rng.uniform(0, 2 * np.pi), rng.uniform(20, 37)
        discs.append((64 + distance * np.sin(angle), 64 + distance * np.cos(angle), rng.uniform(1.0, 2.5), 2))
    return _discs((128, 128), discs)


def _ade20k_seams() -> np.ndarray:
    """ADE20K-style classes (wall 1, floor 4, ceiling 6 and furniture) whose polygons leave the
    unlabelled 0 only in thin gaps along their seams: a rare value one below the lowest class."""
    rng = np.random.default_rng(5)
    mask = np.ones((192, 256), np.uint8)
    mask[144:], mask[:19] = 4, 6
    for value in rng.choice([8, 11, 15, 20, 24, 37, 45, 67], 6):
        row, col = rng.integers(19, 144), rng.integers(0, 216)
        mask[row:row + rng.integers(10, 45), col:col + rng.integers(10, 60)] = value
    seam = np.zeros(mask.shape, dtype=bool)
    seam[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    seam[1:] |= mask[1:] != mask[:-1]
    rows, cols = np.nonzero(seam)
    gaps = ((rows + 5) // 13 + (cols + 3) // 11 * 7 + 5) % 3 == 0
    mask[rows[gaps], cols[gaps]] = 0
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

RINGING_EXAMPLES = (
    Example(True, "classes 0..2 saved as JPEG once, then as PNG: 3s and 4s in specks beside the 2s",
            lambda: {"masks/a.png": _through_jpeg(_three_classes())}),
    Example(True, "the same JPEG-damaged labels in an NPZ",
            lambda: {"data/a.npz": {"label": _through_jpeg(_three_classes())}}),
    Example(False, "classes 0..2 written losslessly", lambda: {"masks/a.png": _three_classes()}),
    Example(False, "a thin boundary class 2 around cells of class 1 (a three-class cell target)",
            lambda: {"masks/a.png": _cell_targets()}),
    Example(False, "a small, whole object of class 3", lambda: {"masks/a.png": _small_object()}),
    Example(False, "thin dashed lane markings 2 along the edges of the road 1 (off JPEG's 8x8 grid)",
            lambda: {"masks/a.png": _lane_markings()}),
    Example(False, "small lesions 2 at the border of an organ 1, the lesion class declared",
            lambda: {"masks/a.png": _lesions_at_an_organ_border()}, spec={"num_classes": 3}),
    Example(False, "ADE20K classes with the unlabelled 0, the declared ignore value, in the seams between polygons",
            lambda: {"annotations/a.png": _ade20k_seams()}, spec={"num_classes": 151, "ignore": (0,)}),
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
        message += (f"; {plural(sample.fringe_pixels, 'pixel')} {verb(sample.fringe_pixels, 'holds')} "
                    f"{plural(len(values), 'stray value')} "
                    f"({shorten(values, 8)}), each under {RARE_SHARE:.0%} of the mask")
    return (LOSSY.finding(
        sample.display, message,
        hint="Re-export the mask losslessly (PNG, TIFF, NPY) from the source labels; "
        "a renamed JPEG stays a JPEG.",
        container="jpeg", renamed=record.renamed, **stray,
    ),)


def _stored_as(sample: MaskSample) -> str:
    """How a lossless mask is stored, for messages: "PNG", "the NPZ array 'label'"."""
    record = sample.record
    if record.container in IMAGE_CONTAINERS:
        return record.container.upper()
    kind = ARRAY_CONTAINERS.get(record.container, record.container)
    return f"the {kind} array {record.key!r}" if record.key else kind


@rule(LOSSY, "mask", RINGING_EXAMPLES, files_only=True)
def jpeg_damage_kept(sample: MaskSample, spec):
    """A lossless mask (PNG, NPZ, NPY, TIFF, HDF5...) whose stray values are the ringing of a
    JPEG save it went through once: re-encoding kept the damage."""
    ringing = jpeg_ringing(sample, spec)
    if ringing is None:
        return ()
    values = list(ringing.values)
    return (LOSSY.finding(
        sample.display,
        f"this mask carries JPEG damage although stored as {_stored_as(sample)}: "
        f"{plural(ringing.pixels, 'pixel')} ({ringing.share:.2%} of the mask) hold "
        f"{plural(len(values), 'stray value')} ({shorten(values, 8)}) around the class values "
        f"{shorten(ringing.classes, 8)}, in specks along the class edges: the ringing JPEG compression "
        "leaves; the mask was saved as JPEG once and re-encoded",
        hint="Re-export the mask from the source annotations (polygons, the annotation tool's export) as PNG; "
        "remapping the stray values (`labelguard fix remap`) would hide the damage, not undo it.",
        stray_values=values[:STRAY_KEPT], stray_pixels=ringing.pixels, stray_share=round(ringing.share, 6),
        main_values=list(ringing.classes[:STRAY_KEPT]), jpeg_damage=True,
    ),)


@rule(LOSSY, "mask", FRINGE_EXAMPLES, files_only=True)
def edge_fringe(sample: MaskSample, spec):
    """Lossless containers (PNG, NPY, NPZ, HDF5, TIFF...) holding an array that went through
    JPEG or interpolation once (JPEG's own signature: :func:`jpeg_damage_kept`)."""
    if sample.record.lossy or not sample.fringe_values or jpeg_ringing(sample, spec) is not None:
        return ()
    rare, common = list(sample.fringe_values), list(sample.main_values)
    record = sample.record
    where = "" if record.container in IMAGE_CONTAINERS else \
        f" (the {ARRAY_CONTAINERS.get(record.container, record.container)} array" \
        f"{' ' + repr(record.key) if record.key else ''})"
    return (LOSSY.finding(
        sample.display,
        f"{plural(sample.fringe_pixels, 'pixel')} along class edges{where} {verb(sample.fringe_pixels, 'holds')} "
        f"{plural(len(rare), 'stray value')} "
        f"({shorten(rare, 8)}) {_place(rare, common)} the main {noun(len(common), 'value')} "
        f"{shorten(common, 6)}: the mask went through JPEG or was resized with interpolation",
        hint="Re-export the mask losslessly from the source labels, and resize masks with nearest-neighbour "
        "interpolation only.",
        stray_values=rare[:STRAY_KEPT], stray_pixels=sample.fringe_pixels, main_values=common,
    ),)
