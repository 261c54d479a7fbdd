"""guard(dataset): check every target where the sample is produced, on the CPU.

The check runs inside ``__getitem__`` / ``__iter__``, so in DataLoader workers when there are
workers: no GPU work, no host-device sync, and the sample's index and file are still known.

Records of bad samples go to one JSON-lines file shared by the main process and every
worker (the ``quarantine`` path, or a temporary file): each process appends under a file
lock and skips records already there, so after an epoch (or a crash) the file lists each
bad sample once, whatever the number of workers and epochs. A sample of an IterableDataset
is known by its position in its worker's stream, so its record names the worker too.

With ``on_error="skip"`` at most :data:`MAX_SUBSTITUTES` bad samples in a row are skipped;
one more ends the run with a SampleError, so a stream of nothing but bad samples stops
instead of spinning (an endless stream) or training on nothing (a finite one). What takes a
skipped sample's place in a map-style dataset is ``substitute``'s choice (:data:`SUBSTITUTES`);
each record says which index took it (``replaced_by``).

A sample the wrapped dataset cannot produce (its ``__getitem__`` raises: a missing file, a
corrupt one) is a bad sample too: skipped and recorded with the original error under
``on_error="skip"`` or ``"warn"``, re-raised unchanged (with a note naming the sample) under
``"raise"``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, cast

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from labelguard.rules._runtime import named_finding
from labelguard.rules._unread import load_failure
from labelguard.rules.lg001 import UNREADABLE
from labelguard.rules.lg003 import MISSING
from labelguard.rules.lg004 import UNCLEAN_LIST
from labelguard.rules.lg505 import no_checkable_target
from labelguard.core.spec import LabelSpec
from labelguard.core.text import clipped, plural
from labelguard.errors import UnsupportedError, UsageError
from labelguard.torch._sources import source_in_sample, source_of
from labelguard.torch._targets import (
    BOX_LAYOUTS,
    TargetProblem,
    TargetRules,
    TargetSelector,
    box_problems,
    detection_boxes,
    dtype_name,
    errors_of,
    geometry_finding,
    input_finding,
    input_name,
    sample_error,
    select_input,
    selected_target,
    target_arrays,
    target_classes,
)
from labelguard.torch._collate import DroppedSample, remember_sample
from labelguard.torch._losses import rules_for
from labelguard.torch._tokens import holds_tokens, token_findings, token_spec_of
from labelguard.torch._errors import SampleError, raise_sample_error

try:
    import fcntl
except ImportError:  # Windows: records are appended without a lock
    fcntl = None  # type: ignore[assignment]  # the module or None; its users test for None

log = logging.getLogger("labelguard.torch")

ON_ERROR = ("raise", "skip", "warn")
# What takes a skipped sample's place in a map-style dataset: the next good index (batches
# keep their size; the neighbour is seen twice), a good index drawn at random (no one
# neighbour over-weighted), or nothing (the guard's collate leaves it out: a shorter batch).
SUBSTITUTES = ("next", "random", "drop")
# With on_error="skip", this many bad samples in a row are skipped; the next one ends the run.
MAX_SUBSTITUTES = 32


@dataclass(frozen=True)
class QuarantineRecord:
    """One bad sample: where it is, what is wrong, and what the guard did with it.

    ``worker`` is the DataLoader worker whose stream ``index`` counts in, for a sample of an
    IterableDataset read by a worker; None for a map-style dataset, whose index is global.
    ``error`` is the exception the dataset raised for the sample (type and message), when
    it raised one. ``replaced_by`` is the index of the good sample served in its place
    (``on_error="skip"``, ``substitute="next"`` or ``"random"``); None when nothing was: a
    dropped sample, a sample of an IterableDataset (the stream's next sample simply follows),
    one for which no good sample was found, or one met only while looking for another
    sample's replacement and never asked for itself.
    """

    index: int | None
    source: str | None
    code: str
    values: list | None
    message: str
    action: str  # skipped | dropped | warned | raised
    worker: int | None = None
    error: str | None = None
    replaced_by: int | None = None

    @property
    def key(self) -> tuple:
        return (self.index, self.source, self.code, self.worker)


class RecordStore:
    """A JSON-lines file of QuarantineRecords, appended to by several processes.

    One record per key, but for one update: a record without ``replaced_by`` (a bad sample
    met while looking for another's replacement) is followed by the record naming what was
    served when that sample is asked for itself; :meth:`read` keeps the later one.
    """

    def __init__(self, path: str | os.PathLike | None) -> None:
        if path is None:
            handle, name = tempfile.mkstemp(prefix="labelguard-records-", suffix=".jsonl")
            os.close(handle)
            self.path = Path(name)
            weakref.finalize(self, _remove_if_owner, self.path, os.getpid())
        else:
            self.path = Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")  # a new guard starts a new quarantine
        self._reset_process_state()

    def _reset_process_state(self) -> None:
        self._pid = os.getpid()
        self._seen: dict[tuple, bool] = {}  # key -> whether its record names what was served
        self._offset = 0

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]
        self._reset_process_state()

    def add(self, record: QuarantineRecord) -> None:
        """Append ``record`` unless a record with the same key is already in the file, or
        only one without ``replaced_by`` is and ``record`` has one."""
        if os.getpid() != self._pid:  # a forked worker: its own file offset and lock
            self._reset_process_state()
        with open(self.path, "a+", encoding="utf-8") as handle:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(self._offset)
                for line in handle:
                    data = json.loads(line)
                    key = _key_of(data)
                    self._seen[key] = self._seen.get(key, False) or data.get("replaced_by") is not None
                self._offset = handle.tell()
                served = self._seen.get(record.key)
                if served is not None and (served or record.replaced_by is None):
                    return
                line = json.dumps(asdict(record), default=str) + "\n"
                handle.write(line)
                handle.flush()
                self._offset = handle.tell()
                self._seen[record.key] = record.replaced_by is not None
            finally:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def read(self) -> list[QuarantineRecord]:
        if not self.path.exists():
            return []
        records: dict[tuple, QuarantineRecord] = {}  # in first-met order; a later record updates
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = QuarantineRecord(**json.loads(line))
                records[record.key] = record
        return list(records.values())


def _key_of(data: Mapping[str, Any]) -> tuple:
    return (data.get("index"), data.get("source"), data.get("code"), data.get("worker"))


def _remove_if_owner(path: Path, owner: int) -> None:
    if os.getpid() == owner:
        path.unlink(missing_ok=True)


class _SampleGuard:
    """What the dataset wrappers share: the rules, how to find target and source, the store."""

    def __init__(
        self,
        rules: TargetRules,
        target: TargetSelector,
        source: Callable[[int], Any] | None,
        on_error: str,
        store: RecordStore,
        substitute: str = "next",
        tokens: Any = None,
        check_inputs: bool = True,
        input_range: tuple[float, float] | None = None,
        boxes: str | bool | None = None,
    ) -> None:
        self.rules = rules
        self.target = target
        self.source = source
        self.on_error = on_error
        self.substitute = substitute
        self.store = store
        self.tokens = tokens  # the TokenSpec of guard(model=...), or None
        self.check_inputs = check_inputs
        self.input_range = input_range
        self.boxes = boxes  # guard(boxes=...): how detection boxes are written, None for the defaults

    def load(self, dataset: Any, index: Any) -> tuple[Any, BaseException | None]:
        """``dataset[index]``, or the exception its ``__getitem__`` raised."""
        try:
            return dataset[index], None
        except Exception as exc:  # the dataset's own code: any error is about this sample
            return None, exc

    def raised_error(self, exc: BaseException, index: int | None, dataset: Any, where: str) -> SampleError:
        """The SampleError for a sample whose loading raised ``exc``: LG003 for a missing file
        (named by the error itself when it carries the path), LG001 for any other error."""
        named = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
        source = os.fspath(named) if isinstance(named, (str, os.PathLike)) else None
        if source is None:
            source = self._source(None, index, dataset)
        text = clipped(f"{type(exc).__name__}: {exc}", 500)
        if isinstance(exc, FileNotFoundError):
            check, hint = MISSING, "Restore the file or drop its entry from the list the dataset reads."
            if source is not None and _stray_whitespace(source):
                hint = (f"The path {source!r} has whitespace at the end of a name or before its "
                        f"extension: a list line with a trailing space, tab or CR "
                        f"({UNCLEAN_LIST.code}). Strip each line where the dataset reads its list "
                        "(line.strip()), or clean the list: labelguard fix list LIST --apply.")
        else:
            check, hint = UNREADABLE, ("Fix or remove the file (labelguard audit lists every file it "
                                       "cannot read as LG001), or fix the dataset code that raised.")
        finding = load_failure(check, text, hint)
        error = sample_error(finding, where=where, index=index, source=source,
                             expected="a sample the dataset can load")
        error.raised = text
        return error

    def check(self, sample: Any, index: int | None, dataset: Any, where: str) -> SampleError | None:
        if self.tokens is not None and holds_tokens(sample):
            return self._token_error(sample, index, dataset, where)
        try:
            selected = selected_target(sample, self.target)
            boxes = detection_boxes(sample, selected, self.boxes)
            if self.boxes == "yolo" and boxes is not None and _is_rows(selected):
                target = selected[:, 0]  # YOLO rows: the class is the first column
            else:
                target = target_classes(selected)
            if target is None:
                raise TargetProblem("the target is None: the dataset gave this sample no label; return "
                                    "one for every sample")
            parts = target_arrays(target)
        except TargetProblem as problem:
            # The sample can be neither checked nor trained on: an error about it, named.
            return self._error(no_checkable_target(str(problem)), sample, index, dataset, where)
        findings = []
        image = select_input(sample)
        if self.check_inputs and image is not None:
            bad_input = input_finding(None, image, input_name(sample), self.input_range)
            if bad_input is not None:
                findings.append(bad_input)
        spec = self.rules.spec
        geometry = geometry_finding(None, image, target, spec) if _spatial(image, target, spec) else None
        if geometry is not None:
            findings.append(geometry)
        for named, part, array in parts:
            if array is not None and not self.rules.clearly_legal(array):
                findings.extend(named_finding(named, f) for f in self.rules.check(None, array, dtype_name(part)))
        if boxes is not None and len(boxes.values):  # after the class ids: a bad id is the device assert
            findings.extend(box_problems(boxes, image, self.rules.spec))
        errors = errors_of(findings)
        if not errors:
            return None
        return self._error(errors[0], sample, index, dataset, where)

    def _token_error(self, sample: Any, index: int | None, dataset: Any, where: str) -> SampleError | None:
        """A tokenized sample's ids, length, segment ids and labels against the model's
        tables (LG601-LG604); its target is its labels, judged there."""
        errors = errors_of(token_findings(self.tokens, sample, where, self.rules.spec, start=index or 0))
        if not errors:
            return None
        return sample_error(errors[0], where=where, index=index, source=self._source(sample, index, dataset),
                            expected=errors[0].data.get("expected", self.rules.expected()))

    def _error(self, finding: Any, sample: Any, index: int | None, dataset: Any, where: str) -> SampleError:
        return sample_error(
            finding, where=where, index=index,
            source=self._source(sample, index, dataset), expected=self.rules.expected(),
        )

    def _source(self, sample: Any, index: int | None, dataset: Any) -> str | None:
        found = None
        if index is not None:
            found = self.source(index) if self.source is not None else source_of(dataset, index)
        if found is None:
            found = source_in_sample(sample)
        return None if found is None else os.fspath(found)

    def record(self, error: SampleError, action: str, worker: int | None = None,
               replaced_by: int | None = None) -> None:
        self.store.add(QuarantineRecord(
            index=error.index, source=error.source, code=error.code,
            values=error.values, message=error.message, action=action, worker=worker,
            error=getattr(error, "raised", None), replaced_by=replaced_by,
        ))

    def reraise(self, exc: BaseException, error: SampleError, worker: int | None = None) -> None:
        """Re-raise what the dataset raised, unchanged but for a note naming the sample."""
        self.record(error, "raised", worker)
        if hasattr(exc, "add_note"):  # Python 3.11+
            exc.add_note(f"labelguard.torch.guard: {error.message} (on_error='skip' skips and "
                         "records such samples)")
        raise exc

    def fail(self, error: SampleError, worker: int | None = None) -> None:
        self.record(error, "raised", worker)
        raise_sample_error(error)

    def warn(self, error: SampleError, worker: int | None = None) -> None:
        self.record(error, "warned", worker)
        log.warning("%s", error.message)


def no_replacement(first: SampleError, bad_in_a_row: int, substitute: str = "next") -> SampleError:
    """The error that ends a skipping run after ``bad_in_a_row`` bad samples in a row, the
    first of them ``first``; ``substitute``: how the replacements were looked for."""
    if bad_in_a_row == 1:
        run = "it is the only sample"
    elif substitute == "random":
        run = f"it and the {plural(bad_in_a_row - 1, 'sample')} drawn at random in its place are all bad"
    else:
        run = f"it and the {plural(bad_in_a_row - 1, 'sample')} after it are all bad"
    return SampleError(
        f"{first.message}{' ' if first.message.endswith('.') else '. '}on_error='skip' "
        f"(substitute={substitute!r}) found no good sample to serve in its place: {run}, and at "
        f"most {MAX_SUBSTITUTES} bad samples in a row are skipped. Fix the data or the spec.",
        code=first.code, index=first.index, source=first.source,
        values=first.values, expected=first.expected,
    )


def _is_rows(value: Any) -> bool:
    return isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 2


def _spatial(image: Any, target: Any, spec: LabelSpec) -> bool:
    """True when image and target look like an image/mask pair (mask 2-D, (1, H, W) or a
    volume one axis shorter than its image), or, under a declared scale factor, an image
    pair of one rank (super-resolution: (3, 24, 24) for (3, 12, 12)); a nested target has no
    one shape to pair."""
    target_ndim = getattr(target, "ndim", None)
    image_ndim = getattr(image, "ndim", None)
    if target_ndim is None or image_ndim is None or target_ndim < 2 or getattr(target, "is_nested", False):
        return False
    shape = tuple(target.shape)
    scaled = spec.scale is not None and target_ndim == image_ndim
    return target_ndim == 2 or shape[0] == 1 or target_ndim == image_ndim - 1 or scaled


class _GuardedBase:
    """Records and attribute access shared by the map-style and iterable wrappers."""

    dataset: Any
    _guard: _SampleGuard

    @property
    def records(self) -> list[QuarantineRecord]:
        """Every bad sample recorded so far by this process and all its DataLoader workers."""
        return self._guard.store.read()

    @property
    def quarantine_path(self) -> Path:
        """The JSON-lines file the records are written to."""
        return self._guard.store.path

    def write_quarantine(self, path: str | os.PathLike) -> Path:
        """Copy the records to ``path`` (JSON lines) and return it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(asdict(r), default=str) for r in self.records]
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return path

    def __getattr__(self, name: str) -> Any:
        # Reached only for attributes the wrapper lacks: classes, sample_list, transforms...
        if name.startswith("__") or name in ("dataset", "_guard"):
            raise AttributeError(name)
        return getattr(self.dataset, name)


class GuardedDataset(_GuardedBase, Dataset):
    """A map-style dataset whose every sample's target is checked when it is loaded.

    With ``on_error="skip"`` a bad sample is recorded and, by ``substitute``, replaced by the
    next good index (``"next"``: batches keep their size, that neighbour is served twice), by
    a good index drawn at random (``"random"``), or handed out as a :class:`DroppedSample`
    that :func:`labelguard.torch.collate` leaves out of its batch (``"drop"``). ``records``
    lists every bad sample after the epoch, with the index served in its place
    (``replaced_by``); ``substitutions`` maps one to the other.
    """

    def __init__(self, dataset: Any, guard: _SampleGuard) -> None:
        self.dataset = dataset
        self._guard = guard

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: Any) -> Any:
        sample, error = self._sample(index)
        if error is None:
            return sample
        if self._guard.on_error == "raise" or _as_index(index) is None:
            if isinstance(sample, BaseException):
                self._guard.reraise(sample, error)
            self._guard.fail(error)
        # "warn" passes a bad sample through, but a sample that could not be loaded has
        # nothing to pass: it is skipped, and said as loudly as a warning.
        level = logging.WARNING if self._guard.on_error == "warn" else logging.INFO
        index = int(index)
        other, replacement = self._replacement(index, error)
        if self._guard.substitute == "drop":
            self._guard.record(error, "dropped")
            log.log(level, "skipped %s It is dropped from its batch (substitute='drop').", error.message)
            return DroppedSample(index, replacement, other)
        self._guard.record(error, "skipped", replaced_by=other)
        log.log(level, "skipped %s Sample %d is served in its place (substitute=%r).",
                error.message, other, self._guard.substitute)
        return replacement

    def _sample(self, index: Any) -> tuple[Any, SampleError | None]:
        """(sample, None) for a sample to hand out (good, or bad under "warn", which is then
        logged and recorded); (sample or the dataset's exception, its error) otherwise."""
        where = f"sample {index}"
        sample, raised = self._guard.load(self.dataset, index)
        if raised is not None:
            return raised, self._guard.raised_error(raised, _as_index(index), self.dataset, where)
        error = self._guard.check(sample, _as_index(index), self.dataset, where)
        if error is not None and self._guard.on_error != "warn":
            return sample, error
        if error is not None:
            self._guard.warn(error)
        remember_sample(index, sample, self)
        return sample, None

    @property
    def substitutions(self) -> dict[int, int]:
        """Bad sample index -> the index served in its place, as recorded by this process and
        its DataLoader workers (the first time each bad sample was asked for)."""
        return {r.index: r.replaced_by for r in self.records
                if r.index is not None and r.replaced_by is not None}

    def _replacement(self, index: int, first: SampleError) -> tuple[int, Any]:
        """(index, sample) of the good sample to serve in the place of bad sample ``index``.
        The bad ones met on the way are recorded without ``replaced_by``: what takes their
        place is known only when each is asked for (under "random" another draw)."""
        bad: list[SampleError] = []
        for other in self._candidates(index):
            sample, error = self._sample(other)
            if error is None:
                dropped = self._guard.substitute == "drop"
                for met in bad:
                    self._guard.record(met, "dropped" if dropped else "skipped")
                return other, sample
            bad.append(error)
        self._guard.record(first, "skipped")
        for met in bad:
            self._guard.record(met, "skipped")
        raise_sample_error(no_replacement(first, len(bad) + 1, self._guard.substitute))

    def _candidates(self, index: int) -> list[int]:
        """The indices tried, in order, for the place of bad sample ``index``: the following
        ones, or (substitute="random") ones drawn from a generator seeded by torch's seed of
        this process and the index, so a run under torch.manual_seed draws the same."""
        size = len(self.dataset)
        count = min(size - 1, MAX_SUBSTITUTES)
        if count <= 0:
            return []
        if self._guard.substitute == "random":
            draws = np.random.default_rng([torch.initial_seed(), index]).integers(1, size, count)
            return [(index + int(step)) % size for step in draws]
        return [(index + step) % size for step in range(1, count + 1)]

    def source(self, index: int) -> str | None:
        """The file of sample ``index`` as the guard names it (None when unknown)."""
        return self._guard._source(None, index, self.dataset)


