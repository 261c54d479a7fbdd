"""preflight(model, loss_fn, loader): a few batches on the CPU that cross-check the setup.

On a CPU every mistake is a Python exception at a known place; on a GPU the same mistake is
a device-side assert hours later. Preflight runs ``batches`` batches through the model (in
eval mode, without gradients, restored afterwards; a copy on the CPU when the model is on an
accelerator) and the loss, and compares:

* the head's size (``out_features``/``out_channels`` of the last such layer run, and the
  output shape) with ``num_classes`` and with the targets seen (LG503);
* the loss's domain with the output (BCELoss after a head with no sigmoid: LG501);
* the loss's ``ignore_index`` with the values in the data (LG201), ``reduce_zero_label``
  with the classes left (LG104), and a one-hot/Dice loss with ignore values (LG501);
* a class-weight vector's length with the head (LG503);
* a batch of token ids (``input_ids``, ``token_type_ids``, ``position_ids``, ``labels``) with
  the model's own tables, before it runs: ids past the word embedding (LG601), sequences
  longer than the positions (LG602), segment ids past the token types (LG603), labels past
  the classification head (LG604), each with the rows that hold them;
* any other ids with every ``nn.Embedding``'s ``num_embeddings`` while the model runs (LG506);
* the target dtype and shape for the loss (LG505) and their values (LG201/LG102/LG204);
* freezes that freeze nothing (LG507) and, given the optimizer, its param groups (LG504).
"""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence, cast

import numpy as np
import torch
from torch import nn

from labelguard.rules._runtime import finding_of
from labelguard.rules.lg104 import one_class_reaches_the_loss
from labelguard.rules.lg201 import ignore_value_not_the_losses, negative_not_ignored_by_the_loss
from labelguard.rules.lg204 import NON_INTEGER
from labelguard.rules.lg501 import one_hot_ignore_present
from labelguard.rules.lg503 import class_weights_differ_from_head, head_differs_from_num_classes, targets_past_the_head
from labelguard.rules.lg506 import ids_past_the_embedding
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import IGNORE_REDUCED, LabelSpec
from labelguard.core.text import plural, shorten
from labelguard.errors import LabelError
from labelguard.torch._targets import (
    TARGET_KEYS,
    LossMode,
    TargetRules,
    TargetSelector,
    as_array,
    errors_of,
    select_input,
    select_target,
)
from labelguard.torch._tensors import all_finite
from labelguard.torch._errors import PreflightError
from labelguard.torch._losses import LossInfo, class_axis_size, loss_findings
from labelguard.torch._optim import Frozen, audit_optimizer, freeze_findings
from labelguard.torch._tokens import token_findings, token_spec_of

_ONE_HOT_ERRORS = ("Class values must be smaller than num_classes", "one_hot")


@dataclass
class PreflightReport:
    """What preflight ran and found.

    Attributes:
        findings: every finding, errors first.
        batches: the number of batches that went through the model.
        num_classes: the number of classes checked against (given, or the head's).
        head: the last layer with out_features/out_channels that ran: module name, type, size.
        output_shape: the shape of the model output of the first batch.
        target_values: distinct target values seen, with their counts.
        loss: the loss's name.
    """

    findings: list[Finding] = field(default_factory=list)
    batches: int = 0
    num_classes: int | None = None
    head: dict[str, Any] | None = None
    output_shape: list[int] | None = None
    target_values: dict[int, int] = field(default_factory=dict)
    loss: str | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity >= Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def __str__(self) -> str:
        head = (f"{head_phrase(self.head)} with {plural(self.head['outputs'], 'output')}"
                if self.head else "head not found")
        values = shorten(sorted(self.target_values), 20) or "none"
        loss = f"loss {self.loss}" if self.loss else "no loss"
        num_classes = "num_classes not given" if self.num_classes is None else f"num_classes {self.num_classes}"
        if self.batches:
            lines = [
                f"preflight: {plural(self.batches, 'batch')}, {loss}, {head}, output "
                f"{self.output_shape}, {num_classes}, target values {{{values}}}",
            ]
        else:
            lines = ["preflight: no batch reached the model"]
        for finding in self.findings:
            lines.append(f"  {finding.code} {finding.severity}: {finding.message}")
            if finding.hint:
                lines.append(f"      hint: {finding.hint}")
        if not self.findings:
            lines.append("  no problems found")
        return "\n".join(lines)


