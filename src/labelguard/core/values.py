"""Value rules shared by the dataset audit and the training-time guard.

Both sides turn an array of labels into a histogram and ask the spec which values are
illegal; neither reimplements the rules.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from labelguard.core.spec import LabelSpec
from labelguard.core.spec import reduce_zero_label as reduce_zero_label  # its array form, long imported from here

_BINCOUNT_LIMIT = 1 << 16
_INT64_MAX = int(np.iinfo(np.int64).max)
# Label arrays are long runs of one value. Up to this share of neighbouring elements that
# differ, counting runs (one vectorised comparison) beats counting every element.
_RUN_SHARE = 0.125
# The leading elements whose changes decide, before any run is listed, that an array is noise.
_RUN_PROBE = 4096
# Masks up to this many elements reuse one comparison buffer per thread.
_SCRATCH_LIMIT = 1 << 24
_scratch = threading.local()


def histogram(array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of an integer or boolean array and how often each occurs.

    Masks are counted by runs of equal neighbours: a comparison pass finds where the value
    changes and only the run lengths are added up, several times faster than a bincount
    over every pixel (whose increments of one counter stall on each other). Noisy arrays
    fall back to a bincount for 8/16-bit data or a small value range, else ``np.unique``.
    """
    flat = array.reshape(-1)
    if flat.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if flat.dtype == np.bool_:
        flat = flat.view(np.uint8)
    if flat.dtype == np.uint64 and int(flat.max()) > _INT64_MAX:
        # Past int64 the values would wrap to negatives: counted and returned as they are.
        values, counts = np.unique(flat, return_counts=True)
        return values, counts.astype(np.int64)
    if flat.dtype.kind in "iu" and flat.dtype.itemsize <= 8:
        counted = _run_histogram(flat)
        if counted is not None:
            return counted
    if flat.dtype in (np.uint8, np.uint16):
        counts = np.bincount(flat, minlength=1)
        values = np.flatnonzero(counts)
        return values.astype(np.int64), counts[values].astype(np.int64)
    if flat.dtype.kind in "iu" and flat.dtype.itemsize <= 8:
        low, high = int(flat.min()), int(flat.max())
        if high - low < _BINCOUNT_LIMIT:
            # A signed type overflows when shifted in place (int8 [-1, 127] minus -1).
            shifted = flat - low if flat.dtype.kind == "u" else flat.astype(np.intp) - low
            counts = np.bincount(shifted.astype(np.intp, copy=False), minlength=1)
            values = np.flatnonzero(counts)
            return (values + low).astype(np.int64), counts[values].astype(np.int64)
    values, counts = np.unique(flat, return_counts=True)
    return values.astype(np.int64), counts.astype(np.int64)


def _run_histogram(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The histogram of a 1-D integer array from its runs; None when it has too many runs."""
    ends = _run_ends(flat)
    if ends is None or ends.size > _RUN_SHARE * flat.size:
        return None
    # Run j holds the elements after the end of run j - 1 up to ends[j], all of one value.
    lengths = ends.copy()
    lengths[1:] -= ends[:-1]
    lengths[0] += 1
    run_values = flat[ends]
    if flat.dtype in (np.uint8, np.uint16):
        counts = np.bincount(run_values, weights=lengths, minlength=1)
        values = counts.nonzero()[0]
        return values.astype(np.int64), counts[values].astype(np.int64)
    values, inverse = np.unique(run_values, return_inverse=True)
    counts = np.bincount(inverse.reshape(-1), weights=lengths)
    return values.astype(np.int64), counts.astype(np.int64)


def _run_ends(flat: np.ndarray) -> np.ndarray | None:
    """The index of the last element of every run of equal values, the array's last included;
    None when a probe of the leading elements finds noise."""
    n = flat.size - 1
    changes = _comparison_buffer(-(-n // 8) * 8 + 8)
    changes[n:] = False
    changes[-1] = True  # the last run ends at n; its flag lands on index n below
    np.not_equal(flat[1:], flat[:-1], out=changes[:n])
    probe = changes[:min(n, _RUN_PROBE)]
    if np.count_nonzero(probe) > _RUN_SHARE * probe.size:
        return None  # noise or an image: most neighbours differ
    # Listing the set elements of a bool array goes one element at a time; eight at once (as
    # a uint64) first skips the long unchanged stretches of a mask.
    words = changes.view(np.uint64)
    changed = (words != 0).nonzero()[0]
    hits = words[changed].view(np.bool_).nonzero()[0]
    ends = changed[hits >> 3]
    ends <<= 3
    ends += hits & 7
    ends[-1] = n
    return ends


def _comparison_buffer(size: int) -> np.ndarray:
    """A bool array of ``size``, reused by the thread for masks up to ``_SCRATCH_LIMIT``.

    A new buffer for every mask, freed with the mask, leaves enough free memory at the top
    of the heap that glibc gives it back to the system and faults it in again for the next
    mask: some 40 page faults a 512x512 mask in pool workers.
    """
    if size > _SCRATCH_LIMIT:
        return np.empty(size, dtype=bool)
    buffer = getattr(_scratch, "changes", None)
    if buffer is None or buffer.size < size:
        buffer = _scratch.changes = np.empty(size, dtype=bool)
    return buffer[:size]


@dataclass(frozen=True)
class Violation:
    """Values of one histogram that the spec does not allow: as the loss sees them
    (``values``, after reduce_zero_label) and as the file stores them (``stored``)."""

    values: tuple[int, ...]
    counts: tuple[int, ...]
    negative: tuple[int, ...]
    stored: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def violations(values: np.ndarray, counts: np.ndarray, spec: LabelSpec) -> Violation | None:
    """The values of a histogram that break ``spec`` (:meth:`LabelSpec.legal`).

    Returns None when every value is legal or the spec does not say what is legal.
    """
    if not spec.is_known or len(values) == 0:
        return None
    bad = np.flatnonzero(~spec.legal(values))
    if not bad.size:
        return None
    stored = tuple(int(v) for v in values[bad].tolist())
    seen = tuple(spec.loss_value(v) for v in stored)
    return Violation(
        values=seen,
        counts=tuple(int(c) for c in counts[bad].tolist()),
        negative=tuple(v for v in seen if v < 0),
        stored=stored,
    )


def suggest_remap(found: list[int], spec: LabelSpec) -> dict[int, int] | None:
    """A value remap that brings ``found`` values onto the spec, when one is evident.

    Evident means one-to-one: the found class values (ignore values apart) are as many as
    the legal values, and some are illegal; they are mapped in order (``{0, 255}`` onto
    ``{0, 1}`` gives ``{255: 1}``; ``{1, 2, 3}`` onto ``{0, 1, 2}`` gives
    ``{1: 0, 2: 1, 3: 2}``). Anything else needs a person to decide.
    """
    allowed = spec.allowed_values()
    if allowed is None:
        return None
    classes = sorted(v for v in found if not spec.is_ignored(v))
    # The counts match before the legal values are listed: as many as the found values.
    if len(classes) != allowed.size or all(v in allowed for v in classes):
        return None
    remap = {src: dst for src, dst in zip(classes, allowed) if src != dst}
    return remap or None
