"""Acceptance stories from ../shared/spec/scenarios.md, each on a fixture built like the reporter's data."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from builders import (
    organic_mask, paired_dataset, swin_unet_dataset, write_jpeg, write_list, write_nifti, write_npy, write_npz,
    write_png,
)
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.rules.lg201 import ON_A_GPU
from audit_helpers import found
from detection_builders import write_yolo


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-config", "--no-progress"])


def test_scenario_3_swin_unet_labels_0_1_2_with_nclass_2(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=6, num_classes=3)
    report = audit(data, LabelSpec(num_classes=2), options=AuditOptions(lists=(str(listing),)),
                   use_project_config=False)
    lg201 = found(report, "LG201")
    assert len(lg201) == 6  # one per file
    for finding in lg201:
        with np.load(finding.path) as sample:
            twos = int((sample["label"] == 2).sum())
            assert finding.data == {"values": [2], "counts": [twos], "distinct": 1, "pixels": twos,
                                    "consequence": ON_A_GPU}
        assert "num_classes must be 3" in finding.hint
    result = cli("audit", str(data), "--list", str(listing), "--num-classes", "2")
    assert result.exit_code == 1
    assert "num_classes must be 3" in result.output and "remap" in result.output


def test_scenario_4_list_line_with_a_trailing_space(tmp_path):
    write_npz(tmp_path / "data" / "case_001.npz", image=np.zeros((16, 16), np.float32),
              label=organic_mask((16, 16), (0, 1, 2)))
    listing = write_list(tmp_path / "lists" / "train.txt", ["case_001.npz "])
    report = audit(tmp_path / "data", LabelSpec(num_classes=3), options=AuditOptions(lists=(str(listing),)),
                   use_project_config=False)
    [unclean] = found(report, "LG004")
    assert unclean.data == {"problem": "whitespace", "lines": [1]}
    assert "line 1 'case_001.npz '" in unclean.message
    assert not found(report, "LG003")
    assert report.summary.samples == 1 and report.summary.found_values() == [0, 1, 2]


def test_scenario_5_label_saved_as_jpeg_and_renamed_png(tmp_path):
    label = organic_mask((64, 64), (0, 1, 2), seed=4) * 2  # classes 0, 2, 4 of five
    path = write_jpeg(tmp_path / "ann_dir" / "train" / "0001.png", label)
    stored = np.asarray(Image.open(path))
    report = audit(tmp_path, LabelSpec(num_classes=5), use_project_config=False)
    [lossy] = found(report, "LG202")
    assert lossy.data["renamed"] is True
    smeared = int(np.isin(stored, lossy.data["stray_values"]).sum())
    assert lossy.data["stray_pixels"] == smeared > 0
    assert f"{smeared} pixels" in lossy.message and "named .png" in lossy.message


def test_scenario_6_binary_masks_0_255_and_interpolated_resizes(tmp_path):
    masks = [organic_mask((48, 48), (0, 255), seed=i) for i in range(4)]
    for i, mask in enumerate(masks):
        write_png(tmp_path / "scaled" / "masks" / f"{i}.png", mask)
    report = audit(tmp_path / "scaled", LabelSpec(num_classes=2), use_project_config=False)
    [scaled] = found(report, "LG209")
    assert scaled.data["remap"] == {"255": 1} and report.suggested_remap == {255: 1}

    resized = np.asarray(Image.fromarray(masks[0]).resize((80, 80), Image.BILINEAR))
    write_png(tmp_path / "resized" / "masks" / "a.png", resized)
    binary = organic_mask((48, 48), (0, 1)).astype(np.float32)
    write_npy(tmp_path / "resized" / "masks" / "b.npy", (binary[::2, ::2] + binary[1::2, 1::2]) / 2)
    report = audit(tmp_path / "resized", LabelSpec(num_classes=2), use_project_config=False)
    [fringe] = found(report, "LG202")
    assert Path(fringe.path).name == "a.png" and fringe.data["stray_pixels"] > 0
    [fractional] = found(report, "LG204")
    assert Path(fractional.path).name == "b.npy" and fractional.data["examples"] == [0.5]


def _fix_in_place(path: Path, text_or_bytes) -> None:
    """Rewrite ``path`` with new content of the same size and give it back its old mtime, as
    the reporter's fix did: a cache keyed by path, size or mtime would not see it."""
    before = path.stat()
    data = text_or_bytes.encode() if isinstance(text_or_bytes, str) else text_or_bytes
    assert len(data) == before.st_size
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _aged(root: Path) -> None:
    then = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then))


