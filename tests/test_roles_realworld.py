"""Conformance: which files of real exports are labels and which are their images.

The datasets in ``../shared/realworld2`` (torchgeo's copies of remote-sensing datasets, a
Roboflow PNG-mask export) and MONAI's testing data in ``../shared/realworld`` hold images
and labels side by side, in folders named by their tools' conventions. Each case names the
label files the audit must read, says that no image is read as a label, and lists the only
errors the files really hold (verified by reading them: the colour masks of DeepGlobe and of
the ISPRS sets come without a colour map). The tests skip when the folders are absent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from audit_helpers import found, run
from labelguard.core.findings import Severity

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TORCHGEO = "realworld2/torchgeo/tests/data"


@dataclass(frozen=True)
class Case:
    path: str  # relative to ../shared
    labels: tuple[str, ...]  # every label file (relative to the path), all audited
    errors: tuple[str, ...] = ()  # the error codes the files hold; each one on every label
    why: str = ""


def _deepglobe() -> tuple[str, ...]:
    return tuple(f"data/{split}/masks/{n}_mask.png" for split, numbers in
                 (("training_data", (1, 2, 3)), ("test_data", (8, 9, 10))) for n in numbers)


CASES = [
    Case(f"{TORCHGEO}/deepglobelandcover", _deepglobe(), ("LG203",),
         why="DeepGlobe: images/N_sat.jpg beside masks/N_mask.png; RGB colour masks, no colour map"),
    Case(f"{TORCHGEO}/levircd", tuple(f"levircd/label/{s}_{i}.png" for s in ("test", "train", "val") for i in (0, 1)),
         why="LEVIR-CD: A/ and B/ are the photos before and after of the change mask in label/"),
    Case(f"{TORCHGEO}/loveda", tuple(f"{s}/{r}/masks_png/01.png" for s in ("Train", "Val") for r in ("Rural", "Urban")),
         why="LoveDA: images_png/ beside masks_png/; Test/ has images only"),
    Case(f"{TORCHGEO}/gid15", tuple(f"GID/ann_dir/{s}/GF2_PMS1__L1A{n}-MSS1_15label.png" for s, n in (
        ("train", "0000564539"), ("train", "0000575925"), ("val", "0001064454"), ("val", "0001118839"))),
         why="GID-15 as mmsegmentation converts it: img_dir/ beside ann_dir/ (*_15label.png); test/ has images only"),
    Case(f"{TORCHGEO}/potsdam", tuple(f"top_potsdam_{t}_label.tif" for t in ("2_10", "2_11", "5_15", "6_15")),
         ("LG203",), why="ISPRS Potsdam: 4_Ortho_RGBIR/*_RGBIR.tif tiles of the RGB colour labels beside them"),
    Case(f"{TORCHGEO}/vaihingen", tuple(f"top_mosaic_09cm_area{a}.tif" for a in (1, 11, 24, 6)),
         ("LG203",), why="ISPRS Vaihingen: top/ holds the tiles, under the names of the colour labels beside it"),
    Case("realworld2/roboflow-dhcn", tuple(
        f"test/{name}_mask.png" for name in (
            "frame_0004_jpg.rf.3c52a7403c54eace30f5480cdc2cff12", "frame_0020_jpg.rf.6a0121bf9d61b408a535e273c7ec600d",
            "frame_0029_jpg.rf.0a3f26b5cceb896042e6f9c18f7de5cc", "frame_0041_jpg.rf.1ba34800966d17efa72c2245f1b59777",
            "frame_0061_jpg.rf.55104e6388b2a8e888f605771668b382", "frame_0087_jpg.rf.836aa879dabd380ea3aeb37c9abb9dda",
            "frame_0090_jpg.rf.e9cc267d25a7dfa776d1ca2ed3a4c7fa", "frame_0101_jpg.rf.4ecee113c5e044726a218ce9f733bdc4",
            "frame_0110_jpg.rf.2282309a0fe1c0a0a7394a76ea26bcfd",
            "frame_0111_jpg.rf.a0c5a591fef6c6ab899038a6d259aeda")),
         why="Roboflow PNG masks: x.jpg beside x_mask.png, _classes.csv beside them"),
    Case("realworld/monai", ("tests/testing_data/anatomical_label.nii.gz",
                             "tests/testing_data/reoriented_anat_moved_label.nii.gz"),
         why="MONAI: image volumes beside their _label volumes in one folder"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path.rsplit("/", 1)[-1])
def test_real_exports_audit_their_labels_and_never_their_images(case):
    root = SHARED / case.path
    if not root.is_dir():
        pytest.skip(f"../shared/{case.path} is absent")
    report = run(root, workers=1)
    read = {Path(os.path.abspath(path)).relative_to(root).as_posix() for path in report.files}
    assert read == set(case.labels), case.why
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert {f.code for f in errors} == set(case.errors), [f.message for f in errors]
    for code in case.errors:
        assert {Path(os.path.abspath(f.path)).relative_to(root).as_posix() for f in found(report, code)} == \
            set(case.labels)


def test_the_roboflow_split_takes_its_classes_from_its_class_table():
    split = SHARED / "realworld2/roboflow-dhcn/test"
    if not split.is_dir():
        pytest.skip("../shared/realworld2/roboflow-dhcn is absent")
    report = run(split, workers=1)
    assert report.spec.classes == ("background", "cabinet", "ceiling", "chair", "door", "elevator", "railing",
                                   "road", "stair", "tree", "wall")
    assert len(report.files) == 10 and not [f for f in report.findings if f.severity is Severity.ERROR]
    # Cabinet (1) and elevator (5) never occur in these ten frames.
    assert [f.data["missing"] for f in found(report, "LG104")] == [[1, 5]]
