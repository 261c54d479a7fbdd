"""LG008: images and volumes the datasets reference are checked to be whole.

``labelguard.readers.integrity.image_problem`` on real files of each format (every cut of a
small file is reported, random bytes never raise), then the check through each layout that
references images (YOLO, VOC, COCO, ImageFolder), through the API and the command line, in
each mode, and the setting's trust: a config found with the data never sets it."""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from audit_helpers import found, run
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.readers import integrity
from labelguard.readers.base import ReadError
from labelguard.readers.integrity import CHECK_MODES, check_bytes, image_problem
from labelguard.rules._examples import coco_box, coco_json, image, image_bytes, voc_xml, yolo_rows

pytestmark = [pytest.mark.code("LG008", "fail"), pytest.mark.code("LG008", "pass")]


def _saved(kind: str, **options) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image()).save(buffer, kind, **options)
    return buffer.getvalue()


def _nifti_gz(shape=(6, 5, 4)) -> bytes:
    nib = pytest.importorskip("nibabel")
    volume = nib.Nifti1Image(np.arange(np.prod(shape), dtype=np.int16).reshape(shape), np.eye(4))
    return gzip.compress(volume.to_bytes(), mtime=0)


def _tiff(**options) -> bytes:
    tifffile = pytest.importorskip("tifffile")
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, image()[..., 0], **options)
    return buffer.getvalue()


WHOLE = {
    "a.jpg": lambda: _saved("JPEG"),
    "progressive.jpg": lambda: _saved("JPEG", progressive=True),
    "a.png": lambda: _saved("PNG"),
    "a.gif": lambda: _saved("GIF"),
    "a.bmp": lambda: _saved("BMP"),
    "a.webp": lambda: _saved("WEBP"),
    "a.tif": lambda: _tiff(),
    "tiles.tif": lambda: _tiff(tile=(16, 16)),
    "big.tif": lambda: _tiff(bigtiff=True),
    "a.nii.gz": _nifti_gz,
}


@pytest.mark.parametrize("name", sorted(WHOLE))
@pytest.mark.parametrize("mode", ["structure", "full"])
def test_a_whole_file_has_no_problem(tmp_path, name, mode):
    path = tmp_path / name
    path.write_bytes(WHOLE[name]())
    assert image_problem(str(path), mode) is None
    assert image_problem(str(path), mode, data=path.read_bytes()) is None


