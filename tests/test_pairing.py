"""The discovery and pairing engine on files laid out as real tools write them.

mmsegmentation's custom folders (``imgs/X_img.jpg`` + ``gts/X_gt.png`` + ``splits/``),
Cityscapes ``_leftImg8bit`` / ``_gtFine_labelTrainIds``, nnU-Net channels, MONAI and StarDist
files side by side, VOCdevkit with two years, descriptor files given as PATH, and the audit
that found nothing to audit.
"""

from __future__ import annotations

import random
import io
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from audit_helpers import codes, found, run
from builders import colorize, jpeg_roundtrip, organic_mask, rgb_image, write_dataset_meta, write_json, write_jpeg, \
    write_list, write_nifti, write_png, write_tiff
from detection_builders import write_image, write_voc, write_yolo
from annotation_builders import coco_dataset, classification_csv
from labelguard.output import write_report
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.core.paths import inside_root
from labelguard.layouts.folders import describe_contents
from labelguard.layouts.pairing import pair_files, pair_in_folder


def mmseg_dataset(root: Path, n: int = 3, image_size=None) -> Path:
    """As mmsegmentation's test data: imgs/00000_img.jpg, gts/00000_gt.png, splits/train.txt."""
    for i in range(n):
        mask = organic_mask((32, 40), seed=i)
        write_png(root / "gts" / f"{i:05d}_gt.png", mask)
        size = image_size(i) if image_size else mask.shape
        write_jpeg(root / "imgs" / f"{i:05d}_img.jpg", rgb_image(size, seed=i))
    write_list(root / "splits" / "train.txt", [f"{i:05d}" for i in range(n)])
    return root


# ---- pairing by name ---------------------------------------------------------------------

@pytest.mark.code("LG002", "pass")
@pytest.mark.code("LG206", "fail")
def test_mmsegmentation_img_gt_suffixes_pair_and_sizes_are_compared(tmp_path):
    root = mmseg_dataset(tmp_path / "pseudo_dataset", image_size=lambda i: (32, 48) if i == 1 else (32, 40))
    report = run(root, workers=1)
    assert report.layouts == ["paired"]
    assert report.summary.samples == 3
    assert not found(report, "LG002")
    assert [Path(f.path).name for f in found(report, "LG206")] == ["00001_gt.png"]


@pytest.mark.code("LG206", "fail")
def test_cityscapes_left_img8bit_pairs_with_gtfine_label_train_ids(tmp_path):
    city = "frankfurt"
    for i, width in enumerate((64, 60)):
        name = f"{city}_000000_{i:06d}"
        write_png(tmp_path / "leftImg8bit" / "train" / city / f"{name}_leftImg8bit.png", rgb_image((32, width)))
        write_png(tmp_path / "gtFine" / "train" / city / f"{name}_gtFine_labelTrainIds.png",
                  organic_mask((32, 64), seed=i))
        write_png(tmp_path / "gtFine" / "train" / city / f"{name}_gtFine_color.png", rgb_image((32, 64)))
    report = run(tmp_path, workers=1)
    assert report.layouts == ["cityscapes"]
    assert report.summary.samples == 2
    assert not found(report, "LG002")
    assert [Path(f.path).name for f in found(report, "LG206")] == ["frankfurt_000000_000001_gtFine_labelTrainIds.png"]


@pytest.mark.code("LG002", "pass")
def test_nnunet_channels_of_one_case_pair_with_its_label(tmp_path):
    volume = np.zeros((8, 8, 4), dtype=np.uint8)
    for case in ("BRATS_001", "BRATS_002"):
        for channel in range(2):
            write_nifti(tmp_path / "imagesTr" / f"{case}_{channel:04d}.nii.gz", volume.astype(np.float32))
        write_nifti(tmp_path / "labelsTr" / f"{case}.nii.gz", volume)
    write_json(tmp_path / "dataset.json", {"labels": {"background": 0, "tumour": 1}, "channel_names": {"0": "T1"}})
    report = run(tmp_path, workers=1)
    assert report.layouts == ["nnunet"]
    assert report.summary.samples == 2
    assert not found(report, "LG002")


