"""Auditing masks in object storage: files per second through ``s3://`` against the same files
on the local disk.

Starts moto's S3 server on a loopback port, in a process of its own (``python -m
moto.server``: the audit does not share its interpreter with the server), uploads N small PNG
masks (64x64, a few classes) and audits them with ``labelguard.audit`` in this process:

* from the local folder (the reference);
* through ``s3://`` with 1 and with 2 workers, no cache: every object is listed (one request
  per page of 1,000 keys) and fetched (one ranged GET each: a small mask is whole in the
  reader's first read); detection adds some 140 requests for a small prefix (about ten
  listings of it, looks at the files layouts name), ``--format masks`` about 50;
* through ``s3://`` with the result cache, the first audit (each object looked at for its
  ETag, fetched, checked, then looked at again: the cache stores a result only when the
  object did not change while it was read) and the second (a look at each object's ETag,
  no fetch);
* detection alone (the layouts' probes of the prefix), counting the listings and the looks
  at single names it asks the store for: with the listings kept for name lookups (the
  default for a prefix of up to 20,000 entries), with that bound lowered to 100 entries so
  that the listing is kept packed (what a larger prefix gets), with the memory for packed
  listings bounded at 0 so that it is packed in a temporary file (what a prefix past 64 MiB of
  names gets, some 2.5 million keys), and with nothing kept (each probe lists the prefix
  again, as a prefix past 16 GiB of names is).

The server is moto on loopback: no network latency, no S3 request rate, a Python server
that answers a request in some milliseconds, its threads sharing one interpreter. The figures
compare labelguard's per-object cost with its local one on this machine; they are not what
real S3 gives (there, each request costs 10-50 ms of latency and the throughput scales with the requests in flight).

Usage::

    python benchmarks/bench_s3.py               # 2,000 masks
    python benchmarks/bench_s3.py -n 500
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from labelguard import audit  # noqa: E402
from labelguard.core.spec import LabelSpec  # noqa: E402

import _docs  # noqa: E402  (the module beside this script)

SPEC = LabelSpec(num_classes=4)
CREDENTIALS = {"key": "testing", "secret": "testing", "client_kwargs": {"region_name": "us-east-1"}}


def mask_bytes(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    mask = np.zeros((64, 64), np.uint8)
    for value in range(1, 4):
        y, x = rng.integers(0, 48, size=2)
        mask[y:y + 16, x:x + 16] = value
    encoded = io.BytesIO()
    Image.fromarray(mask, "L").save(encoded, format="PNG")
    return encoded.getvalue()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(client, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.list_buckets()
            return
        except Exception:  # not listening yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def timed(label: str, count: int, run) -> float:
    start = time.perf_counter()
    report = run()
    seconds = time.perf_counter() - start
    assert not report.errors, report.errors
    cached = f", {report.from_cache:,} from the cache" if report.from_cache else ""
    print(f"{label:<44} {seconds:6.2f} s  {count / seconds:8,.0f} files/s  ({len(report.files):,} files{cached})")
    return seconds


def detection(url: str, options: dict, kept_entries: int, kept_bytes: int, spilled_bytes: int
              ) -> tuple[int, int, float]:
    """(listings, looks at single names, seconds) of discovering ``url`` with the listings kept
    for name lookups bounded at ``kept_entries``, the packed ones in memory at ``kept_bytes``
    and those in a temporary file at ``spilled_bytes``."""
    from labelguard.core import storage
    from labelguard.layouts import AuditOptions
    from labelguard.layouts.base import discover_datasets

    asked = {"_listed_entries": 0, "_info": 0}
    saved = {name: getattr(storage, name) for name in (*asked, "KEPT_ENTRIES", "KEPT_BYTES", "SPILLED_BYTES")}

    def counting(name):
        def counted(*args, **kwargs):
            asked[name] += 1
            return saved[name](*args, **kwargs)
        return counted

    storage.grant(storage.access_for([url], options))
    try:
        for name in asked:
            setattr(storage, name, counting(name))
        storage.KEPT_ENTRIES, storage.KEPT_BYTES, storage.SPILLED_BYTES = kept_entries, kept_bytes, spilled_bytes
        start = time.perf_counter()
        discover_datasets(url, AuditOptions())  # detection, and the layout's set-up; no task taken
        seconds = time.perf_counter() - start
    finally:
        for name, value in saved.items():
            setattr(storage, name, value)
    return asked["_listed_entries"], asked["_info"], seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--count", type=int, default=2000, help="masks")
    report = _docs.Report("bench_s3", parser)
    args = parser.parse_args()
    report.start(args)
    try:
        import boto3
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError:
        sys.exit("bench_s3.py needs the s3 extra and moto's server: pip install 'labelguard[s3]' 'moto[server]'")
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    options = {"endpoint_url": endpoint, **CREDENTIALS}
    try:
        client = boto3.client("s3", endpoint_url=endpoint)
        wait_until_serving(client)
        client.create_bucket(Bucket="bench")
        distinct = [mask_bytes(seed) for seed in range(50)]
        with tempfile.TemporaryDirectory(prefix="labelguard-bench-s3-") as temporary:
            local = Path(temporary) / "masks"
            local.mkdir()
            for index in range(args.count):
                data = distinct[index % len(distinct)]
                (local / f"mask_{index:06d}.png").write_bytes(data)
                client.put_object(Bucket="bench", Key=f"ds/masks/mask_{index:06d}.png", Body=data)
            url = "s3://bench/ds/masks"
            print(f"{args.count:,} masks of 64x64, on the local disk and in moto's S3 on {endpoint}")
            common = {"use_project_config": False}
            reference = timed("local folder, 1 worker, no cache", args.count,
                              lambda: audit(str(local), SPEC, cache=False, workers=1, **common))
            one = timed("s3://, 1 worker, no cache", args.count,
                        lambda: audit(url, SPEC, cache=False, workers=1, storage_options=options, **common))
            two = timed("s3://, 2 workers, no cache", args.count,
                        lambda: audit(url, SPEC, cache=False, workers=2, storage_options=options, **common))
            cache = str(Path(temporary) / "cache")
            timed("s3://, 1 worker, cache: first audit", args.count,
                  lambda: audit(url, SPEC, cache=cache, workers=1, storage_options=options, **common))
            timed("s3://, 1 worker, cache: second audit", args.count,
                  lambda: audit(url, SPEC, cache=cache, workers=1, storage_options=options, **common))
            report.row(f"baseline: local folder, 1 worker, no cache, {args.count:,} masks", f"{reference:.2f} s")
            report.row("s3:// (moto on loopback), 1 worker, no cache", f"{one:.2f} s", f"{one / reference:.1f}x")
            report.row("s3://, 2 workers, no cache", f"{two:.2f} s", f"{two / reference:.1f}x")
            print(f"s3:// (1 worker) takes {one / reference:.1f}x the local audit; 2 workers {one / two:.2f}x faster "
                  "than 1 (moto on loopback, not real S3: see the docstring)")
            print("\ndetection of the prefix, with what one discovery keeps of the store's answers:")
            small = min(100, args.count // 2)
            for label, entries, packed, spilled in (
                    ("listings kept for name lookups (the default)", None, None, None),
                    (f"lookups bounded at {small} entries, then kept packed", small, None, None),
                    (f"lookups bounded at {small}, packed in a temporary file", small, 0, None),
                    (f"lookups bounded at {small} entries, nothing packed", small, 0, 0)):
                from labelguard.core import storage

                listings, looks, seconds = detection(
                    url, options, storage.KEPT_ENTRIES if entries is None else entries,
                    storage.KEPT_BYTES if packed is None else packed,
                    storage.SPILLED_BYTES if spilled is None else spilled)
                print(f"  {label:<52} {listings:4d} listings {looks:4d} looks {seconds:6.2f} s")
                report.row(f"detection of the prefix, {label}: {listings} listings, {looks} looks", f"{seconds:.2f} s")
    finally:
        server.terminate()
        server.wait()
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
