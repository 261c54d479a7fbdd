"""LG208 labels-one-based: no mask holds the background, and the values run 1..n."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import FixExample, define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.rules._dataset import fmt_map

ONE_BASED = define(
    "LG208", "labels-one-based", "warning",
    summary="labels look 1-based: no value 0 anywhere while the spec expects background 0",
    why="""
Annotation tools such as ITK-SNAP number structures from 1. Then the largest label equals
num_classes and is out of range, and class 0 is never trained.""",
    bad="spec 0..2, values found in all masks: {1, 2, 3}",
    good="values found {0, 1, 2}, or the remap {1: 0, 2: 1, 3: 2} applied",
    fix="Apply the suggested remap (`labelguard fix remap`), or make the spec say what the data means.",
    scope="dataset",
    fix_safety="unsafe", fix_command="labelguard fix remap",
    fix_examples=(FixExample(
        "three masks of classes 1..3 with num_classes=3 (ITK-SNAP numbering) -> `--map 1:0,2:1,3:2`",
        lambda: {f"{i}.png": _rows(i, 1) for i in range(3)}, "remap", {"mapping": {1: 0, 2: 1, 3: 2}},
        lambda: {f"{i}.png": _rows(i, 0) for i in range(3)}, spec={"num_classes": 3}),),
)

EXAMPLES = (
    Example(True, "values 1..3 for a spec of 0..2",
            lambda: {"masks/a.png": np.array([[1, 2], [3, 1]], np.uint8)}, spec={"num_classes": 3}),
    Example(False, "values 0..2 for a spec of 0..2",
            lambda: {"masks/a.png": np.array([[0, 2], [1, 0]], np.uint8)}, spec={"num_classes": 3}),
)


@rule(ONE_BASED, "dataset", EXAMPLES)
def one_based_labels(summary: Summary, spec: LabelSpec):
    found = summary.found_values()
    allowed = spec.allowed_values()
    if not found or allowed is None or spec.background is None or spec.reduce_zero_label:
        return []
    classes = [v for v in found if not spec.is_ignored(v)]
    if not classes or spec.background in classes or spec.background not in allowed:
        return []
    # 1-based: the values run 1..m and the shift lands exactly on the spec's values. The
    # distinct sorted values are consecutive when their count spans them (no list of the
    # span: one value of 50,000,000 must cost nothing).
    consecutive = classes[0] == spec.background + 1 and classes[-1] - classes[0] + 1 == len(classes)
    highest = allowed.highest
    assert highest is not None  # not a user mistake: the background is among the allowed values (checked above)
    if not consecutive or classes[-1] != highest + 1:
        return []
    remap = {v: v - 1 for v in classes}
    return [ONE_BASED.finding(
        None,
        f"no mask holds the background value {spec.background}: values found "
        f"{classes} look 1-based for {spec.describe()}",
        hint="Apply the remap " + fmt_map(remap) + " (`labelguard fix remap --map "
        + ",".join(f"{a}:{b}" for a, b in remap.items()) + "`), or set the spec to these values.",
        remap={str(k): v for k, v in remap.items()},
    )]


def _rows(i: int, first: int) -> np.ndarray:
    """Mask ``i`` of a one-based set (``first`` 1) or of the same set renumbered from 0."""
    mask = np.full((4, 4), first, np.uint8)
    mask[i, :] = first + 1
    mask[3, :] = first + 2
    return mask