@pytest.mark.parametrize("name", sorted(WHOLE))
def test_a_file_cut_short_is_reported(tmp_path, name):
    data = WHOLE[name]()
    path = tmp_path / name
    path.write_bytes(data[:len(data) * 2 // 3])
    problem = image_problem(str(path))
    assert problem and "bytes" in problem, problem


def test_bytes_after_the_end_are_legal(tmp_path):
    """Cameras append data after a JPEG's end marker, tools after a PNG's IEND."""
    for name, data in (("a.jpg", _saved("JPEG")), ("a.png", _saved("PNG"))):
        path = tmp_path / name
        path.write_bytes(data + b"trailing data appended by a camera" * 3000)
        assert image_problem(str(path)) is None


def test_an_exif_thumbnail_end_marker_does_not_stand_for_the_image_end(tmp_path):
    """A JPEG thumbnail in APP1 has its own FF D9, before the image's scan: a file cut in
    its scan is still reported."""
    thumbnail = _saved("JPEG")
    app1 = b"Exif\x00\x00" + thumbnail
    data = _saved("JPEG")
    whole = data[:2] + b"\xff\xe1" + (len(app1) + 2).to_bytes(2, "big") + app1 + data[2:]
    path = tmp_path / "a.jpg"
    path.write_bytes(whole)
    assert image_problem(str(path)) is None
    path.write_bytes(whole[:-10])
    assert "FF D9" in image_problem(str(path))


def test_a_wrong_png_crc_names_the_chunk(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(image_bytes("png", bad_crc=True))
    assert "CRC in PNG chunk IDAT at byte 33" in image_problem(str(path))


def test_a_nifti_gz_cut_short_says_how_many_bytes_arrived(tmp_path):
    data = _nifti_gz()
    path = tmp_path / "a.nii.gz"
    path.write_bytes(data[:len(data) // 2])
    problem = image_problem(str(path))
    assert "gzip stream" in problem and "NIfTI header declares" in problem


def test_a_nifti_gz_of_several_members_is_whole(tmp_path):
    """A gzip file of several members states only the last one's size in its trailer: a
    mismatch alone is no verdict, the stream is read."""
    nib = pytest.importorskip("nibabel")
    raw = nib.Nifti1Image(np.zeros((6, 5, 4), np.int16), np.eye(4)).to_bytes()
    path = tmp_path / "a.nii.gz"
    path.write_bytes(gzip.compress(raw[:200]) + gzip.compress(raw[200:]))
    assert image_problem(str(path)) is None
    assert image_problem(str(path), "full") is None


def test_unknown_formats_and_missing_files_get_no_verdict(tmp_path):
    (tmp_path / "a.jpg").write_bytes(b"not an image at all")
    assert image_problem(str(tmp_path / "a.jpg")) is None
    assert image_problem(str(tmp_path / "missing.jpg")) is None
    assert image_problem(str(tmp_path / "a.jpg"), "off") is None


def test_full_finds_a_damaged_scan_that_structure_cannot_see(tmp_path):
    path = tmp_path / "a.jpg"
    path.write_bytes(image_bytes("jpeg", corrupt_scan=True))
    assert image_problem(str(path)) is None
    assert "cannot be decoded" in image_problem(str(path), "full")


SMALL = {"jpeg": lambda: _saved("JPEG"), "png": lambda: _saved("PNG"), "nifti": _nifti_gz}
NAMES = {"jpeg": "a.jpg", "png": "a.png", "nifti": "a.nii.gz"}
# The fewest bytes that tell the format as readers.base.sniff tells it (a JPEG's SOI and the
# next marker's FF, the PNG signature, the gzip magic of a .nii.gz): fewer is no known
# format, which gets no verdict.
RECOGNISED = {"jpeg": 3, "png": 8, "nifti": 2}


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_every_cut_of_a_small_file_is_reported_and_none_raises(kind):
    data = SMALL[kind]()
    for end in range(RECOGNISED[kind], len(data)):
        for mode in ("structure", "full"):
            assert check_bytes(data[:end], NAMES[kind], mode) is not None, (kind, mode, end)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(NAMES.values()) + ["a.tif", "a.gif", "a.bmp", "a.npy"]),
       st.sampled_from([b"", b"\xff\xd8", b"\x89PNG\r\n\x1a\n", b"II*\x00", b"MM\x00+", b"GIF89a", b"BM",
                        b"\x1f\x8b", b"\x93NUMPY", b"RIFF\x00\x00\x00\x00WEBP"]),
       st.binary(max_size=600), st.sampled_from(CHECK_MODES))
def test_random_bytes_never_raise(name, magic, tail, mode):
    """The checks themselves raise nothing (check_bytes lets through what image_problem
    would turn into no verdict)."""
    if not magic + tail:
        with pytest.raises(ReadError, match="empty file"):
            check_bytes(b"", name, mode)  # no bytes to judge: LG001's, as for any file
        return
    problem = check_bytes(magic + tail, name, mode)
    assert problem is None or isinstance(problem, str)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SMALL)), st.data())
def test_a_valid_file_with_bytes_flipped_never_raises(kind, data):
    original = bytearray(SMALL[kind]())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(original) - 1))
        original[at] = data.draw(st.integers(0, 255))
    for mode in ("structure", "full"):
        problem = check_bytes(bytes(original), NAMES[kind], mode)
        assert problem is None or isinstance(problem, str)


# ---- through the layouts ----------------------------------------------------------------

DAMAGE = {
    "truncated-jpeg": ("jpg", lambda: image_bytes("jpeg", cut=50)),
    "truncated-png": ("png", lambda: image_bytes("png", cut=30)),
    "bad-crc-png": ("png", lambda: image_bytes("png", bad_crc=True)),
}


def _write(root: Path, files: dict) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
    return root


def _whole(extension: str) -> bytes:
    return image_bytes("jpeg" if extension == "jpg" else "png")


def yolo(root: Path, extension: str, bad: bytes) -> tuple[Path, str]:
    row = yolo_rows([(0, .5, .5, .2, .2)])
    _write(root, {"data.yaml": "path: .\ntrain: images\nval: images\nnames: ['cat']\n",
                  f"images/a.{extension}": bad, f"images/b.{extension}": _whole(extension),
                  "labels/a.txt": row, "labels/b.txt": row})
    return root, f"a.{extension}"


def yolo_background(root: Path, extension: str, bad: bytes) -> tuple[Path, str]:
    """A damaged image without a label file: a trainer reads it as a background image."""
    row = yolo_rows([(0, .5, .5, .2, .2)])
    _write(root, {"images/a.jpg": _whole("jpg"), "labels/a.txt": row, f"images/bg.{extension}": bad})
    return root, f"bg.{extension}"


