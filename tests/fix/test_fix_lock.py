"""One run or undo at a time per data root, and undo in the order runs completed."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from fix_data import digests, mask_dataset
from labelguard import LabelSpec
from labelguard.cli import main
from labelguard.fix import FixError, remap, undo
from labelguard.fix._journal import JOURNAL, PAUSE_ENV, find_runs


def start_paused_run(folder):
    """A real `fix remap --apply` that sleeps after each journal line; returns once it has
    started writing (it holds the lock)."""
    process = subprocess.Popen([sys.executable, "-m", "labelguard", "fix", "remap", str(folder), "--map", "255:1",
                                "--num-classes", "2", "--apply"], env={**os.environ, PAUSE_ENV: "0.5"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        journals = list((folder / ".labelguard" / "backups").glob("*/" + JOURNAL))
        if journals and '"event": "write"' in journals[0].read_text():
            return process
        time.sleep(0.02)
    process.kill()
    raise AssertionError("the run never started writing")


def test_a_second_run_or_an_undo_is_refused_while_a_run_holds_the_lock(tmp_path):
    files = mask_dataset(tmp_path, "png-L", n=6)
    original = digests(files)
    folder = tmp_path / "masks"
    process = start_paused_run(folder)
    try:
        with pytest.raises(FixError, match=f"another labelguard fix is running on this data \\(pid {process.pid}"):
            remap(str(folder), "255:1", spec=LabelSpec(num_classes=2), apply=True)
        with pytest.raises(FixError, match="fix remap --map 255:1"):
            undo(str(folder))
        cli = CliRunner().invoke(main, ["fix", "remap", str(folder), "--map", "255:1", "--num-classes", "2",
                                        "--apply"])
        assert cli.exit_code == 2 and "another labelguard fix is running" in cli.output
        dry = remap(str(folder), "255:1", spec=LabelSpec(num_classes=2))  # a dry run takes no lock
        assert dry.changes
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    # The kill released the lock: undo runs and restores every file.
    undo(str(folder))
    assert digests(files) == original
    assert len(find_runs(str(folder))) == 1  # the refused runs left no run folder


def test_undo_goes_by_completion_and_leaves_no_state_no_run_produced(tmp_path):
    [mask] = mask_dataset(tmp_path, "npy", n=1)
    folder = str(tmp_path / "masks")
    spec = LabelSpec(num_classes=3)
    original = digests([mask])
    first = remap(folder, "255:1", spec=spec, apply=True)
    after_first = digests([mask])
    second = remap(folder, "1:2", spec=spec, apply=True)
    assert [r.id for r in find_runs(folder)] == [first.run_id, second.run_id]
    early = undo(folder, first.run_id)  # the first run's file was rewritten by the second
    assert early.conflicts and "changed since the run" in early.conflicts[0][1]
    assert set(np.unique(np.load(mask))) == {0, 2}
    assert undo(folder).run == second.run_id and digests([mask]) == after_first
    assert undo(folder).run == first.run_id and digests([mask]) == original


def test_a_file_changed_after_planning_is_not_overwritten(tmp_path):
    """Another program writes a mask while a run is busy with an earlier one: the run refuses
    that mask instead of overwriting it with content planned from its old bytes."""
    files = mask_dataset(tmp_path, "npy", n=3)
    folder = tmp_path / "masks"
    process = subprocess.Popen([sys.executable, "-m", "labelguard", "fix", "remap", str(folder), "--map", "255:1",
                                "--num-classes", "2", "--apply", "--json"], env={**os.environ, PAUSE_ENV: "1.0"},
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        journals = list((folder / ".labelguard" / "backups").glob("*/" + JOURNAL))
        if journals and '"event": "write"' in journals[0].read_text():
            break
        time.sleep(0.02)
    edited = np.zeros((32, 32), np.uint8)
    np.save(files[2], edited)  # written by hand while the run sleeps on the first file
    output, _ = process.communicate(timeout=120)
    changes = {os.path.basename(c["path"]): c for c in json.loads(output)["changes"]}
    assert changes[files[0].name]["status"] == "written"
    assert changes[files[2].name]["status"] == "refused" and "changed since this fix was planned" in \
        changes[files[2].name]["summary"]
    assert np.array_equal(np.load(files[2]), edited)
