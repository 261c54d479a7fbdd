"""The inventory: every file under PATH that could hold labels is audited, paired as an image,
read as metadata, left out by its layout with a reason, or LG007.

Each case builds a dataset of the shape a tool writes, with files beside it that the layout
detected does not read, and checks the report's coverage line, its JSON ``inventory`` and the
LG007 findings (or their absence where every file has a role).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from labelguard import LabelSpec, audit
from labelguard.cli import main
from labelguard.layouts.base import SUBDATASET_DEPTH
from labelguard.layouts.inventory import Claims, Found, take_inventory
from tests.annotation_builders import coco_dataset
from tests.builders import write_png
from tests.detection_builders import voc_xml

REALWORLD = Path(__file__).resolve().parents[2].parent / "shared" / "realworld"
from rule_cases import examples_of, proves


def _masks(folder: Path, count: int, value: int = 1) -> None:
    for index in range(count):
        mask = np.zeros((8, 8), np.uint8)
        mask[2:4, 2:4] = value
        write_png(folder / f"m{index}.png", mask)


def _report(path: Path, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["audit", str(path), "-f", "json", "--no-cache", "--no-progress",
                                       "--no-config", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)


def _lg007(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == "LG007"]


def _labelme_json(path: Path) -> None:
    path.write_text(json.dumps({"version": "5.0.1", "shapes": [{"label": "cat", "points": [[1, 1], [5, 5]]}],
                                "imagePath": "a.jpg", "imageHeight": 8, "imageWidth": 8}))


@pytest.mark.code("LG007", "fail")
def test_labelme_json_beside_a_coco_dataset_is_lg007_naming_it_and_the_layout(tmp_path):
    """labelme's own per-image JSON beside the COCO file labelme2coco wrote: no layout reads
    labelme's JSON, and the COCO layout that takes the folder never opens it."""
    root = tmp_path / "data"
    coco_dataset(root, layout="flat", n_images=2)
    _labelme_json(root / "000001.json")
    _, report = _report(root, "--classes", "cat,dog,bird")
    [finding] = _lg007(report)
    assert finding["severity"] == "warning"
    assert "1 labelme JSON file" in finding["message"] and "the coco layout" in finding["message"]
    assert finding["path"].endswith("000001.json") and finding["dataset"]
    [dataset] = report["datasets"]
    assert dataset["inventory"]["not_audited"][0]["count"] == 1


def test_voc_xmls_inside_a_coco_datasets_folder_are_a_dataset_of_their_own(tmp_path):
    """mmyolo's test data: COCO files at the root, a VOCdevkit below them that the COCO layout
    reads no file of. The VOC folder is audited as when it is the PATH."""
    root = tmp_path / "data"
    coco_dataset(root, layout="flat", n_images=2)
    annotations = root / "VOCdevkit" / "VOC2007" / "Annotations"
    annotations.mkdir(parents=True)
    (annotations / "000001.xml").write_text(voc_xml("000001.jpg", [("dog", (1, 1, 5, 5))], size=(16, 16)))
    _, report = _report(root, "--classes", "cat,dog,bird")
    assert not _lg007(report)
    assert sorted(d["layout"] for d in report["datasets"]) == ["coco", "voc"]
    assert any(path.endswith("000001.xml") for path in report["summary"]["files"])


