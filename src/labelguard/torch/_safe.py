"""safe_targets: a target check that never stops the GPU.

``checked(loss)`` reads one flag back per call: one device-to-host sync, which stalls the
host until the GPU has run everything queued before it. ``safe_targets`` reads nothing back
in the step. On the target's device it

* finds the values that are no class of ``[0, num_classes)`` and not ``ignore_index``
  (fractions and NaN of a float target too);
* replaces them with ``ignore_index`` (``torch.where``), so the loss kernel never sees an
  index past its classes: no device-side assert, the CUDA context survives, and the loss
  skips those elements as it skips every ignored one;
* counts them and takes the first one's position and value, and copies those three numbers
  to pinned host memory without blocking (:class:`labelguard.torch._host.HostCopy`).

The next call (a step later, when the GPU has long finished that copy) or
:meth:`TargetMonitor.report` reads them and, when there was a bad value, raises (or logs) a
:class:`SampleError` naming the batch's samples: from a flight record (``samples=`` the
:func:`labelguard.torch.record` loader), from indices the loop knows, with their files from
the guarded dataset. On the CPU the same code runs, and the copy is ready at once.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from labelguard.rules.lg102 import ID_TOO_LARGE
from labelguard.rules.lg103 import NEGATIVE_ID
from labelguard.rules.lg201 import VALUE_OUTSIDE_SPEC
from labelguard.rules.lg204 import NON_INTEGER
from labelguard.core.spec import LabelSpec
from labelguard.core.text import plural
from labelguard.errors import UsageError
from labelguard.torch._batch import BatchSamples, batch_item
from labelguard.torch._errors import SampleError
from labelguard.torch._host import HostCopy
from labelguard.torch._sources import source_lookup
from labelguard.torch._tensors import invalid_targets, loss_legal_values

log = logging.getLogger("labelguard.torch")

ON_ERROR = ("raise", "warn")


@dataclass(frozen=True)
class _Pending:
    """One masked batch whose three numbers are on their way to the host."""

    copy: HostCopy
    call: int
    shape: tuple[int, ...]
    floating: bool
    num_classes: int
    ignore_index: int
    samples: BatchSamples | None


class TargetMonitor:
    """Masks invalid class-index targets on their device and reports them one step later.

    ``monitor(target, num_classes, ignore_index=...)`` returns the target with every value
    that is no class (and not the ignore value) replaced by ``ignore_index``; nothing is read
    back in that call. The bad values it found are reported by the next call or by
    :meth:`report`: raised as a :class:`SampleError` (``on_error="raise"``) or logged and
    kept in :attr:`errors` (``"warn"``).

    Args:
        num_classes: the default number of classes of the calls.
        ignore_index: the default value bad elements become (the loss's ignore_index:
            ``CrossEntropyLoss`` ignores -100).
        on_error: ``"raise"`` or ``"warn"``.
        dataset: where sample indices get their files (a guarded dataset's ``source``, or
            found on the dataset as :func:`labelguard.torch.guard` finds it).

    Attributes:
        errors: every SampleError found so far.
        calls: how many targets went through.
    """

    def __init__(
        self,
        num_classes: int | None = None,
        ignore_index: int = -100,
        *,
        on_error: str = "raise",
        dataset: Any = None,
    ) -> None:
        if on_error not in ON_ERROR:
            raise UsageError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.on_error = on_error
        self.dataset = dataset
        self.errors: list[SampleError] = []
        self.calls = 0
        self._pending: deque[_Pending] = deque()

    def __call__(
        self,
        target: torch.Tensor,
        num_classes: int | None = None,
        ignore_index: int | None = None,
        *,
        samples: Any = None,
    ) -> torch.Tensor:
        """``target`` with its invalid values replaced by ``ignore_index``, on its device.

        Args:
            target: class indices, integer or float (a float one's NaN and fractions are
                invalid too).
            num_classes: classes of this call (default: the monitor's).
            ignore_index: the value invalid elements become (default: the monitor's).
            samples: who the batch's items are: the loader returned by
                :func:`labelguard.torch.record` (the batch in flight), a sequence of dataset
                indices, or of (index, file) pairs.

        Raises:
            SampleError: an earlier call's target held invalid values (``on_error="raise"``).
            labelguard.UsageError: no ``num_classes``, or an ``ignore_index`` the target's
                dtype cannot hold.
        """
        self._resolve(block=False)
        classes = self.num_classes if num_classes is None else num_classes
        ignore = self.ignore_index if ignore_index is None else ignore_index
        if classes is None:
            raise UsageError("safe_targets needs num_classes (in the call or the TargetMonitor)")
        _check_representable(target, ignore)
        self.calls += 1
        if not target.numel():
            return target  # nothing to mask, nothing to report
        invalid = invalid_targets(target, loss_legal_values(classes, ignore))
        masked = torch.where(invalid, ignore, target)  # a Python scalar keeps the target's dtype
        flat = invalid.reshape(-1)
        count = flat.sum()
        first = torch.argmax(flat.to(torch.uint8))  # 0 when there is none: the count says so
        value = target.detach().reshape(-1).index_select(0, first.reshape(1)).reshape(())
        if target.is_floating_point():
            value = value.double().view(torch.int64)  # the bits travel; NaN and fractions too
        numbers = torch.stack([count.long(), first.long(), value.long()])
        self._pending.append(_Pending(
            copy=HostCopy(numbers), call=self.calls, shape=tuple(target.shape),
            floating=target.is_floating_point(), num_classes=classes, ignore_index=ignore,
            samples=BatchSamples.of(samples, self._lookup),
        ))
        return masked

    def report(self) -> list[SampleError]:
        """Read every target still on its way (waiting for the copies) and return all errors
        found so far; raises the first new one when ``on_error="raise"``."""
        self._resolve(block=True)
        return list(self.errors)

    @property
    def pending(self) -> int:
        """Targets masked whose numbers have not been read yet."""
        return len(self._pending)

    def _resolve(self, block: bool) -> None:
        while self._pending and (block or self._pending[0].copy.ready()):
            pending = self._pending.popleft()
            count, first, value = pending.copy.value().tolist()
            if not count:
                continue
            error = self._error(pending, count, first, value)
            self.errors.append(error)
            if self.on_error == "raise":
                raise error
            log.warning("%s", error.message)

    def _lookup(self, index: int) -> str | None:
        return source_lookup(self.dataset)(index) if self.dataset is not None else None

    def _error(self, pending: _Pending, count: int, first: int, value: int) -> SampleError:
        shape, total = pending.shape, int(np.prod(pending.shape)) if pending.shape else 1
        shown = float(np.array([value], dtype=np.int64).view(np.float64)[0]) if pending.floating else value
        item = batch_item(first, shape)
        index, source = pending.samples.sample(item) if pending.samples else (None, None)
        named = ""
        if pending.samples:
            named = (f": sample {index}" + (f" ({source})" if source else "") if index is not None else "") \
                + f"; the batch: samples {pending.samples.describe()}"
        spec = LabelSpec(num_classes=pending.num_classes, ignore=(pending.ignore_index,))
        check, what = _check_for(shown, shape, pending.floating)
        where = f"target of call {pending.call}"
        they = "it" if count == 1 else "them"
        message = (
            f"{check.code} {where}: {plural(count, 'element')} of {total:,} "
            f"{'was' if count == 1 else 'were'} no class of {spec.describe()}, the first {what} "
            f"at element {first}{f' (batch item {item}{named})' if item is not None else ''}; "
            f"safe_targets replaced {they} with {pending.ignore_index} on the device, so the loss "
            f"ignored {they} and the step trained on the rest. Hint: "
            + _hint(shown, pending.num_classes, pending.floating)
        )
        return SampleError(message, code=check.code, index=index, source=source,
                           values=[shown], expected=spec.describe())


def _check_representable(target: torch.Tensor, ignore: int) -> None:
    if target.is_floating_point():
        return
    if target.dtype == torch.bool:
        raise UsageError("safe_targets takes class indices, not a bool tensor: convert the target with .long()")
    info = torch.iinfo(target.dtype)
    if not info.min <= ignore <= info.max:
        raise UsageError(
            f"ignore_index {ignore} does not fit the target's dtype {str(target.dtype).removeprefix('torch.')} "
            f"({info.min}..{info.max}): convert the target with .long() first, as the loss needs")


def _check_for(value: float, shape: tuple[int, ...], floating: bool):
    """The check an invalid value belongs to, and how the message calls it."""
    if floating and not (np.isfinite(value) and float(value).is_integer()):
        return NON_INTEGER, f"value {value:g}"
    if value == np.iinfo(np.int64).min or value == np.iinfo(np.int32).min:
        return NON_INTEGER, f"value {int(value)} (what NaN becomes when cast to an integer)"
    shown = int(value)
    if len(shape) >= 2:
        return VALUE_OUTSIDE_SPEC, f"label value {shown}"
    return (NEGATIVE_ID if shown < 0 else ID_TOO_LARGE), f"class id {shown}"


def _hint(value: float, num_classes: int, floating: bool) -> str:
    if floating and not np.isfinite(value):
        return ("find where the dataset produces NaN in its labels; guard(dataset, ...) names the "
                "sample and its file before the batch is built.")
    if floating and not float(value).is_integer():
        return ("class indices are whole numbers: resize masks with nearest-neighbour "
                "interpolation and store them as integers.")
    if value == np.iinfo(np.int64).min or value == np.iinfo(np.int32).min:
        return "the target held NaN before .long(): find where the dataset produces it."
    if value >= num_classes:
        return (f"if {int(value)} is a real class, num_classes must be at least {int(value) + 1}; "
                "otherwise remap it in the dataset (labelguard audit lists every file holding it).")
    return (f"if {int(value)} marks pixels to skip, pass ignore_index={int(value)} to the loss; "
            "otherwise fix the labels (labelguard audit lists every file holding it).")


#: The process's default :class:`TargetMonitor` (``on_error="raise"``), called as
#: ``safe_targets(target, num_classes, ignore_index=...)``; ``safe_targets.report()`` reads
#: what is still on its way.
safe_targets = TargetMonitor()
