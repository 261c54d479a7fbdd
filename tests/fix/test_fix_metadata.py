"""A remap keeps what a mask file carries besides its labels: PNG text chunks and resolution,
TIFF compression, resolution, description and ImageJ metadata, the NIfTI header and affine,
HDF5 attributes, chunking and compression. Each is read back from the written file."""

import importlib.util

import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from fix_data import binary_255_mask, digests
from labelguard import LabelSpec
from labelguard.fix import remap, undo

SPEC = LabelSpec(num_classes=2)


def fix_and_check(path, read_metadata):
    """Remap 255 -> 1 in ``path``; the metadata read after equals the one before; undo restores."""
    before, original = read_metadata(path), digests([path])
    result = remap(str(path.parent), "255:1", spec=SPEC, apply=True)
    assert [c.status for c in result.changes] == ["written"], result.changes
    assert read_metadata(path) == before
    undo(str(path.parent))
    assert digests([path]) == original
    return before


def png_metadata(path):
    with Image.open(path) as image:
        image.load()
        text = {k: (str(v), getattr(v, "lang", None), getattr(v, "tkey", None)) for k, v in image.text.items()}
        return text, tuple(round(v, 2) for v in image.info["dpi"]), image.mode, int(np.asarray(image).max())


def test_png_keeps_its_text_chunks_and_resolution(tmp_path):
    chunks = PngImagePlugin.PngInfo()
    chunks.add_text("Software", "labelme 5.2")
    chunks.add_text("Source", "site A scanner", zip=True)
    chunks.add_itxt("Description", "Läsion masks", lang="de", tkey="Beschreibung")
    path = tmp_path / "masks" / "a.png"
    path.parent.mkdir()
    Image.fromarray(binary_255_mask(1)).save(path, pnginfo=chunks, dpi=(300, 300))
    text, dpi, mode = fix_and_check(path, lambda p: png_metadata(p)[:3])
    assert set(text) == {"Software", "Source", "Description"} and text["Description"][1:] == ("de", "Beschreibung")
    assert dpi == (300.0, 300.0) and mode == "L"


def tiff_metadata(path):
    import tifffile

    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        imagej = {k: v for k, v in (tif.imagej_metadata or {}).items() if k != "ImageJ"}
        return (int(page.compression), int(page.predictor), page.resolution, int(page.resolutionunit), imagej,
                None if tif.is_imagej else page.description, page.software, tif.series[0].axes)


@pytest.mark.parametrize("options", [
    {"compression": "zlib", "predictor": True, "resolution": (10.0, 20.0), "resolutionunit": "CENTIMETER",
     "metadata": None, "description": "lesion masks, rater 2", "software": "ITK-SNAP"},
    {"imagej": True, "compression": "zlib", "resolution": (4.0, 4.0),
     "metadata": {"spacing": 2.5, "unit": "um", "axes": "ZYX"}},
], ids=["zlib-description", "imagej-stack"])
def test_tiff_keeps_compression_resolution_and_imagej_metadata(tmp_path, options):
    tifffile = pytest.importorskip("tifffile")
    path = tmp_path / "masks" / "a.tif"
    path.parent.mkdir()
    mask = binary_255_mask(2)
    tifffile.imwrite(path, np.stack([mask, mask[::-1]]) if options.get("imagej") else mask, **options)
    compression, predictor, resolution, unit, imagej, description, software, axes = fix_and_check(path, tiff_metadata)
    assert compression == 8 and resolution == options["resolution"]
    if options.get("imagej"):
        assert imagej["spacing"] == 2.5 and imagej["unit"] == "um" and axes == "ZYX"
    else:
        assert predictor == 2 and unit == 3 and description == "lesion masks, rater 2" and software == "ITK-SNAP"


def test_a_tiff_whose_compression_cannot_be_written_here_is_skipped_not_recompressed(tmp_path):
    pytest.importorskip("tifffile")
    path = tmp_path / "masks" / "a.tif"
    path.parent.mkdir()
    Image.fromarray(binary_255_mask(3)).save(path, compression="packbits")
    original = digests([path])
    for apply in (False, True):
        [change] = remap(str(path.parent), "255:1", spec=SPEC, apply=apply).changes
        if importlib.util.find_spec("imagecodecs") is None:
            assert change.status == "skipped" and "compression" in change.summary and "PACKBITS" in change.summary
            assert digests([path]) == original
        else:
            assert change.status == ("written" if apply else "planned")


def nifti_metadata(path):
    import nibabel as nib

    image = nib.load(path)
    header = image.header
    return (header.binaryblock, [(e.get_code(), e.get_content()) for e in header.extensions], image.affine.tolist(),
            str(header["descrip"].astype(str)), int(header["qform_code"]), int(header["sform_code"]),
            header.get_xyzt_units(), type(image).__name__)


@pytest.mark.parametrize("kind", ["Nifti1Image", "Nifti2Image"])
def test_nifti_keeps_its_header_extensions_and_affine(tmp_path, kind):
    nib = pytest.importorskip("nibabel")
    affine = np.array([[0.8, 0, 0, -90.0], [0, 0.8, 0, 126.0], [0, 0, 2.5, -72.0], [0, 0, 0, 1]])
    image = getattr(nib, kind)(binary_255_mask(4)[:, :, None].astype(np.uint8), affine)
    header = image.header
    header["descrip"] = b"liver, rater 2"
    header.set_qform(affine, code=1)
    header.set_sform(affine, code=2)
    header.set_xyzt_units("mm", "sec")
    header.extensions.append(nib.nifti1.Nifti1Extension("comment", b"exported by 3D Slicer"))
    path = tmp_path / "masks" / "a.nii.gz"
    path.parent.mkdir()
    nib.save(image, path)
    _, extensions, written_affine, descrip, qform, sform, units, written_kind = fix_and_check(path, nifti_metadata)
    assert np.allclose(written_affine, affine) and descrip == "liver, rater 2" and (qform, sform) == (1, 2)
    assert units == ("mm", "sec") and extensions == [(6, b"exported by 3D Slicer")] and written_kind == kind


def hdf5_metadata(path):
    import h5py

    with h5py.File(path, "r") as handle:
        label = handle["label"]
        def attributes(item):
            return {k: np.asarray(v).tolist() for k, v in item.attrs.items()}

        return (attributes(handle), attributes(label), label.chunks, label.compression, label.compression_opts,
                label.shuffle, attributes(handle["meta"]), handle["image"][()].tobytes())


def test_hdf5_keeps_attributes_chunking_and_compression(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "masks" / "a.h5"
    path.parent.mkdir()
    with h5py.File(path, "w") as handle:
        handle.attrs["site"] = "A"
        handle.attrs["spacing"] = np.array([0.8, 0.8, 2.5])
        handle["image"] = np.random.default_rng(0).random((32, 32))
        label = handle.create_dataset("label", data=binary_255_mask(5), chunks=(8, 16), compression="gzip",
                                      compression_opts=7, shuffle=True)
        label.attrs["unit"] = "class"
        handle.create_group("meta").attrs["rater"] = "B"
    attrs, label_attrs, chunks, compression, opts, shuffle, meta, _ = fix_and_check(path, hdf5_metadata)
    assert attrs["site"] == "A" and list(attrs["spacing"]) == [0.8, 0.8, 2.5] and label_attrs == {"unit": "class"}
    assert (chunks, compression, opts, shuffle) == ((8, 16), "gzip", 7, True) and meta == {"rater": "B"}
