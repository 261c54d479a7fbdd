"""Reading a file list whose entries name no file, against a stat per entry.

A stale ``train.txt`` of millions of lines (a dataset moved, a split list from another
machine) must cost seconds, not a stat for every entry and every extension tried. This
writes a folder of masks and a list of N entries of which all but one are missing, and
measures in this one run, each the best of ``--repeat`` interleaved passes:

* the baseline: a loop that strips each line and stats it once (``os.path.isfile``), what
  the smallest loader script does, trying no extension and no second folder;
* ``labelguard.layouts.lists.select_from_lists``: the one list reading of the audit (the
  root and the list's folder, every mask extension, the stem fallback, LG003 findings).

The ratio printed is labelguard's time over the baseline's.

Usage::

    python benchmarks/bench_lists.py                 # 2,000,000 entries
    python benchmarks/bench_lists.py -n 200000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from labelguard.layouts.lists import ListRule, select_from_lists
from labelguard.readers.masks import MASK_EXTENSIONS

import _docs  # the module beside this script


def write_dataset(folder: str, count: int) -> tuple[str, str]:
    masks = os.path.join(folder, "masks")
    os.makedirs(masks)
    for i in range(5):
        with open(os.path.join(masks, f"m{i}.png"), "wb") as handle:
            handle.write(b"x")
    listing = os.path.join(folder, "train.txt")
    with open(listing, "w", encoding="utf-8") as handle:
        handle.writelines(f"masks/missing_{i}\n" for i in range(count - 1))
        handle.write("masks/m0.png\n")
    return masks, listing


def baseline(root: str, listing: str) -> int:
    with open(listing, encoding="utf-8") as handle:
        return sum(os.path.isfile(os.path.join(root, line.strip())) for line in handle)


def labelguard(root: str, listing: str, masks: list[str]) -> int:
    selection = select_from_lists((listing,), root, masks, rule=ListRule(extensions=tuple(MASK_EXTENSIONS)))
    return len(selection.paths)


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=2_000_000, help="entries in the list")
    parser.add_argument("--repeat", type=int, default=2)
    report = _docs.Report("bench_lists", parser)
    args = parser.parse_args()
    report.start(args)
    with tempfile.TemporaryDirectory(prefix="labelguard-bench-lists-") as folder:
        masks_dir, listing = write_dataset(folder, args.n)
        masks = sorted(os.path.join(masks_dir, name) for name in os.listdir(masks_dir))
        assert baseline(folder, listing) == 1 and labelguard(folder, listing, masks) == 1
        base = ours = float("inf")
        for _ in range(args.repeat):  # interleaved, so that load on the machine hits both
            base = min(base, timed(lambda: baseline(folder, listing)))
            ours = min(ours, timed(lambda: labelguard(folder, listing, masks)))
        print(f"{args.n:,} entries, {args.n - 1:,} missing, {len(MASK_EXTENSIONS)} extensions tried")
        print(f"  baseline (one stat per line): {base:7.2f} s")
        print(f"  labelguard select_from_lists: {ours:7.2f} s   ratio {ours / base:.2f}x")
        report.row(f"baseline: strip and stat each of {args.n:,} lines", f"{base:.2f} s")
        report.row(f"labelguard `select_from_lists`, {len(MASK_EXTENSIONS)} extensions, two folders",
                   f"{ours:.2f} s", f"{ours / base:.2f}x")
    report.finish()


if __name__ == "__main__":
    main()
