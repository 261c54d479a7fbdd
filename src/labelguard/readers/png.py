"""8-bit grey and palette PNG masks, decoded from chunks checked here.

Pillow's PNG plugin parses a file's chunks in Python, checks no checksum of the image data
(flipped bytes can decode to wrong labels), and costs 10-15 ms of start-up to import. This
module parses the chunks itself, checks every one of them, and decodes the image data in one
of two ways:

* rows that need no unfiltering, inflated by libdeflate (the ``png`` extra). Most of a PNG
  mask's decoding is inflating its image data, and libdeflate inflates a whole stream of
  known size several times faster than zlib. Undoing a row's filter is trivial when every
  row is stored as it is (filter type 0; what Pillow and libpng write for palette images,
  VOC's masks among them) or as differences from its left neighbour (type 1: a running sum
  along the row, as OpenCV writes greyscale PNGs);
* every other such file (a row that refers to the row above it, types 2 to 4, as Pillow
  writes greyscale images; or no extra installed) goes to the decoder Pillow's plugin hands
  the image data to (Pillow's "zip" decoder: zlib, then each row's filter undone in C),
  writing straight into the array that is checked.

It serves only 8-bit greyscale and 8-bit palette images (palette indices, as Pillow reads
them), not interlaced, with no chunk but :data:`NEUTRAL_CHUNKS` beside the header, palette,
image data and end. Every other PNG, and any file this module has a doubt about, is read
through Pillow's plugin, so that the values never depend on the extra and a damaged file's
finding is Pillow's own:

* every chunk is checked before anything is inflated: whole, its checksum matching, up to
  IEND; a file that fails any of this goes to the plugin, which names what is wrong (LG001);
* the declared size is checked against the read limits before anything is inflated, with
  the message the plugin's path gives;
* a stream that Pillow's decoder refuses goes to the plugin; one that ends before the
  declared rows leaves the missing rows as zeros, as the plugin does (Pillow reports no
  error for it).

Finding a row filter libdeflate's path cannot undo costs an inflation for nothing; a process
that meets only such files of a colour type stops trying all but a few of them with libdeflate
(:data:`DECLINED_STREAK`) and hands them to Pillow's decoder at once.
"""

from __future__ import annotations

import zlib
from typing import Callable

import numpy as np
from PIL import Image, ImageFile

from labelguard._optional import require
from labelguard.readers.base import check_array

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Chunks that change nothing Pillow makes of an 8-bit grey or palette image's values: text,
# time, physical size and the colour-space hints it does not apply.
NEUTRAL_CHUNKS = frozenset({b"tEXt", b"zTXt", b"iTXt", b"tIME", b"pHYs", b"gAMA", b"cHRM", b"sRGB", b"iCCP",
                            b"sBIT", b"bKGD"})
# Colour type -> Pillow's mode, at bit depth 8.
_MODES = {0: "L", 3: "P"}
# Row filter types this path undoes: none, and differences from the left neighbour.
_NONE, _SUB = 0, 1

# After this many PNGs in a row whose rows refer to the row above (inflated for nothing, then
# decoded by Pillow), the files come from a writer this path does not serve: from then on
# only every PROBE_EVERY-th PNG is tried, until one is served again.
DECLINED_STREAK = 8
PROBE_EVERY = 16

_inflate: list[Callable[[bytes, int], bytes] | None] = []
# PNGs declined for their row filters since the last one served, by colour type: a writer
# may filter one kind and not the other (Pillow stores palette rows as they are and filters
# greyscale rows adaptively), and a folder may hold both kinds.
_declined: dict[int, int] = {}


def _libdeflate() -> Callable[[bytes, int], bytes] | None:
    """libdeflate's zlib decompressor, or None when the extra is not installed (looked up once)."""
    if not _inflate:
        try:
            _inflate.append(require("deflate").zlib_decompress)
        except ImportError:
            _inflate.append(None)
    return _inflate[0]


class _Layout:
    """What the chunks of a PNG say: size, mode, palette and the image data's pieces."""

    def __init__(self, width: int, height: int, mode: str) -> None:
        self.width, self.height, self.mode = width, height, mode
        self.palette: tuple[int, ...] | None = None
        self.data: list[memoryview] = []


