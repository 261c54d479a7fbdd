"""Cost of the flight record (labelguard.torch.record) per training step.

Measures, each the median of ``--repeat`` passes:

* the writer alone: the time the training loop spends in one ``handed()`` call (the batch's
  indices and source paths serialised and queued), the time the background thread takes
  to write the file (temporary file + ``os.replace``), and the loop's time with
  ``sync=True`` (the write in the loop), in microseconds;
* a DataLoader pass over an in-memory dataset of tiny samples, plain and wrapped with
  ``record()``, with 0 and 2 workers: the difference per batch is the recorder's cost as the
  training loop sees it. Tiny samples make the loader itself nearly free, so this is the
  worst case for the relative cost;
* the record's size on disk.

The overhead is also given as a share of a reference training step (``--step-ms``, 50 ms by
default: a small segmentation model's step on one GPU).

Usage::

    python benchmarks/bench_record.py
    python benchmarks/bench_record.py --batch-size 256 --dir /mnt/nfs/tmp   # big batches, slow disk
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from labelguard.flight import DEFAULT_KEEP, FlightRecordWriter

import _docs  # noqa: E402  (the module beside this script)

TARGET_US_PER_BATCH = 200  # the recorder must cost the loop a fraction of a millisecond


def writer_cost(directory: Path, batch_size: int, keep: int, sync: bool,
                calls: int = 1000) -> tuple[float, float]:
    """(median microseconds the loop spends in handed(), median microseconds of a write)."""
    writer = FlightRecordWriter(directory / f"writer-{sync}.json", keep=keep, sync=sync,
                                dataset="bench.Masks", dataset_len=1_000_000)
    sources = [f"data/VOC2012/SegmentationClass/2012_{i:06d}.png" for i in range(batch_size)]
    in_loop, writes = [], []
    for step in range(calls):
        indices = list(range(step * batch_size, (step + 1) * batch_size))
        started = time.perf_counter()
        writer.handed(0, step, indices, sources)
        in_loop.append(time.perf_counter() - started)
        if not sync and step % 10 == 0:
            started = time.perf_counter()
            writer.flush()
            writes.append(time.perf_counter() - started)
    writer.flush()
    write = statistics.median(writes) if writes else statistics.median(in_loop)
    return statistics.median(in_loop) * 1e6, write * 1e6


def loader_cost(directory: Path, batch_size: int, keep: int, workers: int, batches: int,
                repeat: int) -> tuple[float, float]:
    """(plain, recorded) median microseconds per batch of a DataLoader pass."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    from labelguard.torch import record

    class Tiny(Dataset):
        def __init__(self, size: int) -> None:
            self.files = [f"data/masks/case_{i:07d}.png" for i in range(size)]

        def __len__(self) -> int:
            return len(self.files)

        def __getitem__(self, index: int):
            return torch.tensor([index])

    dataset = Tiny(batch_size * batches)

    def one_pass(wrap: bool) -> float:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers,
                            persistent_workers=workers > 0)
        path = directory / f"loader-{workers}.json"
        iterable = record(loader, path, keep=keep) if wrap else loader
        next(iter(iterable))  # start the workers outside the timing
        started = time.perf_counter()
        count = sum(1 for _ in iterable)
        return (time.perf_counter() - started) / count * 1e6

    plain = statistics.median(one_pass(False) for _ in range(repeat))
    recorded = statistics.median(one_pass(True) for _ in range(repeat))
    return plain, recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=500, help="batches per loader pass")
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--step-ms", type=float, default=50.0, help="reference training step")
    parser.add_argument("--dir", type=Path,
                        help="where the record is written (default: a temporary folder)")
    report = _docs.Report("bench_record", parser)
    args = parser.parse_args()
    report.start(args)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        directory = Path(tmp)
        loop_us, write_us = writer_cost(directory, args.batch_size, args.keep, sync=False)
        sync_us, _ = writer_cost(directory, args.batch_size, args.keep, sync=True)
        size = (directory / "writer-False.json").stat().st_size
        print(f"flight record, batch {args.batch_size}, keep {args.keep} batches, {size} bytes")
        print(f"  writer, in the loop:   {loop_us:8.1f} us per batch (the file is written "
              f"in the background in {write_us:.0f} us)")
        print(f"  writer with sync=True: {sync_us:8.1f} us per batch")
        report.row(f"flight record writer in the loop, batch {args.batch_size}, keep {args.keep}",
                   f"{loop_us:.1f} us a batch")
        report.row("the same with `sync=True`", f"{sync_us:.1f} us a batch")
        for workers in (0, 2):
            plain, recorded = loader_cost(directory, args.batch_size, args.keep, workers,
                                          args.batches, args.repeat)
            extra = recorded - plain
            print(f"  DataLoader, {workers} workers: {plain:7.1f} us plain, {recorded:7.1f} us "
                  f"recorded: +{extra:.1f} us per batch "
                  f"({extra / (args.step_ms * 1000):.3%} of a {args.step_ms:g} ms step)")
            report.row(f"baseline: DataLoader, {workers} workers, plain", f"{plain:.1f} us a batch")
            report.row(f"DataLoader, {workers} workers, recorded", f"{recorded:.1f} us a batch",
                       f"{recorded / plain:.2f}x ({extra:+.1f} us)")
    verdict = "ok" if loop_us < TARGET_US_PER_BATCH else "OVER TARGET"
    print(f"  target: < {TARGET_US_PER_BATCH} us per batch in the loop (default writer): {verdict}")
    print("  (the DataLoader figures include the background writer's CPU time; a training step")
    print("  that waits on the GPU releases the interpreter to it, so they are an upper bound)")
    report.note(f"Target: < {TARGET_US_PER_BATCH} us a batch in the loop (default writer): {verdict}.")
    report.finish()


if __name__ == "__main__":
    main()
