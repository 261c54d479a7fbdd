"""Mask audit throughput against the decode-only floor and the naive ``np.unique`` script.

Writes N realistic 512x512 segmentation masks (blob-shaped objects of several classes on a
background, VOC-style 255 borders around the objects in half of them, PNG mode L), then
measures in this one run, over a warm file cache, each the best of ``--repeat`` rounds that
take every measurement in turn:

* decode-only: ``np.asarray(Image.open(path))`` per file, nothing else (the physical floor);
* naive: ``np.unique(np.array(Image.open(path)))`` per file, values collected in a set;
* ``labelguard audit DIR --workers 1`` and ``--workers 2`` run as ``python -m labelguard``
  subprocesses: the wall time includes interpreter start-up, imports, discovery, the
  per-file work, the dataset checks and writing the report; nothing is subtracted. The
  subprocesses cache their bytecode (in a folder of the benchmark's own, after one untimed
  run) as an installed package has it, even where PYTHONDONTWRITEBYTECODE is set;
* ``labelguard.audit(DIR, workers=1)`` and ``workers=2`` in this process: the same
  audit without interpreter start-up (the pool's start-up is included).

Each target ratio is printed for the CLI and for the in-process call, with the CLI's fixed
start-up measured on its own (an audit of one mask). Then the peak RSS of the CLI audit at
N and 4N files (hard links to the same masks), from ``os.wait4``: the largest of the main
process and its workers.

Usage::

    python benchmarks/bench_masks.py                 # 2000 masks in a temporary folder
    python benchmarks/bench_masks.py -n 500 --dir /tmp/masks   # reuse a folder across runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

SIZE = 512
NUM_CLASSES = 8
IGNORE = 255
BORDER = 2  # VOC draws a 255 band about this many pixels either side of each object edge

TARGET_DECODE = 0.75  # one worker vs the decode-only loop
TARGET_NAIVE = 2.0  # one worker vs the naive script
TARGET_SCALING = 1.7  # two workers vs one


def _smooth_noise(rng: np.random.Generator, cells: int) -> np.ndarray:
    """A SIZE x SIZE field of smooth random bumps: coarse noise upsampled bicubically."""
    coarse = rng.standard_normal((cells, cells)).astype(np.float32)
    return np.asarray(Image.fromarray(coarse, "F").resize((SIZE, SIZE), Image.BICUBIC))


def make_mask(seed: int) -> np.ndarray:
    """A uint8 label map: 1-5 organic objects of random classes on background 0."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) / SIZE
    mask = np.zeros((SIZE, SIZE), dtype=np.uint8)
    for _ in range(int(rng.integers(1, 6))):
        cy, cx = rng.uniform(0.15, 0.85, size=2)
        radius = rng.uniform(0.08, 0.3)
        distance = np.sqrt(((yy - cy) ** 2 + (xx - cx) ** 2)) / radius
        field = 1.0 - distance + 0.35 * _smooth_noise(rng, int(rng.integers(4, 10)))
        mask[field > 0] = rng.integers(1, NUM_CLASSES)
    if seed % 2 == 0:
        edge = np.zeros_like(mask, dtype=bool)
        edge[:, 1:] |= mask[:, 1:] != mask[:, :-1]
        edge[1:, :] |= mask[1:, :] != mask[:-1, :]
        band = edge.copy()
        for _ in range(BORDER):
            grown = band.copy()
            grown[:, 1:] |= band[:, :-1]
            grown[:, :-1] |= band[:, 1:]
            grown[1:, :] |= band[:-1, :]
            grown[:-1, :] |= band[1:, :]
            band = grown
        mask[band] = IGNORE
    return mask


def _write_one(args: tuple[str, int]) -> None:
    path, seed = args
    Image.fromarray(make_mask(seed), "L").save(path, format="PNG")


def ensure_masks(folder: Path, count: int) -> list[Path]:
    """``count`` masks in ``folder``, writing only the ones missing."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"mask_{i:06d}.png" for i in range(count)]
    missing = [(str(p), i) for i, p in enumerate(paths) if not p.exists()]
    if missing:
        print(f"writing {len(missing)} masks to {folder} ...", flush=True)
        with ProcessPoolExecutor() as pool:
            list(pool.map(_write_one, missing, chunksize=32))
    return paths


def replicate(paths: list[Path], folder: Path, copies: int) -> Path:
    """A folder holding ``copies`` hard links (or copies) of every file: copies x N files."""
    folder.mkdir(parents=True, exist_ok=True)
    for copy in range(copies):
        for path in paths:
            target = folder / f"c{copy}_{path.name}"
            if target.exists():
                continue
            try:
                os.link(path, target)
            except OSError:
                shutil.copyfile(path, target)
    return folder


def warm(paths: list[Path]) -> None:
    for path in paths:
        path.read_bytes()


def decode_only(paths: list[Path]) -> None:
    for path in paths:
        np.asarray(Image.open(path))


def naive_unique(paths: list[Path]) -> set[int]:
    found: set[int] = set()
    for path in paths:
        found.update(np.unique(np.array(Image.open(path))).tolist())
    return found


def cli_command(folder: Path, workers: int) -> list[str]:
    return [sys.executable, "-m", "labelguard", "audit", str(folder), "--workers", str(workers),
            "--num-classes", str(NUM_CLASSES), "--ignore-index", str(IGNORE), "--no-config",
            "--no-progress", "-o", os.devnull]


def cli_environment(pycache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run_cli(folder: Path, workers: int, env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one CLI audit; fails loudly on exit code 2."""
    start = time.perf_counter()
    process = subprocess.Popen(cli_command(folder, workers), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"labelguard exited {process.returncode}: {stderr.decode(errors='replace')}")
    return elapsed, usage.ru_maxrss


