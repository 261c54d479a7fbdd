"""Speed of the tokenized-dataset audit against a plain pyarrow scan of the same column.

A tokenized dataset is written as ``datasets.save_to_disk`` writes it: an Arrow IPC stream of
record batches of 1,000 rows (``input_ids`` of 16 to 256 int32 tokens, ``token_type_ids`` and
``attention_mask`` as int8 lists, a ClassLabel ``label``, the ``huggingface`` metadata) beside
its ``state.json`` and ``dataset_info.json``. Then, taking turns, each run ``--repeat`` times:

* the baseline: the file memory-mapped and every batch's ``input_ids`` and ``token_type_ids``
  values (the columns of ids the audit checks) scanned once with ``pyarrow.compute.min_max``:
  the least any check of every id must do;
* ``labelguard.audit`` of the folder with one worker, against a token spec (vocab_size,
  max_position_embeddings, type_vocab_size, num_labels): every token rule on every row.

The figures are the best run of each (other load on the machine only ever adds time), in
rows per second, and their ratio (the runs take turns, so both see the same machine). The
goal: the audit at least 0.5x the baseline's rows/s.

Then the peak resident memory (VmHWM, Linux) of one audit in a fresh process, of this file
and of one a tenth of its rows: a flat-memory audit holds a batch, not the file, so the two
peaks are alike whatever the file's size.

Usage::

    python benchmarks/bench_tokens.py               # 300,000 rows (about 230 MiB), a minute on 2 cores
    python benchmarks/bench_tokens.py -n 1250000 --repeat 2   # about 1 GB
    python benchmarks/bench_tokens.py -n 20000 --repeat 1   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import _docs  # the module beside this script

GOAL = 0.5
WRITER_BATCH_ROWS = 1000  # datasets' writer_batch_size
VOCAB, POSITIONS, CLASSES = 30522, 512, 3
LONGEST_ROW = 256


def write_dataset(folder: Path, rows: int, seed: int = 0) -> Path:
    """A save_to_disk folder of ``rows`` tokenized rows; returns its data file."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    features = {
        "input_ids": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "List"},
        "token_type_ids": {"feature": {"dtype": "int8", "_type": "Value"}, "_type": "List"},
        "attention_mask": {"feature": {"dtype": "int8", "_type": "Value"}, "_type": "List"},
        "label": {"names": ["negative", "neutral", "positive"], "_type": "ClassLabel"},
    }
    schema = pa.schema([("input_ids", pa.list_(pa.int32())), ("token_type_ids", pa.list_(pa.int8())),
                        ("attention_mask", pa.list_(pa.int8())), ("label", pa.int64())],
                       metadata={"huggingface": json.dumps({"info": {"features": features}})})
    folder.mkdir(parents=True)
    path = folder / "data-00000-of-00001.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for start in range(0, rows, WRITER_BATCH_ROWS):
            count = min(WRITER_BATCH_ROWS, rows - start)
            lengths = rng.integers(16, LONGEST_ROW + 1, count)
            offsets = np.zeros(count + 1, np.int32)
            np.cumsum(lengths, out=offsets[1:])
            ids = rng.integers(0, VOCAB, int(offsets[-1]), dtype=np.int32)
            types = np.zeros(int(offsets[-1]), np.int8)
            columns = [pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids)),
                       pa.ListArray.from_arrays(pa.array(offsets), pa.array(types)),
                       pa.ListArray.from_arrays(pa.array(offsets), pa.array(types + 1)),
                       pa.array(rng.integers(0, CLASSES, count))]
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": path.name}], "_split": None}))
    (folder / "dataset_info.json").write_text(json.dumps({"features": features}))
    return path


