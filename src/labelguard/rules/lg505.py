"""LG505: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

TARGET_DTYPE = define(
    "LG505", "target-dtype-or-shape", "error",
    summary="a target's dtype or shape is wrong for its loss",
    why="""
cross_entropy treats float targets as class probabilities (shape must match the input), and
integer targets must be int64; a mask of shape (N, 1, H, W) fails against logits (N, C, H, W).""",
    bad="F.cross_entropy(logits, mask.float())",
    good="F.cross_entropy(logits, mask.long().squeeze(1))",
    fix="Convert class-index targets with .long() and give them the input's shape without the class axis.",
    scope="runtime",
    fix_safety="display-only",
)
