"""Engines that run per-file tasks: in-process or on a local process pool.

Every engine calls the same pure ``task.processor(task, spec)``; a processor that raises is
turned into a :class:`FileResult` carrying the error, so one crashing check never ends an
audit.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import traceback
from typing import Callable, Iterator, Sequence

from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask

log = logging.getLogger(__name__)

_WORKER_SPEC: LabelSpec | None = None


def run_one(task: FileTask, spec: LabelSpec) -> FileResult:
    """Run one task; labelguard's own exceptions become an error entry, never a crash."""
    try:
        return task.processor(task, spec)
    except Exception as exc:  # a bug in a check must not end the audit
        log.debug("processor failed on %s", task.path, exc_info=True)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return FileResult(task.display, errors=[f"{task.display}: check crashed: {detail}"])


def _init_worker(spec: LabelSpec) -> None:
    global _WORKER_SPEC
    _WORKER_SPEC = spec


def _run_in_worker(task: FileTask) -> FileResult:
    assert _WORKER_SPEC is not None
    return run_one(task, _WORKER_SPEC)


def default_workers() -> int:
    """All the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run_tasks(
    tasks: Sequence[FileTask],
    spec: LabelSpec,
    workers: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
) -> Iterator[FileResult]:
    """Yield a result for every task, in any order, using ``workers`` processes."""
    workers = default_workers() if workers is None else max(1, workers)
    workers = min(workers, max(1, len(tasks)))
    if workers == 1 or len(tasks) < 4:
        for task in tasks:
            result = run_one(task, spec)
            if on_result:
                on_result(result)
            yield result
        return
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    chunksize = max(1, min(64, len(tasks) // (workers * 8)))
    with context.Pool(workers, initializer=_init_worker, initargs=(spec,)) as pool:
        for result in pool.imap_unordered(_run_in_worker, tasks, chunksize=chunksize):
            if on_result:
                on_result(result)
            yield result
