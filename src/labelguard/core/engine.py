"""Engines that run per-file tasks: in-process or on a local process pool.

Every engine calls the same pure ``task.processor(task, spec)``; a processor that raises is
turned into a :class:`FileResult` carrying the error, so one crashing check never ends an
audit. Tasks run in batches whose results are merged where they ran (summaries merge
associatively), so the consumer handles one small result per batch, not one per file.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import traceback
from typing import Callable, Iterator, Sequence

from labelguard.core.limits import ReadLimits, current_limits, set_limits
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.errors import MissingDependency

log = logging.getLogger(__name__)

_WORKER_SPEC: LabelSpec | None = None

# Files per batch at most: large enough that a batch costs far more than its trip through a
# pipe, small enough that the progress bar moves and the workers finish together.
BATCH_FILES = 32
# Batches per worker at least, so a slow batch at the end does not leave the others idle.
BATCHES_PER_WORKER = 16


def run_one(task: FileTask, spec: LabelSpec) -> FileResult:
    """Run one task; an exception becomes an error entry, never a crash, except a missing
    optional dependency, which stops the audit with the extra to install."""
    try:
        return task.processor(task, spec)
    except MissingDependency:
        raise  # not a fault of this file: every file of its kind needs the extra
    except Exception as exc:  # a bug in a check must not end the audit
        log.debug("processor failed on %s", task.path, exc_info=True)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return FileResult(task.display, errors=[f"{task.display}: check crashed: {detail}"])


def run_batch(tasks: Sequence[FileTask], spec: LabelSpec) -> FileResult:
    """Run ``tasks`` in order and merge their results into one covering ``len(tasks)`` files.

    A processor may offer ``processor.batch(tasks, spec)``, equal to its per-file results
    merged but without a summary per file; it is used when every task shares that processor.
    If it raises, the batch runs file by file, so the failure is pinned to its file.
    """
    processor = tasks[0].processor if tasks else None
    batched = getattr(processor, "batch", None)
    if batched is not None and all(task.processor is processor for task in tasks):
        try:
            return batched(tasks, spec)
        except MissingDependency:
            raise
        except Exception:
            log.debug("batch processor failed; running the batch file by file", exc_info=True)
    batch = FileResult(tasks[0].display if tasks else "", files=0)
    for task in tasks:
        result = run_one(task, spec)
        batch.findings.extend(result.findings)
        batch.errors.extend(result.errors)
        batch.summary.update(result.summary)
        batch.files += result.files
    return batch


def _init_worker(spec: LabelSpec, limits: ReadLimits) -> None:
    global _WORKER_SPEC
    _WORKER_SPEC = spec
    # The caller's read limits: a worker started by a fork server or spawn would have the defaults.
    set_limits(limits)
    # Ctrl-C reaches the whole process group: the caller stops the pool, and a worker
    # that took the signal too would only print its own KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_batch_in_worker(tasks: Sequence[FileTask]) -> FileResult:
    assert _WORKER_SPEC is not None
    return run_batch(tasks, _WORKER_SPEC)


def default_workers() -> int:
    """All the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def batch_size(files: int, workers: int) -> int:
    return max(1, min(BATCH_FILES, files // (workers * BATCHES_PER_WORKER)))


def _context(tasks: Sequence[FileTask]):
    """The cheapest safe way to start workers here.

    ``fork`` starts a worker in milliseconds with every module already imported, but a
    process forked while another thread runs (a progress bar's refresh thread, a caller's
    threads) inherits whatever locks that thread held, and can hang on them. Then the
    workers come from a fork server that imports the processors' modules once. Like spawn
    (macOS, Windows), a fork server runs the caller's script again in each worker, so a
    script that calls the audit with workers needs the ``if __name__ == "__main__":`` guard.
    """
    import multiprocessing  # 8 ms of start-up that a one-worker audit does without

    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("spawn")
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(sorted({task.processor.__module__ for task in tasks}))
    return context


def run_tasks(
    tasks: Sequence[FileTask],
    spec: LabelSpec,
    workers: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
) -> Iterator[FileResult]:
    """Yield merged results that together cover every task, in any order, using ``workers`` processes.

    Each result covers ``result.files`` tasks (a batch); its summary is the batch's merged
    summary and its findings and errors are the batch's.
    """
    workers = default_workers() if workers is None else max(1, workers)
    workers = min(workers, max(1, len(tasks)))
    size = batch_size(len(tasks), workers)
    batches = (tasks[start:start + size] for start in range(0, len(tasks), size))
    if workers == 1 or len(tasks) < 4:
        for batch in batches:
            result = run_batch(batch, spec)
            if on_result:
                on_result(result)
            yield result
        return
    with _context(tasks).Pool(workers, initializer=_init_worker,
                                 initargs=(spec, current_limits())) as pool:
        for result in pool.imap_unordered(_run_batch_in_worker, batches):
            if on_result:
                on_result(result)
            yield result