def voc(root: Path, extension: str, bad: bytes) -> tuple[Path, str]:
    _write(root, {"Annotations/a.xml": voc_xml([("cat", (1, 1, 5, 5))], size=(10, 8), filename=f"a.{extension}"),
                  f"JPEGImages/a.{extension}": bad,
                  "Annotations/b.xml": voc_xml([("cat", (1, 1, 5, 5))], size=(10, 8), filename=f"b.{extension}"),
                  f"JPEGImages/b.{extension}": _whole(extension)})
    return root, f"a.{extension}"


def coco(root: Path, extension: str, bad: bytes) -> tuple[Path, str]:
    _write(root, {"annotations/instances_train.json": coco_json(
        [coco_box(1, 1), coco_box(2, 1, image_id=2)], images=((1, f"a.{extension}"), (2, f"b.{extension}"))),
        f"images/a.{extension}": bad, f"images/b.{extension}": _whole(extension)})
    return root, f"a.{extension}"


def imagefolder(root: Path, extension: str, bad: bytes) -> tuple[Path, str]:
    _write(root, {"train/cat/a.jpg": _whole("jpg"), f"train/cat/z.{extension}": bad,
                  "train/dog/c.jpg": _whole("jpg")})
    return root, f"z.{extension}"


LAYOUTS = {"yolo": yolo, "yolo-background": yolo_background, "voc": voc, "coco": coco, "imagefolder": imagefolder}
# A PNG among an ImageFolder's JPEGs makes detection take the folder for masks: the layout is named.
FORMAT = {"imagefolder": "imagefolder"}


def _audit(layout: str, root: Path, **kwargs):
    return run(root, format=FORMAT.get(layout), **kwargs)


def _cli(layout: str, root: Path, *args: str):
    forced = ["--format", FORMAT[layout]] if layout in FORMAT else []
    return CliRunner().invoke(main, ["audit", str(root), "--no-config", "--no-cache", "--no-progress", "-f", "json",
                                     *forced, *args])


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_damaged_image_is_found_by_the_api_and_the_command_line(tmp_path, layout, damage):
    extension, bad = DAMAGE[damage]
    root, name = LAYOUTS[layout](tmp_path / "data", extension, bad())
    report = _audit(layout, root)
    assert report.errors == []
    damaged = found(report, "LG008")
    assert [Path(f.path).name for f in damaged] == [name], [f.message for f in damaged]
    finding = damaged[0]
    assert finding.message.startswith("image file ") and finding.data["problem"] in finding.message
    if layout in ("yolo", "voc", "coco"):
        assert finding.data["label"].endswith((".txt", ".xml", ".json"))
    else:
        assert "label" not in finding.data
    result = _cli(layout, root)
    assert result.exit_code == 1, result.output
    cli = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "LG008"]
    assert [Path(f["path"]).name for f in cli] == [name]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_whole_images_give_no_finding(tmp_path, layout):
    root, _ = LAYOUTS[layout](tmp_path / "data", "jpg", _whole("jpg"))
    report = _audit(layout, root, check_images="full")
    assert report.errors == [] and found(report, "LG008") == []


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_off_checks_nothing_and_says_so(tmp_path, layout):
    root, _ = LAYOUTS[layout](tmp_path / "data", "jpg", image_bytes("jpeg", cut=50))
    report = json.loads(_cli(layout, root, "--check-images", "off").stdout)
    assert [f for f in report["findings"] if f["code"] == "LG008"] == []
    assert any("images were not checked" in note for note in report["summary"]["notes"])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_full_finds_a_scan_damaged_mid_stream(tmp_path, layout):
    root, name = LAYOUTS[layout](tmp_path / "data", "jpg", image_bytes("jpeg", corrupt_scan=True))
    assert found(_audit(layout, root), "LG008") == []
    result = _cli(layout, root, "--check-images", "full")
    assert result.exit_code == 1
    damaged = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "LG008"]
    assert [Path(f["path"]).name for f in damaged] == [name]
    assert "cannot be decoded" in damaged[0]["message"]


def test_yolo_backgrounds_are_checked_in_the_label_tasks(tmp_path):
    """Many background images ride on the label files' tasks (checked in parallel with
    them), and each is checked once."""
    row = yolo_rows([(0, .5, .5, .2, .2)])
    files = {f"images/l{i}.jpg": _whole("jpg") for i in range(3)}
    files.update({f"labels/l{i}.txt": row for i in range(3)})
    files.update({f"images/bg{i}.jpg": image_bytes("jpeg", cut=50) for i in range(10)})
    root = _write(tmp_path / "data", files)
    damaged = found(run(root, workers=2), "LG008")
    assert sorted(Path(f.path).name for f in damaged) == sorted(f"bg{i}.jpg" for i in range(10))


