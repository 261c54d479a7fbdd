"""Exit codes of a real ``labelguard`` process: Ctrl-C is 130 without worker tracebacks, and
a missing optional extra is an LG001 finding (exit 1) for each file that needs it, naming the
extra, never a crashed check nor an aborted audit."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import labelguard
from builders import organic_mask, write_h5, write_nifti, write_png
from fragile_processors import fragile_cli

SRC = str(Path(labelguard.__file__).resolve().parents[1])


def labelguard_process(args: list[str], cwd: Path, pythonpath: list[str] = (), **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*pythonpath, SRC]))
    env.pop("LABELGUARD_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "labelguard", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to see the worker processes")
def test_ctrl_c_during_a_pooled_audit_exits_130_without_worker_tracebacks(tmp_path):
    for i in range(40):
        write_png(tmp_path / "masks" / f"x{i:04d}.png", organic_mask((64, 64), (0, 1, 2), seed=i))
    # A worker sleeps for minutes on this file (the first batch), so the audit is still running
    # when the signal comes however loaded the machine is, and a stop that waited for its
    # workers would show.
    write_png(tmp_path / "masks" / "stall.png", organic_mask((64, 64), (0, 1, 2)))
    command, env = fragile_cli(["masks", "--workers", "2", "--no-progress", "--no-config"])
    # A new session: the signal goes to the whole process group, as a terminal's Ctrl-C does.
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(children(process.pid)) < 2 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert process.poll() is None, "the audit ended before its workers were seen"
        time.sleep(0.05)  # the workers are busy on their first batches now
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # what a failed stop left behind
        process.communicate()
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "labelguard: interrupted" in err


def h5_volumes(folder: Path) -> None:
    for i in range(6):
        write_h5(folder / f"vol{i}.h5", raw=np.zeros((4, 16, 16), np.uint8),
                 label=organic_mask((16, 16), (0, 1), seed=i)[None].repeat(4, axis=0))


def nifti_volumes(folder: Path) -> None:
    for i in range(6):
        write_nifti(folder / f"case{i}.nii.gz", organic_mask((16, 16), (0, 1), seed=i)[..., None].repeat(3, axis=2))


def saved_token_dataset(folder: Path) -> None:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"input_ids": [[1, 5, 2]] * 6, "label": [0, 1] * 3}).save_to_disk(str(folder))


@pytest.mark.parametrize("module, extra, writer, files", [
    ("h5py", "hdf5", h5_volumes, 6),
    ("nibabel", "nifti", nifti_volumes, 6),
    ("pyarrow", "nlp", saved_token_dataset, 1),
])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_missing_extra_is_lg001_for_each_file_naming_it(tmp_path, module, extra, writer, files, workers):
    writer(tmp_path / "data")
    # The module is made unimportable through the real import machinery: a module of that
    # name first on the path that raises ImportError, as a missing package does.
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / f"{module}.py").write_text(f"raise ImportError({f'No module named {module!r}'!r})\n")
    process = labelguard_process(["audit", "data", "--workers", workers, "--no-progress", "--no-config",
                                  "--output-format", "json"], tmp_path, [str(blocked)])
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, (out, err)
    report = json.loads(out)
    unread = [f for f in report["findings"] if f["code"] == "LG001"]
    assert len(unread) == files == report["summary"]["unreadable"], unread
    for finding in unread:
        assert finding["data"] == {"extra": extra}, finding
        assert f"pip install 'labelguard[{extra}]'" in finding["message"] + finding["hint"], finding
    assert not report["summary"]["errors"], report["summary"]["errors"]
    assert "Traceback" not in err


def test_every_extra_an_error_names_exists():
    from labelguard.config import toml_parser  # tomli on Python 3.10

    from labelguard._optional import _EXTRAS

    pyproject = Path(SRC).parent / "pyproject.toml"
    extras = toml_parser().loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(_EXTRAS.values()) | {"all"} <= set(extras)
    for module, extra in _EXTRAS.items():
        assert any(requirement.startswith(module) for requirement in extras[extra]), (module, extra)
