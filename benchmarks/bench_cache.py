"""The result cache: a second audit of unchanged masks against the first, and an edit.

Writes N 512x512 segmentation masks (the realistic masks of ``bench_masks.py``: 200 distinct
ones, each copied to N / 200 files), waits until they are older than the cache's racy window
(a data drop arrives some seconds before it is audited), then runs ``labelguard audit DIR``
with ``--workers W -f json`` as a user runs it (a ``python -m labelguard`` subprocess: the
wall time includes interpreter start-up, discovery and the report) and, for the same audits,
``labelguard.audit(DIR)`` in this process (no start-up):

* without the cache (``--no-cache``): the audit as it was before the cache;
* the first audit into an empty cache (every file read, checked and stored);
* the second audit, nothing changed (every file's result read from the cache).

Each is the best of ``--repeat`` interleaved rounds (the first audit empties its cache before
each round). Then one byte of one mask is changed and the audit run again: its JSON report
must say that exactly N - 1 files came from the cache, with findings equal to an audit
without the cache.

Target: the second audit takes at most 5 % of the first (exit 1 when missed, as the other
benchmarks do; the CLI's fixed start-up, measured on a one-mask audit, is printed beside it).

Usage::

    python benchmarks/bench_cache.py                  # 20,000 masks in a temporary folder
    python benchmarks/bench_cache.py -n 2000 --workers 2 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_masks import make_mask  # noqa: E402  (the same realistic masks)

from labelguard import audit  # noqa: E402
from labelguard.core.cache import RACY_SECONDS  # noqa: E402

import _docs  # noqa: E402  (the module beside this script)

TARGET = 0.05  # the second audit against the first
DISTINCT = 200


def write_masks(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True)
    distinct = []
    for seed in range(min(DISTINCT, count)):
        path = folder / f"mask_{seed:06d}.png"
        Image.fromarray(make_mask(seed), "L").save(path)
        distinct.append(path)
    paths = list(distinct)
    for index in range(len(distinct), count):
        path = folder / f"mask_{index:06d}.png"
        shutil.copyfile(distinct[index % len(distinct)], path)
        paths.append(path)
    return paths


def cli(folder: Path, workers: int, cache: Path | None, env: dict) -> tuple[float, dict]:
    """Wall time of the CLI audit and its JSON report."""
    command = [sys.executable, "-m", "labelguard", "audit", str(folder), "--workers", str(workers),
               "-f", "json", "--no-progress", "--no-config", "--fail-on", "never"]
    command += ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder.parent)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"labelguard audit failed ({done.returncode}): {done.stderr}")
    return elapsed, json.loads(done.stdout)


def in_process(folder: Path, workers: int, cache: Path | None) -> tuple[float, dict]:
    start = time.perf_counter()
    report = audit(str(folder), workers=workers, use_project_config=False, cache=str(cache) if cache else False)
    return time.perf_counter() - start, report.to_dict()


def without_cache_fields(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    report["summary"].pop("from_cache")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000, help="masks (default 20,000)")
    parser.add_argument("--workers", type=int, default=1, help="workers of every audit (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; each figure is the best (default 1)")
    report = _docs.Report("bench_cache", parser)
    args = parser.parse_args()
    report.start(args)

    with tempfile.TemporaryDirectory(prefix="labelguard-bench-cache-") as temporary:
        root = Path(temporary)
        # The CLI runs from another folder than this process: their display paths, and so
        # their cache entries, differ; each has a cache folder of its own.
        folder, cache, own_cache, one = root / "masks", root / "cache", root / "own-cache", root / "one"
        paths = write_masks(folder, args.n)
        write_masks(one, 1)
        # Bytecode cached where the subprocesses look for it, as an installed package has it.
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(root / "pycache"), "PYTHONDONTWRITEBYTECODE": ""}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1] / "src"),
                                                          env.get("PYTHONPATH")]))
        cli(one, 1, None, env)
        time.sleep(RACY_SECONDS + 0.5)  # the files are older than the racy window, as a data drop is

        best: dict[str, float] = {}
        reports: dict[str, dict] = {}
        for _ in range(args.repeat):
            rounds = {}
            rounds["CLI start-up (one mask, no cache)"], _ = cli(one, 1, None, env)
            rounds["CLI without cache"], reports["none"] = cli(folder, args.workers, None, env)
            shutil.rmtree(cache, ignore_errors=True)
            rounds["CLI first audit (empty cache)"], reports["first"] = cli(folder, args.workers, cache, env)
            rounds["CLI second audit (nothing changed)"], reports["second"] = cli(folder, args.workers, cache, env)
            rounds["in-process without cache"], _ = in_process(folder, args.workers, None)
            shutil.rmtree(own_cache, ignore_errors=True)
            rounds["in-process first audit (empty cache)"], _ = in_process(folder, args.workers, own_cache)
            rounds["in-process second audit"], _ = in_process(folder, args.workers, own_cache)
            for name, seconds in rounds.items():
                best[name] = min(best.get(name, seconds), seconds)

        edited = paths[len(paths) // 2]
        pixels = np.array(Image.open(edited))
        pixels[0, 0] = 7 if pixels[0, 0] != 7 else 6
        Image.fromarray(pixels, "L").save(edited)
        _, after_edit = cli(folder, args.workers, cache, env)
        _, reference = cli(folder, args.workers, None, env)

    print(f"{args.n:,} masks of 512x512, --workers {args.workers}, best of {args.repeat}:")
    for name, seconds in best.items():
        print(f"  {name:40} {seconds:7.2f} s")
    cli_ratio = best["CLI second audit (nothing changed)"] / best["CLI first audit (empty cache)"]
    process_ratio = best["in-process second audit"] / best["in-process first audit (empty cache)"]
    overhead = best["CLI first audit (empty cache)"] / best["CLI without cache"]
    print(f"first audit into an empty cache / without cache (CLI): {overhead:.2f}x")
    print(f"second / first (CLI): {cli_ratio:.3f}  (target <= {TARGET})")
    print(f"second / first (in-process): {process_ratio:.3f}  (target <= {TARGET})")
    print(f"from the cache: first {reports['first']['summary']['from_cache']:,}, second "
          f"{reports['second']['summary']['from_cache']:,}, after editing one mask "
          f"{after_edit['summary']['from_cache']:,} of {args.n:,}")
    same = (without_cache_fields(reports["second"]) == without_cache_fields(reports["none"])
            and without_cache_fields(after_edit) == without_cache_fields(reference))
    re_audited = args.n - after_edit["summary"]["from_cache"]
    print(f"re-audited after the edit: {re_audited} file(s) (expected 1); findings equal to an audit "
          f"without the cache: {'yes' if same else 'NO'}")
    for name, seconds in best.items():
        report.row(f"{name}, {args.n:,} masks, `--workers {args.workers}`", f"{seconds:.2f} s")
    report.row("CLI: first audit into an empty cache / without the cache", "", f"{overhead:.2f}x")
    report.row(f"CLI: second audit / first (target <= {TARGET})", "", f"{cli_ratio:.3f}")
    report.row(f"in a running process: second audit / first (target <= {TARGET})", "", f"{process_ratio:.3f}")
    report.row("after editing one mask: files re-audited (expected 1)", f"{re_audited}")
    report.note(f"Findings equal to an audit without the cache: {'yes' if same else 'no'}.")
    report.finish()
    if not same or re_audited != 1:
        return 2
    return 0 if cli_ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