# ---- the setting ------------------------------------------------------------------------

def test_the_users_config_sets_the_mode_and_the_flag_wins(tmp_path):
    root, _ = imagefolder(tmp_path / "data", "jpg", image_bytes("jpeg", corrupt_scan=True))
    config = tmp_path / "mine.toml"
    config.write_text('[audit]\ncheck_images = "full"\n')
    assert len(found(run(root, config_file=str(config)), "LG008")) == 1
    assert found(run(root, config_file=str(config), check_images="structure"), "LG008") == []


def test_a_config_shipped_with_the_data_cannot_set_the_mode(tmp_path):
    """How strict the verdict is belongs to whoever runs the audit (docs/security.md)."""
    root, _ = imagefolder(tmp_path / "data", "jpg", image_bytes("jpeg", cut=50))
    (root / "labelguard.toml").write_text('[audit]\ncheck_images = "off"\n')
    report = audit(root, format="imagefolder")
    assert len(found(report, "LG008")) == 1
    assert any("audit.check_images" in note and "not applied" in note for note in report.notes)


def test_an_unknown_mode_is_refused(tmp_path):
    from labelguard.errors import SpecError, UsageError

    root, _ = imagefolder(tmp_path / "data", "jpg", _whole("jpg"))
    with pytest.raises(UsageError, match="check_images"):
        run(root, check_images="deep")
    config = tmp_path / "mine.toml"
    config.write_text('[audit]\ncheck_images = "deep"\n')
    with pytest.raises(SpecError, match="check_images"):
        run(root, config_file=str(config))
    result = CliRunner().invoke(main, ["audit", str(root), "--check-images", "deep"])
    assert result.exit_code == 2 and "deep" in result.output


# ---- hostile and unusual files ------------------------------------------------------------

def _nifti(vox_offset: float | None = None, bitpix: int | None = None, shape=(4, 4, 4)) -> bytes:
    nib = pytest.importorskip("nibabel")
    data = bytearray(nib.Nifti1Image(np.zeros(shape, np.uint8), np.eye(4)).to_bytes())
    if vox_offset is not None:
        data[108:112] = struct.pack("<f", vox_offset)
    if bitpix is not None:
        data[72:74] = struct.pack("<h", bitpix)
    return bytes(data)


@pytest.mark.parametrize("offset", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("name", ["a.nii", "a.nii.gz"])
@pytest.mark.parametrize("mode", ["structure", "full"])
def test_a_nifti_vox_offset_that_is_no_number_gets_no_verdict(tmp_path, offset, name, mode):
    data = _nifti(offset)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert check_bytes(path.read_bytes(), name, mode) is None
    assert image_problem(str(path), mode) is None


def test_a_check_that_raises_is_no_verdict_logged_at_debug_level(tmp_path, monkeypatch, caplog):
    """A check meeting bytes it did not foresee costs the file its verdict, never the record;
    check_bytes, which the tests above use, lets it through."""
    def broken(file, head):
        raise RuntimeError("a bug in a check")

    monkeypatch.setitem(integrity._STRUCTURE, "png", broken)
    path = tmp_path / "a.png"
    path.write_bytes(_saved("PNG"))
    with caplog.at_level(logging.DEBUG, logger="labelguard.readers.integrity"):
        assert image_problem(str(path)) is None
    assert "a bug in a check" in caplog.text and "a.png" in caplog.text
    with pytest.raises(RuntimeError):
        check_bytes(path.read_bytes(), "a.png")


def _tiff_sharing_one_strip_table(pages: int, strips: int) -> bytes:
    """A TIFF whose every page points at the same strip offsets and byte counts."""
    out = bytearray(b"II*\x00" + struct.pack("<I", 0))
    offsets_at = len(out)
    out += struct.pack(f"<{strips}I", *([8] * strips))
    counts_at = len(out)
    out += struct.pack(f"<{strips}I", *([1] * strips))
    out[4:8] = struct.pack("<I", len(out))
    for page in range(pages):
        following = len(out) + 2 + 2 * 12 + 4 if page < pages - 1 else 0
        out += struct.pack("<H", 2) + struct.pack("<HHII", 273, 4, strips, offsets_at)
        out += struct.pack("<HHII", 279, 4, strips, counts_at) + struct.pack("<I", following)
    return bytes(out)


@pytest.mark.parametrize("mode", ["structure", "full"])
def test_tiff_pages_sharing_one_strip_table_take_time_bounded_by_the_file(tmp_path, mode):
    """2,000 pages x 100,000 strips in 860 KB: each table is walked once, and a decode that
    would walk it for every page is not started."""
    path = tmp_path / "pages.tif"
    path.write_bytes(_tiff_sharing_one_strip_table(2000, 100_000))
    started = time.perf_counter()
    assert image_problem(str(path), mode) is None
    assert time.perf_counter() - started < 2.0


def _tiff_with_tag_at_end(extra: bytes) -> bytes:
    """An 8 x 8 grey TIFF whose last bytes are the values of a tag (347, JPEGTables' number,
    type UNDEFINED) placed after the pixel data."""
    pixels = bytes(range(64))
    entries = [(256, 3, 1, 8), (257, 3, 1, 8), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, 8),
               (277, 3, 1, 1), (278, 3, 1, 8), (279, 4, 1, 64)]
    ifd_at = 8 + len(pixels)
    values_at = ifd_at + 2 + 12 * (len(entries) + 1) + 4
    entries.append((347, 7, len(extra), values_at))
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *e) for e in entries) + b"\0\0\0\0"
    return b"II*\x00" + struct.pack("<I", ifd_at) + pixels + ifd + extra