@pytest.mark.code("LG007", "fail")
def test_masks_in_a_folder_no_layout_reads_are_lg007_and_counted_in_the_coverage_line(tmp_path):
    """A YOLO set declared by its data.yaml, and a masks/ folder of greyscale PNGs beside it
    that the YOLO layout never opens: they are named, never silently skipped."""
    root = tmp_path / "set"
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    write_png(root / "images" / "a.png", np.zeros((16, 16, 3), np.uint8))
    (root / "labels" / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (root / "data.yaml").write_text("names: [cat]\nnc: 1\ntrain: images\n")
    _masks(root / "segmentation", 3)
    result = CliRunner().invoke(main, ["audit", str(root), "--no-cache", "--no-progress", "--no-config"])
    assert "coverage:  took in 1 label file and 1 image, read 1 metadata file" in result.output
    assert "not audited: 3 files, 3 of which could hold labels (LG007)" in result.output
    _, report = _report(root)
    [finding] = _lg007(report)
    assert finding["path"] is None and finding["data"]["count"] == 3
    assert "3 PNG files" in finding["message"] and "the yolo layout" in finding["message"]


@pytest.mark.code("LG007", "pass")
def test_a_mask_dataset_with_its_images_has_every_file_accounted_for(tmp_path):
    root = tmp_path / "seg"
    _masks(root / "masks", 3)
    for index in range(3):
        write_png(root / "images" / f"m{index}.png", np.full((8, 8, 3), 90, np.uint8))
    (root / "README.md").write_text("a dataset\n")
    _, report = _report(root, "--num-classes", "2")
    assert not _lg007(report)
    inventory = report["datasets"][0]["inventory"]
    assert (inventory["labels"], inventory["images"], inventory["not_audited"]) == (3, 3, [])
    assert inventory["other"] == 1  # the README


@pytest.mark.code("LG007", "pass")
def test_greyscale_images_of_a_coco_dataset_are_images_not_unaudited_labels(tmp_path):
    root = tmp_path / "coco"
    coco_dataset(root, layout="flat", n_images=2, images=[
        {"id": 1, "file_name": "a.png", "width": 8, "height": 8},
        {"id": 2, "file_name": "b.png", "width": 8, "height": 8}], write_images=False)
    for name in ("a.png", "b.png"):
        write_png(root / name, np.full((8, 8), 7, np.uint8))  # greyscale photos (an X-ray set)
    _, report = _report(root, "--classes", "cat,dog,bird")
    assert not _lg007(report)
    assert report["datasets"][0]["inventory"]["other_images"] == 2


@pytest.mark.code("LG007", "pass")
def test_files_a_layout_leaves_out_on_purpose_are_named_with_its_reason_not_lg007(tmp_path):
    """Cityscapes writes each label map in several encodings; the layout reads one and says
    why it leaves the others."""
    root = tmp_path / "cityscapes"
    gt = root / "gtFine" / "train" / "aachen"
    images = root / "leftImg8bit" / "train" / "aachen"
    for stem in ("aachen_000000_000019", "aachen_000001_000019"):
        write_png(gt / f"{stem}_gtFine_labelIds.png", np.full((8, 8), 7, np.uint8))
        write_png(gt / f"{stem}_gtFine_instanceIds.png", np.full((8, 8), 7, np.uint16))
        write_png(gt / f"{stem}_gtFine_color.png", np.full((8, 8, 3), 60, np.uint8))
        write_png(images / f"{stem}_leftImg8bit.png", np.full((8, 8, 3), 90, np.uint8))
    _, report = _report(root, "--num-classes", "34")
    assert not _lg007(report)
    [group] = report["datasets"][0]["inventory"]["not_audited"]
    assert group["count"] == 4 and "left out by the cityscapes layout" in group["reason"] and not group["lg007"]


@pytest.mark.code("LG007", "pass")
def test_files_a_list_did_not_name_are_not_listed_not_lg007(tmp_path):
    root = tmp_path / "seg"
    _masks(root / "masks", 4)
    (root / "train.txt").write_text("masks/m0.png\nmasks/m1.png\n")
    _, report = _report(root, "--num-classes", "2", "--list", str(root / "train.txt"))
    assert not _lg007(report)
    [group] = report["datasets"][0]["inventory"]["not_audited"]
    assert group["count"] == 2 and "not named by the list" in group["reason"]


def test_files_in_no_dataset_found_are_lg007_naming_the_path(tmp_path):
    """A folder of masks deeper than discovery looks for datasets is said, never skipped."""
    deep = (tmp_path / "top").joinpath(*["deeper"] * SUBDATASET_DEPTH, "masks")
    _masks(deep, 2)
    coco_dataset(tmp_path / "top" / "coco", layout="flat", n_images=1)
    _, report = _report(tmp_path / "top", "--classes", "cat,dog,bird")
    findings = _lg007(report)
    assert findings and all(f["dataset"] for f in findings)
    assert sum(f["data"]["count"] for f in findings) == 2


def test_detect_prints_each_datasets_inventory(tmp_path):
    root = tmp_path / "data"
    coco_dataset(root, layout="flat", n_images=2)
    _labelme_json(root / "000001.json")
    result = CliRunner().invoke(main, ["detect", str(root)])
    assert result.exit_code == 0, result.output
    assert "would take in 1 label file and 2 images, would read 0 metadata files" in result.output
    assert "not audited (LG007): 1 labelme JSON file, the coco layout read this dataset" in result.output


def test_claims_tell_a_label_from_an_image_and_a_metadata_file(tmp_path):
    claims = Claims()
    claims.add("label", str(tmp_path / "m.png"))
    claims.add("image", str(tmp_path / "i.png"))
    claims.add("metadata", str(tmp_path / "classes.txt"))
    assert [claims.role(str(tmp_path / name)) for name in ("m.png", "./i.png", "classes.txt", "x.png")] == [
        "label", "image", "metadata", None]


def test_an_inventory_of_object_storage_says_it_was_not_taken():
    taken = take_inventory("s3://bucket/data", [Found("s3://bucket/data", "masks", True)], Claims(), {})
    [inventory] = taken.values()
    assert not inventory.taken and "object storage" in inventory.coverage()


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="../shared/realworld is absent")
def test_mmyolos_vocdevkit_inside_its_coco_folder_is_audited_and_its_missing_image_found():
    """mmyolo's VOC2012 annotation names 000002.jpg, which the fixture does not ship."""
    data = REALWORLD / "mmyolo" / "tests" / "data"
    report = audit(str(data), LabelSpec(), use_project_config=False, cache=False)
    assert not [f for f in report.findings if f.code == "LG007"]
    assert [Path(f.path).parts[-3:] for f in report.findings if f.code == "LG003" and "VOC2012" in f.path] == [
        ("VOC2012", "Annotations", "000001.xml")]


@examples_of("LG007")
def test_lg007_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
