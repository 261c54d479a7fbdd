"""VOC and YOLO pair and resolve their lists through the one pairing engine, on files laid
out as the real tools write them: a VOCdevkit with VOC2007 and VOC2012 side by side,
darknet's voc_label.py lists, labelme2voc output, Ultralytics data.yaml variants and the
darknet exports of CVAT and Datumaro (obj.data)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit_helpers import codes, found, run
from builders import write_png
from detection_builders import write_darknet, write_image, write_labelme2voc, write_voc, write_yolo, yolo_rows
from labelguard.layouts import AuditOptions
from labelguard.core.paths import DisplayNames, display_path
from labelguard.layouts.lists import ListRule, resolve_entry
from labelguard.rules._entries import ENTRY_FINDINGS
from labelguard.layouts.pairing import pair_derived, strip_extension
from labelguard.layouts.yolo import label_files

BOX = (1, 1, 10, 10)
ROW = (0, 0.5, 0.5, 0.2, 0.3)


def audited(report) -> list[str]:
    return sorted(Path(p).name for p in report.files)


def lists(*paths: Path) -> AuditOptions:
    return AuditOptions(lists=tuple(str(p) for p in paths))


def vocdevkit(root: Path) -> Path:
    """VOCdevkit/VOC2007 (trainval and test, both annotated, as VOC2007's test set was
    published) and VOCdevkit/VOC2012 (trainval annotated, its test split images only, a
    per-class list, SegmentationClass masks for some ids and ImageSets/Segmentation)."""
    devkit = root / "VOCdevkit"
    write_voc(devkit / "VOC2007", {"000001": [("dog", BOX)], "000002": [("cat", BOX)]},
              splits={"trainval": ["000001"], "test": ["000002"]})
    ids = ["2008_000001", "2008_000002", "2008_000003"]
    voc = write_voc(devkit / "VOC2012", {i: [("cat", BOX)] for i in ids}, splits={"trainval": ids})
    main = voc / "ImageSets" / "Main"
    (main / "test.txt").write_text("2009_000001\n", encoding="utf-8")
    (main / "cat_trainval.txt").write_text("2008_000001  1\n2008_000002 -1\n2008_000003  1\n", encoding="utf-8")
    write_image(voc / "JPEGImages" / "2009_000001.jpg", (16, 12))
    write_png(voc / "SegmentationClass" / "2008_000001.png", np.zeros((12, 16), np.uint8))
    write_png(voc / "SegmentationClass" / "2008_000002.png", np.zeros((10, 16), np.uint8))  # not the JPEG's size
    segmentation = voc / "ImageSets" / "Segmentation"
    segmentation.mkdir(parents=True)
    (segmentation / "train.txt").write_bytes(b"2008_000001\r\n2008_000002\r\n")
    (segmentation / "test.txt").write_text("2009_000001\n", encoding="utf-8")
    return devkit


# ---- VOC ---------------------------------------------------------------------------------

@pytest.mark.code("LG002", "pass")
@pytest.mark.code("LG003", "pass")
def test_vocdevkit_years_side_by_side_each_pair_and_read_their_own_split_lists(tmp_path):
    devkit = vocdevkit(tmp_path)
    report = run(devkit, workers=1)
    assert report.layouts == ["voc in VOC2007", "voc in VOC2012"]
    assert report.summary.kinds == {"voc": 5, "mask": 2}
    # VOC2012's test images come without annotations: neither missing list entries nor orphans.
    assert not found(report, "LG003") and not found(report, "LG002")
    assert [Path(f.path).name for f in found(report, "LG206")] == ["2008_000002.png"]


@pytest.mark.code("LG206", "fail")
def test_a_main_split_list_selects_annotations_and_masks_without_missing_masks(tmp_path):
    voc = vocdevkit(tmp_path) / "VOC2012"
    report = run(voc, workers=1, options=lists(voc / "ImageSets" / "Main" / "trainval.txt"))
    # Segmentation masks exist for two of the three ids: the third is no missing entry.
    assert not found(report, "LG003")
    assert audited(report) == ["2008_000001.png", "2008_000001.xml", "2008_000002.png", "2008_000002.xml",
                               "2008_000003.xml"]
    assert [Path(f.path).name for f in found(report, "LG206")] == ["2008_000002.png"]


@pytest.mark.code("LG004", "fail")
def test_a_segmentation_split_list_is_read_once_and_its_test_split_needs_no_masks(tmp_path):
    voc = vocdevkit(tmp_path) / "VOC2012"
    segmentation = voc / "ImageSets" / "Segmentation"
    report = run(voc, workers=1, options=lists(segmentation / "train.txt"))
    [crlf] = found(report, "LG004")
    assert crlf.data["problem"] == "crlf"
    assert report.summary.kinds == {"voc": 2, "mask": 2} and not found(report, "LG003")
    report = run(voc, workers=1, options=lists(segmentation / "test.txt"))
    assert not found(report, "LG003") and report.summary.samples == 0


def test_a_per_class_list_as_path_selects_its_ids_with_their_masks(tmp_path):
    voc = vocdevkit(tmp_path) / "VOC2012"
    report = run(voc / "ImageSets" / "Main" / "cat_trainval.txt", workers=1)
    assert report.summary.kinds == {"voc": 3, "mask": 2} and not found(report, "LG003")


def test_voc_label_py_lists_of_absolute_images_select_annotations_and_masks_never_images(tmp_path):
    # darknet's scripts/voc_label.py writes 2012_train.txt beside VOCdevkit: absolute JPEG paths.
    voc = vocdevkit(tmp_path) / "VOC2012"
    listing = tmp_path / "2012_train.txt"
    listing.write_text("".join(f"{voc.resolve()}/JPEGImages/{i}.jpg\n"
                               for i in ("2008_000001", "2008_000002", "2008_000003")), encoding="utf-8")
    report = run(voc, workers=1, options=lists(listing))
    assert audited(report) == ["2008_000001.png", "2008_000001.xml", "2008_000002.png", "2008_000002.xml",
                               "2008_000003.xml"]
    assert [Path(f.path).name for f in found(report, "LG206")] == ["2008_000002.png"]  # the list's pairs, checked


@pytest.mark.code("LG003", "pass")
def test_a_list_of_stems_outside_imagesets_names_the_annotation_and_the_mask_of_each(tmp_path):
    # Each stem is an XML and a PNG at once: neither ambiguous nor missing (the 36 -> 1 bug's shape).
    voc = vocdevkit(tmp_path) / "VOC2012"
    listing = voc / "my_split.txt"
    listing.write_text("2008_000001\n2008_000002\n2008_000003\n", encoding="utf-8")
    report = run(voc, workers=1, options=lists(listing))
    assert not found(report, "LG003")
    assert audited(report) == ["2008_000001.png", "2008_000001.xml", "2008_000002.png", "2008_000002.xml",
                               "2008_000003.xml"]


@pytest.mark.code("LG003", "fail")
def test_a_split_list_id_without_annotation_says_what_was_looked_for(tmp_path):
    voc = write_voc(tmp_path / "VOC2007", {"000001": [("dog", BOX)]}, splits={"train": ["000001", "000404", "000405"]})
    write_image(voc / "JPEGImages" / "000405.jpg", (16, 12))
    report = run(voc, workers=1)
    messages = sorted(f.message for f in found(report, "LG003"))
    assert messages == [
        f"line 2: '000404' does not exist under {display_path(voc)} (no Annotations/000404.xml)",
        f"line 3: '000405' does not exist under {display_path(voc)} (no Annotations/000405.xml for its image "
        f"{display_path(voc / 'JPEGImages' / '000405.jpg')})",
    ]
    assert [f.data for f in sorted(found(report, "LG003"), key=lambda f: f.data["line"])] == [
        {"line": 2, "entry": "000404"}, {"line": 3, "entry": "000405"}]


@pytest.mark.code("LG005", "fail")
def test_a_split_list_id_leading_outside_the_folder(tmp_path):
    voc = write_voc(tmp_path / "VOC2007", {"000001": [("dog", BOX)]}, splits={"train": ["000001", "../../000001"]})
    [outside] = found(run(voc, workers=1), "LG005")
    assert outside.data == {"line": 2, "entry": "../../000001"}


def test_missing_entries_past_the_cap_are_counted_in_one_finding(tmp_path):
    ids = [f"{i:06d}" for i in range(ENTRY_FINDINGS + 30)]
    voc = write_voc(tmp_path / "VOC2007", {"999999": [("dog", BOX)]}, splits={"train": ids})
    missing = found(run(voc, workers=1), "LG003")
    assert len(missing) == ENTRY_FINDINGS + 1
    [rest] = [f for f in missing if "entries" in f.data]
    assert rest.message.startswith(f"30 more entries name no file under {display_path(voc)}: line 101 '000100'")
    assert rest.data["entries"] == ids[ENTRY_FINDINGS:] and rest.data["lines"] == list(range(101, 131))


@pytest.mark.code("LG002", "pass")
def test_an_annotation_with_two_images_of_its_id_has_an_image(tmp_path):
    voc = write_voc(tmp_path / "VOC2007", {"000001": [("dog", BOX)]})
    (voc / "Annotations" / "000001.xml").write_text(
        "<annotation><object><name>dog</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax>"
        "</bndbox></object></annotation>", encoding="utf-8")  # no <filename>: the image is found by name
    write_image(voc / "JPEGImages" / "000001.png")
    report = run(voc, workers=1)
    assert not found(report, "LG002")
    assert any("matches several images by name" in note for note in report.notes)


@pytest.mark.code("LG002", "pass")
def test_labelme2voc_detection_output(tmp_path):
    root = write_labelme2voc(tmp_path / "data_dataset_voc", {"2011_000003": [("person", (2.5, 3.25, 20.0, 18.0))],
                                                             "2011_000006": [("dog", (1.0, 1.0, 8.0, 9.0))]},
                             ["_background_", "dog", "person"])
    report = run(root, workers=1)
    assert report.layouts == ["voc"] and report.spec.classes[0] == "_background_"
    assert audited(report) == ["2011_000003.xml", "2011_000006.xml"]  # AnnotationsVisualization/ holds no labels
    assert codes(report) <= {"LG104"}


# ---- YOLO --------------------------------------------------------------------------------

def ultralytics(root: Path) -> Path:
    """An Ultralytics dataset as coco8.yaml and VOC.yaml describe theirs: the YAML beside the
    dataset's folder with ``path: x`` naming it (a YAML in another folder, ``path: ../x``,
    names a dataset outside its own: tests/test_untrusted_metadata.py), a split of several
    image folders, a split given as an autosplit .txt list (``./images/...`` lines), an empty
    ``test:``."""
    data = root / "datasets" / "shapes"
    write_yolo(data, {"train2012": {"a": [ROW]}, "train2007": {"b": [ROW]}, "val": {"c": [ROW], "d": [ROW]}},
               names=["p"], yaml_name=None)
    write_image(data / "images" / "train2012" / "background.jpg")
    (data / "autosplit_val.txt").write_text("./images/val/c.jpg\n./images/val/d.jpg\n", encoding="utf-8")
    (root / "datasets" / "shapes.yaml").write_text(
        "path: shapes\ntrain: [images/train2012, images/train2007]\nval: autosplit_val.txt\ntest:\n"
        "names:\n  0: p\n", encoding="utf-8")
    return root / "datasets" / "shapes.yaml"


@pytest.mark.code("LG002", "pass")
@pytest.mark.code("LG003", "pass")
def test_ultralytics_path_folder_lists_and_autosplit_lists(tmp_path):
    report = run(ultralytics(tmp_path), workers=1)
    assert audited(report) == ["a.txt", "b.txt", "c.txt", "d.txt"]
    assert codes(report) <= {"LG104"}
    assert any(note.startswith("1 image without a label file (background images") for note in report.notes)


@pytest.mark.code("LG003", "fail")
@pytest.mark.code("LG005", "fail")
def test_ultralytics_list_entries_missing_or_outside_the_dataset(tmp_path):
    yaml_path = ultralytics(tmp_path)
    data = tmp_path / "datasets" / "shapes"
    write_image(tmp_path / "datasets" / "elsewhere.jpg")
    (tmp_path / "datasets" / "elsewhere.txt").write_text("5 0.5 0.5 0.1 0.1\n", encoding="utf-8")
    (data / "autosplit_val.txt").write_text("./images/val/c.jpg\n./images/val/gone.jpg\n../elsewhere.jpg\n",
                                            encoding="utf-8")
    report = run(yaml_path, workers=1)
    [missing] = found(report, "LG003")
    assert missing.data == {"line": 2, "entry": "./images/val/gone.jpg"}
    assert missing.message == f"line 2: './images/val/gone.jpg' does not exist under {display_path(data)}"
    [outside] = found(report, "LG005")
    assert outside.data == {"line": 3, "entry": "../elsewhere.jpg"}
    assert "elsewhere.txt" not in audited(report)  # a file outside the dataset is never audited


def test_a_split_folder_named_by_data_yaml_that_does_not_exist(tmp_path):
    yaml_path = ultralytics(tmp_path)
    yaml_path.write_text(yaml_path.read_text().replace("test:\n", "test: images/test\n"), encoding="utf-8")
    [missing] = found(run(yaml_path, workers=1), "LG003")
    assert missing.data == {"split": "test", "entry": "images/test"}
    assert missing.message.startswith("test: 'images/test' does not exist under ")


@pytest.mark.code("LG003", "fail")
def test_cvat_darknet_export_with_its_data_prefixed_list(tmp_path):
    # CVAT's "YOLO 1.1": obj.data and train.txt name the export as darknet's data/ folder,
    # images keep their own extension.
    root = write_darknet(tmp_path / "task_1", {"frame_000000": [ROW], "frame_000001": [(1, 0.4, 0.4, 0.1, 0.1)]},
                         ["car", "person"], listed=["frame_000000", "frame_000001", "frame_000002"],
                         extension=".PNG")
    report = run(root, workers=1)
    assert report.layouts == ["yolo"] and report.spec.classes == ("car", "person")
    assert audited(report) == ["frame_000000.txt", "frame_000001.txt"]
    [missing] = found(report, "LG003")
    assert missing.path.endswith("train.txt") and missing.data == {"line": 3, "entry": "data/obj_train_data/frame_000002.PNG"}


def test_datumaro_darknet_export_with_a_valid_subset(tmp_path):
    root = write_darknet(tmp_path / "yolo", {"1": [ROW]}, ["label_0", "label_1"], valid={"2": [ROW], "3": ""})
    report = run(root / "obj.data", workers=1)
    assert audited(report) == ["1.txt", "2.txt", "3.txt"] and codes(report) <= {"LG104"}


def test_darknet_list_read_from_the_folder_above_data(tmp_path, monkeypatch):
    # darknet runs from the folder that holds data/: the same export audited from there.
    root = write_darknet(tmp_path / "data", {"1": [ROW], "2": [ROW]}, ["p"])
    monkeypatch.chdir(tmp_path)
    report = run("data", workers=1)
    assert audited(report) == ["1.txt", "2.txt"] and not found(report, "LG003")


def test_list_option_on_a_yolo_dataset_selects_the_labels_of_the_listed_images(tmp_path):
    root = write_yolo(tmp_path / "y", {"train": {"a": [ROW], "b": [(7, 0.5, 0.5, 0.1, 0.1)], "c": ""}}, names=["p"])
    (root / "labels" / "train" / "c.txt").unlink()  # c.jpg: a background image
    listing = root / "part.txt"
    listing.write_text("images/train/a.jpg\nimages/train/c.jpg\nlabels/train/b.txt\n", encoding="utf-8")
    report = run(root, workers=1, options=lists(listing))
    assert audited(report) == ["a.txt", "b.txt"]
    assert not found(report, "LG002") and not found(report, "LG003")
    assert any(note.startswith("1 image without a label file") for note in report.notes)
    as_path = run(listing, workers=1)
    assert audited(as_path) == ["a.txt", "b.txt"]


@pytest.mark.code("LG002", "fail")
def test_a_label_tree_without_a_dataset_file_pairs_by_the_mirrored_folders(tmp_path):
    root = write_yolo(tmp_path, {"train": {"a": [ROW]}}, names=["p"], yaml_name=None)
    (root / "labels" / "train" / "lost.txt").write_text(yolo_rows([ROW]), encoding="utf-8")
    write_image(root / "images" / "train" / "background.jpg")
    report = run(root, workers=1)
    assert [Path(f.path).name for f in found(report, "LG002")] == ["lost.txt"]
    assert any(note.startswith("1 image without a label file") for note in report.notes)


# ---- the engine's parts --------------------------------------------------------------------

def test_derived_labels_as_ultralytics_then_darknet_find_them(tmp_path):
    images = [tmp_path / "images" / "a.jpg", tmp_path / "images" / "a.png", tmp_path / "images" / "b.jpg",
              tmp_path / "other" / "c.jpg"]
    for image in images:
        write_image(image)
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "a.txt").write_text(yolo_rows([ROW]), encoding="utf-8")
    (tmp_path / "labels" / "z.txt").write_text(yolo_rows([ROW]), encoding="utf-8")
    (tmp_path / "other" / "c.txt").write_text(yolo_rows([ROW]), encoding="utf-8")
    labels = [str(tmp_path / "labels" / "a.txt"), str(tmp_path / "labels" / "z.txt")]
    pairing = pair_derived([str(p) for p in images], label_files, labels)
    assert pairing.pairs == {labels[0]: str(images[0]), str(tmp_path / "other" / "c.txt"): str(images[3])}
    assert pairing.orphan_images == [str(images[2])]  # a.png shares a.jpg's label file
    assert pairing.orphan_labels == [labels[1]]


def test_loose_entries_are_found_only_inside_the_dataset(tmp_path):
    rule = ListRule(loose=True, stems=False)
    root = tmp_path / "export"
    write_image(root / "obj_train_data" / "1.jpg")
    write_image(tmp_path / "2.jpg")
    assert resolve_entry("data/obj_train_data/1.jpg", str(root), str(root), rule) == (
        str(root / "obj_train_data" / "1.jpg"), False)
    # 2.jpg exists beside the export: dropping folders never reaches outside it.
    assert resolve_entry("data/2.jpg", str(root), str(root), rule) == (None, False)
    assert resolve_entry("../2.jpg", str(root), str(root), rule) == (str(tmp_path / "2.jpg"), True)


NAMES = st.text(st.sampled_from("ab._-"), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(NAMES, st.sampled_from(["", ".png", ".nii.gz", ".NPY.H5", ".tar.gz", "."]))
def test_strip_extension_cuts_as_splitext_does(stem, extension):
    name = stem + extension
    lower = name.lower()
    expected = name[:-len(".nii.gz")] if lower.endswith((".nii.gz", ".npy.h5")) else os.path.splitext(name)[0]
    assert strip_extension(name) == expected
    assert strip_extension(f"d.x/{name}") == f"d.x/{expected}"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a.png", "b/c.jpg", "../d.png", "/abs/e.png", "f/../g.png", "./h.png", "i//j.png",
                                  os.path.join(os.getcwd(), "k.png"), os.path.join(os.getcwd(), "l", "m.png"), "/n.png"]),
                max_size=6))
def test_display_names_show_each_path_as_display_path_does(paths):
    shown = DisplayNames()
    assert [shown(p) for p in paths] == [display_path(p) for p in paths]