class _EmbeddingOverflow(Exception):
    """Stops a forward at the embedding whose ids exceed its table (it would raise anyway)."""


def preflight(
    model: nn.Module,
    loss_fn: Callable | None,
    loader: Iterable,
    *,
    num_classes: int | None = None,
    batches: int = 2,
    spec: LabelSpec | None = None,
    ignore_index: int | None = None,
    target: TargetSelector = None,
    forward: Callable[[nn.Module, Any], Any] | None = None,
    raise_on_error: bool = True,
    optimizer: torch.optim.Optimizer | None = None,
    frozen: Frozen | None = None,
) -> PreflightReport:
    """Run ``batches`` batches on the CPU and cross-check model, loss and data.

    Args:
        model: the model; left in its mode and on its device (a CPU copy runs when it is
            on an accelerator).
        loss_fn: the loss (a module, an ``F.*`` function or any callable), or None.
        loader: a DataLoader (or any iterable of batches).
        num_classes: the number of classes the data should have (the spec's, when given).
        batches: how many batches to run.
        spec: a LabelSpec (ignore values, reduce_zero_label, explicit values).
        ignore_index: the value the data uses for "ignore" (e.g. 255).
        target: where the target is in a batch (default: last element / label key).
        forward: ``(model, batch) -> output`` when the model is not called as
            ``model(batch[0])`` or ``model(**inputs)``.
        raise_on_error: raise :class:`PreflightError` when there are errors.
        optimizer: the optimizer; its param groups are audited against the model
            (:func:`audit_optimizer`: LG504, LG507).
        frozen: modules or parameters meant to stay fixed (names or objects); each one
            still trainable is LG507. Without it, modules that set ``requires_grad = False``
            as a plain attribute are found all the same.

    Targets are converted the way training loops do before the loss (``.long()`` for
    cross_entropy, ``.float()`` for BCE), so a float mask is not an error here.

    Returns:
        A :class:`PreflightReport`; ``str(report)`` is a readable summary.

    Raises:
        PreflightError: when there are errors and ``raise_on_error``; ``.report`` has them all.
    """
    spec = (spec or LabelSpec()).merged(LabelSpec(
        num_classes=num_classes,
        ignore=(ignore_index,) if ignore_index is not None else (),
    ))
    run = _Preflight(model, loss_fn, spec, target, forward)
    report = run.run(loader, batches)
    setup = (audit_optimizer(model, optimizer, frozen=frozen) if optimizer is not None
             else freeze_findings(model, frozen=frozen))
    report.findings = _dedupe([*report.findings, *setup])
    if raise_on_error and report.errors:
        first = report.errors[0]
        raise PreflightError(
            f"{first.code} preflight found {plural(len(report.errors), 'error')}:\n{report}",
            code=first.code, report=report,
        )
    return report