@pytest.mark.code("LG206", "fail")
def test_monai_image_and_label_side_by_side_audit_only_the_label(tmp_path):
    # MONAI's testing data: anatomical.nii next to anatomical_label.nii.gz.
    write_nifti(tmp_path / "anatomical.nii", np.random.default_rng(0).normal(size=(9, 9, 5)).astype(np.float32))
    write_nifti(tmp_path / "anatomical_label.nii.gz", np.ones((9, 9, 5), dtype=np.uint8))
    write_nifti(tmp_path / "moved.nii", np.zeros((9, 9, 5), dtype=np.float32))
    write_nifti(tmp_path / "moved_label.nii.gz", np.ones((9, 9, 4), dtype=np.uint8))
    report = run(tmp_path, workers=1)
    assert report.summary.samples == 2
    assert set(report.summary.found_values()) == {1}  # the float images were never read as labels
    assert [Path(f.path).name for f in found(report, "LG206")] == ["moved_label.nii.gz"]


def test_stardist_img_and_mask_tiffs_audit_only_the_masks(tmp_path):
    # StarDist's test data: img2d.tif / mask2d.tif, img3d.tif / mask3d.tif.
    rng = np.random.default_rng(1)
    write_tiff(tmp_path / "img2d.tif", rng.integers(0, 60000, size=(40, 40), dtype=np.uint16))
    write_tiff(tmp_path / "mask2d.tif", organic_mask((40, 40), classes=(0, 1, 2, 3)).astype(np.uint16))
    write_tiff(tmp_path / "img3d.tif", rng.normal(size=(6, 40, 40)).astype(np.float32))
    write_tiff(tmp_path / "mask3d.tif", np.stack([organic_mask((40, 40), seed=s) for s in range(6)]))
    report = run(tmp_path, workers=1)
    assert report.summary.samples == 2
    assert set(report.summary.found_values()) <= {0, 1, 2, 3}
    assert not found(report, "LG206")


def test_pairs_by_the_longest_common_stem():
    images = ["/d/img/scan.png", "/d/img/scan_2.png"]
    pairing = pair_files(images, ["/d/gt/scan_2_fixed.png", "/d/gt/scan_9.png"], "/d/img", "/d/gt")
    assert pairing.pairs == {"/d/gt/scan_2_fixed.png": "/d/img/scan_2.png", "/d/gt/scan_9.png": "/d/img/scan.png"}


def test_a_label_matching_two_images_is_paired_with_neither_and_none_is_an_orphan():
    pairing = pair_files(["/d/img/x.jpg", "/d/img/x.png", "/d/img/y.png"], ["/d/gt/x.png"], "/d/img", "/d/gt")
    assert pairing.pairs == {}
    assert pairing.ambiguous == {"/d/gt/x.png": ["/d/img/x.jpg", "/d/img/x.png"]}
    assert pairing.orphan_images == ["/d/img/y.png"]
    assert "1 label matches several images" in pairing.notes()[0]


def test_pairing_of_100k_shuffled_files_is_deterministic():
    # its speed is measured by benchmarks/bench_pairing.py, not here
    images = [f"/d/images/{i // 1000:03d}/{i:06d}_img.jpg" for i in range(100_000)]
    labels = [f"/d/gts/{i // 1000:03d}/{i:06d}_gt.png" for i in range(100_000)]
    shuffled_images, shuffled_labels = images[:], labels[:]
    random.Random(0).shuffle(shuffled_images)
    random.Random(1).shuffle(shuffled_labels)
    pairing = pair_files(shuffled_images, shuffled_labels, "/d/images", "/d/gts")
    assert pairing.pairs == dict(zip(labels, images))
    assert pairing.pairs == pair_files(images, labels, "/d/images", "/d/gts").pairs
    assert not pairing.orphan_images and not pairing.orphan_labels


def test_role_words_pair_in_one_folder_and_lone_files_stay_labels():
    pairing = pair_in_folder(["/d/img2d.tif", "/d/mask2d.tif", "/d/HGG_data_1.npy", "/d/HGG_label_1.npy",
                              "/d/alone.png"])
    assert pairing.pairs == {"/d/mask2d.tif": "/d/img2d.tif", "/d/HGG_label_1.npy": "/d/HGG_data_1.npy"}


def test_inside_root_is_one_policy():
    assert inside_root("/data/set/a.png", "/data/set")
    assert inside_root("/data/set", "/data/set/")
    assert not inside_root("/data/settings/a.png", "/data/set")
    assert not inside_root("/data/set/../other/a.png", "/data/set")


# ---- lists -------------------------------------------------------------------------------

