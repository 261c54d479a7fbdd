"""Flight record for a DataLoader: keep the indices and files of the batches in flight.

A device-side assert kills the process together with everything the training loop knew, so
``record`` writes, each time the loop takes a batch, a small JSON file naming the last few
batches' dataset indices and source files. After the crash, ``labelguard explain LOG --record
PATH`` names the samples and ``labelguard replay PATH`` re-runs them on the CPU.

Indices are taken where the DataLoader draws them: in the main process, from its (batch)
sampler, so the record works with any number of workers. With ``in_order=True`` (the
default) workers hand batches back in the order they were drawn, which is how each recorded
index list is tied to the batch the loop receives.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from typing import Any, Callable, Iterator

from labelguard._optional import require
from labelguard.flight import (
    DEFAULT_KEEP,
    ORDER_EXACT,
    ORDER_UNAVAILABLE,
    ORDER_UNORDERED,
    FlightRecordWriter,
)
from labelguard.torch._sources import source_lookup

logger = logging.getLogger(__name__)


def record(
    loader: Any,
    path: str | os.PathLike,
    *,
    keep: int = DEFAULT_KEEP,
    source: Callable[[int], Any] | None = None,
    sync: bool = False,
) -> "RecordedLoader":
    """Wrap ``loader`` so that the batches handed to the training loop are recorded in ``path``.

    Args:
        loader: a ``torch.utils.data.DataLoader`` (any ``num_workers``). Wrap it before
            iterating it: an already started persistent-worker iterator keeps the sampler
            it started with.
        path: the record file, rewritten atomically at every batch. ``{rank}`` in the path is
            replaced by the ``RANK`` environment variable (one file per process under DDP).
        keep: how many batches to keep: the one in flight and ``keep - 1`` before it.
        source: a function from a dataset index to the sample's source (its file). By
            default the source is found on the dataset as labelguard.torch.guard finds it
            (``samples``/``imgs``, ``masks``/``images``, ``files``/``paths``,
            ``sample_list``, COCO ``ids``), through ``Subset`` and ``ConcatDataset``.
        sync: write the file in the training loop at every batch instead of in a background
            thread. The default costs the loop tens of microseconds and writes within a
            write's time (and at exit, including exit by an exception such as a device-side
            assert); ``sync=True`` also survives a hard kill right after a batch is taken, at
            the cost of a rename per step (milliseconds on a busy or network disk).

    Returns:
        An iterable to use in place of ``loader``; its other attributes are the loader's.

    Example:
        >>> for images, masks in labelguard.torch.record(train_loader, "flight.json"):
        ...     loss = criterion(model(images.cuda()), masks.cuda())
    """
    return RecordedLoader(loader, path, keep=keep, source=source, sync=sync)


class RecordedLoader:
    """The iterable returned by :func:`record`.

    Attributes:
        batch_indices: the dataset indices of the batch the loop holds now (None before the
            first batch, or when the loader's sampler cannot tell them).
    """

    def __init__(
        self,
        loader: Any,
        path: str | os.PathLike,
        *,
        keep: int = DEFAULT_KEEP,
        source: Callable[[int], Any] | None = None,
        sync: bool = False,
    ) -> None:
        data = require("torch.utils.data", "record DataLoader batches")
        self.loader = loader
        dataset = loader.dataset
        self._recorder: _IndexRecorder | None = None
        if isinstance(dataset, data.IterableDataset):
            order = ORDER_UNAVAILABLE
        else:
            order = ORDER_EXACT if getattr(loader, "in_order", True) else ORDER_UNORDERED
            self._recorder = _install_recorder(loader)
        if order == ORDER_UNORDERED:
            logger.warning(
                "DataLoader(in_order=False) may hand batches back out of order: the recorded "
                "indices can belong to a neighbouring batch"
            )
        self._epoch = 0
        self._lookup = source_lookup(dataset, source)
        self.batch_indices: list[int] | None = None
        self.path = os.fspath(path).replace("{rank}", os.environ.get("RANK", "0"))
        self._writer = FlightRecordWriter(
            self.path,
            keep=keep,
            dataset=f"{type(dataset).__module__}.{type(dataset).__qualname__}",
            dataset_len=_length(dataset),
            loader={
                "batch_size": getattr(loader, "batch_size", None),
                "num_workers": getattr(loader, "num_workers", None),
                "sampler": type(getattr(loader, "sampler", None)).__name__,
                "drop_last": getattr(loader, "drop_last", None),
            },
            index_order=order,
            source=self._lookup,
            sync=sync,
        )

    def __iter__(self) -> Iterator[Any]:
        drawn: deque[list[int]] = deque()
        if self._recorder is not None:
            self._recorder.sink = drawn
        epoch = self._epoch
        self._epoch += 1
        for step_in_epoch, batch in enumerate(self.loader):
            self.batch_indices = drawn.popleft() if drawn else None
            self._writer.handed(epoch, step_in_epoch, self.batch_indices)
            yield batch
        self._writer.epoch_complete()

    def __len__(self) -> int:
        return len(self.loader)

    def flush(self) -> None:
        """Write the record now (the background writer otherwise follows within a write)."""
        self._writer.flush()

    def source(self, index: int) -> str | None:
        """The file of dataset index ``index``, as the record names it (None when unknown)."""
        return self._lookup(index)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes RecordedLoader lacks: dataset, batch_size, sampler...
        if name == "loader":
            raise AttributeError(name)
        return getattr(self.loader, name)


class _IndexRecorder:
    """Stands in for the loader's (batch) sampler and notes each index list it yields."""

    def __init__(self, sampler: Any, single: bool) -> None:
        self.sampler = sampler
        self.single = single
        self.sink: deque | None = None

    def __iter__(self) -> Iterator[Any]:
        sink = self.sink
        for item in self.sampler:
            if sink is not None:
                sink.append([int(item)] if self.single else [int(i) for i in item])
            yield item

    def __len__(self) -> int:
        return len(self.sampler)

    def __getattr__(self, name: str) -> Any:
        # set_epoch (DistributedSampler), batch_size, drop_last... belong to the real sampler.
        if name == "sampler":
            raise AttributeError(name)
        return getattr(self.sampler, name)


def _install_recorder(loader: Any) -> _IndexRecorder:
    if getattr(loader, "_iterator", None) is not None:
        logger.warning(
            "the DataLoader already has a persistent iterator: its indices are not recorded; "
            "wrap the loader with record() before iterating it"
        )
    batched = getattr(loader, "batch_sampler", None) is not None
    attribute = "batch_sampler" if batched else "sampler"
    recorder = _IndexRecorder(getattr(loader, attribute), single=not batched)
    # DataLoader.__setattr__ refuses to change its samplers once built, to protect running
    # iterators. No iterator has drawn from the recorder yet, and the recorder yields exactly
    # what the sampler yields, so bypassing the check changes nothing the loader relies on.
    object.__setattr__(loader, attribute, recorder)
    return recorder


def _length(dataset: Any) -> int | None:
    try:
        return len(dataset)
    except TypeError:
        return None
