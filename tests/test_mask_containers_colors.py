"""Masks as real tools write them: JPEG damage inside arrays, multi-page TIFFs, HDF5/NPZ
image and label keys, colour maps that decide, JPEG fringes kept out of class statistics,
and photographs saved where labels belong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from builders import (
    colorize, jpeg_roundtrip, organic_mask, voc_palette, write_dataset_meta, write_h5, write_jpeg,
    write_npy, write_npz, write_png, write_tiff,
)
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.readers.base import ReadError
from labelguard.readers.colormap import voc_color_map
from labelguard.readers.masks import read_mask
from audit_helpers import codes, found, run

REALWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "realworld"
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir(), reason="../shared/realworld is absent")


def smeared(size=(96, 96), seed=0) -> np.ndarray:
    """A mask of classes 0, 60, 120, 180 after one JPEG save and reload."""
    return jpeg_roundtrip(organic_mask(size, (0, 1, 2, 3), seed=seed) * 60, quality=75)


def photo(size=(96, 128), seed=0, rgb=False) -> np.ndarray:
    """A photograph: smooth shading with sensor noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size[0], 0:size[1]]
    grey = 40 + xx + 0.5 * yy + 30 * np.sin(xx / 9.0) * np.cos(yy / 7.0)
    if not rgb:
        return np.clip(grey + rng.normal(0, 5, size), 0, 255).astype(np.uint8)
    channels = [grey + rng.normal(0, 5, size) + shift for shift in (0, 25, -20)]
    return np.clip(np.stack(channels, -1), 0, 255).astype(np.uint8)


# ---- JPEG damage inside arrays (LG202) ----------------------------------------------------

