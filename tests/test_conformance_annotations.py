"""Conformance: the COCO and classification datasets of ../shared/corpus (written by Datumaro's
own tools) are read in their layouts without a false LG001.

The corpus is read in place, never copied; the tests skip when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.layouts.coco.reader import read_coco
from audit_helpers import CORPUS, codes, needs_corpus, run_corpus

pytestmark = needs_corpus

COCO_DATASETS = [
    "coco_dataset/coco",
    "coco_dataset/coco_captions",
    "coco_dataset/coco_image_info",
    "coco_dataset/coco_instances",
    "coco_dataset/coco_labels",
    "coco_dataset/coco_panoptic",
    "coco_dataset/coco_person_keypoints",
    "coco_dataset/coco_roboflow",
    "coco_dataset/coco_stuff",
    "coco_dataset/mmdet_coco",
    "kaggle_dataset/relaxed_coco",
]
TABLE_DATASETS = [
    "imagenet_txt_dataset/basic",
    "imagenet_txt_dataset/custom_labels",
    "imagenet_txt_dataset/no_labels",
    "kaggle_dataset/image_csv",
    "kaggle_dataset/image_csv_det",
    "kaggle_dataset/image_csv_multi_label",
    "kaggle_dataset/image_txt",
    "kaggle_dataset/image_txt_det",
    "mnist_csv_dataset",
]


@pytest.mark.parametrize("relative", COCO_DATASETS)
def test_coco_datasets_are_read_cleanly(relative):
    report = run_corpus(relative)
    assert report.layouts == ["coco"]
    assert report.errors == []
    unexpected = [f.message for f in report.findings if f.code != "LG104"]
    assert unexpected == []  # the only finding allowed: a category never used ('c')
    assert report.summary.samples > 0


def test_every_coco_flavour_file_parses_without_type_problems():
    files = sorted((CORPUS / "coco_dataset").rglob("*.json")) + [CORPUS / "kaggle_dataset/relaxed_coco/annotations.json"]
    assert len(files) >= 30
    for path in files:
        record = read_coco(str(path))
        assert record.problems == {}, (path, record.problems)


def test_coco_flavours_and_their_classes():
    report = run_corpus("coco_dataset/coco")
    assert report.spec.classes == ("a", "b", "c")
    assert set(report.summary.class_objects) == {"a", "b"}
    assert report.summary.kinds["coco"] == 14


def test_coco_category_ids_against_num_classes():
    report = run_corpus("coco_dataset/coco_instances", LabelSpec(num_classes=2))
    findings = [f for f in report.findings if f.code == "LG102"]
    assert sorted(Path(f.path).name for f in findings) == ["instances_train.json", "instances_val.json"]
    for finding in findings:
        assert finding.data["category_index_map"] == {"1": 0, "2": 1, "4": 2}
        assert finding.data["ids"] == [2]


def test_the_panoptic_pngs_are_found():
    report = run_corpus("coco_dataset/coco_panoptic")
    assert "LG003" not in codes(report)


@pytest.mark.parametrize("relative", TABLE_DATASETS)
def test_classification_tables_are_read_without_unreadable_rows(relative):
    report = run_corpus(relative)
    assert report.layouts == ["csv"]
    assert report.errors == []
    assert "LG001" not in codes(report), [f.message for f in report.findings if f.code == "LG001"]
    assert report.summary.class_objects


def test_imagenet_txt_ids_index_the_synsets():
    report = run_corpus("imagenet_txt_dataset/basic")
    assert report.spec.classes == tuple(f"label_{i}" for i in range(10))
    # The ids are counted under the names synsets.txt gives them, as every format's ids are.
    assert dict(report.summary.class_objects) == {"label_0": 1, "label_5": 2, "label_3": 1}
    # train.txt names 1.jpg..4.jpg; images/ holds only 1.jpg and 2.jpg.
    [missing] = [f for f in report.findings if f.code == "LG003"]
    assert missing.data["lines"] == [3, 4]


def test_imagenet_txt_with_a_custom_synsets_file():
    report = run_corpus("imagenet_txt_dataset/custom_labels")
    assert report.spec.classes[0] == "alt_label_0"


def test_kaggle_tables_read_names_boxes_and_one_hot_columns():
    assert dict(run_corpus("kaggle_dataset/image_csv").summary.class_objects) == {"dog": 4, "cat": 6}
    multi = run_corpus("kaggle_dataset/image_csv_multi_label")
    assert dict(multi.summary.class_objects) == {"dog": 6, "cat": 6, "person": 6}
    assert "LG003" not in codes(multi)  # ann_wo_ext.csv names files without their extension
    detection = run_corpus("kaggle_dataset/image_csv_det")
    assert "LG303" not in codes(detection)


def test_mnist_csv_labels():
    report = run_corpus("mnist_csv_dataset", LabelSpec(num_classes=10))
    assert report.findings == []
    assert report.summary.samples == 5


def test_imagenet_folder_tree():
    report = run_corpus("imagenet_dataset")
    assert report.layouts == ["imagefolder"]
    assert report.findings == []
    assert dict(report.summary.class_objects) == {"label_0": 1, "label_1": 2}  # label_1/label_1_1/ nested
    forced = run_corpus("imagenet_dataset", options=AuditOptions(format="imagefolder"))
    assert forced.findings == []


def test_mask_datasets_of_the_corpus_keep_their_mask_layouts():
    assert run_corpus("kaggle_dataset/image_mask").layouts == ["paired"]
    assert run_corpus("kaggle_dataset/image_mask_with_labelmap").layouts == ["paired"]
    assert run_corpus("mapillary_vistas_dataset").layouts not in (["coco"], ["imagefolder"], ["csv"])
