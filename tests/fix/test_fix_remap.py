import json

import numpy as np
import pytest
from PIL import Image

from fix_data import FORMATS, binary_255_mask, digests, mask_dataset, write_mask
from labelguard import LabelSpec
from labelguard._audit import audit
from labelguard.fix import FixError, remap, undo
from labelguard.readers.masks import read_mask

SPEC = LabelSpec(num_classes=2)


def errors(path) -> list[str]:
    return [f.code for f in audit(str(path), SPEC, use_project_config=False).findings if str(f.severity) == "error"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_remap_round_trip(tmp_path, fmt):
    """fix -> audit clean -> undo -> byte-identical original, for every mask format."""
    files = mask_dataset(tmp_path, fmt)
    original = digests(files)
    assert "LG201" in errors(tmp_path / "masks")

    planned = remap(str(tmp_path / "masks"), "255:1", spec=SPEC)
    assert [c.status for c in planned.changes] == ["planned"] * 3
    assert digests(files) == original  # a dry run writes nothing
    assert planned.changes[0].details["before"] == [0, 255] and planned.changes[0].details["after"] == [0, 1]

    result = remap(str(tmp_path / "masks"), "255:1", spec=SPEC, apply=True)
    assert [c.status for c in result.changes] == ["written"] * 3, result.changes
    assert errors(tmp_path / "masks") == []
    for index, path in enumerate(files):
        expected = binary_255_mask(index)
        expected = np.where(expected == 255, 1, expected)
        record = read_mask(str(path))
        assert np.array_equal(record.array.reshape(expected.shape), expected)

    undone = undo(str(tmp_path / "masks"))
    assert len(undone.restored) == 3
    assert digests(files) == original


def test_png_keeps_mode_and_palette(tmp_path):
    path = write_mask(tmp_path, "png-P", "m", binary_255_mask())
    palette = Image.open(path).getpalette()
    remap(str(path), {255: 1}, spec=SPEC, apply=True)
    with Image.open(path) as image:
        assert image.mode == "P" and image.getpalette() == palette
    path16 = write_mask(tmp_path / "w", "png-I16", "m", binary_255_mask())
    remap(str(path16), {255: 1}, spec=SPEC, apply=True)
    assert Image.open(path16).mode.startswith("I;16")


def test_containers_keep_their_other_content(tmp_path):
    import h5py
    import nibabel as nib

    npz = write_mask(tmp_path / "a", "npz", "m", binary_255_mask())
    image = np.load(npz)["image"]
    h5 = write_mask(tmp_path / "b", "hdf5", "m", binary_255_mask())
    nii = write_mask(tmp_path / "c", "nifti", "m", binary_255_mask())
    affine = nib.load(nii).affine
    for path in (npz, h5, nii):
        assert remap(str(path), "255:1", spec=SPEC, apply=True).count("written") == 1
    with np.load(npz) as archive:
        assert sorted(archive.files) == ["image", "label"] and np.array_equal(archive["image"], image)
    with h5py.File(h5) as handle:
        assert handle.attrs["site"] == "A" and handle["label"].attrs["unit"] == "class"
        assert handle["image"].shape == (32, 32) and set(np.unique(handle["label"][()])) == {0, 1}
    written = nib.load(nii)
    assert np.allclose(written.affine, affine) and written.get_data_dtype() == np.uint8


def test_out_leaves_the_input_untouched_and_undo_removes_the_output(tmp_path):
    files = mask_dataset(tmp_path, "png-L")
    original = digests(files)
    result = remap(str(tmp_path / "masks"), "255:1", spec=SPEC, apply=True, out=str(tmp_path / "fixed"))
    assert result.count("written") == 3 and digests(files) == original
    assert errors(tmp_path / "fixed") == []
    undo(str(tmp_path / "fixed"))
    assert not list((tmp_path / "fixed").glob("*.png"))


def test_refuses_to_make_a_file_worse(tmp_path):
    files = mask_dataset(tmp_path, "png-L", n=1)
    original = digests(files)
    result = remap(str(tmp_path / "masks"), "0:7", spec=SPEC, apply=True)
    assert [c.status for c in result.changes] == ["refused"] and not result.ok
    assert digests(files) == original
    assert not list(tmp_path.glob("masks/.*lgtmp*"))


def test_skips_what_it_cannot_rewrite(tmp_path):
    write_mask(tmp_path / "masks", "png-L", "m", binary_255_mask())
    Image.fromarray(binary_255_mask()).save(tmp_path / "masks" / "j.jpg", format="JPEG")
    result = remap(str(tmp_path / "masks"), "255:300", spec=SPEC, apply=True, options=None)
    by_name = {c.path.rsplit("/", 1)[-1]: c for c in result.changes}
    assert by_name["m.png"].status == "skipped" and "does not fit" in by_name["m.png"].summary


def test_swap_is_applied_at_once(tmp_path):
    path = write_mask(tmp_path, "npy", "m", np.array([[1, 2], [2, 1]], dtype=np.uint8))
    remap(str(path), "1:2,2:1", spec=LabelSpec(num_classes=3), apply=True)
    assert np.load(path).tolist() == [[2, 1], [1, 2]]


def test_from_report_applies_the_suggested_remap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = mask_dataset(tmp_path, "npz")
    report = audit("masks", SPEC, use_project_config=False)
    assert report.suggested_remap == {255: 1}
    (tmp_path / "report.json").write_text(json.dumps(report.to_dict()))
    result = remap(from_report="report.json", spec=SPEC, apply=True)
    assert result.count("written") == 3 and errors("masks") == []
    undo("masks")
    assert len(digests(files)) == 3


@pytest.mark.parametrize("bad", ["255", "a:b", "", "1:2,1:3"])
def test_bad_maps_are_clear_errors(tmp_path, bad):
    mask_dataset(tmp_path, "npy", n=1)
    with pytest.raises(FixError):
        remap(str(tmp_path / "masks"), bad)