@pytest.mark.code("LG206", "fail")
def test_geometry_is_checked_for_pairs_named_by_a_list(tmp_path):
    write_png(tmp_path / "img" / "a.png", rgb_image((32, 32)))
    write_png(tmp_path / "img" / "b.png", rgb_image((20, 32)))
    write_png(tmp_path / "lbl" / "a_seg.png", organic_mask((32, 32)))
    write_png(tmp_path / "lbl" / "b_seg.png", organic_mask((32, 32)))
    listing = write_list(tmp_path / "train.txt", ["img/a.png lbl/a_seg.png", "img/b.png lbl/b_seg.png"])
    report = run(tmp_path, workers=1, options=AuditOptions(lists=(str(listing),)))
    assert report.summary.samples == 2
    assert [Path(f.path).name for f in found(report, "LG206")] == ["b_seg.png"]


@pytest.mark.code("LG206", "fail")
def test_a_split_list_of_ids_selects_the_labels_and_keeps_their_images(tmp_path):
    root = mmseg_dataset(tmp_path / "data", n=3, image_size=lambda i: (32, 48) if i == 2 else (32, 40))
    write_list(root / "splits" / "val.txt", ["00002"])
    report = run(root, workers=1, options=AuditOptions(lists=(str(root / "splits" / "val.txt"),)))
    assert report.summary.samples == 1
    assert [Path(f.path).name for f in found(report, "LG206")] == ["00002_gt.png"]


@pytest.mark.code("LG206", "fail")
def test_masks_a_list_names_by_path_keep_their_images_from_a_relative_path(tmp_path, monkeypatch):
    # The list's entries resolve to the files discovery found, whatever form PATH was given in.
    root = mmseg_dataset(tmp_path / "data", n=3, image_size=lambda i: (32, 48) if i == 1 else (32, 40))
    listing = write_list(root / "splits" / "paths.txt", [f"gts/{i:05d}_gt.png" for i in range(3)])
    monkeypatch.chdir(tmp_path)
    report = run("data", workers=1, options=AuditOptions(lists=(str(listing),)))
    assert report.summary.samples == 3
    assert [Path(f.path).name for f in found(report, "LG206")] == ["00001_gt.png"]


# ---- PATH with --images / --masks --------------------------------------------------------

@pytest.mark.code("LG206", "fail")
def test_path_with_images_and_masks_pairs_inside_path(tmp_path, monkeypatch):
    root = mmseg_dataset(tmp_path / "data", image_size=lambda i: (30, 40) if i == 0 else (32, 40))
    write_png(root / "extra" / "00000_gt.png", organic_mask((32, 40)))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["audit", "data", "--images", "imgs", "--masks", "gts", "--no-config",
                                       "-f", "json", "-j", "1"])
    assert result.exit_code == 1, result.output
    assert '"LG206": 1' in result.output
    assert '"samples": 3' in result.output  # gts/ inside PATH only, not extra/


def test_path_with_masks_outside_it_is_a_usage_error(tmp_path):
    root = mmseg_dataset(tmp_path / "data")
    other = mmseg_dataset(tmp_path / "other")
    result = CliRunner().invoke(main, ["audit", str(root), "--masks", str(other / "gts")])
    assert result.exit_code == 2
    assert "--masks" in result.output and "is not inside the dataset PATH" in result.output


# ---- no silent all-clear -----------------------------------------------------------------

@pytest.mark.parametrize("make, says", [
    (lambda root: root.mkdir(), "an empty folder"),
    (lambda root: [write_image(root / f"{i}.jpg") for i in range(3)] and write_list(root / "a.txt", ["x"]),
     "3 .jpg images and 1 .txt file"),
])
def test_an_audit_of_nothing_exits_2_and_says_what_it_found(tmp_path, make, says):
    root = tmp_path / "data"
    make(root)
    report = run(root, workers=1)
    assert report.summary.samples == 0
    assert report.audited_nothing and says in report.audited_nothing
    assert report.exit_code() == 2
    result = CliRunner().invoke(main, ["audit", str(root), "--no-config"])
    assert result.exit_code == 2
    assert "nothing was audited" in result.output and says in result.output
    # The report's own words never read as a clean dataset's, nor suggest training on it.
    assert "No findings." not in result.output and "Nothing was checked" in result.output
    assert "labelguard.torch.guard" not in result.output
    page = tmp_path / "report.html"
    CliRunner().invoke(main, ["audit", str(root), "--no-config", "--output-format", "html", "--output-file", str(page)])
    assert "Nothing was checked" in page.read_text() and "No findings." not in page.read_text()


