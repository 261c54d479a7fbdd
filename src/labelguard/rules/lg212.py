"""LG212 instance-mask-problem: instance-id masks (one id per object, 0 background: StarDist,
Cellpose, MONAI) where class ids are expected, an id used by separate objects, ids past what
the dtype holds, and a background that is not 0.

Which masks hold instance ids is said by the user (``--instances``/``--semantic``,
``masks_hold``) or else read from each mask's own evidence (``rules/_instances.py``): many ids
numbering 1..N with few gaps, each one connected region, stored as 16 or 32 bits.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import plural, shorten, verb
from labelguard.rules._instances import instance_folders, reads_as_instances

INSTANCE_MASK = define(
    "LG212", "instance-mask-problem", "warning",
    summary="an instance-label mask problem: instance ids where class ids are expected, an id reused by "
            "separate objects, a dtype too narrow for the ids, or a background that is not 0",
    why="""
An instance mask numbers objects (1..N, 0 background): fed to a semantic loss, every id is
taken for a class (ids past num_classes stop training with a device-side assert, ids within
it teach nonsense classes). An instance loss or a StarDist/Cellpose training reads each id as
one object: an id on two separate objects merges them, ids past the dtype's largest value
wrapped around onto other objects, and a background other than 0 becomes one huge object.""",
    bad="StarDist masks (uint16, ids 1..340) audited with --num-classes 2; id 7 on two separate cells; "
        "a uint8 mask whose ids reach 255",
    good="instance masks declared with --instances, one region per id, uint16 or int32, background 0",
    fix="Declare what the masks hold (--instances or --semantic); relabel split objects with their own "
        "ids; store ids as uint16 or int32; keep 0 for background.",
)


def _cells(side: int, dtype=np.uint16, cell: int = 4) -> np.ndarray:
    """``side`` x ``side`` square objects numbered 1.. in rows, each apart from the others."""
    ids = np.arange(1, side * side + 1).reshape(side, side)
    mask = np.kron(ids, np.ones((cell, cell), np.int64))
    mask[cell - 1::cell, :] = 0
    mask[:, cell - 1::cell] = 0
    return mask.astype(dtype)


def _one_id_on_two_objects() -> np.ndarray:
    mask = _cells(3)
    mask[mask == 9] = 1
    return mask


def _ids_reaching(highest: int, dtype) -> np.ndarray:
    """Ids 1..``highest`` on pixels apart from each other, stored as ``dtype`` (wrapped past
    its largest value)."""
    side = int(np.ceil(np.sqrt(highest)))
    ids = np.zeros(side * side, np.int64)
    ids[:highest] = np.arange(1, highest + 1)
    mask = np.zeros((2 * side, 2 * side), np.int64)
    mask[::2, ::2] = ids.reshape(side, side)
    return mask.astype(dtype)


def _background(value: int) -> np.ndarray:
    mask = _cells(3)
    mask[mask == 0] = value
    return mask


SPLIT_EXAMPLES = (
    Example(True, "id 1 on two separate objects, instances declared",
            lambda: {"masks/a.tif": _one_id_on_two_objects()}, spec={"masks_hold": "instances"}),
    Example(False, "one region per id, instances declared",
            lambda: {"masks/a.tif": _cells(3)}, spec={"masks_hold": "instances"}),
)

NARROW_EXAMPLES = (
    Example(True, "ids 1..300 stored as uint8 (past 255 they wrapped)",
            lambda: {"masks/a.png": _ids_reaching(300, np.uint8)}, spec={"masks_hold": "instances"}),
    Example(True, "uint8 ids reaching 255, instances declared",
            lambda: {"masks/a.png": _ids_reaching(255, np.uint8)}, spec={"masks_hold": "instances"}),
    Example(False, "ids 1..255 stored as uint16",
            lambda: {"masks/a.tif": _ids_reaching(255, np.uint16)}, spec={"masks_hold": "instances"}),
)

BACKGROUND_EXAMPLES = (
    Example(True, "instances declared, background 10 (no pixel is 0)",
            lambda: {"masks/a.tif": _background(10)}, spec={"masks_hold": "instances"}),
    Example(False, "instances declared, background 0",
            lambda: {"masks/a.tif": _background(0)}, spec={"masks_hold": "instances"}),
)

CLASSES_EXAMPLES = (
    Example(True, "36 objects numbered 1..36 (uint16) where num_classes = 3",
            lambda: {"masks/a.tif": _cells(6), "masks/b.tif": _cells(5)}, spec={"num_classes": 3}),

    Example(False, "36 objects numbered 1..36 (uint16), no spec: read as instances",
            lambda: {"masks/a.tif": _cells(6)}),
    Example(False, "36 objects numbered 1..36 (uint16), masks_hold = \"classes\" (--semantic): final",
            lambda: {"masks/a.tif": _cells(6)}, spec={"masks_hold": "classes", "num_classes": 3}),
    Example(False, "a class mask of 3 classes where num_classes = 3",
            lambda: {"masks/a.png": np.kron(np.arange(3, dtype=np.uint8).reshape(1, 3), np.ones((4, 4), np.uint8))},
            spec={"num_classes": 3}),
)


def _place(position: tuple[int, ...]) -> str:
    """A pixel as (x, y), a voxel as (x, y, z): the order images are addressed in."""
    return "(" + ", ".join(str(n) for n in reversed(position)) + ")"


@rule(INSTANCE_MASK, "mask", SPLIT_EXAMPLES, files_only=True)
def one_id_on_separate_objects(sample: MaskSample, spec: LabelSpec):
    evidence = sample.instances
    if evidence is None or not evidence.split_ids or not reads_as_instances(sample, spec):
        return ()
    listed = shorten([f"id {value} on {regions:,} separate regions (first pixels at "
                      f"{', '.join(_place(p) for p in places)}{' ...' if regions > len(places) else ''})"
                      for value, regions, places in evidence.split_places],
                     len(evidence.split_places), total=evidence.split_ids, sep="; ")
    return (INSTANCE_MASK.finding(
        sample.display,
        f"{plural(evidence.split_ids, 'instance id')} of {evidence.ids:,} {verb(evidence.split_ids, 'is')} used by "
        f"separate objects (regions apart from each other, corners counting as touching): {listed}",
        hint="An instance loss reads one id as one object: give each region its own id (or join the regions "
             "if they are one object cut by a crop).",
        ids=[value for value, _, _ in evidence.split_places], split=evidence.split_ids,
    ),)


@rule(INSTANCE_MASK, "mask", NARROW_EXAMPLES, files_only=True)
def ids_past_the_dtype(sample: MaskSample, spec: LabelSpec):
    evidence = sample.instances
    if evidence is None or not reads_as_instances(sample, spec):
        return ()
    top = int(np.iinfo(np.dtype(evidence.dtype)).max)
    if evidence.highest < top:
        return ()
    reused = f"; {plural(evidence.split_ids, 'id')} {verb(evidence.split_ids, 'is')} on separate objects, which " \
        "ids wrapped past the largest value would also give" if evidence.split_ids else ""
    return (INSTANCE_MASK.finding(
        sample.display,
        f"instance mask stored as {evidence.dtype}: ids reach {evidence.highest}, the largest {evidence.dtype} "
        f"holds ({plural(evidence.ids, 'id')}){reused}; a mask of more objects cannot number them in "
        f"{evidence.dtype}: ids past {top} wrap around onto other objects' ids or background",
        hint="Store instance ids as uint16 or int32 (StarDist and Cellpose write uint16/int32); if the objects "
             "outnumber the ids, re-export the mask from its source.",
        dtype=evidence.dtype, highest=evidence.highest, ids=evidence.ids,
    ),)


@rule(INSTANCE_MASK, "mask", BACKGROUND_EXAMPLES, files_only=True)
def background_not_zero(sample: MaskSample, spec: LabelSpec):
    evidence = sample.instances
    if evidence is None or evidence.has_zero or spec.masks_hold != "instances" or not evidence.pixels:
        return ()
    share = 100 * evidence.background_pixels / evidence.pixels
    return (INSTANCE_MASK.finding(
        sample.display,
        f"no pixel is 0 in an instance mask (instances declared{spec.origin_note('masks_hold')}): value "
        f"{evidence.background} covers {share:.3g}% of the pixels, expected background 0",
        hint=f"If {evidence.background} is the background, remap it to 0 (`labelguard fix remap --map "
             f"{evidence.background}:0`); instance losses read every non-zero id as an object.",
        background=evidence.background,
    ),)


@rule(INSTANCE_MASK, "dataset", CLASSES_EXAMPLES)
def instance_ids_where_classes_expected(summary: Summary, spec: LabelSpec):
    """One finding per folder of masks that look like instance ids where a spec of classes
    expects class ids (never where the user said the masks hold classes: --semantic)."""
    findings = []
    for found in instance_folders(summary, "classes"):
        illegal = f"; {found.outside:,} of them hold values the spec does not allow (LG201)" if found.outside else ""
        where = f" of {found.folder}" if found.folder else ""
        findings.append(INSTANCE_MASK.finding(
            None,
            f"{plural(found.masks, 'mask')}{where} {verb(found.masks, 'looks')} like instance ids, not classes: "
            f"{found.ids} per mask numbered within 1..{found.highest}, {found.regions} ({found.dtypes}), where "
            f"class ids are expected (the spec {spec.describe()}){illegal} "
            f"({shorten(found.examples, len(found.examples), total=found.masks)})",
            hint="If they hold classes, pass --semantic (or masks_hold = \"classes\") to say so; if they are "
                 "instance masks, pass --instances and train with an instance loss, or for a semantic model "
                 "convert ids to classes first (every id > 0 to 1 for one foreground class).",
            folder=found.folder, masks=found.masks, highest=found.highest, outside=found.outside,
        ))
    return findings