class GuardedIterableDataset(_GuardedBase, IterableDataset):
    """An iterable dataset whose every sample's target is checked when it is produced.

    ``index`` in errors and records is the position in this process's (worker's) stream;
    the source comes from the sample (``path``/``file``/``__key__``...) when it names one.
    """

    def __init__(self, dataset: Any, guard: _SampleGuard) -> None:
        self.dataset = dataset
        self._guard = guard

    def __len__(self) -> int:
        return len(self.dataset)

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker = None if info is None else info.id
        stream = f" of worker {worker}'s stream" if worker is not None else ""
        first_bad, bad_in_a_row = None, 0  # since the last good sample
        for position, sample in enumerate(self._stream(worker, stream)):
            error = self._guard.check(sample, position, None, f"sample {position}{stream}")
            if error is not None:
                if self._guard.on_error == "raise":
                    self._guard.fail(error, worker)
                if self._guard.on_error == "skip":
                    first_bad, bad_in_a_row = first_bad or error, bad_in_a_row + 1
                    if bad_in_a_row > MAX_SUBSTITUTES:
                        self._guard.record(error, "raised", worker)
                        raise_sample_error(no_replacement(first_bad, bad_in_a_row))
                    self._guard.record(error, "skipped", worker)
                    log.info("skipped %s", error.message)
                    continue
                self._guard.warn(error, worker)
            first_bad, bad_in_a_row = None, 0
            yield sample

    def _stream(self, worker: int | None, stream: str) -> Iterator[Any]:
        """The wrapped stream; an exception it raises ends it (a generator cannot go on after
        raising), so it is recorded and re-raised with a note naming the position."""
        iterator = iter(self.dataset)
        position = 0
        while True:
            try:
                sample = next(iterator)
            except StopIteration:
                return
            except Exception as exc:  # the dataset's own code
                error = self._guard.raised_error(exc, position, None, f"sample {position}{stream}")
                self._guard.reraise(exc, error, worker)
            yield sample
            position += 1


