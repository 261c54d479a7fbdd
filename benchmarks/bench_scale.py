"""The figures of docs/scale.md's cost model: what one core audits per second by format and
size, the bytes a mask brings over the network, the result cache's cost per file, and the
client's memory per task and per finding.

In this process, the local engine with one worker (one core), no cache unless said, each the
best of ``--repeat`` rounds over a warm file cache (the cost of reading from storage is the
model's other term), as CPU seconds of this process (on a shared machine the wall time also
counts the other jobs' turns; it is printed beside):

* masks/s and MB/s per core for PNG 512x512 (the realistic masks of ``bench_masks.py``),
  PNG 1024x1024 (the same, scaled up), NPY 512x512 uint8 and small NIfTI volumes
  (96x96x48 uint8, gzipped), with the mean bytes per file;
* the result cache: an audit of the PNG 512 masks whose every result is in the cache, per
  file (entries of whole batches), and again after every file was touched (its signature
  changed, so each file is hashed again and its own entry read);
* memory (tracemalloc): per task that discovery keeps for the client (a FileTask with its
  display path), and per finding (a mask with one value outside the spec) that the client
  keeps until the report.

Then, for 10^8 masks of each format, the core-hours of the per-file work. Usage::

    python benchmarks/bench_scale.py             # 1000 masks of the small formats
    python benchmarks/bench_scale.py -n 200 --repeat 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_masks import IGNORE, NUM_CLASSES, make_mask  # noqa: E402  (the same realistic masks)

from labelguard import LabelSpec, audit  # noqa: E402
from labelguard._optional import require  # noqa: E402
from labelguard.core.cache import RACY_SECONDS  # noqa: E402
from labelguard.core.engine import run_tasks  # noqa: E402
from labelguard.layouts import AuditOptions, discover  # noqa: E402

import _docs  # noqa: E402  (the module beside this script)

DISTINCT = 100
SPEC = LabelSpec(num_classes=NUM_CLASSES, ignore=(IGNORE,))
MASKS = 10 ** 8


def png(mask: np.ndarray, path: Path) -> None:
    Image.fromarray(mask, "L").save(path.with_suffix(".png"))


def npy(mask: np.ndarray, path: Path) -> None:
    np.save(path.with_suffix(".npy"), mask)


def nifti(mask: np.ndarray, path: Path) -> None:
    nib = require("nibabel", "write the NIfTI volumes")
    nib.save(nib.Nifti1Image(mask, np.eye(4)), str(path.with_suffix(".nii.gz")))


def mask_512(seed: int) -> np.ndarray:
    return make_mask(seed)


def mask_1024(seed: int) -> np.ndarray:
    return np.asarray(Image.fromarray(make_mask(seed), "L").resize((1024, 1024), Image.NEAREST))


def volume(seed: int) -> np.ndarray:
    """96x96x48: slices of a realistic mask scaled down, the objects shrinking with depth."""
    base = np.asarray(Image.fromarray(make_mask(seed), "L").resize((96, 96), Image.NEAREST))
    slices = [np.where(np.arange(96)[:, None] < 96 - depth, base, 0) for depth in range(48)]
    return np.ascontiguousarray(np.stack(slices, axis=-1).astype(np.uint8))


FORMATS = {  # name: (mask maker, writer, files per --n)
    "PNG 512x512": (mask_512, png, 1.0),
    "PNG 1024x1024": (mask_1024, png, 0.3),
    "NPY 512x512 uint8": (mask_512, npy, 1.0),
    "NIfTI 96x96x48 uint8 .nii.gz": (volume, nifti, 0.2),
}


def write(folder: Path, count: int, maker, writer) -> list[Path]:
    """``count`` files: ``DISTINCT`` distinct masks, copied."""
    folder.mkdir(parents=True)
    distinct = []
    for seed in range(min(DISTINCT, count)):
        writer(maker(seed), folder / f"m{seed:06d}")
        distinct.append(next(folder.glob(f"m{seed:06d}.*")))
    paths = list(distinct)
    for index in range(len(distinct), count):
        source = distinct[index % len(distinct)]
        target = folder / f"m{index:06d}{''.join(source.suffixes)}"
        shutil.copyfile(source, target)
        paths.append(target)
    return paths


def best_time(call, repeat: int) -> tuple[float, float]:
    """The best wall seconds and the best CPU seconds of this process (the per-file work of a
    one-worker audit runs in it): on a shared machine the CPU time is the core's cost."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        start, used = time.perf_counter(), time.process_time()
        call()
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - used)
    return wall, cpu


