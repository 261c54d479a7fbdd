"""Why the result cache hashes with SHA-256 and keeps one file per entry: the measurements.

Two choices of ``core/cache.py`` are measured here, on this machine, in one run:

1. **The hash of a file's bytes.** Every lookup hashes the file again whenever its size,
   mtime, ctime or inode moved, and every first audit hashes every file. Candidates: SHA-256
   and BLAKE2b from ``hashlib`` (no dependency), and xxHash (XXH3-128) and BLAKE3 when those
   packages are installed. Each is timed on real mask files (the realistic 512x512 PNG masks
   of ``bench_masks.py``) and on one 64 MiB buffer, and set against what the audit spends
   on the same file anyway: reading its bytes and decoding it with Pillow.
2. **The store.** A folder of one file per entry (write to a temporary name, rename into
   place; what the cache does) against one SQLite database (WAL journal, one row per entry,
   ``INSERT OR REPLACE``, one transaction per entry as concurrent audits would need), for N
   entries of the size a mask's entry has (about 400 bytes): store all, then read all.

Prints seconds and ratios; no target (these figures explain a design choice, see
docs/performance.md).

Usage::

    python benchmarks/bench_cache_store.py            # 2,000 masks, 20,000 entries
    python benchmarks/bench_cache_store.py --masks 500 --entries 5000
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_masks import make_mask  # noqa: E402  (the same realistic masks)

import _docs  # noqa: E402  (the module beside this script)

ENTRY_BYTES = 400


def hashers() -> dict[str, Callable[[bytes], bytes]]:
    chosen: dict[str, Callable[[bytes], bytes]] = {
        "sha256 (hashlib)": lambda data: hashlib.sha256(data).digest(),
        "blake2b (hashlib)": lambda data: hashlib.blake2b(data).digest(),
    }
    try:
        import xxhash
        chosen["xxh3_128 (xxhash)"] = lambda data: xxhash.xxh3_128_digest(data)
    except ImportError:
        print("xxhash not installed: not measured")
    try:
        import blake3
        chosen["blake3 (blake3)"] = lambda data: blake3.blake3(data).digest()
    except ImportError:
        print("blake3 not installed: not measured")
    return chosen


def best_of(rounds: int, work: Callable[[], None]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_hashes(folder: Path, count: int, rounds: int, report: _docs.Report) -> None:
    paths = []
    for seed in range(count):
        path = folder / f"mask_{seed:05d}.png"
        Image.fromarray(make_mask(seed % 200), "L").save(path)
        paths.append(path)
    contents = [p.read_bytes() for p in paths]
    total = sum(len(c) for c in contents)
    print(f"\n1. hashing {count} mask files ({total / count / 1024:.1f} KiB each on average)")

    def read_all() -> None:
        for path in paths:
            with open(path, "rb") as handle:
                handle.read()

    def decode_all() -> None:
        for data in contents:
            np.asarray(Image.open(io.BytesIO(data)))

    read = best_of(rounds, read_all)
    decode = best_of(rounds, decode_all)
    print(f"   {'open + read (warm page cache)':32s} {read / count * 1e6:8.1f} us/file")
    print(f"   {'Pillow decode to an array':32s} {decode / count * 1e6:8.1f} us/file")
    report.row(f"open + read of a mask file ({total / count / 1024:.1f} KiB)", f"{read / count * 1e6:.1f} us")
    report.row("baseline: Pillow's decode of the mask to an array", f"{decode / count * 1e6:.1f} us")
    big = os.urandom(64 * 1024 * 1024)
    for name, digest in hashers().items():
        spent = best_of(rounds, lambda digest=digest: [digest(c) for c in contents])
        large = best_of(rounds, lambda digest=digest: digest(big))
        print(f"   {name:32s} {spent / count * 1e6:8.1f} us/file  = {spent / decode:6.1%} of a decode;"
              f"  {len(big) / large / 1e9:5.2f} GB/s on 64 MiB")
        report.row(f"{name} of the mask file ({len(big) / large / 1e9:.2f} GB/s on 64 MiB)",
                   f"{spent / count * 1e6:.1f} us", f"{spent / decode:.3f}x the decode")


def measure_stores(folder: Path, count: int, rounds: int, report: _docs.Report) -> None:
    keys = [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(count)]
    body = os.urandom(ENTRY_BYTES)
    print(f"\n2. storing and reading {count} entries of {ENTRY_BYTES} bytes")

    def files_put(root: Path) -> None:
        for key in keys:
            shard = root / key[:2]
            shard.mkdir(exist_ok=True)
            temporary = shard / f".{key[2:]}.tmp"
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(body)
            os.replace(temporary, shard / key[2:])

    def files_get(root: Path) -> None:
        for key in keys:
            with open(root / key[:2] / key[2:], "rb") as handle:
                handle.read()

    def sqlite_open(root: Path) -> sqlite3.Connection:
        connection = sqlite3.connect(root / "cache.db", isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE IF NOT EXISTS entry (key TEXT PRIMARY KEY, body BLOB)")
        return connection

    def sqlite_put(root: Path) -> None:
        connection = sqlite_open(root)
        for key in keys:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT OR REPLACE INTO entry VALUES (?, ?)", (key, body))
            connection.execute("COMMIT")
        connection.close()

    def sqlite_get(root: Path) -> None:
        connection = sqlite_open(root)
        for key in keys:
            connection.execute("SELECT body FROM entry WHERE key = ?", (key,)).fetchone()
        connection.close()

    results = {}
    for name, put, get in (("folder of files", files_put, files_get), ("sqlite (WAL)", sqlite_put, sqlite_get)):
        puts, gets = [], []
        for index in range(rounds):
            root = folder / f"{name.split()[0]}-{index}"
            root.mkdir()
            start = time.perf_counter()
            put(root)
            puts.append(time.perf_counter() - start)
            start = time.perf_counter()
            get(root)
            gets.append(time.perf_counter() - start)
        results[name] = (min(puts), min(gets))
        print(f"   {name:16s} store {min(puts) / count * 1e6:7.1f} us/entry   "
              f"read {min(gets) / count * 1e6:7.1f} us/entry")
    files, database = results["folder of files"], results["sqlite (WAL)"]
    print(f"   sqlite / folder: store {database[0] / files[0]:.2f}x the time, read {database[1] / files[1]:.2f}x")
    report.row(f"baseline: folder of files, store an entry of {ENTRY_BYTES} bytes", f"{files[0] / count * 1e6:.1f} us")
    report.row("sqlite (WAL), store an entry", f"{database[0] / count * 1e6:.1f} us", f"{database[0] / files[0]:.2f}x")
    report.row("baseline: folder of files, read an entry", f"{files[1] / count * 1e6:.1f} us")
    report.row("sqlite (WAL), read an entry", f"{database[1] / count * 1e6:.1f} us", f"{database[1] / files[1]:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--masks", type=int, default=2000, help="mask files to hash (default 2,000)")
    parser.add_argument("--entries", type=int, default=20_000, help="entries to store (default 20,000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each figure is the best (default 3)")
    report = _docs.Report("bench_cache_store", parser)
    args = parser.parse_args()
    report.start(args)
    print(f"load before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="labelguard-bench-store-") as temporary:
        root = Path(temporary)
        (root / "masks").mkdir()
        measure_hashes(root / "masks", args.masks, args.repeat, report)
        measure_stores(root, args.entries, args.repeat, report)
    print(f"\nload after: {os.getloadavg()[0]:.2f}")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
