"""Tensor helpers shared by the runtime checks: finiteness without its cost, statistics."""

from __future__ import annotations

from typing import Any

import torch

from labelguard.core.spec import LabelSpec, ValueSet

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


def loss_legal_values(classes: int, ignore: int | None) -> ValueSet:
    """What a loss of ``classes`` outputs and one ``ignore_index`` takes, as the spec's one
    legality function decides it (:meth:`LabelSpec.legal_values`)."""
    legal = LabelSpec(num_classes=max(classes, 0), ignore=() if ignore is None else (ignore,)).legal_values()
    assert legal is not None  # not a user mistake: a spec with num_classes knows its values
    return legal


def invalid_targets(target: torch.Tensor, legal: ValueSet) -> torch.Tensor:
    """A boolean tensor, True where ``target`` holds a value not in ``legal`` (a spec's
    :meth:`~LabelSpec.legal_values`): elementwise operations on the target's device, no sync.
    Fractional and NaN values of a float target are invalid."""
    wide = target.long() if target.dtype == torch.bool else target
    bad = (wide < legal.start) | (wide >= legal.stop)
    if wide.is_floating_point():
        bad |= wide != wide.floor()  # NaN compares unequal to anything: caught too
    for value in legal.others:
        bad &= wide != value
    return bad