def retained(call) -> tuple[object, int]:
    """``call()`` and the bytes still allocated from it once it returned."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = call()
        return kept, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="files of the small formats (default 1000)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; each figure is the best (default 2)")
    report = _docs.Report("bench_scale", parser)
    args = parser.parse_args()
    report.start(args)
    print(f"load before (/proc/loadavg): {Path('/proc/loadavg').read_text().strip()}")
    rates = {}
    with tempfile.TemporaryDirectory(prefix="labelguard-bench-scale-") as temporary:
        root = Path(temporary)
        options = AuditOptions(format="masks")
        common = dict(options=options, use_project_config=False, workers=1)
        print("per-file work, one core (local engine, 1 worker, warm file cache):")
        for name, (maker, writer, share) in FORMATS.items():
            count = max(10, int(args.n * share))
            paths = write(root / name.split()[0] / name.split()[1], count, maker, writer)
            folder = paths[0].parent
            seconds, cpu = best_time(lambda folder=folder: audit(folder, SPEC, cache=False, **common), args.repeat)
            size = sum(p.stat().st_size for p in paths) / count
            rates[name] = count / cpu
            print(f"  {name:30} {count:6,} files  {size / 1024:7.1f} KiB/file  CPU {1e3 * cpu / count:6.2f} ms/file "
                  f"= {count / cpu:6,.0f} files/s = {count * size / cpu / 2**20:6.1f} MB/s per core  "
                  f"(wall {1e3 * seconds / count:6.2f} ms/file)")
            report.row(f"CPU per file, {name} ({count:,} files of {size / 1024:.1f} KiB)",
                       f"{1e3 * cpu / count:.2f} ms", f"{count * size / cpu / 2**20:.1f} MB/s per core")

        folder = root / "PNG" / "512x512"
        count = len(list(folder.iterdir()))
        time.sleep(RACY_SECONDS + 0.5)  # older than the racy window: their results are stored
        cache = str(root / "cache")
        audit(folder, SPEC, cache=cache, **common)
        _, hit = best_time(lambda: audit(folder, SPEC, cache=cache, **common), args.repeat)
        then = time.time() - 3600
        for path in folder.iterdir():
            os.utime(path, (then, then))
        _, rehash = best_time(lambda: audit(folder, SPEC, cache=cache, **common), 1)
        print(f"result cache, PNG 512x512, every result cached: CPU {1e6 * hit / count:,.0f} us/file (entries of "
              f"whole batches; discovery and the report included); after touching every file: "
              f"{1e6 * rehash / count:,.0f} us/file (each hashed again, its own entry read)")
        report.row("result cache, PNG 512x512, every result cached: CPU per file", f"{1e6 * hit / count:,.0f} us")
        report.row("result cache after touching every file (hashed again): CPU per file",
                   f"{1e6 * rehash / count:,.0f} us")

        tasks, task_bytes = retained(lambda: discover(str(folder), options).tasks)
        bad = root / "bad"
        bad.mkdir()
        for index, path in enumerate(sorted(folder.iterdir())):
            mask = np.array(Image.open(path))
            mask[0, 0] = 99
            Image.fromarray(mask, "L").save(bad / f"b{index:06d}.png")
        bad_tasks = discover(str(bad), options).tasks
        findings, finding_bytes = retained(
            lambda: [f for result in run_tasks(bad_tasks, SPEC, 1) for f in result.findings])
        print(f"client memory: {task_bytes / len(tasks):,.0f} bytes per task (discovery), "
              f"{finding_bytes / len(findings):,.0f} bytes per finding ({len(findings):,} LG201 findings)")
        report.row("client memory per task (discovery)", f"{task_bytes / len(tasks):,.0f} bytes")
        report.row("client memory per finding", f"{finding_bytes / len(findings):,.0f} bytes")

    print(f"core-hours of the per-file work (CPU) for {MASKS:.0e} masks, files already local:")
    for name, rate in rates.items():
        print(f"  {name:30} {MASKS / rate / 3600:10,.0f} core-hours")
    print(f"load after (/proc/loadavg): {Path('/proc/loadavg').read_text().strip()}")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