class _Preflight:
    """One preflight run: the CPU model with its hooks, the loss and what was seen."""

    def __init__(self, model, loss_fn, spec: LabelSpec, target, forward) -> None:
        self.model = _cpu_model(model)
        self.loss_fn = loss_fn
        self.info = LossInfo.of(loss_fn, strict=False) if loss_fn is not None else None
        self.spec = spec
        self.target = target
        self.forward = forward
        self.report = PreflightReport(num_classes=spec.effective_num_classes,
                                      loss=self.info.name if self.info else None)
        self.heads: list[tuple[str, nn.Module, int | None]] = []
        self.logits_head: tuple[str, nn.Module, int | None] | None = None
        self.classes = 0
        self.counts: Counter = Counter()
        self.loss_failed = False
        self.tokens = token_spec_of(self.model)

    @property
    def binary(self) -> bool:
        return self.info is not None and self.info.mode is LossMode.BINARY

    @property
    def loss_ignore(self) -> set[int]:
        if self.info is not None and self.info.mode is LossMode.INDEX and self.info.ignore_index is not None:
            return {self.info.ignore_index}
        return set()

    def run(self, loader: Iterable, batches: int) -> PreflightReport:
        was_training = self.model.training
        handles = _install_hooks(self.model, self.heads, self.report)
        self.model.eval()
        try:
            with torch.no_grad():
                for number, batch in enumerate(_batches(loader, batches, self.report), start=1):
                    self.report.batches = number
                    self._batch(batch, f"batch {number}")
        finally:
            for handle in handles:
                handle.remove()
            self.model.train(was_training)
        if self.heads:
            # The layer whose output the logits are (a detector's classifier, not the box
            # regressor that ran after it); else the last such layer with as many outputs as
            # the logits have classes (logits reshaped or concatenated); else none is named (a
            # layer of another size is not the head), unless no logits were seen.
            sized = next((head for head in reversed(self.heads) if _outputs(head[1]) == self.classes), None)
            chosen = self.logits_head or sized or (self.heads[-1] if not self.classes else None)
        else:
            chosen = None
        if chosen is not None:
            name, module, _ = chosen
            # A head has an int out_features or out_channels: _install_hooks picks no other module.
            size = cast(int, getattr(module, "out_features", None) or getattr(module, "out_channels", None))
            self.report.head = {"module": name, "type": type(module).__name__, "outputs": int(size)}
        self.report.target_values = dict(sorted(self.counts.items()))
        self._cross_check()
        self.report.findings = _dedupe(self.report.findings)
        return self.report

    def _batch(self, batch: Any, where: str) -> None:
        if self.tokens.is_known:
            found = token_findings(self.tokens, batch, where, self.spec)
            self.report.findings.extend(found)
            if errors_of(found):  # the forward would fail on the same ids, without naming the rows
                return
        target = select_target(batch, self.target)
        try:
            output = self.forward(self.model, batch) if self.forward else _call(self.model, batch)
        except _EmbeddingOverflow:
            return
        logits = _logits(output)
        if logits is None:
            return
        if self.logits_head is None and logits.layout == torch.strided and not logits.is_nested:
            self.logits_head = next((head for head in reversed(self.heads) if head[2] == logits.data_ptr()), None)
        if self.report.output_shape is None:
            self.report.output_shape = list(logits.shape)
            self.classes = class_axis_size(logits) if logits.dim() >= 1 else 1
        array = as_array(target)
        past_head = False
        if array is not None:
            values, numbers = np.unique(_whole(array), return_counts=True)
            self.counts.update(dict(zip(values.tolist(), numbers.tolist())))
            index_loss = self.info is not None and self.info.mode is LossMode.INDEX
            ignore = self.loss_ignore if index_loss else set(self.spec.ignore) | self.loss_ignore
            past_head = not self.binary and not self._head(ignore).legal(values, reduce=False).all()
        before = len(errors_of(self.report.findings))
        if array is not None and not self.binary:
            self.report.findings.extend(self._value_findings(where, array))
        loss_target = _as_loss_target(target, self.info)
        if isinstance(loss_target, torch.Tensor) and self.info is not None and self.info.mode is not None:
            self.report.findings.extend(loss_findings(
                self.info, logits, loss_target, where=where, check_values=False))
        # Values past the head would only crash the loss; the cross-check names them (LG503).
        if (self.loss_fn is not None and not past_head and not self._weight_mismatch()
                and len(errors_of(self.report.findings)) == before):
            self._call_loss(logits, loss_target, where)

    def _head(self, ignore: Iterable[int]) -> LabelSpec:
        """The model's head as a spec: its class indices, and the values the loss ignores."""
        if not self.classes:
            return LabelSpec(values=(), ignore=tuple(sorted(ignore)))
        return LabelSpec(num_classes=self.classes, ignore=tuple(sorted(ignore)))

    def _weight_mismatch(self) -> bool:
        info = self.info
        return (info is not None and isinstance(info.weight, torch.Tensor) and info.mode is LossMode.INDEX
                and info.weight.numel() != self.classes)

    def _value_findings(self, where: str, array: np.ndarray) -> list[Finding]:
        ignore = tuple(sorted(set(self.spec.ignore) | self.loss_ignore))
        if self.spec.is_known:
            found = TargetRules(replace(self.spec, ignore=ignore), LossMode.INDEX).check(where, array)
            return [f for f in found if f.severity > Severity.INFO]  # LG205 is about samples
        # Without a spec the head is the spec: the cross-check reports values past it (LG503).
        found = TargetRules(LabelSpec(num_classes=max(self.classes, 1), ignore=ignore)).check(where, array)
        return [f for f in found if f.code == NON_INTEGER.code]

    def _call_loss(self, logits: torch.Tensor, target: Any, where: str) -> None:
        if self.loss_failed:
            return
        try:
            self.loss_fn(logits, target)
        except (RuntimeError, IndexError, ValueError) as exc:
            if not any(marker in str(exc) for marker in _ONE_HOT_ERRORS):
                raise
            assert self.info is not None  # not a user mistake: a loss_fn is described by self.info
            head = self._head(())
            present = sorted(v for v in self.counts
                             if self.spec.is_ignored(v, reduce=False) or not head.is_legal(v, reduce=False))
            self.report.findings.append(
                one_hot_ignore_present(where, present or [IGNORE_REDUCED], self.info.name))
            self.loss_failed = True

    def _cross_check(self) -> None:
        """Head, class weights, ignore values and reduce_zero_label against the data."""
        report, classes, spec, info, counts = self.report, self.classes, self.spec, self.info, self.counts
        head_name = head_phrase(report.head) if report.head else "the model output"
        n = spec.effective_num_classes
        if classes and n is not None and not self.binary and classes != n:
            report.findings.append(head_differs_from_num_classes(classes, head_name, report.output_shape, n))
        if self.binary or not classes or not counts:
            return
        ignore = self.loss_ignore | set(spec.ignore)
        head = self._head(ignore)
        seen = sorted(v for v in counts if v not in ignore)
        outside = [v for v in seen if not head.is_legal(v, reduce=False)]
        too_large = [v for v in outside if v >= 0]
        if too_large:
            report.findings.append(targets_past_the_head(classes, head_name, seen, too_large, 0 in counts))
        negative = [v for v in outside if v < 0]
        if negative and not spec.is_known:
            report.findings.append(negative_not_ignored_by_the_loss(negative, info.ignore_index if info else None))
        data_ignore = sorted(v for v in set(spec.ignore) - self.loss_ignore if v in counts)
        if info is not None and info.mode is LossMode.INDEX and data_ignore:
            value = data_ignore[0]
            report.findings.append(ignore_value_not_the_losses(value, counts[value], info.name, info.ignore_index))
        if self._weight_mismatch():
            # not a user mistake: _weight_mismatch holds only for a loss with a weight tensor
            assert info is not None and info.weight is not None
            report.findings.append(
                class_weights_differ_from_head(info.name, int(info.weight.numel()), head_name, classes))
        classes_seen = [v for v in seen if 0 <= v < classes]
        if len(classes_seen) == 1 and classes >= 2 and (
                spec.reduce_zero_label or set(counts) == {classes_seen[0], IGNORE_REDUCED}):
            report.findings.append(one_class_reaches_the_loss(classes_seen[0], report.batches, classes))


