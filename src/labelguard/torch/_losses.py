"""checked(loss_fn): the loss call that raises a LabelError instead of a device-side assert.

Cost on a GPU, per call: a handful of elementwise ops and ONE reduction over the target
(cross_entropy / nll_loss) or over input and target together (BCE losses), read back with
ONE device-to-host sync. Only when that single flag says something is wrong does the
wrapper copy the tensors to the CPU to name the values. Shape and dtype checks read
metadata only. Switch it off with ``checked(..., enabled=False)`` or by setting
``.enabled = False`` on the wrapper (e.g. after the first epoch went through).

``checked(..., on_device="mask")`` reads nothing back in the call: class-index targets go
through :class:`labelguard.torch.TargetMonitor`, which replaces invalid values with the
loss's ignore_index on the device and reports them one call later (or at ``.report()``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import torch
import torch.nn.functional as F
from torch import nn

from labelguard.rules.lg501 import bce_target_outside_unit_range, logits_given_to_bce
from labelguard.rules.lg502 import bce_input_non_finite, loss_target_non_finite
from labelguard.rules.lg503 import head_mismatch_of_loss
from labelguard.rules.lg505 import (
    bce_target_not_float,
    bce_target_shape_differs,
    float_target_shape_differs,
    index_target_not_int64,
    index_target_shape_differs,
)
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec
from labelguard.errors import SpecError, UnsupportedError, UsageError
from labelguard.torch._batch import BatchSamples, batch_item
from labelguard.torch._targets import LossMode, TargetRules, _warn_once, errors_of, sample_error
from labelguard.torch._tensors import all_finite, finite_mask, invalid_targets, loss_legal_values, tensor_stats

_CE_DEFAULT_IGNORE = -100
ON_DEVICE = ("check", "mask")

_MODULES: dict[type, tuple[LossMode, bool]] = {
    nn.CrossEntropyLoss: (LossMode.INDEX, False),
    nn.NLLLoss: (LossMode.INDEX, False),
    nn.BCELoss: (LossMode.BINARY, False),
    nn.BCEWithLogitsLoss: (LossMode.BINARY, True),
}
_FUNCTIONS: dict[Callable, tuple[LossMode, bool]] = {
    F.cross_entropy: (LossMode.INDEX, False),
    F.nll_loss: (LossMode.INDEX, False),
    F.binary_cross_entropy: (LossMode.BINARY, False),
    F.binary_cross_entropy_with_logits: (LossMode.BINARY, True),
}
_NAMES: dict[str, tuple[str, LossMode, bool]] = {
    "cross_entropy": ("cross_entropy", LossMode.INDEX, False),
    "ce": ("cross_entropy", LossMode.INDEX, False),
    "nll": ("nll_loss", LossMode.INDEX, False),
    "nll_loss": ("nll_loss", LossMode.INDEX, False),
    "one_hot": ("one_hot", LossMode.ONE_HOT, False),
    "dice": ("Dice loss", LossMode.ONE_HOT, False),
    "bce": ("binary_cross_entropy", LossMode.BINARY, False),
    "binary_cross_entropy": ("binary_cross_entropy", LossMode.BINARY, False),
    "bce_with_logits": ("binary_cross_entropy_with_logits", LossMode.BINARY, True),
    "binary_cross_entropy_with_logits": ("binary_cross_entropy_with_logits", LossMode.BINARY, True),
}


@dataclass(frozen=True)
class LossInfo:
    """What labelguard knows about a loss: its kind, name and the settings that matter."""

    name: str
    mode: LossMode | None  # None: a loss labelguard does not know (a custom Dice...)
    logits: bool = False  # BCEWithLogits: the input is logits, not probabilities
    ignore_index: int | None = None
    weight: torch.Tensor | None = field(default=None, compare=False)

    @classmethod
    def of(cls, loss: Any, *, strict: bool = True) -> "LossInfo":
        """Describe ``loss`` (a loss module, an ``F.*`` function or partial, or a name).

        Raises UnsupportedError (a TypeError) for an unknown loss when ``strict``, and for
        an unknown loss name in any case.
        """
        if isinstance(loss, str):
            key = loss.strip().lower()
            if key not in _NAMES:
                raise UnsupportedError(f"unknown loss name {loss!r}; known: {', '.join(sorted(_NAMES))}")
            name, mode, logits = _NAMES[key]
            return cls(name, mode, logits, _CE_DEFAULT_IGNORE if mode is LossMode.INDEX else None)
        if isinstance(loss, CheckedLoss):
            return loss.info
        keywords: dict[str, Any] = {}
        func = loss
        while isinstance(func, functools.partial):
            keywords = {**func.keywords, **keywords}
            func = func.func
        for kind, (mode, logits) in _MODULES.items():
            if isinstance(loss, kind):
                ignore = getattr(loss, "ignore_index", None) if mode is LossMode.INDEX else None
                return cls(type(loss).__name__, mode, logits, ignore, getattr(loss, "weight", None))
        if func in _FUNCTIONS:
            mode, logits = _FUNCTIONS[func]
            ignore = keywords.get("ignore_index", _CE_DEFAULT_IGNORE) if mode is LossMode.INDEX else None
            return cls(f"F.{func.__name__}", mode, logits, ignore, keywords.get("weight"))
        if strict:
            raise UnsupportedError(
                f"labelguard does not know the loss {type(loss).__name__}: it knows "
                "CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss and their F.* functions; "
                "checked(loss, num_classes=N) checks the targets of any other loss (a Dice "
                "loss) as class indices"
            )
        ignore = getattr(loss, "ignore_index", None)
        name = type(loss).__name__ if isinstance(loss, nn.Module) else getattr(func, "__name__", repr(loss))
        return cls(name, None, False, ignore if isinstance(ignore, int) else None,
                   getattr(loss, "weight", None))


def class_axis_size(input: torch.Tensor) -> int:
    """The number of classes of a cross_entropy input: (N, C, ...) or (C,)."""
    return int(input.shape[1] if input.dim() >= 2 else input.shape[0])


def loss_findings(
    info: LossInfo,
    input: torch.Tensor,
    target: torch.Tensor,
    *,
    num_classes: int | None = None,
    ignore_index: int | None = None,
    where: str | None = None,
    check_values: bool = True,
    clean_calls: int | None = None,
) -> list[Finding]:
    """Every finding about one loss call, errors first; one reduction and one sync when clean.

    ``check_values=False`` leaves out the target value checks of cross_entropy/nll_loss
    (preflight names those against the model's head instead). ``clean_calls``: how many
    earlier calls of this loss passed the checks, when known: the evidence a hint about a
    non-finite input may rest on. A loss labelguard does not know (``info.mode`` None) is
    checked only when ``num_classes`` is given: its target as class indices.
    """
    ignore = info.ignore_index if ignore_index is None else ignore_index
    if info.mode is LossMode.BINARY:
        return _binary_call_findings(info, input, target, where, clean_calls)
    if info.mode is LossMode.INDEX:
        return _index_call_findings(info, input, target, num_classes, ignore, where, check_values)
    if info.mode is None and num_classes is not None:
        return _told_call_findings(info, input, target, num_classes, ignore, where)
    return []


def _index_call_findings(info, input, target, num_classes, ignore, where, check_values=True) -> list[Finding]:
    classes = class_axis_size(input)
    findings = []
    if num_classes is not None and classes != num_classes:
        findings.append(head_mismatch_of_loss(where, info.name, classes, num_classes, tuple(input.shape)))
    if target.is_floating_point():
        if target.shape == input.shape:
            return findings  # class probabilities (label smoothing, mixup): any value is legal
        findings.append(float_target_shape_differs(where, info.name, str(target.dtype), tuple(target.shape),
                                                   tuple(input.shape)))
        return findings
    expected = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()
    if tuple(target.shape) != expected:
        squeezable = target.dim() == input.dim() and target.shape[1] == 1
        findings.append(index_target_shape_differs(where, info.name, tuple(target.shape), tuple(input.shape),
                                                   expected, squeezable))
    if target.dtype != torch.long:
        findings.append(index_target_not_int64(where, info.name, str(target.dtype)))
    if not check_values:
        return sorted(findings, key=lambda f: -f.severity)
    findings.extend(_target_value_findings(target, classes, ignore, where))
    return sorted(findings, key=lambda f: -f.severity)


def _target_value_findings(target: torch.Tensor, classes: int, ignore: int | None,
                           where: str | None) -> list[Finding]:
    """The value findings of a class-index target; one reduction and one sync when clean."""
    if not bool(invalid_targets(target, loss_legal_values(classes, ignore)).any()):
        return []
    wide = target.long() if target.dtype == torch.bool else target
    spec = LabelSpec(num_classes=classes, ignore=() if ignore is None else (ignore,))
    return TargetRules(spec, LossMode.INDEX).check(where, _cpu_array(wide))


def _cpu_array(tensor: torch.Tensor):
    tensor = tensor.detach().cpu()
    return (tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor).numpy()


def _told_call_findings(info, input, target, num_classes, ignore, where) -> list[Finding]:
    """A loss labelguard does not know (a Dice loss...), told num_classes: its target as class
    indices, and the input's class axis where the shapes show it ((N, C, ...) for a target
    (N, ...)). A float target of the input's shape is soft labels: only its finiteness counts."""
    findings = _told_head_findings(info, input, target, num_classes, where)
    if target.is_floating_point() and target.shape == input.shape:
        if not all_finite(target):
            findings.append(loss_target_non_finite(where, info.name, tensor_stats(target)))
        return findings
    findings.extend(_target_value_findings(target, num_classes, ignore, where))
    return sorted(findings, key=lambda f: -f.severity)


