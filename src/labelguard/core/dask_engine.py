"""The per-file work on a Dask cluster: an existing one (a scheduler's address, or a
``dask.distributed.Client`` the caller made) or a ``LocalCluster`` of worker processes.

The work is the local engine's: :func:`labelguard.core.engine.run_batch` on batches of
:class:`~labelguard.core.tasks.FileTask`, each batch one Dask task that returns the batch's
findings merged and one partial summary (merged on the worker, file by file). The client
keeps a bounded window of batches in flight (taking them from an iterator of tasks, if it is
given one) and merges each result into the audit's summary as it arrives, then lets Dask
forget it: the engine holds the batches in flight and the findings, never a result per file.

A local cluster (no scheduler given) runs in a helper process of a session of its own
(:func:`local_cluster`), so that Ctrl-C at the terminal reaches the audit, never a worker.

A batch carries what its worker needs besides its tasks (:class:`BatchJob`): the spec, the
read limits, the result cache's settings, the audit's working folder and its granted roots,
applied around the batch in the worker thread (context variables; a worker runs other
batches beside it).
Paths reach the workers absolute (the audit resolves its inputs before discovery,
``labelguard._audit.absolute_path``), so that a worker whose own working folder is another
one reads the same files and names them as the audit's process would.

Lost workers: a batch is one Dask task with a key of its own, so when the worker running it
dies the scheduler runs it again elsewhere and the client receives its result once; the
client also counts a batch's result once by its id. A batch whose workers kept dying (Dask's
``KilledWorker``, after ``distributed.scheduler.allowed-failures`` retries) runs again file
by file, one file at a time with nothing else running on the cluster (a death beside it would
not say which task caused it), and a file that kills its worker alone is an error naming it,
as in the local pool.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections import deque
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Iterable, Iterator, Sequence, Sized

from labelguard._optional import require
from labelguard._version import __version__
from labelguard.core.cache import CacheSettings
from labelguard.core.engine import batch_failed, batch_size, batches_of, run_batch, worker_died
from labelguard.core.limits import ReadLimits, applied_limits, current_limits
from labelguard.core.paths import Roots, applied_roots, current_roots
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import plural
from labelguard.core.workdir import applied_working_folder, working_folder
from labelguard.errors import ClusterError, MissingDependency

log = logging.getLogger(__name__)

# Files per batch (docs/scale.md derives both figures from the costs measured there). A task
# costs some milliseconds end to end (client, scheduler, worker and back; hidden by the window
# of batches in flight) and 4-5 ms of the client's and the scheduler's CPU, against 0.8 ms per
# 512x512 PNG mask on a worker: a batch of 1,024 files makes the task's share < 1 %.
DASK_BATCH_FILES = 1024
# The scheduler serves the whole cluster: with batches of this many files per worker thread, the
# tasks per second it handles no longer grow with the cluster (1 / (16 x a file's seconds)).
SCHEDULER_FILES_PER_THREAD = 16
# Batches in flight per worker thread: one running, the next one already on the worker when it
# finishes (a round trip to the client costs milliseconds). The client keeps the tasks of the
# batches in flight (to run them again file by file if their workers keep dying).
IN_FLIGHT_PER_THREAD = 2
CONNECT_SECONDS = 10
# How long a local cluster may take to stop before its processes are killed.
CLUSTER_STOP_SECONDS = 30
# How long an audit waits for a cluster without workers (an adaptive one scaling up).
WORKER_WAIT_SECONDS = 60


@dataclass(frozen=True)
class BatchJob:
    """What every batch of one audit group needs besides its tasks; sent by value with each.

    Attributes:
        spec: the group's label spec.
        limits: the audit's read limits.
        cache: the result cache's settings (a folder every worker must see at that path).
        working_folder: the folder display paths are relative to.
        roots: the granted roots: what a link may lead to (:mod:`labelguard.core.paths`).
    """

    spec: LabelSpec
    limits: ReadLimits
    cache: CacheSettings | None
    working_folder: str
    roots: Roots | None = None


def run_batch_on_worker(job: BatchJob, batch_id: str, tasks: Sequence[FileTask]) -> tuple[str, FileResult]:
    """One batch on a Dask worker: its id and its merged result."""
    with applied_limits(job.limits), applied_working_folder(job.working_folder), applied_roots(job.roots):
        return batch_id, run_batch(tasks, job.spec, job.cache)


def labelguard_version() -> str:
    """The labelguard version of the process this runs in (a worker's, through ``client.run``)."""
    return __version__


def dask_batch_size(files: int, threads: int) -> int:
    """Files per batch for ``files`` on ``threads`` worker threads: every thread gets work;
    batches of :data:`SCHEDULER_FILES_PER_THREAD` x ``threads`` files at least, so that the
    scheduler's load stays flat as the cluster grows; else, up to :data:`DASK_BATCH_FILES`
    files, :data:`~labelguard.core.engine.BATCHES_PER_WORKER` batches per thread (the local
    pool's rule, so that the threads finish together)."""
    threads = max(1, threads)
    return max(1, min(files // threads, max(SCHEDULER_FILES_PER_THREAD * threads,
                                            batch_size(files, threads, DASK_BATCH_FILES))))