def test_a_tiff_cut_inside_a_tags_values_after_the_pixels_is_reported(tmp_path):
    whole = _tiff_with_tag_at_end(bytes(300))
    path = tmp_path / "a.tif"
    path.write_bytes(whole)
    assert image_problem(str(path)) is None
    path.write_bytes(whole[:-100])
    problem = image_problem(str(path))
    assert problem and "tag 347" in problem and f"ends after {len(whole) - 100:,} bytes" in problem


def test_tiff_messages_read_as_facts(tmp_path):
    """A tag table cut short: "image file ends after ..., inside TIFF page 1's tag table"."""
    data = _tiff()
    ifd = struct.unpack("<I", data[4:8])[0]
    path = tmp_path / "a.tif"
    path.write_bytes(data[:ifd + 20])
    problem = image_problem(str(path))
    assert problem.startswith(f"ends after {ifd + 20:,} bytes, inside TIFF page 1's tag table")


@pytest.mark.parametrize("compression", ["tiff_lzw", "jpeg"])
def test_a_tiff_whose_codec_tifffile_lacks_is_decoded_by_pillow(tmp_path, compression):
    """LZW and JPEG in TIFF need imagecodecs for tifffile: Pillow (libtiff) decodes them, so a
    missing package is no damage; a cut file still is."""
    buffer = io.BytesIO()
    Image.fromarray(image()).save(buffer, "TIFF", compression=compression)
    path = tmp_path / "a.tif"
    path.write_bytes(buffer.getvalue())
    assert image_problem(str(path), "full") is None
    data = buffer.getvalue()
    strip = Image.open(io.BytesIO(data)).tag_v2[273][0]
    path.write_bytes(data[:strip + 20] + bytes(len(data) - strip - 20))  # the pixel data zeroed, no longer a stream
    assert image_problem(str(path), "structure") is None
    problem = image_problem(str(path), "full")
    assert problem is None or problem.startswith("cannot be decoded")


def _gif() -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image()).convert("P").save(buffer, "GIF")
    return buffer.getvalue()


def test_a_gif_without_its_trailer_after_a_whole_block_is_whole(tmp_path):
    """Pillow loads it; a file that ends inside a block it refuses ("truncated")."""
    data = _gif()
    assert data.endswith(b"\x00;")
    path = tmp_path / "a.gif"
    path.write_bytes(data[:-1])
    Image.open(path).load()
    assert image_problem(str(path)) is None
    path.write_bytes(data[:-3])
    with pytest.raises(OSError):
        Image.open(path).load()
    assert "inside GIF data" in image_problem(str(path))


def _png_with(chunk_type: bytes, before: bytes, bad_crc: bool) -> bytes:
    data = _saved("PNG")
    body = chunk_type + b"key\x00value"
    crc = zlib.crc32(body) ^ (1 if bad_crc else 0)
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", crc)
    at = data.index(before) - 4
    return data[:at] + chunk + data[at:]


def test_an_ancillary_png_chunk_with_a_wrong_crc_after_the_image_data_is_whole(tmp_path):
    """libpng warns and Pillow loads it; before the image data Pillow refuses to open the file,
    so that one is reported."""
    path = tmp_path / "a.png"
    path.write_bytes(_png_with(b"tEXt", b"IEND", bad_crc=True))
    Image.open(path).load()
    assert image_problem(str(path)) is None
    assert image_problem(str(path), "full") is None
    path.write_bytes(_png_with(b"tEXt", b"IDAT", bad_crc=True))
    with pytest.raises(OSError):
        Image.open(path)
    assert "CRC in PNG chunk tEXt" in image_problem(str(path))


