"""LG501: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

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
