"""kill -9 at every point of `fix --apply` and of `undo`: each file is always its bytes before or
after the run, never torn, and once undo completes every file is as before and no temporary
file is left.

The fix and the undo run in real child processes (started by a fork server that has
labelguard imported, so a child starts in milliseconds) killed with SIGKILL after a delay
that walks across the length of a whole run.
"""

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from fix_data import binary_255_mask, digests, write_mask
from labelguard import LabelSpec
from labelguard.fix import remap, undo
from labelguard.fix._journal import find_runs

pytestmark = pytest.mark.slow

ITERATIONS = 20
FORMATS = ("png-L", "npz", "npy", "png-P", "hdf5", "png-L", "npz", "tiff")


def _context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["labelguard.fix"])
    return context


def _run(target, args, kwargs, delay=None) -> float:
    """Run ``target`` in a child; kill it with SIGKILL after ``delay`` seconds (None: let it
    finish). Returns how long the child ran."""
    process = _context().Process(target=target, args=args, kwargs=kwargs)
    start = time.perf_counter()
    process.start()
    process.join(delay)
    if process.is_alive():
        os.kill(process.pid, signal.SIGKILL)
        process.join()
    return time.perf_counter() - start


def _states(files, before, after) -> None:
    now = digests(files)
    for path in files:
        assert now[str(path)] in (before[str(path)], after[str(path)]), f"{path} is neither old nor new"


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if ".lgtmp-" in p.name]


def test_kill_9_anywhere_in_apply_or_undo_leaves_old_or_new_and_undo_restores_all(tmp_path):
    folder = tmp_path / "masks"
    files = [write_mask(folder, fmt, f"case_{i:03d}", binary_255_mask(i)) for i, fmt in enumerate(FORMATS)]
    apply_args = ((str(folder), "255:1"), {"spec": LabelSpec(num_classes=2), "apply": True})
    before = digests(files)
    _run(os.getpid, (), {})  # the fork server starts once, outside the timings below
    apply_time = _run(remap, *apply_args)
    after = digests(files)
    assert all(after[p] != before[p] for p in before)  # every file is changed by the fix
    undo_time = _run(undo, (str(folder),), {})
    assert digests(files) == before

    interrupted = 0
    for iteration in range(ITERATIONS):
        fraction = (iteration + 0.5) / ITERATIONS
        _run(remap, *apply_args, delay=apply_time * 1.1 * fraction)
        _states(files, before, after)
        if any(not run.undone for run in find_runs(str(folder))):
            interrupted += 1
            _run(undo, (str(folder),), {}, delay=undo_time * 1.1 * (1 - fraction))
            _states(files, before, after)
            undo(str(folder))
        assert digests(files) == before, f"iteration {iteration}: undo did not restore every file"
        assert not _temps(folder), f"iteration {iteration}: {_temps(folder)} survived undo"
        assert all(run.undone for run in find_runs(str(folder)))
    assert interrupted, "no kill landed after the run had started"
    assert sorted(p.name for p in folder.iterdir()) == sorted([".labelguard"] + [p.name for p in files])
