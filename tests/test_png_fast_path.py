"""The PNG path of labelguard.readers.png: an 8-bit grey or palette PNG is decoded from the
chunks it checked, by libdeflate (the ``png`` extra) where no row refers to the row above, by
Pillow's row decoder otherwise; the record is the one Pillow's PNG plugin gives; every other
file, and every damaged one, goes to the plugin.

PNGs are written byte by byte here, so that each row filter, chunk and checksum is chosen.
Each read is done twice, once as labelguard reads it and once through the plugin alone."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from audit_helpers import found, run
from builders import organic_mask, voc_palette, write_png
from labelguard._optional import available
from labelguard.core.limits import ReadLimits, applied_limits
from labelguard.core.spec import LabelSpec
from labelguard.readers import masks as masks_reader
from labelguard.readers import png
from labelguard.readers.base import ReadError
from labelguard.readers.masks import read_mask

needs_extra = pytest.mark.skipif(not available("deflate"), reason="the png extra (deflate) is not installed")

MASK = organic_mask((24, 32), (0, 1, 2, 5), seed=4)


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _paeth(left: np.ndarray, up: np.ndarray, up_left: np.ndarray) -> np.ndarray:
    guess = left + up - up_left
    to_left, to_up, to_up_left = abs(guess - left), abs(guess - up), abs(guess - up_left)
    return np.where((to_left <= to_up) & (to_left <= to_up_left), left, np.where(to_up <= to_up_left, up, up_left))


def png_bytes(plane: np.ndarray, palette: list[int] | None = None, filters=(0,), extra=()) -> bytes:
    """An 8-bit PNG of ``plane`` (grey, or palette indices with ``palette``) whose row r is
    stored with filter ``filters[r % len(filters)]``; ``extra`` chunks go before the data."""
    height, width = plane.shape
    previous = np.zeros(width, dtype=np.int64)
    rows = []
    for index in range(height):
        row = plane[index].astype(np.int64)
        left = np.concatenate([[0], row[:-1]])
        up_left = np.concatenate([[0], previous[:-1]])
        kind = filters[index % len(filters)]
        predicted = [0, left, previous, (left + previous) // 2, _paeth(left, previous, up_left)][kind]
        rows.append(bytes([kind]) + ((row - predicted) % 256).astype(np.uint8).tobytes())
        previous = row
    header = struct.pack(">IIBBBBB", width, height, 8, 0 if palette is None else 3, 0, 0, 0)
    chunks = [_chunk(b"IHDR", header), *extra]
    if palette is not None:
        chunks.append(_chunk(b"PLTE", bytes(palette)))
    chunks += [_chunk(b"IDAT", zlib.compress(b"".join(rows))), _chunk(b"IEND", b"")]
    return png.SIGNATURE + b"".join(chunks)


def write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def way(data: bytes, monkeypatch) -> str:
    """How labelguard.readers.png decodes ``data``: "libdeflate", "pillow's decoder" or, where
    it declines the file, "plugin" (Pillow's PNG plugin, in readers.masks)."""
    monkeypatch.setattr(png, "_declined", {})
    if png.decode_png(data) is None:
        return "plugin"
    with monkeypatch.context() as patch:
        patch.setattr(png, "_declined", {})
        patch.setattr(png, "_decoded_by_pillow", lambda stream, height, width: None)
        return "libdeflate" if png.decode_png(data) is not None else "pillow's decoder"


def read_both(path: str, monkeypatch):
    """(record as labelguard reads it, record through Pillow's PNG plugin alone, the way the
    first was decoded)."""
    how = way(Path(path).read_bytes(), monkeypatch)
    monkeypatch.setattr(png, "_declined", {})
    fast = read_mask(path)
    with monkeypatch.context() as switched_off:
        switched_off.setattr(masks_reader, "decode_png", lambda data: None)
        pillow = read_mask(path)
    return fast, pillow, how


def assert_same(fast, pillow) -> None:
    assert (fast.mode, fast.palette, fast.container) == (pillow.mode, pillow.palette, pillow.container)
    assert fast.array.dtype == pillow.array.dtype
    np.testing.assert_array_equal(fast.array, pillow.array)


@needs_extra
@pytest.mark.parametrize("filters", [(0,), (1,), (0, 1, 1, 0)])
@pytest.mark.parametrize("palette", [None, voc_palette(), voc_palette()[:3 * 6]])
def test_rows_stored_as_they_are_or_as_differences_are_inflated_by_libdeflate_with_pillows_values(
        tmp_path, monkeypatch, filters, palette):
    path = write(tmp_path / "m.png", png_bytes(MASK, palette, filters))
    fast, pillow, how = read_both(path, monkeypatch)
    assert how == "libdeflate"
    assert_same(fast, pillow)
    np.testing.assert_array_equal(fast.array, MASK)
    assert fast.mode == ("L" if palette is None else "P")


@pytest.mark.parametrize("filters", [(2,), (3,), (4,), (0, 1, 2, 3, 4)])
@pytest.mark.parametrize("palette", [None, voc_palette()])
def test_rows_that_refer_to_the_row_above_go_to_pillows_decoder(tmp_path, monkeypatch, filters, palette):
    path = write(tmp_path / "m.png", png_bytes(MASK, palette, filters))
    fast, pillow, how = read_both(path, monkeypatch)
    assert how == "pillow's decoder"
    assert_same(fast, pillow)
    np.testing.assert_array_equal(fast.array, MASK)


@pytest.mark.parametrize("filters", [(0,), (1,), (4,), (0, 1, 2, 3, 4)])
def test_without_the_extra_every_row_filter_goes_to_pillows_decoder(tmp_path, monkeypatch, filters):
    monkeypatch.setattr(png, "_inflate", [None])
    path = write(tmp_path / "m.png", png_bytes(MASK, voc_palette(), filters))
    fast, pillow, how = read_both(path, monkeypatch)
    assert how == "pillow's decoder"
    assert_same(fast, pillow)
    assert fast.palette == tuple(voc_palette())


@pytest.mark.parametrize("name, array, mode", [
    ("16-bit", MASK.astype(np.uint16) * 300, "I;16"),
    ("grey and alpha", np.stack([MASK, np.full_like(MASK, 255)], axis=-1), "LA"),
    ("rgb", np.stack([MASK] * 3, axis=-1), "RGB"),
])
def test_other_kinds_of_png_go_to_the_plugin(tmp_path, monkeypatch, name, array, mode):
    path = tmp_path / "m.png"
    Image.fromarray(array, mode).save(path) if mode != "I;16" else write_png(path, array, mode="I;16")
    fast, pillow, how = read_both(str(path), monkeypatch)
    assert how == "plugin", name
    assert_same(fast, pillow)


def interlaced_png_bytes(plane: np.ndarray) -> bytes:
    """An 8-bit grey PNG of ``plane`` stored in the seven passes of Adam7 (Pillow writes none)."""
    passes = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2), (1, 0, 2, 1)]
    rows = b""
    for top, left, down, across in passes:
        part = plane[top::down, left::across]
        if part.size:
            rows += b"".join(b"\0" + row.tobytes() for row in part)
    height, width = plane.shape
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 1)
    return png.SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows)) + _chunk(b"IEND", b"")


