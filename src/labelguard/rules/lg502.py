"""LG502: the definition of the code, and the findings labelguard.torch reports with it from
what it measured in a loss call or during training."""

from __future__ import annotations

from typing import Any, Mapping

from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.text import plural
from labelguard.rules.lg501 import BCE_DEVICE_ASSERT

NON_FINITE = define(
    "LG502", "non-finite-values", "error",
    summary="non-finite values (NaN/Inf) in a model output, loss input or gradient",
    why="""
A NaN passes through every layer and the loss; in BCE it becomes the domain assert, in
argmax/indexing an out-of-range index. The first module that produced it is the place to look.""",
    bad="optimizer = Adam(model.parameters(), lr=1e-2)  # activations grow for epochs, then overflow",
    good="""optimizer = Adam(model.parameters(), lr=1e-4)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # before optimizer.step()""",
    fix="Find the first module that produced the value (labelguard.torch.trace_nonfinite) and "
    "whether training diverged before it (labelguard.torch.watch, LG508): lower the learning "
    "rate, clip gradients; check the data for NaN (guard, LG509) and the loss for log(0).",
    scope="runtime",
)


def non_finite_output_hint(clean_calls: int | None) -> str:
    """What a non-finite model output (a loss input) tells, by what was seen before it (``clean_calls``:
    how many earlier calls of the loss had finite input, None when not known): the causes it makes
    likely and the checks that tell them apart, never one it did not see."""
    if clean_calls == 0:
        return ("The output is non-finite at the first checked call: the batch or the initial "
                "weights hold NaN/Inf, or a module's forward makes it. guard(dataset, ...) checks "
                "every input for NaN (LG509); labelguard.torch.trace_nonfinite(model) names the "
                "first module that produced it")
    seen = (f"{plural(clean_calls, 'earlier call')} had finite input, so the output became "
            "non-finite during training" if clean_calls else "Where it came from")
    return (f"{seen}: the common cause is divergence (a learning rate too high for the optimizer, "
            "no gradient clipping), which labelguard.torch.watch(model, optimizer) shows as loss, "
            "gradient norm and activations growing before the NaN (LG508); "
            "labelguard.torch.trace_nonfinite(model) names the first module whose output exploded; "
            "audit_optimizer(model, optimizer) checks for frozen parameters in the optimizer and "
            "freezes that do nothing (LG504/LG507)")


def bce_input_non_finite(where: str | None, loss: str, stats: Mapping[str, Any], *, logits: bool,
                         clean_calls: int | None) -> Finding:
    """LG502 for the input of a BCE loss that holds NaN/Inf (``stats``: its shape, dtype, NaN/Inf
    counts and the range of its finite values); ``logits`` for BCEWithLogitsLoss, ``clean_calls``
    as for :func:`non_finite_output_hint`."""
    hint = non_finite_output_hint(clean_calls)
    hint += "." if logits else "; BCEWithLogitsLoss on logits is numerically safer than sigmoid + BCELoss."
    return NON_FINITE.finding(
        where,
        f"{loss} input holds {stats['nan']:,} NaN, {stats['posinf']:,} +Inf and "
        f"{stats['neginf']:,} -Inf of {stats['numel']:,} values{'' if logits else BCE_DEVICE_ASSERT}",
        hint=hint, **stats,
    )


def loss_target_non_finite(where: str | None, loss: str, stats: Mapping[str, Any]) -> Finding:
    """LG502 for a loss's float target that holds NaN/Inf (``stats`` as for :func:`bce_input_non_finite`)."""
    return NON_FINITE.finding(
        where,
        f"{loss} target holds {stats['nan']:,} NaN and {stats['posinf'] + stats['neginf']:,} Inf",
        hint="Find where the dataset produces NaN targets (normalisation, failed lookups).",
        **stats,
    )


def training_became_non_finite(what: str, step: int, before: str, optimizer: str, *, after_divergence: bool,
                               growth_hint: str | None) -> Finding:
    """LG502 for a signal of training (``what``: the loss, the gradient norm, a module's output)
    that labelguard.torch.watch saw become non-finite at ``step``; ``before`` says what the finite
    steps before it showed, ``optimizer`` its settings ("" without one). The hint follows that
    story: the growth reported before it (``after_divergence``) ended in an overflow, the steps
    before it grew (``growth_hint``: LG508's advice; None when they did not), or no growth at all."""
    if after_divergence:
        hint = ("The growth reported before it (LG508) ended in an overflow: lower the learning "
                "rate, clip gradients; trace_nonfinite(model) names where it overflows.")
    elif growth_hint is not None:
        hint = growth_hint
    else:
        hint = ("The steps before it show no growth, so this is not a slow divergence: look "
                "for a NaN/Inf in the batch (guard(dataset, ...) checks inputs, LG509), an "
                "unsafe operation (log(0), division by a zero count, float16 overflow; "
                "trace_nonfinite(model) names the module), or a single huge gradient "
                "(clip gradients).")
    message = f"{what} became non-finite at step {step}; {before}"
    if optimizer:
        message += f". Optimizer {optimizer}"
    return NON_FINITE.finding(None, message, hint=hint, step=step, signal=what)
