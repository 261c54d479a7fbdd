"""Tensor helpers shared by the runtime checks: finiteness without its cost, statistics."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from labelguard.core.spec import ValueSet, class_label_spec

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


@lru_cache(maxsize=64)
def loss_legal_values(classes: int, ignore: int | None) -> ValueSet:
    """What a loss of ``classes`` outputs and one ``ignore_index`` takes, as the spec's one
    legality function decides it (:meth:`LabelSpec.legal_values`); built once per pair (a
    checked loss asks on every call)."""
    legal = class_label_spec(classes, () if ignore is None else (ignore,)).legal_values()
    assert legal is not None  # not a user mistake: a spec with num_classes knows its values
    return legal


def invalid_targets(target: torch.Tensor, legal: ValueSet) -> torch.Tensor:
    """A boolean tensor, True where ``target`` holds a value not in ``legal`` (a spec's
    :meth:`~LabelSpec.legal_values`): elementwise operations on the target's device, no sync.
    Fractional and NaN values of a float target are invalid."""
    if target.is_floating_point():
        ok = (target >= legal.start) & (target < legal.stop)
        others = sorted(legal.others)
    else:
        # torch wraps a Python bound its dtype cannot hold (uint8 < 100_000_000 is all False,
        # int8 >= 300 compares with 44): the bounds are cut to the dtype's range first.
        low, high = (0, 1) if target.dtype == torch.bool else (torch.iinfo(target.dtype).min,
                                                             torch.iinfo(target.dtype).max)
        first, last = max(legal.start, low), min(legal.stop - 1, high)
        ok = (target >= first) & (target <= last) if first <= last else torch.zeros_like(target, dtype=torch.bool)
        others = sorted(v for v in legal.others if low <= v <= high)
    if others:
        ok |= torch.isin(target, torch.tensor(others, device=target.device, dtype=target.dtype))
    if target.is_floating_point():
        ok &= target == target.floor()  # NaN compares unequal: caught too
    return ~ok