def test_a_bmp_whose_last_row_lacks_its_padding_is_whole(tmp_path):
    """Rows are padded to 4 bytes; a writer that leaves the last row's padding out makes a file
    Pillow loads. A row short of its pixels is reported."""
    data = _saved("BMP")
    width = image().shape[1]
    padding = (width * 24 + 31) // 32 * 4 - width * 3
    assert padding
    path = tmp_path / "a.bmp"
    path.write_bytes(data[:-padding])
    Image.open(path).load()
    assert image_problem(str(path)) is None
    path.write_bytes(data[:-padding - 1])
    assert "BMP header declaring" in image_problem(str(path))


def test_nifti_voxel_bytes_come_from_the_datatype_not_bitpix(tmp_path):
    """nibabel and ITK read by ``datatype``: a wrong ``bitpix`` changes nothing, a file short
    of what the datatype needs is reported, as an image and (LG001) as a mask alike."""
    nib = pytest.importorskip("nibabel")
    path = tmp_path / "a.nii"
    path.write_bytes(_nifti(bitpix=64))
    assert np.asarray(nib.load(str(path)).dataobj).shape == (4, 4, 4)
    assert image_problem(str(path)) is None
    whole = _nifti()
    path.write_bytes(whole[:-1])
    problem = image_problem(str(path))
    assert "declares 64 bytes of voxels" in problem
    from labelguard.readers.base import ReadError
    from labelguard.readers.masks import read_mask

    with pytest.raises(ReadError):
        read_mask(str(path))


def test_a_gzip_stream_is_decompressed_no_further_than_its_nifti_header_declares(tmp_path):
    """A .nii.gz that declares 64 voxels over hundreds of MB of zeros (its trailer not
    matching): no verdict, at once, in either mode."""
    header = bytearray(_nifti()[:352])
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = compressor.compress(bytes(header) + bytes(64))
    zeros = bytes(1 << 24)
    for _ in range(16):
        data += compressor.compress(zeros)
    data += compressor.flush()
    path = tmp_path / "bomb.nii.gz"
    path.write_bytes(data)
    for mode in ("structure", "full"):
        started = time.perf_counter()
        assert image_problem(str(path), mode) is None
        assert time.perf_counter() - started < 1.0


def test_a_nifti_gz_declaring_more_than_deflate_can_expand_to_is_reported(tmp_path):
    header = bytearray(_nifti()[:352])
    header[40:56] = struct.pack("<8h", 3, 10_000, 10_000, 100, 1, 1, 1, 1)
    path = tmp_path / "a.nii.gz"
    path.write_bytes(gzip.compress(bytes(header) + bytes(64)))
    assert "more than its" in image_problem(str(path))


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_image_path_that_is_no_regular_file_is_lg001_not_lg008(tmp_path, kind):
    """What the bytes lack is LG008; a file that cannot be read at all is LG001 (as a mask's
    paired image is)."""
    root, _ = yolo(tmp_path / "data", "jpg", _whole("jpg"))
    target = root / "images" / "a.jpg"
    target.unlink()
    if kind == "folder":
        target.mkdir()
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no named pipes here")
        os.mkfifo(target)
    with pytest.raises(ReadError, match="an image"):
        image_problem(str(target))
    if kind == "folder":
        return  # pairing takes no folder for an image (LG002)
    report = run(root)
    assert found(report, "LG008") == []
    unread = [f for f in found(report, "LG001") if f.path.endswith("a.jpg")]
    assert len(unread) == 1 and "an image" in unread[0].message, [f.message for f in found(report, "LG001")]


def test_a_coco_file_naming_one_damaged_image_twice_reports_it_once(tmp_path):
    root = _write(tmp_path / "data", {
        "annotations/instances_train.json": coco_json(
            [coco_box(1, 1), coco_box(2, 1, image_id=2), coco_box(3, 1, image_id=3)],
            images=((1, "a.jpg"), (2, "b.jpg"), (3, "a.jpg"))),
        "images/a.jpg": image_bytes("jpeg", cut=50), "images/b.jpg": _whole("jpg")})
    damaged = found(run(root), "LG008")
    assert len(damaged) == 1, [f.message for f in damaged]
    assert damaged[0].data["place"] == "images[0], images[2]"
    assert "names it at images[0], images[2]" in damaged[0].message


