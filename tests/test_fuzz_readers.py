"""The reader fuzzer (``fuzz/fuzz_readers.py``) in short, and what it found, kept as regressions.

The default run mutates each format's seed files a few dozen times in this process; the
long run (600 mutations of each format in worker processes, as the script runs) is marked
slow and runs when ``LABELGUARD_LONG_FUZZ=1``. Each regression below writes the smallest
file of a kind the fuzzer found crashing a reader (an internal error instead of LG001)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from annotation_builders import classification_csv
from audit_helpers import codes, found, run
from builders import organic_mask, write_h5, write_npz
from detection_builders import write_yolo
from hostile_builders import npy_bytes, write_npy_raw_header, write_npz_members
from labelguard.core.spec import LabelSpec
from labelguard.layouts.base import AuditOptions

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))

import fuzz_readers  # noqa: E402  (the fuzz folder is put on the path above)

SHORT_RUN = 15


@pytest.mark.parametrize("name", sorted(fuzz_readers.FORMATS))
def test_a_short_fuzz_run_finds_no_internal_error(tmp_path, name):
    if name in ("arrow", "arrow-compressed", "parquet"):
        pytest.importorskip("pyarrow")
    format = fuzz_readers.FORMATS[name]
    limits = {"max_file_bytes": 256 << 20, "max_pixels": 64 << 20}
    outcomes = [fuzz_readers.run_case(format, index, 0, tmp_path, limits) for index in range(SHORT_RUN)]
    failures = [f"case {o.index} ({o.mutation}): {o.detail}" for o in outcomes if o.kind != "ok"]
    assert not failures, "\n".join(failures)
    assert any("LG001" in o.detail for o in outcomes), "no mutation made a file unreadable: the fuzzer is idle"


def test_cases_are_reproducible():
    format = fuzz_readers.FORMATS["npz"]
    assert fuzz_readers.case(format, 7, 3) == fuzz_readers.case(format, 7, 3)
    assert fuzz_readers.case(format, 7, 3) != fuzz_readers.case(format, 8, 3)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LABELGUARD_LONG_FUZZ"), reason="set LABELGUARD_LONG_FUZZ=1 for the long run")
def test_the_long_fuzz_run_finds_no_internal_error(tmp_path):
    done = subprocess.run([sys.executable, str(FUZZ / "fuzz_readers.py"), "-n", "600", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout + done.stderr


# ---- what the fuzzer found ---------------------------------------------------------------

def audit_masks(folder):
    return run(folder, LabelSpec(num_classes=3), workers=1)


def unreadable(report, name: str) -> str:
    [finding] = found(report, "LG001", name)
    assert not report.errors
    return finding.message


@pytest.mark.code("LG001", "fail")
def test_an_npy_header_cut_inside_its_dict_is_lg001(tmp_path):
    # np.load raised tokenize.TokenError ("EOF in multi-line statement")
    write_npy_raw_header(tmp_path / "masks" / "cut.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3")
    assert "not a Python literal" in unreadable(audit_masks(tmp_path), "cut.npy")


def _npz_bytes(**arrays) -> bytearray:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return bytearray(buffer.getvalue())


@pytest.mark.code("LG001", "fail")
def test_an_npz_with_a_damaged_deflate_stream_is_lg001(tmp_path):
    # zlib.error: invalid distance too far back / invalid block type
    data = _npz_bytes(label=organic_mask((64, 64)))
    start = data.index(b"label.npy") + len("label.npy")
    data[start + 40:start + 48] = b"\xff" * 8
    path = tmp_path / "masks" / "damaged.npz"
    path.parent.mkdir()
    path.write_bytes(bytes(data))
    assert "cannot read NPZ member 'label.npy'" in unreadable(audit_masks(tmp_path), "damaged.npz")


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("offset, value, expected", [
    (8, 99, "compression"),  # the method field of the local header: NotImplementedError
    (4, 255, "version"),  # "version needed to extract": NotImplementedError("zip file version 25.5")
])
def test_an_npz_member_zipfile_cannot_open_is_lg001(tmp_path, offset, value, expected):
    path = write_npz_members(tmp_path / "masks" / "odd.npz", {"label.npy": npy_bytes(organic_mask())})
    data = bytearray(path.read_bytes())
    for header in (0, data.rindex(b"PK\x01\x02") + 2):  # local header, and the central one (2 bytes on)
        data[header + offset:header + offset + 2] = value.to_bytes(2, "little")
    path.write_bytes(bytes(data))
    message = unreadable(audit_masks(tmp_path), "odd.npz")
    assert "NPZ" in message and expected in message.lower()


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("signature", [b"SNOD", b"HEAP"])
def test_an_hdf5_file_with_a_damaged_group_structure_is_lg001(tmp_path, signature):
    # h5py raised RuntimeError: "bad symbol table node signature", "bad local heap signature"
    path = write_h5(tmp_path / "masks" / "damaged.h5", label=organic_mask())
    data = path.read_bytes()
    assert signature in data
    path.write_bytes(data.replace(signature, b"XXXX"))
    assert "cannot read HDF5" in unreadable(audit_masks(tmp_path), "damaged.h5")


@pytest.mark.code("LG001", "fail")
def test_a_data_yaml_with_an_integer_of_5000_digits_is_lg001(tmp_path):
    # yaml's int constructor raised ValueError (Python's 4,300-digit limit)
    write_yolo(tmp_path, {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)]}}, names=["cat"],
               extra_yaml=f"nc: {'9' * 5000}\n")
    report = run(tmp_path / "data.yaml", workers=1)
    assert any("the YAML holds a value Python cannot build" in f.message for f in found(report, "LG001"))
    assert not report.errors


@pytest.mark.code("LG001", "fail")
def test_a_table_row_whose_path_holds_a_nul_byte_is_lg001(tmp_path):
    # os.stat raised "embedded null byte" on the path cell holding it
    rows = {f"{i:05d}.jpg": "cat" for i in range(400)}
    table = classification_csv(tmp_path, rows, write_images=False)
    table.write_bytes(table.read_bytes() + b"x\x00y.jpg,dog\n")
    report = run(table, workers=1, options=AuditOptions(format="csv"))
    assert "line 402 the path holds a NUL byte" in unreadable(report, "train.csv")
    assert report.summary.class_objects == {"cat": 400}


@pytest.mark.code("LG102", "fail")
@pytest.mark.code("LG103", "fail")
def test_too_large_and_negative_ids_in_one_file_are_both_named(tmp_path):
    # the LG103 check indexed the LG102 message text instead of the ids (IndexError, or
    # "negative class id l")
    table = classification_csv(tmp_path, {"a.jpg": "1", "b.jpg": "7", "c.jpg": "-1"}, header=("image_name", "label"))
    report = run(table, LabelSpec(num_classes=3), workers=1)
    [large], [negative] = found(report, "LG102"), found(report, "LG103")
    assert large.data["ids"] == [7] and "class id 7 is >= num_classes=3" in large.message
    assert "negative class id -1 " in negative.message
    assert not report.errors and "LG001" not in codes(report)


@pytest.mark.code("LG001", "pass")
def test_valid_seed_files_are_read_without_findings_of_unreadability(tmp_path):
    write_npz(tmp_path / "masks" / "a.npz", label=organic_mask())
    with zipfile.ZipFile(tmp_path / "masks" / "a.npz") as archive:
        assert archive.namelist() == ["label.npy"]
    assert "LG001" not in codes(audit_masks(tmp_path))


def test_a_parquet_file_whose_column_names_are_not_utf8_is_lg001(tmp_path):
    """Found by the fuzzer: pyarrow raises UnicodeDecodeError (not an ArrowException) for a
    schema whose names a flipped byte made invalid UTF-8."""
    pytest.importorskip("pyarrow")
    [(_, data)] = fuzz_readers._parquet_seeds()
    at = data.index(b"token_type_ids")  # its name in the footer's schema
    (tmp_path / "train.parquet").write_bytes(data[:at + 3] + b"\x80" + data[at + 4:])
    report = run(tmp_path / "train.parquet", LabelSpec(), options=AuditOptions(format="tokens"))
    assert report.errors == []
    [unreadable] = found(report, "LG001")
    assert "cannot read the parquet" in unreadable.message
