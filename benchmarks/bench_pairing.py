"""Image/label pairing throughput against the naive exact-stem dictionary.

Builds N image paths and N label paths named as mmsegmentation writes them
(``imgs/<shard>/000123_img.jpg`` + ``gts/<shard>/000123_gt.png``), shuffled, and measures in
this one run, each the best of ``--repeat`` interleaved passes (no file system: names only):

* the baseline: a dict from each image's stem with its tool suffix cut by one fixed string
  replace, looked up for every label (what a one-off script does for one known convention);
* ``labelguard.layouts.pairing.pair_files``: every convention, the longest-common-stem
  fallback, ties refused, orphans on both sides.

The ratio printed is labelguard's time over the baseline's; pairing stays O(n log n), so the
ratio must not grow with N (compare ``-n 10000`` and ``-n 100000``).

Usage::

    python benchmarks/bench_pairing.py              # 100,000 pairs
    python benchmarks/bench_pairing.py -n 10000
"""

from __future__ import annotations

import argparse
import random
import time

from labelguard.layouts.pairing import pair_files

import _docs  # the module beside this script


def names(count: int) -> tuple[list[str], list[str]]:
    images = [f"/d/imgs/{i // 1000:03d}/{i:06d}_img.jpg" for i in range(count)]
    labels = [f"/d/gts/{i // 1000:03d}/{i:06d}_gt.png" for i in range(count)]
    random.Random(0).shuffle(images)
    random.Random(1).shuffle(labels)
    return images, labels


def baseline(images: list[str], labels: list[str]) -> dict[str, str]:
    by_stem = {image.rsplit("/", 1)[1].rsplit(".", 1)[0].replace("_img", ""): image for image in images}
    return {label: by_stem[label.rsplit("/", 1)[1].rsplit(".", 1)[0].replace("_gt", "")] for label in labels}


def best(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=100_000, help="pairs (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best of each counts")
    report = _docs.Report("bench_pairing", parser)
    args = parser.parse_args()
    report.start(args)
    images, labels = names(args.count)
    expected = baseline(images, labels)
    assert pair_files(images, labels, "/d/imgs", "/d/gts").pairs == expected
    naive = engine = float("inf")
    for _ in range(args.repeat):
        naive = min(naive, best(lambda: baseline(images, labels), 1))
        engine = min(engine, best(lambda: pair_files(images, labels, "/d/imgs", "/d/gts"), 1))
    print(f"{args.count} pairs")
    print(f"  baseline dict of one convention   {naive:8.3f} s  ({args.count / naive:,.0f} pairs/s)")
    print(f"  labelguard pair_files             {engine:8.3f} s  ({args.count / engine:,.0f} pairs/s)")
    print(f"  ratio labelguard / baseline       {engine / naive:8.1f}x")
    report.row(f"baseline: a dict of one naming convention, {args.count:,} pairs", f"{naive:.3f} s")
    report.row(f"labelguard `pair_files`, {args.count:,} pairs", f"{engine:.3f} s", f"{engine / naive:.1f}x")
    report.finish()


if __name__ == "__main__":
    main()
