"""watch(model, optimizer): training that diverges, seen before the NaN (LG508).

A NaN at epoch 41 is the end of a story that the steps before it tell: weights pushed too far
grow the activations, the gradients and the loss, step after step, by orders of magnitude,
until one value overflows. The watch keeps those three on the device and reads them back
once per window of ``every`` steps, with a copy that never blocks the host:

* the loss, from :meth:`DivergenceWatch.observe` (one tiny copy per call);
* the global gradient norm, in the optimizer's step pre-hook (one foreach norm per step, what
  ``clip_grad_norm_`` computes anyway);
* the largest magnitude of the output of each watched module (those holding parameters
  directly: convolutions, linear and normalisation layers), one ``max |x|`` reduction each,
  on every ``sample_every``-th step only.

The first window of steps is the baseline. When a later window holds a value ``growth`` times
its baseline (100: two orders of magnitude), LG508 names the first module in the forward
whose output grew that much, the loss and gradient norm, and the optimizer's hyperparameters;
a non-finite value is LG502 with what the steps before it showed, including when they show
no growth at all (then divergence is not the cause).
"""

from __future__ import annotations

import inspect
import logging
import math
from collections import deque
from typing import Any, Iterable

import numpy as np
import torch
from torch import nn

from labelguard.rules.lg502 import training_became_non_finite
from labelguard.rules.lg508 import lower_the_step, training_diverging
from labelguard.core.findings import Finding
from labelguard.core.text import shorten
from labelguard.errors import UsageError
from labelguard.torch._host import HostCopy
from labelguard.torch._tensors import module_label

log = logging.getLogger("labelguard.torch")

_INF = float("inf")
_MISSING = -1.0  # magnitudes are >= 0: a slot nothing was written to
# The hyperparameters a divergence message shows, in this order, when the optimizer has them.
_HYPERPARAMETERS = ("lr", "betas", "momentum", "eps", "weight_decay")
# Those whose class default is the tuned, safe start (momentum 0 is SGD's default, not advice).
_DEFAULTS_WORTH_NAMING = ("betas", "eps")


