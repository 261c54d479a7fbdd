"""trace_nonfinite(model): name the first module that produced a NaN/Inf, at almost no cost.

A NaN or Inf need not reach the model output: ``sigmoid(inf)`` is 1, ``relu(-inf)`` is 0, a
softmax gives ``-inf`` scores weight 0, so a value that overflowed inside the model can be
absorbed by a later operation, and the output turns non-finite only steps later, where another
module overflows. Healthy models also make such values on purpose and discard them (``-inf``
written into padded attention keys, the NaN rows of a fully padded ``nn.MultiheadAttention``
replaced by ``nan_to_num``). So each step the tracer takes the minimum and maximum of the output
of every module that can make a NaN/Inf of finite inputs (NaN and Inf show in them, finite values
however large never do; no host sync; ReLU, max pooling, nearest upsampling and the like cannot
make one) and checks them all at the end of the forward at once (one sync), with a copy of the
RNG state.
``detect_anomaly`` and an ``isfinite`` hook on every module, which syncs on each, cost a large
part of a step; this stays within a few per cent (benchmarks/bench_guard.py measures them all
in one run).

When the model output is non-finite, the tracer replays that batch, with the same inputs and
RNG state and without gradients, with hooks on every module, to find the first one whose output
turned non-finite while its inputs were finite, and raises. When only an inner module's output is
non-finite and the model output stays finite (the value was absorbed), nothing is raised: the
first such value is located by one replay, logged once as a warning and kept in
``tracer.first_nonfinite``, and an error raised later, when the output or the checked loss does
turn non-finite, says where the first non-finite value began. Buffers (BatchNorm statistics)
and RNG state are restored after the replay. Inputs modified in place by the forward itself
are not restored, so the replay of such a model can differ from the original step.

The replay also measures each module's largest finite output magnitude, in the order the
forward runs them: the module where values become non-finite is often only where they
finally overflow (+-5e36 in, NaN out), and the first module whose output is already
:data:`EXPLODED` times the model input's scale is where the growth shows first. The hint then
says what was seen (exploded activations: training diverged; no explosion: an unsafe
operation), and names a frozen-layer cause only with its evidence (LG507 on the model,
LG504 when the tracer was given the optimizer).

With ``backward=True`` it also checks, once per backward pass, the total gradient norm of
the trainable parameters, and names the parameter nearest to the output whose gradient is
non-finite (or the loss, when the gradient reaching the model output already is).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from labelguard.torch._errors import NonFiniteError
from labelguard.torch._tensors import all_finite, finite_mask, module_label, tensor_stats

log = logging.getLogger("labelguard.torch")

# A module output this many times the model input's largest magnitude (at least 1) has
# exploded: healthy activations stay within a few orders of magnitude of their input.
EXPLODED = 1e6
# Modules that cannot make a NaN/Inf of finite inputs, so never produce the first one: their
# outputs are not checked (a non-finite input shows in the module that made it).
_NEVER_FIRST = (nn.ReLU, nn.ReLU6, nn.Sigmoid, nn.Tanh, nn.Hardtanh, nn.Softmax, nn.Identity, nn.Flatten,
                nn.Unflatten, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AdaptiveMaxPool1d,
                nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)
# The hint when the model output stayed finite and neither parameters nor activations had grown.
_ABSORBED_HINT = ("not raised, since the model output stayed finite: a value masked or replaced "
                  "on purpose is harmless. Should the output or the loss turn non-finite later, the "
                  "error will name this module as where it began.")
_INTERPOLATING = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear")  # Upsample modes


def _float_tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _float_tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _float_tensors(item)
    elif hasattr(value, "__dataclass_fields__"):  # model outputs such as HF ModelOutput
        for name in value.__dataclass_fields__:
            yield from _float_tensors(getattr(value, name, None))


def _all_finite(tensors: Sequence[torch.Tensor]) -> bool:
    return all(all_finite(t) for t in tensors)


def _first_nonfinite(value: Any) -> torch.Tensor | None:
    for tensor in _float_tensors(value):
        if not all_finite(tensor):
            return tensor
    return None


def _describe_stats(stats: dict[str, Any]) -> str:
    """A tensor and its NaN/Inf: "(2, 8) float32 holds 3 NaN and 1 +Inf of 16 values", "(a
    float32 scalar) holds 1 +Inf" (a scalar's shape () says nothing, "of 1" neither), or its
    range when finite."""
    shape = tuple(stats["shape"])
    what = f"(a {stats['dtype']} scalar)" if not shape else f"{shape} {stats['dtype']}"
    kinds = [f"{stats[key]:,} {name}" for key, name in (("nan", "NaN"), ("posinf", "+Inf"), ("neginf", "-Inf"))
             if stats[key]]
    if kinds:
        counts = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} and {kinds[-1]}"
        total = f" of {stats['numel']:,} values" if stats["numel"] > 1 else ""
        return f"{what} holds {counts}{total}"
    if stats["numel"] == 1:
        return f"{what} was finite ({stats['max']:.4g})"
    return (f"{what} was finite (min {stats['min']:.4g}, max "
            f"{stats['max']:.4g}, mean {stats['mean']:.4g})")


class NonFiniteTracer:
    """Hooks that raise :class:`NonFiniteError` (LG502) on the first NaN/Inf any module of a
    model produces, absorbed downstream or not.

    Use as a context manager (``with trace_nonfinite(model):``) or call :meth:`attach` and
    :meth:`detach`. ``step`` counts the traced model's forward calls.
    """

    def __init__(self, model: nn.Module, *, backward: bool = False,
                 optimizer: torch.optim.Optimizer | None = None) -> None:
        self.model = model
        self.backward = backward
        self.optimizer = optimizer
        self.step = 0
        self._handles: list[Any] = []
        self._call: tuple[tuple, dict, dict] | None = None
        self._grad_output: list[torch.Tensor] = []
        self._replaying = False
        self._sums: list[tuple[nn.Module, torch.Tensor]] = []  # this step's module outputs: finite?
        self._summed: torch.Tensor | None = None  # the output checked last (a container returns it again)
        self._in_forward = False
        self._warned = False
        self._absorbed_seen = False  # an absorbed value is located (replayed) once, not every step
        # The first non-finite value a module made while the model output stayed finite: step,
        # module, module_type, stats, message; None until one is seen.
        self.first_nonfinite: dict[str, Any] | None = None

    def __enter__(self) -> "NonFiniteTracer":
        self.attach()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.detach()

    def attach(self) -> "NonFiniteTracer":
        if self._handles:
            return self
        self._handles.append(self.model.register_forward_pre_hook(self._before, with_kwargs=True))
        for module in self.model.modules():
            if module is not self.model and not _never_first(module):
                self._handles.append(module.register_forward_hook(self._after_module))
        self._handles.append(self.model.register_forward_hook(self._after, with_kwargs=True))
        if self.backward:
            named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
            self._param_names = [n for n, _ in named]
            self._handles.append(torch.autograd.graph.register_multi_grad_hook(
                [p for _, p in named], self._on_grads))  # fires once all grads are in
        return self

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._call = None
        self._grad_output = []
        self._sums = []
        self._summed = None
        self._in_forward = False

    def check(self, value: torch.Tensor, what: str = "loss") -> None:
        """Raise LG502 when ``value`` (the loss) is non-finite; one sync on a GPU."""
        tensors = list(_float_tensors(value))
        if tensors and not _all_finite(tensors):
            stats = tensor_stats(tensors[0])
            replayed = self._replay(self._call) if self._call is not None else {}
            largest = replayed.get("output_magnitude")
            if largest is not None and (replayed.get("exploded") or largest >= _overflowing(tensors[0])):
                seen = (f"the model output was finite but as large as {largest:.3g}: the {what} "
                        f"overflowed from exploded outputs{self._explosion_text(replayed)}")
                hint = self._diverged_hint(replayed)
            else:
                seen = f"the model output was finite: the {what} computation produced it"
                hint = ("look for log(0), division by a zero count (Dice on an empty mask) or "
                        "float16 overflow in it.")
            raise NonFiniteError(
                f"LG502 step {self.step}: the {what} {_describe_stats(stats)} while {seen}"
                f"{self._origin_text()}. Hint: {hint}",
                module=None, module_type=None, step=self.step,
                stats={what: stats, "output_magnitude": largest, "exploded": _exploded_stats(replayed),
                       "first_nonfinite": self._origin_stats()},
            )

    # steady state -------------------------------------------------------------------------

    def _before(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        if self._replaying:
            return
        self.step += 1
        self._call = (args, kwargs, _rng_states(args, kwargs))
        self._sums, self._summed = [], None
        self._in_forward = True

    def _after_module(self, module: nn.Module, args: tuple, output: Any) -> None:
        if not self._in_forward or self._replaying:
            return
        for tensor in _float_tensors(output):
            if tensor is not self._summed:
                probe = _finite_probe(tensor)
                if probe is not None:
                    self._sums.append((module, probe))
                self._summed = tensor

    def _after(self, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        if self._replaying:
            return
        self._in_forward, self._summed = False, None
        tensors = list(_float_tensors(output))
        own = [(self.model, p) for p in map(_finite_probe, tensors) if p is not None]
        sums, self._sums = self._sums + own, []
        if sums:
            device = sums[0][1].device
            finite = torch.stack([ok.to(device) for _, ok in sums])
            if not bool(finite.all()):  # the one sync of the step
                if tensors and not _all_finite(tensors):
                    call, self._call = self._call, None  # raised: the batch is not held on
                    raise self._locate_forward(call, output)
                if not self._absorbed_seen:  # absorbed: located and logged once, never raised
                    self._absorbed_seen = True
                    inner = [sums[i][0] for i in (~finite).nonzero()[:, 0].tolist()]
                    self._record_absorbed(self._call, inner[0])
        # The call stays until the next forward, so that a non-finite loss can be replayed
        # (it holds the batch the loop holds anyway, never the output).
        if self.backward and torch.is_grad_enabled():
            self._grad_output = []
            for tensor in tensors:
                if tensor.requires_grad:
                    tensor.register_hook(self._grad_output.append)

    def _on_grads(self, grads: Sequence[torch.Tensor | None]) -> None:
        present = [g for g in grads if g is not None]
        if not present or _total_norm_finite(present):
            return
        raise self._locate_backward(grads)

    # on the first non-finite value ----------------------------------------------------------

    def _locate_forward(self, call: tuple | None, output: Any) -> NonFiniteError:
        root_stats = tensor_stats(next(_float_tensors(output)))
        found = self._replay(call) if call is not None else {}
        if "kind" not in found:
            return NonFiniteError(
                f"LG502 step {self.step}: the model output {_describe_stats(root_stats)}; a "
                "replay of the batch without gradients did not reproduce it (a forward that "
                "changes its inputs in place, or nondeterministic kernels). Hint: run this "
                "step under torch.autograd.detect_anomaly() to see the operation."
                + self._origin_text(sentence=True),
                module="", module_type=type(self.model).__name__, step=self.step,
                stats={"output": root_stats, "first_nonfinite": self._origin_stats()},
            )
        return self._forward_error(found)

    def _record_absorbed(self, call: tuple | None, module: nn.Module) -> None:
        """Locate, by one replay, the non-finite value that ``module`` output while the model
        output stayed finite; keep it in :attr:`first_nonfinite` and log it once (a warning,
        never an error: models mask with -Inf and replace NaN on purpose)."""
        found = self._replay(call) if call is not None else {}
        names = {id(m): n for n, m in self.model.named_modules()}
        if "kind" not in found:
            log.warning("step %d: the output of %s held a NaN/Inf, but a replay of the batch found no NaN/Inf "
                        "(a forward that is not deterministic or changes its inputs in place); not reported",
                        self.step, module_label(names.get(id(module), "?"), module))
            return
        error = self._forward_error(found, absorbed=True)
        self.first_nonfinite = {"step": self.step, "module": error.module, "module_type": error.module_type,
                                "stats": error.stats, "message": str(error)}
        log.warning("%s", error)

    def _origin_text(self, sentence: bool = False) -> str:
        """Where the first non-finite value began, when an absorbed one was seen before ("")."""
        first = self.first_nonfinite
        if first is None:
            return ""
        if first["module"] is None:
            where = "in the model input"
        elif first["stats"].get("output") is None:
            where = f"made inside the forward of '{first['module']}' ({first['module_type']})"
        else:
            where = f"made by '{first['module']}' ({first['module_type']})"
        when = "earlier in this step" if first["step"] == self.step else f"at step {first['step']}"
        text = (f"the first non-finite value appeared {when}, {where} "
                "while the model output stayed finite (see tracer.first_nonfinite)")
        return f" It began earlier: {text}." if sentence else f"; it began earlier: {text}"

    def _origin_stats(self) -> dict[str, Any] | None:
        first = self.first_nonfinite
        return None if first is None else {k: first[k] for k in ("step", "module", "module_type")}

    def _replay(self, call: tuple) -> dict[str, Any]:
        """Run the call again without gradients, hooks on every module: where the first
        non-finite value came from ("kind", "module"... when one did), the first exploded
        output ("exploded") and the model output's largest finite magnitude."""
        args, kwargs, rng = call
        names = {id(m): n for n, m in self.model.named_modules()}
        stack: list[nn.Module] = []
        found: dict[str, Any] = {}
        magnitudes: list[tuple[nn.Module, float]] = []  # finite max |output|, forward order

        def before(module, inputs, kw):
            if not found:
                bad = _first_nonfinite((inputs, kw))
                if bad is not None:
                    parent = stack[-1] if stack else None
                    found.update(kind="input", module=module, parent=parent,
                                 input=tensor_stats(bad))
            stack.append(module)

        def after(module, inputs, kw, out):
            stack.pop()
            if not found:
                largest = _finite_magnitude(out)
                if largest is not None:
                    magnitudes.append((module, largest))
            bad = None if found else _first_nonfinite(out)
            if bad is not None:
                clean = next(_float_tensors((inputs, kw)), None)
                found.update(kind="output", module=module, output=tensor_stats(bad),
                             input=tensor_stats(clean) if clean is not None else None)

        handles = []
        for module in self.model.modules():
            handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(module.register_forward_hook(after, with_kwargs=True))
        buffers = {n: b.detach().clone() for n, b in self.model.named_buffers()}
        self._replaying = True
        try:
            with _replay_rng(rng), torch.no_grad():
                self.model(*args, **kwargs)
        except Exception:  # a replay that crashes still tells what it saw before
            log.debug("replay of step %d raised", self.step, exc_info=True)
        finally:
            self._replaying = False
            for handle in handles:
                handle.remove()
            with torch.no_grad():
                for name, buffer in self.model.named_buffers():
                    if name in buffers:
                        buffer.copy_(buffers[name])
        if found:
            found["name"] = names.get(id(found["module"]), "?")
            if found.get("parent") is not None:
                found["parent_name"] = names.get(id(found["parent"]), "?")
        elif magnitudes and magnitudes[-1][0] is self.model:
            found["output_magnitude"] = magnitudes[-1][1]
        scale = max(1.0, _finite_magnitude((args, kwargs)) or 0.0)
        exploded = next(((m, v) for m, v in magnitudes if v >= EXPLODED * scale), None)
        if exploded is not None:
            found["exploded"] = {"name": names.get(id(exploded[0]), "?"), "module": exploded[0],
                                 "magnitude": exploded[1], "input_scale": scale}
        return found

    def _forward_error(self, found: dict[str, Any], absorbed: bool = False) -> NonFiniteError:
        step = f"LG502 step {self.step}"
        exploded = self._explosion_text(found)
        bad = found["output"] if found["kind"] == "output" else found["input"]
        seen = exploded + (_absorbed_text(bad) if absorbed else self._origin_text())
        if found["kind"] == "input" and found["parent"] is None:
            stats = {"input": found["input"]}
            return NonFiniteError(
                f"{step}: the model input is already non-finite: {_describe_stats(found['input'])}. "
                "Hint: the batch holds NaN/Inf: check the dataset's normalisation (a division "
                "by a zero std) and loading; guard the data with labelguard.torch.guard.",
                module=None, module_type=None, step=self.step, stats=stats,
            )
        if found["kind"] == "input":
            parent, child = found["parent"], found["module"]
            name = found["parent_name"]
            hint = (self._diverged_hint(found) if exploded else _ABSORBED_HINT if absorbed else
                    "look at the tensor operations in that forward (log/sqrt/division near 0, "
                    "exp overflow).")
            return NonFiniteError(
                f"{step}: the first non-finite value was produced inside the forward of "
                f"{module_label(name, parent)} before it called {module_label(found['name'], child)}: "
                f"the value passed to it {_describe_stats(found['input'])}{seen}. Hint: {hint}",
                module=name, module_type=type(parent).__name__, step=self.step,
                stats={"input": found["input"], "exploded": _exploded_stats(found), "absorbed": absorbed,
                       "first_nonfinite": None if absorbed else self._origin_stats()},
            )
        module, name = found["module"], found["name"]
        params = {
            pname: tensor_stats(p) for pname, p in module.named_parameters(recurse=False)
            if not all_finite(p)
        }
        where = (f"module {module_label(name, module)}" if not any(True for _ in module.children())
                 else f"the forward of {module_label(name, module)} outside its submodules")
        parts = [f"{step}: the first non-finite value was produced by {where}: its output "
                 f"{_describe_stats(found['output'])}"]
        if found["input"] is not None:
            parts.append(f"its input {_describe_stats(found['input'])}")
        if params:
            held = ", ".join(
                f"{p} holds {s['nan']} NaN and {s['posinf'] + s['neginf']} Inf" for p, s in params.items())
            parts.append(f"its parameter {held}")
            hint = (f"The parameters of '{name}' are already non-finite, so the cause lies in the "
                    "steps before this one (usually optimizer steps that diverged). "
                    + self._diverged_hint(found))
        elif exploded:
            hint = self._diverged_hint(found)
        elif absorbed:
            hint = _ABSORBED_HINT
        else:
            hint = ("Finite inputs and parameters of ordinary size gave a non-finite output: an "
                    "unsafe operation (log/sqrt/division near 0, exp, float16 range); clamp the "
                    "input, add an epsilon, or compute that module in float32.")
        stats = {"output": found["output"], "input": found["input"], "parameters": params,
                 "exploded": _exploded_stats(found), "absorbed": absorbed,
                 "first_nonfinite": None if absorbed else self._origin_stats()}
        return NonFiniteError(
            "; ".join(parts) + f"{seen}. Hint: {hint}",
            module=name, module_type=type(module).__name__, step=self.step, stats=stats,
        )

    def _explosion_text(self, found: dict[str, Any]) -> str:
        """"; magnitudes exploded before it: ..." when the replay saw an exploded output at
        or before the module that made the first non-finite value ("" otherwise)."""
        exploded = found.get("exploded")
        if exploded is None:
            return ""
        if exploded["module"] is found.get("module"):
            where = "its own finite outputs were already"
        else:
            where = f"the output of {module_label(exploded['name'], exploded['module'])} was already"
        return (f"; magnitudes had exploded: {where} {exploded['magnitude']:.3g}, over "
                f"{EXPLODED:.0e} times the model input's largest magnitude ({exploded['input_scale']:.3g}), "
                "the first module in the forward that large")

    def _diverged_hint(self, found: dict[str, Any]) -> str:
        """What values that large (or non-finite weights) say, and the setup evidence for a
        frozen-layer cause when there is some: never that cause without it."""
        from labelguard.torch._optim import audit_optimizer, freeze_findings

        hint = ("Weights grow until activations overflow when training diverges over many "
                "steps: lower the learning rate, clip gradients (torch.nn.utils.clip_grad_norm_), "
                "and run labelguard.torch.watch(model, optimizer) to see loss, gradient norm and "
                "activations grow before the NaN (LG508).")
        setup = (audit_optimizer(self.model, self.optimizer) if self.optimizer is not None
                 else freeze_findings(self.model))
        evidence = [f for f in setup if f.code == "LG507" or f.data.get("kind") == "frozen-in-optimizer"]
        if evidence:
            hint += " The setup also shows: " + "; ".join(f"{f.code} {f.message}" for f in evidence) + "."
        elif self.optimizer is None:
            hint += (" Whether frozen parameters are in the optimizer, audit_optimizer(model, "
                     "optimizer) tells (LG504).")
        return hint

    def _locate_backward(self, grads: Sequence[torch.Tensor | None]) -> NonFiniteError:
        step = f"LG502 step {self.step} (backward)"
        incoming = next((g for g in self._grad_output if not all_finite(g)), None)
        if incoming is not None:
            stats = tensor_stats(incoming)
            return NonFiniteError(
                f"{step}: the gradient reaching the model output is already non-finite: "
                f"{_describe_stats(stats)}; the loss's backward produced it. Hint: look for "
                "log(0), sqrt(0), division by a zero count (Dice on an empty mask) in the loss.",
                module=None, module_type=None, step=self.step, stats={"grad_output": stats},
            )
        bad = [(n, g) for n, g in zip(self._param_names, grads)
               if g is not None and not all_finite(g)]
        # Registration order follows the forward: the module of the last bad parameter is
        # nearest the output, so the first one backward reached.
        module_name = bad[-1][0].rpartition(".")[0]
        module = self.model.get_submodule(module_name)
        own = [(n, g) for n, g in bad if n.rpartition(".")[0] == module_name]
        others = [n for n, _ in bad if n.rpartition(".")[0] != module_name]
        stats = {n: tensor_stats(g) for n, g in own}
        held = "; ".join(f"{n}.grad {_describe_stats(s)}" for n, s in stats.items())
        also = f"; {len(others)} earlier parameters got non-finite gradients after it" if others else ""
        return NonFiniteError(
            f"{step}: the first non-finite gradient backward reached is in "
            f"{module_label(module_name, module)}: {held}, while the gradient at the model output "
            f"was finite{also}. Hint: the backward of that module (or an operation just after "
            "it) is unstable: sqrt/log/pow near 0, division by small norms; add an epsilon or "
            "clip gradients.",
            module=module_name, module_type=type(module).__name__, step=self.step,
            stats={"grads": stats, "later_parameters": others},
        )