@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG201", "pass")
@pytest.mark.code("LG102", "fail")
@pytest.mark.code("LG102", "pass")
def test_scenario_10_a_cache_never_hides_a_fix(tmp_path):
    """Ultralytics' labels cache keyed files by path and size, so a label fixed in place kept its
    old verdict (ultralytics PR #26207, yolov5#306). The result cache is keyed by content and spec:
    a fix of the same size and mtime is seen, and so is a changed spec."""
    cache = str(tmp_path / "cache")
    masks = tmp_path / "masks"
    for index in range(4):
        write_npy(masks / f"case{index}.npy", organic_mask((16, 16), (0, 1, 2), seed=index))
    broken = organic_mask((16, 16), (0, 1, 2), seed=9)
    broken[3, 3] = 5
    write_npy(masks / "case9.npy", broken)
    _aged(masks)
    spec = LabelSpec(num_classes=3)
    assert [Path(f.path).name for f in found(audit(masks, spec, use_project_config=False, cache=cache),
                                              "LG201")] == ["case9.npy"]
    fixed = broken.copy()
    fixed[3, 3] = 2
    buffer = io.BytesIO()
    np.save(buffer, fixed)
    _fix_in_place(masks / "case9.npy", buffer.getvalue())
    after = audit(masks, spec, use_project_config=False, cache=cache)
    assert not found(after, "LG201") and after.from_cache == 4
    narrower = audit(masks, LabelSpec(num_classes=2), use_project_config=False, cache=cache)
    assert narrower.from_cache == 0 and len(found(narrower, "LG201")) == 5  # every mask holds a 2

    yolo = write_yolo(tmp_path / "yolo", {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)], "b": [(3, 0.5, 0.5, 0.2, 0.2)]}},
                      names=["cat", "dog"])
    _aged(yolo)
    assert found(audit(yolo, use_project_config=False, cache=cache), "LG102")
    label = yolo / "labels" / "train" / "b.txt"
    _fix_in_place(label, "1" + label.read_text(encoding="utf-8")[1:])  # class 3 -> 1
    assert not found(audit(yolo, use_project_config=False, cache=cache), "LG102")


def test_scenario_12_all_77_size_mismatches_in_one_run(tmp_path):
    names = [f"img{i:03d}" for i in range(80)]
    masks = [organic_mask((12, 16) if i < 77 else (8, 8), (0, 1), seed=i) for i in range(80)]
    paired_dataset(tmp_path, names, masks=masks, image_size=(8, 8))
    report = audit(tmp_path, LabelSpec(num_classes=2), use_project_config=False)
    mismatches = found(report, "LG206")
    assert len(mismatches) == 77
    assert all("16x12" in f.message and "8x8" in f.message for f in mismatches)
    result = cli("audit", str(tmp_path), "--num-classes", "2")
    assert "LG206 error image-label-geometry-mismatch: 77 findings, 77 files" in result.output


def test_scenario_14_image_saved_where_the_label_should_be(tmp_path):
    ct = np.random.default_rng(0).integers(-1024, 3000, size=(6, 32, 32)).astype(np.int16)
    write_nifti(tmp_path / "imagesTr" / "case_001_0000.nii.gz", ct)
    write_nifti(tmp_path / "labelsTr" / "case_001.nii.gz", ct)
    report = audit(tmp_path, LabelSpec(num_classes=3), use_project_config=False)
    on_file = [f for f in report.findings if f.path is not None]
    assert [f.code for f in on_file] == ["LG201"]
    assert on_file[0].message.startswith("this looks like an image, not a label")
    assert on_file[0].data["looks_like_image"] is True
    assert "-1024" in on_file[0].message and "2999" in on_file[0].message


@pytest.mark.code("LG104", "fail")
def test_scenario_15_labels_0_2_3_4_5_with_expected_0_to_4(tmp_path):
    for i in range(3):
        write_png(tmp_path / "masks" / f"case_{i:03d}.png", organic_mask((32, 32), (0, 2, 3, 4, 5), seed=i))
    result = cli("audit", str(tmp_path), "--num-classes", "5", "-f", "json")
    report = json.loads(result.output)
    assert report["summary"]["outside_spec"].keys() == {"5"}
    [unused] = [f for f in report["findings"] if f["code"] == "LG104"]
    assert unused["data"]["missing"] == [1]
    assert {f["code"] for f in report["findings"]} == {"LG201", "LG104"}