class DivergenceWatch:
    """Loss, gradient norm and activation magnitudes of a model, tracked on the device.

    Built by :func:`watch`. Use as a context manager (``with watch(model, opt) as w:``) or
    call :meth:`attach` and :meth:`detach`; call :meth:`observe` with each step's loss.

    Attributes:
        step: the optimizer steps taken since the watch was attached (forward calls when it
            watches no optimizer).
        findings: LG508/LG502 findings so far (each also logged as a warning once).
        history: one dict per window read back: ``steps`` (first, last), ``loss`` and
            ``grad_norm`` (the largest of the window, None when not recorded) and
            ``activations`` (module name -> largest output magnitude sampled).
        modules: the qualified names of the watched modules.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        every: int = 16,
        growth: float = 100.0,
        sample_every: int = 4,
        modules: Iterable[str] | None = None,
    ) -> None:
        if every < 1 or sample_every < 1:
            raise UsageError(f"every and sample_every must be at least 1, got every={every}, "
                             f"sample_every={sample_every}")
        if not growth > 1:
            raise UsageError(f"growth must be above 1 (a factor over the first window), got {growth}")
        self.model = model
        self.optimizer = optimizer
        self.every = every
        self.growth = float(growth)
        self.sample_every = sample_every
        self.modules, self._watched = _watched_modules(model, modules)
        self.step = 0
        self.findings: list[Finding] = []
        self.history: list[dict[str, Any]] = []
        self._handles: list[Any] = []
        self._pending: deque[tuple[int, HostCopy]] = deque()
        self._buffer: torch.Tensor | None = None  # loss | grad norm | activation rows, one window
        self._rows = math.ceil(every / sample_every)
        self._forwarded = False  # a forward ran in the current step (steps counted by forwards)
        self._forward_rank: dict[int, int] = {}  # watched module -> its place in the forward
        # signal -> (typical value of the first window that recorded it, that window's steps);
        # signals: "loss", "grad_norm" and the watched modules' positions
        self._baseline: dict[Any, tuple[float, tuple[int, int]]] = {}
        self._peaks: dict[Any, float] = {}  # signal -> largest growth over its baseline seen
        self._diverged = False
        self._non_finite = False

    # life cycle -----------------------------------------------------------------------------

    def __enter__(self) -> "DivergenceWatch":
        return self.attach()

    def __exit__(self, *exc_info: Any) -> None:
        self.detach()

    def attach(self) -> "DivergenceWatch":
        if self._handles:
            return self
        self._handles.append(self.model.register_forward_pre_hook(self._before_forward))
        for position, module in enumerate(self._watched):
            self._handles.append(module.register_forward_hook(
                lambda m, i, output, position=position: self._after_module(position, output)))
        if self.optimizer is not None:
            self._handles.append(self.optimizer.register_step_pre_hook(self._before_step))
            self._handles.append(self.optimizer.register_step_post_hook(self._after_step))
        return self

    def detach(self) -> None:
        """Remove the hooks; what was recorded is read back by :meth:`report`."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    # recording (no host sync) ---------------------------------------------------------------

    def observe(self, loss: torch.Tensor) -> None:
        """Record this step's loss (its magnitude, kept on the loss's device)."""
        if not isinstance(loss, torch.Tensor) or not loss.is_floating_point():
            return
        buffer = self._window(loss.device)
        slot = buffer[self.step % self.every: self.step % self.every + 1]
        magnitude = torch.linalg.vector_norm(loss.detach().float(), ord=_INF).reshape(1)
        torch.maximum(slot, magnitude.to(buffer.device), out=slot)

    def _before_forward(self, module: nn.Module, args: tuple) -> None:
        if self.optimizer is None and torch.is_grad_enabled():
            if self._forwarded:
                self._advance()
            self._forwarded = True

    def _after_module(self, position: int, output: Any) -> None:
        # Training forwards only: a validation pass (no_grad) between steps is not a step.
        if self.step % self.sample_every or not torch.is_grad_enabled():
            return
        tensor = _first_float(output)
        if tensor is None:
            return
        self._forward_rank.setdefault(position, len(self._forward_rank))
        buffer = self._window(tensor.device)
        row = (self.step % self.every) // self.sample_every
        at = 2 * self.every + row * len(self._watched) + position
        magnitude = torch.linalg.vector_norm(tensor.detach(), ord=_INF).float().reshape(1)
        slot = buffer[at: at + 1]
        torch.maximum(slot, magnitude.to(buffer.device), out=slot)

    def _before_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if not grads:
            return
        norm = _total_norm(grads)
        buffer = self._window(norm.device)
        at = self.every + self.step % self.every
        buffer[at: at + 1].copy_(norm.float().reshape(1))

    def _after_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._advance()

    def _advance(self) -> None:
        self.step += 1
        if self.step % self.every == 0:
            self._flush()
        self._read(block=False)

    def _window(self, device: torch.device) -> torch.Tensor:
        if self._buffer is None:
            size = 2 * self.every + self._rows * len(self._watched)
            self._buffer = torch.full((size,), _MISSING, device=device)
        return self._buffer

    def _flush(self) -> None:
        """Start the host copy of the window that ended with the last step, and a new window."""
        if self._buffer is None:
            return
        self._pending.append((self.step - self.every, HostCopy(self._buffer)))
        self._buffer.fill_(_MISSING)

    # reading back ---------------------------------------------------------------------------

    def report(self) -> list[Finding]:
        """Read every window recorded so far (waiting for the copies still on their way) and
        return all findings."""
        if self._buffer is not None and bool((self._buffer != _MISSING).any()):
            self._pending.append((self.step - self.step % self.every, HostCopy(self._buffer)))
            self._buffer.fill_(_MISSING)
        self._read(block=True)
        return list(self.findings)

    def _read(self, block: bool) -> None:
        while self._pending and (block or self._pending[0][1].ready()):
            first, copy = self._pending.popleft()
            self._analyse(first, copy.value().numpy())

    def _analyse(self, first: int, values: np.ndarray) -> None:
        loss = values[:self.every]
        grad = values[self.every: 2 * self.every]
        rows = values[2 * self.every:].reshape(self._rows, len(self._watched))
        recorded = np.flatnonzero((loss != _MISSING) | (grad != _MISSING))
        sampled = np.flatnonzero((rows != _MISSING).any(axis=1)) * self.sample_every
        last = max([*recorded.tolist(), *sampled.tolist(), 0])
        steps = (first + 1, first + last + 1)
        activations = {self.modules[i]: _largest(rows[:, i]) for i in range(len(self._watched))}
        self.history.append({
            "steps": steps, "loss": _largest(loss), "grad_norm": _largest(grad),
            "activations": {name: value for name, value in activations.items() if value is not None},
        })
        for signal, series in (("loss", loss), ("grad_norm", grad),
                               *((i, rows[:, i]) for i in range(len(self._watched)))):
            typical = _typical(series)
            if signal not in self._baseline and typical is not None and typical > 0:
                self._baseline[signal] = (typical, steps)
                largest = _largest(series)
                if largest is not None and math.isfinite(largest):
                    self._peaks[signal] = largest / typical
        # Growth first: the finite steps of a window that ends in NaN can show it.
        if not self._diverged and not self._non_finite:
            self._check_growth(first, steps, loss, grad, rows)
        self._check_non_finite(first, loss, grad, rows)

    def _check_growth(self, first: int, steps: tuple[int, int], loss: np.ndarray, grad: np.ndarray,
                      rows: np.ndarray) -> None:
        grown_loss = self._growth("loss", loss, steps)
        grown_grad = self._growth("grad_norm", grad, steps)
        module = self._first_grown(first, steps, rows, self.growth)
        if module is not None and self._loss_falling(loss):
            module = None  # outputs growing while the loss falls: learning a larger scale
        if max(grown_loss[0], grown_grad[0], module[2] if module else 0.0) < self.growth:
            return
        self._diverged = True
        # The loss and gradients can cross first: then the module whose output led by an
        # order of magnitude is named.
        threshold = self.growth if module is not None else math.sqrt(self.growth)
        module = module or self._first_grown(first, steps, rows, threshold)
        parts = []
        if module is not None:
            position, step, ratio, value = module
            base, (start, end) = self._baseline[position]
            parts.append(
                f"the output of {module_label(self.modules[position], self._watched[position])} grew from "
                f"max |x| {base:.3g} ({_steps(start, end)}) to {value:.3g} at step {step} "
                f"({_times(ratio)}), the first module in the forward to grow past {threshold:g}x")
        for signal, (grown, largest), name in (("grad_norm", grown_grad, "gradient norm"),
                                               ("loss", grown_loss, "loss")):
            if largest is not None and signal in self._baseline:
                base, (start, end) = self._baseline[signal]
                parts.append(f"{name} {base:.3g} ({_steps(start, end)}) -> {largest:.3g} ({_times(grown)})")
        settings, unusual = _optimizer_settings(self.optimizer)
        self._emit(training_diverging(
            _steps(*steps), parts, settings, _lower_the_step(self.optimizer, unusual),
            step=module[1] if module else steps[0], module=self.modules[module[0]] if module else None,
            growth={"loss": grown_loss[0], "grad_norm": grown_grad[0], "module": module[2] if module else None},
        ))

    def _growth(self, signal: Any, series: np.ndarray, steps: tuple[int, int]) -> tuple[float, float | None]:
        """(largest / typical value of its first window, largest) for one signal of a window;
        (0, ...) in the window that set the baseline."""
        recorded = _recorded(series)
        finite = recorded[np.isfinite(recorded)]
        if not finite.size:
            return 0.0, None
        largest = float(finite.max())
        if signal not in self._baseline or self._baseline[signal][1] == steps:
            return 0.0, largest
        ratio = largest / self._baseline[signal][0]
        self._peaks[signal] = max(self._peaks.get(signal, 0.0), ratio)
        return ratio, largest

    def _loss_falling(self, loss: np.ndarray) -> bool:
        """True when this window's typical loss is below its first window's."""
        typical = _typical(loss)
        return "loss" in self._baseline and typical is not None and typical < self._baseline["loss"][0]

    def _forward_order(self) -> list[int]:
        count = len(self._watched)
        return sorted(range(count), key=lambda i: self._forward_rank.get(i, count + i))

    def _first_grown(self, first: int, steps: tuple[int, int], rows: np.ndarray,
                     threshold: float) -> tuple[int, int, float, float] | None:
        """(module position, step, ratio, value) of the first module in forward order, at the
        first sampled step, whose output grew ``threshold`` times its baseline."""
        for position in range(len(self._watched)):
            self._growth(position, rows[:, position], steps)  # keeps each module's peak
        order = self._forward_order()
        for row in range(rows.shape[0]):
            for position in order:
                value = float(rows[row, position])
                if value == _MISSING or not math.isfinite(value) or position not in self._baseline:
                    continue
                base, baseline_steps = self._baseline[position]
                if baseline_steps != steps and value / base >= threshold:
                    return position, first + row * self.sample_every + 1, value / base, value
        return None

    def _check_non_finite(self, first: int, loss: np.ndarray, grad: np.ndarray, rows: np.ndarray) -> None:
        if self._non_finite:
            return
        signals = [("the loss", _first_non_finite(loss)), ("the gradient norm", _first_non_finite(grad))]
        order = self._forward_order()
        for row in range(rows.shape[0]):
            bad = [i for i in order if not math.isfinite(rows[row, i])]
            if bad:
                signals.append((f"the output of {module_label(self.modules[bad[0]], self._watched[bad[0]])}",
                                row * self.sample_every))
                break
        seen = [(what, offset) for what, offset in signals if offset is not None]
        if not seen:
            return
        self._non_finite = True
        what, offset = min(seen, key=lambda item: item[1])
        step = first + offset + 1
        before, grew = self._story_before(first, offset, loss, grad, rows)
        settings, unusual = _optimizer_settings(self.optimizer)
        self._emit(training_became_non_finite(
            what, step, before, settings, after_divergence=self._diverged,
            growth_hint=_lower_the_step(self.optimizer, unusual) if grew else None,
        ))

    def _story_before(self, first: int, offset: int, loss: np.ndarray, grad: np.ndarray,
                      rows: np.ndarray) -> tuple[str, bool]:
        """What the finite steps before the first non-finite one (at ``offset`` in the window
        starting at ``first``) showed, and whether that is growth (at least the square root
        of ``growth``: one of its two orders of magnitude)."""
        parts, ratios = [], []
        # A signal is named by its text (loss, grad_norm) or by a watched module's position.
        series: list[tuple[str, str | int, np.ndarray, int]] = [
            ("the loss", "loss", loss[:offset], 1), ("the gradient norm", "grad_norm", grad[:offset], 1)]
        rows_before = rows[:offset // self.sample_every + (offset % self.sample_every > 0)]
        series += [(f"the output of {module_label(self.modules[i], self._watched[i])}", i, rows_before[:, i],
                    self.sample_every) for i in range(len(self._watched))]
        module_story: tuple[float, str] | None = None
        for name, signal, values, scale in series:
            ratio, text = self._before(signal, values, first, name, scale)
            if text is None:
                continue
            ratios.append(ratio)
            if isinstance(signal, str):
                parts.append(text)
            elif module_story is None or ratio > module_story[0]:
                module_story = (ratio, text)
        if module_story is not None:
            parts.append(module_story[1] + " (of the watched modules, the most)")
        if not parts:
            return "nothing finite was recorded before it to compare with", False
        return "before it, " + ", ".join(parts), max(ratios) >= math.sqrt(self.growth)

    def _before(self, signal: Any, values: np.ndarray, first: int, name: str,
                scale: int) -> tuple[float, str | None]:
        """How far one signal grew before the non-finite step: against its baseline when an
        earlier window set it, else from its first value in this window (``values[k]`` is
        step ``first + k * scale``)."""
        steps = np.flatnonzero((values != _MISSING) & np.isfinite(values))
        baseline = self._baseline.get(signal)
        if baseline is not None and baseline[1][0] < first + 1:
            base, (start, end) = baseline
            peak = max(self._peaks.get(signal, 0.0),
                       float(values[steps].max()) / base if steps.size else 0.0)
            verb = "reached" if peak >= math.sqrt(self.growth) else "stayed at or below"
            return peak, f"{name} {verb} {_times(peak)} its {base:.3g} of {_steps(start, end)}"
        if not steps.size:
            return 0.0, None
        start_value, largest = float(values[steps[0]]), float(values[steps].max())
        if start_value <= 0:
            return 0.0, None
        ratio = largest / start_value
        at = int(steps[int(np.argmax(values[steps]))])
        return ratio, (f"{name} went from {start_value:.3g} (step {first + steps[0] * scale + 1}) to "
                       f"{largest:.3g} (step {first + at * scale + 1}), {_times(ratio)}")

    def _emit(self, finding: Finding) -> None:
        self.findings.append(finding)
        log.warning("%s %s Hint: %s", finding.code, finding.message, finding.hint)


def _watched_modules(model: nn.Module, names: Iterable[str] | None) -> tuple[list[str], list[nn.Module]]:
    modules = dict(model.named_modules())
    if names is None:
        chosen = [n for n, m in modules.items() if any(True for _ in m.parameters(recurse=False))]
    else:
        chosen = list(names)
        unknown = [n for n in chosen if n not in modules]
        if unknown:
            raise UsageError(f"watch(modules=...) names {shorten(map(repr, unknown), 5)}, not modules "
                             f"of {type(model).__name__}")
    return chosen, [modules[n] for n in chosen]


def _first_float(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value if value.is_floating_point() and value.numel() else None
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _first_float(item)
            if found is not None:
                return found
    return None


def _total_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    total_norm = getattr(torch.nn.utils, "get_total_norm", None)
    if total_norm is not None:
        return total_norm(grads)
    device = grads[0].device
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g).to(device) for g in grads]))


