import json
import os
import signal
import subprocess
import sys
import time

from click.testing import CliRunner

from fix_data import digests, mask_dataset
from labelguard.cli import main
from labelguard.fix._journal import JOURNAL, PAUSE_ENV


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_dry_run_apply_undo(tmp_path):
    files = mask_dataset(tmp_path, "png-L")
    original = digests(files)
    data = str(tmp_path / "masks")
    dry = invoke("fix", "remap", data, "--map", "255:1", "--num-classes", "2")
    assert dry.exit_code == 0 and "would fix" in dry.output and "255 -> 1" in dry.output
    assert "dry run" in dry.stderr and digests(files) == original

    applied = invoke("fix", "remap", data, "--map", "255:1", "--num-classes", "2", "--apply", "--json")
    assert applied.exit_code == 0
    assert [c["status"] for c in json.loads(applied.stdout)["changes"]] == ["written"] * 3
    assert invoke("audit", data, "--num-classes", "2", "--no-config").exit_code == 0

    listed = invoke("fix", "undo", data, "--list")
    assert "complete" in listed.output and "remap --map 255:1" in listed.output
    assert invoke("fix", "undo", data).exit_code == 0
    assert digests(files) == original


def test_cli_errors_are_one_line_exit_2(tmp_path):
    mask_dataset(tmp_path, "npy", n=1)
    for args in (["fix", "remap", str(tmp_path), "--map", "x:1"], ["fix", "remap", str(tmp_path)],
                 ["fix", "undo", str(tmp_path)], ["fix", "list"]):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output


def test_cli_refusal_exits_1(tmp_path):
    mask_dataset(tmp_path, "npy", n=1)
    result = invoke("fix", "remap", str(tmp_path / "masks"), "--map", "0:9", "--num-classes", "2", "--apply")
    assert result.exit_code == 1 and "refused" in result.output


def _write_lines(journal: str) -> int:
    try:
        with open(journal) as handle:
            return sum('"event": "write"' in line for line in handle)
    except FileNotFoundError:
        return 0


def test_kill_9_during_apply_leaves_old_or_new_and_undo_restores(tmp_path):
    """A real `fix remap --apply` killed with SIGKILL between files: every file is old or new,
    never half-written, and undo restores the original bytes."""
    files = mask_dataset(tmp_path, "npz", n=6)
    original = digests(files)
    env = {**os.environ, PAUSE_ENV: "0.4"}
    process = subprocess.Popen(
        [sys.executable, "-m", "labelguard", "fix", "remap", str(tmp_path / "masks"), "--map", "255:1",
         "--num-classes", "2", "--apply"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    backups = tmp_path / "masks" / ".labelguard" / "backups"
    deadline = time.monotonic() + 30
    journal = None
    while time.monotonic() < deadline:
        runs = list(backups.glob("*/" + JOURNAL)) if backups.exists() else []
        if runs and _write_lines(str(runs[0])) >= 3:
            journal = str(runs[0])
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert journal is not None, "the run never reached its third file"

    fixed = digests(files)
    changed = [p for p in files if fixed[str(p)] != original[str(p)]]
    assert 1 <= len(changed) < len(files)  # killed mid-way
    from labelguard.readers.masks import read_mask
    for path in files:  # every file reads: old (0/255) or new (0/1), never torn
        assert set(read_mask(str(path)).array.reshape(-1).tolist()) in ({0, 255}, {0, 1})

    listed = subprocess.run([sys.executable, "-m", "labelguard", "fix", "undo", str(tmp_path / "masks"), "--list"],
                            capture_output=True, text=True)
    assert "interrupted" in listed.stdout
    undone = subprocess.run([sys.executable, "-m", "labelguard", "fix", "undo", str(tmp_path / "masks")],
                            capture_output=True, text=True)
    assert undone.returncode == 0, undone.stderr
    assert digests(files) == original
    assert not list((tmp_path / "masks").glob(".*lgtmp*"))  # the killed run's temp file is gone
    again = subprocess.run([sys.executable, "-m", "labelguard", "fix", "undo", str(tmp_path / "masks")],
                           capture_output=True, text=True)
    assert again.returncode == 0 and digests(files) == original
