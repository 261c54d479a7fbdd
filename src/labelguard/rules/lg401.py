"""LG401 class-imbalance-extreme: the rarest class is a thousandth of the commonest."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.rules._dataset import class_label

IMBALANCE = define(
    "LG401", "class-imbalance-extreme", "info",
    summary="class frequency is extremely imbalanced",
    why="""
With a class holding a thousandth of the pixels of another, an unweighted loss learns to
ignore it; it also often reveals a labelling error (a few stray pixels of a class).""",
    bad="pixels: background 98.9%, liver 1.09%, tumour 0.01%",
    good="class weights or a sampler chosen knowing these counts",
    fix="Use class weights or a Dice/focal loss, oversample the rare class, or check the rare "
    "class's pixels for labelling errors.",
    scope="dataset",
)

# The rarest class holding less than this fraction of the most frequent one is flagged.
IMBALANCE_RATIO = 1e-3


def _one_pixel_of(value: int) -> np.ndarray:
    mask = np.zeros((64, 64), np.uint8)
    mask[0, 0] = value
    return mask


EXAMPLES = (
    Example(True, "one pixel of class 1 in 4096", lambda: {"masks/a.png": _one_pixel_of(1)},
            spec={"num_classes": 2}),
    Example(False, "two classes of equal size",
            lambda: {"masks/a.png": np.kron(np.eye(2, dtype=np.uint8), np.ones((8, 8), np.uint8))},
            spec={"num_classes": 2}),
)


@rule(IMBALANCE, "dataset", EXAMPLES)
def class_imbalance(summary: Summary, spec: LabelSpec):
    # In the order of the values or names, never the order the files' summaries were merged in.
    counts = {v: c for v, c in sorted(summary.value_pixels.items()) if not spec.is_ignored(v)}
    kind = "pixels"
    if not counts:
        counts = dict(sorted(summary.class_objects.items()))
        kind = "objects"
    if len(counts) < 2:
        return []
    if spec.is_known and kind == "pixels":
        counts = {v: c for v, c in counts.items() if spec.is_legal(v)}
    if len(counts) < 2:
        return []
    rarest = min(counts, key=counts.__getitem__)
    commonest = max(counts, key=counts.__getitem__)
    if counts[rarest] >= IMBALANCE_RATIO * counts[commonest]:
        return []
    total = sum(counts.values())
    listing = ", ".join(
        f"{class_label(v, spec) if kind == 'pixels' else v}: {_percent(100 * c / total)}"
        for v, c in sorted(counts.items(), key=lambda item: -item[1])
    )
    return [IMBALANCE.finding(
        None,
        f"class frequencies ({kind}) are extremely imbalanced: {listing}; the rarest class "
        f"has {_one_for_every(counts[rarest], counts[commonest], kind)}",
        counts={str(k): v for k, v in counts.items()},
    )]


def _percent(share: float) -> str:
    """A share in percent as people read it, to three significant digits: "98.9%", "0.000039%",
    never "3.9e-05%"."""
    return np.format_float_positional(share, precision=3, fractional=False, trim="-") + "%"


def _one_for_every(rarest: int, commonest: int, kind: str) -> str:
    """The rarest class's count against the commonest's, in whole numbers: "1 pixel for every
    35,700 of the commonest" (three significant digits), "no pixels" for a class that has none."""
    if rarest <= 0:
        return f"no {kind}"
    every = int(float(f"{commonest / rarest:.3g}"))
    return f"1 {kind[:-1]} for every {every:,} of the commonest"
