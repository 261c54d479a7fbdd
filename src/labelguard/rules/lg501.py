"""LG501: the definition of the code, and the findings labelguard.torch reports with it from
what it measured in a loss call."""

from __future__ import annotations

from typing import Any, Mapping

from labelguard.core.findings import Finding
from labelguard.core.registry import define

LOSS_DOMAIN = define(
    "LG501", "loss-input-outside-domain", "error",
    summary="a loss input is outside the loss's domain (BCE input outside [0, 1])",
    why="""
BCELoss takes probabilities. Logits (no sigmoid) or NaN fail the
"input_val >= zero && input_val <= one" device-side assert on a GPU.""",
    bad="loss = nn.BCELoss()(model(x), y)  # the head has no sigmoid",
    good="loss = nn.BCEWithLogitsLoss()(model(x), y)",
    fix="Use BCEWithLogitsLoss on logits (numerically stable), or add a sigmoid before BCELoss.",
    scope="runtime",
    fix_safety="display-only",
)

# What a BCELoss input outside [0, 1] is on a GPU, the end of the messages about one.
BCE_DEVICE_ASSERT = (". On a GPU this is the device-side assert "
                     "\"input_val >= zero && input_val <= one\" in binary_cross_entropy")


def one_hot_ignore_present(display: str | None, present: list[int], loss_name: str | None) -> Finding:
    """LG501 for the ignore values ``present`` in the target of a one-hot/Dice loss
    (``loss_name``; None when it was not named), which cannot skip them."""
    loss = loss_name or "a one_hot/Dice loss"
    values = ", ".join(str(v) for v in present)
    return LOSS_DOMAIN.finding(
        display,
        f"one_hot with ignore value {values} present: {loss} turns targets into one-hot "
        "vectors and cannot skip ignore values (F.one_hot: \"Class values must be smaller than "
        "num_classes\"; on a GPU a device-side assert)",
        hint=f"Mask the ignore pixels before one_hot (target = target.clone(); "
        f"target[target == {present[0]}] = 0, and zero their loss weight), or use a Dice "
        "implementation with an ignore_index.",
        values=present,
    )


def logits_given_to_bce(where: str | None, loss: str, stats: Mapping[str, Any]) -> Finding:
    """LG501 for a BCELoss input (``stats``: its shape, dtype, NaN/Inf counts and the range of
    its finite values) outside [0, 1]: logits where probabilities belong."""
    return LOSS_DOMAIN.finding(
        where,
        f"{loss} input outside [0, 1]: min {stats['min']:.4g}, max {stats['max']:.4g}; "
        f"the model gives logits, not probabilities{BCE_DEVICE_ASSERT}",
        hint="Use BCEWithLogitsLoss on the logits (numerically stable), or add "
        "torch.sigmoid before BCELoss.",
        **stats,
    )


def bce_target_outside_unit_range(where: str | None, loss: str, stats: Mapping[str, Any]) -> Finding:
    """LG501 for the target of a BCE loss (``stats`` as for :func:`logits_given_to_bce`) outside
    [0, 1]; a largest value of 255 is a 0/255 mask."""
    return LOSS_DOMAIN.finding(
        where,
        f"{loss} target outside [0, 1]: min {stats['min']:g}, max {stats['max']:g}",
        hint="Binary masks stored as 0/255: divide by 255." if stats["max"] == 255
        else "Scale the targets into [0, 1].",
        **stats,
    )