def test_an_interlaced_png_goes_to_the_plugin(tmp_path, monkeypatch):
    path = write(tmp_path / "m.png", interlaced_png_bytes(MASK))
    fast, pillow, how = read_both(path, monkeypatch)
    assert how == "plugin"
    assert_same(fast, pillow)
    np.testing.assert_array_equal(fast.array, MASK)


def test_a_palette_with_transparency_and_a_text_chunk(tmp_path, monkeypatch):
    text = _chunk(b"tEXt", b"Software\0test")
    served_text = write(tmp_path / "text.png", png_bytes(MASK, voc_palette(), extra=[text]))
    assert read_both(served_text, monkeypatch)[2] != "plugin"  # a chunk that changes no value
    data = png_bytes(MASK, voc_palette())
    end = data.index(b"IDAT") - 4
    transparent = write(tmp_path / "trns.png", data[:end] + _chunk(b"tRNS", b"\0") + data[end:])
    fast, pillow, how = read_both(transparent, monkeypatch)
    assert how == "plugin"
    assert_same(fast, pillow)


def _damaged(data: bytes, damage: str) -> bytes:
    if damage == "data checksum":
        start = data.index(b"IDAT") + 8
        return data[:start] + bytes([data[start] ^ 0x40]) + data[start + 1:]
    if damage == "cut short":
        return data[:len(data) // 2]
    if damage == "no end chunk":
        return data[:data.index(b"IEND") - 4]
    # Image data that checks out but does not inflate: a zlib header of an unknown method.
    start = data.index(b"IDAT")
    length = int.from_bytes(data[start - 4:start], "big")
    body = b"\x79" + data[start + 5:start + 4 + length]
    return data[:start] + b"IDAT" + body + struct.pack(">I", zlib.crc32(b"IDAT" + body)) + data[start + 8 + length:]


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("damage", ["data checksum", "cut short", "no end chunk", "stream"])
@pytest.mark.parametrize("filters", [(0,), (2,)])
@pytest.mark.parametrize("extra", [True, False])
def test_a_damaged_png_is_lg001_with_or_without_the_extra(tmp_path, monkeypatch, damage, filters, extra):
    if extra and not available("deflate"):
        pytest.skip("the png extra (deflate) is not installed")
    if not extra:
        monkeypatch.setattr(png, "_inflate", [None])
    data = _damaged(png_bytes(MASK, voc_palette(), filters), damage)
    write(tmp_path / "masks" / "bad.png", data)
    assert png.decode_png(data) is None
    report = run(tmp_path / "masks", LabelSpec(num_classes=6))
    assert [f.path.endswith("bad.png") for f in found(report, "LG001")] == [True]


@pytest.mark.parametrize("filters", [(0,), (2,)])
@pytest.mark.parametrize("rows", ["missing", "beyond"])
@pytest.mark.parametrize("extra", [True, False])
def test_image_data_of_other_rows_than_declared_reads_as_pillows_plugin_reads_it(tmp_path, monkeypatch, filters,
                                                                                rows, extra):
    """A stream that ends before the declared rows, or goes on after them, reads as the plugin
    reads it: zeros for missing rows (never memory left as it was), extra rows ignored."""
    if extra and not available("deflate"):
        pytest.skip("the png extra (deflate) is not installed")
    if not extra:
        monkeypatch.setattr(png, "_inflate", [None])
    plane = MASK[:-3] if rows == "missing" else np.vstack([MASK, MASK[:5]])
    written = png_bytes(plane, voc_palette(), filters)
    header = struct.pack(">IIBBBBB", MASK.shape[1], MASK.shape[0], 8, 3, 0, 0, 0)
    path = write(tmp_path / "m.png", written[:8] + _chunk(b"IHDR", header) + written[8 + 25:])
    fast, pillow, how = read_both(path, monkeypatch)
    assert how == "pillow's decoder"
    assert_same(fast, pillow)
    expected = np.vstack([MASK[:-3], np.zeros((3, MASK.shape[1]), np.uint8)]) if rows == "missing" else MASK
    np.testing.assert_array_equal(fast.array, expected)


@pytest.mark.code("LG001", "pass")
@pytest.mark.parametrize("filters", [(0,), (2,)])
def test_a_whole_png_decoded_from_its_chunks_is_no_lg001(tmp_path, filters):
    write(tmp_path / "masks" / "good.png", png_bytes(MASK, voc_palette(), filters))
    report = run(tmp_path / "masks", LabelSpec(num_classes=6))
    assert found(report, "LG001") == []
    assert report.summary.samples == 1


@pytest.mark.parametrize("filters", [(0,), (4,)])
def test_the_read_limits_apply_before_inflating_with_the_plugins_message(tmp_path, monkeypatch, filters):
    path = write(tmp_path / "m.png", png_bytes(MASK, voc_palette(), filters))
    messages = []
    for ours in (True, False):
        with monkeypatch.context() as patch, applied_limits(ReadLimits(max_pixels=MASK.size - 1)):
            if not ours:
                patch.setattr(masks_reader, "decode_png", lambda data: None)
            with pytest.raises(ReadError) as caught:
                read_mask(path)
            messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "max_pixels" in messages[0]


def _inflations(monkeypatch) -> list[int]:
    """Sizes libdeflate is asked to inflate to, from now on."""
    inflated = []
    real = png._libdeflate()

    def counted(data, size):
        inflated.append(size)
        return real(data, size)

    monkeypatch.setattr(png, "_inflate", [counted])
    return inflated


@needs_extra
def test_a_run_of_files_libdeflate_does_not_serve_makes_it_probe_until_one_is_served(monkeypatch):
    monkeypatch.setattr(png, "_declined", {})
    inflated = _inflations(monkeypatch)
    refers_up = png_bytes(MASK, None, (2,))
    rounds = png.DECLINED_STREAK + png.PROBE_EVERY
    for _ in range(rounds):
        assert png.decode_png(refers_up) is not None  # by Pillow's decoder
    assert png.DECLINED_STREAK < len(inflated) < rounds  # libdeflate tried every file at first, then a few
    served = png_bytes(MASK, None, (1,))
    del inflated[:]
    outcomes = [png.decode_png(served) is not None for _ in range(png.PROBE_EVERY)]
    assert all(outcomes)
    assert 1 <= len(inflated) < png.PROBE_EVERY  # a probe found a file it serves
    del inflated[:]
    png.decode_png(served)
    assert len(inflated) == 1  # and from then on every file is tried again


@needs_extra
def test_greyscale_files_libdeflate_does_not_serve_stop_being_tried_while_palette_files_are_served(monkeypatch):
    """Pillow stores a palette mask's rows as they are and filters a greyscale one's: in a
    folder of both, the greyscale files stop being inflated for nothing."""
    monkeypatch.setattr(png, "_declined", {})
    inflated = _inflations(monkeypatch)
    grey, palette = png_bytes(MASK, None, (4,)), png_bytes(MASK, voc_palette())
    rounds = png.DECLINED_STREAK + 2 * png.PROBE_EVERY
    decoded = [(way(grey, monkeypatch), way(palette, monkeypatch)) for _ in range(1)]
    assert decoded == [("pillow's decoder", "libdeflate")]
    monkeypatch.setattr(png, "_declined", {})
    del inflated[:]
    for _ in range(rounds):
        assert png.decode_png(grey) is not None and png.decode_png(palette) is not None
    assert len(inflated) < rounds + png.DECLINED_STREAK + 3  # every palette file, few greyscale ones


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 20), st.integers(1, 20)),
    colours=st.integers(1, 256),
    palette_image=st.booleans(),
    filters=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    extra=st.booleans(),
)
def test_any_8_bit_png_reads_as_pillows_plugin_reads_it(tmp_path_factory, shape, colours, palette_image, filters,
                                                        seed, extra):
    plane = np.random.default_rng(seed).integers(0, colours, size=shape).astype(np.uint8)
    palette = voc_palette()[:3 * colours] if palette_image else None
    path = write(tmp_path_factory.mktemp("png") / "m.png", png_bytes(plane, palette, tuple(filters)))
    with pytest.MonkeyPatch.context() as patch:
        if not extra:
            patch.setattr(png, "_inflate", [None])
        fast, pillow, how = read_both(path, patch)
    by_libdeflate = extra and available("deflate") and max(filters[:shape[0]]) <= 1
    assert how == ("libdeflate" if by_libdeflate else "pillow's decoder")
    assert_same(fast, pillow)
    np.testing.assert_array_equal(fast.array, plane)
