"""Peak memory of the whole audit, as the dataset grows: 10,000 against 100,000 small masks.

Writes two flat folders of small PNG masks (``--small`` and ``--large`` files; 32x32, a few
classes, one value out of the spec in every 500th file, so the report has findings to keep)
and runs ``labelguard audit DIR --workers W -f json -o FILE`` on each, as a user runs it (a
``python -m labelguard`` subprocess), polling the resident memory of its whole process tree
(the CLI and its worker processes, summed) every few milliseconds with psutil. Also printed:
the largest resident size any one process of the tree reached, from the kernel's own
accounting (``getrusage(RUSAGE_CHILDREN)``, which misses no peak between two polls).

Target: the peak of the large audit is at most 20 % above the small one's, with one worker
and with two (exit 1 when missed, as the other benchmarks do): discovery hands each file to
the engine as the walk finds it, the engine holds only the batches in flight, and the report
keeps counts, the findings and the files that have them, with the list of every file audited
spilled to a temporary file and streamed into the JSON report.

Usage::

    python benchmarks/bench_memory.py                       # 10,000 vs 100,000 masks, 1 and 2 workers
    python benchmarks/bench_memory.py --small 1000 --large 10000 --workers 2
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

SRC = str(Path(__file__).resolve().parents[1] / "src")
TARGET = 1.20  # the large audit's peak against the small one's
import _docs  # noqa: E402  (the module beside this script)

POLL_SECONDS = 0.005
DISTINCT = 100
NUM_CLASSES = 4
FLAGGED_EVERY = 500  # a file in this many holds a value outside the spec


def small_mask(seed: int, flagged: bool) -> bytes:
    rng = np.random.default_rng(seed)
    mask = np.zeros((32, 32), np.uint8)
    for value in range(1, NUM_CLASSES):
        y, x = rng.integers(0, 24, size=2)
        mask[y:y + 8, x:x + 8] = value
    if flagged:
        mask[0, 0] = 200
    encoded = io.BytesIO()
    Image.fromarray(mask, "L").save(encoded, format="PNG")
    return encoded.getvalue()


def write_masks(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    plain = [small_mask(seed, False) for seed in range(DISTINCT)]
    flagged = small_mask(DISTINCT, True)
    for index in range(count):
        data = flagged if index % FLAGGED_EVERY == 0 else plain[index % DISTINCT]
        (folder / f"mask_{index:07d}.png").write_bytes(data)


def tree_rss(process) -> int:
    """The resident bytes of ``process`` and all its descendants now."""
    import psutil

    total = 0
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def measure(folder: Path, workers: int, report: Path) -> tuple[float, int, int, int]:
    """(seconds, peak resident bytes of the process tree, the most any one process of it held,
    exit code) of one audit of ``folder``."""
    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    command = [sys.executable, "-m", "labelguard", "audit", str(folder), "--workers", str(workers),
               "--num-classes", str(NUM_CLASSES), "-f", "json", "-o", str(report), "--no-progress", "--no-config",
               "--no-cache"]
    start = time.perf_counter()
    child = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    watched = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(watched))
        time.sleep(POLL_SECONDS)
    seconds = time.perf_counter() - start
    errors = child.stderr.read().decode() if child.stderr else ""
    child.wait()
    if child.returncode not in (0, 1):
        sys.exit(f"the audit of {folder} failed ({child.returncode}): {errors}")
    # ru_maxrss (KiB on Linux) of the children waited for: the largest, not a sum; it only
    # grows, so a run that stays under an earlier one's leaves it unchanged.
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, peak, largest * 1024 if largest > before else 0, child.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000, help="masks in the small dataset")
    parser.add_argument("--large", type=int, default=100_000, help="masks in the large dataset")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to measure")
    docs = _docs.Report("bench_memory", parser)
    args = parser.parse_args()
    docs.start(args)
    try:
        import psutil  # noqa: F401
    except ImportError:
        sys.exit("bench_memory.py polls the process tree with psutil: pip install psutil")
    missed = False
    with tempfile.TemporaryDirectory(prefix="labelguard-bench-memory-") as temporary:
        base = Path(temporary)
        started = time.perf_counter()
        for name, count in (("small", args.small), ("large", args.large)):
            write_masks(base / name, count)
        print(f"wrote {args.small:,} and {args.large:,} masks in {time.perf_counter() - started:.1f} s")
        for workers in args.workers:
            results = {}
            for name, count in (("small", args.small), ("large", args.large)):
                report = base / f"report-{name}-{workers}.json"
                seconds, peak, largest, code = measure(base / name, workers, report)
                report.unlink()
                results[name] = peak
                one = f"{largest / 2**20:7.1f} MiB" if largest else "no more than an earlier run's"
                print(f"workers {workers}, {count:>9,} masks: peak RSS of the process tree {peak / 2**20:7.1f} MiB, "
                      f"largest process {one}, {seconds:6.1f} s ({count / seconds:,.0f} files/s), exit {code}")
                docs.row(f"peak RSS of the process tree, `--workers {workers}`, {count:,} masks"
                           f"{' (the baseline)' if name == 'small' else ''}", f"{peak / 2**20:.1f} MiB",
                           f"{peak / results['small']:.2f}x" if name == "large" else "")
            ratio = results["large"] / results["small"]
            verdict = "ok" if ratio <= TARGET else "MISSED"
            missed |= ratio > TARGET
            print(f"workers {workers}: large / small peak = {ratio:.2f} (target <= {TARGET:.2f}) {verdict}")
            docs.note(f"`--workers {workers}`: large / small peak {ratio:.2f} (target <= {TARGET:.2f}): {verdict}.")
    docs.finish()
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
