"""The task engine: batches cover every task once, pools agree with the serial run."""

from __future__ import annotations

import threading

import numpy as np

from builders import organic_mask, write_png

from labelguard.audit import audit
from labelguard.core.engine import batch_size, run_tasks
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions, discover

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
