"""Mask readers and colour maps on real files of every supported format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from builders import (
    colorize, organic_mask, rgb_image, voc_palette, write_bmp, write_dataset_meta, write_h5, write_jpeg,
    write_json, write_label_colors, write_list, write_nifti, write_npy, write_npz, write_png, write_tiff,
    write_voc_labelmap,
)
from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.readers.base import ReadError, sniff
from labelguard.readers.colormap import decode, find_color_map, load_color_map, voc_color_map, voc_palette_colors
from labelguard.readers.masks import LABEL_KEYS, image_shape, read_mask

MASK = organic_mask((24, 32), (0, 1, 2, 5), seed=4)
VOLUME = np.stack([organic_mask((24, 32), (0, 1, 2, 5), seed=s) for s in range(4)])
COLORS = [(0, 0, 0), (200, 30, 30), (30, 200, 30), (30, 30, 200)]


# ---- images -------------------------------------------------------------------------------

def test_png_grey(tmp_path):
    record = read_mask(str(write_png(tmp_path / "a.png", MASK)))
    assert (record.container, record.mode, record.lossy, record.renamed) == ("png", "L", False, False)
    np.testing.assert_array_equal(record.array, MASK)


def test_png_palette_gives_the_indices_and_the_palette(tmp_path):
    record = read_mask(str(write_png(tmp_path / "a.png", MASK, mode="P")))
    assert record.mode == "P"
    np.testing.assert_array_equal(record.array, MASK)
    assert list(record.palette[:63]) == voc_palette()[:63]


def test_png_16_bit_keeps_values_above_255(tmp_path):
    wide = MASK.astype(np.uint16) * 1000
    record = read_mask(str(write_png(tmp_path / "a.png", wide, mode="I;16")))
    assert record.mode == "I;16" and record.array.dtype == np.uint16
    np.testing.assert_array_equal(record.array, wide)


@pytest.mark.parametrize("mode, channels", [("RGB", 3), ("RGBA", 4)])
def test_png_colour_stays_colour(tmp_path, mode, channels):
    rgb = colorize(MASK, COLORS + [(0, 0, 0)] * 2)
    array = rgb if mode == "RGB" else np.dstack([rgb, np.full(MASK.shape, 255, np.uint8)])
    record = read_mask(str(write_png(tmp_path / "a.png", array)))
    assert record.mode == mode and record.array.shape == (24, 32, channels)
    np.testing.assert_array_equal(record.array[..., :3], rgb)


def test_bmp(tmp_path):
    record = read_mask(str(write_bmp(tmp_path / "a.bmp", MASK)))
    assert record.container == "bmp"
    np.testing.assert_array_equal(record.array, MASK)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_tiff_2d(tmp_path, dtype):
    record = read_mask(str(write_tiff(tmp_path / "a.tif", MASK.astype(dtype))))
    assert record.container == "tiff" and record.array.dtype == dtype
    np.testing.assert_array_equal(record.array, MASK.astype(dtype))


def test_tiff_stack_is_a_volume(tmp_path):
    import tifffile

    tifffile.imwrite(tmp_path / "stack.tif", VOLUME, photometric="minisblack")
    np.testing.assert_array_equal(read_mask(str(tmp_path / "stack.tif")).array, VOLUME)


@pytest.mark.code("LG203", "pass")
def test_tiff_stack_is_audited_as_a_volume_not_as_colours(tmp_path):
    import tifffile

    (tmp_path / "masks").mkdir()
    tifffile.imwrite(tmp_path / "masks" / "stack.tif", VOLUME, photometric="minisblack")
    report = audit(tmp_path, LabelSpec(num_classes=3), use_project_config=False)
    assert "LG203" not in report.code_counts()
    [finding] = [f for f in report.findings if f.code == "LG201"]
    assert finding.data["values"] == [5] and finding.data["counts"] == [int((VOLUME == 5).sum())]


def test_jpeg_is_lossy_and_a_renamed_jpeg_is_still_a_jpeg(tmp_path):
    plain = read_mask(str(write_jpeg(tmp_path / "a.jpg", MASK * 50)))
    renamed = read_mask(str(write_jpeg(tmp_path / "b.png", MASK * 50)))
    assert (plain.container, plain.lossy, plain.renamed) == ("jpeg", True, False)
    assert (renamed.container, renamed.declared, renamed.lossy, renamed.renamed) == ("jpeg", "png", True, True)


def test_format_is_sniffed_from_the_bytes_not_the_name(tmp_path):
    png = write_png(tmp_path / "a.png", MASK).read_bytes()
    npy = write_npy(tmp_path / "a.npy", MASK).read_bytes()
    assert sniff(png[:16]) == "png" and sniff(npy[:16]) == "npy"
    (tmp_path / "png_named.npy").write_bytes(png)
    record = read_mask(str(tmp_path / "png_named.npy"))
    assert (record.container, record.declared, record.renamed) == ("png", "npy", True)
    np.testing.assert_array_equal(record.array, MASK)


# ---- arrays -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.float32, np.bool_])
def test_npy_keeps_dtype_and_shape(tmp_path, dtype):
    array = (MASK > 0) if dtype is np.bool_ else MASK.astype(dtype)
    record = read_mask(str(write_npy(tmp_path / "a.npy", array)))
    assert record.container == "npy" and record.array.dtype == array.dtype
    np.testing.assert_array_equal(record.array, array)


@pytest.mark.parametrize("key", LABEL_KEYS)
def test_npz_finds_the_label_among_the_usual_keys(tmp_path, key):
    path = write_npz(tmp_path / "a.npz", image=np.zeros((24, 32), np.float32), **{key: MASK})
    record = read_mask(str(path))
    assert record.key == key and record.image_shape == (24, 32)
    np.testing.assert_array_equal(record.array, MASK)


def test_npz_with_other_keys_needs_key(tmp_path):
    path = str(write_npz(tmp_path / "a.npz", volume=VOLUME, annotation=MASK))
    with pytest.raises(ReadError, match="--key"):
        read_mask(path)
    assert read_mask(path, key="annotation").key == "annotation"
    with pytest.raises(ReadError, match="annotation, |volume"):
        read_mask(path, key="missing")


def test_key_option_reaches_the_reader_through_the_audit(tmp_path):
    write_npz(tmp_path / "a.npz", volume=np.zeros((24, 32), np.float32), annotation=MASK)
    without = audit(tmp_path, LabelSpec(num_classes=3), use_project_config=False)
    assert [f.code for f in without.findings] == ["LG001"]
    keyed = audit(tmp_path, LabelSpec(num_classes=3), options=AuditOptions(key="annotation"),
                  use_project_config=False)
    assert keyed.summary.found_values() == [0, 1, 2, 5]


def test_hdf5_and_swin_unet_synapse_volume(tmp_path):
    path = write_h5(tmp_path / "case0001.npy.h5", image=VOLUME.astype(np.float32), label=VOLUME)
    record = read_mask(str(path))
    assert (record.container, record.declared, record.key) == ("hdf5", "hdf5", "label")
    assert record.image_shape == VOLUME.shape
    np.testing.assert_array_equal(record.array, VOLUME)


@pytest.mark.parametrize("name", ["a.nii", "a.nii.gz"])
@pytest.mark.parametrize("array", [MASK, VOLUME], ids=["2d", "3d"])
def test_nifti(tmp_path, name, array):
    record = read_mask(str(write_nifti(tmp_path / name, array)))
    assert record.container == "nifti" and not record.renamed
    np.testing.assert_array_equal(record.array, array)


def test_image_shape_reads_headers(tmp_path):
    assert image_shape(str(write_png(tmp_path / "i.png", rgb_image((24, 32))))) == (24, 32, 3)
    assert image_shape(str(write_png(tmp_path / "g.png", MASK))) == (24, 32)
    assert image_shape(str(write_nifti(tmp_path / "v.nii.gz", VOLUME.astype(np.float32)))) == VOLUME.shape
    assert image_shape(str(write_npy(tmp_path / "x.npy", VOLUME))) == VOLUME.shape
    assert image_shape(str(write_npz(tmp_path / "s.npz", image=VOLUME, label=VOLUME))) == VOLUME.shape


# ---- every reader feeds the same value checks ---------------------------------------------------

WRITERS = {
    "png": lambda d: write_png(d / "m.png", MASK),
    "png-palette": lambda d: write_png(d / "m.png", MASK, mode="P"),
    "png-16": lambda d: write_png(d / "m.png", MASK.astype(np.uint16) + 256, mode="I;16"),
    "bmp": lambda d: write_bmp(d / "m.bmp", MASK),
    "tiff": lambda d: write_tiff(d / "m.tif", MASK),
    "npy": lambda d: write_npy(d / "m.npy", MASK.astype(np.int64)),
    "npz": lambda d: write_npz(d / "m.npz", image=MASK.astype(np.float32), label=MASK),
    "hdf5": lambda d: write_h5(d / "m.npy.h5", image=VOLUME.astype(np.float32), label=VOLUME),
    "nii": lambda d: write_nifti(d / "m.nii", MASK),
    "nii.gz": lambda d: write_nifti(d / "m.nii.gz", VOLUME),
}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_format_reports_the_same_out_of_range_value(tmp_path, fmt):
    path = WRITERS[fmt](tmp_path / "masks")
    array = read_mask(str(path)).array
    offset = 256 if fmt == "png-16" else 0
    spec = LabelSpec(values=tuple(v + offset for v in (0, 1, 2)))
    report = audit(tmp_path, spec, use_project_config=False)
    [finding] = [f for f in report.findings if f.code == "LG201"]
    assert finding.data["values"] == [5 + offset]
    assert finding.data["counts"] == [int((array == 5 + offset).sum())]
    assert Path(finding.path).name == path.name


# ---- colour maps --------------------------------------------------------------------------

NAMES = ["background", "road", "tree", "sky"]


@pytest.mark.parametrize("writer, name", [
    (write_dataset_meta, "dataset_meta.json"),
    (write_label_colors, "label_colors.txt"),
    (write_voc_labelmap, "labelmap.txt"),
])
def test_colour_map_files(tmp_path, writer, name):
    color_map = load_color_map(str(writer(tmp_path / name, NAMES, COLORS)))
    assert list(color_map.colors) == COLORS and list(color_map.names) == NAMES


def test_csv_colour_map(tmp_path):
    write_list(tmp_path / "class_dict.csv", ["name,r,g,b"] + [f"{n},{r},{g},{b}" for n, (r, g, b) in zip(NAMES, COLORS)])
    color_map = load_color_map(str(tmp_path / "class_dict.csv"))
    assert list(color_map.colors) == COLORS and list(color_map.names) == NAMES


@pytest.mark.parametrize("content", ["", "255 0\n", "road:1,2::\n"], ids=["empty", "short-row", "bad-colour"])
def test_broken_colour_maps_are_read_errors(tmp_path, content):
    path = tmp_path / ("labelmap.txt" if ":" in content else "label_colors.txt")
    path.write_text(content)
    with pytest.raises(ReadError):
        load_color_map(str(path))


def test_voc_palette_matches_the_reference_construction():
    reference = voc_palette()
    assert list(voc_palette_colors(256)) == [tuple(reference[i:i + 3]) for i in range(0, 768, 3)]
    assert voc_color_map().names[15] == "person" and voc_color_map().colors[15] == (192, 128, 128)


def test_decode_counts_unmapped_colours(tmp_path):
    rgb = colorize(MASK, COLORS[:3] + [(0, 0, 0), (0, 0, 0), COLORS[3]])
    rgb[0, :7] = (1, 2, 3)
    color_map = load_color_map(str(write_label_colors(tmp_path / "label_colors.txt", NAMES, COLORS)))
    indices, unmapped = decode(rgb, color_map)
    assert unmapped == {(1, 2, 3): 7}
    expected = MASK.astype(np.int64).copy()
    expected[expected == 5] = 3  # the writer painted value 5 with the fourth colour
    expected[0, :7] = -1
    np.testing.assert_array_equal(indices, expected)


def test_nearest_declared_colour_map_wins(tmp_path):
    write_label_colors(tmp_path / "label_colors.txt", NAMES, COLORS)
    write_json(tmp_path / "masks" / "dataset_meta.json", {"label_map": {"0": "bg"}})  # no colours: not a map
    write_voc_labelmap(tmp_path / "masks" / "labelmap.txt", NAMES[:2], COLORS[:2])
    color_map, problem = find_color_map([str(tmp_path / "masks"), str(tmp_path)])
    assert problem is None and color_map.names == tuple(NAMES[:2])


# ---- colour masks through their maps in an audit ---------------------------------------------

def _colour_dataset(root: Path, colors=COLORS) -> np.ndarray:
    indices = organic_mask((24, 32), (0, 1, 2, 3), seed=9)
    rgb = colorize(indices, colors)
    rgb[0, :5] = (9, 9, 9)
    write_png(root / "masks" / "a.png", rgb)
    write_png(root / "images" / "a.png", rgb_image((24, 32)))
    return indices


@pytest.mark.code("LG201", "fail")
@pytest.mark.parametrize("map_file", ["dataset_meta.json", "label_colors.txt", "labelmap.txt", "--color-map"])
def test_unmapped_colours_are_lg201_with_pixel_counts(tmp_path, map_file):
    indices = _colour_dataset(tmp_path / "data")
    options = AuditOptions()
    if map_file == "--color-map":
        options = AuditOptions(color_map=str(write_label_colors(tmp_path / "my_colours.txt", NAMES, COLORS)))
    else:
        {"dataset_meta.json": write_dataset_meta, "label_colors.txt": write_label_colors,
         "labelmap.txt": write_voc_labelmap}[map_file](tmp_path / "data" / map_file, NAMES, COLORS)
    report = audit(tmp_path / "data", LabelSpec(), options=options, use_project_config=False)
    assert "LG203" not in report.code_counts()
    [finding] = [f for f in report.findings if f.code == "LG201"]
    assert finding.data["colors"] == {"9,9,9": 5}
    assert "(9, 9, 9) in 5 pixels" in finding.message
    decoded = indices.reshape(-1)[5:]  # the first five pixels of row 0 were painted (9, 9, 9)
    assert {v: report.summary.value_pixels[v] for v in report.summary.found_values()} == {
        int(v): int((decoded == v).sum()) for v in np.unique(decoded)}


def test_standard_voc_palette_decodes_voc_colour_masks(tmp_path):
    colors = voc_color_map().colors
    indices = organic_mask((24, 32), (0, 12, 15), seed=2)
    write_png(tmp_path / "SegmentationClass" / "2007_000001.png", colorize(indices, colors))
    report = audit(tmp_path, LabelSpec(num_classes=21, ignore=(255,)), use_project_config=False)
    assert report.layouts == ["voc-segmentation"]
    assert not {"LG201", "LG203"} & set(report.code_counts())
    assert report.summary.found_values() == [0, 12, 15]


def test_palette_png_is_read_as_indices_not_colours(tmp_path):
    write_png(tmp_path / "SegmentationClass" / "a.png", organic_mask((24, 32), (0, 3)), mode="P")
    report = audit(tmp_path, LabelSpec(num_classes=21), use_project_config=False)
    assert report.summary.found_values() == [0, 3]
    assert "LG203" not in report.code_counts()


def test_every_sniffed_container_has_a_reader_and_every_editor_a_reader():
    from labelguard.fix._masks import MASK_EDITORS
    from labelguard.readers.base import MAGIC
    from labelguard.readers.masks import MASK_READERS

    assert {kind for _, kind in MAGIC} | {"nifti"} <= set(MASK_READERS)
    assert set(MASK_EDITORS) <= set(MASK_READERS)
