"""The flight record: which samples were in the batches handed to the training loop.

A device-side assert kills the process, so whatever was in memory is lost. The recorder
(:func:`labelguard.torch.record`) keeps the last few batches' dataset indices and source
files in a small JSON file, rewritten atomically (temporary file + ``os.replace``) each time
the loop takes a batch. After a crash, :func:`read_record` loads it for ``labelguard explain
--record`` and ``labelguard replay``.

This module needs no torch: the file is read on machines that only have the log.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from labelguard.errors import LabelguardError, UsageError

logger = logging.getLogger(__name__)

FORMAT = "labelguard-flight-record"
FORMAT_VERSION = 1
DEFAULT_KEEP = 4

# How the recorded indices relate to the batches the loop received.
ORDER_EXACT = "exact"
ORDER_UNORDERED = "unordered"  # DataLoader(in_order=False): workers may return batches out of order
ORDER_UNAVAILABLE = "unavailable"  # IterableDataset: there are no indices to record


class FlightRecordError(LabelguardError, ValueError):
    """A flight record file is missing, unreadable or not a flight record."""


@dataclass(frozen=True)
class BatchRecord:
    """One batch as the training loop received it.

    Attributes:
        step: the batch's number since recording began (0-based, across epochs).
        epoch: the number of the pass over the loader (0-based).
        step_in_epoch: the batch's position in its epoch (0-based).
        indices: the dataset indices of its samples, or None when unknown.
        sources: the file (or other source) of each sample, when known.
        time: when the loop received it (seconds since the epoch).
    """

    step: int
    epoch: int
    step_in_epoch: int
    indices: tuple[int, ...] | None
    sources: tuple[str | None, ...] | None
    time: float

    def samples(self) -> list[tuple[int, str | None]]:
        """(index, source) pairs; empty when the indices are unknown."""
        if self.indices is None:
            return []
        sources = self.sources or (None,) * len(self.indices)
        return list(zip(self.indices, sources))

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "epoch": self.epoch,
            "step_in_epoch": self.step_in_epoch,
            "indices": list(self.indices) if self.indices is not None else None,
            "sources": list(self.sources) if self.sources is not None else None,
            "time": self.time,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BatchRecord":
        indices = data.get("indices")
        sources = data.get("sources")
        return cls(
            step=int(data["step"]),
            epoch=int(data["epoch"]),
            step_in_epoch=int(data["step_in_epoch"]),
            indices=tuple(int(i) for i in indices) if indices is not None else None,
            sources=tuple(sources) if sources is not None else None,
            time=float(data.get("time", 0.0)),
        )


@dataclass(frozen=True)
class FlightRecord:
    """The content of a flight record file.

    Attributes:
        path: where it was read from.
        batches: the kept batches, oldest first; the last one is the batch in flight.
        epoch_complete: True when the loader had finished its pass after the last batch
            (a crash then happened after the loop took its last batch: in the last step, or
            outside this loader, e.g. in validation).
        dataset: the dataset's class, as ``module.Class``.
        dataset_len: ``len(dataset)`` when recording started.
        loader: the loader settings that matter for reading the record.
        index_order: how reliably indices map to batches (``exact``, ``unordered``,
            ``unavailable``).
        updated: when the file was last written.
        pid: the recording process.
    """

    path: str
    batches: tuple[BatchRecord, ...]
    epoch_complete: bool = False
    dataset: str | None = None
    dataset_len: int | None = None
    loader: Mapping[str, Any] = field(default_factory=dict)
    index_order: str = ORDER_EXACT
    updated: float = 0.0
    pid: int | None = None

    @property
    def in_flight(self) -> BatchRecord | None:
        return self.batches[-1] if self.batches else None

    @property
    def previous(self) -> tuple[BatchRecord, ...]:
        """The batches before the one in flight, newest first."""
        return tuple(reversed(self.batches[:-1]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "path": self.path,
            "updated": self.updated,
            "pid": self.pid,
            "dataset": self.dataset,
            "dataset_len": self.dataset_len,
            "loader": dict(self.loader),
            "index_order": self.index_order,
            "epoch_complete": self.epoch_complete,
            "in_flight": self.in_flight.to_dict() if self.in_flight else None,
            "previous": [b.to_dict() for b in self.previous],
        }


def read_record(path: str | os.PathLike) -> FlightRecord:
    """Load a flight record file written by :func:`labelguard.torch.record`.

    The file may come from anywhere (a colleague's crashed run, a bug report): it is read as
    every JSON input is, a regular file of bounded size and nesting."""
    from labelguard.readers.base import ReadError, parse_json, read_text

    path = Path(path)
    if not os.path.lexists(path):
        raise FlightRecordError(f"no flight record at {path}")
    try:
        data = parse_json(read_text(os.fspath(path)), "the flight record")
    except ReadError as exc:
        raise FlightRecordError(f"cannot read flight record {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FlightRecordError(f"{path} is not a labelguard flight record")
    if data.get("version") != FORMAT_VERSION:
        raise FlightRecordError(
            f"{path} is a flight record of version {data.get('version')}; this labelguard "
            f"reads version {FORMAT_VERSION}"
        )
    try:
        batches = tuple(BatchRecord.from_dict(b) for b in data.get("batches", []))
    except (KeyError, TypeError, ValueError) as exc:
        raise FlightRecordError(f"{path}: malformed batch entry ({exc})") from None
    return FlightRecord(
        path=str(path),
        batches=batches,
        epoch_complete=bool(data.get("epoch_complete", False)),
        dataset=data.get("dataset"),
        dataset_len=data.get("dataset_len"),
        loader=data.get("loader") or {},
        index_order=data.get("index_order", ORDER_EXACT),
        updated=float(data.get("updated", 0.0)),
        pid=data.get("pid"),
    )


class FlightRecordWriter:
    """Keeps the last ``keep`` batches and rewrites the record file atomically.

    The training loop only queues the batch's indices (microseconds): a background thread
    looks up the sources, serialises each kept batch once and writes the file, coalescing
    batches that arrive while it writes, because a rename over an existing file can take
    milliseconds on a busy or network disk and a source lookup per sample adds up. The last
    state is also written when the process exits normally or through an exception (a
    device-side assert is a Python exception), and when a pass over the loader ends. Only a
    hard kill (SIGKILL, ``os._exit``) within the write latency can lose the newest batch, and
    the batches before it are kept; ``sync=True`` writes in the loop instead.

    Writing never raises into the training loop: a failed write is logged once and retried
    at the next batch.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        keep: int = DEFAULT_KEEP,
        dataset: str | None = None,
        dataset_len: int | None = None,
        loader: Mapping[str, Any] | None = None,
        index_order: str = ORDER_EXACT,
        source: Callable[[int], str | None] | None = None,
        sync: bool = False,
    ) -> None:
        if keep < 1:
            raise UsageError(f"keep must be at least 1, got {keep}")
        self.path = Path(path)
        self.keep = keep
        self.sync = sync
        self._source = source
        self._header = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "pid": os.getpid(),
            "dataset": dataset,
            "dataset_len": dataset_len,
            "loader": dict(loader or {}),
            "index_order": index_order,
        }
        # [batch fields, sources or None, serialised fragment or None] per kept batch
        self._batches: deque[list] = deque(maxlen=keep)
        self._step = 0
        self._epoch_complete = False
        self._state = 0  # bumped at every change; the file holds state self._written
        self._written = 0
        self._lock = threading.Lock()  # guards the state
        self._write_lock = threading.Lock()  # one writer at a time: the thread or a flush
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False
        self._tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        _OPEN_WRITERS.add(self)

    def handed(
        self,
        epoch: int,
        step_in_epoch: int,
        indices: Sequence[int] | None,
        sources: Iterable[str | None] | None = None,
    ) -> None:
        """Record that the loop received a batch; the file follows within a write's time.

        ``sources`` are the samples' files; when not given they are looked up with the
        writer's ``source`` function when the batch is written.
        """
        batch = {
            "step": self._step,
            "epoch": epoch,
            "step_in_epoch": step_in_epoch,
            "indices": indices,
            "time": time.time(),
        }
        with self._lock:
            self._batches.append([batch, list(sources) if sources is not None else None, None])
            self._step += 1
            self._epoch_complete = False
            self._state += 1
        if self.sync:
            self.flush()
        else:
            self._start()
            self._wake.set()

    def epoch_complete(self) -> None:
        """Record that the loader finished its pass after the last batch (written now)."""
        with self._lock:
            self._epoch_complete = True
            self._state += 1
        self.flush()

    def flush(self) -> None:
        """Write the latest state now, unless the file already holds it."""
        with self._write_lock:
            with self._lock:
                state = self._state
                if state == self._written:
                    return
                header = dict(
                    self._header, updated=time.time(), epoch_complete=self._epoch_complete
                )
                kept = list(self._batches)
            batches = ", ".join(self._fragment(entry) for entry in kept)
            text = json.dumps(header, ensure_ascii=False)[:-1]
            payload = f'{text}, "batches": [{batches}]}}\n'
            try:
                self._tmp.write_text(payload, encoding="utf-8")
                _replace(self._tmp, self.path)
            except OSError as exc:
                if not self._warned:
                    logger.warning("cannot write the flight record %s: %s", self.path, exc)
                    self._warned = True
                return
            self._written = state

    def _fragment(self, entry: list) -> str:
        """A kept batch as JSON, serialised once (sources looked up then)."""
        if entry[2] is None:
            batch, sources = dict(entry[0]), entry[1]
            indices = batch["indices"]
            if indices is not None:
                batch["indices"] = [int(i) for i in indices]
            if sources is None and indices is not None and self._source is not None:
                sources = [self._source(i) for i in batch["indices"]]
            batch["sources"] = sources
            entry[2] = json.dumps(batch, ensure_ascii=False)
        return entry[2]

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._run, name="labelguard-flight-record", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            self.flush()


# Writers still open at exit write their last state; an exception ending the training
# loop (a device-side assert) runs these handlers too.
_OPEN_WRITERS: "weakref.WeakSet[FlightRecordWriter]" = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for writer in list(_OPEN_WRITERS):
        writer.flush()


def _replace(source: Path, target: Path, attempts: int = 5) -> None:
    # On Windows a reader holding the target open makes os.replace fail for a moment.
    for attempt in range(attempts):
        try:
            os.replace(source, target)
            return
        except PermissionError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