def _finite_magnitude(value: Any) -> float | None:
    """The largest finite |x| over the float tensors in ``value``, None when it holds none."""
    largest = None
    for tensor in _float_tensors(value):
        data = tensor.detach().abs()
        data = data[finite_mask(data)]
        if data.numel():
            value_max = float(data.max())
            largest = value_max if largest is None else max(largest, value_max)
    return largest


def _overflowing(tensor: torch.Tensor) -> float:
    """A magnitude whose square is within a factor 1e6 of the dtype's largest value: outputs
    this large make any quadratic loss overflow."""
    dtype = tensor.dtype if tensor.is_floating_point() else torch.float32
    return float(torch.finfo(dtype).max) ** 0.5 / 1e3


def _exploded_stats(found: dict[str, Any]) -> dict[str, Any] | None:
    exploded = found.get("exploded")
    if exploded is None:
        return None
    return {"module": exploded["name"], "module_type": type(exploded["module"]).__name__,
            "magnitude": exploded["magnitude"], "input_scale": exploded["input_scale"]}



def _never_first(module: nn.Module) -> bool:
    """True for a module that cannot turn finite inputs into a NaN/Inf."""
    if isinstance(module, nn.Upsample):
        return module.mode in _INTERPOLATING
    return type(module) in _NEVER_FIRST  # a subclass with its own forward can make one


