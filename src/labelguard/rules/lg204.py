"""LG204 mask-values-not-integer: fractions and NaN/Inf where class numbers belong."""

from __future__ import annotations

import numpy as np

from labelguard.core.findings import Finding
from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.text import plural, verb

NON_INTEGER = define(
    "LG204", "mask-values-not-integer", "error",
    summary="non-integer or non-finite mask values (2.5, NaN)",
    why="""
Targets are cast with .long(): 0.5 becomes 0 and NaN becomes a huge negative number, which is
the out-of-range assert or a silently wrong class.""",
    bad="a float32 .npy mask holding 0.0, 0.25, 0.5, 1.0 after bilinear resizing",
    good="a uint8 mask holding 0 and 1",
    fix="Resize masks with nearest-neighbour interpolation and store them as integers.",
)

EXAMPLES = (
    Example(True, "a float mask holding 0.5",
            lambda: {"masks/a.npy": np.array([[0, 0.5], [1, 1]], np.float32)}),
    Example(False, "a float mask of whole numbers",
            lambda: {"masks/a.npy": np.array([[0, 1], [1, 1]], np.float32)}),
)


@rule(NON_INTEGER, "mask", EXAMPLES, only_bad_values=True)
def not_whole_numbers(sample: MaskSample, spec):
    fractional, non_finite, beyond = sample.non_integer, sample.non_finite, sample.beyond_int64
    if not (fractional or non_finite or beyond) or sample.looks_like_image:
        return ()  # an image's fractions are LG201's "an image, not a label"
    examples = sample.fraction_examples
    parts = []
    if fractional:
        parts.append(f"{plural(fractional, 'pixel')} {verb(fractional, 'holds')} non-integer values"
                     + (f" (e.g. {', '.join(f'{v:g}' for v in examples)})" if examples else ""))
    if non_finite:
        parts.append(f"{plural(non_finite, 'pixel')} {verb(non_finite, 'is')} NaN/Inf")
    if beyond:
        parts.append(f"{plural(beyond, 'pixel')} {verb(beyond, 'holds')} values too large for any integer "
                     f"label ({', '.join(f'{v:g}' for v in sample.beyond_examples)})")
    return (NON_INTEGER.finding(
        sample.display,
        "; ".join(parts) + f"; a label array must hold whole class numbers (dtype {sample.record.array.dtype})",
        non_integer_pixels=fractional,
        non_finite_pixels=non_finite,
        beyond_int64_pixels=beyond,
        examples=examples + sample.beyond_examples,
    ),)


def ids_not_whole(display: str | None, dtype: str, fractional: int, non_finite: int, examples: list) -> Finding:
    """LG204 for the class ids of a float target (a tensor of the guard) that are not whole
    numbers or not finite."""
    parts = []
    if fractional:
        parts.append(f"{plural(fractional, 'class id')} not whole (e.g. {', '.join(f'{v:g}' for v in examples)})")
    if non_finite:
        parts.append(f"{non_finite} NaN/Inf")
    return NON_INTEGER.finding(
        display,
        f"{' and '.join(parts)} in a {dtype} target; class ids must be whole numbers",
        hint="Return integer class ids (int64); a NaN id usually comes from a failed lookup or a division in the "
        "dataset code.",
        non_integer=fractional, non_finite=non_finite, examples=examples,
    )


def cast_from_nan(display: str | None, count: int, lowest: int, dtype: str) -> Finding:
    """LG204 for the ``count`` values of a target tensor that hold ``lowest``, what NaN and
    +-Inf become when cast to a signed integer (``.long()``: -9223372036854775808)."""
    return NON_INTEGER.finding(
        display,
        f"{plural(count, 'target value')} {verb(count, 'is')} {lowest}, what NaN and +-Inf become "
        f"when cast to {dtype} (.long()/.int()): the target was NaN before the cast",
        hint="Find where the dataset produces NaN in the label (a failed lookup, a division, "
        "an interpolated float mask) and keep float targets checked before the cast: "
        "guard() the dataset that returns them.",
        non_finite=count, cast_from_nan=True, examples=[],
    )