class DaskEngine:
    """Runs tasks on the cluster of a connected ``client``; :func:`dask_engine` makes one."""

    def __init__(self, client: Any, where: str):
        self.client = client
        self.where = where
        self._distributed = require("dask.distributed", "run the audit on a Dask cluster")

    def threads(self) -> int:
        """The worker threads of the cluster now."""
        return sum(self.client.nthreads().values())

    def describe(self) -> str:
        workers = self.client.nthreads()
        return (f"the per-file work ran on {self.where}: {plural(len(workers), 'worker')}, "
                f"{plural(sum(workers.values()), 'thread')}")

    def run(self, tasks: Iterable[FileTask], spec: LabelSpec, cache: CacheSettings | None = None
            ) -> Iterator[tuple[Sequence[FileTask], FileResult]]:
        """Yield (batch, merged result) pairs that together cover every task once, in any order.

        ``tasks`` may be an iterator: batches are taken from it as the window frees, so that
        only the batches in flight are held here (a stream is sized from its first batches' worth).
        """
        threads = self.threads()
        full = max(DASK_BATCH_FILES, SCHEDULER_FILES_PER_THREAD * threads)
        if isinstance(tasks, Sized):
            size = dask_batch_size(len(tasks), threads)
        else:
            # A stream: the first batches' worth is read to size them, so that a dataset
            # smaller than that still gets a batch for every thread.
            source = iter(tasks)
            head = list(islice(source, full * threads))
            size = dask_batch_size(len(head), threads) if len(head) < full * threads else full
            tasks = chain(head, source)
        fresh = ((str(index), batch) for index, batch in enumerate(batches_of(tasks, size, aligned=cache is not None)))
        again: deque[tuple[str, Sequence[FileTask]]] = deque()  # files of batches whose workers kept dying
        job = BatchJob(spec, current_limits(), cache, working_folder(), current_roots())
        window = max(2, IN_FLIGHT_PER_THREAD * threads)
        prefix = f"labelguard-batch-{uuid.uuid4().hex}-"
        running: dict[str, tuple[Any, str, Sequence[FileTask]]] = {}
        finished: set[str] = set()
        completed = self._distributed.as_completed(loop=self.client.loop)

        def submit() -> None:
            while len(running) < window:
                if again:
                    # A file of a batch whose worker died runs alone on the cluster, nothing
                    # beside it: were another task on its worker, a death there would not
                    # say which of them killed it (an innocent file named, its findings lost).
                    if running:
                        return
                    batch_id, batch = again.popleft()
                    alone = True
                else:
                    pair = next(fresh, None)
                    if pair is None:
                        return
                    batch_id, batch = pair
                    alone = False
                future = self.client.submit(run_batch_on_worker, job, batch_id, batch, key=prefix + batch_id)
                running[future.key] = (future, batch_id, batch)
                completed.add(future)
                if alone:
                    return  # one file alone at a time

        try:
            submit()
            for future in completed:
                _, batch_id, batch = running.pop(future.key)
                result = self._result(future, batch_id, batch, again)
                future.release()
                if result is not None and batch_id not in finished:  # a batch's result counts once
                    finished.add(batch_id)
                    yield batch, result
                submit()
        finally:
            if running:  # an exception, Ctrl-C or a consumer that stopped early
                self.client.cancel([future for future, _, _ in running.values()], force=True)

    def _result(self, future: Any, batch_id: str, batch: Sequence[FileTask],
                again: deque[tuple[str, Sequence[FileTask]]]) -> FileResult | None:
        """The batch's result; None when it runs again file by file."""
        try:
            returned_id, result = future.result()
        except self._distributed.KilledWorker:
            if len(batch) == 1:
                return worker_died(batch[0])
            # Each file alone, first: the one that kills its worker is named, the others kept.
            again.extend((f"{batch_id}.{index}", [task]) for index, task in enumerate(batch))
            return None
        except MissingDependency:
            raise
        except Exception as exc:  # outside any check: a result that cannot be sent back, say
            log.debug("batch %s failed on the cluster", batch_id, exc_info=True)
            return batch_failed(batch, exc)
        if returned_id != batch_id:  # each key is one batch of one audit
            raise RuntimeError(f"batch {batch_id} came back as {returned_id}")  # not a user mistake
        return result


