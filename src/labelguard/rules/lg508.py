"""LG508: the definition of the code, and the findings labelguard.torch reports with it from
what it measured of the loss, gradient norm and activations of training."""

from __future__ import annotations

from typing import Any, Mapping

from labelguard.core.findings import Finding
from labelguard.core.registry import define

DIVERGING = define(
    "LG508", "training-diverging", "warning",
    summary="loss, gradient norm or activations grow by orders of magnitude within a few steps, "
    "before any NaN; names the first module whose output exploded",
    why="""
A NaN rarely comes from nowhere: weights that a too large step pushed out grow activations
step after step until one overflows float32 (3.4e38) and the next operation makes NaN. By then
the module where it overflows only shows the end of it; the growth started earlier, upstream.""",
    bad="optim.Adam(model.parameters(), lr=1e-2, betas=(0.5, 0.999))  # no gradient clipping",
    good="""optim.Adam(model.parameters(), lr=1e-4)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # between backward() and step()""",
    fix="Lower the learning rate (10x), clip gradients (torch.nn.utils.clip_grad_norm_), use "
    "a warm-up; check the optimizer's betas/eps against the defaults.",
    scope="runtime",
)


def lower_the_step(lr: Any, optimizer: str, unusual: Mapping[str, tuple[Any, Any]]) -> str:
    """The advice for training that grows: a smaller learning rate (``lr``, the first param
    group's, None when there is none), gradient clipping, and the settings of ``optimizer`` (its
    class name) that differ from its defaults (``unusual``: name -> (value, default))."""
    lower = f" (lr={lr / 10:g} instead of {lr:g})" if isinstance(lr, (int, float)) else ""
    hint = (f"Lower the learning rate{lower}, and clip gradients: "
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0) between loss.backward() and "
            "optimizer.step(); a warm-up of the learning rate helps too")
    if unusual:
        differs = "; ".join(f"{k}={v} differs from {optimizer}'s default {d}" for k, (v, d) in unusual.items())
        hint += f". {differs}, a safer start"
    return hint + ". Left alone, such growth overflows into NaN within steps."


def training_diverging(window: str, grew: list[str], optimizer: str, hint: str, *, step: int,
                       module: str | None, growth: dict[str, float | None]) -> Finding:
    """LG508 for training whose signals grew in the ``window`` of steps ("steps 401-416"):
    ``grew`` says what grew and how much (the first module to grow, the gradient norm, the
    loss), ``optimizer`` gives its settings ("" without one), ``hint`` the advice
    (:func:`lower_the_step`); ``step`` and ``module`` name where the growth shows first,
    ``growth`` each signal's ratio to its baseline."""
    message = f"training is diverging ({window}): {'; '.join(grew)}"
    if optimizer:
        message += f". Optimizer {optimizer}"
    return DIVERGING.finding(None, message, hint=hint, step=step, module=module, growth=growth,
                             optimizer=optimizer or None)
