"""LG504: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

from labelguard.core.registry import define

FROZEN_IN_OPTIMIZER = define(
    "LG504", "frozen-parameters-optimised", "warning",
    summary="parameters with requires_grad=False are handed to the optimizer (or trainable ones are missing)",
    why="""
A parameter with requires_grad=False gets no gradient, and optimizers skip a parameter whose
.grad is None: it moves only when a gradient tensor is left on it (frozen after a step with
zero_grad(set_to_none=False), or a gradient set by hand), and then weight decay and momentum
move it. More often the finding says the setup is not what it seems: layers meant to be fixed
that something else unfreezes later, or trainable parameters that no param group holds.""",
    bad="optim.Adam(model.parameters())  # model has frozen MeanShift layers",
    good="optim.Adam(filter(lambda p: p.requires_grad, model.parameters()))",
    fix="Build the optimizer over the trainable parameters only.",
    scope="runtime",
    fix_safety="display-only",
)