@contextlib.contextmanager
def dask_engine(client: Any = None, scheduler: str | None = None, workers: int = 1) -> Iterator[DaskEngine]:
    """A :class:`DaskEngine` on ``client``'s cluster, else on the scheduler at the address
    ``scheduler``, else on a new ``LocalCluster`` of ``workers`` processes (one thread each,
    on loopback, closed at the end)."""
    distributed = require("dask.distributed", "run the audit on a Dask cluster")
    if client is not None:
        engine = DaskEngine(client, f"the Dask cluster at {client.scheduler.address}")
        _check_workers(engine, client.scheduler.address)
        yield engine
        return
    if scheduler:
        try:
            own = distributed.Client(scheduler, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {scheduler} within {CONNECT_SECONDS} s "
                               f"({type(exc).__name__}: {exc}); start one with `dask scheduler`, or check "
                               "the address (tcp://HOST:PORT)") from None
        with contextlib.closing(own):
            engine = DaskEngine(own, f"the Dask cluster at {scheduler}")
            _check_workers(engine, scheduler)
            yield engine
        return
    with local_cluster(workers) as address, distributed.Client(address, timeout=CONNECT_SECONDS,
                                                             set_as_default=False) as own:
        yield DaskEngine(own, "a local Dask cluster")


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator[str]:
    """The address of a LocalCluster of ``workers`` processes, run for the block by a helper
    process in a session of its own: Ctrl-C at the terminal reaches the audit only (which then
    stops the cluster), never a worker, whose traceback would be all it printed. The helper
    stops the cluster when its standard input closes, so it also ends with an audit that was
    killed."""
    with tempfile.TemporaryDirectory(prefix="labelguard-dask-") as scratch:
        errors = os.path.join(scratch, "cluster.log")
        # The modules this process imports from, wherever they are (a checkout on sys.path).
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, sys.path)))
        with open(errors, "wb") as log_file:
            helper = subprocess.Popen(
                [sys.executable, "-c", f"from {__name__} import serve_local_cluster; serve_local_cluster()",
                 str(workers), scratch],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, env=env, start_new_session=True)
        assert helper.stdin is not None and helper.stdout is not None  # not a user mistake: both are pipes
        try:
            address = helper.stdout.readline().decode("utf-8", "replace").strip()
            if not address.startswith("tcp://"):
                helper.wait(timeout=CONNECT_SECONDS)
                with open(errors, "rb") as log_file:
                    said = log_file.read().decode("utf-8", "replace").strip().splitlines()[-3:]
                raise ClusterError("the local Dask cluster did not start (exit status "
                                   f"{helper.returncode}): {' / '.join(said) or 'no message'}")
            yield address
        finally:
            helper.stdin.close()
            try:
                helper.wait(timeout=CLUSTER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(helper.pid, signal.SIGKILL)
                helper.wait()
            helper.stdout.close()


def serve_local_cluster() -> None:
    """The helper process of :func:`local_cluster` (arguments: workers, scratch folder): start
    the cluster, write its scheduler's address, and stop it when standard input closes.

    The scheduler serves HTTP (its health and metrics routes) in any case: on a free loopback
    port, never on 8787 of every interface. The workers' sampling profiler (a thread that takes
    the GIL every 10 ms) costs the checks time and serves no dashboard here. The scratch
    folders go in the audit's temporary folder, removed with it."""
    import dask
    from distributed import LocalCluster

    workers, scratch = int(sys.argv[1]), sys.argv[2]
    with dask.config.set({"temporary-directory": scratch, "distributed.worker.profile.enabled": False}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
    with contextlib.closing(cluster):
        print(cluster.scheduler_address, flush=True)
        sys.stdin.buffer.read()


def _check_workers(engine: DaskEngine, address: str) -> None:
    """A cluster that can run the audit: it has a worker (after a wait), and every worker
    imports this very labelguard version."""
    try:
        engine.client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
    except TimeoutError:
        raise ClusterError(f"the Dask cluster at {address} has no worker after {WORKER_WAIT_SECONDS} s; start "
                           f"some with `dask worker {address}`") from None
    try:
        versions = engine.client.run(labelguard_version)
    except Exception as exc:
        raise ClusterError(f"the workers of the Dask cluster at {address} cannot run labelguard "
                           f"({type(exc).__name__}: {exc}); install labelguard {__version__} (with the extras "
                           "the data needs) in the workers' environment") from None
    others = sorted(f"{worker} has {version}" for worker, version in versions.items() if version != __version__)
    if others:
        raise ClusterError(f"the workers of the Dask cluster at {address} run another labelguard than this "
                           f"{__version__}: {', '.join(others)}; install the same version everywhere, so that "
                           "every file is checked by the same rules")