def head_phrase(head: Mapping[str, Any]) -> str:
    """The head of a :class:`PreflightReport` as the subject of a sentence: "head 'decoder.cls'
    (Conv2d)", or "the model (a Conv2d)" when the model is the head itself (its name is "")."""
    if not head["module"]:
        return f"the model (a {head['type']})"
    return f"head '{head['module']}' ({head['type']})"


def _cpu_model(model: nn.Module) -> nn.Module:
    devices = {t.device.type for t in itertools.chain(model.parameters(), model.buffers())}
    if devices - {"cpu", "meta"}:
        return copy.deepcopy(model).to("cpu")
    return model


def _install_hooks(model: nn.Module, heads: list, report: PreflightReport) -> list:
    handles = []
    for name, module in model.named_modules():
        if isinstance(getattr(module, "out_features", None), int) or isinstance(
                getattr(module, "out_channels", None), int):
            handles.append(module.register_forward_hook(
                lambda m, i, o, name=name: heads.append((name, m, _storage(o)))))
        if isinstance(module, nn.Embedding):
            handles.append(module.register_forward_pre_hook(
                lambda m, inputs, name=name: _check_ids(name, m, inputs, report)))
    return handles


def _outputs(module: nn.Module) -> int | None:
    size = getattr(module, "out_features", None) or getattr(module, "out_channels", None)
    return size if isinstance(size, int) else None


