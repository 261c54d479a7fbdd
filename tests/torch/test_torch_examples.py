"""The example scripts run as users run them, on their generated demo data."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(script, *args, cwd):
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180)


def test_swin_unet_example_stops_at_the_bad_slice_or_skips_it(tmp_path):
    stopped = run("swin_unet_guard.py", cwd=tmp_path)
    assert stopped.returncode == 1
    assert "LG201 sample 17 (" in stopped.stderr
    assert "case0003_slice001.npz): label value 9 in 100 pixels" in stopped.stderr

    skipped = run("swin_unet_guard.py", "--on_error", "skip", cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stderr
    assert "epoch 0: 6 steps" in skipped.stdout
    assert "case0003_slice001.npz) LG201 values [9]" in skipped.stdout
    assert list(tmp_path.iterdir()) == []  # the demo data and the records lived in temp folders


def test_swin_unet_example_writes_the_quarantine_file_it_is_given(tmp_path):
    quarantine = tmp_path / "out" / "bad.jsonl"
    skipped = run("swin_unet_guard.py", "--on_error", "skip", "--quarantine", str(quarantine), cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stderr
    assert f"quarantine: {quarantine}" in skipped.stdout
    (record,) = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert (record["index"], record["code"], record["values"]) == (17, "LG201", [9])


def test_torchvision_example_names_the_mask_file(tmp_path):
    result = run("torchvision_guard.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "SegmentationClass/2007_000011.png" in result.stderr
    assert "label value 21 in 16 pixels" in result.stderr
    assert list(tmp_path.iterdir()) == []