@pytest.mark.parametrize("args, given, suggested", [
    ([], None, "Pass --format or --masks DIR or --list FILE"),
    (["--format", "masks"], "--format was given", "Pass --masks DIR or --list FILE"),
])
def test_an_audit_of_nothing_suggests_only_the_options_not_given(tmp_path, args, given, suggested):
    root = tmp_path / "data"
    for index in range(3):
        write_image(root / "images" / f"{index}.jpg")
    result = CliRunner().invoke(main, ["audit", str(root), "--no-config", *args])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "nothing was audited" in text and suggested in text
    assert (given in text) if given else ("was given" not in text)
    if given:
        assert "Pass --format" not in text


def test_vocdevkit_with_two_years_audits_each(tmp_path):
    devkit = tmp_path / "VOCdevkit"
    write_voc(devkit / "VOC2007", {"000001": [("dog", (1, 1, 10, 10))]}, splits={"trainval": ["000001"]})
    write_voc(devkit / "VOC2012", {"2008_000002": [("cat", (1, 1, 10, 10))]}, splits={"trainval": ["2008_000002"]})
    report = run(devkit, workers=1)
    assert report.layouts == ["voc in VOC2007", "voc in VOC2012"]
    assert report.summary.samples == 2
    assert set(report.summary.class_objects) == {"dog", "cat"}
    assert report.audited_nothing is None


def test_a_dataset_of_a_folder_that_gave_nothing_to_audit_is_named(tmp_path):
    # A Cityscapes tree of colour masks only (no class ids to audit), beside one with train ids
    stem = "frankfurt_000000_000001"
    for name, suffix, mask in (("colours", "color", rgb_image((32, 64))),
                               ("classes", "labelTrainIds", organic_mask((32, 64)))):
        write_png(tmp_path / name / "leftImg8bit" / "train" / "frankfurt" / f"{stem}_leftImg8bit.png",
                  rgb_image((32, 64)))
        write_png(tmp_path / name / "gtFine" / "train" / "frankfurt" / f"{stem}_gtFine_{suffix}.png", mask)
    report = run(tmp_path, workers=1)
    assert report.layouts == ["cityscapes in classes", "cityscapes in colours"]
    assert report.summary.samples == 1 and report.audited_nothing is None
    assert any(note.startswith("cityscapes in colours: nothing was audited") for note in report.notes)
    assert not any(note.startswith("cityscapes in classes: nothing") for note in report.notes)


def test_train_and_val_trees_of_different_layouts_are_each_audited(tmp_path):
    mmseg_dataset(tmp_path / "train")
    write_yolo(tmp_path / "val", {"val": {"a": [(0, 0.5, 0.5, 0.2, 0.2)]}}, names=["person"])
    report = run(tmp_path, workers=1)
    assert report.layouts == ["paired in train", "yolo in val"]
    assert report.summary.kinds["mask"] == 3 and report.summary.kinds["yolo"] == 1


# ---- descriptor files as PATH ------------------------------------------------------------

def _no_unknown_extension(report):
    return not [f for f in found(report, "LG001") if "no known extension" in f.message]


def test_a_split_list_as_path_audits_the_dataset_through_it(tmp_path):
    root = mmseg_dataset(tmp_path / "pseudo_dataset", n=4)
    write_list(root / "splits" / "val.txt", ["00001", "00003"])
    report = run(root / "splits" / "val.txt", workers=1)
    assert report.layouts == ["paired"]
    assert report.summary.samples == 2
    assert _no_unknown_extension(report) and not found(report, "LG003")


def test_a_voc_imagesets_list_as_path_audits_its_annotations(tmp_path):
    root = write_voc(tmp_path / "VOC2007", {"000001": [("dog", (1, 1, 9, 9))], "000002": [("cat", (1, 1, 9, 9))]},
                     splits={"train": ["000002"]})
    report = run(root / "ImageSets" / "Main" / "train.txt", workers=1)
    assert report.layouts == ["voc"]
    assert set(report.summary.class_objects) == {"cat"}


