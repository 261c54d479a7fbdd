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


def test_seed_000_reproduces_the_stray_class_and_labelguard_names_it(tmp_path):
    result = run("seed_000.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "labels.txt written by scanning the XMLs: ['0', '1', '2', '3', '5']" in out
    assert "IndexError: Target 4 is out of bounds." in out
    assert "cause 1 (likely): a label is >= the number of classes" in out
    assert "LG214 " in out and "the data uses '5' (1 object; in " in out
    assert "LG102 sample 13 (000013.xml): values 4" in out
    assert "LG301 sample 6 (" in out
    assert "000006.xml): 1 box is degenerate (width or height <= 0) in the 32x24 image" in out
    assert "xmin 20 >= xmax 8" in out
    assert list(tmp_path.iterdir()) == []


def test_seed_002_reproduces_the_nan_into_bceloss_and_labelguard_names_its_sources(tmp_path):
    result = run("seed_002.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "RuntimeError: all elements of input should be between 0 and 1" in out
    assert "LG507: 'sub_mean' (MeanShift), 'add_mean' (MeanShift) set requires_grad = False" in out
    assert "watch: LG508 training is diverging (step 3)" in out  # before the non-finite loss of step 4
    assert "trace_nonfinite: LG502 step " in out
    assert "8 pairs of 12x12 -> 24x24 accepted" in out
    assert "LG206 sample 5: image shape (3, 12, 12) and target shape (3, 36, 36)" in out
    assert "weight_decay=0. Hint: Lower the learning rate" in result.stderr  # watch's log line
    assert result.stderr.count("no num_classes or label spec given") == 1  # two guards, one warning


def test_seed_003_reproduces_the_forgotten_background_and_the_odd_slice(tmp_path):
    result = run("seed_003.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "IndexError: Target 2 is out of bounds." in out
    assert "LG201 case0001_slice000.npz: label value 2 in 100 pixels is outside [0, 2)" in out
    assert "num_classes must be 3 (count the background too)" in out
    assert "LG213 1 mask of " in out and "differs in shape from the 15 of 16 there that are 32x32: 64x64 in 1" in out
    assert "LG004 train.txt: " in out and "(and 1 more such finding)" in out
    assert "(and 15 more such findings)" in out
    assert "RuntimeError: stack expects each tensor to be equal size" in out
    assert "guard_collate: LG206 batch: " in out and "case0002_slice005.npz" in out
    assert list(tmp_path.iterdir()) == []
