"""LG205 mask-empty: only background or ignore values."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun, plural, verb

EMPTY_MASK = define(
    "LG205", "mask-empty", "info",
    summary="a mask contains only background or ignore values",
    why="""
Not an error in itself (empty slices are common in volumes), but many of them shift the class
balance and Dice-style losses divide by zero on them.""",
    bad="case0007_slice000.npz: all 262,144 pixels are background/ignore (value 0)",
    good="a foreground class present, or empty slices sampled on purpose",
    fix="Nothing if expected; otherwise drop empty samples or sample them less often.",
)

EXAMPLES = (
    Example(True, "all pixels 0", lambda: {"masks/a.png": np.zeros((4, 4), np.uint8)}, spec={"num_classes": 2}),
    Example(False, "a foreground pixel", lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)},
            spec={"num_classes": 2}),
)


# A mask file holding only background; at run time the random crops of most pipelines are often
# empty by design, so the guard does not report them (files_only).
@rule(EMPTY_MASK, "mask", EXAMPLES, files_only=True)
def only_background(sample: MaskSample, spec: LabelSpec):
    values, counts = sample.values, sample.counts
    if values is None or not len(values) or sample.looks_like_image:
        return ()
    assert counts is not None  # not a user mistake: label_sample sets the counts with the values
    if not all(v == spec.background or spec.is_ignored(v) for v in values.tolist()):
        return ()
    return (EMPTY_MASK.finding(
        sample.display,
        f"all {plural(int(counts.sum()), 'pixel')} {verb(int(counts.sum()), 'is')} background/ignore "
        f"({noun(len(values), 'value')} {', '.join(str(v) for v in values.tolist())})",
        hint="Nothing to do if empty samples are expected; otherwise drop or down-sample them.",
    ),)
