"""LG503: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

HEAD_MISMATCH = define(
    "LG503", "head-size-mismatch", "error",
    summary="the model's number of output classes differs from the spec or the targets",
    why="""
A head with 2 outputs trained on labels {0, 1, 2} indexes past the logits: the cross-entropy
device-side assert.""",
    bad="SwinUnet(num_classes=2) trained on masks holding 0, 1 and 2",
    good="SwinUnet(num_classes=3)",
    fix="Make the head's out_features/out_channels equal to num_classes (background included).",
    scope="runtime",
    fix_safety="display-only",
)