def test_a_yolo_label_file_as_path_is_read_as_yolo_rows(tmp_path):
    root = write_yolo(tmp_path, {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2), (1, 0.3, 0.3, 0.1, 0.1)]}},
                      names=["person", "car"], yaml_name=None)
    report = run(root / "labels" / "train" / "a.txt", workers=1)
    assert report.layouts == ["yolo"]
    assert report.summary.samples == 1 and _no_unknown_extension(report)


def test_nnunet_dataset_json_as_path_audits_the_dataset(tmp_path):
    for case in ("c1", "c2"):
        write_nifti(tmp_path / "imagesTr" / f"{case}_0000.nii.gz", np.zeros((6, 6, 3), dtype=np.float32))
        write_nifti(tmp_path / "labelsTr" / f"{case}.nii.gz", np.ones((6, 6, 3), dtype=np.uint8))
    write_json(tmp_path / "dataset.json", {"labels": {"background": 0, "liver": 1}})
    report = run(tmp_path / "dataset.json", workers=1)
    assert report.layouts == ["nnunet"] and report.summary.samples == 2
    assert report.spec.classes == ("background", "liver")


def test_other_descriptor_files_as_path(tmp_path):
    coco_json = coco_dataset(tmp_path / "coco")
    voc = write_voc(tmp_path / "voc", {"000001": [("dog", (1, 1, 9, 9))]})
    table = classification_csv(tmp_path / "csv", {"a.jpg": "cat", "b.jpg": "dog"})
    write_yolo(tmp_path / "yolo", {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)]}}, names=["person"])
    write_list(tmp_path / "yolo" / "classes.txt", ["person"])
    for path, layout in ((coco_json, "coco"), (voc / "Annotations" / "000001.xml", "voc"), (table, "csv"),
                         (tmp_path / "yolo" / "data.yaml", "yolo"), (tmp_path / "yolo" / "classes.txt", "yolo")):
        report = run(path, workers=1)
        assert report.layouts == [layout], path
        assert report.summary.samples >= 1 and _no_unknown_extension(report), path


# ---- JPEG masks in a label folder --------------------------------------------------------

@pytest.mark.code("LG202", "fail")
@pytest.mark.parametrize("path", ["", "masks"])
def test_jpeg_masks_in_a_label_folder_are_audited(tmp_path, path):
    for i in range(2):
        mask = organic_mask((32, 32), classes=(0, 80, 160), seed=i)
        write_png(tmp_path / "images" / f"{i}.png", rgb_image((32, 32)))
        write_jpeg(tmp_path / "masks" / f"{i}.jpg", mask)
    assert len(np.unique(jpeg_roundtrip(organic_mask((32, 32), classes=(0, 80, 160))))) > 3
    report = run(tmp_path / path, workers=1)
    assert report.summary.samples == 2
    assert len(found(report, "LG202")) == 2
    assert "LG002" not in codes(report)


def test_describe_contents_counts_by_extension(tmp_path):
    for i in range(12):
        write_image(tmp_path / "JPEGImages" / f"{i}.jpg")
    for name in ("a", "b", "c"):
        write_list(tmp_path / "ImageSets" / f"{name}.txt", ["1"])
    assert describe_contents(str(tmp_path)) == "12 .jpg images and 3 .txt files"


# ---- folders inside a dataset as PATH ----------------------------------------------------

@pytest.mark.code("LG003", "pass")
@pytest.mark.code("LG002", "pass")
def test_voc_annotations_folder_as_path_finds_its_images_and_split_lists(tmp_path):
    root = write_voc(tmp_path / "VOC2012", {"2008_000001": [("dog", (1, 1, 9, 9))]},
                     splits={"train": ["2008_000001"], "test": ["2008_000002"]})
    write_image(root / "JPEGImages" / "2008_000002.jpg")  # a test image, annotated nowhere
    report = run(root / "Annotations", workers=1)
    assert report.layouts == ["voc"] and report.summary.samples == 1
    assert not found(report, "LG003") and not found(report, "LG002")


@pytest.mark.code("LG003", "pass")
def test_voc_per_class_list_as_path_reads_the_id_not_the_flag(tmp_path):
    # ImageSets/Main/<class>_<split>.txt: "id  1" (present) or "id -1" (absent).
    root = write_voc(tmp_path / "VOC2007", {"000001": [("dog", (1, 1, 9, 9))], "000002": [("cat", (1, 1, 9, 9))]})
    write_list(root / "ImageSets" / "Main" / "dog_train.txt", ["000001  1", "000002 -1"])
    report = run(root / "ImageSets" / "Main" / "dog_train.txt", workers=1)
    assert report.summary.samples == 2
    assert not found(report, "LG003")


