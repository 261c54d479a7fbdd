"""Roles from evidence: which files are labels and which are the images of labels, by the
pairing conventions of the tools that wrote them (``labelguard.layouts.conventions``).

Each test writes a tree shaped like one tool's export (names, folders, file kinds as the real
datasets in ``../shared/realworld2`` have them) and checks that the images are never audited
as labels, that each label is paired with its image (a size mismatch is LG206), and that the
findings are the data's own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audit_helpers import codes, found, run
from builders import colorize, organic_mask, rgb_image, write_jpeg, write_png, write_tiff
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions, discover
from labelguard.layouts.base import LAYOUTS
from labelguard.layouts.pairing import pair_files

DEEPGLOBE_COLORS = [(0, 255, 255), (255, 255, 0), (255, 0, 255), (0, 255, 0), (0, 0, 255), (255, 255, 255)]
ISPRS_COLORS = [(255, 255, 255), (0, 0, 255), (0, 255, 255), (0, 255, 0), (255, 255, 0), (255, 0, 0)]


def roles(root: Path) -> tuple[dict[str, str | None], set[str]]:
    """({label file name: its image's name}, layouts) of what discovery makes of ``root``."""
    discovery = discover(str(root), AuditOptions())
    labels = {Path(task.path).name: Path(task.image).name if task.image else None for task in discovery.tasks}
    return labels, {discovery.layout, *(layout for _, layout in discovery.datasets)}


def audited(report) -> set[str]:
    return {Path(path).name for path in report.files}


def deepglobe_torchgeo(root: Path, mismatch: int | None = None) -> Path:
    """As torchgeo keeps DeepGlobe Land Cover: data/<split>_data/images/N_sat.jpg and
    masks/N_mask.png, RGB colour masks."""
    for split, numbers in (("training_data", (1, 2, 3)), ("test_data", (8, 9))):
        for n in numbers:
            size = (24, 20) if n == mismatch else (20, 20)
            write_jpeg(root / "data" / split / "images" / f"{n}_sat.jpg", rgb_image(size, seed=n))
            mask = organic_mask((20, 20), classes=(0, 1, 2), seed=n)
            write_png(root / "data" / split / "masks" / f"{n}_mask.png", colorize(mask, DEEPGLOBE_COLORS))
    return root


@pytest.mark.code("LG203", "fail")
def test_deepglobe_is_read_as_masks_beside_their_sat_images_not_as_imagefolder_classes(tmp_path):
    root = deepglobe_torchgeo(tmp_path / "deepglobe", mismatch=2)
    evidence = LAYOUTS["imagefolder"].detect(str(root / "data"), AuditOptions())
    assert not evidence and any("images/" in reason for reason in evidence.against)
    labels, layouts = roles(root / "data")
    assert "imagefolder" not in layouts
    assert labels == {f"{n}_mask.png": f"{n}_sat.jpg" for n in (1, 2, 3, 8, 9)}
    report = run(root / "data", workers=1)
    assert audited(report) == set(labels)
    # The colour masks are opened: without DeepGlobe's colour map they are colour masks.
    assert {Path(f.path).name for f in found(report, "LG203")} == set(labels)
    assert [Path(f.path).name for f in found(report, "LG206")] == ["2_mask.png"]
    assert not found(report, "LG002")


def test_class_folders_of_sat_images_beside_their_masks_are_no_imagefolder(tmp_path):
    # DeepGlobe as published: land_train/ holds N_sat.jpg beside N_mask.png.
    for split in ("land_train", "land_valid"):
        for n in (1, 2):
            write_jpeg(tmp_path / split / f"{n}_sat.jpg", rgb_image((16, 16), seed=n))
            write_png(tmp_path / split / f"{n}_mask.png", colorize(organic_mask((16, 16), seed=n), DEEPGLOBE_COLORS))
    evidence = LAYOUTS["imagefolder"].detect(str(tmp_path), AuditOptions())
    assert not evidence
    assert any("1_mask.png is the label of 1_sat.jpg" in reason for reason in evidence.against)
    labels, layouts = roles(tmp_path)
    assert layouts == {"masks"}
    assert labels == {f"{n}_mask.png": f"{n}_sat.jpg" for n in (1, 2)}


def roboflow_png_masks(root: Path, faults: bool = False) -> Path:
    """As Roboflow's "PNG Masks for Semantic Segmentation" export writes a split:
    <name>.jpg beside <name>_mask.png (8-bit class indices) and _classes.csv. With
    ``faults``: a value the class table lacks, a mask whose size is not its photo's, a photo
    whose mask is missing."""
    split = root / "test"
    split.mkdir(parents=True)
    (split / "_classes.csv").write_text("Pixel Value, Class\n0, background\n1, door\n2, stair\n3, wall\n")
    for i in range(4):
        name = f"frame_{i:04d}_jpg.rf.{i:032x}"
        mask = organic_mask((32, 40), classes=(0, 1, 2, 3), seed=i)
        if faults and i == 1:
            mask[0, 0] = 11
        write_png(split / f"{name}_mask.png", mask)
        write_jpeg(split / f"{name}.jpg", rgb_image((36, 40) if faults and i == 2 else (32, 40), seed=i))
    if faults:
        write_jpeg(split / f"frame_0009_jpg.rf.{9:032x}.jpg", rgb_image((32, 40), seed=9))
    return root


def test_roboflow_png_mask_export_is_read_as_masks_with_its_class_table(tmp_path):
    root = roboflow_png_masks(tmp_path / "export")
    evidence = LAYOUTS["csv"].detect(str(root / "test"), AuditOptions())
    assert not evidence and any("_classes.csv is a class table" in reason for reason in evidence.against)
    labels, layouts = roles(root / "test")
    assert layouts == {"masks"}
    assert all(mask.endswith("_mask.png") and image == mask[:-len("_mask.png")] + ".jpg"
               for mask, image in labels.items())
    report = run(root / "test", workers=1)
    assert report.spec.classes == ("background", "door", "stair", "wall")
    assert len(audited(report)) == 4 and all(name.endswith("_mask.png") for name in audited(report))
    assert not [f for f in report.findings if f.severity is Severity.ERROR]
    assert "LG101" not in codes(report)


@pytest.mark.code("LG002", "fail")
def test_the_faults_planted_in_a_roboflow_export_are_reported(tmp_path):
    root = roboflow_png_masks(tmp_path / "export", faults=True)
    report = run(root / "test", workers=1)
    assert [f.data["values"] for f in found(report, "LG201")] == [[11]]
    assert [Path(f.path).name for f in found(report, "LG206")] == [f"frame_0002_jpg.rf.{2:032x}_mask.png"]
    assert [Path(f.path).name for f in found(report, "LG002")] == [f"frame_0009_jpg.rf.{9:032x}.jpg"]
    assert not {"LG101", "LG202", "LG203", "LG204"} & codes(report)  # no photo audited as a mask


@pytest.mark.code("LG002", "pass")
def test_photos_beside_masks_without_a_naming_convention_are_not_orphans(tmp_path):
    # 0001.png masks beside unrelated JPEGs: no convention pairs them, so none is an orphan.
    write_png(tmp_path / "0001.png", organic_mask((16, 16)))
    write_jpeg(tmp_path / "cover.jpg", rgb_image((16, 16)))
    report = run(tmp_path, workers=1)
    assert audited(report) == {"0001.png"} and not found(report, "LG002")


def levircd(root: Path, mismatch: str | None = None) -> Path:
    """As LEVIR-CD (and torchgeo's copy): A/ and B/ hold the photos before and after, label/
    the change mask of both, under the same names."""
    for split in ("train", "val", "test"):
        for i in range(2):
            name = f"{split}_{i}.png"
            write_png(root / "A" / name, rgb_image((32, 32), seed=i))
            write_png(root / "B" / name, rgb_image((32, 32), seed=i + 10))
            size = (40, 32) if name == mismatch else (32, 32)
            write_png(root / "label" / name, (organic_mask(size, classes=(0, 1), seed=i) * 255).astype(np.uint8))
    return root


@pytest.mark.code("LG203", "pass")
def test_change_detection_photos_before_and_after_are_the_images_of_their_label(tmp_path):
    levircd(tmp_path / "levircd", mismatch="val_1.png")
    labels, _ = roles(tmp_path)
    assert labels == {name: name for name in labels} and len(labels) == 6
    report = run(tmp_path, workers=1)
    assert {Path(path).parent.name for path in report.files} == {"label"}
    assert not found(report, "LG203") and not found(report, "LG002")
    assert [Path(f.path).name for f in found(report, "LG206")] == ["val_1.png"]


def test_a_folder_named_a_is_no_image_folder_when_nothing_pairs_with_it(tmp_path):
    # A/ and B/ beside label/ are photos only where their files pair with the labels.
    write_png(tmp_path / "A" / "x.png", organic_mask((16, 16), seed=1))
    write_png(tmp_path / "B" / "y.png", organic_mask((16, 16), seed=2))
    write_png(tmp_path / "label" / "z.png", organic_mask((16, 16), seed=3))
    labels, _ = roles(tmp_path)
    assert set(labels) == {"x.png", "y.png", "z.png"}


@pytest.mark.code("LG207", "pass")
@pytest.mark.code("LG205", "fail")
def test_loveda_image_folders_are_never_audited_even_in_a_split_without_masks(tmp_path):
    for split, region in (("Train", "Rural"), ("Val", "Urban"), ("Test", "Rural")):
        write_png(tmp_path / split / region / "images_png" / "01.png", rgb_image((8, 8)))
        if split != "Test":
            write_png(tmp_path / split / region / "masks_png" / "01.png", np.zeros((8, 8), np.uint8))
    report = run(tmp_path, workers=1)
    assert {Path(path).parent.name for path in report.files} == {"masks_png"}
    assert not found(report, "LG207") and not found(report, "LG002")
    # The masks hold no-data only (LoveDA's 0): that is theirs to say.
    assert {Path(f.path).parent.name for f in found(report, "LG205")} == {"masks_png"}


@pytest.mark.code("LG002", "pass")
def test_gid15_test_images_without_annotations_are_a_split_not_orphans(tmp_path):
    gid = tmp_path / "GID"
    for split in ("train", "val", "test"):
        for i in range(2):
            stem = f"GF2_PMS1__L1A000{i}{split}-MSS1"
            write_tiff(gid / "img_dir" / split / f"{stem}.tif", rgb_image((4, 6), seed=i))
            if split != "test":
                write_png(gid / "ann_dir" / split / f"{stem}_15label.png", organic_mask((4, 6), seed=i))
    labels, layouts = roles(tmp_path)
    assert labels == {f"GF2_PMS1__L1A000{i}{s}-MSS1_15label.png": f"GF2_PMS1__L1A000{i}{s}-MSS1.tif"
                      for s in ("train", "val") for i in range(2)}
    report = run(tmp_path, workers=1)
    assert audited(report) == set(labels)
    assert not found(report, "LG002") and not found(report, "LG207")
    assert any("2 images in" in note and "test" in note and "not paired" in note for note in report.notes)


def test_pairing_takes_an_image_folder_without_labels_for_a_split_not_for_orphans(tmp_path):
    images = [str(tmp_path / "img" / split / name) for split, name in (("train", "a.tif"), ("test", "a.tif"),
                                                                        ("train", "b.tif"))]
    labels = [str(tmp_path / "ann" / "train" / "a_15label.png")]
    pairing = pair_files(images, labels, str(tmp_path / "img"), str(tmp_path / "ann"))
    assert pairing.orphan_images == [str(tmp_path / "img" / "train" / "b.tif")]
    assert pairing.unlabelled == {str(tmp_path / "img" / "test"): [str(tmp_path / "img" / "test" / "a.tif")]}
    assert "1 image in" in pairing.notes("mask")[0]


@pytest.mark.code("LG207", "pass")
def test_potsdam_tiles_are_the_images_of_the_labels_beside_their_folder(tmp_path):
    for tile in ("2_10", "2_11"):
        write_tiff(tmp_path / "4_Ortho_RGBIR" / f"top_potsdam_{tile}_RGBIR.tif",
                   np.dstack([rgb_image((6, 6)), rgb_image((6, 6), seed=1)[..., 0]]))
        label = colorize(organic_mask((6, 6), classes=(0, 1, 2), seed=3), ISPRS_COLORS)
        write_tiff(tmp_path / f"top_potsdam_{tile}_label.tif", label)
    labels, _ = roles(tmp_path)
    assert labels == {f"top_potsdam_{t}_label.tif": f"top_potsdam_{t}_RGBIR.tif" for t in ("2_10", "2_11")}
    report = run(tmp_path, workers=1)
    assert audited(report) == set(labels)
    assert not found(report, "LG207")
    assert {Path(f.path).name for f in found(report, "LG203")} == set(labels)  # ISPRS colour labels, no map


def test_vaihingen_top_tiles_share_their_names_with_the_labels_and_stay_images(tmp_path):
    for area in (1, 11):
        write_tiff(tmp_path / "top" / f"top_mosaic_09cm_area{area}.tif", rgb_image((6, 6), seed=area))
        write_tiff(tmp_path / f"top_mosaic_09cm_area{area}.tif",
                   colorize(organic_mask((6, 6), classes=(0, 1, 2), seed=area), ISPRS_COLORS))
    discovery = discover(str(tmp_path), AuditOptions())
    assert {(Path(t.path).parent.name, Path(t.image).parent.name) for t in discovery.tasks} == {
        (tmp_path.name, "top")}
    assert len(discovery.tasks) == 2


def test_a_folder_named_top_whose_files_pair_with_nothing_holds_masks(tmp_path):
    write_png(tmp_path / "top" / "a.png", organic_mask((8, 8), seed=1))
    write_png(tmp_path / "b.png", organic_mask((8, 8), seed=2))
    labels, _ = roles(tmp_path)
    assert labels == {"a.png": None, "b.png": None}


@pytest.mark.code("LG201", "pass")
def test_the_same_folder_holds_both_roles(tmp_path):
    # MONAI's testing data: image volumes beside their _label volumes; a mask named after
    # its photo; masks of a convention-free name beside them.
    write_png(tmp_path / "case_image.png", rgb_image((32, 32))[..., 0])  # a grey photo
    write_png(tmp_path / "case_label.png", organic_mask((32, 32)))
    write_jpeg(tmp_path / "shot.jpg", rgb_image((32, 32), seed=2))
    write_png(tmp_path / "shot_mask.png", organic_mask((32, 32), seed=2))
    labels, _ = roles(tmp_path)
    assert labels == {"case_label.png": "case_image.png", "shot_mask.png": "shot.jpg"}
    report = run(tmp_path, LabelSpec(num_classes=3), workers=1)
    # The photo paired as an image is never "an image, not a label" (LG201), nor any label finding.
    assert audited(report) == set(labels)
    assert not [f for f in report.findings if f.path and Path(f.path).name in ("case_image.png", "shot.jpg")]


@pytest.mark.code("LG206", "fail")
def test_landcover_tiles_x_m_png_are_the_labels_of_the_photos_of_their_name(tmp_path):
    # LandCover.ai's output/: the tiles cut from each scene, x.jpg beside x_m.png.
    for index in range(3):
        write_jpeg(tmp_path / f"M-33-20_{index}.jpg", rgb_image((32, 24) if index == 2 else (32, 32), seed=index))
        write_png(tmp_path / f"M-33-20_{index}_m.png", organic_mask((32, 32), seed=index))
    labels, _ = roles(tmp_path)
    assert labels == {f"M-33-20_{index}_m.png": f"M-33-20_{index}.jpg" for index in range(3)}
    report = run(tmp_path, LabelSpec(num_classes=3), workers=1)
    assert [(f.code, Path(f.path).name) for f in report.findings if f.severity == Severity.ERROR] == [
        ("LG206", "M-33-20_2_m.png")]


@pytest.mark.parametrize("given", ["A", "B"])
def test_a_change_detection_photo_folder_given_as_path_is_not_read_as_labels(tmp_path, given):
    levircd(tmp_path)
    discovery = discover(str(tmp_path / given), AuditOptions())
    assert list(discovery.tasks) == []
    assert any("is an image folder (images of the labels in label/ beside it" in note for note in discovery.notes)


def test_an_image_split_beside_its_label_split_given_as_path_is_not_read_as_labels(tmp_path):
    # Kaggle's CamVid: train/ holds PNG photos, train_labels/ their colour masks.
    for i in range(2):
        write_png(tmp_path / "train" / f"0001TP_{i:06d}.png", rgb_image((8, 8), seed=i))
        write_png(tmp_path / "train_labels" / f"0001TP_{i:06d}_L.png", colorize(organic_mask((8, 8)), ISPRS_COLORS))
    discovery = discover(str(tmp_path / "train"), AuditOptions())
    assert list(discovery.tasks) == []
    assert any("train_labels/ beside it" in note for note in discovery.notes)
    forced = discover(str(tmp_path / "train"), AuditOptions(format="masks"))
    assert len(list(forced.tasks)) == 2  # the user's word: audited as masks


@pytest.mark.code("LG001", "fail")
def test_a_class_table_that_cannot_be_read_is_lg001_and_the_masks_are_still_audited(tmp_path):
    root = roboflow_png_masks(tmp_path / "export")
    (root / "test" / "_classes.csv").write_text("Pixel Value, Class\n0, background\nwall, 1\n")
    report = run(root / "test", workers=1)
    assert [f.message for f in found(report, "LG001", "_classes.csv")] == [
        "class table: row 3 of _classes.csv is not an integer value and a class name: 'wall,  1'"]
    assert len(audited(report)) == 4 and not report.spec.is_known


@pytest.mark.code("LG005", "fail")
def test_a_class_table_linking_out_of_the_dataset_is_not_read(tmp_path):
    root = roboflow_png_masks(tmp_path / "export")
    private = tmp_path / "private.csv"
    private.write_text("Pixel Value, Class\n0, secret\n")
    (root / "test" / "_classes.csv").unlink()
    (root / "test" / "_classes.csv").symlink_to(private)
    report = run(root / "test", workers=1)
    assert found(report, "LG005", "_classes.csv") and not report.spec.is_known
    assert "secret" not in str([f.message for f in report.findings] + report.notes)
