"""The task engine: batches cover every task once, pools and batches agree with the serial run."""

from __future__ import annotations

import json
import subprocess
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import organic_mask, write_jpeg, write_npy, write_png
from audit_helpers import merged_results
from fragile_processors import fragile, fragile_cli

from labelguard._audit import audit
from labelguard.core.engine import (BATCH_FILES, BATCH_SECONDS, TimedBatches, batch_size, default_workers, run_batches,
                                     run_tasks)
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileResult
from labelguard.layouts import AuditOptions, discover
from labelguard.rules._masks import process_mask

SPEC = LabelSpec(num_classes=3, ignore=(255,))


def _masks(root, count: int = 40):
    for i in range(count):
        mask = organic_mask((48, 40), classes=(0, 1, 2), seed=i)
        if i % 7 == 0:
            mask[0, :5] = 9  # LG201 in some files
        write_png(root / "masks" / f"{i:03d}.png", mask)
    (root / "masks" / "empty.png").write_bytes(b"")
    return root / "masks"


def test_batches_cover_every_task_once(tmp_path):
    tasks = discover(str(_masks(tmp_path, count=100)), AuditOptions()).tasks
    for workers in (1, 2):
        results = list(run_tasks(tasks, SPEC, workers))
        assert sum(r.files for r in results) == len(tasks)
        assert sum(r.summary.kinds["mask"] for r in results) == len(tasks)
        assert len(results) < len(tasks) / 2


def test_batch_size_bounds():
    assert batch_size(0, 2) == 1
    assert batch_size(10, 2) == 1
    assert batch_size(100_000, 2) == 32
    assert 1 <= batch_size(2000, 16) <= 32


def test_timed_batches_hold_a_tenth_of_a_second_of_work_in_whole_blocks_or_within_one():
    batches = TimedBatches(iter(range(100_000)), size=32, most=1024)
    assert next(batches) == list(range(32))  # nothing ran yet: the first size, the block
    batches.took(32, 32 * BATCH_SECONDS / 200)  # 200 such files fill a batch's time
    assert len(next(batches)) == 192  # whole blocks
    batches.took(192, 192 * BATCH_SECONDS / 5)  # five files a tenth of a second
    assert len(next(batches)) < 32
    edges = [batches.taken]
    for _ in range(60):  # slow files: batches within a block; then fast: whole blocks again
        batches.took(batches.size, batches.size * (BATCH_SECONDS if len(edges) < 12 else 0.0))
        next(batches)
        edges.append(batches.taken)
    assert batches.size == 1024 and edges[-1] - edges[-2] == 1024
    for before, after in zip(edges, edges[1:]):  # never parts of two blocks
        assert before // 32 == (after - 1) // 32 or (before % 32 == 0 and after % 32 == 0)
    batches.took(0, 1.0)  # nothing to learn from
    assert batches.size == 1024


def test_a_pool_on_a_stream_of_fast_files_hands_out_larger_batches_and_covers_every_file_once(tmp_path):
    root = tmp_path / "masks"
    for i in range(2400):
        write_png(root / f"{i:04d}.png", np.full((4, 4), i % 3, dtype=np.uint8))
    tasks = discover(str(root), AuditOptions()).tasks
    streamed = (task for task in tasks)  # a stream: its length is not known to the engine
    results = list(run_batches(streamed, SPEC, workers=2))
    sizes = [len(batch) for batch, _ in results]
    assert sorted(t.display for batch, _ in results for t in batch) == sorted(t.display for t in tasks)
    assert sum(r.files for _, r in results) == len(tasks)
    assert sizes[0] == BATCH_FILES and max(sizes) > BATCH_FILES


