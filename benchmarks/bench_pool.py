"""The process pool alone: two workers against one on the same tasks, apart from the serial
part of an audit (start-up, detection, the report).

``bench_masks.py`` times whole ``labelguard audit`` processes; this script tells where the
difference between its two-worker ratio and 2x goes. It writes N realistic 512x512 PNG masks
(the masks of ``bench_masks.py``), then, in this process:

* times the serial part before the first batch: the dataset's detection and discovery up to
  its first task, the best of ``--repeat`` (the CLI adds its own start-up, which
  ``bench_masks.py`` measures);
* lists every task, then runs them through the engine (``labelguard.core.engine``) with one
  worker process and with two, rounds interleaved, the best of ``--repeat`` counting: the
  batches sized by their time as the engine sizes them, and, for comparison, batches of 32
  files throughout (the engine's size before);
* prints each run's wall time, the parent's CPU time (handing batches out, taking results
  back) and the workers' CPU time, and the ratio of one worker's wall time to two's.

Usage::

    python benchmarks/bench_pool.py                 # 20,000 masks, best of 3
    python benchmarks/bench_pool.py -n 2000 --repeat 1 --dir /tmp/masks
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_masks import IGNORE, NUM_CLASSES, ensure_masks, linked, warm  # noqa: E402

from labelguard.core import engine  # noqa: E402
from labelguard.core.spec import LabelSpec  # noqa: E402
from labelguard.layouts.base import AuditOptions, discover_datasets  # noqa: E402

import _docs  # noqa: E402  (the module beside this script)


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def pooled(tasks: list, spec: LabelSpec, workers: int, fixed: bool) -> tuple[float, float, float, int]:
    """(wall, parent CPU, workers' CPU, batches) of running ``tasks`` on ``workers`` processes."""
    modules = sorted({task.processor.__module__ for task in tasks[:1]})
    if fixed:
        batches = engine.batches_of(tasks, engine.BATCH_FILES)
    else:
        batches = engine.TimedBatches(tasks, engine.batch_size(len(tasks), workers))
    parent, children, start = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
    count = sum(1 for _ in engine._run_pooled(batches, spec, workers, modules))
    return (time.perf_counter() - start, cpu(resource.RUSAGE_SELF) - parent,
            cpu(resource.RUSAGE_CHILDREN) - children, count)


def first_task_seconds(folder: Path) -> float:
    """Seconds from the start of a discovery of ``folder`` to its first task."""
    start = time.perf_counter()
    discoveries = discover_datasets(str(folder), AuditOptions(), stream=True)
    next(iter(discoveries[0].tasks))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--count", type=int, default=20_000, help="masks (default 20,000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best of each counts")
    parser.add_argument("--dir", type=Path, help="folder for the masks (reused if present); default: a temp dir")
    report = _docs.Report("bench_pool", parser)
    args = parser.parse_args(argv)
    report.start(args)
    spec = LabelSpec(num_classes=NUM_CLASSES, ignore=(IGNORE,))
    temporary = None if args.dir else tempfile.TemporaryDirectory(prefix="labelguard-bench-pool-")
    root = args.dir or Path(temporary.name)
    try:
        paths = ensure_masks(root / "all", args.count)
        folder = linked(paths[:args.count], root / f"masks-{args.count}")[0].parent
        warm(sorted(folder.iterdir()))
        serial = min(first_task_seconds(folder) for _ in range(args.repeat))
        tasks = list(discover_datasets(str(folder), AuditOptions())[0].tasks)
        print(f"{len(tasks):,} masks 512x512 in one folder; 2 workers against 1, best of {args.repeat}")
        print(f"  detection and discovery up to the first task (serial in every audit)  {serial:6.3f} s")
        report.row(f"detection and discovery up to the first task, {len(tasks):,} masks", f"{serial:.3f} s")
        for fixed, label in ((False, "batches sized by their time (the engine's)"),
                             (True, f"batches of {engine.BATCH_FILES} files throughout")):
            best: dict[int, tuple[float, float, float, int]] = {}
            for _ in range(args.repeat):
                for workers in (1, 2):
                    run = pooled(tasks, spec, workers, fixed)
                    if workers not in best or run[0] < best[workers][0]:
                        best[workers] = run
            print(f"  {label}:")
            for workers, (wall, parent, children, count) in sorted(best.items()):
                print(f"    {workers} worker{'s' if workers > 1 else ' '}: {wall:6.2f} s, {count:5d} batches, "
                      f"parent CPU {parent:5.2f} s, workers' CPU {children:6.2f} s")
            print(f"    one worker / two: {best[1][0] / best[2][0]:.2f}x")
            for workers, (wall, parent, children, count) in sorted(best.items()):
                report.row(f"{label}: {workers} worker{'s' if workers > 1 else ''}"
                           f"{' (the baseline)' if workers == 1 else ''}, {count} batches, parent CPU {parent:.2f} s, "
                           f"workers' CPU {children:.2f} s", f"{wall:.2f} s",
                           "" if workers == 1 else f"{best[1][0] / wall:.2f}x faster")
        report.finish()
    finally:
        if temporary is not None:
            temporary.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
