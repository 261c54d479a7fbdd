"""What the size of a spec costs: an audit and the guard's value check with num_classes=10
against num_classes=100,000,000, measured in this one run.

A spec is an interval plus a few values (``ValueSet``), so the second must cost what the
first costs: the ratio printed is the 100,000,000-class figure over the 10-class one and
should stay near 1x. Each figure is the best of ``--repeat`` interleaved rounds.

* spec work alone: building the spec, ``legal`` on a histogram of 50 distinct values,
  ``describe``, the LG104 count of never-seen classes (what once built
  ``frozenset(range(num_classes))``, some 6 GiB and 10 s for 100,000,000 classes);
* a whole audit (in-process, one worker) of ``-n`` small ``.npy`` masks in a temporary folder;
* ``labelguard.core.values.violations`` on a 512x512 mask's histogram, as the guard runs it.

Usage::

    python benchmarks/bench_spec.py            # 200 masks
    python benchmarks/bench_spec.py -n 20 --repeat 1
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.values import histogram, violations
from labelguard.rules.lg104 import classes_never_seen

import _docs  # the module beside this script

SIZES = (10, 100_000_000)


def spec_work(num_classes: int, values: np.ndarray, summary: Summary) -> None:
    spec = LabelSpec(num_classes=num_classes, ignore=(255,))
    spec.legal(values)
    spec.describe()
    classes_never_seen(summary, spec)


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=200, help="masks audited (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best of each counts")
    report = _docs.Report("bench_spec", parser)
    args = parser.parse_args()
    report.start(args)
    rng = np.random.default_rng(0)
    values = np.arange(50, dtype=np.int64)
    summary = Summary()
    summary.add_values("a.npy", values.tolist(), [1] * len(values))
    mask = rng.integers(0, 12, (512, 512)).astype(np.int64)
    mask_values, mask_counts = histogram(mask)
    best: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "masks").mkdir()
        for i in range(args.count):
            np.save(root / "masks" / f"{i:04d}.npy", rng.integers(0, 12, (64, 64)).astype(np.int64))
        for _ in range(args.repeat):
            for size in SIZES:
                spec = LabelSpec(num_classes=size)
                figures = {
                    "spec work": timed(lambda size=size: spec_work(size, values, summary)),
                    "audit": timed(lambda spec=spec: audit(root, spec, workers=1, use_project_config=False)),
                    "violations": timed(lambda spec=spec: violations(mask_values, mask_counts, spec)),
                }
                for name, seconds in figures.items():
                    best[name, size] = min(best.get((name, size), float("inf")), seconds)
    print(f"{args.count} masks of 64x64; num_classes {SIZES[0]} vs {SIZES[1]:,}")
    for name in ("spec work", "audit", "violations"):
        small, large = best[name, SIZES[0]], best[name, SIZES[1]]
        print(f"  {name:<11} {small * 1e3:9.3f} ms  {large * 1e3:9.3f} ms  ratio {large / small:5.2f}x")
        report.row(f"{name}, num_classes {SIZES[0]} (the baseline)", f"{small * 1e3:.3f} ms")
        report.row(f"{name}, num_classes {SIZES[1]:,}", f"{large * 1e3:.3f} ms", f"{large / small:.2f}x")
    report.finish()


if __name__ == "__main__":
    main()