def test_the_off_note_names_what_turned_the_check_off(tmp_path):
    root, _ = imagefolder(tmp_path / "data", "jpg", _whole("jpg"))
    by_argument = run(root, check_images="off").notes
    assert any("--check-images off" in note for note in by_argument), by_argument
    config = tmp_path / "mine.toml"
    config.write_text('[audit]\ncheck_images = "off"\n')
    by_config = run(root, config_file=str(config)).notes
    assert any("check_images = 'off' in [audit] of" in note and "mine.toml" in note for note in by_config), by_config


def test_backgrounds_left_out_by_a_sample_are_said(tmp_path):
    """Background images ride on the label files' tasks: those of the label files a sample
    leaves out are not checked, and the report says so."""
    row = yolo_rows([(0, .5, .5, .2, .2)])
    files = {f"images/l{i}.jpg": _whole("jpg") for i in range(6)}
    files.update({f"labels/l{i}.txt": row for i in range(6)})
    files.update({f"images/bg{i}.jpg": image_bytes("jpeg", cut=50) for i in range(6)})
    root = _write(tmp_path / "data", files)
    report = run(root, sample=2)
    checked = len(found(report, "LG008"))
    assert checked < 6
    said = [note for note in report.notes if "without a label file (background images)" in note
            and "not checked" in note]
    assert len(said) == 1 and said[0].startswith(f"{6 - checked} images"), report.notes


def test_a_damaged_channel_of_a_case_is_reported_on_its_own_path(tmp_path):
    """nnU-Net's case_0001 beside case_0000: opened once for its header and its check."""
    nib = pytest.importorskip("nibabel")
    root = tmp_path / "Dataset001_X"
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    (root / "dataset.json").write_text(json.dumps({
        "channel_names": {"0": "T1", "1": "T2"}, "labels": {"background": 0, "a": 1}, "numTraining": 2,
        "file_ending": ".nii.gz"}))
    volume = np.random.default_rng(0).random((16, 16, 16)).astype(np.float32)
    for case in ("case0", "case1"):
        for channel in ("0000", "0001"):
            nib.save(nib.Nifti1Image(volume, np.eye(4)), str(root / "imagesTr" / f"{case}_{channel}.nii.gz"))
        label = nib.Nifti1Image(np.zeros(volume.shape, np.uint8), np.eye(4))
        nib.save(label, str(root / "labelsTr" / f"{case}.nii.gz"))
    channel = root / "imagesTr" / "case1_0001.nii.gz"
    data = channel.read_bytes()
    channel.write_bytes(data[:len(data) // 2])
    damaged = found(run(root), "LG008")
    assert [Path(f.path).name for f in damaged] == ["case1_0001.nii.gz"], [f.message for f in damaged]
    assert damaged[0].data["label"].endswith("case1.nii.gz")


def test_a_paired_volume_is_checked_without_being_read_whole(tmp_path):
    """The mask's paired image is opened once and its check reads it in pieces: a .nii.gz in
    structure mode is its head and its gzip trailer."""
    from audit_helpers import peak_of
    from labelguard.readers.masks import read_paired_image

    nib = pytest.importorskip("nibabel")
    rng = np.random.default_rng(0)
    path = tmp_path / "a.nii.gz"
    nib.save(nib.Nifti1Image(rng.random((64, 64, 64)).astype(np.float32), np.eye(4)), str(path))
    size = path.stat().st_size
    (header, problem), peak = peak_of(lambda: read_paired_image(str(path), "structure"))
    assert header.shape == (64, 64, 64) and problem is None
    assert peak < size // 4, (peak, size)
    path.write_bytes(path.read_bytes()[:size // 2])
    assert "gzip stream" in read_paired_image(str(path), "structure")[1]


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True, width=32), st.lists(st.integers(-2, 40), min_size=8, max_size=8),
       st.integers(-5, 3000), st.binary(max_size=200), st.sampled_from(["a.nii", "a.nii.gz"]),
       st.sampled_from(["structure", "full"]))
def test_nifti_headers_of_any_fields_never_raise(vox_offset, dims, datatype, voxels, name, mode):
    header = bytearray(_nifti()[:352])
    header[40:56] = struct.pack("<8h", *dims)
    header[70:72] = struct.pack("<h", datatype)
    header[108:112] = struct.pack("<f", vox_offset)
    data = bytes(header) + voxels
    problem = check_bytes(gzip.compress(data) if name.endswith(".gz") else data, name, mode)
    assert problem is None or isinstance(problem, str)
    assert integrity.nifti_extent(data) is None or integrity.nifti_extent(data)[0] >= 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 20), st.integers(0, (1 << 32) - 1),
                          st.integers(0, (1 << 32) - 1)), max_size=12),
       st.binary(max_size=300), st.sampled_from(["structure", "full"]))