_STRAY_WHITESPACE = re.compile(r"^\s|\s$|\s[\\/]|[\\/]\s|\s\.[^.\\/]*$")


def _stray_whitespace(path: str) -> bool:
    """True when a name in ``path`` starts or ends with whitespace, or whitespace comes right
    before the extension ("case_001 .npz"): what an unstripped list line leaves."""
    return _STRAY_WHITESPACE.search(path) is not None


def _is_range(value: Any) -> bool:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        return False
    return low <= high


def _as_index(index: Any) -> int | None:
    if isinstance(index, (int, np.integer)) or (isinstance(index, torch.Tensor) and index.dim() == 0):
        return int(index)
    return None


def guard(
    dataset: Any,
    spec: LabelSpec | Mapping[str, Any] | None = None,
    *,
    num_classes: int | None = None,
    ignore_index: int | Sequence[int] | None = None,
    target: TargetSelector = None,
    source: Callable[[int], Any] | None = None,
    on_error: str = "raise",
    substitute: str | None = None,
    quarantine: str | os.PathLike | None = None,
    loss: Any = None,
    model: Any = None,
    check_inputs: bool = True,
    input_range: tuple[float, float] | None = None,
    sizes: str | float | None = None,
    boxes: str | bool | None = None,
) -> GuardedDataset | GuardedIterableDataset:
    """Wrap ``dataset`` so that each sample's target is checked when it is produced.

    Args:
        dataset: a map-style dataset (``__getitem__`` + ``__len__``) or an IterableDataset.
        spec: a :class:`labelguard.LabelSpec` (or a mapping of its keys).
        num_classes: shortcut for the spec's ``num_classes`` (wins over ``spec``).
        ignore_index: value(s) the loss ignores; legal in targets (read from ``loss`` when
            not given).
        target: where the target is in a sample: a key, an index or a function. Default:
            the last element of a tuple/list, or the first of label/labels/mask/target/
            targets/y/segmentation/cls in a dict (a detection target dict gives its labels,
            an Ultralytics sample its ``cls``).
        source: ``index -> file path``. Default: found on the dataset (ImageFolder
            ``samples``/``imgs``, VOC ``masks``/``images``, COCO ``ids``/``img_ids``,
            SSD-style ``ids`` of (root, name) with an ``_annopath`` template, Swin-Unet
            ``sample_list``, ``files``/``paths``) or the index alone.
        on_error: ``"raise"`` a :class:`labelguard.LabelError` (also out of DataLoader
            workers); ``"skip"`` the sample (replaced by the next good one, recorded);
            ``"warn"``: log and pass it through (recorded). A sample whose loading raises
            (a missing or corrupt file) is re-raised unchanged with a note under ``"raise"``
            and skipped and recorded with its error (LG003 missing file, LG001 any other)
            under ``"skip"`` and ``"warn"``.
        substitute: what a map-style dataset serves in a skipped sample's place:
            ``"next"`` (the default) the next good index, so batches keep their size and that
            neighbour is seen twice; ``"random"`` a good index drawn at random (seeded by
            ``torch.initial_seed()`` and the bad index: the same under ``torch.manual_seed``);
            ``"drop"`` nothing: the sample comes out as a :class:`DroppedSample` that
            ``DataLoader(..., collate_fn=labelguard.torch.collate)`` (or
            ``guard_collate(your_collate)``) leaves out, so its batch is one shorter (a
            batch of nothing but dropped samples gets the first one's next good sample).
            Each record names the index served (``replaced_by``; ``.substitutions`` maps
            them) and each skip is logged at INFO. An IterableDataset takes ``"next"`` or
            ``"drop"``: its stream's next sample follows, nothing is repeated.
        quarantine: a JSON-lines path the records are written to as they are found.
        loss: what the target feeds (a loss module, an ``F.*`` function or a name:
            ``"cross_entropy"``, ``"nll"``, ``"dice"``/``"one_hot"``, ``"bce"``,
            ``"bce_with_logits"``). Declaring it adds the dtype check (LG505), makes
            ignore values illegal for one-hot/Dice losses (LG501) and checks BCE targets
            as floats in [0, 1].
        model: the model the samples feed (a transformers model, or any module with an
            ``nn.Embedding``): a tokenized sample (a dict with ``input_ids``) is checked
            against the model's own tables instead of a label spec: token ids past the word
            embedding (LG601), a sequence longer than the positions (LG602), segment ids past
            the token types (LG603), labels outside the classification head, -100 ignored
            (LG604).
        check_inputs: also check each sample's input (its first element, or the dict's
            ``image``/``input``... key): NaN/Inf there is LG509. One sum per sample.
        input_range: ``(low, high)``: input values outside it are LG509 too (0..255 images
            fed to a model that expects 0..1).
        sizes: how a target's size relates to its input's (wins over the spec's ``sizes``):
            ``"equal"`` (the default: a mask of another size than its image is LG206),
            ``"any"`` (sizes differ on purpose: not checked), or a scale factor (``2``: the
            target is twice the input's height and width, as super-resolution pairs).
        boxes: how the boxes of a detection target are written, torchvision's names:
            ``"xyxy"`` (corners), ``"xywh"`` (COCO's corner and size), ``"cxcywh"`` (centre
            and size), in the input's pixels, or with an ``n`` (``"cxcywhn"``...) in fractions
            of the image; ``"yolo"``: rows of (class, cx, cy, w, h) in fractions; ``False``: no
            box check. Declared, a sample's ``bboxes`` (Albumentations') are checked too.
            Default: a tv_tensors.BoundingBoxes' own format and canvas; a torchvision dict's
            ``boxes`` are corners in pixels (DETR's, with ``orig_size``/``size``, normalised
            centre and size; boxes all in [0, 1] with no layout said, only for NaN/Inf); a COCO
            annotation's ``bbox`` is [x, y, width, height]; an Ultralytics sample's ``bboxes``
            are normalised centre and size.

    Checks: values outside the spec (LG201 in masks, LG102/LG103 in class ids), non-integer
    or non-finite targets (LG204; a target cast to an integer type after it held NaN shows
    -9223372036854775808 and is named as a cast NaN), image/mask size mismatch (LG206),
    wrong dtype for the declared loss (LG505), ignore values into one_hot (LG501), NaN/Inf
    or out-of-range inputs (LG509). A sample with no target where
    ``target`` points (a missing key, a None, a dict or annotation without a class) is an
    LG505 error about that sample. Sparse targets are checked as the dense tensor they stand
    for, quantized ones by their values, a list of annotation dicts (COCO) by each object's
    class (``category_id``, ``label``...).

    With ``on_error="skip"``, a sample that cannot be replaced (more than 32 bad samples in
    a row, or a stream of nothing else) ends the run with a SampleError. A sample whose
    target is bad never reaches the model; which sample does in its place is ``substitute``'s.

    Returns:
        A :class:`GuardedDataset` or :class:`GuardedIterableDataset`; ``.records`` lists the
        bad samples seen by every worker.

    Raises:
        labelguard.UsageError: an unknown ``on_error`` or ``substitute`` (or a ``substitute``
            with ``on_error="raise"``, which substitutes nothing), an ``input_range`` that is
            not ``(low, high)``, or a dataset that is already guarded.
        labelguard.SpecError: the spec is contradictory.
        labelguard.UnsupportedError: ``dataset`` is not a dataset, or ``loss`` is a loss
            labelguard does not know.

    Example::

        >>> train = guard(Synapse_dataset(base_dir, list_dir, "train"), num_classes=9)  # doctest: +SKIP
        >>> loader = DataLoader(train, batch_size=24, num_workers=8)  # doctest: +SKIP
        >>> next(iter(loader))  # doctest: +SKIP
        labelguard.torch.SampleError: LG201 sample 17 (train_npz/case0007_slice003.npz):
        label value 9 in 100 pixels is outside [0, 9) (num_classes=9, ignore_index=None). ...
    """
    if on_error not in ON_ERROR:
        raise UsageError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
    if substitute is not None and substitute not in SUBSTITUTES:
        raise UsageError(f"substitute must be one of {', '.join(SUBSTITUTES)}, got {substitute!r}")
    if substitute is not None and on_error == "raise":
        raise UsageError(f"substitute={substitute!r} says what replaces a skipped sample, but on_error='raise' "
                         "skips none: pass on_error='skip'")
    if substitute == "random" and isinstance(dataset, IterableDataset):
        raise UsageError("substitute='random' needs a map-style dataset: an IterableDataset's bad sample is "
                         "followed by the stream's next one (substitute='next' or 'drop')")
    if isinstance(dataset, _GuardedBase):
        raise UsageError("this dataset is already guarded")
    if boxes is not None and boxes is not False and boxes not in BOX_LAYOUTS:
        raise UsageError(f"boxes must be one of {', '.join(BOX_LAYOUTS)} or False, got {boxes!r}")
    if input_range is not None and not _is_range(input_range):
        raise UsageError(f"input_range must be (low, high) with low <= high, got {input_range!r}")
    tokens = token_spec_of(model) if model is not None else None
    if tokens is not None and not tokens.is_known:
        raise UnsupportedError(f"guard(model=...): {type(model).__name__} has no nn.Embedding of token ids nor a "
                               "classification head to check tokenized samples against")
    if tokens is not None and spec is None and num_classes is None and ignore_index is None and loss is None:
        rules = TargetRules(LabelSpec())  # the model's head is the spec of tokenized samples
    else:
        rules = rules_for(spec, num_classes, ignore_index, loss, sizes)
    sample_guard = _SampleGuard(rules, target, source, on_error, RecordStore(quarantine),
                                substitute=substitute or "next", tokens=tokens,
                                check_inputs=check_inputs, boxes=boxes,
                                # _is_range (above) checked that it holds two numbers
                                input_range=None if input_range is None
                                else cast(tuple[float, float], tuple(map(float, input_range))))
    if isinstance(dataset, IterableDataset):
        return GuardedIterableDataset(dataset, sample_guard)
    if not hasattr(dataset, "__getitem__"):
        raise UnsupportedError(f"guard() needs a dataset with __getitem__ or __iter__, got {type(dataset).__name__}")
    return GuardedDataset(dataset, sample_guard)