def _recorded(values: np.ndarray) -> np.ndarray:
    return values[values != _MISSING]


def _largest(values: np.ndarray) -> float | None:
    """The largest recorded value (NaN when one is not finite), None when none was recorded."""
    recorded = _recorded(values)
    if not recorded.size:
        return None
    finite = recorded[np.isfinite(recorded)]
    return float(recorded.max()) if finite.size == recorded.size else float("nan")


def _typical(values: np.ndarray) -> float | None:
    recorded = _recorded(values)
    finite = recorded[np.isfinite(recorded)]
    return float(np.median(finite)) if finite.size else None


def _first_non_finite(values: np.ndarray) -> int | None:
    bad = np.flatnonzero((values != _MISSING) & ~np.isfinite(values))
    return int(bad[0]) if bad.size else None


def _steps(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def _times(ratio: float) -> str:
    if ratio < 10:
        return f"{ratio:.2g}x"
    return f"{ratio:,.0f}x" if ratio < 1e6 else f"{ratio:.2g}x"



def _optimizer_settings(optimizer: torch.optim.Optimizer | None) -> tuple[str, dict[str, tuple[Any, Any]]]:
    """("Adam: lr=0.01, betas=(0.5, 0.999), ...", {name: (value, default)} for the settings
    that differ from the optimizer class's defaults)."""
    if optimizer is None or not optimizer.param_groups:
        return "", {}
    group = optimizer.param_groups[0]
    try:
        defaults = {k: p.default for k, p in inspect.signature(type(optimizer).__init__).parameters.items()
                    if p.default is not inspect.Parameter.empty}
    except (TypeError, ValueError):
        defaults = {}
    shown, unusual = [], {}
    for key in _HYPERPARAMETERS:
        if key not in group:
            continue
        value = _plain(group[key])
        shown.append(f"{key}={value}")
        if key in defaults and key in _DEFAULTS_WORTH_NAMING and _plain(defaults[key]) != value:
            unusual[key] = (value, _plain(defaults[key]))
    groups = len(optimizer.param_groups)
    text = f"{type(optimizer).__name__}: {', '.join(shown)}"
    if groups > 1:
        text += f" (param group 0 of {groups})"
    return text, unusual


def _plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return _plain(value.tolist())
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, float):
        return float(f"{value:.4g}")  # shown as set, not as the float that holds it
    return value