def _told_head_findings(info, input, target, num_classes, where) -> list[Finding]:
    """LG503 for a loss labelguard does not know, where the shapes show the class axis:
    input (N, C, ...) for a target (N, ...)."""
    shapes_show_classes = (input.dim() == target.dim() + 1 and input.shape[:1] == target.shape[:1]
                           and input.shape[2:] == target.shape[1:])
    if not shapes_show_classes or input.shape[1] == num_classes:
        return []
    return [head_mismatch_of_loss(where, info.name, int(input.shape[1]), num_classes, tuple(input.shape),
                                  tuple(target.shape))]


def _binary_call_findings(info, input, target, where, clean_calls=None) -> list[Finding]:
    findings = []
    if not target.is_floating_point():
        findings.append(bce_target_not_float(where, info.name, str(target.dtype)))
        target = target.float()
    if target.shape != input.shape:
        findings.append(bce_target_shape_differs(where, info.name, tuple(target.shape), tuple(input.shape)))
        return findings
    input_ok = finite_mask(input) if info.logits else (input >= 0) & (input <= 1)
    if bool((input_ok & (target >= 0) & (target <= 1)).all()):  # one reduction, one sync
        return findings
    findings.extend(_binary_details(info, input.detach().float().cpu(), target.detach().float().cpu(),
                                    where, clean_calls))
    return sorted(findings, key=lambda f: -f.severity)