def test_progress_counts_files_not_batches(tmp_path):
    data = _masks(tmp_path)
    seen = []
    audit(data, SPEC, workers=2, use_project_config=False, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (41, 41)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_running_thread_does_not_change_the_result(tmp_path):
    # With another thread alive the workers come from a fork server, not a fork of this process.
    data = _masks(tmp_path)
    serial = audit(data, SPEC, workers=1, use_project_config=False)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        pooled = audit(data, SPEC, workers=2, use_project_config=False)
    finally:
        stop.set()
        thread.join()
    assert [f.to_dict() for f in pooled.findings] == [f.to_dict() for f in serial.findings]
    assert pooled.summary.to_dict() == serial.summary.to_dict()
    assert pooled.summary.value_examples == serial.summary.value_examples
    assert np.isin(["LG001", "LG201"], [f.code for f in serial.findings]).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet="abc/", min_size=1, max_size=4),
                          st.dictionaries(st.integers(0, 6), st.integers(1, 50), max_size=4)), max_size=12))
def test_adding_files_one_by_one_equals_merging_their_summaries(files):
    added, merged = Summary(), Summary()
    for path, histogram in files:
        added.add_values(path, list(histogram), list(histogram.values()))
        one = Summary()
        one.add_values(path, list(histogram), list(histogram.values()))
        merged.update(one)
    assert added.value_examples == merged.value_examples
    assert added.value_files == merged.value_files and added.value_pixels == merged.value_pixels


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["car", "Car", "car ", "bus", "Bus", "tree"]), st.integers(1, 3)),
                min_size=2, max_size=10),
       st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)), max_size=6),
       st.randoms(use_true_random=False))
def test_the_dataset_checks_do_not_depend_on_the_order_summaries_are_merged_in(objects, pixels, rng):
    """A pool or a cluster merges batches as they finish: equal counts (ties) must not let that
    order show in a finding (LG105's spellings, LG401's listing)."""
    import labelguard.rules  # noqa: F401  (registers every rule)
    from labelguard.core.rules import rules_for

    DATASET_CHECKS = rules_for("dataset")

    parts = []
    for name, count in objects:
        part = Summary()
        part.add_classes(f"{name}.xml", Counter({name: count}))
        parts.append(part)
    for value, count in pixels:
        part = Summary()
        part.add_values(f"{value}.png", [value], [count * 1000])
        parts.append(part)
    shuffled = parts[:]
    rng.shuffle(shuffled)
    reports = []
    for order in (parts, shuffled):
        summary = Summary()
        for part in order:
            summary.update(part)
        reports.append([f.to_dict() for check in DATASET_CHECKS for f in check(summary, LabelSpec())])
    assert reports[0] == reports[1]