def _layout(data: bytes) -> _Layout | None:
    """The layout of ``data`` when it is a whole PNG this path decodes: every chunk complete
    and its checksum matching, up to IEND; 8-bit grey or palette, not interlaced; no chunk
    outside :data:`NEUTRAL_CHUNKS` but the critical ones. None for any other file."""
    if len(data) < 45 or not data.startswith(SIGNATURE) or data[8:16] != b"\0\0\0\rIHDR":
        return None
    depth, colour, compression, filtering, interlace = data[24:29]
    mode = _MODES.get(colour)
    if depth != 8 or mode is None or compression or filtering or interlace:
        return None
    layout = _Layout(int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"), mode)
    view = memoryview(data)
    position, end = 8, len(data)
    while True:
        if position + 12 > end:
            return None
        length = int.from_bytes(view[position:position + 4], "big")
        kind = data[position + 4:position + 8]
        stop = position + 8 + length
        if stop + 4 > end or zlib.crc32(view[position + 4:stop]) != int.from_bytes(view[stop:stop + 4], "big"):
            return None
        if kind == b"IDAT":
            layout.data.append(view[position + 8:stop])
        elif kind == b"PLTE" and mode == "P" and layout.palette is None and not layout.data \
                and length % 3 == 0 and 0 < length <= 768:
            layout.palette = tuple(data[position + 8:stop])
        elif kind == b"IEND":
            break
        elif position > 8 and kind not in NEUTRAL_CHUNKS:
            return None
        position = stop + 4
    if not layout.data or (mode == "P" and layout.palette is None):
        return None
    return layout


def decode_png(data: bytes) -> tuple[np.ndarray, str, tuple[int, ...] | None] | None:
    """(label plane, Pillow's mode, palette) of an 8-bit grey or palette PNG whose chunks all
    check out, the plane read-only; None for a file Pillow's PNG plugin must read (see the
    module docstring).

    Raises ReadError when the declared size is over the read limits, as the Pillow path does."""
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        return None
    layout = _layout(data)
    if layout is None:
        return None
    height, width = layout.height, layout.width
    check_array("the PNG header", (height, width), 1, f"{layout.mode}-mode")
    if not height or not width:
        return None
    stream = b"".join(layout.data)
    plane = _inflated(stream, height, width, data[25])
    if plane is None:
        plane = _decoded_by_pillow(stream, height, width)
        if plane is None:
            return None
    plane.flags.writeable = False
    return plane, layout.mode, layout.palette


def _inflated(stream: bytes, height: int, width: int, colour: int) -> np.ndarray | None:
    """The plane of the image data ``stream``, inflated by libdeflate, when every row is
    stored as it is or as differences from its left neighbour; None otherwise, or without
    the extra."""
    inflate = _libdeflate()
    if inflate is None:
        return None
    declined = _declined.get(colour, 0)
    if declined >= DECLINED_STREAK and declined % PROBE_EVERY:
        _declined[colour] = declined + 1
        return None
    stride = width + 1  # each row starts with its filter type
    try:
        raw = inflate(stream, height * stride)
    except Exception:  # deflate.DeflateError and what libdeflate reports: Pillow's decoder decides
        return None
    if len(raw) != height * stride:
        return None
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, stride)
    filters = rows[:, 0]
    if filters.max() > _SUB:
        _declined[colour] = declined + 1
        return None
    _declined[colour] = 0
    plane = np.array(rows[:, 1:])
    differenced = np.flatnonzero(filters == _SUB)
    if differenced.size:
        plane[differenced] = np.cumsum(plane[differenced], axis=1, dtype=np.uint8)
    return plane


def _decoded_by_pillow(stream: bytes, height: int, width: int) -> np.ndarray | None:
    """The plane as Pillow's PNG decoder makes it, written straight into a new array: the
    row decoder its PNG plugin hands the image data to ("zip": inflate, then undo each row's
    filter), fed with the data chunks :func:`_layout` checked. None where that decoder
    refuses the stream (damaged): the caller then reads the file through the plugin, which
    says what is wrong. Rows beyond the declared ones are ignored, as the plugin ignores them.
    Palette indices are decoded as grey levels: the same bytes, without Pillow's palette."""
    plane, image = array_backed("L", height, width)
    try:
        image.frombytes(stream, "zip", "L")
    except (ValueError, OSError, MemoryError):
        return None
    return plane


def array_backed(mode: str, height: int, width: int) -> tuple[np.ndarray, Image.Image]:
    """A new 8-bit plane and a Pillow image of ``mode`` ("L" or "P") whose memory is that
    plane's buffer, so that a decoder writing into the image writes where numpy reads, with no
    copy through ``tobytes()``. The plane starts as zeros, as Pillow's own image memory does:
    rows a stream that ends early never reaches read as Pillow reads them."""
    plane = np.zeros((height, width), dtype=np.uint8)
    return plane, Image.frombuffer(mode, (width, height), plane, "raw", mode, 0, 1)
