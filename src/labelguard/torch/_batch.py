"""Who a batch's items are: the ``samples=`` of ``checked`` and ``safe_targets``.

A training loop knows its batch as a tensor; the error about it should name dataset
indices and files. ``samples=`` says who the items are: the loader returned by
:func:`labelguard.torch.record` (the batch it handed out last), a sequence of dataset
indices, or of (index, file) pairs. It is captured when the batch is used, because the
loader has moved on by the time a masked batch is reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from torch.utils.data import DataLoader

from labelguard.core.text import shorten
from labelguard.errors import UsageError

# The samples a message names before it counts the rest.
_NAMED = 8

Lookup = Callable[[int], Any]


class BatchSamples:
    """(dataset index, file or a lookup for it) per batch item."""

    def __init__(self, items: list[tuple[int, Any]]) -> None:
        self.items = items

    @classmethod
    def of(cls, samples: Any, lookup: Lookup | None = None) -> BatchSamples | None:
        """The batch ``samples`` describes; bare indices get their files from ``lookup``.
        None when it names nobody (no samples, or a recorded loader that cannot tell).

        Raises:
            labelguard.UsageError: ``samples`` is a plain DataLoader (its batches are not
                known: wrap it in ``labelguard.torch.record``) or no sequence.
        """
        if samples is None:
            return None
        if isinstance(samples, DataLoader):
            raise UsageError("samples= takes the loader returned by labelguard.torch.record(loader, path), "
                             "which knows the batch in flight, or the batch's dataset indices; "
                             "a plain DataLoader does not say which samples it handed out")
        batch_indices = getattr(samples, "batch_indices", None)
        if callable(getattr(samples, "source", None)) and hasattr(samples, "batch_indices"):
            return cls([(int(index), samples.source) for index in batch_indices]) if batch_indices else None
        if not hasattr(samples, "__iter__"):
            raise UsageError(f"samples= takes the batch's dataset indices (a sequence), got {samples!r}")
        items = []
        for item in samples:
            if isinstance(item, (tuple, list)) and len(item) == 2:
                items.append((int(item[0]), item[1]))
            else:
                items.append((int(item), lookup))
        return cls(items) if items else None

    def sample(self, item: int | None) -> tuple[int | None, str | None]:
        """(dataset index, file) of batch item ``item``; (None, None) when out of the batch."""
        if item is None or not 0 <= item < len(self.items):
            return None, None
        index, source = self.items[item]
        return index, _resolved(source, index)

    def describe(self) -> str:
        """"40 (x.npz), 41 (y.npz), ... and 6 more": the batch's samples and their files."""
        shown = [(index, _resolved(source, index)) for index, source in self.items[:_NAMED]]
        return shorten(shown, _NAMED, lambda pair: f"{pair[0]}" + (f" ({pair[1]})" if pair[1] else ""),
                       total=len(self.items))


def batch_item(element: int, shape: tuple[int, ...]) -> int | None:
    """The batch item (index along the first axis) holding flat element ``element``."""
    if not shape or not shape[0]:
        return None
    per_item = 1
    for size in shape[1:]:
        per_item *= size
    return element // max(per_item, 1)


def _resolved(source: Any, index: int) -> str | None:
    if callable(source):
        try:
            source = source(index)
        except Exception:  # naming a file must never hide the error being reported
            return None
    return os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
