"""Instance-id masks: what one mask's own values and objects say about whether its values
number objects (StarDist, Cellpose, MONAI instance labels: 0 background, ids 1..N, one
connected region per id) rather than name classes.

:func:`count_regions` counts the connected regions of every value of a 2-D or 3-D label array
with numpy alone (runs along the last axis joined by a vectorised union-find), in time and
memory linear in the array's real size. :func:`instance_evidence` weighs one mask's signals;
the dataset's decision adds up these per-mask results in the summary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from labelguard.core.records import InstanceEvidence, MaskSample
from labelguard.core.spec import LabelSpec
from labelguard.core.text import plural

# A class mask rarely holds more than a few dozen classes in one sample (ADE20K's 150 classes
# give some 10 to 30 per photo), and they are spread over many regions; an instance mask of
# this many ids, each one region, numbered 1..N with few gaps, is read as instances.
MANY_IDS = 24
# An 8-bit mask holds classes far more often than ids: it takes far more ids to read it so.
MANY_IDS_8BIT = 64
# The share of ids that must be one connected region each (a cropped object or a touching
# pair may split a few), and how densely the ids must fill 1..highest (StarDist's 3-D test
# crop keeps 51 of ids 1..162; FreeSurfer's parcellation 100 of 1..2035).
ONE_REGION_SHARE = 0.9
ONE_REGION_SHARE_8BIT = 0.75
DENSE_SHARE = 0.2
DENSE_SHARE_8BIT = 0.5
# Ids that fill under half of 1..highest are a crop of an instance mask (objects cut away at
# the border) or a subset of a class list (ADE20K's 30 of 150 classes in one photo, one blob
# each): the crop keeps its objects on a background of at least this share of the pixels, a
# scene's classes cover nearly all of it.
SPARSE_BACKGROUND = 0.25
# A labelling tool numbers the objects it found 1..N without gaps. Ids with gaps whose regions
# nearly all border another id's region (they tile a structure with no background between:
# a parcellation's 100+ regions, each one piece) name classes; a crop of cells leaves many
# cells apart on background.
TILING_SHARE = 0.95
# Split ids, and regions of each, a finding names.
SPLIT_IDS_KEPT = 5
REGIONS_PLACED = 3


def count_regions(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The connected regions of the non-zero values of a 2-D or 3-D array, neighbours by face,
    edge or corner (8 in 2-D, 26 in 3-D): ``(values, regions, first)``, each value with its
    number of regions and, per region (ordered by value, then by first pixel), the flat index
    of its first pixel. Other dimensions are read as 2-D planes stacked (the first axes
    joined).

    Runs of one value along the last axis are the nodes, numbered in the array's order. A 3-D
    array is taken a plane at a time, each plane joined to the one before it, so what is held
    for the whole array is a few numbers per run (its value, its first pixel, its root: int32
    where the array has fewer than 2**31 pixels) and per pair of touching runs, never an array
    of the array's size."""
    if labels.ndim < 2:
        labels = labels.reshape(1, -1)
    planes = labels.reshape(-1, *labels.shape[-2:]) if labels.ndim != 2 else labels[np.newaxis]
    height, width = planes.shape[1:]
    index = np.int32 if labels.size < 2 ** 31 else np.int64
    # The runs are counted first, so that their values and first pixels fill arrays of their
    # number once, not lists joined at the end (two copies of what noise makes as large as the
    # array).
    total = sum(_runs_in(np.ascontiguousarray(plane).reshape(-1), width) for plane in planes)
    run_value = np.empty(total, dtype=labels.dtype)
    run_start = np.empty(total, dtype=index)
    edges_a: list[np.ndarray] = []
    edges_b: list[np.ndarray] = []
    before = None  # the previous plane: (pixels, run starts, run of each pixel)
    runs = 0
    for depth in range(planes.shape[0]):
        plane = np.ascontiguousarray(planes[depth])
        flat = plane.reshape(-1)
        starts = np.ones(flat.size, dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        starts[::width] = True
        run_of = (np.cumsum(starts, dtype=index) - 1 + runs).reshape(height, width)
        local_start = np.flatnonzero(starts)
        run_value[runs:runs + local_start.size] = flat[local_start]
        run_start[runs:runs + local_start.size] = local_start + depth * height * width
        here = (plane, starts.reshape(height, width), run_of)
        pairs: list[tuple[np.ndarray, np.ndarray]] = []
        for offset in IN_PLANE:
            _join(here, here, offset, pairs)
        if before is not None:
            for offset in ACROSS_PLANES:
                _join(before, here, offset, pairs)
        if pairs:
            # The offsets find most pairs several times over: each pair is kept once.
            a = np.concatenate([a for a, _ in pairs])
            b = np.concatenate([b for _, b in pairs])
            if index is np.int32:
                key = np.unique((a.astype(np.int64) << 32) | b.astype(np.int64))
                a, b = (key >> 32).astype(index), (key & 0xFFFFFFFF).astype(index)
            edges_a.append(a)
            edges_b.append(b)
        before = here
        runs += local_start.size
    roots = _components(runs, edges_a, edges_b, index)
    nonzero = run_value != 0
    root_runs = np.flatnonzero(nonzero & (roots == np.arange(roots.size, dtype=index)))
    region_values = run_value[root_runs]
    order = np.argsort(region_values, kind="stable")
    found, regions = np.unique(region_values[order], return_counts=True)
    return found, regions, run_start[root_runs[order]].astype(np.int64)


def _runs_in(flat: np.ndarray, width: int) -> int:
    """How many runs of one value the rows of ``width`` pixels of ``flat`` hold."""
    return int(np.count_nonzero(flat[1:] != flat[:-1]) + flat.size // width
               - np.count_nonzero(flat[width::width] != flat[width - 1:-1:width]))


# The neighbours of a pixel that come after it in the array's order, less the next pixel of
# its own run: in its own plane, the three of the next row; in the next plane, all nine.
IN_PLANE = ((1, -1), (1, 0), (1, 1))
ACROSS_PLANES = tuple((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1))


def _join(near, far, offset: tuple[int, int], pairs: list) -> None:
    """Add the pairs of runs of one value that touch between the pixels of plane ``near`` and
    their neighbours at ``offset`` (rows, columns) in plane ``far``. Two runs that touch meet
    at the first pixel of one of them: only those pixels are paired."""
    (near_pixels, near_starts, near_runs), (far_pixels, far_starts, far_runs) = near, far
    first = _window(near_pixels.shape, offset, True)
    second = _window(near_pixels.shape, offset, False)
    a_pixels, b_pixels = near_pixels[first], far_pixels[second]
    same = (near_starts[first] | far_starts[second]) & (a_pixels == b_pixels) & (a_pixels != 0)
    if same.any():
        pairs.append((near_runs[first][same], far_runs[second][same]))


def _window(shape: tuple[int, ...], offset: tuple[int, ...], first: bool) -> tuple[slice, ...]:
    """The slice of the pixels that have a neighbour at ``offset`` (first) or of those
    neighbours (not first)."""
    window = []
    for size, step in zip(shape, offset):
        if step >= 0:
            window.append(slice(0, size - step) if first else slice(step, size))
        else:
            window.append(slice(-step, size) if first else slice(0, size + step))
    return tuple(window)


def _components(nodes: int, edges_a: list[np.ndarray], edges_b: list[np.ndarray], index=np.int64) -> np.ndarray:
    """Each node's root (the smallest node of its component): roots hook onto the smallest
    root they touch, then paths are halved until every node points at its root; each round
    merges every component that still touches another, so rounds are few."""
    parent = np.arange(nodes, dtype=index)
    if not edges_a:
        return parent
    a = np.concatenate(edges_a)
    b = np.concatenate(edges_b)
    edges_a.clear()
    edges_b.clear()
    while True:
        ra, rb = parent[a], parent[b]
        differ = ra != rb
        if not differ.any():
            return parent
        a, b, ra, rb = a[differ], b[differ], ra[differ], rb[differ]
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped


def instance_evidence(sample: MaskSample, spec: LabelSpec) -> InstanceEvidence | None:
    """What one mask's values say about being instance ids, or None when it cannot be one
    (no integer labels, a photograph, a colour mask) or is not worth asking about (few ids,
    8-bit, and nobody declared instances). Its per-object count runs only on those."""
    labels, values, counts = sample.labels, sample.values, sample.counts
    stored = sample.record.array
    if labels is None or values is None or counts is None or sample.looks_like_image or sample.color_container \
            or stored.dtype.kind not in "iu" or labels.ndim < 2 or not labels.size:
        return None
    if spec.masks_hold == "classes":
        return None  # the user said the values are classes: final, and no region is counted
    declared = spec.masks_hold == "instances"
    ids = values[values != 0]
    bits = stored.dtype.itemsize * 8
    if not declared and (len(ids) < MANY_IDS or (bits == 8 and len(ids) < MANY_IDS_8BIT)):
        return None
    if not len(ids):
        return InstanceEvidence(dtype=str(stored.dtype), ids=0, highest=0, lowest=0, one_region=0,
                                background=int(values[np.argmax(counts)]), has_zero=bool(len(values)))
    found, regions, first = count_regions(labels)
    split = regions > 1
    ends = np.cumsum(regions)
    places = []
    for index in np.flatnonzero(split)[:SPLIT_IDS_KEPT]:
        starts = first[ends[index] - regions[index]:ends[index]][:REGIONS_PLACED]
        places.append((int(found[index]), int(regions[index]),
                       tuple(tuple(int(n) for n in np.unravel_index(int(s), labels.shape)) for s in starts)))
    has_zero = bool(values[0] == 0) if values[0] >= 0 else bool(np.any(values == 0))
    evidence = InstanceEvidence(
        dtype=str(stored.dtype), ids=int(len(ids)), highest=int(ids.max()), lowest=int(ids.min()),
        one_region=int(len(ids) - np.count_nonzero(split)), split_ids=int(np.count_nonzero(split)),
        split_places=tuple(places), has_zero=has_zero,
        background=0 if has_zero else int(values[np.argmax(counts)]),
        background_pixels=int(counts[values == 0].sum()) if has_zero else int(counts.max()),
        pixels=int(counts.sum()))
    evidence.recognised = _reads_as_instances(evidence, bits) and (
        evidence.ids == evidence.highest or not _regions_tile(labels, ids))
    return evidence


def _reads_as_instances(evidence: InstanceEvidence, bits: int) -> bool:
    """The signals of one mask's histogram and region count together: many ids, each (nearly
    always) one region, numbering 1..N with few gaps, background 0, and ids that fill under
    half of 1..N only on a background (:data:`SPARSE_BACKGROUND`); an 8-bit mask needs more
    of each."""
    wide = bits >= 16
    many = MANY_IDS if wide else MANY_IDS_8BIT
    one_region = ONE_REGION_SHARE if wide else ONE_REGION_SHARE_8BIT
    dense = DENSE_SHARE if wide else DENSE_SHARE_8BIT
    sparse = evidence.ids < evidence.highest / 2
    return (evidence.has_zero and evidence.lowest > 0 and evidence.ids >= many
            and evidence.one_region >= one_region * evidence.ids
            and evidence.ids >= dense * evidence.highest
            and not (sparse and evidence.background_pixels < SPARSE_BACKGROUND * evidence.pixels))


def _regions_tile(labels: np.ndarray, ids: np.ndarray) -> bool:
    """Nearly every id (:data:`TILING_SHARE`) has a region that borders another id's region
    by a face: the regions tile a structure, as classes do. Asked only of ids with gaps."""
    bordering = np.zeros(ids.size, dtype=bool)
    for axis in range(labels.ndim):
        here = np.moveaxis(labels, axis, 0)
        a, b = here[1:], here[:-1]
        meet = (a != b) & (a != 0) & (b != 0)
        for side in (a, b):
            bordering[np.searchsorted(ids, np.unique(side[meet]))] = True
    return bool(np.count_nonzero(bordering) >= TILING_SHARE * ids.size)


def reading_of(evidence: InstanceEvidence | None, spec: LabelSpec) -> str | None:
    """How a mask's values are read: "instances" (declared, or recognised where nobody said
    which values are classes), "classes" for a recognised mask where a spec of classes
    expects class ids (LG212), None for an ordinary mask and for every mask the user said
    holds classes (``--semantic``, ``masks_hold = "classes"``: final)."""
    if evidence is None or spec.masks_hold == "classes":
        return None
    if spec.masks_hold == "instances":
        return "instances"
    if not evidence.recognised:
        return None
    return "classes" if spec.is_known else "instances"


def reads_as_instances(sample: MaskSample, spec: LabelSpec) -> bool:
    """The mask's values are instance ids, judged as such (LG212) and by no class rule."""
    return reading_of(sample.instances, spec) == "instances"


def classes_expected(sample: MaskSample, spec: LabelSpec) -> bool:
    """The mask looks like instance ids where class ids are expected (LG212, instead of a
    finding per value)."""
    return reading_of(sample.instances, spec) == "classes"


@dataclass(frozen=True)
class InstanceFolder:
    """What the summary kept of one folder's masks of one reading, as messages say it."""

    folder: str
    masks: int
    examples: list[str]
    ids: str  # "40 ids" or "31 to 65 ids"
    highest: int
    dtypes: str  # "uint16" or "int32, uint16"
    regions: str  # "every id one connected region" or "1,230 of 1,240 ids one connected region each"
    outside: int


def instance_folders(summary, reading: str) -> list[InstanceFolder]:
    """The folders of masks of ``reading`` ("instances" or "classes") that a
    :class:`labelguard.core.summary.Summary` counted, each said once for notes and LG212."""
    found = []
    for (folder, kind), examples in sorted(summary.instance_examples.items()):
        if kind != reading:
            continue
        key = (folder, kind)
        fewest, most, highest = summary.instance_extent[key]
        dtypes = sorted(what[len("dtype "):] for (f, r, what) in summary.instances
                        if (f, r) == key and what.startswith("dtype "))
        total, one_region = summary.instances[key + ("ids",)], summary.instances[key + ("one region",)]
        regions = "every id one connected region" if one_region == total else \
            f"{one_region:,} of {plural(total, 'id')} one connected region each"
        found.append(InstanceFolder(folder, summary.instances[key + ("masks",)], examples,
                                    plural(fewest, "id") if fewest == most else f"{fewest:,} to {most:,} ids", highest,
                                    ", ".join(dtypes), regions, summary.instances[key + ("outside",)]))
    return found


def recognition_notes(summary, spec: LabelSpec) -> list[str]:
    """What the report says of masks read as instance ids: which, why (the evidence) and how to
    say otherwise. A :class:`labelguard.core.summary.Summary` in, one line per folder."""
    notes = []
    for found in instance_folders(summary, "instances"):
        where = f"{found.folder}: " if found.folder else ""
        shown = [os.path.basename(path) for path in found.examples[:2]] if found.folder else found.examples[:2]
        count = f"{plural(found.masks, 'mask')} ({', '.join(shown)}{', ...' if found.masks > 2 else ''})"
        if spec.masks_hold == "instances":
            unused = f"; the spec's classes ({spec.describe()}) do not apply to masks read as instance ids" \
                if spec.is_known else ""
            notes.append(f"{where}{count} read as instance masks, as declared{spec.origin_note('masks_hold')}: "
                         f"objects checked (LG212), no class rule judges the ids{unused}")
            continue
        varying = ", varying from mask to mask" if " to " in found.ids else ""
        notes.append(
            f"{where}{count} read as instance masks (one id per object), not classes: {found.ids}{varying}, "
            f"numbered within 1..{found.highest}, {found.regions}, background 0, stored as {found.dtypes}; their "
            "ids are left out of the class statistics and checked per object (LG212). If they hold classes, pass "
            "--semantic (or masks_hold = \"classes\" in [labels]); --instances says every mask holds instances")
    return notes
