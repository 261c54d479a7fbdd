"""Conformance: the mask datasets of ../shared/corpus (written by Datumaro's own tools).

Every mask file there must be read (no false LG001), and the colour-coded ones must be
decoded through their colour maps. The corpus is read in place, never copied; the tests
skip when it is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from builders import voc_palette
from labelguard.core.spec import LabelSpec
from labelguard.readers.colormap import camvid_color_map, load_color_map
from labelguard.readers.masks import read_mask
from audit_helpers import CORPUS, codes, needs_corpus, run_corpus

pytestmark = needs_corpus

MASK_DATASETS = [
    "ade20k2020_dataset/dataset",
    "ade20k2020_dataset/dataset_with_meta_file",
    "brats_dataset",
    "brats_numpy_dataset",
    "camvid_dataset",
    "cityscapes_dataset/dataset",
    "cityscapes_dataset/train_dataset",
    "common_semantic_segmentation_dataset/dataset",
    "common_semantic_segmentation_dataset/non_standard_dataset",
    "kaggle_dataset/image_mask",
    "kaggle_dataset/image_mask_with_labelmap",
    "mapillary_vistas_dataset",
    "voc_dataset/voc_dataset1",
]


def mask_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name.endswith((".png", ".npy", ".nii.gz")))


@pytest.mark.code("LG001", "pass")
@pytest.mark.parametrize("path", mask_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_mask_file_of_the_corpus_is_read(path):
    record = read_mask(str(path))
    assert record.array.size > 0
    assert record.container == {".png": "png", ".npy": "npy", ".gz": "nifti"}[path.suffix]


@pytest.mark.code("LG001", "pass")
@pytest.mark.parametrize("relative", MASK_DATASETS)
def test_mask_datasets_audit_without_a_false_lg001(relative):
    report = run_corpus(relative)
    assert "LG001" not in codes(report), [f.message for f in report.findings if f.code == "LG001"]
    assert report.errors == []
    assert report.summary.samples > 0 or report.notes


def test_common_semantic_segmentation_is_decoded_through_dataset_meta():
    for relative in ("common_semantic_segmentation_dataset/dataset",
                     "common_semantic_segmentation_dataset/non_standard_dataset"):
        root = CORPUS / relative
        meta = json.loads((root / "dataset_meta.json").read_text())
        index = {tuple(c): i for i, c in enumerate(meta["segmentation_colors"])}
        expected: dict[int, int] = {}
        for mask in sorted((root / "masks").glob("*.png")):
            for pixel in np.asarray(Image.open(mask).convert("RGB")).reshape(-1, 3).tolist():
                expected[index[tuple(pixel)]] = expected.get(index[tuple(pixel)], 0) + 1
        report = run_corpus(relative)
        assert not codes(report) & {"LG001", "LG201", "LG203", "LG002"}, relative
        assert dict(report.summary.value_pixels) == expected
        assert list(report.spec.classes) == [meta["label_map"][str(i)] for i in range(len(meta["label_map"]))]


def test_camvid_is_decoded_through_the_camvid_colours():
    report = run_corpus("camvid_dataset")
    assert report.layouts == ["camvid"]
    assert not codes(report) & {"LG001", "LG002", "LG201", "LG203"}
    assert report.summary.samples == 4
    # the colours the corpus's own meta file names (CamVid colours) decode to the same names
    meta = json.loads((CORPUS / "common_semantic_segmentation_dataset" / "dataset" / "dataset_meta.json").read_text())
    camvid = camvid_color_map()
    for i, color in enumerate(meta["segmentation_colors"]):
        assert camvid.names[camvid.colors.index(tuple(color))] == meta["label_map"][str(i)]
    road = camvid.names.index("Road")
    assert report.summary.value_files[road] == 2  # (128, 64, 128) is in two of the masks


def test_voc_colour_mask_is_decoded_through_the_voc_palette():
    report = run_corpus("voc_dataset/voc_dataset1", LabelSpec(num_classes=21, ignore=(255,)))
    assert not codes(report) & {"LG001", "LG201", "LG203"}
    mask = np.asarray(Image.open(CORPUS / "voc_dataset/voc_dataset1/SegmentationClass/2007_000001.png"))
    palette = [tuple(voc_palette()[3 * i:3 * i + 3]) for i in range(21)]
    expected = {palette.index(tuple(c)) for c in np.unique(mask.reshape(-1, 3), axis=0).tolist()}
    assert set(report.summary.found_values()) == expected


def test_voc_labelmap_matches_the_standard_palette():
    color_map = load_color_map(str(CORPUS / "voc_dataset/voc_dataset2/labelmap.txt"))
    palette = [tuple(voc_palette()[3 * i:3 * i + 3]) for i in range(21)]
    assert list(color_map.colors[:21]) == palette
    assert color_map.names[:2] == ("background", "aeroplane")


def test_kaggle_masks_with_a_label_map_are_index_masks_in_spec():
    report = run_corpus("kaggle_dataset/image_mask_with_labelmap")
    assert report.spec.classes == ("background", "cat", "dog")
    assert report.outside_spec() == {}
    assert report.summary.found_values() == [0, 1, 2]
    assert {f.code for f in report.findings} == {"LG207"}  # 16-bit masks holding values below 256


def test_brats_nifti_volumes_pair_with_their_multichannel_images():
    report = run_corpus("brats_dataset")
    assert report.layouts == ["nnunet"]
    assert not codes(report) & {"LG001", "LG002", "LG206"}
    import nibabel

    label = np.asarray(nibabel.load(CORPUS / "brats_dataset/labelsTr/BRATS_001.nii.gz").dataobj)
    assert report.summary.found_values() == sorted(np.unique(label).tolist())


def test_brats_numpy_volumes_audit_labels_not_data():
    report = run_corpus("brats_numpy_dataset")
    assert report.summary.samples == 2
    expected: set[int] = set()
    for path in sorted((CORPUS / "brats_numpy_dataset").glob("*_label_*.npy")):
        expected |= set(np.unique(np.load(path)).astype(int).tolist())
    assert set(report.summary.found_values()) == expected


def test_cityscapes_train_ids_are_read_and_instance_masks_left_out():
    report = run_corpus("cityscapes_dataset/train_dataset")
    assert report.layouts == ["cityscapes"]
    assert report.summary.samples == len(list(CORPUS.glob("cityscapes_dataset/train_dataset/gtFine/*/*/*_labelTrainIds.png")))
    assert max(report.summary.found_values()) < 256


@pytest.mark.code("LG203", "pass")
def test_a_camvid_label_split_given_alone_is_decoded_through_the_camvid_colours():
    whole = run_corpus("camvid_dataset")
    split = run_corpus("camvid_dataset/trainannot")
    assert "LG203" not in codes(split)
    assert any("CamVid label split" in n for n in split.notes)
    files = list((CORPUS / "camvid_dataset" / "trainannot").glob("*.png"))
    assert split.summary.samples == len(files)
    assert set(split.summary.value_pixels) <= set(whole.summary.value_pixels)


@pytest.mark.code("LG003", "pass")
def test_mapillary_vistas_audits_each_version_with_its_config_classes():
    report = run_corpus("mapillary_vistas_dataset")
    assert [layout.split(" in ")[0] for layout in report.layouts] == ["mapillary"] * 4
    assert not codes(report) & {"LG001", "LG003", "LG201", "LG401"}
    labels = sorted(CORPUS.glob("mapillary_vistas_dataset/*/v*/labels/*.png"))
    assert report.summary.samples == len(labels)
    for version in ("v1.2", "v2.0"):
        config = json.loads((CORPUS / "mapillary_vistas_dataset" / f"config_{version}.json").read_text())
        split = run_corpus(f"mapillary_vistas_dataset/val/{version}")
        assert list(split.spec.classes) == [label["name"] for label in config["labels"]]
        assert any("instances/" in n and "left out" in n for n in split.notes)


@pytest.mark.code("LG201", "pass")
def test_cityscapes_with_instance_ids_only_audits_their_label_ids():
    report = run_corpus("cityscapes_dataset/dataset")
    files = sorted(CORPUS.glob("cityscapes_dataset/dataset/gtFine/*/*/*_instanceIds.png"))
    assert report.summary.samples == len(files)
    expected = set()
    for path in files:
        ids = np.asarray(Image.open(path)).astype(np.int64)
        expected |= set(np.where(ids >= 1000, ids // 1000, ids).reshape(-1).tolist())
    assert set(report.summary.value_pixels) == expected
    # Cityscapes labelIds run 0..33: read as ids, nothing falls outside them.
    checked = run_corpus("cityscapes_dataset/dataset", LabelSpec(num_classes=34))
    assert not codes(checked) & {"LG001", "LG201", "LG401"}