def test_voc_imagesets_folder_as_path_audits_its_voc_folder(tmp_path):
    root = write_voc(tmp_path / "VOC2007", {"000001": [("dog", (1, 1, 9, 9))]}, splits={"train": ["000001"]})
    report = run(root / "ImageSets", workers=1)
    assert report.layouts == ["voc"] and report.summary.samples == 1


@pytest.mark.code("LG203", "pass")
def test_an_image_folder_as_path_is_not_audited_as_masks(tmp_path):
    for i in range(2):
        write_png(tmp_path / "images" / f"{i}.png", rgb_image((16, 16), seed=i))
    report = run(tmp_path / "images", workers=1)
    assert not found(report, "LG203")
    assert report.audited_nothing and "2 .png images" in report.audited_nothing
    assert any("is an image folder" in note for note in report.notes)


def test_a_yolo_split_label_folder_as_path(tmp_path):
    root = write_yolo(tmp_path, {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)], "b": [(0, 0.4, 0.4, 0.1, 0.1)]}},
                      names=["person"])
    (root / "images" / "train" / "b.jpg").unlink()
    report = run(root / "labels" / "train", workers=1)
    assert report.layouts == ["yolo"] and report.summary.samples == 2
    assert [Path(f.path).name for f in found(report, "LG002")] == ["b.txt"]


@pytest.mark.code("LG203", "pass")
def test_a_label_folder_as_path_takes_the_colour_map_of_its_dataset(tmp_path):
    colors = [(0, 0, 0), (128, 0, 0), (0, 128, 0)]
    write_dataset_meta(tmp_path / "dataset_meta.json", ["background", "road", "tree"], colors)
    for i in range(2):
        write_png(tmp_path / "images" / f"{i}.png", rgb_image((32, 32), seed=i))
        write_png(tmp_path / "masks" / f"{i}.png", colorize(organic_mask((32, 32), seed=i), colors))
    for path in (tmp_path / "masks", tmp_path / "dataset_meta.json"):
        report = run(path, workers=1)
        assert report.summary.samples == 2, path
        assert not found(report, "LG203") and set(report.summary.found_values()) <= {0, 1, 2}, path


@pytest.mark.code("LG101", "pass")
def test_datasets_in_one_folder_are_each_checked_against_their_own_class_list(tmp_path):
    write_voc(tmp_path / "VOC2007", {"000001": [("dog", (1, 1, 9, 9))]}, labels=["dog"])
    write_voc(tmp_path / "VOC2012", {"000001": [("cat", (1, 1, 9, 9))]}, labels=["cat"])
    report = run(tmp_path, workers=1)
    assert report.layouts == ["voc in VOC2007", "voc in VOC2012"]
    assert not found(report, "LG101")
    assert [(Path(path).name, spec.classes) for path, spec in report.specs] == [
        ("VOC2007", ("dog",)), ("VOC2012", ("cat",))]


def test_each_dataset_with_its_own_class_list_judges_its_classes_table_by_it(tmp_path):
    write_voc(tmp_path / "VOC2007", {"000001": [("dog", (1, 1, 9, 9))]}, labels=["dog"])
    write_voc(tmp_path / "VOC2012", {"000001": [("cat", (1, 1, 9, 9))]}, labels=["cat"])
    text = io.StringIO()
    write_report(run(tmp_path, workers=1), "text", text)
    rows = [line.split() for line in text.getvalue().splitlines() if line.strip().startswith(("cat ", "dog "))]
    assert rows == [["dog", "1", "1", "yes"], ["cat", "1", "1", "yes"]], rows


def write_mapillary(root, names, masks: dict, version: str = "v2.0"):
    """A Mapillary Vistas tree: config_<version>.json, <split>/images, <split>/<version>/labels
    and the instance masks beside them."""
    import json as _json

    from builders import write_jpeg, write_png

    (root / f"config_{version}.json").parent.mkdir(parents=True, exist_ok=True)
    (root / f"config_{version}.json").write_text(_json.dumps(
        {"labels": [{"name": n, "color": [i, i, i], "instances": True} for i, n in enumerate(names)],
         "version": version}))
    for stem, mask in masks.items():
        write_jpeg(root / "training" / "images" / f"{stem}.jpg", np.full((*mask.shape, 3), 100, np.uint8))
        write_png(root / "training" / version / "labels" / f"{stem}.png", mask)
        write_png(root / "training" / version / "instances" / f"{stem}.png", mask.astype(np.uint16) * 256 + 1)