def in_process(folder: Path, workers: int) -> None:
    from labelguard._audit import audit
    from labelguard.core.spec import LabelSpec

    report = audit(str(folder), LabelSpec(num_classes=NUM_CLASSES, ignore=(IGNORE,)),
                   use_project_config=False, workers=workers)
    assert report.summary.samples > 0


def timed(func, *args) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def _verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio >= target else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=2000, help="masks to generate (default 2000)")
    parser.add_argument("--dir", type=Path, help="folder for the masks (reused if present); default: a temp dir")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of all measurements; the best of each counts")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak RSS runs at N and 4N files")
    args = parser.parse_args(argv)

    temporary = None
    if args.dir is None:
        temporary = tempfile.TemporaryDirectory(prefix="labelguard-bench-")
        root = Path(temporary.name)
    else:
        root = args.dir
    try:
        folder = root / f"masks-{args.count}"
        paths = ensure_masks(folder, args.count)
        warm(paths)
        n = len(paths)
        print(f"{n} masks {SIZE}x{SIZE}, PNG mode L, {NUM_CLASSES} classes + {IGNORE} borders; "
              f"{os.cpu_count()} cores; best of {args.repeat} rounds; load average before {os.getloadavg()[0]:.2f}")
        env = cli_environment(root / "pycache")
        run_cli(folder, 1, env)  # compiles and caches labelguard's bytecode

        one = root / "masks-1"
        one.mkdir(exist_ok=True)
        if not (one / paths[0].name).exists():
            shutil.copyfile(paths[0], one / paths[0].name)
        measurements = {
            "decode": lambda: timed(decode_only, paths),
            "naive": lambda: timed(naive_unique, paths),
            "api1": lambda: timed(in_process, folder, 1),
            "api2": lambda: timed(in_process, folder, 2),
            "cli1": lambda: run_cli(folder, 1, env)[0],
            "cli2": lambda: run_cli(folder, 2, env)[0],
            "start": lambda: run_cli(one, 1, env)[0],
        }
        # Round robin, so that load from other processes falls on every measurement alike.
        best = {name: float("inf") for name in measurements}
        for _ in range(args.repeat):
            for name, measure in measurements.items():
                best[name] = min(best[name], measure())
        rates = {name: n / seconds for name, seconds in best.items() if name != "start"}

        print()
        rows = [
            ("decode-only loop (Image.open + np.asarray)", rates["decode"]),
            ("naive script (np.array(Image.open) + np.unique)", rates["naive"]),
            ("labelguard audit --workers 1 (CLI, with start-up)", rates["cli1"]),
            ("labelguard audit --workers 2 (CLI, with start-up)", rates["cli2"]),
            ("labelguard.audit(workers=1), in-process", rates["api1"]),
            ("labelguard.audit(workers=2), in-process", rates["api2"]),
        ]
        for name, rate in rows:
            print(f"  {name:<52} {rate:8.0f} files/s")
        print(f"  {'CLI start-up and exit (audit of 1 mask)':<52} {best['start']:8.3f} s")
        print(f"  load average after: {os.getloadavg()[0]:.2f} (above 0: other processes shared the cores)")
        print()
        targets = [
            ("workers 1 / decode-only", "1", "decode", TARGET_DECODE),
            ("workers 1 / naive", "1", "naive", TARGET_NAIVE),
            ("workers 2 / workers 1", "2", "1", TARGET_SCALING),
        ]
        print(f"  {'target':<36} {'CLI':>12} {'in-process':>16}")
        failed = 0
        for name, workers, base, target in targets:
            cells = []
            for prefix in ("cli", "api"):
                ratio = rates[prefix + workers] / rates[base if base in rates else prefix + base]
                verdict = _verdict(ratio, target)
                failed += verdict == "FAIL"
                cells.append(f"{ratio:5.2f}x {verdict}")
            print(f"  {name + f' >= {target}x':<36} {cells[0]:>12} {cells[1]:>16}")

        if not args.no_memory:
            big = replicate(paths, root / f"masks-{args.count}x4", 4)
            warm(sorted(big.iterdir()))
            print()
            for workers in (1, 2):
                for label, target_dir in ((f"N = {n}", folder), (f"4N = {4 * n}", big)):
                    _, rss = run_cli(target_dir, workers, env)
                    print(f"  peak RSS, --workers {workers}, {label:<12} {rss / 1024:7.1f} MiB")
        return 1 if failed else 0
    finally:
        if temporary is not None:
            temporary.cleanup()


if __name__ == "__main__":
    sys.exit(main())