def _storage(output: Any) -> int | None:
    """Where a layer's output tensor lives (its data pointer), to tell which layer gave the
    logits the loss sees; None for an output that is not one strided tensor."""
    if isinstance(output, torch.Tensor) and output.layout == torch.strided and not output.is_nested:
        return output.data_ptr()
    return None


def _check_ids(name: str, module: nn.Embedding, inputs: tuple, report: PreflightReport) -> None:
    ids = inputs[0] if inputs else None
    if not isinstance(ids, torch.Tensor) or ids.numel() == 0:
        return
    size = module.num_embeddings
    if int(ids.min()) >= 0 and int(ids.max()) < size:
        return
    bad = ids[(ids < 0) | (ids >= size)]
    report.findings.append(ids_past_the_embedding(name, sorted(set(bad.tolist())), bad.numel(), ids.numel(), size))
    raise _EmbeddingOverflow(name)


def _batches(loader: Iterable, count: int, report: PreflightReport) -> Iterable:
    iterator = iter(loader)
    for _ in range(count):
        try:
            yield next(iterator)
        except StopIteration:
            return
        except LabelError as error:  # a guarded dataset refused a sample
            # This iterator is done: shut its workers down now rather than in a finalizer.
            # Never kill them: a worker killed while it holds the lock of the iterator's
            # shared stop event leaves it held, and the shutdown then waits on it for ever.
            shutdown = getattr(iterator, "_shutdown_workers", None)
            if shutdown is not None:
                shutdown()
            report.findings.append(finding_of(error))
            return


def _call(model: nn.Module, batch: Any) -> Any:
    if isinstance(batch, Mapping) and "input_ids" in batch:
        return model(**{k: v for k, v in batch.items() if k not in TARGET_KEYS})
    inputs = select_input(batch)
    return model(batch if inputs is None else inputs)


def _logits(output: Any) -> torch.Tensor | None:
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, Mapping):
        for key in ("logits", "out", "output", "pred"):
            if isinstance(output.get(key), torch.Tensor):
                return output[key]
    logits = getattr(output, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    return None


def _as_loss_target(target: Any, info: LossInfo | None) -> Any:
    """The target as training loops hand it to the loss: int64 for cross_entropy, float for BCE."""
    if not isinstance(target, torch.Tensor) or info is None:
        return target
    if info.mode is LossMode.INDEX and target.dtype != torch.long:
        if not all_finite(target):
            return target
        return target.long()
    if info.mode is LossMode.BINARY and not target.is_floating_point():
        return target.float()
    return target


def _whole(array: np.ndarray) -> np.ndarray:
    flat = array.reshape(-1)
    if flat.dtype.kind == "f":
        flat = flat[np.isfinite(flat)]
        flat = flat[np.floor(flat) == flat]
    return flat.astype(np.int64)


def _dedupe(findings: Sequence[Finding]) -> list[Finding]:
    unique = list({(f.code, f.path, f.message): f for f in findings}.values())
    return sorted(unique, key=lambda f: -f.severity)
