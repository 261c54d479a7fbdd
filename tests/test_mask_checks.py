"""Every LG0xx file check and LG2xx/LG401 mask check on real files: a failing and a passing case.

Each test writes a small dataset into tmp_path with the builders, audits it with the real
readers and layouts, and looks at the findings.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from builders import (
    colorize, corrupt, jpeg_roundtrip, organic_mask, paired_dataset, rgb_image, truncate, voc_palette,
    with_border, write_bmp, write_dataset_meta, write_h5, write_jpeg, write_nifti,
    write_npy, write_npz, write_png, write_tiff,
)
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from audit_helpers import found, run


THREE = LabelSpec(num_classes=3)
GOOD = organic_mask((32, 32), (0, 1, 2), seed=3)


# ---- LG001: unreadable files never stop the audit ------------------------------------------

def _big_png(path: Path) -> Path:
    # Noisy labels compress badly, so the PNG is mostly IDAT data and a cut or a flipped byte
    # in its middle lands in the pixel data.
    return write_png(path, np.random.default_rng(0).integers(0, 3, (64, 64), dtype=np.uint8))


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _symlink(path: Path) -> Path:
    path.symlink_to(path.parent / "does-not-exist.png")
    return path


BROKEN = {
    "zero-byte.png": lambda p: (p.write_bytes(b""), p)[1],
    "truncated-half.png": lambda p: truncate(_big_png(p), 0.5),
    "truncated-tail.png": lambda p: truncate(_big_png(p), 0.97),
    "bit-rot.png": lambda p: corrupt(_big_png(p), 0.5),
    "bit-rot-small.png": lambda p: corrupt(write_png(p, GOOD), 0.5, length=64),
    "no-end-chunk.png": lambda p: (p.write_bytes(write_png(p, GOOD).read_bytes()[:-12]), p)[1],
    "text-named.png": lambda p: (p.write_text("label,value\n0,1\n"), p)[1],
    "npy-named.png": lambda p: (p.write_bytes(write_npy(p.with_suffix(".tmp.npy"), GOOD).read_bytes()), p)[1],
    "png-named.npy": lambda p: (p.write_bytes(write_png(p.with_suffix(".tmp.png"), GOOD).read_bytes()), p)[1],
    "truncated.npy": lambda p: truncate(write_npy(p, GOOD), 0.6),
    "strings.npy": lambda p: write_npy(p, np.array([["a", "b"], ["c", "d"]])),
    "objects.npy": lambda p: (np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True), p)[1],
    "scalar.npy": lambda p: write_npy(p, np.array(3)),
    "empty-array.npy": lambda p: write_npy(p, np.zeros((0, 32), np.uint8)),
    "empty-label.npz": lambda p: write_npz(p, image=np.zeros((32, 32)), label=np.zeros((32, 0), np.uint8)),
    "truncated.npz": lambda p: truncate(write_npz(p, label=GOOD), 0.5),
    "bit-rot.npz": lambda p: corrupt(write_npz(p, label=np.random.default_rng(1).integers(0, 3, (64, 64))), 0.5),
    "no-label-key.npz": lambda p: write_npz(p, foo=GOOD, bar=GOOD),
    "truncated.h5": lambda p: truncate(write_h5(p, label=GOOD), 0.5),
    "truncated.nii.gz": lambda p: truncate(write_nifti(p, np.stack([GOOD] * 4)), 0.5),
    "truncated.nii": lambda p: truncate(write_nifti(p, np.stack([GOOD] * 4)), 0.8),
    "truncated.tif": lambda p: truncate(write_tiff(p, GOOD), 0.5),
    "truncated.jpg": lambda p: truncate(write_jpeg(p, GOOD * 100), 0.5),
    "broken-link.png": _symlink,
    "named-pipe.png": _fifo,
}


@pytest.mark.code("LG001", "fail")
@pytest.mark.timeout(10)
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_file_gives_lg001_and_the_audit_goes_on(tmp_path, name):
    masks = tmp_path / "masks"
    write_png(masks / "good.png", GOOD)
    bad = BROKEN[name](masks / name)
    for leftover in masks.glob("*.tmp.*"):
        leftover.unlink()

    report = run(tmp_path, THREE)

    unreadable = found(report, "LG001", bad.name)
    assert len(unreadable) == 1, report.findings
    assert unreadable[0].severity is Severity.ERROR
    assert unreadable[0].message and "Traceback" not in unreadable[0].message
    assert report.errors == []
    # the good file is still audited, fully
    assert report.summary.value_files.keys() >= {0, 1, 2}
    assert not found(report, "LG001", "good.png")


@pytest.mark.code("LG001", "fail")
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_file_without_read_permission_gives_lg001(tmp_path):
    bad = write_png(tmp_path / "masks" / "locked.png", GOOD)
    bad.chmod(0)
    try:
        report = run(tmp_path, THREE)
    finally:
        bad.chmod(0o644)
    assert "ermission" in found(report, "LG001", "locked.png")[0].message


def test_wrongly_named_file_says_what_it_really_is(tmp_path):
    write_npy(tmp_path / "masks" / "real.npy", GOOD)
    (tmp_path / "masks" / "real.npy").rename(tmp_path / "masks" / "case.png")
    report = run(tmp_path, THREE)
    [finding] = found(report, "LG001", "case.png")
    assert "NPY" in finding.message and ".png" in finding.message
    # labelguard could read it by its content, so its values are still checked
    assert report.summary.value_files.keys() == {0, 1, 2}


@pytest.mark.code("LG001", "fail")
def test_broken_paired_image_is_lg001_on_the_image(tmp_path):
    images, masks = paired_dataset(tmp_path, ["a", "b"])
    (images / "a.png").write_bytes(b"")
    report = run(tmp_path, THREE)
    assert [(Path(f.path).parent.name, Path(f.path).name) for f in found(report, "LG001")] == [("images", "a.png")]
    assert report.summary.samples == 2 and report.errors == []


@pytest.mark.code("LG001", "pass")
def test_valid_files_of_every_format_give_no_lg001(tmp_path):
    volume = np.stack([GOOD] * 3)
    write_png(tmp_path / "masks" / "a.png", GOOD)
    write_png(tmp_path / "masks" / "p.png", GOOD, mode="P")
    write_png(tmp_path / "masks" / "wide.png", GOOD.astype(np.uint16) * 300, mode="I;16")
    write_bmp(tmp_path / "masks" / "b.bmp", GOOD)
    write_tiff(tmp_path / "masks" / "c.tif", volume)
    write_npy(tmp_path / "masks" / "d.npy", GOOD.astype(np.int64))
    write_npz(tmp_path / "masks" / "e.npz", image=GOOD.astype(np.float32), label=GOOD)
    write_h5(tmp_path / "masks" / "f.npy.h5", image=volume.astype(np.float32), label=volume)
    write_nifti(tmp_path / "masks" / "g.nii.gz", volume)
    write_nifti(tmp_path / "masks" / "h.nii", GOOD)
    report = run(tmp_path, LabelSpec(values=(0, 1, 2, 300, 600)))
    assert report.summary.samples == 10
    assert not found(report, "LG001")
    assert report.errors == []


# ---- LG002: pairs --------------------------------------------------------------------------

@pytest.mark.code("LG002", "fail")
def test_image_without_mask_and_mask_without_image(tmp_path):
    images, masks = paired_dataset(tmp_path, ["a", "b"])
    write_png(images / "lonely.png", rgb_image((32, 32)))
    write_png(masks / "orphan.png", GOOD)
    report = run(tmp_path, THREE)
    assert {Path(f.path).name: f.data["side"] for f in found(report, "LG002")} == {
        "lonely.png": "image", "orphan.png": "mask"}


@pytest.mark.code("LG002", "pass")
@pytest.mark.parametrize("suffix", ["", "_mask", "_label", "_gt", "_segmentation"])
def test_masks_pair_with_images_through_the_usual_suffixes(tmp_path, suffix):
    images, masks = paired_dataset(tmp_path, ["case_01", "case_02"], mask_suffix=suffix)
    report = run(tmp_path, THREE, options=AuditOptions(images=str(images), masks=str(masks)))
    assert not found(report, "LG002")
    assert report.summary.samples == 2


@pytest.mark.code("LG002", "pass")
def test_nnunet_channel_suffix_pairs_every_channel(tmp_path):
    volume = np.zeros((4, 16, 16), np.uint8)
    volume[1:3, 4:9, 4:9] = 1
    for channel in ("0000", "0001"):
        write_nifti(tmp_path / "imagesTr" / f"liver_001_{channel}.nii.gz", np.zeros((4, 16, 16), np.float32))
    write_nifti(tmp_path / "labelsTr" / "liver_001.nii.gz", volume)
    report = run(tmp_path, LabelSpec(num_classes=2))
    assert report.layouts == ["nnunet"]
    assert not found(report, "LG002") and not found(report, "LG206")


@pytest.mark.code("LG002", "fail")
def test_nnunet_label_without_image(tmp_path):
    write_nifti(tmp_path / "imagesTr" / "liver_001_0000.nii.gz", np.zeros((4, 8, 8), np.float32))
    write_nifti(tmp_path / "labelsTr" / "liver_001.nii.gz", np.zeros((4, 8, 8), np.uint8))
    write_nifti(tmp_path / "labelsTr" / "liver_002.nii.gz", np.zeros((4, 8, 8), np.uint8))
    report = run(tmp_path, LabelSpec(num_classes=2))
    assert [Path(f.path).name for f in found(report, "LG002")] == ["liver_002.nii.gz"]


# ---- LG201: values outside the spec ---------------------------------------------------------

@pytest.mark.code("LG201", "fail")
def test_value_at_num_classes_is_reported_with_its_pixel_count(tmp_path):
    mask = organic_mask((32, 32), (0, 1, 2, 3), seed=5)
    write_png(tmp_path / "masks" / "x.png", mask)
    [finding] = found(run(tmp_path, THREE), "LG201", "x.png")
    assert finding.data["values"] == [3]
    assert finding.data["counts"] == [int((mask == 3).sum())]
    assert f"3 in {int((mask == 3).sum())} pixels" in finding.message
    assert "num_classes must be 4" in finding.hint


@pytest.mark.code("LG201", "fail")
def test_negative_values_are_outside_the_spec(tmp_path):
    labels = GOOD.astype(np.int16)
    labels[:2, :2] = -1
    write_npy(tmp_path / "x.npy", labels)
    [finding] = found(run(tmp_path, THREE), "LG201", "x.npy")
    assert finding.data["values"] == [-1] and finding.data["counts"] == [4]
    assert "--ignore-index -1" in finding.hint


@pytest.mark.code("LG201", "fail")
def test_255_borders_without_ignore_index_are_outside_the_spec(tmp_path):
    masks = [with_border(organic_mask((32, 32), (0, 1), seed=i)) for i in range(3)]
    for i, mask in enumerate(masks):
        write_png(tmp_path / "masks" / f"{i}.png", mask)
    report = run(tmp_path, LabelSpec(num_classes=2))
    lg201 = found(report, "LG201")
    assert sorted(Path(f.path).name for f in lg201) == ["0.png", "1.png", "2.png"]
    assert all(f.data["values"] == [255] for f in lg201)
    assert "--ignore-index 255" in lg201[0].hint
    assert report.outside_spec() == {255: (3, sum(int((m == 255).sum()) for m in masks))}


@pytest.mark.code("LG201", "pass")
def test_255_borders_declared_as_ignore_index_are_legal(tmp_path):
    for i in range(3):
        write_png(tmp_path / "masks" / f"{i}.png", with_border(organic_mask((32, 32), (0, 1), seed=i)))
    report = run(tmp_path, LabelSpec(num_classes=2, ignore=(255,)))
    assert not found(report, "LG201")
    assert report.outside_spec() == {}
    assert report.value_in_spec(255) is True


@pytest.mark.code("LG201", "pass")
def test_values_inside_the_spec_and_explicit_values(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((32, 32), (0, 10, 20)))
    assert not found(run(tmp_path, LabelSpec(values=(0, 10, 20))), "LG201")
    assert found(run(tmp_path, LabelSpec(values=(0, 10))), "LG201")


@pytest.mark.code("LG201", "pass")
def test_no_value_check_without_a_spec(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((32, 32), (0, 7, 200)))
    report = run(tmp_path)
    assert not found(report, "LG201")
    assert report.summary.found_values() == [0, 7, 200]


# ---- LG202: lossy masks -------------------------------------------------------------------

@pytest.mark.code("LG202", "fail")
def test_jpeg_mask_is_lossy(tmp_path):
    write_jpeg(tmp_path / "masks" / "a.jpg", organic_mask((64, 64), (0, 1, 2)))
    [finding] = found(run(tmp_path, THREE), "LG202", "a.jpg")
    assert finding.data["renamed"] is False


@pytest.mark.code("LG202", "fail")
def test_jpeg_renamed_png_is_still_a_jpeg(tmp_path):
    write_jpeg(tmp_path / "masks" / "a.png", organic_mask((64, 64), (0, 1, 2)))
    [finding] = found(run(tmp_path, THREE), "LG202", "a.png")
    assert finding.data["renamed"] is True
    assert "JPEG" in finding.message and ".png" in finding.message
    # the smeared values and their pixel count, as the file holds them
    stored = np.asarray(Image.open(tmp_path / "masks" / "a.png"))
    assert finding.data["stray_pixels"] == int(np.isin(stored, finding.data["stray_values"]).sum()) > 0
    assert f"{finding.data['stray_pixels']} pixels" in finding.message


@pytest.mark.code("LG202", "fail")
def test_png_holding_jpeg_fringes_is_lossy(tmp_path):
    source = np.zeros((64, 64), np.uint8)
    source[:, 21:43] = 100
    source[:, 43:] = 200
    source[10:30, 5:15] = 200
    smeared = jpeg_roundtrip(source)
    write_png(tmp_path / "masks" / "a.png", smeared)
    [finding] = found(run(tmp_path, LabelSpec(values=(0, 100, 200))), "LG202", "a.png")
    stray = set(finding.data["stray_values"])
    assert stray and not stray & {0, 100, 200}
    assert finding.data["stray_pixels"] == int(np.isin(smeared, list(stray)).sum())


@pytest.mark.code("LG202", "pass")
def test_lossless_mask_with_small_classes_is_not_lossy(tmp_path):
    mask = organic_mask((64, 64), (0, 1, 2, 3, 4), seed=2)
    mask[10, 10:40] = 5  # a thin but real structure
    write_png(tmp_path / "masks" / "a.png", mask)
    write_png(tmp_path / "masks" / "b.png", organic_mask((64, 64), (0, 1, 2), seed=1) * 100)
    assert not found(run(tmp_path), "LG202")


# ---- LG203: colour masks ------------------------------------------------------------------

VOC = [tuple(voc_palette()[3 * i:3 * i + 3]) for i in range(21)]


@pytest.mark.code("LG203", "fail")
def test_colour_mask_without_a_map_gets_a_proposed_map(tmp_path):
    indices = organic_mask((32, 32), (0, 1, 2))
    write_png(tmp_path / "masks" / "a.png", colorize(indices, [(0, 0, 0), (250, 50, 50), (50, 250, 50)]))
    report = run(tmp_path, THREE)
    [finding] = found(report, "LG203", "a.png")
    assert finding.data["colors"] == {
        "0,0,0": int((indices == 0).sum()), "250,50,50": int((indices == 1).sum()),
        "50,250,50": int((indices == 2).sum())}
    proposal = report.suggested_color_map
    assert proposal["0,0,0"] == 0 and sorted(proposal.values()) == [0, 1, 2]
    assert not found(report, "LG201")  # colours are not mistaken for class values


@pytest.mark.code("LG203", "fail")
def test_voc_palette_colours_are_proposed_at_their_voc_index(tmp_path):
    indices = organic_mask((32, 32), (0, 7, 15))
    write_png(tmp_path / "masks" / "a.png", colorize(indices, VOC))
    report = run(tmp_path)
    assert found(report, "LG203", "a.png")
    assert report.suggested_color_map == {"0,0,0": 0, "%d,%d,%d" % VOC[7]: 7, "%d,%d,%d" % VOC[15]: 15}


@pytest.mark.code("LG203", "pass")
def test_colour_mask_with_a_declared_map_is_decoded(tmp_path):
    indices = organic_mask((32, 32), (0, 1, 2))
    colors = [(0, 0, 0), (250, 50, 50), (50, 250, 50)]
    write_png(tmp_path / "masks" / "a.png", colorize(indices, colors))
    write_dataset_meta(tmp_path / "dataset_meta.json", ["bg", "road", "tree"], colors)
    report = run(tmp_path)
    assert not found(report, "LG203")
    assert report.spec.classes == ("bg", "road", "tree")
    assert {v: report.summary.value_pixels[v] for v in report.summary.found_values()} == {
        v: int((indices == v).sum()) for v in (0, 1, 2)}


@pytest.mark.code("LG203", "pass")
@pytest.mark.code("LG207", "fail")
def test_grey_mask_with_identical_channels_is_not_a_colour_mask(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.stack([GOOD] * 3, axis=-1))
    report = run(tmp_path, THREE)
    assert not found(report, "LG203")
    assert found(report, "LG207", "a.png")[0].data["channels"] == 3
    assert report.summary.found_values() == [0, 1, 2]


# ---- LG204: non-integer values --------------------------------------------------------------

@pytest.mark.code("LG204", "fail")
def test_fractional_and_nan_values(tmp_path):
    labels = GOOD.astype(np.float32)
    labels[0, :3] = 0.5
    labels[1, :2] = np.nan
    labels[2, 0] = np.inf
    write_npy(tmp_path / "x.npy", labels)
    [finding] = found(run(tmp_path, THREE), "LG204", "x.npy")
    assert finding.data["non_integer_pixels"] == 3
    assert finding.data["non_finite_pixels"] == 3
    assert finding.data["examples"] == [0.5]


@pytest.mark.code("LG204", "pass")
def test_float_array_of_whole_numbers_is_checked_as_integers(tmp_path):
    write_npy(tmp_path / "x.npy", GOOD.astype(np.float64))
    report = run(tmp_path, THREE)
    assert not found(report, "LG204")
    assert report.summary.found_values() == [0, 1, 2]


# ---- LG205: empty masks ---------------------------------------------------------------------

@pytest.mark.code("LG205", "fail")
def test_mask_of_background_and_ignore_only_is_empty(tmp_path):
    write_png(tmp_path / "masks" / "zeros.png", np.zeros((16, 16), np.uint8))
    write_png(tmp_path / "masks" / "border.png", with_border(np.zeros((16, 16), np.uint8)))
    write_png(tmp_path / "masks" / "full.png", GOOD)
    report = run(tmp_path, LabelSpec(num_classes=3, ignore=(255,)))
    assert sorted(Path(f.path).name for f in found(report, "LG205")) == ["border.png", "zeros.png"]
    assert all(f.severity is Severity.INFO for f in found(report, "LG205"))
    assert report.summary.empty == 2


@pytest.mark.code("LG205", "pass")
def test_mask_with_foreground_is_not_empty(tmp_path):
    write_png(tmp_path / "masks" / "a.png", GOOD)
    assert not found(run(tmp_path, THREE), "LG205")


# ---- LG206: geometry ----------------------------------------------------------------------

@pytest.mark.code("LG206", "fail")
def test_paired_png_sizes_differ(tmp_path):
    images, masks = paired_dataset(tmp_path, ["a"], masks=[organic_mask((24, 32))], image_size=(48, 64))
    [finding] = found(run(tmp_path, THREE), "LG206", "a.png")
    assert finding.data["mask_shape"] == [24, 32]
    assert finding.data["image_shape"] == [48, 64, 3]
    assert "32x24" in finding.message and "64x48" in finding.message


@pytest.mark.code("LG206", "fail")
def test_npz_image_and_label_shapes_differ(tmp_path):
    write_npz(tmp_path / "case0001_slice000.npz", image=np.zeros((32, 32), np.float32), label=GOOD[:16, :16])
    [finding] = found(run(tmp_path, THREE), "LG206", "case0001_slice000.npz")
    assert finding.data == {"image_shape": [32, 32], "label_shape": [16, 16], "image_key": "image",
                            "label_key": "label"}


@pytest.mark.code("LG206", "fail")
def test_volume_slice_counts_differ(tmp_path):
    write_nifti(tmp_path / "imagesTr" / "c_001_0000.nii.gz", np.zeros((5, 16, 16), np.float32))
    write_nifti(tmp_path / "labelsTr" / "c_001.nii.gz", np.zeros((4, 16, 16), np.uint8))
    [finding] = found(run(tmp_path, LabelSpec(num_classes=2)), "LG206", "c_001.nii.gz")
    assert finding.data["image_shape"] == [5, 16, 16] and finding.data["mask_shape"] == [4, 16, 16]


@pytest.mark.code("LG206", "pass")
def test_equal_geometry_and_image_channel_axes_match(tmp_path):
    paired_dataset(tmp_path / "png", ["a", "b"])
    write_npz(tmp_path / "npz" / "s.npz", image=np.zeros((32, 32), np.float32), label=GOOD)
    write_h5(tmp_path / "h5" / "case0001.npy.h5", image=np.zeros((3, 32, 32), np.float32),
             label=np.stack([GOOD] * 3))
    write_nifti(tmp_path / "nn" / "imagesTr" / "c_001_0000.nii.gz", np.zeros((16, 16, 4, 2), np.float32))
    write_nifti(tmp_path / "nn" / "labelsTr" / "c_001.nii.gz", np.zeros((16, 16, 4), np.uint8))
    for folder in ("png", "npz", "h5", "nn"):
        report = run(tmp_path / folder, THREE)
        assert report.summary.samples >= 1
        assert not found(report, "LG206"), folder


# ---- LG207: layout ------------------------------------------------------------------------

@pytest.mark.code("LG207", "fail")
def test_16_bit_mask_with_small_values(tmp_path):
    write_png(tmp_path / "masks" / "a.png", GOOD, mode="I;16")
    [finding] = found(run(tmp_path, THREE), "LG207", "a.png")
    assert finding.data["dtype"] == "uint16"


@pytest.mark.code("LG207", "fail")
def test_mask_with_alpha_channel(tmp_path):
    write_png(tmp_path / "masks" / "a.png", GOOD, mode="LA")
    report = run(tmp_path, THREE)
    assert found(report, "LG207", "a.png")[0].data["channels"] == 2
    assert report.summary.found_values() == [0, 1, 2]


@pytest.mark.code("LG207", "pass")
def test_8_bit_and_necessary_16_bit_masks(tmp_path):
    write_png(tmp_path / "masks" / "a.png", GOOD)
    write_png(tmp_path / "masks" / "p.png", GOOD, mode="P")
    write_png(tmp_path / "masks" / "instances.png", GOOD.astype(np.uint16) * 1000, mode="I;16")
    report = run(tmp_path)
    assert report.summary.samples == 3
    assert not found(report, "LG207")


# ---- LG208 / LG209: dataset-level value patterns ----------------------------------------------

@pytest.mark.code("LG208", "fail")
def test_one_based_labels_get_a_remap(tmp_path):
    for i in range(3):
        write_png(tmp_path / "masks" / f"{i}.png", organic_mask((32, 32), (1, 2, 3), seed=i))
    report = run(tmp_path, THREE)
    [finding] = found(report, "LG208")
    assert finding.path is None
    assert finding.data["remap"] == {"1": 0, "2": 1, "3": 2}
    assert report.suggested_remap == {1: 0, 2: 1, 3: 2}


@pytest.mark.code("LG208", "pass")
def test_zero_based_labels_and_one_mask_with_background(tmp_path):
    write_png(tmp_path / "masks" / "0.png", organic_mask((32, 32), (1, 2), seed=0))
    write_png(tmp_path / "masks" / "1.png", organic_mask((32, 32), (0, 1, 2), seed=1))
    report = run(tmp_path, THREE)
    assert not found(report, "LG208")
    assert report.suggested_remap is None


@pytest.mark.code("LG209", "fail")
def test_binary_masks_stored_as_0_255(tmp_path):
    for i in range(4):
        write_png(tmp_path / "masks" / f"{i}.png", organic_mask((32, 32), (0, 255), seed=i))
    report = run(tmp_path, LabelSpec(num_classes=2))
    [finding] = found(report, "LG209")
    assert finding.data == {"remap": {"255": 1}, "files": 4}
    assert report.suggested_remap == {255: 1}


@pytest.mark.code("LG209", "pass")
def test_binary_masks_as_0_1_and_255_as_ignore(tmp_path):
    write_png(tmp_path / "a" / "masks" / "0.png", organic_mask((32, 32), (0, 1)))
    assert not found(run(tmp_path / "a", LabelSpec(num_classes=2)), "LG209")
    write_png(tmp_path / "b" / "masks" / "0.png", with_border(organic_mask((32, 32), (0, 1))))
    assert not found(run(tmp_path / "b", LabelSpec(num_classes=2, ignore=(255,))), "LG209")


@pytest.mark.code("LG104", "pass")
def test_gap_explained_by_one_based_labels_is_not_also_an_unused_class(tmp_path):
    for i in range(2):
        write_png(tmp_path / "a" / "masks" / f"{i}.png", organic_mask((32, 32), (1, 2, 3), seed=i))
    report = run(tmp_path / "a", THREE)
    assert found(report, "LG208") and not found(report, "LG104")
    write_png(tmp_path / "b" / "masks" / "0.png", organic_mask((32, 32), (0, 1, 2), seed=1))
    assert not found(run(tmp_path / "b", THREE), "LG104")


# ---- LG401: imbalance -----------------------------------------------------------------------

@pytest.mark.code("LG401", "fail")
def test_extreme_class_imbalance_is_reported_with_pixel_counts(tmp_path):
    mask = np.zeros((200, 200), np.uint8)
    mask[5, 5] = 1
    write_png(tmp_path / "masks" / "a.png", mask)
    [finding] = found(run(tmp_path, LabelSpec(num_classes=2)), "LG401")
    assert finding.severity is Severity.INFO
    assert finding.data["counts"] == {"0": 39999, "1": 1}


@pytest.mark.code("LG401", "pass")
def test_balanced_classes_and_ignore_pixels_are_not_imbalance(tmp_path):
    mask = with_border(organic_mask((64, 64), (0, 1, 2)), width=1)
    write_png(tmp_path / "masks" / "a.png", mask)
    # 255 is most of nothing here, but even a huge ignore area must not count as a class
    write_png(tmp_path / "masks" / "b.png", np.pad(organic_mask((8, 8), (0, 1)), 100, constant_values=255))
    assert not found(run(tmp_path, LabelSpec(num_classes=3, ignore=(255,))), "LG401")


@pytest.mark.code("LG201", "fail")
def test_cityscapes_instance_ids_are_read_as_their_label_ids(tmp_path):
    """id * 1000 + instance for objects, the id alone for stuff: 26001 is a car (26)."""
    from audit_helpers import found, run

    ids = np.full((8, 16), 7, np.uint16)  # road
    ids[2:4, 2:6] = 26001
    ids[5:7, 8:12] = 26002
    write_png(tmp_path / "gtFine" / "train" / "aachen" / "aachen_000000_000019_gtFine_instanceIds.png", ids)
    write_png(tmp_path / "leftImg8bit" / "train" / "aachen" / "aachen_000000_000019_leftImg8bit.png",
              np.full((8, 16, 3), 90, np.uint8))
    report = run(tmp_path)
    assert report.layouts == ["cityscapes"]
    assert set(report.summary.value_pixels) == {7, 26}
    assert any("instanceIds" in n for n in report.notes)
    [outside] = found(run(tmp_path, LabelSpec(num_classes=20)), "LG201")
    assert "26" in outside.message