def test_the_mask_batch_equals_its_files_merged(tmp_path):
    folder = _masks(tmp_path, count=12)
    colour = organic_mask((32, 32), (0, 128, 64), seed=3)
    write_png(folder / "colour.png", np.stack([colour, colour // 2, 255 - colour], axis=-1))
    write_jpeg(folder / "lossy.jpg", organic_mask((32, 32), (0, 1, 2), seed=4) * 100)
    write_npy(folder / "wide.npy", organic_mask((32, 32), (0, 1, 9), seed=5).astype(np.int64))
    tasks = discover(str(folder), AuditOptions(format="masks")).tasks
    assert len(tasks) == 16
    merged = FileResult("", files=0)
    for task in tasks:
        one = process_mask(task, SPEC)
        merged.findings.extend(one.findings)
        merged.summary.update(one.summary)
    batch = process_mask.batch(tasks, SPEC)
    assert batch.files == len(tasks)
    assert [f.to_dict() for f in batch.findings] == [f.to_dict() for f in merged.findings]
    assert batch.summary.to_dict() == merged.summary.to_dict()
    assert batch.summary.value_examples == merged.summary.value_examples
    assert batch.summary.colors == merged.summary.colors and batch.summary.colors


def test_a_worker_killed_once_is_replaced_and_nothing_is_lost(tmp_path):
    folder = _masks(tmp_path)
    write_png(folder / "flaky.png", organic_mask((48, 40), classes=(0, 1, 7), seed=99))
    tasks = discover(str(folder), AuditOptions(format="masks")).tasks
    serial = merged_results(run_tasks(tasks, SPEC, 1))

    pooled = merged_results(run_tasks(fragile(tasks), SPEC, 2))

    assert (folder / "flaky.died").exists()  # its first worker really was killed
    assert pooled.errors == []
    assert pooled.files == serial.files == len(tasks)
    assert [f.to_dict() for f in pooled.findings] == [f.to_dict() for f in serial.findings]
    assert pooled.summary.to_dict() == serial.summary.to_dict()
    assert "flaky.png" in {f.path.rsplit("/", 1)[-1] for f in pooled.findings if f.code == "LG201"}


def test_a_result_that_cannot_leave_its_worker_is_an_error_naming_its_batch(tmp_path):
    folder = _masks(tmp_path, count=8)
    write_png(folder / "unpicklable.png", organic_mask((48, 40), classes=(0, 1, 2), seed=99))
    tasks = discover(str(folder), AuditOptions(format="masks")).tasks

    pooled = merged_results(run_tasks(fragile(tasks), SPEC, 2))

    assert pooled.files == len(tasks)
    (error,) = pooled.errors  # batches of one file here (10 files, 2 workers)
    unpicklable = tasks[-1].display
    assert unpicklable.endswith("unpicklable.png")
    assert error.startswith(f"checking {unpicklable} in a worker process failed: AttributeError: Can't pickle")
    assert sorted(Path(f.path).name for f in pooled.findings) == ["000.png", "007.png", "empty.png"]


needs_two_cores = pytest.mark.skipif(
    default_workers() < 2 or not Path("/proc/self/status").exists(),
    reason="needs two cores (the CLI caps --workers at them) and /proc")


def _fragile_audit(cwd: Path, headroom: int = 0) -> tuple[subprocess.CompletedProcess, dict]:
    command, env = fragile_cli(["data", "--num-classes", "3", "--workers", "2", "--no-config", "--no-progress",
                                "--output-format", "json"], memory_headroom=headroom)
    process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    return process, json.loads(process.stdout)


@needs_two_cores
def test_a_file_that_kills_its_worker_every_time_is_an_error_naming_it_and_the_rest_is_kept(tmp_path):
    data = _masks(tmp_path / "data", count=60)
    write_png(data / "kill.png", organic_mask((48, 40), classes=(0, 1, 2), seed=7))

    process, report = _fragile_audit(tmp_path)

    assert process.returncode == 2, process.stderr
    assert "Traceback" not in process.stderr
    (error,) = report["summary"]["errors"]
    assert error.startswith("data/masks/kill.png: the worker process checking this file died, in its "
                            "batch and again when the file ran alone, so the file was not audited")
    (data / "kill.png").unlink()
    clean, expected = _fragile_audit(tmp_path)
    assert clean.returncode == 1 and expected["summary"]["errors"] == []
    assert report["findings"] == expected["findings"]
    assert report["summary"]["codes"] == expected["summary"]["codes"]
    assert report["summary"]["samples"] == expected["summary"]["samples"]


@needs_two_cores
def test_a_file_that_exhausts_the_memory_limit_is_an_error_naming_it_and_the_rest_is_kept(tmp_path):
    data = _masks(tmp_path / "data", count=60)
    write_png(data / "hungry.png", organic_mask((48, 40), classes=(0, 1, 2), seed=7))

    process, report = _fragile_audit(tmp_path, headroom=768 << 20)

    assert process.returncode == 2, process.stderr
    assert "Traceback" not in process.stderr
    (error,) = report["summary"]["errors"]
    assert error.startswith("data/masks/hungry.png: ran out of memory"), error
    (data / "hungry.png").unlink()
    _, expected = _fragile_audit(tmp_path, headroom=768 << 20)
    assert report["findings"] == expected["findings"]
    assert report["summary"]["samples"] == expected["summary"]["samples"]
