"""LG2xx: segmentation masks. The codes and their rules live in :mod:`labelguard.rules`
(one module per code); this module names them for the code that reports them elsewhere
(the torch guard, COCO masks) and applies the value rules to a bare array."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskRecord, MaskSample
from labelguard.core.spec import LabelSpec
from labelguard.core.values import violations
from labelguard.rules._masks import label_sample
from labelguard.rules.lg201 import VALUE_OUTSIDE_SPEC, image_finding, outside_spec
from labelguard.rules.lg202 import LOSSY
from labelguard.rules.lg203 import COLOR_MASK
from labelguard.rules.lg204 import NON_INTEGER, not_whole_numbers
from labelguard.rules.lg205 import EMPTY_MASK, only_background
from labelguard.rules.lg206 import GEOMETRY
from labelguard.rules.lg207 import LAYOUT
from labelguard.rules.lg208 import ONE_BASED
from labelguard.rules.lg209 import SCALED_BINARY

__all__ = [
    "COLOR_MASK", "EMPTY_MASK", "GEOMETRY", "LAYOUT", "LOSSY", "NON_INTEGER", "ONE_BASED",
    "SCALED_BINARY", "VALUE_OUTSIDE_SPEC", "value_findings",
]


def value_findings(
    display: str | None,
    array: np.ndarray,
    spec: LabelSpec,
    *,
    value_name: str = "label value",
) -> tuple[list, np.ndarray, np.ndarray]:
    """LG204/LG201/LG205 on an array of labels (a tensor's, say); also returns its histogram.

    Float arrays holding only whole numbers are checked as integers; otherwise LG204 names
    the non-integer and non-finite pixel counts and the histogram is of the whole numbers.
    TypeError when the dtype holds no labels.
    """
    sample = label_sample(MaskSample(display, MaskRecord(array, "array", None, str(array.dtype))), array)
    values, counts = sample.values, sample.counts
    assert values is not None and counts is not None  # not a user mistake: label_sample sets both (or raises)
    findings = list(not_whole_numbers(sample, spec))
    if sample.looks_like_image:
        findings.append(image_finding(sample, spec))
    else:
        bad = violations(values, counts, spec)
        if bad is not None:
            findings.append(outside_spec(display, bad, spec, value_name))
    findings.extend(only_background(sample, spec))
    return findings, values, counts