def _binary_details(info, input, target, where, clean_calls=None) -> list[Finding]:
    findings = []
    stats = tensor_stats(input)
    if stats["nan"] or stats["posinf"] or stats["neginf"]:
        findings.append(bce_input_non_finite(where, info.name, stats, logits=info.logits, clean_calls=clean_calls))
    elif not info.logits and (stats["min"] < 0 or stats["max"] > 1):
        findings.append(logits_given_to_bce(where, info.name, stats))
    target_stats = tensor_stats(target)
    if target_stats["nan"] or target_stats["posinf"] or target_stats["neginf"]:
        findings.append(loss_target_non_finite(where, info.name, target_stats))
    elif target_stats["min"] < 0 or target_stats["max"] > 1:
        findings.append(bce_target_outside_unit_range(where, info.name, target_stats))
    return findings


class CheckedLoss(nn.Module):
    """A loss that checks its input and target before the loss kernel can assert.

    Built by :func:`checked`; calls the wrapped loss with the same arguments.
    """

    def __init__(
        self,
        loss_fn: Callable,
        num_classes: int | None = None,
        ignore_index: int | None = None,
        enabled: bool = True,
        on_device: str = "check",
        on_error: str = "raise",
    ) -> None:
        super().__init__()
        info = LossInfo.of(loss_fn, strict=num_classes is None)
        if info.mode is None and ignore_index is not None:
            info = LossInfo(info.name, None, False, ignore_index, info.weight)
        if ignore_index is not None and info.mode is LossMode.INDEX and info.ignore_index != ignore_index:
            if isinstance(loss_fn, nn.Module):
                raise SpecError(
                    f"ignore_index={ignore_index} given but {info.name} ignores "
                    f"{info.ignore_index}: build it with {info.name}(ignore_index={ignore_index}), "
                    "otherwise those targets trigger the device-side assert"
                )
            info = LossInfo(info.name, info.mode, info.logits, ignore_index, info.weight)
        self.loss_fn = loss_fn
        self.info = info
        self.num_classes = num_classes
        self.enabled = enabled
        self.calls = 0
        self.clean_calls = 0  # calls checked and found clean: the evidence hints rest on
        self.monitor = self._monitor(on_device, on_error)

    def _monitor(self, on_device: str, on_error: str):
        """The TargetMonitor of on_device="mask", None for "check"."""
        from labelguard.torch._safe import TargetMonitor

        if on_device not in ON_DEVICE:
            raise UsageError(f"on_device must be one of {', '.join(ON_DEVICE)}, got {on_device!r}")
        if on_device == "check":
            if on_error != "raise":
                raise UsageError(f"on_error={on_error!r} is for on_device='mask', whose report comes a call "
                                 "later; on_device='check' raises before the loss runs")
            return None
        if self.info.mode not in (LossMode.INDEX, None) or self.info.ignore_index is None:
            raise UsageError(
                f"on_device='mask' replaces bad class indices with the loss's ignore_index; "
                f"{self.info.name} " + ("takes no class indices" if self.info.mode is not None
                                        else "was given no ignore_index: pass ignore_index=...")
            )
        return TargetMonitor(self.num_classes, self.info.ignore_index, on_error=on_error)

    def report(self) -> list:
        """With on_device="mask": read the targets still on their way and return every
        SampleError found (raising the first new one when on_error="raise")."""
        return self.monitor.report() if self.monitor is not None else []

    def forward(self, input: torch.Tensor, target: torch.Tensor, *args: Any, **kwargs: Any):
        self.calls += 1
        samples = kwargs.pop("samples", None)  # who the batch's items are, named in an error
        if self.enabled and self.monitor is not None:
            return self._masked(input, target, samples, *args, **kwargs)
        if self.enabled:
            ignore = kwargs.get("ignore_index") if not isinstance(self.loss_fn, nn.Module) else None
            where = f"{self.info.name} call {self.calls}"
            errors = errors_of(loss_findings(
                self.info, input, target, num_classes=self.num_classes,
                ignore_index=ignore, where=None, clean_calls=self.clean_calls,
            ))
            if errors:
                index, source = None, None
                batch = BatchSamples.of(samples)
                if batch is not None:
                    item = self._first_bad_item(input, target, ignore)
                    index, source = batch.sample(item)
                    where += f", sample {index}" if index is not None else f", batch of samples {batch.describe()}"
                raise sample_error(errors[0], where=where, index=index, source=source,
                                   expected=self._expected(input))
            self.clean_calls += 1
        return self.loss_fn(input, target, *args, **kwargs)

    def _first_bad_item(self, input: torch.Tensor, target: torch.Tensor, ignore: int | None) -> int | None:
        """The batch item of the first invalid class index (None when the error is about
        something else: the input, a binary target, a dtype)."""
        if self.info.mode not in (LossMode.INDEX, None) or target.dtype == torch.bool \
                or (target.is_floating_point() and target.shape == input.shape):
            return None
        classes = self.num_classes if self.num_classes is not None else class_axis_size(input)
        ignore = self.info.ignore_index if ignore is None else ignore
        bad = invalid_targets(target, loss_legal_values(classes, ignore)).reshape(-1).nonzero()
        return batch_item(int(bad[0]), tuple(target.shape)) if len(bad) else None

    def _masked(self, input: torch.Tensor, target: torch.Tensor, samples: Any, *args: Any, **kwargs: Any):
        """The call without a sync: the checks that read metadata only (head size, dtype,
        shape), then the target masked on its device."""
        if target.is_floating_point() and target.shape == input.shape:
            return self.loss_fn(input, target, *args, **kwargs)  # class probabilities
        classes: int | None
        if self.info.mode is LossMode.INDEX:
            classes = class_axis_size(input)
            findings = _index_call_findings(self.info, input, target, self.num_classes,
                                            self.info.ignore_index, None, check_values=False)
        else:
            classes = self.num_classes
            findings = _told_head_findings(self.info, input, target, classes, None)
        errors = errors_of(findings)
        if errors:
            raise sample_error(errors[0], where=f"{self.info.name} call {self.calls}", index=None,
                               source=None, expected=self._expected(input))
        masked = self.monitor(target, classes, self.info.ignore_index, samples=samples)
        return self.loss_fn(input, masked, *args, **kwargs)

    def _expected(self, input: torch.Tensor) -> str:
        if self.info.mode is LossMode.BINARY:
            return "input and target in [0, 1]" if not self.info.logits else "finite input, target in [0, 1]"
        ignore = () if self.info.ignore_index is None else (self.info.ignore_index,)
        if self.info.mode is None:
            return LabelSpec(num_classes=self.num_classes, ignore=ignore).describe()
        # A loss of class indices has an ignore_index (cross_entropy's default -100); a one-hot
        # loss (dice) has none.
        return LabelSpec(num_classes=class_axis_size(input), ignore=ignore).describe()

    def extra_repr(self) -> str:
        return f"enabled={self.enabled}" + (", on_device='mask'" if self.monitor is not None else "")


