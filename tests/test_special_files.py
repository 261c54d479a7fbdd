"""Named pipes, sockets and devices are never opened: one planted in a dataset, or named by a
list or a data.yaml, is LG001 and the audit goes on (a pipe opened for reading blocks until a
writer appears: the audit would hang for ever).

Each audit runs in a subprocess with a timeout, so that a regression fails the test instead of
hanging the suite; nothing here measures speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from builders import write_png
from detection_builders import write_voc, write_yolo

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")
HANG_GUARD = 120


def audit_json(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "labelguard", "audit", *args, "-f", "json", "--no-progress", "--no-config"],
        capture_output=True, text=True, timeout=HANG_GUARD, stdin=subprocess.DEVNULL,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def lg001(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == "LG001"]


@pytest.mark.code("LG001", "fail")
def test_a_pipe_among_masks_is_lg001_and_the_other_masks_are_audited(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.array([[0, 1], [1, 0]], np.uint8))
    os.mkfifo(tmp_path / "masks" / "b.png")
    report = audit_json(str(tmp_path), "--num-classes", "2")
    [pipe] = lg001(report)
    assert pipe["path"].endswith("b.png") and "not a regular file" in pipe["message"]
    assert report["summary"]["samples"] == 1


@pytest.mark.code("LG001", "fail")
def test_a_pipe_among_voc_annotations_is_lg001(tmp_path):
    write_voc(tmp_path, {"a": [("cat", (1, 1, 9, 9))], "b": [("dog", (1, 1, 9, 9))]}, labels=["cat", "dog"])
    os.mkfifo(tmp_path / "Annotations" / "c.xml")
    report = audit_json(str(tmp_path))
    [pipe] = lg001(report)
    assert pipe["path"].endswith("c.xml") and "not a regular file" in pipe["message"]
    assert report["summary"]["samples"] == 2


@pytest.mark.code("LG001", "fail")
def test_a_pipe_as_a_yolo_label_file_is_lg001(tmp_path):
    write_yolo(tmp_path, {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)]}}, names=["person"])
    os.mkfifo(tmp_path / "labels" / "train" / "b.txt")
    report = audit_json(str(tmp_path / "data.yaml"))
    [pipe] = lg001(report)
    assert pipe["path"].endswith("b.txt") and "not a regular file" in pipe["message"]


@pytest.mark.code("LG001", "pass")
def test_a_device_given_as_path_is_refused_without_reading_it(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "labelguard", "audit", "/dev/zero", "--format", "masks", "-f", "json",
         "--no-progress", "--no-config"],
        capture_output=True, text=True, timeout=HANG_GUARD, stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert any("not a regular file" in f["message"] for f in lg001(report))


@pytest.mark.code("LG001", "fail")
def test_a_pipe_in_an_imagefolder_tree_neither_blocks_detection_nor_the_audit(tmp_path):
    from annotation_builders import imagefolder

    imagefolder(tmp_path, {"cat": 3, "dog": 3}, ext=".png")
    (tmp_path / "ant").mkdir()
    os.mkfifo(tmp_path / "ant" / "a.png")  # the first class folder's only file: what detection samples
    report = audit_json(str(tmp_path))
    assert report["summary"]["samples"] >= 6
    forced = audit_json(str(tmp_path), "--format", "imagefolder")
    [pipe] = lg001(forced)
    assert "a.png" in pipe["message"] and "not a regular file" in pipe["message"]
