"""LG505: the definition of the code, and the findings labelguard.torch reports with it from
what it found of a target and the loss it feeds."""

from __future__ import annotations

from labelguard.core.findings import Finding
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


def no_checkable_target(reason: str) -> Finding:
    """LG505 for a sample with no checkable target where the selector points (``reason`` says
    why: a missing key, a target of None, a sparse target too large to densify)."""
    return TARGET_DTYPE.finding(None, reason)


def target_holds_no_numbers(display: str | None, dtype: str) -> Finding:
    """LG505 for a target tensor whose ``dtype`` holds no real numbers (complex, strings)."""
    return TARGET_DTYPE.finding(display, f"target dtype {dtype} holds no real numbers", dtype=dtype)


def target_not_int64_for_loss(display: str | None, dtype: str, loss: str, *, quantized: bool,
                              floating: bool) -> Finding:
    """LG505 for a target tensor of ``dtype`` (not int64) declared to feed the class-index loss
    ``loss``; ``quantized`` and ``floating`` say what kind of dtype it is."""
    if quantized:
        why = f"{loss} takes no quantized tensor"
    elif floating:
        why = f"{loss} reads float targets as class probabilities"
    else:
        why = f"{loss} needs int64 class indices"
    return TARGET_DTYPE.finding(
        display,
        f"target dtype {dtype} for {loss}: {why} (\"expected target dtype to be Long\")",
        hint="Return class-index targets as int64: torch.as_tensor(mask, dtype=torch.long).",
        dtype=dtype,
    )


def target_not_float_for_bce(display: str | None, dtype: str, loss: str) -> Finding:
    """LG505 for a target tensor of ``dtype`` (not a float one) declared to feed the BCE loss ``loss``."""
    return TARGET_DTYPE.finding(
        display,
        f"target dtype {dtype} for {loss}: BCE losses need float targets (\"Found dtype Long but expected Float\")",
        hint="Return the target as float: torch.as_tensor(mask, dtype=torch.float32).",
        dtype=dtype,
    )


def float_target_shape_differs(where: str | None, loss: str, dtype: str, shape: tuple[int, ...],
                               input_shape: tuple[int, ...]) -> Finding:
    """LG505 for a float target of a cross_entropy/nll_loss call whose ``shape`` is not the
    input's: float targets are class probabilities. ``dtype`` as torch names it ("torch.float32")."""
    return TARGET_DTYPE.finding(
        where,
        f"{loss} got a {dtype.removeprefix('torch.')} target of shape {shape} for an input of shape "
        f"{input_shape}: float targets are read as class probabilities and must have the input's shape",
        hint="Pass class indices as int64: target.long().",
        dtype=dtype,
    )


def index_target_shape_differs(where: str | None, loss: str, shape: tuple[int, ...], input_shape: tuple[int, ...],
                               expected: tuple[int, ...], squeezable: bool) -> Finding:
    """LG505 for a class-index target of a cross_entropy/nll_loss call whose ``shape`` is not
    ``expected`` (the input's without the class axis); ``squeezable`` when it has an extra axis of 1
    where the input has its classes."""
    return TARGET_DTYPE.finding(
        where,
        f"{loss} target shape {shape} does not fit input shape {input_shape}: expected {expected}",
        hint="Drop the channel axis of the target: target.squeeze(1)." if squeezable
        else "Give the target the input's shape without the class axis.",
        shape=list(shape), expected=list(expected),
    )


def index_target_not_int64(where: str | None, loss: str, dtype: str) -> Finding:
    """LG505 for a class-index target of a cross_entropy/nll_loss call whose ``dtype`` (as torch
    names it: "torch.int32") is not int64."""
    return TARGET_DTYPE.finding(
        where,
        f"{loss} target dtype {dtype.removeprefix('torch.')}: class indices must be int64 "
        "(\"expected target dtype to be Long\")",
        hint="Convert the target with .long().", dtype=dtype,
    )


def bce_target_not_float(where: str | None, loss: str, dtype: str) -> Finding:
    """LG505 for the target of a BCE loss call whose ``dtype`` (as torch names it: "torch.int64")
    is not a float one."""
    return TARGET_DTYPE.finding(
        where,
        f"{loss} target dtype {dtype.removeprefix('torch.')}: BCE losses need a float target "
        "(\"Found dtype Long but expected Float\")",
        hint="Convert the target with .float().", dtype=dtype,
    )


def bce_target_shape_differs(where: str | None, loss: str, shape: tuple[int, ...],
                             input_shape: tuple[int, ...]) -> Finding:
    """LG505 for the target of a BCE loss call whose ``shape`` differs from the input's."""
    return TARGET_DTYPE.finding(
        where,
        f"{loss} target shape {shape} differs from input shape {input_shape}",
        hint="Give the target the input's shape (e.g. target.unsqueeze(1) for a (N, 1, H, W) output).",
        shape=list(shape), expected=list(input_shape),
    )
