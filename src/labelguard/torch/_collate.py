"""Batch-level checks: name the two samples whose shapes ``torch.stack`` cannot join, and
leave out the samples ``guard(on_error="skip", substitute="drop")`` dropped.

``collate`` costs nothing on good batches: it calls the real collate function and only
when that fails looks for the shapes that differ. The samples are named by dataset index
and file when the batch came from a guarded dataset in the same process (a DataLoader
worker loads and collates its batch itself), otherwise by their position in the batch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Callable, Iterator

from torch.utils.data import default_collate

from labelguard.errors import UsageError
from labelguard.rules.lg206 import batch_sizes_differ
from labelguard.torch._targets import sample_error, shape_of
from labelguard.torch._errors import SampleError, raise_sample_error

# (id(sample), index, guarded dataset) of the samples this process served last.
_RECENT: deque[tuple[int, Any, Any]] = deque(maxlen=4096)


def remember_sample(index: Any, sample: Any, dataset: Any) -> None:
    """Note that ``dataset`` served ``sample`` as ``index`` (called by GuardedDataset)."""
    _RECENT.append((id(sample), index, dataset))


class DroppedSample:
    """What a guarded dataset with ``substitute="drop"`` hands out in place of a bad sample:
    :func:`collate` and :func:`guard_collate` leave it out of its batch, which comes out one
    sample shorter. Another collate function fails on it, with this class's name (or, for
    samples that are tuples, lists or dicts, with a UsageError saying which collate to pass).

    Attributes:
        index: the dataset index of the bad sample.
        replacement: the next good sample, which a batch of nothing but dropped samples gets
            instead (a batch is never empty).
        replacement_index: its dataset index.
    """

    __slots__ = ("index", "replacement", "replacement_index")

    def __init__(self, index: int, replacement: Any, replacement_index: int) -> None:
        self.index = index
        self.replacement = replacement
        self.replacement_index = replacement_index

    def __repr__(self) -> str:
        return f"DroppedSample(index={self.index})"

    def __bool__(self) -> bool:
        return True

    # default_collate takes a batch of tuples, lists or dicts apart with these: say what to do.
    def __len__(self) -> int:
        raise self._not_collated()

    def __iter__(self) -> Iterator[Any]:
        raise self._not_collated()

    def __getitem__(self, key: Any) -> Any:
        raise self._not_collated()

    def _not_collated(self) -> UsageError:
        return UsageError(
            f"sample {self.index} was dropped by guard(on_error='skip', substitute='drop') but the "
            "DataLoader's collate_fn does not leave it out: pass collate_fn=labelguard.torch.collate "
            "(or labelguard.torch.guard_collate(your_collate))")


def kept_samples(batch: list) -> list:
    """``batch`` without the samples a guard dropped; the first one's replacement when it
    held nothing else."""
    kept = [sample for sample in batch if not isinstance(sample, DroppedSample)]
    if kept or not batch:
        return kept
    return [batch[0].replacement]


def collate(batch: list, *, collate_fn: Callable[[list], Any] | None = None) -> Any:
    """``default_collate`` (or ``collate_fn``) that names the samples a shape mismatch comes from.

    Samples dropped by ``guard(on_error="skip", substitute="drop")`` are left out first: the
    batch comes out shorter (a batch of nothing but dropped samples gets the first one's
    replacement, the next good sample, so it is never empty).

    Raises:
        SampleError: LG206 naming the two samples (index and file when known), the field
            and both shapes, when the collate function fails on samples of different shapes.
    """
    batch = kept_samples(batch)
    try:
        return (collate_fn or default_collate)(batch)
    except Exception as exc:
        error = batch_shape_error(batch)
        if error is None:
            raise
        raise_sample_error(error, exc)


class guard_collate:  # noqa: N801 - used like a function: guard_collate(my_collate)
    """Wrap a collate function with :func:`collate`'s shape diagnosis and its leaving out of
    dropped samples (picklable)."""

    def __init__(self, collate_fn: Callable[[list], Any] | None = None) -> None:
        self.collate_fn = collate_fn

    def __call__(self, batch: list) -> Any:
        return collate(batch, collate_fn=self.collate_fn)


def batch_shape_error(batch: list) -> SampleError | None:
    """LG206 for the first sample whose field shapes differ from the first sample's."""
    if len(batch) < 2:
        return None
    first = dict(_shaped_fields(batch[0]))
    for position in range(1, len(batch)):
        for field, shape in _shaped_fields(batch[position]):
            if field in first and first[field] != shape:
                return _mismatch(batch, field, (0, first[field]), (position, shape))
    return None


def _shaped_fields(sample: Any, path: tuple = ()) -> Iterator[tuple[str, tuple[int, ...]]]:
    if isinstance(sample, Mapping):
        for key, value in sample.items():
            yield from _shaped_fields(value, (*path, key))
    elif isinstance(sample, (tuple, list)):
        for i, value in enumerate(sample):
            yield from _shaped_fields(value, (*path, i))
    else:
        shape = shape_of(sample)
        if shape is not None:
            yield _field_name(path), shape


def _field_name(path: tuple) -> str:
    """A field of a sample as a sentence names it, not as a Python list: "field 'image'",
    "element 1" of a tuple, "field 'image'[0]" nested, "the tensor" when the sample is one."""
    if not path:
        return "the tensor"
    head, rest = path[0], "".join(f"[{key!r}]" for key in path[1:])
    if isinstance(head, int):
        return f"element {head}{rest}"
    return f"field {head!r}{rest}"


def _mismatch(batch: list, field: str, a: tuple[int, tuple], b: tuple[int, tuple]) -> SampleError:
    names = _batch_names(batch)
    (pos_a, shape_a), (pos_b, shape_b) = a, b
    (index_a, source_a), (index_b, source_b) = names[pos_a], names[pos_b]
    finding = batch_sizes_differ(source_b, field, (shape_a, _describe(index_a, source_a, pos_a)),
                                 (shape_b, _describe(index_b, source_b, pos_b)))
    error = sample_error(finding, where="batch", index=index_b, source=None,
                         expected=f"shape {shape_a} in every sample")
    error.source = source_b  # both files are in the message; the attribute names the odd one
    return error


def _describe(index: Any, source: str | None, position: int) -> str:
    if index is None:
        return f"batch position {position}"
    return f"sample {index}" + (f" ({source})" if source else "")


def _batch_names(batch: list) -> list[tuple[Any, str | None]]:
    """(dataset index, file) of each batch position, when this process served the batch."""
    recent = list(_RECENT)[-len(batch):]
    if len(recent) == len(batch) and all(r[0] == id(s) for r, s in zip(recent, batch)):
        return [(index, dataset.source(index)) for _, index, dataset in recent]
    return [(None, None)] * len(batch)