def _lower_the_step(optimizer: torch.optim.Optimizer | None, unusual: dict[str, tuple[Any, Any]]) -> str:
    """LG508's advice for ``optimizer`` (:func:`labelguard.rules.lg508.lower_the_step`), with
    its learning rate and the ``unusual`` settings of :func:`_optimizer_settings`."""
    lr = optimizer.param_groups[0].get("lr") if optimizer is not None and optimizer.param_groups else None
    return lower_the_step(_plain(lr), type(optimizer).__name__, unusual)


def watch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    every: int = 16,
    growth: float = 100.0,
    sample_every: int = 4,
    modules: Iterable[str] | None = None,
) -> DivergenceWatch:
    """Warn (LG508) when training diverges: loss, gradient norm or activations growing by
    orders of magnitude, before any NaN.

    Args:
        model: the model; its modules that hold parameters directly are watched.
        optimizer: its optimizer: steps are counted by it and the gradient norm is taken
            before each step. Without one, each forward of ``model`` is a step and the
            gradient norm is not tracked.
        every: steps per window: values stay on the device and are copied back once per
            window, without blocking (read one step later, or at :meth:`~DivergenceWatch.report`).
        growth: how many times its first window's typical value a later window's largest
            value must be to count as divergence (100: two orders of magnitude).
        sample_every: activation magnitudes are taken on every ``sample_every``-th step (one
            ``max |x|`` reduction per watched module on such steps, none on others).
        modules: qualified names of the modules to watch instead of the default.

    Returns:
        A :class:`DivergenceWatch` (a context manager); call ``.observe(loss)`` each step
        and ``.report()`` to read everything recorded.

    Raises:
        labelguard.UsageError: ``every``, ``sample_every`` or ``growth`` out of range, or
            ``modules`` naming modules the model does not have.

    Example::

        >>> with watch(model, optimizer) as watcher:  # doctest: +SKIP
        ...     for x, y in loader:
        ...         loss = criterion(model(x), y)
        ...         watcher.observe(loss)
        ...         optimizer.zero_grad(); loss.backward(); optimizer.step()
        >>> watcher.report()  # doctest: +SKIP
        [Finding(code='LG508', ... "training is diverging (steps 401-416): the output of 'body.3' (Conv2d) grew ...")]
    """
    return DivergenceWatch(model, optimizer, every=every, growth=growth,
                           sample_every=sample_every, modules=modules)
