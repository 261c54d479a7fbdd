"""LG509: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

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
