"""No flag is silently ignored: a flag the dataset found cannot use is a usage error or a
printed note, and an unknown code in --severity or the config is an error naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from annotation_builders import coco_dataset, write_ade20k
from builders import organic_mask, write_npz, write_png
from detection_builders import write_voc, write_yolo
from labelguard.cli import main
from labelguard.config import load_config
from labelguard.errors import SpecError


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config"], catch_exceptions=False)


def png_masks(root, n: int = 2):
    for i in range(n):
        write_png(root / "masks" / f"{i}.png", organic_mask((32, 32), (0, 1), seed=i))
    return root


def notes(result) -> list[str]:
    return json.loads(result.output)["summary"]["notes"]


def test_key_on_a_png_dataset_is_a_note(tmp_path):
    data = png_masks(tmp_path / "d")
    result = cli("audit", str(data), "--num-classes", "2", "--key", "label", "-f", "json")
    assert result.exit_code == 0
    assert any(n.startswith("--key label was not used: no NPZ or HDF5 file") for n in notes(result))


def test_image_key_on_a_png_dataset_is_a_note(tmp_path):
    data = png_masks(tmp_path / "d")
    result = cli("audit", str(data), "--num-classes", "2", "--image-key", "raw", "-f", "json")
    assert result.exit_code == 0
    assert any(n.startswith("--image-key raw was not used: no NPZ or HDF5 file") for n in notes(result))


def test_image_key_on_an_npz_dataset_is_used_without_a_note(tmp_path):
    mask = organic_mask((32, 32), (0, 1))
    write_npz(tmp_path / "d" / "labels" / "a.npz", label=mask, raw=mask.astype("float32"))
    result = cli("audit", str(tmp_path / "d"), "--num-classes", "2", "--key", "label", "--image-key", "raw",
                 "-f", "json")
    assert result.exit_code == 0, result.output
    assert not any("--image-key" in n for n in notes(result))


def test_key_on_an_npz_dataset_is_used_without_a_note(tmp_path):
    mask = organic_mask((32, 32), (0, 1))
    write_npz(tmp_path / "d" / "case.npz", image=mask * 80, label=mask)
    result = cli("audit", str(tmp_path / "d"), "--num-classes", "2", "--key", "label", "-f", "json")
    assert result.exit_code == 0, result.output
    assert not any("--key" in n for n in notes(result))


def test_seed_without_sample_is_a_note(tmp_path):
    data = png_masks(tmp_path / "d")
    result = cli("audit", str(data), "--num-classes", "2", "--seed", "7", "-f", "json")
    assert result.exit_code == 0
    assert any(n.startswith("--seed 7 was not used: nothing was sampled") for n in notes(result))
    sampled = cli("audit", str(png_masks(tmp_path / "e", 5)), "--num-classes", "2", "--sample", "2", "--seed", "7",
                  "-f", "json")
    assert json.loads(sampled.output)["summary"]["sampled"]["seed"] == 7
    assert not any("--seed" in n for n in notes(sampled))


def test_write_classes_on_a_mask_dataset_writes_nothing_and_says_so(tmp_path):
    data = png_masks(tmp_path / "d")
    target = tmp_path / "classes.txt"
    result = cli("audit", str(data), "--num-classes", "2", "--write-classes", str(target))
    assert result.exit_code == 0
    assert not target.exists()
    assert "--write-classes:" in result.output and "masks hold values, not names" in result.output


def test_write_classes_on_a_detection_dataset_writes_the_names(tmp_path):
    root = write_voc(tmp_path / "voc", {"a": [("dog", (1, 1, 9, 9)), ("cat", (2, 2, 8, 8))]})
    target = tmp_path / "classes.txt"
    result = cli("audit", str(root), "--write-classes", str(target))
    assert target.read_text() == "cat\ndog\n" and "--write-classes:" not in result.output


def test_color_map_on_a_detection_dataset_is_a_note(tmp_path):
    root = write_voc(tmp_path / "voc", {"a": [("dog", (1, 1, 9, 9))]})
    colors = tmp_path / "label_colors.txt"
    colors.write_text("0 0 0 background\n128 0 0 dog\n", encoding="utf-8")
    result = cli("audit", str(root), "--color-map", str(colors), "-f", "json")
    assert any("--color-map" in n and "was not used: no mask was audited" in n for n in notes(result))


@pytest.mark.parametrize("flag", ["--path-column", "--label-column"])
def test_table_columns_on_a_mask_folder_are_a_usage_error(tmp_path, flag):
    data = png_masks(tmp_path / "d")
    result = cli("audit", str(data), flag, "file")
    assert result.exit_code == 2
    assert f"{flag} applies to a CSV/TSV table" in result.output and "is a masks dataset" in result.output


def test_list_on_a_layout_that_reads_no_list_is_a_usage_error(tmp_path):
    coco = coco_dataset(tmp_path / "c")
    listing = tmp_path / "train.txt"
    listing.write_text("images/train/000000.jpg\n", encoding="utf-8")
    result = cli("audit", str(coco), "--list", str(listing))
    assert result.exit_code == 2
    assert "--list selects files of a mask, VOC or YOLO dataset" in result.output and "coco dataset" in result.output


def test_list_on_a_yolo_dataset_selects_the_labels_of_its_images(tmp_path):
    root = write_yolo(tmp_path / "y", {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)], "b": [(4, 0.5, 0.5, 0.2, 0.2)]}},
                      names=["cat"])
    listing = tmp_path / "train.txt"
    listing.write_text("images/train/a.jpg\n", encoding="utf-8")
    result = cli("audit", str(root), "--list", str(listing), "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"]["samples"] == 1  # b.txt, with its bad id, is not listed


@pytest.mark.parametrize("code, named", [
    ("LG999", "no family matches; the families are LG0xx"),
    ("LG299", "the LG2xx family has LG201"),
    ("nonsense", "no family matches"),
])
def test_unknown_severity_code_is_a_usage_error_naming_it(tmp_path, code, named):
    data = png_masks(tmp_path / "d")
    result = cli("audit", str(data), "--severity", f"{code}=error")
    assert result.exit_code == 2
    assert f"unknown check code {code!r}" in result.output and named in result.output
    assert cli("audit", str(data), "--severity", "lg205=warning").exit_code == 0


def test_unknown_severity_code_in_the_config_names_it_and_its_family(tmp_path):
    config = tmp_path / "labelguard.toml"
    config.write_text("[severity]\nLG209 = 'info'\nLG299 = 'info'\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"unknown check code 'LG299' in \[severity\] of .*LG2xx family has"):
        load_config(str(config))
    data = png_masks(tmp_path / "d")
    result = CliRunner().invoke(main, ["audit", str(data), "--config", str(config), "--no-progress"])
    assert result.exit_code == 2 and "LG299" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("layout", ["ade20k", "mapillary"])
def test_color_map_on_masks_that_code_their_own_classes_is_a_note(tmp_path, layout):
    """ADE20K and Mapillary masks are decoded as their format stores the classes: a colour map
    given for them was dropped without a word."""
    if layout == "ade20k":
        write_ade20k(tmp_path / "d", "ADE_train_0001", np.pad(np.ones((4, 4), np.int32), 4))
        data = tmp_path / "d"
    else:
        data = tmp_path / "d" / "training" / "v1.2"
        write_png(data / "labels" / "x.png", organic_mask((16, 16), (0, 1)))
        write_png(tmp_path / "d" / "training" / "images" / "x.png", organic_mask((16, 16), (0, 1)) * 90)
    colors = tmp_path / "label_colors.txt"
    colors.write_text("0 0 0 background\n128 0 0 dog\n", encoding="utf-8")
    result = cli("audit", str(data), "--color-map", str(colors), "-f", "json")
    assert json.loads(result.output)["summary"]["layouts"] == [layout]
    assert any(n.startswith("--color-map") and f"was not used: the masks of the {layout} layout were decoded as "
               "that format stores its classes" in n for n in notes(result)), notes(result)


def test_color_map_that_cannot_be_read_is_its_own_finding_not_a_note(tmp_path):
    data = png_masks(tmp_path / "d")
    colors = tmp_path / "label_colors.txt"
    colors.write_text("not a colour map\n", encoding="utf-8")
    result = cli("audit", str(data), "--color-map", str(colors), "--num-classes", "2", "-f", "json")
    assert [f["code"] for f in json.loads(result.output)["findings"]] == ["LG001"]
    assert not any("--color-map" in n for n in notes(result))
