"""What the per-object count of instance masks (LG212) costs, against np.unique of the same
array with counts (the histogram a mask's audit takes anyway), measured in the same run.

    python benchmarks/bench_instances.py            # a 2048x2048 mask of ~3,000 cells, a 64x256x256 volume
    python benchmarks/bench_instances.py --side 512 --repeat 1
    python benchmarks/bench_instances.py --cube 256 # also a 256^3 volume of ~4,000 cells, and noise

Prints each array's time for both and the ratio count / histogram, and the count's peak memory
(numpy's allocations, traced) per voxel beside the array's own bytes per voxel.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from labelguard.rules._instances import count_regions

import _docs  # the module beside this script


def cells(shape: tuple[int, ...], cell: int, seed: int = 0) -> np.ndarray:
    """Square cells of ``cell`` pixels a side, numbered 1.. in a random order, apart by one
    background pixel: an instance mask of as many objects as fit."""
    rng = np.random.default_rng(seed)
    grid = tuple(max(1, n // cell) for n in shape)
    ids = rng.permutation(int(np.prod(grid))).reshape(grid) + 1
    mask = np.kron(ids, np.ones((cell,) * len(shape), np.int64))
    for axis in range(len(shape)):
        index = [slice(None)] * len(shape)
        index[axis] = slice(cell - 1, None, cell)
        mask[tuple(index)] = 0
    return mask.astype(np.uint16)


def best(function, array: np.ndarray, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(array)
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(function, array: np.ndarray) -> int:
    """The most memory ``function(array)`` held at once beyond what was held before it."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        function(array)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=2048, help="side of the 2-D mask (default 2048)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cube", type=int, default=0, help="side of a cube of cells and one of noise (default: none)")
    report = _docs.Report("bench_instances", parser)
    args = parser.parse_args()
    report.start(args)
    side = args.side
    arrays = [("2-D", cells((side, side), 36)), ("3-D", cells((max(8, side // 32), side // 8, side // 8), 12))]
    if args.cube:
        arrays.append(("cube", cells((args.cube,) * 3, 16)))
        arrays.append(("noise", np.random.default_rng(1).integers(0, 4000, (args.cube,) * 3).astype(np.uint16)))
    for name, array in arrays:
        histogram = best(lambda a: np.unique(a, return_counts=True), array, args.repeat)
        counted = best(count_regions, array, args.repeat)
        objects = len(np.unique(array)) - 1
        peak = peak_bytes(count_regions, array)
        print(f"{name} {'x'.join(map(str, array.shape))} uint16, {objects} objects: region count "
              f"{counted * 1000:.1f} ms, histogram {histogram * 1000:.1f} ms, ratio count / histogram "
              f"{counted / histogram:.2f}x; count's peak memory {peak / array.size:.1f} bytes per voxel "
              f"(the array: {array.itemsize})")
        shape = "x".join(map(str, array.shape))
        report.row(f"baseline: `np.unique` histogram, {name} {shape}", f"{histogram * 1000:.1f} ms")
        report.row(f"region count, {name} {shape}, {objects} objects, {peak / array.size:.1f} bytes a voxel at peak",
                   f"{counted * 1000:.1f} ms", f"{counted / histogram:.2f}x")
    report.finish()


if __name__ == "__main__":
    main()
