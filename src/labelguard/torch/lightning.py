"""LabelGuardCallback: labelguard in PyTorch Lightning (``lightning`` or ``pytorch_lightning``).

Imported on its own (``from labelguard.torch.lightning import LabelGuardCallback``) so that
labelguard.torch never needs Lightning.

At fit start it runs :func:`labelguard.torch.preflight` on the model, its loss and two
training batches. During training and validation it checks each batch's target before the
step: one reduction and one sync per batch, on the device the batch is on. With
``watch=True`` it runs :func:`labelguard.torch.watch` over the training (LG508: the loss,
gradient norm and activations growing by orders of magnitude before any NaN; no sync). Batches do not
know their files; wrap the datasets with :func:`labelguard.torch.guard` in the DataModule
to have errors name the file (the callback logs whether they are).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any, Callable

import torch

from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec
from labelguard.errors import MissingDependency
from labelguard.rules._runtime import named_finding
from labelguard.torch._targets import (
    LossMode,
    TargetRules,
    TargetSelector,
    dtype_name,
    errors_of,
    sample_error,
    select_target,
    target_arrays,
    tensor_target_ok,
)
from labelguard.torch._guard import GuardedDataset, GuardedIterableDataset
from labelguard.torch._losses import LossInfo
from labelguard.torch._preflight import PreflightReport, preflight
from labelguard.torch._watch import DivergenceWatch, watch

try:
    import lightning.pytorch as pl
except ImportError:
    try:
        import pytorch_lightning as pl  # type: ignore[no-redef]  # the older package name of the same API
    except ImportError:
        raise MissingDependency(
            "LabelGuardCallback needs PyTorch Lightning: pip install lightning"
        ) from None

log = logging.getLogger("labelguard.torch")

# Attribute names LightningModules commonly keep their loss under.
_LOSS_ATTRIBUTES = ("loss_fn", "criterion", "loss", "ce_loss", "loss_func")


class LabelGuardCallback(pl.Callback):
    """Preflight at fit start, target checks on every training and validation batch.

    Args:
        num_classes: the number of classes (else the spec's, else the head's from preflight).
        spec: a LabelSpec (or mapping) with ignore values, explicit values...
        ignore_index: the value targets use for "ignore"; read from the loss when not given.
        loss_fn: the loss; default: the module's ``loss_fn``/``criterion``/``loss`` attribute.
        preflight: run preflight at fit start (raises PreflightError on errors).
        batches: batches preflight runs.
        check_batches: check each batch's target before the step.
        target: where the target is in a batch (default: last element / label key).
        forward: ``(model, batch) -> output`` for preflight, when not ``model(batch[0])``.
        watch: watch the training for divergence (:func:`labelguard.torch.watch`, warnings
            logged as they are found); the loss is the one Lightning backpropagates. With
            several optimizers, each forward of the module counts as a step.
        watch_every: the watch's window of steps once training is calm (its first steps
            and those after growth are read one by one: :func:`labelguard.torch.watch`).

    Attributes:
        report: the preflight report, after fit start.
        watcher: the :class:`labelguard.torch.DivergenceWatch`, from train start.
        findings: the watch's findings, at train end.
    """

    def __init__(
        self,
        num_classes: int | None = None,
        *,
        spec: LabelSpec | Mapping[str, Any] | None = None,
        ignore_index: int | None = None,
        loss_fn: Callable | None = None,
        preflight: bool = True,
        batches: int = 2,
        check_batches: bool = True,
        target: TargetSelector = None,
        forward: Callable | None = None,
        watch: bool = False,
        watch_every: int = 16,
    ) -> None:
        super().__init__()
        if isinstance(spec, Mapping):
            spec = LabelSpec.from_mapping(spec, source="LabelGuardCallback(spec=...)")
        self.spec = spec or LabelSpec()
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.loss_fn = loss_fn
        self.run_preflight = preflight
        self.batches = batches
        self.check_batches = check_batches
        self.target = target
        self.forward = forward
        self.report: PreflightReport | None = None
        self._rules: TargetRules | None = None
        self.watch_training = watch
        self.watch_every = watch_every
        self.watcher: DivergenceWatch | None = None
        self.findings: list[Finding] = []

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        loss_fn = self.loss_fn or _module_loss(pl_module)
        info = LossInfo.of(loss_fn, strict=False) if loss_fn is not None else None
        ignore = self.ignore_index
        if ignore is None and info is not None:
            ignore = info.ignore_index
        if self.run_preflight:
            loader = _train_loader(trainer, pl_module)
            if loader is None:
                log.warning("LabelGuardCallback: no training dataloader found; preflight skipped")
            else:
                _log_guarded(loader)
                self.report = preflight(
                    pl_module, loss_fn, loader, num_classes=self.num_classes,
                    batches=self.batches, spec=self.spec, ignore_index=self.ignore_index,
                    target=self.target, forward=self.forward,
                )
                log.info("%s", self.report)
        num_classes = self.num_classes or self.spec.effective_num_classes
        if num_classes is None and info is not None and info.mode is LossMode.INDEX and self.report:
            shape = self.report.output_shape or []
            num_classes = shape[1] if len(shape) > 1 else None
        spec = self.spec.merged(LabelSpec(
            num_classes=num_classes, ignore=(ignore,) if ignore is not None else ()))
        self._rules = TargetRules(spec) if spec.is_known else None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if self.watch_training:
            optimizers = list(getattr(trainer, "optimizers", None) or [])
            self.watcher = watch(pl_module, optimizers[0] if len(optimizers) == 1 else None,
                                 every=self.watch_every).attach()

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: torch.Tensor) -> None:
        if self.watcher is not None:
            self.watcher.observe(loss)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.watcher is not None:
            self.watcher.detach()
            self.findings = self.watcher.report()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._check(batch, f"training batch {batch_idx}")

    def on_validation_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                                  batch_idx: int, dataloader_idx: int = 0) -> None:
        self._check(batch, f"validation batch {batch_idx} of loader {dataloader_idx}")

    def _check(self, batch: Any, where: str) -> None:
        if not self.check_batches or self._rules is None:
            return
        target = select_target(batch, self.target)
        # A nested target takes no comparison as a whole: its components are checked one by one.
        if not isinstance(target, torch.Tensor) or (not target.is_nested
                                                    and tensor_target_ok(target, self._rules.spec)):
            return
        for named, part, array in target_arrays(target.detach().cpu()):
            errors = errors_of(self._rules.check(None, array, dtype_name(part))) if array is not None else []
            if errors:
                raise sample_error(named_finding(named, errors[0]), where=where, index=None, source=None,
                                   expected=self._rules.expected())


def _module_loss(pl_module: Any) -> Callable | None:
    for name in _LOSS_ATTRIBUTES:
        value = getattr(pl_module, name, None)
        if callable(value) and not inspect.ismethod(value):
            return value
    return None


def _train_loader(trainer: Any, pl_module: Any) -> Any:
    datamodule = getattr(trainer, "datamodule", None)
    if datamodule is not None:
        return datamodule.train_dataloader()
    source = getattr(getattr(trainer, "fit_loop", None), "_data_source", None)
    if source is not None and hasattr(source, "dataloader"):
        try:
            return source.dataloader()
        except (AttributeError, NotImplementedError, TypeError):
            log.debug("fit loop data source gave no loader", exc_info=True)
    try:
        return pl_module.train_dataloader()
    except (AttributeError, NotImplementedError, TypeError):
        return None


def _log_guarded(loader: Any) -> None:
    dataset = getattr(loader, "dataset", None)
    if isinstance(dataset, (GuardedDataset, GuardedIterableDataset)):
        log.info("LabelGuardCallback: the training dataset is guarded; errors name the files")
    else:
        log.info("LabelGuardCallback: wrap the datasets with labelguard.torch.guard() to have "
                 "errors name the sample's file, not only the batch")
