"""The hostile dataset: one folder of datasets holding every hostile case beside good files
(``hostile_builders.hostile_dataset``), audited by the command line as a user would run it.

The audit runs in a subprocess under an address-space and a CPU-time limit (``resource``),
and its peak resident memory is read from the kernel when it ends (``os.wait4``): every
broken file must be reported as LG001 with its reason, every good file still audited, the
exit code 1 (findings, no internal error), no traceback printed and nothing written,
inside the dataset or beside it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_builders import HOSTILE_MAX_FILE_BYTES, hostile_dataset

resource = pytest.importorskip("resource", reason="resource limits need a POSIX system")
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="the audit's peak memory is read from /proc/self/status (VmHWM)")

ADDRESS_SPACE = 3 << 30  # what the audit process may map at all (libraries included)
CPU_SECONDS = 120
PEAK_RSS = 400 << 20  # the dataset declares terabytes; reading it must cost far less


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: its type, size, modification time and content hash."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if path.is_file() and not path.is_symlink():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            digest = "fifo" if path.is_fifo() else "dir" if path.is_dir() else "other"
        entries[str(path.relative_to(folder))] = f"{digest} {info.st_size} {info.st_mtime_ns}"
    return entries


# Runs labelguard and records the peak resident memory of its own address space (VmHWM) at exit.
# The child's ru_maxrss would not do: Linux carries the forking process's high-water mark across
# exec, so a large test process (torch, transformers imported by earlier tests) would count.
PEAK_WRAPPER = """
import atexit, runpy, sys
peak_file = sys.argv[1]
def record_peak():
    with open("/proc/self/status") as status:
        peak = next(line for line in status if line.startswith("VmHWM:")).split()[1]
    with open(peak_file, "w") as handle:
        handle.write(peak)
atexit.register(record_peak)
sys.argv = ["labelguard", *sys.argv[2:]]
runpy.run_module("labelguard", run_name="__main__")
"""


def audit_limited(args: list[str], cwd: Path) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak resident bytes) of ``labelguard`` run under the limits."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))

    out, err, peak_file = cwd / "stdout.json", cwd / "stderr.txt", cwd.parent / f"{cwd.name}.peak"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", PEAK_WRAPPER, str(peak_file), "audit", *args],
                                   stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, cwd=cwd, preexec_fn=limit)
        process.wait()
    assert peak_file.exists(), f"labelguard ended without exiting (status {process.returncode}): {err.read_text()}"
    peak = int(peak_file.read_text()) * 1024
    return process.returncode, out.read_text(), err.read_text(), peak


@pytest.mark.code("LG001", "fail")
def test_the_hostile_dataset_is_audited_file_by_file_within_bounds(tmp_path):
    root = tmp_path / "data"
    expected = hostile_dataset(root)
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "untouched.txt").write_text("nothing may change here")
    work = tmp_path / "work"
    work.mkdir()
    before, before_beside = snapshot(root), snapshot(beside)

    code, stdout, stderr, peak = audit_limited(
        [str(root), "-f", "json", "--no-progress", "--workers", "1", "--max-file-bytes", str(HOSTILE_MAX_FILE_BYTES)],
        work)

    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    report = json.loads(stdout)
    assert code == 1, stderr
    assert report["summary"]["errors"] == []
    unreadable = " ".join(f"{f['path']}: {f['message']}" for f in report["findings"] if f["code"] == "LG001")
    missing = [name for name in expected["broken"] if str(root / name) not in unreadable]
    assert not missing, f"not reported as LG001: {missing}"
    audited = report["summary"]["files"]
    for name in expected["good"]:
        assert any(entry.endswith(name) for entry in audited), f"{name} was not audited"
    assert snapshot(root) == before and snapshot(beside) == before_beside
    assert sorted(p.name for p in work.iterdir()) == ["stderr.txt", "stdout.json"]
    assert peak < PEAK_RSS, f"peak resident memory {peak / 2**20:.0f} MiB"


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("kind", ["list", "table"])
def test_a_100_mb_line_in_a_list_or_a_table_is_lg001_within_bounds(tmp_path, kind):
    root = tmp_path / "data"
    (root / "masks").mkdir(parents=True)
    if kind == "list":
        path = root / "train.txt"
        head, line, what = "a\n", "b" * 100_000_000, "line 2 holds 100,000,000 characters"
        args = [str(root / "masks"), "--list", str(path), "--format", "masks"]
    else:  # a hundred million cells, if it were split
        path = root / "train.csv"
        head, line, what = "image_name,label\na.jpg,cat\n", "b.jpg" + "," * 99_999_995, "line 3 holds 100,000,000"
        args = [str(path), "--format", "csv"]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(head)
        handle.write(line)
        handle.write("\n")
    code, stdout, stderr, peak = audit_limited([*args, "-f", "json", "--no-progress", "--no-config", "--workers", "1"],
                                               tmp_path)
    assert "Traceback" not in stderr and code in (1, 2), stderr  # 2: nothing else to audit
    report = json.loads(stdout)
    [finding] = [f for f in report["findings"] if f["code"] == "LG001"]
    assert what in finding["message"]
    assert report["summary"]["errors"] == []
    assert len(stdout) < 100_000
    assert peak < 5 * 100_000_000, f"peak resident memory {peak / 2**20:.0f} MiB for a 95 MiB file"