def test_tiff_tag_tables_of_any_entries_never_raise(entries, tail, mode):
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *e) for e in entries) + b"\0\0\0\0"
    problem = check_bytes(b"II*\x00" + struct.pack("<I", 8) + ifd + tail, "a.tif", mode)
    assert problem is None or isinstance(problem, str)


@pytest.mark.parametrize("mode", ["structure", "full"])
def test_a_whole_paired_tiff_read_through_the_open_file_has_no_problem(tmp_path, mode):
    """The decoder gets the open file from its start, whatever the header read left its
    position at."""
    from labelguard.readers.masks import read_paired_image

    path = tmp_path / "a.tif"
    path.write_bytes(_tiff())
    header, problem = read_paired_image(str(path), mode)
    assert problem is None and header.shape[:2] == image().shape[:2]
    with open(path, "rb") as handle:
        handle.seek(100)
        assert image_problem(str(path), mode, handle=handle) is None


def _nnunet_case_files(root: Path, cut_channel: int | None) -> None:
    """An nnU-Net v2 raw dataset of two two-channel .nii.gz cases, channel ``cut_channel`` of
    case_002 cut to half its bytes (None: all whole)."""
    nib = pytest.importorskip("nibabel")
    rng = np.random.default_rng(0)
    files: dict[str, object] = {
        "dataset.json": json.dumps({"channel_names": {"0": "T1", "1": "T2"}, "labels": {"background": 0, "organ": 1},
                                    "numTraining": 2, "file_ending": ".nii.gz"})}
    for case in ("case_001", "case_002"):
        label = np.zeros((12, 10, 8), np.uint8)
        label[3:7, 2:6, 2:5] = 1
        files[f"labelsTr/{case}.nii.gz"] = gzip.compress(nib.Nifti1Image(label, np.eye(4)).to_bytes())
        for channel in (0, 1):
            volume = rng.integers(0, 2000, (12, 10, 8)).astype(np.int16)
            data = gzip.compress(nib.Nifti1Image(volume, np.eye(4)).to_bytes())
            if case == "case_002" and channel == cut_channel:
                data = data[: len(data) // 2]
            files[f"imagesTr/{case}_{channel:04d}.nii.gz"] = data
    _write(root, files)


@pytest.mark.parametrize("channel", [0, 1])
def test_a_truncated_nnunet_image_or_channel_is_lg008_on_its_own_path(tmp_path, channel):
    root = tmp_path / "Dataset001_Organ"
    _nnunet_case_files(root, cut_channel=channel)
    report = run(root)
    damaged = found(report, "LG008")
    assert [Path(f.path).name for f in damaged] == [f"case_002_{channel:04d}.nii.gz"], \
        [(f.code, f.path, f.message) for f in report.findings]
    assert "gzip" in damaged[0].message
    assert not [f for f in report.findings if f.severity == "error" and f.code != "LG008"]


def test_a_whole_nnunet_dataset_gives_no_lg008(tmp_path):
    root = tmp_path / "Dataset001_Organ"
    _nnunet_case_files(root, cut_channel=None)
    assert not [f for f in run(root).findings if f.severity == "error"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_image_beside_its_mask_is_lg008(tmp_path, damage):
    extension, content = DAMAGE[damage]
    array = np.zeros(image().shape[:2], np.uint8)
    array[2:5, 3:7] = 1
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, "PNG")
    mask = buffer.getvalue()
    _write(tmp_path, {f"images/a.{extension}": content(), "images/b.jpg": image_bytes("jpeg"),
                      "masks/a.png": mask, "masks/b.png": mask})
    report = run(tmp_path)
    assert [Path(f.path).name for f in found(report, "LG008")] == [f"a.{extension}"], \
        [(f.code, f.path, f.message) for f in report.findings]


def test_an_empty_image_is_lg001_in_every_layout_as_beside_a_mask(tmp_path):
    """A 0-byte image has nothing to judge as whole or cut: LG001 names it, whichever layout
    references it (an ImageFolder file and a paired image were LG001 already)."""
    root = tmp_path / "yolo"
    _write(root, {"data.yaml": "path: .\ntrain: images\nval: images\nnames: [cat, dog]\n",
                  "images/a.jpg": b"", "images/b.jpg": image_bytes("jpeg"),
                  "labels/a.txt": yolo_rows([(0, .5, .5, .2, .2)]), "labels/b.txt": yolo_rows([(1, .5, .5, .2, .2)])})
    report = run(root)
    assert not found(report, "LG008")
    assert [(Path(f.path).name, "empty file" in f.message) for f in found(report, "LG001")] == [("a.jpg", True)], \
        [(f.code, f.path, f.message) for f in report.findings]