@pytest.mark.code("LG201", "fail")
def test_mapillary_labels_are_checked_against_the_config_classes(tmp_path):
    from audit_helpers import codes, found, run

    good = np.zeros((6, 8), np.uint8)
    good[:, 4:] = 1
    bad = good.copy()
    bad[0, 0] = 2
    write_mapillary(tmp_path, ["animal--bird", "construction--barrier--fence"], {"a": good, "b": bad})
    report = run(tmp_path)
    assert report.layouts == ["mapillary"]
    [outside] = found(report, "LG201")
    assert outside.path.endswith("b.png") and "2" in outside.message
    assert report.summary.samples == 2  # the instance masks are left out
    assert "LG206" not in codes(report)


@pytest.mark.code("LG206", "fail")
def test_mapillary_labels_pair_with_the_split_images(tmp_path):
    from audit_helpers import found, run
    from builders import write_jpeg

    write_mapillary(tmp_path, ["a", "b"], {"x": np.zeros((6, 8), np.uint8)})
    write_jpeg(tmp_path / "training" / "images" / "x.jpg", np.full((5, 8, 3), 100, np.uint8))
    [mismatch] = found(run(tmp_path), "LG206")
    assert mismatch.path.endswith("x.png")


def split_folders(root: Path, label_suffix: str, mask_name, colours: bool = False, sizes=None) -> Path:
    """Image folders beside label folders named after them (train/ + train_labels/, Kaggle's
    CamVid; train/ + trainannot/, SegNet's): the images are photographs of 32x48."""
    palette = np.array([(128, 128, 128), (128, 0, 0), (192, 192, 128)], np.uint8)
    for split in ("train", "val"):
        for i in range(3):
            stem = f"0001TP_{i:06d}"
            write_png(root / split / f"{stem}.png", rgb_image((32, 48), seed=i))
            shape = (sizes or {}).get((split, i), (32, 48))
            mask = organic_mask(shape, (0, 1, 2), seed=i)
            write_png(root / f"{split}{label_suffix}" / mask_name(stem), palette[mask] if colours else mask)
    return root


@pytest.mark.code("LG206", "pass")
@pytest.mark.parametrize("suffix, mask_name, colours", [
    ("_labels", lambda stem: f"{stem}_L.png", True),  # Kaggle's CamVid (colours, class_dict.csv)
    ("annot", lambda stem: f"{stem}.png", False),  # SegNet's CamVid (indices)
    ("_masks", lambda stem: f"{stem}_mask.png", False),  # Carvana-style
])
def test_image_folders_beside_their_label_folders_are_images_not_labels(tmp_path, suffix, mask_name, colours):
    split_folders(tmp_path, suffix, mask_name, colours)
    if colours:
        (tmp_path / "class_dict.csv").write_text("name,r,g,b\nSky,128,128,128\nBuilding,128,0,0\nPole,192,192,128\n")
    report = run(tmp_path, LabelSpec(num_classes=3))
    assert len(report.files) == 6 and all(suffix in Path(f).parts[-2] for f in report.files), report.files
    assert not codes(report) & {"LG201", "LG203", "LG206", "LG002"}, [f.message for f in report.findings]


@pytest.mark.code("LG206", "fail")
@pytest.mark.code("LG002", "fail")
def test_split_folders_pair_by_name_for_geometry_and_orphans(tmp_path):
    split_folders(tmp_path, "_labels", lambda stem: f"{stem}_L.png", sizes={("val", 1): (30, 48)})
    (tmp_path / "train" / "0001TP_000009.png").write_bytes((tmp_path / "train" / "0001TP_000000.png").read_bytes())
    report = run(tmp_path, LabelSpec(num_classes=3))
    [geometry] = found(report, "LG206")
    assert geometry.path.endswith("val_labels/0001TP_000001_L.png") and "val/0001TP_000001.png" in geometry.message
    [orphan] = found(report, "LG002")
    assert orphan.path.endswith("train/0001TP_000009.png")
