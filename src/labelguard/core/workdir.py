"""The folder an audit's display paths are relative to.

Findings show a path relative to the working folder when it lies inside it. On a Dask
cluster the per-file work runs in worker processes on other machines, whose own working
folder is not the one of the audit: the audit hands its folder to each batch, which runs
with it applied, so a worker names files as the audit's own process would. A context
variable, not ``os.chdir``: a worker runs other batches (and other clients' tasks) in
threads beside it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Iterator

_FOLDER: contextvars.ContextVar[str | None] = contextvars.ContextVar("labelguard_working_folder", default=None)


def working_folder() -> str:
    """The folder display paths are relative to: the audit's, else this process's."""
    return _FOLDER.get() or os.getcwd()


@contextlib.contextmanager
def applied_working_folder(folder: str) -> Iterator[str]:
    """Take display paths relative to the absolute ``folder`` for the duration of the block."""
    token = _FOLDER.set(folder)
    try:
        yield folder
    finally:
        _FOLDER.reset(token)