def checked(
    loss_fn: Callable,
    num_classes: int | None = None,
    ignore_index: int | None = None,
    *,
    enabled: bool = True,
    on_device: str = "check",
    on_error: str = "raise",
) -> CheckedLoss:
    """Wrap a loss so that bad inputs raise a LabelError naming the values, not an assert.

    Args:
        loss_fn: ``nn.CrossEntropyLoss``, ``nn.NLLLoss``, ``nn.BCELoss``,
            ``nn.BCEWithLogitsLoss``, or the ``F.*`` functions (also as ``functools.partial``);
            any other loss module or function (a Dice loss) when ``num_classes`` is given.
        num_classes: when given, the input's class axis must have this size (LG503). For a
            loss labelguard does not know, its targets are checked as class indices in
            ``[0, num_classes)`` (or ``ignore_index``), and the input's class axis where the
            shapes show it: input (N, C, ...) for a target (N, ...).
        ignore_index: the ignored target value; read from the loss object when it has one
            (a different value here is a SpecError: the loss would not ignore it).
        enabled: False to call the loss unchecked; ``.enabled`` switches it later.
        on_device: ``"check"`` (one reduction and one sync per call, an error before the
            kernel) or ``"mask"`` (no sync: invalid class indices become the loss's
            ignore_index on the device, reported one call later or at ``.report()``). In
            both modes, ``loss(input, target, samples=...)`` (the loader returned by
            ``record``, or the batch's dataset indices) has the error name the sample.
        on_error: with ``on_device="mask"``: ``"raise"`` the report or ``"warn"`` (log it).

    Checks: cross_entropy/nll_loss targets in ``[0, C)`` or ``ignore_index`` (LG201 for
    masks, LG102/LG103 for class ids), their dtype and shape (LG505), C against
    num_classes (LG503); BCE inputs in [0, 1] (LG501, hint: BCEWithLogitsLoss) and finite
    (LG502), BCE targets in [0, 1]. A target that held NaN before ``.long()`` shows
    -9223372036854775808 and is named as a cast NaN (LG204).

    Cost: one reduction and one device-to-host sync per call, none with
    ``on_device="mask"`` (see the module docs).

    Raises:
        labelguard.UnsupportedError: ``loss_fn`` is a loss labelguard does not know and
            ``num_classes`` is not given.
        labelguard.SpecError: ``ignore_index`` differs from the one the loss object ignores.
        labelguard.UsageError: an unknown ``on_device``, or ``"mask"`` for a loss that takes
            no class indices or has no ignore_index.

    Example::

        >>> import torch
        >>> loss = checked(torch.nn.CrossEntropyLoss())
        >>> loss(torch.zeros(2, 3), torch.tensor([0, 3]))
        Traceback (most recent call last):
        ...
        labelguard.torch.SampleError: LG102 CrossEntropyLoss call 1: class id 3 (1 of 2) is ...
    """
    return CheckedLoss(loss_fn, num_classes=num_classes, ignore_index=ignore_index, enabled=enabled,
                       on_device=on_device, on_error=on_error)


