"""How much one file may make labelguard allocate: the read limits of an audit.

A file's header states its size (an NPY shape, TIFF or HDF5 dimensions, a NIfTI header, a
zip member's length); the readers compare that claim with these limits, and with what the
file really holds, before they allocate anything. A file over a limit is unreadable (LG001)
with the size it declares, the limit and how to raise it.

The limits in force are a context variable: the audit sets them around its work and hands
them to its worker processes, so the per-file work stays a function of (task, spec) and
the readers need no extra argument.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator

# 2**31 elements is where int32 indexing (still used by some CUDA kernels) ends: a
# 1290^3 volume. Larger label arrays are rare enough to ask for on purpose.
DEFAULT_MAX_PIXELS = 1 << 31
# 4 GiB: a 1024 x 1024 x 1024 int32 volume, or a 4 GiB text file read whole.
DEFAULT_MAX_FILE_BYTES = 1 << 32


@dataclass(frozen=True)
class ReadLimits:
    """The most one file may hold.

    Attributes:
        max_pixels: elements of one label or image array (pixels, voxels), as declared.
        max_file_bytes: bytes one file may be read or decoded into: an array's bytes, a
            compressed member or volume once decompressed, a text file read whole.
    """

    max_pixels: int = DEFAULT_MAX_PIXELS
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


# Where each limit is raised, for the messages of files over it (a config found with the data
# does not set limits: only the user's own, given with --config).
RAISE_WITH = {
    "max_pixels": "--max-pixels N or max_pixels = N under [audit] of a --config file",
    "max_file_bytes": "--max-file-bytes N or max_file_bytes = N under [audit] of a --config file",
}

# ReadLimits is a frozen dataclass: one shared default is never changed.
_LIMITS: contextvars.ContextVar[ReadLimits] = contextvars.ContextVar("labelguard_read_limits",
                                                                     default=ReadLimits())  # noqa: B039


def current_limits() -> ReadLimits:
    """The limits the readers apply now."""
    return _LIMITS.get()


def set_limits(limits: ReadLimits) -> None:
    """Make ``limits`` the limits of this context for good (a worker process's start)."""
    _LIMITS.set(limits)


@contextlib.contextmanager
def applied_limits(limits: ReadLimits) -> Iterator[ReadLimits]:
    """Apply ``limits`` for the duration of the block."""
    token = _LIMITS.set(limits)
    try:
        yield limits
    finally:
        _LIMITS.reset(token)
