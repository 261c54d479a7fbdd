"""Tensor helpers shared by the runtime checks: finiteness without its cost, statistics."""

from __future__ import annotations

from typing import Any

import torch

_INF = float("inf")


def finite_mask(tensor: torch.Tensor) -> torch.Tensor:
    """``torch.isfinite`` without its cost: on CPU builds isfinite/isinf run far slower than
    a comparison (tens of ms on a 300k-element tensor); NaN compares False, so it is out too."""
    return tensor.abs() < _INF


def all_finite(tensor: torch.Tensor) -> bool:
    """True when no element is NaN/Inf: one reduction (a float32 sum, which NaN and Inf
    poison) and one sync; only a sum that overflows is confirmed element by element."""
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return True
    if bool(torch.isfinite(torch.sum(tensor, dtype=None if tensor.is_complex() else torch.float32))):
        return True
    return bool(finite_mask(tensor).all())


def tensor_stats(tensor: torch.Tensor) -> dict[str, Any]:
    """Shape, dtype, NaN/Inf counts and the range of the finite values of a tensor."""
    stats: dict[str, Any] = {
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).replace("torch.", ""),
        "numel": int(tensor.numel()),
    }
    data = tensor.detach().float()
    stats["nan"] = int(torch.isnan(data).sum())
    stats["posinf"] = int((data == _INF).sum())
    stats["neginf"] = int((data == -_INF).sum())
    values = data[finite_mask(data)]
    if values.numel():
        stats.update(min=float(values.min()), max=float(values.max()), mean=float(values.mean()))
    else:
        stats.update(min=float("nan"), max=float("nan"), mean=float("nan"))
    return stats


def module_label(name: str, module: Any) -> str:
    """A module as messages name it: ``'encoder.conv1' (Conv2d)``, or the model itself."""
    return f"'{name}' ({type(module).__name__})" if name else f"the model ({type(module).__name__})"


def invalid_targets(target: torch.Tensor, classes: int, ignore: int | None) -> torch.Tensor:
    """A boolean tensor, True where ``target`` is no class index of ``[0, classes)`` and not
    ``ignore``: elementwise operations on the target's device, no sync. Fractional and NaN
    values of a float target are invalid."""
    wide = target.long() if target.dtype == torch.bool else target
    bad = (wide < 0) | (wide >= classes)
    if wide.is_floating_point():
        bad |= wide != wide.floor()  # NaN compares unequal to anything: caught too
    if ignore is not None:
        bad &= wide != ignore
    return bad
