"""The Dask engine against the local engine on N masks, and the scheduler's cost per task.

Writes N realistic 512x512 segmentation masks (those of ``bench_masks.py``: 200 distinct
ones copied to N files, every 50th file one of 4 masks holding a value outside the spec, so
the audit has findings), then, each the best of ``--repeat`` rounds, in this process:

* ``labelguard.audit(DIR)`` with the local engine, 1 worker and ``--workers`` workers;
* the same audit with ``engine="dask"`` on a LocalCluster of ``--workers`` worker processes
  (one thread each) that the benchmark started beforehand (its start-up is timed apart), and
  once with ``engine="dask", workers=W`` alone, where the audit starts and stops the cluster.

It asserts that the Dask report equals the local one (findings included), prints the time
ratios, and measures the scheduler on the same cluster: ``--tasks`` no-op tasks submitted as
the engine submits batches (a window of 2 per worker thread, the next one sent as one
finishes), whose rate is the cost of one task end to end (client, scheduler, worker and back),
against the batches per second the audit needed with the batch size the engine chose. The
load of the machine (``/proc/loadavg``) is printed before and after: the figures of a shared
machine move with it.

Usage::

    python benchmarks/bench_dask.py                    # 20,000 masks, 2 workers
    python benchmarks/bench_dask.py -n 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_masks import IGNORE, NUM_CLASSES, make_mask  # noqa: E402  (the same realistic masks)

from labelguard import LabelSpec, audit  # noqa: E402
from labelguard._optional import require  # noqa: E402
from labelguard.core.dask_engine import IN_FLIGHT_PER_THREAD, dask_batch_size  # noqa: E402

import _docs  # noqa: E402  (the module beside this script)

DISTINCT = 200
BAD_EVERY = 50
SPEC = LabelSpec(num_classes=NUM_CLASSES, ignore=(IGNORE,))


def write_masks(folder: Path, count: int) -> None:
    """``count`` masks: copies of 200 distinct ones, every 50th a copy of one of 4 with a 99."""
    folder.mkdir(parents=True)
    good, bad = [], []
    for seed in range(min(DISTINCT, count)):
        good.append(folder / f"mask_{seed:06d}.png")
        Image.fromarray(make_mask(seed), "L").save(good[-1])
    for index in range(len(good), count):
        path = folder / f"mask_{index:06d}.png"
        if index % BAD_EVERY == 0:
            if len(bad) < 4:
                mask = make_mask(index)
                mask[:8, :8] = 99
                Image.fromarray(mask, "L").save(path)
                bad.append(path)
            else:
                shutil.copyfile(bad[index // BAD_EVERY % 4], path)
        else:
            shutil.copyfile(good[index % len(good)], path)


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "unknown (no /proc/loadavg)"


def comparable(report) -> dict:
    """The JSON report without the note that says where the per-file work ran."""
    data = json.loads(json.dumps(report.to_dict(), default=str))
    data["summary"]["notes"] = [n for n in data["summary"]["notes"] if "per-file work ran on" not in n]
    return data


def timed(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def scheduler_rate(client, tasks: int) -> tuple[float, float]:
    """No-op tasks per second, submitted through a window as the engine submits batches, and
    the CPU seconds per task of this process, which runs the client and the LocalCluster's
    scheduler (the workers' share is in neither)."""
    distributed = require("dask.distributed")
    window = IN_FLIGHT_PER_THREAD * sum(client.nthreads().values())
    completed = distributed.as_completed(loop=client.loop)
    submitted = 0
    start, cpu = time.perf_counter(), time.process_time()
    while submitted < min(window, tasks):
        completed.add(client.submit(len, (), pure=False))
        submitted += 1
    for future in completed:
        future.result()
        future.release()
        if submitted < tasks:
            completed.add(client.submit(len, (), pure=False))
            submitted += 1
    return tasks / (time.perf_counter() - start), (time.process_time() - cpu) / tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000, help="masks (default 20,000)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of both engines (default 2)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; each figure is the best (default 1)")
    parser.add_argument("--tasks", type=int, default=2000, help="no-op tasks of the scheduler's rate (default 2000)")
    report = _docs.Report("bench_dask", parser)
    args = parser.parse_args()
    report.start(args)
    distributed = require("dask.distributed", "run this benchmark")
    dask = require("dask")
    print(f"load before (/proc/loadavg): {load()}")

    with tempfile.TemporaryDirectory(prefix="labelguard-bench-dask-") as temporary:
        folder = Path(temporary) / "masks"
        write_masks(folder, args.n)
        common = dict(use_project_config=False, cache=False)
        best: dict[str, float] = {}
        reports = {}
        start = time.perf_counter()
        # As the audit starts its own (labelguard.core.dask_engine.serve_local_cluster).
        with dask.config.set({"temporary-directory": temporary, "distributed.worker.profile.enabled": False}):
            cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                               host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                               silence_logs=logging.CRITICAL)
        client = distributed.Client(cluster, set_as_default=False)
        best["Dask LocalCluster start-up"] = time.perf_counter() - start
        try:
            for _ in range(args.repeat):
                rounds = {}
                rounds["local engine, 1 worker"], reports["local1"] = timed(
                    lambda: audit(folder, SPEC, workers=1, **common))
                rounds[f"local engine, {args.workers} workers"], reports["local"] = timed(
                    lambda: audit(folder, SPEC, workers=args.workers, **common))
                rounds[f"Dask, {args.workers} local workers (cluster up)"], reports["dask"] = timed(
                    lambda: audit(folder, SPEC, client=client, **common))
                for name, seconds in rounds.items():
                    best[name] = min(best.get(name, seconds), seconds)
            rate, cpu_per_task = scheduler_rate(client, args.tasks)
        finally:
            client.close()
            cluster.close()
        best[f"Dask, {args.workers} workers, cluster started by the audit"], reports["own"] = timed(
            lambda: audit(folder, SPEC, engine="dask", workers=args.workers, **common))

    same = comparable(reports["dask"]) == comparable(reports["local"]) == comparable(reports["own"]) \
        == comparable(reports["local1"])
    findings = len(reports["local"].findings)
    print(f"{args.n:,} masks of 512x512, {findings:,} findings, best of {args.repeat}:")
    for name, seconds in best.items():
        per_second = "" if "start-up" in name else f"  ({args.n / seconds:,.0f} masks/s)"
        print(f"  {name:52} {seconds:7.2f} s{per_second}")
    local = best[f"local engine, {args.workers} workers"]
    on_dask = best[f"Dask, {args.workers} local workers (cluster up)"]
    one = best["local engine, 1 worker"]
    print(f"time ratio Dask / local engine, {args.workers} workers each: {on_dask / local:.2f}x")
    print(f"time ratio Dask ({args.workers} workers) / local engine (1 worker): {on_dask / one:.2f}x")
    size = dask_batch_size(args.n, args.workers)
    batches = -(-args.n // size)
    needed = batches / on_dask
    busy = on_dask * args.workers / batches  # a batch's seconds on its worker, overhead included
    print(f"scheduler: {rate:,.0f} no-op tasks/s through the engine's window ({1000 / rate:.2f} ms per task, "
          f"end to end); the client and the scheduler spent {1000 * cpu_per_task:.2f} ms of CPU per task")
    print(f"batch size {size} files: {batches} batches in {on_dask:.2f} s = {needed:.1f} tasks/s, "
          f"{needed / rate:.2%} of the scheduler's rate; one task's overhead is {(1 / rate) / busy:.2%} of a "
          f"batch's {busy:.2f} s")
    print(f"findings identical to the local engine's: {'yes' if same else 'NO'}")
    print(f"load after (/proc/loadavg): {load()}")
    for name, seconds in best.items():
        report.row(f"{name}{' (the baseline)' if name == f'local engine, {args.workers} workers' else ''}",
                   f"{seconds:.2f} s", "" if "start-up" in name else f"{seconds / local:.2f}x")
    report.row("scheduler: no-op tasks through the engine's window", f"{rate:,.0f} tasks/s")
    report.row("the client's and the scheduler's CPU per task", f"{1000 * cpu_per_task:.2f} ms")
    report.note(f"{args.n:,} masks of 512x512, {findings:,} findings; reports identical: {'yes' if same else 'no'}.")
    report.finish()
    assert same, "the Dask engine's report differs from the local engine's"
    return 0


if __name__ == "__main__":
    sys.exit(main())