def _finite_probe(tensor: torch.Tensor) -> torch.Tensor | None:
    """A 0-d bool tensor on ``tensor``'s device, False when it holds a NaN or Inf (its minimum
    and maximum show them; finite values however large never overflow); no host sync. None
    for an empty tensor."""
    data = tensor.detach()
    if data.is_complex():
        data = torch.view_as_real(data)
    if not data.numel():
        return None
    return torch.isfinite(torch.stack(torch.aminmax(data))).all()


def _absorbed_text(stats: dict[str, Any] | None) -> str:
    """Why the model output stayed finite, in words that fit the values that were absorbed."""
    if stats is None:
        how = "an operation after it discarded the value"
    elif stats["nan"]:
        how = ("an operation after it replaced or discarded the NaN (nan_to_num, masked_fill, "
               "torch.where, as fully padded attention rows are handled)")
    elif stats["posinf"]:
        how = ("an operation after it absorbed the value (sigmoid(+Inf) is 1, clamp or "
               "masked_fill replace it)")
    else:
        how = ("an operation after it discarded the value (a softmax gives -Inf scores weight 0, "
               "as attention masking does on purpose; relu(-Inf) is 0)")
    return f"; the model output was still finite: {how}"


def _total_norm_finite(grads: list[torch.Tensor]) -> bool:
    total_norm = getattr(torch.nn.utils, "get_total_norm", None)
    if total_norm is not None:
        return bool(torch.isfinite(total_norm(grads)))
    return bool(torch.isfinite(torch.stack([torch.linalg.vector_norm(g) for g in grads])).all())


