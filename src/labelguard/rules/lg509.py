"""LG509: the definition of the code, and the findings labelguard.torch reports with it from
what it measured of a sample's input."""

from __future__ import annotations

from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.text import noun, verb

INPUT_INVALID = define(
    "LG509", "input-non-finite-or-out-of-range", "error",
    summary="a sample's input (not its target) holds NaN/Inf or is outside the range the model "
    "was told to expect",
    why="""
One NaN pixel turns every activation it reaches into NaN, then the loss and every weight
after the next step: the run fails at a later batch with nothing pointing at the sample.
Values outside the range the model was trained on (0..255 fed where 0..1 is expected) give
no error at all, only a model that does not learn.""",
    bad="image = (image - image.mean()) / image.std()  # a constant slice: 0 / 0 = NaN",
    good="image = (image - image.mean()) / max(image.std(), 1e-8)",
    fix="Fix the sample (re-export the file) or the normalisation that divides by zero; "
    "declare the expected range with guard(..., input_range=(low, high)).",
    scope="runtime",
)


def input_non_finite(display: str | None, name: str, dtype: str, shape: tuple[int, ...], *, nan: int,
                     non_finite: int, numel: int) -> Finding:
    """LG509 for a sample's input (``name``: what the sample calls it; ``dtype``, ``shape``) that
    holds ``non_finite`` NaN/Inf values, ``nan`` of them NaN, among ``numel``."""
    return INPUT_INVALID.finding(
        display,
        f"the input ({name}, {dtype} {shape}) holds {nan:,} NaN and {non_finite - nan:,} Inf of {numel:,} values; the "
        "model turns them into NaN activations, then a NaN loss and NaN weights",
        hint="Find where the sample gets NaN/Inf: a corrupt file, or a normalisation "
        "that divides by zero (std of a constant image); re-export the file or add an "
        "epsilon to the divisor.",
        non_finite=non_finite, nan=nan, inf=non_finite - nan, numel=numel,
    )


def input_outside_range(display: str | None, name: str, dtype: str, shape: tuple[int, ...], *, smallest: float,
                        largest: float, outside: int, numel: int, expected: tuple[float, float]) -> Finding:
    """LG509 for a sample's input (as for :func:`input_non_finite`) that ranges over
    [``smallest``, ``largest``], ``outside`` of its ``numel`` values outside the declared
    ``expected`` range (low, high)."""
    low, high = expected
    return INPUT_INVALID.finding(
        display,
        f"the input ({name}, {dtype} {shape}) ranges over [{smallest:g}, {largest:g}]; {outside:,} of "
        f"{numel:,} {noun(numel, 'value')} {verb(outside, 'is')} outside the declared input_range [{low:g}, {high:g}]",
        hint="Scale the input as the model expects (images read as 0..255 where 0..1 is "
        "expected: divide by 255), or declare the range the data really has.",
        min=smallest, max=largest, outside=outside, numel=numel, expected=[low, high],
    )
