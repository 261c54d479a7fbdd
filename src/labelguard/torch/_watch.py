"""watch(model, optimizer): training that diverges, seen before the NaN (LG508).

A NaN at epoch 41 is the end of a story that the steps before it tell: weights pushed too far
grow the activations, the gradients and the loss, step after step, by orders of magnitude,
until one value overflows. The watch keeps those three on the device and reads them back
with a copy that never blocks the host:

* the loss, from :meth:`DivergenceWatch.observe` (one tiny copy per call);
* the global gradient norm, in the optimizer's step pre-hook (one foreach norm per step, what
  ``clip_grad_norm_`` computes anyway);
* the largest magnitude of the output of each watched module (those holding parameters
  directly: convolutions, linear and normalisation layers), one ``aminmax`` reduction each.

How often it reads and measures them follows what they do. A learning rate far too high
diverges within the first steps, so the watch starts close: for the first ``every`` steps
each step is read back on its own, with every watched output measured. Then it backs off to
one read per window of ``every`` steps, the outputs measured on every ``sample_every``-th
step, until a signal doubles over its baseline (an output only while the loss does not fall)
and at each doubling after, which brings the close watch back for the next ``every`` steps.

A signal's baseline is the median of its first ``every`` positive values. Until it has seen
that many, each value is judged against the median of those before it (one already
``sqrt(growth)`` times that median does not join it), so growth within the first steps is
measured against the steps before it. A step whose value is ``growth`` times its baseline
(100: two orders of magnitude) is LG508 only when corroborated: a module's output with the loss
or the gradient norm up by ``sqrt(growth)`` over the same steps; the loss, when the gradient
norm is recorded, with it up by ``sqrt(growth)`` too; a signal with fewer than three values
in its baseline only with another signal up by ``sqrt(growth)``. The message names the first
module in the forward whose output grew that much, the loss and gradient norm, and the
optimizer's hyperparameters; a non-finite value is LG502 with what the steps before it
showed, including when they show no growth at all (then divergence is not the cause).
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

_MISSING = -1.0  # magnitudes are >= 0: a slot nothing was written to
# A signal at this many times its baseline, and at each doubling after, brings the close watch back.
_RISING = 2.0
# A signal is judged on its own once its baseline holds this many values (before, only with
# another signal corroborating it).
_SETTLED = 3
# "Stayed near" its baseline: within this factor of it, either way.
_NEAR = 2.0
# The columns of a step's row: the loss, the gradient norm, then one per watched module.
_LOSS, _GRAD, _MODULES = 0, 1, 2
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
        history: one dict per window read back (a single step while the watch is close):
            ``steps`` (first, last), ``loss`` and ``grad_norm`` (the largest of the window,
            None when not recorded) and ``activations`` (module name -> largest output
            magnitude measured).
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
            raise UsageError(f"growth must be above 1 (a factor over the first steps), got {growth}")
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
        self._columns = _MODULES + len(self._watched)
        self._pending: deque[tuple[int, int, HostCopy]] = deque()  # (steps before, steps, copy)
        self._buffer: torch.Tensor | None = None  # one row of columns per step of the window
        self._start = 0  # the steps taken before the current window
        self._close_until = every  # the steps up to this one are read one by one, all measured
        self._forwarded = False  # a forward ran in the current step (steps counted by forwards)
        self._forward_rank: dict[int, int] = {}  # watched module -> its place in the forward
        self._signals = _Signals(self._columns, every, math.sqrt(self.growth), _RISING)
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
        if not isinstance(loss, torch.Tensor) or not loss.is_floating_point() or not loss.numel():
            return
        self._record(_LOSS, _magnitude(loss))

    def _before_forward(self, module: nn.Module, args: tuple) -> None:
        if self.optimizer is None and torch.is_grad_enabled():
            if self._forwarded:
                self._advance()
            self._forwarded = True

    def _after_module(self, position: int, output: Any) -> None:
        # Training forwards only: a validation pass (no_grad) between steps is not a step.
        if not torch.is_grad_enabled() or (self.step % self.sample_every and not self._close()):
            return
        tensor = _first_float(output)
        if tensor is None:
            return
        self._forward_rank.setdefault(position, len(self._forward_rank))
        self._record(_MODULES + position, _magnitude(tensor))

    def _before_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if grads:
            self._record(_GRAD, _total_norm(grads).float().reshape(1))

    def _after_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._advance()

    def _record(self, column: int, magnitude: torch.Tensor) -> None:
        """Keep the largest ``magnitude`` of ``column`` in the current step's row."""
        if self._buffer is None:
            self._buffer = torch.full((self.every * self._columns,), _MISSING, device=magnitude.device)
        at = (self.step - self._start) * self._columns + column
        slot = self._buffer[at: at + 1]
        torch.maximum(slot, magnitude.to(slot.device), out=slot)

    def _close(self) -> bool:
        """True while the step in progress is watched closely: read alone, every output measured."""
        return self.step < self._close_until

    def _advance(self) -> None:
        self.step += 1
        if self.step <= self._close_until or self.step - self._start >= self.every:
            self._flush()
        self._read(block=False)

    def _flush(self) -> None:
        """Start the host copy of the window that ended with the last step, and a new window."""
        if self._buffer is not None:
            self._pending.append((self._start, self.step - self._start, HostCopy(self._buffer)))
            self._buffer.fill_(_MISSING)
        self._start = self.step

    # reading back ---------------------------------------------------------------------------

    def report(self) -> list[Finding]:
        """Read every window recorded so far (waiting for the copies still on their way) and
        return all findings."""
        if self._buffer is not None and bool((self._buffer != _MISSING).any()):
            # the step in progress too: a NaN loss is often observed in a step never taken
            self._pending.append((self._start, self.step - self._start + 1, HostCopy(self._buffer)))
            self._buffer.fill_(_MISSING)
            self._start = self.step
        self._read(block=True)
        return list(self.findings)

    def _read(self, block: bool) -> None:
        while self._pending and (block or self._pending[0][2].ready()):
            before, steps, copy = self._pending.popleft()
            self._analyse(before, copy.value().numpy().reshape(self.every, self._columns)[:steps])

    def _analyse(self, before: int, rows: np.ndarray) -> None:
        """Judge the rows of one window, step by step (row ``k`` is step ``before + k + 1``)."""
        recorded = rows != _MISSING
        taken = np.flatnonzero(recorded.any(axis=1))
        if not taken.size:
            return
        finite = recorded & np.isfinite(rows)
        largest = np.where(finite, rows, -np.inf).max(axis=0)
        largest[(recorded & ~finite).any(axis=0)] = np.nan
        kept = recorded.any(axis=0)
        self.history.append({
            "steps": (before + 1, before + int(taken[-1]) + 1),
            "loss": float(largest[_LOSS]) if kept[_LOSS] else None,
            "grad_norm": float(largest[_GRAD]) if kept[_GRAD] else None,
            "activations": {name: float(largest[_MODULES + i]) for i, name in enumerate(self.modules)
                            if kept[_MODULES + i]},
        })
        for row in taken:
            self._judge(before + int(row) + 1, before + 1, rows[row], recorded[row], finite[row])

    def _judge(self, step: int, first: int, row: np.ndarray, recorded: np.ndarray, finite: np.ndarray) -> None:
        """One step's values against each signal's baseline: growth first (the finite values
        of a step that holds a NaN can show it), then the first non-finite value."""
        values = np.where(finite, row, np.nan)
        ratios = self._signals.ratios(values)
        bad = recorded & ~finite
        # told from the steps before this one, before this step joins them
        broken = self._non_finite_story(np.flatnonzero(bad)) if bad.any() and not self._non_finite else None
        # "the loss falls" against the steps before this one, never a baseline holding this step
        falling = self._loss_falling(values[_LOSS])
        self._signals.note(step, values)
        if not self._diverged and not self._non_finite:
            self._check_growth(step, first, ratios, bad, falling)
        rising = self._signals.add(step, values, ratios)
        if rising[:_MODULES].any() or (rising[_MODULES:].any() and not falling):
            # from the step read now: a window read late must not shorten the close watch
            self._close_until = max(self._close_until, self.step + self.every)
        if broken is not None:
            self._non_finite = True
            what, before, grew = broken
            settings, unusual = _optimizer_settings(self.optimizer)
            self._emit(training_became_non_finite(
                what, step, before, settings, after_divergence=self._diverged,
                growth_hint=_lower_the_step(self.optimizer, unusual) if grew else None,
            ))

    def _check_growth(self, step: int, first: int, ratios: np.ndarray, bad: np.ndarray, falling: bool) -> None:
        """LG508 when growth is corroborated: a module's output only with the loss or the
        gradient norm up by at least ``sqrt(growth)`` over the same steps; the loss, when the
        gradient norm is recorded, only with it up too (a loss that starts near 0 grows by
        orders of magnitude while learning); a signal judged on fewer than
        :data:`_SETTLED` values only with another signal up by ``sqrt(growth)``."""
        signals = self._signals
        order = self._forward_order()
        alert = math.sqrt(self.growth)
        # finite growth can be divergence; a non-finite value after finite ones corroborates it
        # (past any factor) but is no growth on its own (LG502 tells it)
        grew = np.nan_to_num(ratios, nan=0.0)
        up = np.where(bad & (signals.count > 0), np.inf, grew)
        settled = signals.count >= min(_SETTLED, self.every)
        grad_recorded = bool(signals.count[_GRAD]) or bool(bad[_GRAD])
        modules_up = any(up[_MODULES + p] >= alert for p in order)

        def corroborated(position: int) -> bool:
            column = _MODULES + position
            return any(up[c] == np.inf or signals.over_steps_of(c, column, ratios[c]) >= alert
                       for c in (_LOSS, _GRAD))

        grown = None if falling else next(
            (p for p in order if grew[_MODULES + p] >= self.growth and corroborated(p)), None)
        loss, grad = _ratio(ratios[_LOSS]), _ratio(ratios[_GRAD])
        module_ratio = float(ratios[_MODULES + grown]) if grown is not None else 0.0
        loss_counts = grew[_LOSS] >= self.growth and (
            up[_GRAD] >= alert if grad_recorded else (settled[_LOSS] or modules_up))
        grad_counts = grew[_GRAD] >= self.growth and (settled[_GRAD] or up[_LOSS] >= alert or modules_up)
        if grown is None and not loss_counts and not grad_counts:
            return
        self._diverged = True
        # The loss and gradients can cross first: then the module whose output led by an
        # order of magnitude is named.
        threshold = self.growth if grown is not None else math.sqrt(self.growth)
        named = grown if grown is not None else next(
            (p for p in order if signals.latest_ratio(_MODULES + p) >= threshold), None)
        parts = []
        if named is not None:
            column = _MODULES + named
            value, at = float(signals.last[column]), int(signals.last_step[column])
            parts.append(
                f"the output of {module_label(self.modules[named], self._watched[named])} grew from max |x| "
                f"{signals.base[column]:.3g} ({signals.baseline_steps(column)}) to {value:.3g} at step {at} "
                f"({_times(signals.latest_ratio(column))}), the first module in the forward to grow past "
                f"{threshold:g}x")
        for column, name in ((_GRAD, "gradient norm"), (_LOSS, "loss")):
            change = signals.change(column, step if bad[column] else None)
            if change is not None:
                parts.append(f"{name} {change}")
        settings, unusual = _optimizer_settings(self.optimizer)
        self._emit(training_diverging(
            _steps(first, step), parts, settings, _lower_the_step(self.optimizer, unusual),
            step=int(signals.last_step[_MODULES + named]) if named is not None else step,
            module=self.modules[named] if named is not None else None,
            growth={"loss": loss, "grad_norm": grad, "module": module_ratio if grown is not None else None},
        ))

    def _loss_falling(self, loss: float) -> bool:
        """True when this step's loss (else the latest one) is below its baseline of the steps
        before it: outputs that grow meanwhile are learning a larger scale, not diverging."""
        latest = loss if np.isfinite(loss) else self._signals.last[_LOSS]
        return bool(latest < self._signals.base[_LOSS])

    def _forward_order(self) -> list[int]:
        count = len(self._watched)
        return sorted(range(count), key=lambda i: self._forward_rank.get(i, count + i))

    def _non_finite_story(self, bad: np.ndarray) -> tuple[str, str, bool]:
        """(what became non-finite, what the steps before it showed, whether that is growth:
        at least the square root of ``growth``, one of its two orders of magnitude). Within a
        step the forward comes first, then the loss, then the gradients."""
        columns = set(bad.tolist())
        first_module = next((p for p in self._forward_order() if _MODULES + p in columns), None)
        if first_module is not None:
            what = f"the output of {module_label(self.modules[first_module], self._watched[first_module])}"
        else:
            what = "the loss" if _LOSS in columns else "the gradient norm"
        parts, ratios = [], []
        for column, name in ((_LOSS, "the loss"), (_GRAD, "the gradient norm")):
            story = self._signals.story(column)
            if story is not None:
                ratios.append(story[0])
                parts.append(f"{name} {story[1]}")
        module_story: tuple[float, str] | None = None
        for position, module in enumerate(self._watched):
            story = self._signals.story(_MODULES + position)
            if story is not None and story[0] > 0:  # a single step's output compares with nothing
                ratios.append(story[0])
                if module_story is None or story[0] > module_story[0]:
                    module_story = (story[0], f"the output of {module_label(self.modules[position], module)} "
                                              f"{story[1]}")
        if module_story is not None:
            parts.append(module_story[1] + " (of the watched modules, the most)")
        if not parts:
            return what, "nothing finite was recorded before it to compare with", False
        return what, "before it, " + ", ".join(parts), max(ratios) >= math.sqrt(self.growth)

    def _emit(self, finding: Finding) -> None:
        self.findings.append(finding)
        log.warning("%s %s", finding.code, finding.with_hint())


