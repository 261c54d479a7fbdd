"""Declared sizes are checked before anything of that size is allocated: NPY headers, NPZ members,
HDF5 datasets, NIfTI headers, TIFF and PNG dimensions. A file over a read limit (``max_pixels``,
``max_file_bytes``) is LG001 naming what it declares, the limit and how to raise it; a header
claiming more than the file holds is LG001 as truncated; and the limits come from the flags,
the config or the defaults, also in worker processes.

Memory is measured with tracemalloc (NumPy reports its buffers to it): reading a header that
claims terabytes must cost what the file costs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from audit_helpers import codes, found, peak_of, run
from builders import organic_mask, write_h5, write_nifti, write_npy, write_npz, write_png, write_tiff
from hostile_builders import (npy_bytes, write_h5_claiming, write_h5_soft_loop, write_nifti_claiming,
                              write_npy_claiming, write_npy_raw_header, write_npz_claiming, write_npz_members,
                              write_png_claiming, write_tiff_claiming, write_zip_bomb_npz)
from labelguard import audit
from labelguard.core.limits import DEFAULT_MAX_PIXELS, ReadLimits, applied_limits, current_limits
from labelguard.core.spec import LabelSpec
from labelguard.readers.base import ReadError
from labelguard.readers.masks import image_shape, read_mask

SPEC = LabelSpec(num_classes=3)
SMALL_PEAK = 16 * 1024 * 1024


def unreadable(report, name: str) -> str:
    [finding] = found(report, "LG001", name)
    return finding.message


def audit_masks(folder, **kwargs):
    return run(folder, SPEC, workers=1, **kwargs)


# ---- NPY ----------------------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_an_npy_declaring_terabytes_is_lg001_without_allocating_them(tmp_path):
    write_npy_claiming(tmp_path / "masks" / "huge.npy", "(100000, 100000, 1000)")
    write_npy(tmp_path / "masks" / "good.npy", organic_mask())
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    message = unreadable(report, "huge.npy")
    assert "(100000, 100000, 1000)" in message and "72.8 TiB" in message
    assert f"{DEFAULT_MAX_PIXELS:,}" in message and "--max-pixels" in message and "[audit]" in message
    assert report.summary.samples == 1 and not report.errors
    assert peak < SMALL_PEAK, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.code("LG001", "fail")
def test_an_npy_declaring_more_than_it_holds_is_truncated(tmp_path):
    # 1,000 x 1,000 int64 is inside every limit, but the file holds 16 bytes of data
    write_npy_claiming(tmp_path / "masks" / "short.npy", "(1000, 1000)", data=bytes(16))
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    message = unreadable(report, "short.npy")
    assert "7.6 MiB of data" in message and "16 bytes" in message and "truncated" in message
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("header, expected", [
    ("{'descr': '<i8', 'fortran_order': False, 'shape': (10**30,), }", "not a Python literal"),
    ("{'descr': '<i8', 'fortran_order': False, 'shape': (-5, 3), }", "not a tuple of whole numbers"),
    ("{'descr': '<i8', 'fortran_order': False, 'shape': (2.5,), }", "not a tuple of whole numbers"),
    ("{'descr': '<q0', 'fortran_order': False, 'shape': (2, 3), }", "NumPy does not know"),
    ("{'descr': [('a', '<i4', (1000000000,))], 'fortran_order': False, 'shape': (3,), }", "NumPy does not know"),
    ("{'descr': ('<i4', (1000,)), 'fortran_order': False, 'shape': (3,), }", "no NumPy array is saved with"),
    ("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "only pickle can load"),
    ("{'descr': '<i8', 'fortran_order': 'x', 'shape': (1,), }", "not True or False"),
    ("{'descr': '<i8', 'shape': (1,), }", "not a dict of descr, fortran_order and shape"),
    ("[" * 5000 + "]" * 5000, "not a Python literal"),
])
def test_absurd_npy_headers_are_lg001_with_the_reason(tmp_path, header, expected):
    write_npy_raw_header(tmp_path / "masks" / "bad.npy", header, bytes(64))
    report = audit_masks(tmp_path)
    assert expected in unreadable(report, "bad.npy")
    assert not report.errors


@pytest.mark.code("LG001", "fail")
def test_an_npy_header_length_of_gigabytes_is_refused(tmp_path):
    path = tmp_path / "masks" / "long.npy"
    path.parent.mkdir()
    path.write_bytes(b"\x93NUMPY\x02\x00" + (2 ** 31).to_bytes(4, "little") + b"{}")
    assert "header of 2,147,483,648 bytes" in unreadable(audit_masks(tmp_path), "long.npy")


@pytest.mark.code("LG001", "pass")
@pytest.mark.parametrize("array", [
    organic_mask(),
    np.asfortranarray(organic_mask().astype(np.int16)),
    organic_mask((5, 6)).astype(">u2"),
    np.zeros((0, 4), np.uint8),
])
def test_valid_npy_files_read_as_numpy_writes_them(tmp_path, array):
    path = write_npy(tmp_path / "a.npy", array)
    record = read_mask(str(path))
    assert record.array.dtype == array.dtype and np.array_equal(record.array, array)
    assert np.array_equal(record.array, np.load(path))
    assert image_shape(str(path)) == array.shape


@pytest.mark.code("LG001", "pass")
def test_npy_version_2_headers_are_read(tmp_path):
    path = tmp_path / "v2.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, organic_mask(), version=(2, 0))
    assert np.array_equal(read_mask(str(path)).array, organic_mask())


# ---- NPZ ----------------------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("name", ["label.txt", "label"])
def test_an_npz_member_that_is_no_array_is_lg001(tmp_path, name):
    write_npz_members(tmp_path / "masks" / "text.npz", {name: b"hello, not an array"})
    report = audit_masks(tmp_path)
    assert "is not a NumPy array (starts with b'hello, n'" in unreadable(report, "text.npz")
    assert not report.errors


@pytest.mark.code("LG001", "fail")
def test_an_npz_member_whose_header_claims_more_than_the_member_is_lg001(tmp_path):
    header = npy_bytes(np.zeros((2, 2), np.uint8))[:128].replace(b"(2, 2)", b"(9999, 9)")
    write_npz_members(tmp_path / "masks" / "claim.npz", {"label.npy": header + bytes(4)})
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    message = unreadable(report, "claim.npz")
    assert "NPZ member 'label.npy' declares" in message and "truncated" in message
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "fail")
def test_an_npz_member_claiming_more_than_deflate_can_expand_is_not_inflated(tmp_path):
    write_npz_claiming(tmp_path / "masks" / "liar.npz", 1_000_000)
    report = audit_masks(tmp_path)
    assert "more than deflate can expand" in unreadable(report, "liar.npz")


@pytest.mark.code("LG001", "fail")
def test_a_zip_bomb_npz_over_max_file_bytes_is_refused_before_inflating(tmp_path):
    # 64 MiB of zeros deflated to about 64 KiB: a real array, over the limit set here
    write_zip_bomb_npz(tmp_path / "masks" / "bomb.npz", 64 << 20)
    report, peak = peak_of(lambda: audit_masks(tmp_path, max_file_bytes=8 << 20))
    message = unreadable(report, "bomb.npz")
    assert "NPZ member 'label.npy' declares 64.0 MiB" in message and "8.0 MiB (max_file_bytes)" in message
    assert "--max-file-bytes" in message
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "pass")
def test_the_same_npz_is_read_once_the_limit_is_raised(tmp_path):
    write_zip_bomb_npz(tmp_path / "masks" / "big.npz", 4 << 20)
    assert "LG001" in codes(audit_masks(tmp_path, max_file_bytes=1 << 20))
    report = audit_masks(tmp_path, max_file_bytes=8 << 20)
    assert "LG001" not in codes(report) and report.summary.value_pixels[0] == 4 << 20


@pytest.mark.code("LG001", "fail")
def test_a_stored_npz_member_whose_sizes_disagree_is_lg001(tmp_path):
    path = write_npz_members(tmp_path / "masks" / "stored.npz", {"label.npy": npy_bytes(organic_mask())},
                             compression=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    data[central + 24:central + 28] = (10 ** 6).to_bytes(4, "little")  # uncompressed size
    path.write_bytes(bytes(data))
    assert "stored uncompressed but declares 1,000,000 bytes" in unreadable(audit_masks(tmp_path), "stored.npz")


@pytest.mark.code("LG001", "pass")
def test_npz_image_geometry_comes_from_its_header(tmp_path):
    write_npz(tmp_path / "a.npz", image=np.zeros((24, 32), np.float32), label=organic_mask((24, 32)))
    record = read_mask(str(tmp_path / "a.npz"))
    assert record.image_shape == (24, 32) and record.key == "label" and record.image_key == "image"
    assert np.array_equal(record.array, organic_mask((24, 32)))


# ---- HDF5, NIfTI, TIFF, PNG ---------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_an_hdf5_soft_link_loop_is_lg001_naming_the_link(tmp_path):
    write_h5_soft_loop(tmp_path / "masks" / "loop.h5")
    report = audit_masks(tmp_path)
    message = unreadable(report, "loop.h5")
    assert "the HDF5 link 'label' to '/a' cannot be followed: it loops" in message
    assert not report.errors


@pytest.mark.code("LG001", "pass")
def test_a_looping_link_beside_the_label_does_not_hide_it(tmp_path):
    path = write_h5(tmp_path / "a.h5", label=organic_mask())
    import h5py

    with h5py.File(path, "a") as handle:
        handle["x"] = h5py.SoftLink("/y")
        handle["y"] = h5py.SoftLink("/x")
    assert np.array_equal(read_mask(str(path)).array, organic_mask())


@pytest.mark.code("LG001", "fail")
def test_an_hdf5_dataset_declaring_a_terabyte_is_lg001(tmp_path):
    write_h5_claiming(tmp_path / "masks" / "huge.h5", (100000, 100000, 100))
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    assert "HDF5 dataset 'label' declares a (100000, 100000, 100) uint8 array" in unreadable(report, "huge.h5")
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("name", ["claim.nii.gz", "claim.nii"])
def test_a_nifti_header_declaring_a_huge_volume_is_lg001(tmp_path, name):
    write_nifti_claiming(tmp_path / "masks" / name, (30000, 30000, 30000))
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    assert "the NIfTI header declares a (30000, 30000, 30000) uint8 array" in unreadable(report, name)
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("name, expected", [
    ("short.nii.gz", "gzip-compressed bytes of the file can expand to"),
    ("short.nii", "truncated"),
])
def test_a_nifti_header_declaring_more_than_the_file_holds_is_lg001(tmp_path, name, expected):
    write_nifti_claiming(tmp_path / "masks" / name, (400, 400, 400))
    message = unreadable(audit_masks(tmp_path), name)
    assert expected in message


@pytest.mark.code("LG001", "pass")
def test_a_gzip_nifti_within_its_compressed_size_is_read(tmp_path):
    volume = np.zeros((64, 64, 64), np.uint8)  # 262,144 bytes of zeros gzip to a few hundred
    volume[10:20, 10:20, 10:20] = 1
    write_nifti(tmp_path / "masks" / "a.nii.gz", volume)
    report = audit_masks(tmp_path)
    assert "LG001" not in codes(report) and report.summary.value_pixels[1] == 1000


@pytest.mark.code("LG001", "fail")
def test_a_tiff_declaring_a_huge_page_is_lg001(tmp_path):
    write_tiff_claiming(tmp_path / "masks" / "huge.tif", 100000, 100000)
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    assert "declares a (100000, 100000) uint8 array" in unreadable(report, "huge.tif")
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "fail")
def test_a_png_declaring_ten_billion_pixels_is_lg001_over_max_pixels(tmp_path):
    write_png_claiming(tmp_path / "masks" / "huge.png", 100000, 100000)
    report, peak = peak_of(lambda: audit_masks(tmp_path))
    message = unreadable(report, "huge.png")
    assert "the PNG header declares a (100000, 100000) L-mode array" in message and "max_pixels" in message
    assert peak < SMALL_PEAK


@pytest.mark.code("LG001", "fail")
def test_a_png_over_pillows_own_limit_but_within_max_pixels_is_decoded_not_refused(tmp_path):
    # 200 million pixels: Pillow alone calls this a decompression bomb; labelguard's limit
    # (2**31) allows it, so the file is opened and found to hold a few bytes of pixel data
    write_png_claiming(tmp_path / "masks" / "wide.png", 20000, 10000)
    message = unreadable(audit_masks(tmp_path, max_pixels=300_000_000), "wide.png")
    assert "decompression bomb" not in message and "max_pixels" not in message


# ---- where the limits come from -----------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_max_pixels_from_the_config_applies_and_the_flag_overrides_it(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((64, 64)))
    config = tmp_path / "labelguard.toml"
    config.write_text("[audit]\nmax_pixels = 1000\n")
    report = audit(tmp_path, SPEC, workers=1, config_file=str(config))
    assert "over the limit of 1,000 elements per array (max_pixels)" in unreadable(report, "a.png")
    report = audit(tmp_path, SPEC, workers=1, max_pixels=10_000, config_file=str(config))
    assert "LG001" not in codes(report)


@pytest.mark.code("LG001", "fail")
def test_the_limits_reach_worker_processes(tmp_path):
    for index in range(8):
        write_npy(tmp_path / "masks" / f"m{index}.npy", organic_mask((16, 16)))
    report = run(tmp_path, SPEC, workers=2, max_pixels=100)
    assert len(found(report, "LG001")) == 8 and report.summary.samples == 0


def test_the_limits_are_restored_after_an_audit(tmp_path):
    write_npy(tmp_path / "masks" / "a.npy", organic_mask((8, 8)))
    run(tmp_path, SPEC, workers=1, max_pixels=10)
    assert current_limits() == ReadLimits()
    with applied_limits(ReadLimits(max_pixels=10)):
        with pytest.raises(ReadError, match="max_pixels"):
            read_mask(str(tmp_path / "masks" / "a.npy"))
    assert current_limits() == ReadLimits()


@pytest.mark.parametrize("toml, expected", [
    ("max_pixels = 0", "audit.max_pixels"),
    ("max_file_bytes = 'lots'", "audit.max_file_bytes"),
    ("max_pixels = true", "audit.max_pixels"),
])
def test_a_bad_limit_in_the_config_is_a_usage_error(tmp_path, toml, expected):
    write_npy(tmp_path / "masks" / "a.npy", organic_mask((8, 8)))
    (tmp_path / "labelguard.toml").write_text(f"[audit]\n{toml}\n")
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(tmp_path), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr


@pytest.mark.code("LG001", "fail")
def test_the_cli_flags_set_the_limits(tmp_path):
    write_npy(tmp_path / "masks" / "a.npy", organic_mask((64, 64)))
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(tmp_path), "--num-classes", "3",
                           "--max-file-bytes", "1000", "-f", "json", "--no-progress", "--no-config"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    [finding] = json.loads(done.stdout)["findings"]
    assert finding["code"] == "LG001" and "4.0 KiB, over the limit of 1,000 bytes (max_file_bytes)" \
        in finding["message"]
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(tmp_path), "--max-pixels", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--max-pixels" in done.stderr


@pytest.mark.code("LG001", "pass")
def test_every_container_reads_a_real_mask_within_the_default_limits(tmp_path):
    mask = organic_mask((32, 32))
    for path in (write_png(tmp_path / "m" / "a.png", mask), write_npy(tmp_path / "m" / "b.npy", mask),
                 write_npz(tmp_path / "m" / "c.npz", label=mask), write_h5(tmp_path / "m" / "d.h5", label=mask),
                 write_nifti(tmp_path / "m" / "e.nii.gz", mask[..., None]), write_tiff(tmp_path / "m" / "f.tif", mask)):
        assert read_mask(str(path)).array.reshape(32, 32).tolist() == mask.tolist(), path