def scan(path: Path) -> int:
    """The baseline: every value of the memory-mapped file's id columns scanned once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = 0
    with pa.memory_map(str(path)) as source:
        for batch in pa.ipc.open_stream(source):
            pc.min_max(batch.column("input_ids").flatten())
            pc.min_max(batch.column("token_type_ids").flatten())
            rows += batch.num_rows
    return rows


def audit(folder: Path) -> int:
    from labelguard import audit as run_audit
    from labelguard.core.spec import LabelSpec
    from labelguard.core.spec import TokenSpec

    spec = LabelSpec(tokens=TokenSpec(vocab_size=VOCAB, max_position_embeddings=POSITIONS, type_vocab_size=2,
                                      num_labels=CLASSES))
    report = run_audit(str(folder), spec, use_project_config=False, workers=1, cache=False)
    assert not report.findings and not report.errors, (report.findings[:3], report.errors)
    return report.summary.samples


PEAK = """
import sys
sys.path.insert(0, sys.argv[2])
import bench_tokens
rows = bench_tokens.audit(sys.argv[1])
print(rows, next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1])
"""


def peak_rss(folder: Path) -> int | None:
    """The peak resident memory (bytes) of a fresh process auditing ``folder``: its own VmHWM
    (ru_maxrss would count this process, which it is forked from); None without /proc."""
    if not Path("/proc/self/status").exists():
        return None
    done = subprocess.run([sys.executable, "-c", PEAK, str(folder), str(Path(__file__).parent)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.split()[1]) * 1024


def timed(call, *args) -> tuple[float, int]:
    start = time.perf_counter()
    rows = call(*args)
    return time.perf_counter() - start, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--rows", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    report = _docs.Report("bench_tokens", parser)
    args = parser.parse_args()
    report.start(args)
    folder = Path(tempfile.mkdtemp(prefix="lgbench-tokens-"))
    try:
        path = write_dataset(folder / "data", args.rows)
        size = path.stat().st_size
        print(f"{args.rows:,} rows, {size / 2**20:.0f} MiB ({path.name}, batches of {WRITER_BATCH_ROWS} rows)")
        scans, audits = [], []
        for _ in range(args.repeat):
            seconds, rows = timed(scan, path)
            scans.append(seconds)
            seconds, audited = timed(audit, folder / "data")
            audits.append(seconds)
            assert rows == audited == args.rows, (rows, audited)
        scan_rate, audit_rate = args.rows / min(scans), args.rows / min(audits)
        ratio = audit_rate / scan_rate
        print(f"pyarrow scan of input_ids and token_type_ids (min_max): {scan_rate:,.0f} rows/s "
              f"(best of {args.repeat})")
        print(f"labelguard audit, every token rule:  {audit_rate:,.0f} rows/s (best of {args.repeat})")
        print(f"ratio audit / scan: {ratio:.2f}x (goal >= {GOAL}x)")
        report.row(f"baseline: pyarrow `min_max` scan of the id columns, {args.rows:,} rows ({size / 2**20:.0f} MiB)",
                   f"{scan_rate:,.0f} rows/s")
        report.row("labelguard audit, every token rule", f"{audit_rate:,.0f} rows/s", f"{ratio:.2f}x")
        small = write_dataset(folder / "tenth", max(1, args.rows // 10), seed=1)
        peaks = [peak_rss(folder / "data"), peak_rss(folder / "tenth")]
        if peaks[0] is not None:
            print(f"peak resident memory of an audit: {peaks[0] / 2**20:.0f} MiB for {size / 2**20:.0f} MiB, "
                  f"{peaks[1] / 2**20:.0f} MiB for a tenth of the rows ({small.stat().st_size / 2**20:.0f} MiB)")
            report.row(f"peak resident memory, a tenth of the rows ({small.stat().st_size / 2**20:.0f} MiB)",
                       f"{peaks[1] / 2**20:.0f} MiB")
            report.row(f"peak resident memory, every row ({size / 2**20:.0f} MiB)", f"{peaks[0] / 2**20:.0f} MiB",
                       f"{peaks[0] / peaks[1]:.2f}x")
        report.finish()
        return 0 if ratio >= GOAL else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