@pytest.mark.code("LG202", "fail")
@pytest.mark.parametrize("container", ["npy", "npz", "h5"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_jpeg_fringe_inside_array_containers_is_lg202(tmp_path, container, dtype):
    array = smeared().astype(dtype)
    path = tmp_path / "labels" / f"case0.{container}"
    if container == "npy":
        write_npy(path, array)
    elif container == "npz":
        write_npz(path, label=array)
    else:
        write_h5(path, label=array)
    [finding] = found(run(tmp_path), "LG202")
    assert finding.path.endswith(f"case0.{container}")
    assert finding.data["stray_pixels"] > 0
    assert {0, 180} <= set(finding.data["main_values"]) <= {0, 60, 120, 180}
    if container != "npy":
        assert "'label'" in finding.message


@pytest.mark.code("LG202", "pass")
@pytest.mark.parametrize("container", ["npy", "npz", "h5"])
def test_clean_arrays_in_containers_are_not_lg202(tmp_path, container):
    array = organic_mask((96, 96), (0, 1, 2, 3)) * 60
    path = tmp_path / "labels" / f"case0.{container}"
    {"npy": lambda: write_npy(path, array), "npz": lambda: write_npz(path, label=array),
     "h5": lambda: write_h5(path, label=array)}[container]()
    assert "LG202" not in codes(run(tmp_path))


# ---- multi-page TIFF (LG001) --------------------------------------------------------------

def write_pil_stack(path: Path, pages: list[np.ndarray]) -> Path:
    images = [Image.fromarray(p) for p in pages]
    images[0].save(path, save_all=True, append_images=images[1:])
    return path


@pytest.mark.code("LG001", "fail")
def test_tiff_stack_cut_after_a_page_is_lg001_not_a_shorter_volume(tmp_path):
    import tifffile

    pages = [np.full((32, 32), i % 3, np.uint8) for i in range(5)]
    path = write_pil_stack(tmp_path / "stack.tif", pages)
    with tifffile.TiffFile(path) as tiff:
        last = tiff.pages[4]
        cut = min(last.offset, *last.dataoffsets)
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(ReadError, match="truncated or damaged TIFF"):
        read_mask(str(path))
    report = run(tmp_path)
    [finding] = found(report, "LG001", "stack.tif")
    assert "TIFF" in finding.message
    assert report.summary.samples == 0


@pytest.mark.code("LG001", "fail")
def test_tiff_whose_pages_differ_in_size_is_lg001_not_its_first_page(tmp_path):
    import tifffile

    path = tmp_path / "mixed.tif"
    tifffile.imwrite(path, np.zeros((32, 32), np.uint8))
    tifffile.imwrite(path, np.ones((16, 16), np.uint8), append=True)
    with pytest.raises(ReadError, match="inconsistent multi-page TIFF"):
        read_mask(str(path))
    assert found(run(tmp_path), "LG001", "mixed.tif")


@pytest.mark.code("LG001", "pass")
def test_complete_tiff_stacks_are_read_as_volumes(tmp_path):
    pages = [np.full((32, 32), i % 3, np.uint8) for i in range(5)]
    assert read_mask(str(write_pil_stack(tmp_path / "pil.tif", pages))).array.shape == (5, 32, 32)
    assert read_mask(str(write_tiff(tmp_path / "t.tif", np.stack(pages)))).array.shape == (5, 32, 32)
    assert "LG001" not in codes(run(tmp_path))


# ---- image and label keys in HDF5/NPZ (LG206, --image-key) ---------------------------------

@pytest.mark.code("LG206", "fail")
@pytest.mark.parametrize("image_key, label_key", [("raw", "label"), ("image", "label"), ("data", "seg")])
def test_hdf5_image_and_label_keys_as_tools_name_them(tmp_path, image_key, label_key):
    write_h5(tmp_path / "vol.h5", **{image_key: np.zeros((8, 32, 32), np.uint16),
                                     label_key: np.zeros((8, 16, 16), np.int64)})
    record = read_mask(str(tmp_path / "vol.h5"))
    assert (record.key, record.image_key) == (label_key, image_key)
    [finding] = found(run(tmp_path, LabelSpec(num_classes=2)), "LG206")
    assert finding.data["image_key"] == image_key and finding.data["label_key"] == label_key
    assert finding.data["image_shape"] == [8, 32, 32] and finding.data["label_shape"] == [8, 16, 16]


@pytest.mark.code("LG206", "fail")
@pytest.mark.code("LG206", "pass")
def test_image_key_option_names_the_image_array(tmp_path):
    write_h5(tmp_path / "vol.h5", volume=np.zeros((4, 16, 16), np.float32),
             segmentation=np.zeros((4, 16, 16), np.uint8), thumbnail=np.zeros((8, 8), np.uint8))
    runner = CliRunner()
    args = ["audit", str(tmp_path), "--no-config", "--num-classes", "2", "--key", "segmentation",
            "-f", "json"]
    fine = runner.invoke(main, [*args, "--image-key", "volume"])
    assert fine.exit_code == 0, fine.output
    assert '"LG206"' not in fine.output
    wrong = runner.invoke(main, [*args, "--image-key", "thumbnail"])
    assert wrong.exit_code == 1 and '"LG206"' in wrong.output
    missing = runner.invoke(main, [*args, "--image-key", "nope"])
    assert "has no image array 'nope'" in missing.output


@needs_realworld
@pytest.mark.code("LG206", "pass")
@pytest.mark.code("LG001", "pass")
def test_pytorch_3dunet_volume_reads_raw_and_label():
    path = REALWORLD / "pytorch-3dunet" / "resources" / "sample_patch.h5"
    record = read_mask(str(path))
    assert (record.key, record.image_key, record.image_shape) == ("label", "raw", (64, 200, 200))
    report = run(path)
    assert not codes(report) & {"LG001", "LG206", "LG202"}, [f.message for f in report.findings]


# ---- colour maps are authoritative (LG201, LG203, LG207) -----------------------------------

CITYSCAPES = [("unlabeled", (0, 0, 0)), ("road", (128, 64, 128)), ("building", (70, 70, 70)),
              ("wall", (102, 102, 156)), ("pole", (153, 153, 153))]


@pytest.mark.code("LG201", "pass")
@pytest.mark.code("LG207", "pass")
def test_declared_colour_map_decodes_masks_whose_colours_are_all_grey(tmp_path):
    names, colors = [n for n, _ in CITYSCAPES], [c for _, c in CITYSCAPES]
    write_dataset_meta(tmp_path / "dataset_meta.json", names, colors)
    grey = organic_mask((32, 32), (0, 2, 4), seed=1)  # unlabeled, building, pole: all grey
    write_png(tmp_path / "masks" / "a.png", colorize(grey, colors))
    report = run(tmp_path)
    assert not codes(report) & {"LG201", "LG203", "LG207"}, [f.message for f in report.findings]
    assert report.summary.found_values() == [0, 2, 4]


@pytest.mark.code("LG207", "fail")
def test_grey_rgb_mask_without_a_declared_map_is_still_grey(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.stack([organic_mask((32, 32), (0, 1, 2))] * 3, -1))
    report = run(tmp_path, LabelSpec(num_classes=3))
    assert found(report, "LG207", "a.png") and report.summary.found_values() == [0, 1, 2]


@pytest.mark.code("LG203", "fail")
def test_rgb_mask_among_voc_palette_pngs_is_lg203(tmp_path):
    indices = organic_mask((24, 32), (0, 12, 15), seed=2)
    for name in ("2007_000001", "2007_000002"):
        write_png(tmp_path / "SegmentationClass" / f"{name}.png", indices, mode="P", palette=voc_palette())
    write_png(tmp_path / "SegmentationClass" / "2007_000003.png", colorize(indices, voc_color_map().colors))
    report = run(tmp_path, LabelSpec(num_classes=21, ignore=(255,)))
    assert report.layouts == ["voc-segmentation"]
    [finding] = found(report, "LG203")
    assert finding.data["rgb_masks"] == 1 and finding.data["palette_masks"] == 2
    assert any(f.endswith("2007_000003.png") for f in finding.data["files"])
    assert report.summary.found_values() == [0, 12, 15]


@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG201", "pass")
def test_voc_void_colour_decodes_to_255_and_the_ignore_index_accepts_it(tmp_path):
    indices = organic_mask((24, 32), (0, 1, 255), seed=3)
    colors = {0: (0, 0, 0), 1: (128, 0, 0), 255: (224, 224, 192)}
    rgb = np.zeros((*indices.shape, 3), np.uint8)
    for value, color in colors.items():
        rgb[indices == value] = color
    write_png(tmp_path / "SegmentationClass" / "2007_000001.png", rgb)
    accepted = run(tmp_path, LabelSpec(num_classes=21, ignore=(255,)))
    assert "LG201" not in codes(accepted) and accepted.summary.found_values() == [0, 1, 255]
    [finding] = found(run(tmp_path, LabelSpec(num_classes=21)), "LG201")
    assert finding.data["values"] == [255] and "--ignore-index 255" in finding.hint


# ---- JPEG fringe values are no classes (LG401, LG104) --------------------------------------

@pytest.mark.code("LG401", "pass")
@pytest.mark.code("LG202", "fail")
def test_jpeg_fringe_values_stay_out_of_class_statistics(tmp_path):
    for seed in range(3):
        write_jpeg(tmp_path / "masks" / f"m{seed}.jpg", organic_mask((96, 96), (0, 1, 2, 3), seed=seed) * 60)
    report = run(tmp_path, LabelSpec(values=(0, 60, 120, 180)))
    lossy = found(report, "LG202")
    assert len(lossy) == 3 and all(f.data["stray_values"] for f in lossy)
    assert set(report.summary.found_values()) <= {0, 60, 120, 180}
    fringe = sum(f.data["stray_pixels"] for f in lossy)
    assert sum(report.summary.value_pixels.values()) == 3 * 96 * 96 - fringe
    for finding in found(report, "LG401"):
        assert set(finding.data["counts"]) <= {"0", "60", "120", "180"}


# ---- photographs saved where labels belong (LG201/LG203 looks_like_image) ------------------

@pytest.mark.code("LG201", "fail")
@pytest.mark.parametrize("spec", [LabelSpec(), LabelSpec(num_classes=3)], ids=["no-spec", "spec"])
def test_grey_photo_in_a_label_folder_is_flagged_as_an_image(tmp_path, spec):
    write_png(tmp_path / "labels" / "a.png", photo())
    report = run(tmp_path, spec)
    [finding] = [f for f in found(report, "LG201") if f.data.get("looks_like_image")]
    assert "looks like an image" in finding.message and finding.data["distinct"] >= 32
    assert report.summary.found_values() == []
    assert "LG401" not in codes(report)


@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG204", "pass")
def test_normalised_float_photo_is_an_image_not_fractional_labels(tmp_path):
    write_npy(tmp_path / "labels" / "a.npy", photo().astype(np.float32) / 255)
    report = run(tmp_path)
    [finding] = found(report, "LG201")
    assert finding.data["looks_like_image"] is True and "LG204" not in codes(report)


@pytest.mark.code("LG201", "fail")
def test_grey_photo_saved_with_three_channels_is_flagged_as_an_image(tmp_path):
    write_png(tmp_path / "labels" / "a.png", np.stack([photo()] * 3, -1))
    [finding] = found(run(tmp_path, LabelSpec(num_classes=3)), "LG201")
    assert finding.data["looks_like_image"] is True


@pytest.mark.code("LG203", "fail")
def test_rgb_photo_in_a_label_folder_is_flagged_as_an_image(tmp_path):
    write_png(tmp_path / "labels" / "a.png", photo(rgb=True))
    [finding] = found(run(tmp_path), "LG203")
    assert finding.data["looks_like_image"] is True and "photograph" in finding.message


@pytest.mark.code("LG201", "pass")
@pytest.mark.code("LG203", "pass")
def test_jpeg_damaged_and_instance_masks_are_not_taken_for_images(tmp_path):
    write_png(tmp_path / "labels" / "smeared.png", smeared())
    instances = np.zeros((128, 128), np.uint16)
    for i in range(400):  # 400 small nuclei, as StarDist instance masks hold
        y, x = divmod(i, 20)
        instances[y * 6 + 1:y * 6 + 5, x * 6 + 1:x * 6 + 5] = i + 1
    write_tiff(tmp_path / "labels" / "nuclei.tif", instances)
    report = run(tmp_path)
    assert not [f for f in report.findings if f.data.get("looks_like_image")]


REAL_LABELS = [
    "stardist/tests/data/mask2d.tif",
    "stardist/tests/data/mask3d.tif",
    "pytorch-3dunet/resources/sample_patch.h5",
    "mmsegmentation/tests/data/pseudo_dataset/gts",
    "mmsegmentation/tests/data/pseudo_cityscapes_dataset/gtFine/frankfurt_000000_000294_gtFine_labelIds.png",
    "mmsegmentation/tests/data/pseudo_cityscapes_dataset/gtFine/frankfurt_000000_000294_gtFine_labelTrainIds.png",
    "mmsegmentation/tests/data/pseudo_cityscapes_dataset/gtFine/frankfurt_000000_000294_gtFine_instanceIds.png",
    "labelme/examples/semantic_segmentation/data_dataset_voc/SegmentationClass",
    "labelme/examples/semantic_segmentation/data_dataset_voc/SegmentationClassNpy",
    "monai/tests/testing_data/anatomical_label.nii.gz",
]


@needs_realworld
@pytest.mark.code("LG201", "pass")
@pytest.mark.parametrize("relative", REAL_LABELS)
def test_real_label_masks_are_not_taken_for_images(relative):
    report = run(REALWORLD / relative)
    assert report.summary.samples > 0
    assert not [f.message for f in report.findings if f.data.get("looks_like_image")]


@needs_realworld
@pytest.mark.parametrize("relative", [
    "stardist/tests/data/img2d.tif", "monai/tests/testing_data/anatomical.nii",
    "labelme/examples/semantic_segmentation/data_dataset_voc/JPEGImages/2011_000003.jpg",
])
@pytest.mark.code("LG201", "fail")
def test_real_images_audited_as_labels_are_flagged(relative):
    report = run(REALWORLD / relative)
    assert [f for f in report.findings if f.data.get("looks_like_image")], [f.message for f in report.findings]


@pytest.mark.code("LG001", "fail")
def test_pillow_reads_every_page_of_a_stack_and_refuses_pages_of_different_sizes(tmp_path):
    from labelguard.readers.masks import _tiff_frames

    pages = [np.full((16, 16), i, np.uint8) for i in range(3)]
    with Image.open(write_pil_stack(tmp_path / "stack.tif", pages)) as image:
        assert _tiff_frames(image).shape == (3, 16, 16)
    mixed = write_pil_stack(tmp_path / "mixed.tif", [pages[0], np.zeros((8, 8), np.uint8)])
    with Image.open(mixed) as image, pytest.raises(ReadError, match="inconsistent multi-page TIFF"):
        _tiff_frames(image)


@pytest.mark.code("LG203", "fail")
def test_a_colour_label_folder_that_is_no_camvid_split_is_still_lg203(tmp_path):
    """The CamVid default applies only to an `<x>annot` folder beside its `<x>` images."""
    from audit_helpers import codes, run
    from builders import write_png

    rgb = np.zeros((8, 8, 3), np.uint8)
    rgb[:4] = (128, 64, 128)
    write_png(tmp_path / "trainannot" / "a.png", rgb)
    assert "LG203" in codes(run(tmp_path / "trainannot"))
    write_png(tmp_path / "train" / "a.png", np.full((8, 8, 3), 90, np.uint8))
    report = run(tmp_path / "trainannot")
    assert "LG203" not in codes(report)
    assert any("CamVid label split" in n for n in report.notes)


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("name, text", [
    ("label_colors.txt", "0 0 0 background\n300 0 0 car\n"),
    ("labelmap.txt", "# label:color_rgb:parts:actions\nbackground:0,0,0::\ncar:-1,0,0::\n"),
    ("dataset_meta.json", '{"label_map": {"0": "background", "1": "car"}, "segmentation_colors": [[0, 0, 0], [0, 256, 0]]}'),
    ("class_dict.csv", "name,r,g,b\nbackground,0,0,0\ncar,0,0,999\n"),
])
def test_a_colour_map_with_a_component_outside_0_255_is_lg001_naming_it(tmp_path, name, text):
    write_png(tmp_path / "masks" / "a.png", np.zeros((8, 8, 3), np.uint8))
    (tmp_path / name).write_text(text)
    report = run(tmp_path)
    messages = [f.message for f in report.findings if f.code == "LG001"]
    assert any("outside 0..255" in m and name in m for m in messages), messages


@pytest.mark.code("LG001", "pass")
@pytest.mark.code("LG203", "pass")
def test_a_class_dict_csv_beside_colour_masks_is_their_colour_map_not_a_table(tmp_path):
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[2:5, 2:5] = (128, 0, 0)
    write_png(tmp_path / "masks" / "a.png", mask)
    (tmp_path / "class_dict.csv").write_text("name,r,g,b\nbackground,0,0,0\ncar,128,0,0\n")
    report = run(tmp_path)
    assert report.layouts == ["masks"] and not codes(report) & {"LG001", "LG203", "LG201"}
    assert report.summary.value_pixels[1] == 9
