"""Conformance: datasets written by other projects' tools, audited the way their users would.

``../shared/realworld/`` holds a few data files from each of labelme, mmsegmentation, mmyolo,
MONAI, Label Studio, SAHI, pytorch-3dunet and StarDist, at their original relative paths (each
folder's SOURCE.txt names the repository and the commit). The files are read in place, never
copied; the tests skip when the folder is absent.

Each case is the command a user of that tool would type: the dataset's folder or descriptor
file, and only the flags its own files justify (labelme's ``__ignore__`` is -1 in the arrays
and 255 in the palette PNGs). The audit must run through (no internal error, no traceback),
audit real label files, and report no error that the data does not hold. Where a fixture
plants faults on purpose (mmdetection's coco_sample.json: an undeclared category, a zero-width
box, a duplicate, images that are not shipped), the case names exactly those codes and why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REALWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "realworld"
pytestmark = pytest.mark.skipif(not REALWORLD.is_dir(), reason="../shared/realworld is absent")


@dataclass(frozen=True)
class Case:
    """One audit as a user of the tool that wrote the data would run it."""

    path: str  # relative to ../shared/realworld
    flags: tuple[str, ...] = ()  # "{realworld}" stands for the folder
    errors: frozenset[str] = frozenset()  # error codes the fixture really holds, each explained
    audited: tuple[str, ...] = ()  # names of label files that must be audited
    not_audited: tuple[str, ...] = ()  # names that are images, never labels
    why: str = ""
    extra: dict = field(default_factory=dict)


LABELME = "labelme/examples"
MMSEG = "mmsegmentation/tests/data"

CASES = [
    Case(f"{LABELME}/semantic_segmentation/data_dataset_voc", ("--ignore-index", "255"),
         audited=("2011_000003.png", "2011_000006.png", "2011_000025.png"),
         not_audited=("2011_000003.jpg",),
         why="labelme2voc: palette PNGs with __ignore__ as 255, class_names.txt beside them",
         extra={"first_class": "_background_"}),
    Case(f"{LABELME}/semantic_segmentation/data_dataset_voc/SegmentationClassNpy", ("--ignore-index", "-1"),
         audited=("2011_000003.npy",),
         why="labelme2voc: int32 arrays with __ignore__ as -1"),
    Case(f"{LABELME}/bbox_detection/data_dataset_voc",
         why="labelme2voc --noobject: VOC XMLs and class_names.txt",
         extra={"first_class": "_background_"}),
    Case(f"{LABELME}/instance_segmentation/data_dataset_coco/annotations.json",
         why="labelme2coco: file_name values are relative to the json's folder (JPEGImages/...)"),
    Case(f"{MMSEG}/pseudo_dataset",
         audited=("00000_gt.png", "00004_gt.png"), not_audited=("00000_img.jpg",),
         why="mmsegmentation custom dataset: imgs/X_img.jpg + gts/X_gt.png"),
    Case(f"{MMSEG}/pseudo_dataset", ("--list", "{realworld}/" f"{MMSEG}/pseudo_dataset/splits/train.txt"),
         audited=("00000_gt.png",), not_audited=("00000_img.jpg",),
         why="mmsegmentation split file naming stems without suffix or extension"),
    Case(f"{MMSEG}/pseudo_cityscapes_dataset", ("--num-classes", "19", "--ignore-index", "255"),
         audited=("frankfurt_000000_000294_gtFine_labelTrainIds.png",),
         not_audited=("frankfurt_000000_000294_leftImg8bit.png",),
         why="cityscapesscripts: 19 train ids and 255"),
    Case("mmyolo/tests/data/VOCdevkit",
         errors=frozenset({"LG003"}),
         why="VOCdevkit with VOC2007 and VOC2012 side by side; the VOC2012 copy of 000001.xml "
             "names <filename>000002.jpg, which the fixture does not ship (LG003)",
         extra={"datasets": 2}),
    Case("mmyolo/tests/data/VOCdevkit/VOC2007",
         ("--list", "{realworld}/mmyolo/tests/data/VOCdevkit/VOC2007/ImageSets/Main/test.txt"),
         audited=("000001.xml",), not_audited=("000001.jpg",),
         why="mmdetection's VOC loader reads ImageSets/Main/<split>.txt: image ids, here annotated"),
    Case("mmyolo/tests/data/coco_sample.json",
         errors=frozenset({"LG003", "LG101", "LG301"}),
         why="mmdetection's test fixture plants: images fake1..4.jpg that are not shipped (LG003), "
             "an annotation of undeclared category 3 (LG101), a bbox of width 0 (LG301)"),
    Case("monai/tests/testing_data",
         audited=("anatomical_label.nii.gz", "reoriented_anat_moved_label.nii.gz"),
         not_audited=("anatomical.nii", "reoriented_anat_moved.nii"),
         why="MONAI: image volumes beside their _label volumes"),
    Case("label-studio-converter/tests/data/test_import_yolo_data",
         why="Label Studio YOLO export: classes.txt with CRLF, mixed image extensions"),
    Case("sahi/tests/data/coco_utils/combined_coco.json",
         why="SAHI: a COCO file with its two images beside it"),
    Case("sahi/tests/data/coco_utils/visdrone2019-det-train-first50image.json",
         errors=frozenset({"LG003"}),
         why="SAHI's VisDrone excerpt ships the annotations without the 50 images it names (LG003)"),
    Case("pytorch-3dunet/resources/sample_patch.h5",
         audited=("sample_patch.h5",),
         why="pytorch-3dunet: 'raw' uint16 and 'label' int64 instance ids in one HDF5 file"),
    Case("stardist/tests/data",
         audited=("mask2d.tif", "mask3d.tif"), not_audited=("img2d.tif", "img3d.tif"),
         why="StarDist: uint16 instance masks beside their images, 3D with deflate compression"),
]


def audit_json(case: Case, tmp_path: Path) -> tuple[int, dict, str]:
    """Run the CLI as a user would, from an empty folder, and return (exit code, JSON, stderr)."""
    output = tmp_path / "report.json"
    flags = [f.replace("{realworld}", str(REALWORLD)) for f in case.flags]
    command = [sys.executable, "-m", "labelguard", "audit", str(REALWORLD / case.path), *flags,
               "--no-config", "--workers", "1", "--no-progress", "--output-format", "json",
               "--output-file", str(output)]
    env = {k: v for k, v in os.environ.items() if k != "LABELGUARD_DEBUG"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    report = json.loads(output.read_text()) if output.is_file() else {}
    return done.returncode, report, done.stderr


def audited_names(report: dict) -> set[str]:
    """Names of the label files the audit read."""
    return {Path(p).name for p in report["summary"]["files"]}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.path.split("/")[0] + ":" + Path(c.path).name
                         + (":" + Path(c.flags[1]).name if c.flags[:1] == ("--list",) else ""))
def test_real_dataset_audits_without_false_errors(case, tmp_path):
    code, report, stderr = audit_json(case, tmp_path)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert report, f"no report written (exit {code}): {stderr}"
    summary = report["summary"]
    assert not summary["errors"], summary["errors"]
    assert summary["samples"] > 0, "the audit read no label file"
    errors = {f["code"] for f in report["findings"] if f["severity"] == "error"}
    assert errors == case.errors, (case.why, [
        (f["code"], f["path"], f["message"]) for f in report["findings"] if f["severity"] == "error"])
    assert code == (1 if case.errors else 0), (code, stderr)
    names = audited_names(report)
    for name in case.audited:
        assert name in names, (name, sorted(names))
    for name in case.not_audited:
        assert name not in names, f"{name} is an image but was audited as a label"
    if "first_class" in case.extra:
        assert report["summary"]["spec"]["classes"][0] == case.extra["first_class"]
    if "datasets" in case.extra:
        assert len(summary["layouts"]) == case.extra["datasets"], summary["layouts"]