class _Signals:
    """What each signal (a column: the loss, the gradient norm, a watched module's output) did
    over the steps read so far, as plain arrays over the columns.

    Its baseline is the median of its first ``size`` positive values. Until it has seen that
    many, each is judged against the median of those before it that had not grown past
    ``alert`` times the median of the ones before them (the pool), so growth within the first
    steps is measured against the steps before it; once it has, the pool is those first
    ``size`` values, all of them, and stays so. The values left out of the pool are what came
    after the baseline. Step 0 means none.
    """

    def __init__(self, columns: int, size: int, alert: float, rising: float) -> None:
        self.alert = alert
        self.size = size
        # the first ``size`` positive values, all of them, and their steps
        self.seen = np.full((size, columns), np.nan)
        self.seen_steps = np.zeros((size, columns), dtype=np.int64)
        self.seen_count = np.zeros(columns, dtype=np.int64)
        self.pool = np.full((size, columns), np.nan)
        self.pool_steps = np.zeros((size, columns), dtype=np.int64)
        self.count = np.zeros(columns, dtype=np.int64)
        self.base = np.full(columns, np.nan)  # the median of the pool
        self.first, self.first_step = np.full(columns, np.nan), np.zeros(columns, dtype=np.int64)
        self.last, self.last_step = np.full(columns, np.nan), np.zeros(columns, dtype=np.int64)
        # the largest value left out of the pool
        self.peak, self.peak_step = np.full(columns, -np.inf), np.zeros(columns, dtype=np.int64)
        self.level = np.full(columns, rising)  # the ratio to the baseline that signals the next rise

    def ratios(self, values: np.ndarray) -> np.ndarray:
        """Each value over its signal's baseline (NaN where either is missing)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return values / self.base

    def note(self, step: int, values: np.ndarray) -> None:
        """Take one step's finite values (NaN elsewhere) as the first and latest of each signal."""
        seen = np.isfinite(values)
        new = seen & (self.first_step == 0)
        self.first[new], self.first_step[new] = values[new], step
        self.last[seen], self.last_step[seen] = values[seen], step

    def add(self, step: int, values: np.ndarray, ratios: np.ndarray) -> np.ndarray:
        """Let one step's finite values (NaN elsewhere), after :meth:`note`, join the baselines;
        ``ratios`` are theirs to the baselines before them. True for each signal that rose to a
        new level over its baseline (the next one is twice as high)."""
        seen = np.isfinite(values)
        settling = seen & (values > 0) & (self.seen_count < self.size)
        pooled = settling & ~(ratios >= self.alert)
        for column in np.flatnonzero(settling):
            self.seen[self.seen_count[column], column] = values[column]
            self.seen_steps[self.seen_count[column], column] = step
        self.seen_count[settling] += 1
        for column in np.flatnonzero(pooled):
            self.pool[self.count[column], column] = values[column]
            self.pool_steps[self.count[column], column] = step
        self.count[pooled] += 1
        # all of the first ``size`` values seen: they are the baseline from now on
        full = settling & (self.seen_count == self.size)
        self.pool[:, full], self.pool_steps[:, full] = self.seen[:, full], self.seen_steps[:, full]
        self.count[full] = self.size
        self.peak[full], self.peak_step[full] = -np.inf, 0  # what came after the baseline: none yet
        columns = np.flatnonzero(pooled | full)
        if columns.size:
            ordered = np.sort(self.pool[:, columns], axis=0)  # NaN (unfilled) sorts last
            count = self.count[columns]
            self.base[columns] = (ordered[(count - 1) // 2, np.arange(columns.size)]
                                  + ordered[count // 2, np.arange(columns.size)]) / 2
        higher = seen & ~pooled & ~full & (values > self.peak)
        self.peak[higher], self.peak_step[higher] = values[higher], step
        rising = ratios >= self.level
        self.level[rising] = 2 * ratios[rising]
        return rising

    def baseline_steps(self, column: int) -> str:
        return _steps(int(self.pool_steps[0, column]), int(self.pool_steps[self.count[column] - 1, column]))

    def over_steps_of(self, column: int, other: int, ratio: float) -> float:
        """The latest value of ``column`` over its median at the steps of ``other``'s baseline
        (growth over the same steps); ``ratio`` (to its own baseline) when it has none there."""
        steps = self.pool_steps[:self.count[other], other]
        at = np.isin(self.seen_steps[:self.seen_count[column], column], steps)
        if not at.any() or not np.isfinite(self.last[column]):
            return _ratio(ratio)
        return _ratio(self.last[column] / float(np.median(self.seen[:self.seen_count[column], column][at])))

    def latest_ratio(self, column: int) -> float:
        return _ratio(self.last[column] / self.base[column]) if self.count[column] else 0.0

    def change(self, column: int, broken: int | None = None) -> str | None:
        """How the latest value compares with the baseline ("2.4 (step 1) -> 28 at step 3
        (12x)"), that it stayed near it (within ``_NEAR`` times, either way), or that it turned
        non-finite at step ``broken``. Called before the step joins the baseline."""
        if not self.count[column]:
            return None
        if broken is not None:
            return f"{self.base[column]:.3g} ({self.baseline_steps(column)}) -> non-finite at step {broken}"
        if 1 / _NEAR <= self.last[column] / self.base[column] <= _NEAR:
            return f"stayed near {self.base[column]:.3g} ({self.baseline_steps(column)})"
        return (f"{self.base[column]:.3g} ({self.baseline_steps(column)}) -> {self.last[column]:.3g} at step "
                f"{self.last_step[column]} ({_times(self.latest_ratio(column))})")

    def story(self, column: int) -> tuple[float, str] | None:
        """(growth, text) of one signal up to now, never comparing a step with itself: against
        its baseline when values came after it, else from its first value to its last."""
        if not self.first_step[column]:
            return None
        if self.peak_step[column] and self.count[column]:
            base, steps = float(self.base[column]), self.baseline_steps(column)
            ratio = max(_ratio(self.peak[column] / base), 1.0)
            if ratio >= self.alert:
                return ratio, (f"reached {_times(ratio)} its {base:.3g} of {steps} "
                               f"({self.peak[column]:.3g} at step {self.peak_step[column]})")
            return ratio, f"stayed at or below {_times(ratio)} its {base:.3g} of {steps}"
        first, last = float(self.first[column]), float(self.last[column])
        if self.first_step[column] == self.last_step[column]:
            return 0.0, f"was {first:.3g} at step {self.first_step[column]}, the only step recorded"
        text = f"went from {first:.3g} (step {self.first_step[column]}) to {last:.3g} (step {self.last_step[column]})"
        if first <= 0:
            return 0.0, text
        return last / first, f"{text}, {_times(last / first)}"


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


def _magnitude(tensor: torch.Tensor) -> torch.Tensor:
    """max |x| of a float tensor as one float32 element on its device (NaN when it holds one):
    one ``aminmax`` pass, many times faster on the CPU than ``vector_norm(ord=inf)``."""
    if tensor.numel() == 1:
        return tensor.detach().abs().float().reshape(1)
    low, high = torch.aminmax(tensor.detach())
    return torch.maximum(high, low.neg()).float().reshape(1)


def _ratio(value: float) -> float:
    """A ratio to a baseline; 0 where there was none to compare with (NaN)."""
    return 0.0 if math.isnan(value) else float(value)


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
        every: steps per window once training is calm: values stay on the device and are
            copied back once per window, without blocking (read one step later, or at
            :meth:`~DivergenceWatch.report`). The first ``every`` steps, and the ``every``
            steps after a signal doubles over its baseline (and after each doubling since),
            are read back one by one with every watched output measured, so divergence in the
            first steps is reported as it happens. Each signal's baseline is the median of
            its first ``every`` positive values; before it has that many, the median of the
            values before the step judged, leaving out those that had already grown
            ``sqrt(growth)`` times.
        growth: how many times its baseline a step's value must be to count as divergence
            (100: two orders of magnitude), when another signal corroborates it (up by
            ``sqrt(growth)``): an output's growth alone, or the loss's while the gradient norm
            holds, is not divergence.
        sample_every: once training is calm, activation magnitudes are taken on every
            ``sample_every``-th step (one ``aminmax`` reduction per watched module on such
            steps, none on others); the loss and the gradient norm on every step.
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
        [Finding(code='LG508', ... "training is diverging (step 3): the output of 'body' (Conv2d) grew ...")]
    """
    return DivergenceWatch(model, optimizer, every=every, growth=growth,
                           sample_every=sample_every, modules=modules)