def _rng_states(args: tuple, kwargs: dict) -> dict[str, Any]:
    states: dict[str, Any] = {"cpu": torch.get_rng_state()}
    devices = {t.device for t in _float_tensors((args, kwargs)) if t.device.type == "cuda"}
    for device in devices:
        states[str(device)] = torch.cuda.get_rng_state(device)
    return states


@contextlib.contextmanager
def _replay_rng(states: dict[str, Any]) -> Iterator[None]:
    cuda = [torch.device(k) for k in states if k.startswith("cuda")]
    with torch.random.fork_rng(devices=[d.index or 0 for d in cuda], enabled=True):
        torch.set_rng_state(states["cpu"])
        for device in cuda:
            torch.cuda.set_rng_state(states[str(device)], device)
        yield


def trace_nonfinite(model: nn.Module, *, backward: bool = False,
                    optimizer: torch.optim.Optimizer | None = None) -> NonFiniteTracer:
    """Raise LG502 naming the first module that produced a NaN/Inf in ``model``.

    Args:
        model: the model to trace; at each step the output of each of its modules that can
            make a NaN/Inf of finite inputs is checked for NaN/Inf, all at once (one sync).
        backward: also check the gradients once per backward pass (one more reduction
            and sync per step).
        optimizer: the model's optimizer, audited (LG504/LG507) only when a non-finite
            value turns up, so that the message can say whether frozen parameters were
            optimised instead of guessing.

    Returns:
        A :class:`NonFiniteTracer`: a context manager; ``tracer.check(loss)`` also checks
        the loss.

    Raises:
        NonFiniteError: from the forward (or backward) call whose model output (or
            gradient) is non-finite; a non-finite value a later operation absorbed, the model
            output staying finite, is never raised but logged once as a warning and kept in
            ``tracer.first_nonfinite`` (``stats["first_nonfinite"]`` of a later error). The
            error names the module's qualified name and type, its
            input/output statistics, its non-finite parameters, the step, and the first
            module whose output magnitude had exploded before it (``stats["exploded"]``).

    Example::

        >>> with trace_nonfinite(model) as tracer:  # doctest: +SKIP
        ...     for x, y in loader:
        ...         loss = criterion(model(x), y)
        ...         tracer.check(loss)
        ...         loss.backward(); optimizer.step(); optimizer.zero_grad()
    """
    return NonFiniteTracer(model, backward=backward, optimizer=optimizer)