def rules_for(
    spec: LabelSpec | Mapping[str, Any] | None,
    num_classes: int | None,
    ignore_index: int | Sequence[int] | None,
    loss: Any = None,
    sizes: str | float | None = None,
) -> TargetRules:
    """Combine a spec, the keyword shortcuts and a declared loss into TargetRules."""
    if isinstance(spec, Mapping):
        spec = LabelSpec.from_mapping(spec, source="guard(spec=...)")
    spec = spec or LabelSpec()
    info = LossInfo.of(loss) if loss is not None else None
    if ignore_index is None and info is not None and info.ignore_index is not None and spec.ignore == ():
        ignore_index = info.ignore_index
    override = LabelSpec.from_source("guard arguments", num_classes=num_classes, ignore=_ignore_tuple(ignore_index),
                                     sizes=sizes)
    spec = spec.merged(override)
    mode = info.mode if info is not None else LossMode.INDEX
    if mode is not LossMode.BINARY and not spec.is_known:
        # Once a process: a script guarding its training and validation sets, or guarding again
        # after a change, learns nothing from the same sentence twice.
        _warn_once("no spec", "no num_classes or label spec given: only non-finite and non-integer targets "
                   "are checked; pass num_classes=... to check the values")
    return TargetRules(spec=spec, mode=mode, loss_name=info.name if info else None)


def _ignore_tuple(ignore_index: int | Sequence[int] | None) -> tuple[int, ...]:
    if ignore_index is None:
        return ()
    if isinstance(ignore_index, (int, np.integer)):
        return (int(ignore_index),)
    return tuple(int(v) for v in ignore_index)
