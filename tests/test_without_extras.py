"""Audits run as a user who installed labelguard without its extras: what an extra would read
is read by the core dependencies alone, with the same verdicts.

The extra is made unimportable through the real import machinery (a module of its name, first
on the path, that raises ImportError as a missing package does), in a real ``labelguard``
process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import labelguard
from builders import organic_mask
from audit_helpers import REALWORLD

SRC = str(Path(labelguard.__file__).resolve().parents[1])


def audit_without(module: str, args: list[str], cwd: Path) -> tuple[int, dict, str]:
    blocked = cwd / "blocked"
    blocked.mkdir(exist_ok=True)
    (blocked / f"{module}.py").write_text(f"raise ImportError({f'No module named {module!r}'!r})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocked), SRC]))
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *args, "--output-format", "json",
                           "--no-progress", "--no-config"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def write_stack(path: Path, pages: list[np.ndarray]) -> None:
    images = [Image.fromarray(page) for page in pages]
    images[0].save(path, save_all=True, append_images=images[1:])


def stardist_pair(folder: Path, image_pages: int, mask_pages: int) -> None:
    """A 3D image and its label stack side by side, named as StarDist's test data is."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    write_stack(folder / "img3d.tif", [rng.integers(0, 255, (24, 20), dtype=np.uint8) for _ in range(image_pages)])
    mask = organic_mask((24, 20), (0, 1, 2))
    write_stack(folder / "mask3d.tif", [mask] * mask_pages)


def codes(report: dict) -> set[str]:
    return {finding["code"] for finding in report.get("findings", [])}


@pytest.mark.code("LG206", "pass")
def test_without_tifffile_a_3d_image_stack_is_its_pages_not_its_first_page(tmp_path):
    stardist_pair(tmp_path / "data", image_pages=5, mask_pages=5)
    rc, report, err = audit_without("tifffile", ["data", "--num-classes", "3"], tmp_path)
    assert "Traceback" not in err, err
    assert rc == 0, (codes(report), err)
    assert "LG206" not in codes(report)


@pytest.mark.code("LG206", "fail")
def test_without_tifffile_stacks_of_different_depth_are_lg206(tmp_path):
    stardist_pair(tmp_path / "data", image_pages=4, mask_pages=5)
    rc, report, err = audit_without("tifffile", ["data", "--num-classes", "3"], tmp_path)
    assert rc == 1, err
    geometry = [f for f in report["findings"] if f["code"] == "LG206"]
    assert geometry and "5x24x20" in geometry[0]["message"] and "4x24x20" in geometry[0]["message"], geometry


@pytest.mark.skipif(not (REALWORLD / "stardist").is_dir(), reason="../shared/realworld/stardist is absent")
def test_without_tifffile_stardist_test_data_has_no_geometry_error(tmp_path):
    rc, report, err = audit_without("tifffile", [str(REALWORLD / "stardist" / "tests" / "data")], tmp_path)
    assert "Traceback" not in err, err
    assert "LG206" not in codes(report), [f["message"] for f in report["findings"]]


@pytest.mark.code("LG601", "fail")
def test_without_pyarrow_json_lines_of_token_ids_are_audited(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"input_ids": [1, 5, 2], "label": 0}\n{"input_ids": [1, 130, 2], "label": 1}\n')
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 100}))
    status, report, err = audit_without("pyarrow", ["train.jsonl", "--model-config", "config.json"], tmp_path)
    assert status == 1, err
    [finding] = [f for f in report["findings"] if f["code"] == "LG601"]
    assert finding["data"]["rows"] == [1] and finding["data"]["values"] == [130]


@pytest.mark.code("LG201", "fail")
def test_without_deflate_png_masks_give_the_same_findings(tmp_path):
    from builders import voc_palette

    data = tmp_path / "masks"
    data.mkdir()
    for index in range(4):
        mask = organic_mask((24, 20), (0, 1, 2), seed=index)
        if index == 1:
            mask[3, 4] = 7  # outside the spec
        image = Image.fromarray(mask, "P" if index % 2 else "L")
        if index % 2:
            image.putpalette(voc_palette())
        image.save(data / f"m{index}.png")
    (data / "m4.png").write_bytes((data / "m3.png").read_bytes()[:-30])  # cut short: LG001
    args = ["masks", "--num-classes", "3"]
    without = audit_without("deflate", args, tmp_path)
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *args, "--output-format", "json",
                           "--no-progress", "--no-config"], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=SRC),
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in without[2] + done.stderr
    assert without[0] == done.returncode == 1
    assert without[1]["findings"] == json.loads(done.stdout)["findings"]
    assert {"LG001", "LG201"} <= codes(without[1])


@pytest.mark.code("LG001", "fail")
def test_without_tifffile_an_ome_tiff_placing_planes_in_another_file_is_lg001_as_with_it(tmp_path):
    from hostile_builders import write_ome_tiff_elsewhere

    pytest.importorskip("tifffile")  # writes the file
    other = tmp_path / "elsewhere" / "secret.tif"
    other.parent.mkdir()
    Image.fromarray(np.full((24, 20), 7, np.uint8)).save(other)
    write_ome_tiff_elsewhere(tmp_path / "masks" / "case.ome.tif", np.zeros((24, 20), np.uint8), other)
    status, report, err = audit_without("tifffile", ["masks", "--num-classes", "2"], tmp_path)
    assert status == 1, err
    [message] = [f["message"] for f in report["findings"] if f["code"] == "LG001"]
    assert "OME-TIFF multi-file" in message and str(other) in message
