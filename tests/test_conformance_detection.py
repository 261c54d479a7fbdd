"""Conformance: the Pascal VOC and YOLO datasets of ../shared/corpus (written by Datumaro's own
tools) are read in their layouts without a false LG001.

The corpus is read in place, never copied; the tests skip when it is absent.
"""

from __future__ import annotations


import pytest

from labelguard.layouts.voc.reader import read_voc, read_voc_tree
from audit_helpers import CORPUS, codes, needs_corpus, run_corpus

pytestmark = needs_corpus

VOC_DATASETS = [
    "voc_dataset/voc_dataset1",
    "voc_dataset/voc_dataset2",
    "voc_dataset/voc_dataset3",
    "kaggle_dataset/relaxed_voc1",
    "kaggle_dataset/relaxed_voc2",
]
YOLO_DATASETS = [
    "yolo_dataset/labels",
    "yolo_dataset/annotations",
    "yolo_dataset/strict",
    "yolo_dataset/strict/obj.data",
    "kaggle_dataset/relaxed_yolo",
]


@pytest.mark.parametrize("relative", VOC_DATASETS)
def test_voc_datasets_are_read_cleanly(relative):
    report = run_corpus(relative)
    assert report.layouts == ["voc"]
    assert report.errors == []
    assert "LG001" not in codes(report), [f.message for f in report.findings if f.code == "LG001"]
    assert report.summary.kinds["voc"] >= 1


@pytest.mark.parametrize("path", sorted(CORPUS.glob("**/*.xml")) if CORPUS.is_dir() else [],
                         ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_xml_reads_the_same_with_or_without_a_tree(path):
    data = path.read_bytes()
    assert read_voc(data) == read_voc_tree(data)


def test_voc_parts_and_actions_are_not_classes():
    report = run_corpus("voc_dataset/voc_dataset1")
    assert dict(report.summary.class_objects) == {"cat": 1, "person": 1}


def test_voc_object_less_file_and_the_labelmap():
    report = run_corpus("voc_dataset/voc_dataset2")
    assert report.summary.samples == 5  # @.xml (no objects) included
    assert report.spec.classes[0] == "background" and report.spec.classes[-1] == "ignored"
    assert len(report.spec.classes) == 22
    assert codes(report) <= {"LG104"}


def test_voc_with_segmentation_masks_audits_both():
    report = run_corpus("voc_dataset/voc_dataset1")
    assert report.summary.kinds == {"voc": 1, "mask": 1}


@pytest.mark.parametrize("relative", YOLO_DATASETS)
def test_yolo_datasets_are_read_cleanly(relative):
    report = run_corpus(relative)
    assert report.layouts == ["yolo"]
    assert report.errors == []
    assert codes(report) <= {"LG104", "LG006"}, [f.message for f in report.findings]
    assert report.summary.samples >= 1
    if "relaxed" not in relative:
        assert report.spec.classes == tuple(f"label_{i}" for i in range(10))
        assert set(report.summary.class_objects) == {"label_2", "label_4"}


@pytest.mark.parametrize("relative, kinds", [
    ("voc_dataset/voc_dataset1/ImageSets/Main/train.txt", {"voc": 1, "mask": 1}),
    ("voc_dataset/voc_dataset1/ImageSets/Segmentation/train.txt", {"voc": 1, "mask": 1}),
    ("voc_dataset/voc_dataset1/ImageSets/Main/cat_train.txt", {"voc": 1, "mask": 1}),
])
def test_voc_split_lists_as_path_select_annotations_and_masks(relative, kinds):
    report = run_corpus(relative)
    assert report.layouts == ["voc"] and report.summary.kinds == kinds
    errors = [(f.code, f.message) for f in report.findings if str(f.severity) == "error"]
    assert not errors and "LG003" not in codes(report), errors


def test_voc_test_split_of_images_only_names_no_missing_file():
    # Datumaro's voc_dataset1: test.txt names 2007_000002, an image without annotation or mask.
    report = run_corpus("voc_dataset/voc_dataset1/ImageSets/Main/test.txt")
    assert "LG003" not in codes(report) and report.summary.samples == 0


def test_darknet_list_as_path_audits_the_labels_of_its_images():
    report = run_corpus("yolo_dataset/strict/train.txt")
    assert report.layouts == ["yolo"] and report.summary.samples == 1
    assert codes(report) <= {"LG104", "LG006"}
