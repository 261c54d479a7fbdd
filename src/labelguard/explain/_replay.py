"""Replay the batches of a flight record on the CPU to get the precise error.

On the GPU a bad target is a device-side assert that names no value and no sample. The same
samples run on the CPU raise a Python exception with the value ("Target 3 is out of bounds."),
so replaying the recorded batches through the user's dataset and loss names the sample and
the value. Each recorded batch is loaded (through :func:`labelguard.torch.guard` when a label
spec is given) and collated as the loader did, with its ``collate_fn`` (a detection loader's
``lambda b: tuple(zip(*b))``); with a loss, the batch is run through it, and when anything
fails every sample is run alone to say which.

A recorded batch is one the loader handed to the loop, so its collate succeeded in the run.
When no collate function was given (the factory returned a dataset) torch's
``default_collate`` stands in for it; if that fails on a recorded batch, the loader had its
own, and the batch is reported as not replayed for want of it, blaming no sample. A loss that
fails on a batch so collated and on each of its samples alone with one same error blames the
batch's form, not the samples.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from labelguard._optional import require
from labelguard.core.text import plural, shorten, verb
from labelguard.errors import LabelError, UsageError
from labelguard.flight import BatchRecord, FlightRecord, read_record

if TYPE_CHECKING:  # `labelguard explain` imports this package, and runs without numpy
    from labelguard.core.spec import LabelSpec

# How a batch error starts when torch's default_collate, standing in for a collate_fn nobody
# gave, fails on a batch the loader of the run collated.
_NOT_COLLATED = "not replayed: torch's default_collate (no collate_fn given) cannot collate it"
# What a loss error of the whole batch adds when, collated by that stand-in, every sample alone
# fails the loss with the same error.
_ALIKE = ("; every sample alone fails it alike, so the form torch's default_collate (no collate_fn "
          "given) made of the batch is more likely at fault than any sample")


@dataclass(frozen=True)
class SampleReplay:
    """One sample of a replayed batch.

    Attributes:
        index: its dataset index.
        source: its file, when the record has it.
        problems: what failed for it alone: a loading error, values outside the spec (with
            the check code), or the loss's CPU error.
    """

    index: int
    source: str | None
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "source": self.source, "problems": list(self.problems)}


@dataclass(frozen=True)
class BatchReplay:
    """One replayed batch.

    Attributes:
        role: ``batch in flight`` or ``batch before it`` / ``earlier batch``.
        batch: the batch as recorded.
        batch_error: the error of the whole batch (collate or loss), if any.
        samples: each sample's result.
    """

    role: str
    batch: BatchRecord
    batch_error: str | None
    samples: tuple[SampleReplay, ...]

    @property
    def replayed(self) -> bool:
        """False for a batch torch's default_collate, standing in for the run's own collate,
        could not collate: nothing of it was checked."""
        return not (self.batch_error or "").startswith(_NOT_COLLATED)

    @property
    def failed(self) -> bool:
        return self.replayed and (self.batch_error is not None or any(not s.ok for s in self.samples))

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "batch": self.batch.to_dict(),
            "batch_error": self.batch_error,
            "replayed": self.replayed,
            "failed": self.failed,
            "samples": [s.to_dict() for s in self.samples],
        }


@dataclass(frozen=True)
class ReplayReport:
    """The result of :func:`replay`."""

    record_path: str
    dataset: str
    checks: tuple[str, ...]
    batches: tuple[BatchReplay, ...]
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return any(b.failed for b in self.batches)

    @property
    def replayed(self) -> bool:
        """False when no recorded batch could be replayed (none was checked)."""
        return any(b.replayed for b in self.batches)

    @property
    def failing_samples(self) -> list[SampleReplay]:
        return [s for b in self.batches for s in b.samples if not s.ok]

    @property
    def summary(self) -> str:
        failing = self.failing_samples
        if failing:
            indices = shorten((s.index for s in failing), 10)
            return f"{plural(len(failing), 'sample')} {verb(len(failing), 'fails')} on the CPU: index {indices}"
        errors = [b.batch_error for b in self.batches if b.batch_error and b.replayed]
        unreplayed = [b for b in self.batches if not b.replayed]
        if unreplayed and not errors:
            return (f"{plural(len(unreplayed), 'recorded batch')} not replayed: torch's default_collate cannot "
                    "collate what the crashed run's loader did, and no collate_fn was given")
        if errors:
            return "a recorded batch fails on the CPU as a whole, no single sample does"
        return "no recorded sample fails on the CPU"

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "failed": self.failed,
            "record": self.record_path,
            "dataset": self.dataset,
            "checks": list(self.checks),
            "batches": [b.to_dict() for b in self.batches],
            "notes": list(self.notes),
        }


def load_callable(reference: str) -> Callable:
    """The function named by ``module:function`` or ``path/to/file.py:function``."""
    module_name, sep, attribute = reference.rpartition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"expected MODULE:FUNCTION, got {reference!r}")
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = Path(module_name)
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
        spec = importlib.util.spec_from_file_location(f"_labelguard_replay_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise UsageError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    try:
        function = getattr(module, attribute)
    except AttributeError:
        raise UsageError(f"{module_name} has no attribute {attribute!r}") from None
    if not callable(function):
        raise UsageError(f"{reference} is not callable")
    return function


def replay(
    record: str | os.PathLike | FlightRecord,
    dataset_factory: Callable[[], Any] | str | Any,
    *,
    loss: Callable[[Any], Any] | str | None = None,
    collate_fn: Callable[[list], Any] | str | None = None,
    spec: LabelSpec | None = None,
    num_classes: int | None = None,
    ignore_index: int | tuple[int, ...] | None = None,
    guard_loss: str | None = None,
    batches: int | None = None,
) -> ReplayReport:
    """Re-run the recorded batches on the CPU through the dataset (and the loss).

    Args:
        record: the flight record (path or loaded).
        dataset_factory: a function (or ``module:function``) returning the dataset, or the
            DataLoader whose dataset and collate_fn to use; or that DataLoader itself. It must
            build the same dataset as the crashed run (same files, same order), on the CPU.
        loss: a function (or ``module:function``) taking one collated batch, as the loader
            yields it, and computing the loss on the CPU; its exception is the precise error.
        collate_fn: the loader's collate function (or ``module:function``), when the factory
            returns a dataset; by default the DataLoader's own, else torch's
            ``default_collate``.
        spec, num_classes, ignore_index, guard_loss: when any is given, every sample is
            loaded through :func:`labelguard.torch.guard`, which checks its target against
            them (LG201, LG102, LG103, LG204, LG206; with ``guard_loss``, the loss the target
            feeds, e.g. ``"cross_entropy"`` or ``"bce"``, also LG505 and LG501) and names the
            value and the file.
        batches: how many recorded batches to replay, newest first; all by default.

    Returns:
        A :class:`ReplayReport` naming the samples that fail, with their errors.

    Raises:
        FlightRecordError: ``record`` is missing or not a flight record.
        labelguard.UsageError: a ``module:function`` reference that names nothing callable.
    """
    loaded = record if isinstance(record, FlightRecord) else read_record(record)
    factory = (
        load_callable(dataset_factory) if isinstance(dataset_factory, str) else dataset_factory
    )
    loss_fn = load_callable(loss) if isinstance(loss, str) else loss
    made: Any = factory if _is_loader(factory) else factory()
    dataset, collate = (made.dataset, made.collate_fn) if _is_loader(made) else (made, None)
    if collate_fn is not None:
        collate = load_callable(collate_fn) if isinstance(collate_fn, str) else collate_fn
    assumed = collate is None
    if collate is None:
        collate = require("torch.utils.data", "collate the replayed samples").default_collate

    notes: list[str] = []
    size = _length(dataset)
    if loaded.dataset_len is not None and size is not None and size != loaded.dataset_len:
        notes.append(
            f"the dataset has {size} samples but had {loaded.dataset_len} when recorded: the "
            "indices may point at other samples"
        )
    checks = ["load", "collate"]
    guarded = None
    if spec is not None or num_classes is not None or guard_loss is not None:
        require("torch", "check the replayed targets")
        from labelguard.torch import guard

        guarded = guard(
            dataset, spec, num_classes=num_classes, ignore_index=ignore_index, loss=guard_loss
        )
        checks.append("guard")
    if loss_fn is not None:
        checks.append("loss")
    else:
        notes.append(
            "no loss given: the samples were loaded and collated, not run through the loss"
        )

    chosen = list(reversed(loaded.batches))
    if batches is not None:
        chosen = chosen[:batches]
    results = tuple(
        _replay_batch(_role(position), batch, dataset, guarded, collate, loss_fn, assumed)
        for position, batch in enumerate(chosen)
    )
    if any(r.batch_error and r.batch_error.startswith(_NOT_COLLATED) for r in results):
        notes.append(
            "no collate_fn was given and torch's default_collate fails on batches the crashed run's "
            "loader collated: return the DataLoader from the dataset factory, or pass collate_fn="
        )
    if any(r.replayed for r in results) and not any(r.failed for r in results):
        notes.append(
            "nothing failed on the CPU: the fault may come from the model (an index computed "
            "inside it, NaN weights) rather than the samples; run the guard in the training loop"
        )
    return ReplayReport(
        record_path=loaded.path,
        dataset=_qualified_name(dataset),
        checks=tuple(checks),
        batches=results,
        notes=tuple(notes),
    )


def _role(position: int) -> str:
    return ("batch in flight", "batch before it")[position] if position < 2 else "earlier batch"


def _replay_batch(
    role: str,
    batch: BatchRecord,
    dataset: Any,
    guarded: Any,
    collate: Callable,
    loss_fn: Callable | None,
    assumed: bool,
) -> BatchReplay:
    """Load, check and collate one recorded batch, run the loss on it and, when anything
    failed, on each sample alone. ``assumed``: ``collate`` is torch's default standing in for
    a collate function nobody gave, which the loader of the run may not have used."""
    if batch.indices is None:
        return BatchReplay(role, batch, "the record has no indices for this batch", ())
    problems: dict[int, list[str]] = {}
    items: dict[int, Any] = {}
    for position, index in enumerate(batch.indices):
        problems[position] = []
        if guarded is not None:
            try:
                guarded[index]
            except LabelError as exc:
                problems[position].append(f"guard: {exc}")
            except Exception:  # a loading failure: reported below from the plain dataset
                pass
        try:
            items[position] = dataset[index]
        except Exception as exc:  # the user's dataset can raise anything: it is the finding
            problems[position].append(f"loading failed: {_describe(exc)}")

    batch_error = None
    if items:
        try:
            collated = collate(list(items.values()))
        except Exception as exc:
            if assumed:  # the run's loader collated these very samples: it collates otherwise
                return BatchReplay(role, batch, f"{_NOT_COLLATED} ({_describe(exc)})",
                                   _samples(batch, batch.indices, problems))
            batch_error = f"collate: {_describe(exc)}"
            for position, text in _odd_shapes(items).items():
                problems[position].append(text)
        else:
            if loss_fn is not None:
                batch_error = _run_loss(loss_fn, collated)
    if loss_fn is not None and (batch_error or any(problems.values())):
        alone_errors: dict[int, str] = {}
        for position, item in items.items():
            try:
                alone = collate([item])
            except Exception as exc:
                problems[position].append(f"collate: {_describe(exc)}")
                continue
            error = _run_loss(loss_fn, alone)
            if error:
                alone_errors[position] = error
        if assumed and batch_error and len(items) > 1 and len(alone_errors) == len(items) \
                and len(set(alone_errors.values())) == 1 and _about_form(batch_error):
            # every sample fails alike with an error about the batch's form (a type, a key, an
            # unpacking), not its values: the form default_collate gave it, not a sample
            batch_error += _ALIKE
            alone_errors.clear()
        for position, error in alone_errors.items():
            problems[position].append(error)
    return BatchReplay(role, batch, batch_error, _samples(batch, batch.indices, problems))


def _samples(
    batch: BatchRecord, indices: Sequence[int], problems: Mapping[int, list[str]]
) -> tuple[SampleReplay, ...]:
    sources = batch.sources or (None,) * len(indices)
    return tuple(
        SampleReplay(index, source, tuple(problems[position]))
        for position, (index, source) in enumerate(zip(indices, sources))
    )


def _is_loader(made: Any) -> bool:
    """A DataLoader (or anything holding a dataset and its collate_fn, as record() returns)."""
    return hasattr(made, "dataset") and hasattr(made, "collate_fn")


# Errors about the form of a batch (what a loss written for another collate meets), as
# _describe writes them; an error about values ("Target 255 is out of bounds") is a sample's.
_FORM_ERRORS = ("loss: TypeError", "loss: AttributeError", "loss: KeyError", "loss: ValueError: not enough values",
                "loss: ValueError: too many values")


def _about_form(error: str) -> bool:
    return error.startswith(_FORM_ERRORS)


def _run_loss(loss_fn: Callable, batch: Any) -> str | None:
    try:
        loss_fn(batch)
    except Exception as exc:  # the loss's own exception is the precise CPU error we want
        return f"loss: {_describe(exc)}"
    return None


def _odd_shapes(items: Mapping[int, Any]) -> dict[int, str]:
    shapes = {position: _shapes(item) for position, item in items.items()}
    common, _ = Counter(shapes.values()).most_common(1)[0]
    return {
        position: f"LG206: shapes {_fmt(shape)} differ from most of the batch: {_fmt(common)}"
        for position, shape in shapes.items()
        if shape != common
    }


def _shapes(item: Any) -> tuple:
    if isinstance(item, Mapping):
        return tuple(_shapes(v) for v in item.values())
    if isinstance(item, (tuple, list)):
        return tuple(_shapes(v) for v in item)
    shape = getattr(item, "shape", None)
    return tuple(shape) if shape is not None else ()


def _fmt(shape: tuple) -> str:
    return repr(shape).replace("torch.Size", "")


def _describe(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0] if message else ''}".rstrip(": ")


def _length(dataset: Any) -> int | None:
    try:
        return len(dataset)
    except TypeError:
        return None


def _qualified_name(obj: Any) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"
