"""Engines that run per-file tasks: in-process or on a local process pool (a Dask cluster's
is :mod:`labelguard.core.dask_engine`).

Every engine calls the same pure ``task.processor(task, spec)``; a processor that raises is
turned into a :class:`FileResult` carrying the error, so one crashing check never ends an
audit. Tasks run in batches whose results are merged where they ran (summaries merge
associatively), so the consumer handles one small result per batch, not one per file.

Tasks come from any iterable (discovery yields them as it walks the dataset) and are taken
from it only as the engine needs them: the first batches run while the tree is still being
listed, and the engine holds the batches in flight, never the whole list.

A worker process that dies (the kernel's out-of-memory killer, a SIGKILL, a crash inside a
C library) never hangs the audit. The pool is a ``concurrent.futures.ProcessPoolExecutor``,
which notices a dead worker and fails the batches it had not finished (a
``multiprocessing.Pool`` would wait for them forever). Those batches run once more, file by
file in a fresh pool, one file at a time: a worker that died because others took the memory
now gets its results, and a file that kills its worker again is named in an error of the
report (so the audit exits 2) while every other file's findings are kept. The in-process
engine has no such net: a process killed there is the audit itself.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
import time
import traceback
from collections import deque
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from labelguard.core.cache import Batch, CachedResult, CacheSettings, ResultCache, blocks, open_cache
from labelguard.core.limits import ReadLimits, current_limits, set_limits
from labelguard.core.paths import Roots, current_roots, set_roots
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import shorten
from labelguard.errors import MissingDependency

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

log = logging.getLogger(__name__)

_WORKER_SPEC: LabelSpec | None = None
_WORKER_CACHE: CacheSettings | None = None

# Files per batch before anything ran: large enough that a batch costs far more than its trip
# through a pipe, small enough that the progress bar moves and the workers finish together.
BATCH_FILES = 32
# Once a pool's first batches came back, a batch is as many files as its workers check in this
# time. Handing a batch out and taking its result back costs the caller about 1 ms of CPU (the
# pool's threads; bench_pool.py, 20,000 masks on 2 cores): a tenth of a second keeps that under
# 1 % of the work, moves the progress bar ten times a second and lets the workers finish within
# a batch of each other. Files slower than the first ones get smaller batches, faster ones
# (cached results, small annotation files) larger ones, up to POOL_BATCH_FILES.
BATCH_SECONDS = 0.1
POOL_BATCH_FILES = 1024
# A block of the result cache is cut into parts (batches of its own, files stored one by one)
# only when it takes longer than this: slow files, not a first batch that waited for its worker.
PART_SECONDS = 1.0
# Batches per worker at least, so a slow batch at the end does not leave the others idle.
BATCHES_PER_WORKER = 16
# Batches handed to the pool per worker at a time: one running and one waiting keeps every
# worker busy, and a dead worker fails only the batches handed out, not the whole queue.
IN_FLIGHT_PER_WORKER = 2


def run_one(task: FileTask, spec: LabelSpec) -> FileResult:
    """Run one task; an exception becomes an error entry, never a crash, except a missing
    optional dependency, which stops the audit with the extra to install."""
    try:
        return task.processor(task, spec)
    except MissingDependency:
        raise  # not a fault of this file: every file of its kind needs the extra
    except MemoryError:  # a memory limit (ulimit -v, a container's) met while checking the file
        log.debug("out of memory on %s", task.path, exc_info=True)
        return FileResult(task.display, errors=[
            f"{task.display}: ran out of memory while checking this file (MemoryError), so it was "
            "not audited; give the audit more memory, or fewer --workers, which share it"])
    except Exception as exc:  # a bug in a check must not end the audit
        log.debug("processor failed on %s", task.path, exc_info=True)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return FileResult(task.display, errors=[f"{task.display}: check crashed: {detail}"])


def run_batch(tasks: Sequence[FileTask], spec: LabelSpec, cache: CacheSettings | None = None,
              whole: bool = True) -> FileResult:
    """Run ``tasks`` in order and merge their results into one covering ``len(tasks)`` files.

    A processor may offer ``processor.batch(tasks, spec)``, equal to its per-file results
    merged but without a summary per file; it is used when every task shares that processor.
    If it raises, the batch runs file by file, so the failure is pinned to its file.

    With a ``cache``, each task of a cacheable processor is looked up there first and its
    result stored after it ran (:mod:`labelguard.core.cache`), in the process that runs it.
    A batch that is ``whole`` blocks (:func:`labelguard.core.cache.blocks`: cut by the files'
    paths, so the next audit finds the same blocks whatever its batches) keeps each block's
    results in one pack, whose merged result is read at once when nothing changed; a part of a
    block (a pool's batch of slow files, :class:`TimedBatches`) is looked up and stored file by
    file.
    """
    processor = tasks[0].processor if tasks else None
    if cache is not None and any(getattr(task.processor, "cacheable", False) for task in tasks):
        if not whole:
            return _run_cached(tasks, spec, cache, entry=False)
        return _merged(tasks, [_run_cached(block, spec, cache) for block in blocks(tasks)])
    batched = getattr(processor, "batch", None)
    if batched is not None and all(task.processor is processor for task in tasks):
        try:
            return batched(tasks, spec)
        except MissingDependency:
            raise
        except Exception:
            log.debug("batch processor failed; running the batch file by file", exc_info=True)
    return _merged(tasks, (run_one(task, spec) for task in tasks))


def _run_cached(tasks: Sequence[FileTask], spec: LabelSpec, cache: CacheSettings, entry: bool = True) -> FileResult:
    """:func:`run_batch` file by file, each through the cache; with ``entry``, ``tasks`` are a
    block, whose pack is looked up first and holds their results, else each file has an entry
    of its own."""
    store = open_cache(cache)
    context = store.context(spec)
    batch = store.batch(tasks, context) if entry else None
    if batch is not None and batch.hit is not None:
        return _merged(tasks, [batch.hit])
    merged = _merged(tasks, (_run_through(store, task, spec, context, batch, index)
                             for index, task in enumerate(tasks)))
    if batch is not None:
        store.store_batch(batch, merged)
    return merged


def _run_through(store: ResultCache, task: FileTask, spec: LabelSpec, context: bytes, batch: Batch | None,
                 index: int) -> FileResult | CachedResult:
    """One task through the cache; a failure of the cache itself only costs the lookup."""
    try:
        return store.run(task, spec, run_one, context, batch, index)
    except MissingDependency:
        raise
    except Exception:
        log.debug("the result cache failed on %s; checking it without", task.path, exc_info=True)
        if batch is not None:
            batch.entries[index] = None
            batch.fresh = True
        return run_one(task, spec)


def _merged(tasks: Sequence[FileTask], results: Iterable[FileResult | CachedResult]) -> FileResult:
    batch = FileResult(tasks[0].display if tasks else "", files=0)
    for result in results:
        batch.findings.extend(result.findings)
        batch.errors.extend(result.errors)
        batch.summary.update(result.summary)
        batch.files += result.files
        batch.cached += result.cached
    return batch


def _init_worker(spec: LabelSpec, limits: ReadLimits, cache: CacheSettings | None, roots: Roots | None) -> None:
    global _WORKER_SPEC, _WORKER_CACHE
    _WORKER_SPEC = spec
    _WORKER_CACHE = cache
    # The caller's read limits and granted roots: a worker started by a fork server or spawn
    # would have neither.
    set_limits(limits)
    set_roots(roots)
    # Ctrl-C reaches the whole process group: the caller stops the pool, and a worker
    # that took the signal too would only print its own KeyboardInterrupt traceback.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_batch_in_worker(tasks: Sequence[FileTask], whole: bool = True) -> tuple[FileResult, float]:
    """The batch's merged result, and the seconds it took here (which size the next batches)."""
    assert _WORKER_SPEC is not None
    start = time.perf_counter()
    result = run_batch(tasks, _WORKER_SPEC, _WORKER_CACHE, whole)
    return result, time.perf_counter() - start


def default_workers() -> int:
    """All the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def batch_size(files: int, workers: int, most: int = BATCH_FILES) -> int:
    """Files per batch: at most ``most``, and at least :data:`BATCHES_PER_WORKER` batches for
    each of ``workers`` (processes, or a cluster's worker threads)."""
    return max(1, min(most, files // (workers * BATCHES_PER_WORKER)))


def _context(modules: Sequence[str]):
    """The cheapest safe way to start workers here.

    ``fork`` starts a worker in milliseconds with every module already imported, but a
    process forked while another thread runs (a progress bar's refresh thread, a caller's
    threads) inherits whatever locks that thread held, and can hang on them. Then the
    workers come from a fork server that imports the processors' ``modules`` once. Like spawn
    (macOS, Windows), a fork server runs the caller's script again in each worker, so a
    script that calls the audit with workers needs the ``if __name__ == "__main__":`` guard.
    """
    import multiprocessing  # 8 ms of start-up that a one-worker audit does without

    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("spawn")
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(sorted(modules))
    return context


def run_tasks(
    tasks: Iterable[FileTask],
    spec: LabelSpec,
    workers: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
    cache: CacheSettings | None = None,
) -> Iterator[FileResult]:
    """Yield merged results that together cover every task, in any order, using ``workers`` processes.

    Each result covers ``result.files`` tasks (a batch); its summary is the batch's merged
    summary and its findings and errors are the batch's, ``result.cached`` of its files came
    from the ``cache``. A file whose worker process died twice on it (see the module's
    docstring) is a result with an error and no findings. ``tasks`` may be any iterable,
    a generator included: it is read once, as batches are needed (see :func:`run_batches`).
    """
    for _, result in run_batches(tasks, spec, workers, cache):
        if on_result:
            on_result(result)
        yield result


class LocalEngine:
    """The engine of this machine: :func:`run_batches` with ``workers`` processes (None: all
    cores); the audit's other engine is :class:`labelguard.core.dask_engine.DaskEngine`."""

    def __init__(self, workers: int | None = None):
        self.workers = workers

    def run(self, tasks: Iterable[FileTask], spec: LabelSpec, cache: CacheSettings | None = None
            ) -> Iterator[tuple[Sequence[FileTask], FileResult]]:
        return run_batches(tasks, spec, self.workers, cache=cache)

    def describe(self) -> None:
        """Nothing to say: the local engine is the default."""
        return None


def run_batches(
    tasks: Iterable[FileTask],
    spec: LabelSpec,
    workers: int | None = None,
    cache: CacheSettings | None = None,
) -> Iterator[tuple[Sequence[FileTask], FileResult]]:
    """:func:`run_tasks`, each result with the tasks it covers: (tasks, their merged result).

    ``tasks`` is never measured with ``len``: the first ``workers`` x
    :data:`BATCHES_PER_WORKER` x :data:`BATCH_FILES` of them are read to size the batches
    (a smaller set gets smaller batches, so that every worker has some), the rest as the
    workers take batches, at most ``workers`` x :data:`IN_FLIGHT_PER_WORKER` batches ahead."""
    workers = default_workers() if workers is None else max(1, workers)
    source = iter(tasks)
    head = list(itertools.islice(source, workers * BATCHES_PER_WORKER * BATCH_FILES))
    complete = len(head) < workers * BATCHES_PER_WORKER * BATCH_FILES
    if complete:
        workers = min(workers, max(1, len(head)))
    size = batch_size(len(head), workers)
    if cache is not None:
        open_cache(cache).environment()  # once here (and the folder checked), not in every forked worker
    if workers == 1 or (complete and len(head) < 4):
        return ((batch, run_batch(batch, spec, cache))
                for batch in batches_of(itertools.chain(head, source), size, aligned=cache is not None))
    # The processors the first tasks use, imported once by a fork server (see _context).
    modules = sorted({task.processor.__module__ for task in head})
    # A whole set known from its head keeps batches for every worker; a stream may grow them.
    batches = TimedBatches(itertools.chain(head, source), size, most=size if complete else POOL_BATCH_FILES,
                           aligned=cache is not None)
    del head
    return _run_pooled(batches, spec, workers, modules, cache)


def batches_of(tasks: Iterable[FileTask], size: int, aligned: bool = False) -> Iterator[list[FileTask]]:
    """``tasks`` in lists of ``size`` (the last one shorter), taken as they come; ``aligned``:
    in whole blocks of the result cache instead, at least ``size`` tasks a list."""
    if aligned:
        batch: list[FileTask] = []
        for block in blocks(tasks):
            batch.extend(block)
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch
        return
    iterator = iter(tasks)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class BlockPart(list):
    """A batch that is a part of a block (:class:`TimedBatches`): its files are looked up and
    stored in the cache one by one."""


class TimedBatches:
    """Batches of ``tasks`` taken as they come: ``size`` files each until :meth:`took` reports
    how long batches take where they ran, then as many files as run in :data:`BATCH_SECONDS`
    (between 1 and ``most``). The time per file is a moving average of the recent batches', so
    the size follows a dataset whose files get slower or faster (its cached part, say).

    The tasks are cut into blocks, and a batch is whole blocks or part of one (a
    :class:`BlockPart`, once files are measured slower than a block in
    :data:`BATCH_SECONDS`), never parts of two: with ``aligned``, the result cache's blocks
    (:func:`labelguard.core.cache.blocks`, whose packs are the same in every audit of the same
    files however long they took), cut into parts only when a block takes more than
    :data:`PART_SECONDS` (the first batches' times include the workers' start: a part's files
    are stored one entry each), else blocks of the first ``size`` (``block``)."""

    def __init__(self, tasks: Iterable[FileTask], size: int, most: int = POOL_BATCH_FILES,
                 aligned: bool = False) -> None:
        self.block = self.size = max(1, size)
        self.aligned = aligned
        self.blocks = blocks(tasks) if aligned else batches_of(tasks, self.block)
        self.most = max(1, most)
        self.per_file: float | None = None
        self.taken = 0
        self.rest: list[FileTask] = []  # what is left of a block handed out in parts
        self.next_block: list[FileTask] | None = None

    def __iter__(self) -> Iterator[list[FileTask]]:
        return self

    def __next__(self) -> list[FileTask]:
        batch = self._next()
        if not batch:
            raise StopIteration
        self.taken += len(batch)
        return batch

    def _next(self) -> list[FileTask]:
        if self.rest:
            part, self.rest = self.rest[:self.size], self.rest[self.size:]
            return BlockPart(part)
        batch: list[FileTask] = []
        while len(batch) < self.size:
            block = self.next_block if self.next_block is not None else next(self.blocks, None)
            self.next_block = None
            if block is None:
                break
            if batch and len(batch) + len(block) > self.size:
                self.next_block = block
                break
            if self.per_file is not None and len(block) > self.size and (
                    not self.aligned or len(block) * self.per_file > PART_SECONDS):  # measured slow
                self.rest = block[self.size:]
                return BlockPart(block[:self.size])
            batch.extend(block)
        return batch

    def took(self, files: int, seconds: float) -> None:
        """A batch of ``files`` ran in ``seconds``."""
        if files <= 0 or seconds < 0:
            return
        measured = seconds / files
        self.per_file = measured if self.per_file is None else 0.7 * self.per_file + 0.3 * measured
        fitting = BATCH_SECONDS / self.per_file if self.per_file > 0 else self.most
        self.size = max(1, min(self.most, int(fitting)))


class _Waiting:
    """Batches waiting for a worker: those handed back (a dead worker's), then the rest of
    the source, taken from it one at a time as a worker is free."""

    def __init__(self, source: Iterator[Sequence[FileTask]]) -> None:
        self.front: deque[Sequence[FileTask]] = deque()
        self.source = source

    def __bool__(self) -> bool:
        if not self.front:
            batch = next(self.source, None)
            if batch is None:
                return False
            self.front.append(batch)
        return True

    def popleft(self) -> Sequence[FileTask]:
        if not self:
            raise IndexError("no batch is waiting")  # not a user mistake
        return self.front.popleft()

    def appendleft(self, batch: Sequence[FileTask]) -> None:
        self.front.appendleft(batch)


def _run_pooled(
    batches: "TimedBatches | Iterator[Sequence[FileTask]]", spec: LabelSpec, workers: int, modules: Sequence[str],
    cache: CacheSettings | None = None,
) -> Iterator[tuple[Sequence[FileTask], FileResult]]:
    """(batch, result) of ``batches`` from a pool of ``workers``; the batches a dead worker
    left unfinished run again file by file, and a file that kills its worker again is an error."""
    waiting = _Waiting(batches)
    struck: deque[Sequence[FileTask]] = deque()
    timed = batches if isinstance(batches, TimedBatches) else None
    while waiting or struck:
        if not struck:
            yield from _run_until_a_worker_dies(waiting, spec, workers, workers * IN_FLIGHT_PER_WORKER,
                                                modules, struck, cache, timed)
            continue
        # One file at a time in a one-worker pool (a file handed out while another runs would
        # fail with it): a death now names its file.
        alone: deque[Sequence[FileTask]] = deque([task] for batch in struck for task in batch)
        struck.clear()
        while alone:
            died: deque[Sequence[FileTask]] = deque()
            yield from _run_until_a_worker_dies(alone, spec, 1, 1, modules, died, cache)
            for batch in died:
                yield batch, worker_died(batch[0])


def _run_until_a_worker_dies(
    waiting: "_Waiting | deque[Sequence[FileTask]]",
    spec: LabelSpec,
    workers: int,
    in_flight: int,
    modules: Sequence[str],
    struck: deque[Sequence[FileTask]],
    cache: CacheSettings | None = None,
    timed: TimedBatches | None = None,
) -> Iterator[tuple[Sequence[FileTask], FileResult]]:
    """Run the batches of ``waiting`` (taken from its left, at most ``in_flight`` handed out at
    a time) on a new pool of ``workers`` until they are done or a worker dies; then the
    batches handed out and not finished are added to ``struck``. ``timed`` (the source of
    ``waiting``) hears how long each batch ran in its worker."""
    # Imported here: the process pool brings multiprocessing and sockets, some 5 ms of the
    # start-up of every audit, which a one-worker audit does without.
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(workers, mp_context=_context(modules), initializer=_init_worker,
                               initargs=(spec, current_limits(), cache, current_roots()))
    running: dict[Future, Sequence[FileTask]] = {}
    finished = False
    try:
        broken = False
        while running or (waiting and not broken):
            while waiting and not broken and len(running) < in_flight:
                batch = waiting.popleft()
                try:
                    running[pool.submit(_run_batch_in_worker, batch, not isinstance(batch, BlockPart))] = batch
                except BrokenProcessPool:
                    waiting.appendleft(batch)
                    broken = True
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                batch = running.pop(future)
                try:
                    result, seconds = future.result()
                    if timed is not None:
                        timed.took(len(batch), seconds)
                except BrokenProcessPool:
                    broken = True
                    struck.append(batch)
                    continue
                except MissingDependency:
                    raise
                except Exception as exc:  # outside any check: a result that cannot be pickled, say
                    result = batch_failed(batch, exc)
                yield batch, result
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            # Ctrl-C, a missing extra or a consumer that stopped early: the running batches
            # are not wanted, and waiting for them would delay the exit by a batch.
            _stop_now(pool)


def _stop_now(pool: ProcessPoolExecutor) -> None:
    """End the workers without waiting for their batches, then the pool's own thread.

    That thread must be gone before the interpreter exits: Python 3.11's exit hook wakes it
    through a pipe the thread closes as it ends, and a race between the two prints an
    OSError traceback after Ctrl-C."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((pool._processes or {}).values()):  # before 3.14 only the pool knows them
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def worker_died(task: FileTask) -> FileResult:
    return FileResult(task.display, errors=[
        f"{task.display}: the worker process checking this file died, in its batch and again "
        "when the file ran alone, so the file was not audited (a process is killed like this by "
        "the system when memory runs out, or by a crash in a library it uses); the other files' "
        "findings are complete"])


def batch_failed(batch: Sequence[FileTask], exc: Exception) -> FileResult:
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    names = shorten((task.display for task in batch), limit=BATCH_FILES)
    return FileResult(batch[0].display, files=len(batch), errors=[
        f"checking {names} in a worker process failed: {detail}"])
