"""Whether an image or volume file is whole: :func:`image_problem`.

A training loader opens every image it is given; one cut short by an interrupted download or
copy stops an epoch ("image file is truncated") long after the audit said the labels were
fine. Two depths of checking (:data:`CHECK_MODES`):

* ``structure`` (the default): what the container says about its own extent, with no pixel
  decoded. JPEG: the marker segments up to the first scan, then an end marker (FF D9) after
  it. In entropy-coded data FF is always followed by 00 or a restart marker, so the last
  FF D9 of the file is the end of the image (an EXIF thumbnail's own FF D9 lies inside APP1,
  before the scan; bytes after the end marker are legal: cameras append data). PNG: every
  chunk inside the file, IHDR first, an IDAT, an IEND (bytes after it are legal), the CRC-32
  of the chunks a loader judges (every critical one; an ancillary one only before the image
  data, where Pillow refuses it). TIFF (classic and BigTIFF, either byte order): the chain of
  pages, every tag's values, strip and tile inside the file (a table that pages share walked
  once). GIF: its blocks, up to the trailer or a block that ends with the file. BMP: the pixel
  rows an uncompressed header declares (the last row's padding may be missing). WebP: the
  RIFF size. NIfTI: the voxels the header's datatype and dimensions declare
  (:func:`nifti_extent`; a ``.nii.gz`` by its gzip trailer's size, decompressed in a stream
  only when that does not match, since a file of several gzip members states the last one's
  size only). NPY: the bytes its shape and type declare.
* ``full``: the same, then a complete decode (Pillow with truncated loading off; tifffile for
  TIFF when installed, Pillow for a page whose codec tifffile lacks; every gzip member of a
  NIfTI volume decompressed, its CRC checked).

A file of a format not known here (as :func:`labelguard.readers.base.sniff` tells formats),
or one that neither decoder has the codec for, gets no verdict (None), never a false error;
so does a file a check fails on unforeseen (logged at debug level). A file that cannot be
read at all is no verdict either but a :class:`ReadError` (LG001). Work and memory are
bounded by the file's real size and the read limits (:mod:`labelguard.core.limits`), never
by a size a header states: a TIFF's strip and tile entries by what its bytes can hold, a
gzip stream's output by the size its NIfTI header declares (itself no more than deflate can
expand the compressed bytes to). A caller holding the file open passes it (``handle``): it
is read in pieces as the checks ask. A file opened here for a full check, where the decoder
reads it all anyway, is read whole once (up to :data:`WHOLE_READ_BYTES`) for both passes.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import struct
import warnings
import zlib
from typing import BinaryIO, Iterable, Iterator

import numpy as np

from labelguard.core import storage
from labelguard.core.cache import note_file
from labelguard.core.limits import current_limits
from labelguard.core.records import DamagedImage
from labelguard.core.text import shorten
from labelguard.errors import UsageError
from labelguard.readers.arrays import DEFLATE_RATIO
from labelguard.readers.base import (LinkedOutside, ReadError, ThisFileOnly, check_array, open_regular, read_bytes,
                                     sniff, stream_size)

logger = logging.getLogger(__name__)

# The checking depths: no check, the container's structure, a complete decode.
CHECK_MODES = ("off", "structure", "full")
DEFAULT_CHECK_MODE = "structure"

# The end of a file read first: a JPEG's end marker, a gzip trailer lie there.
TAIL_BYTES = 1 << 16
HEAD_BYTES = 1 << 16
# Bytes read at a time where a whole file is walked (PNG CRCs, a JPEG's scan, a gzip stream).
PIECE_BYTES = 1 << 20
# In full mode a file up to this size is read whole, once, for both the structure check and
# the decode; a larger one is read through its open file in pieces.
WHOLE_READ_BYTES = 1 << 26
# A TIFF page holds a 2- or 8-byte entry count; more entries than this is a damaged header.
MAX_TIFF_ENTRIES = 1 << 16
# Pages walked at most: a chain longer than this is damaged (a loop through shifted offsets).
MAX_TIFF_PAGES = 1 << 20
# Places listed in a finding about an image that one annotation file names several times.
PLACES_SHOWN = 3

_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM and RST0-7 carry no length
_TIFF_TAGS = {273: ("strip", 279), 324: ("tile", 325)}  # offsets tag -> (what, byte counts tag)
_TIFF_INTEGERS = {3: "H", 4: "I", 13: "I", 16: "Q", 18: "Q"}  # the types a strip or tile table may have
# TIFF field type -> bytes per value (TIFF 6.0 and BigTIFF); a type not here is skipped, as
# libtiff skips it.
_TIFF_WIDTHS = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8,
                18: 8}
_NIFTI_BYTES = {348: "nifti1", 540: "nifti2"}
# NIfTI datatype code -> bytes per voxel, as nibabel and ITK read the voxels (``bitpix`` is
# not what they read by, and some writers leave it wrong).
_NIFTI_ITEMSIZE = {2: 1, 4: 2, 8: 4, 16: 4, 32: 8, 64: 8, 128: 3, 256: 1, 512: 2, 768: 4, 1024: 8, 1280: 8,
                   1536: 16, 1792: 16, 2048: 32, 2304: 4}


class _Unreadable(ReadError):
    """The file's bytes could not be read (an I/O error): LG001's, not a verdict on them."""


class _NoVerdict(Exception):
    """A check gives up on a file: its work would pass the bounds its real size sets."""


class _File:
    """Random access to a file's bytes: given whole (``data``), or read from an open file by
    offset, as a check asks for them."""

    def __init__(self, handle: BinaryIO | None, data: bytes | None, size: int) -> None:
        self.handle = handle
        self.data = data
        self.size = size
        # Strip and tile entries the TIFF pages declare, a table shared by several pages
        # counted for each (a decoder walks it for each).
        self.tiff_entries = 0

    def read(self, offset: int, count: int) -> bytes:
        if offset >= self.size or count <= 0:
            return b""
        if self.data is not None:
            return self.data[offset:offset + count]
        assert self.handle is not None  # not a user mistake: a file without data has a handle
        try:
            self.handle.seek(offset)
            return self.handle.read(min(count, self.size - offset))
        except OSError as exc:
            raise _Unreadable(f"cannot read: {exc.strerror or exc}") from None

    def pieces(self, offset: int, count: int) -> Iterator[bytes | memoryview]:
        """The ``count`` bytes from ``offset`` (fewer where the file ends), a piece at a time."""
        end = min(offset + count, self.size)
        if self.data is not None:
            if offset < end:
                yield memoryview(self.data)[offset:end]
            return
        while offset < end:
            piece = self.read(offset, min(PIECE_BYTES, end - offset))
            if not piece:
                return
            yield piece
            offset += len(piece)


def image_problem(path: str, mode: str = DEFAULT_CHECK_MODE, data: bytes | None = None,
                  handle: BinaryIO | None = None) -> str | None:
    """What makes the image or volume at ``path`` unreadable to a loader, as a short factual
    sentence ("ends after 12,345 bytes without the JPEG end marker (FF D9)"); None when it is
    whole, when ``mode`` is "off", when its format is not one checked here, when it cannot
    be opened for a reason of its path (a missing file, a link out of the data: other codes'
    findings), or when a check cannot decide (logged at debug level).

    Args:
        path: the file (a local path, or a URL of object storage the audit was granted).
        mode: one of :data:`CHECK_MODES`.
        data: the file's bytes, when the caller holds them already (no second read).
        handle: the file, open for binary reading, when the caller has it open (read in
            pieces from it, as a check asks: no second open).

    Raises:
        ReadError: the file is there but cannot be read (a folder, a named pipe, no
            permission, an I/O error): LG001's finding, not LG008's.
    """
    if mode not in CHECK_MODES:
        raise UsageError(f"unknown image check mode {mode!r}; known: {', '.join(CHECK_MODES)}")
    if mode == "off":
        return None
    try:
        if handle is not None:
            return _guarded(path, _File(handle, None, stream_size(handle)), mode)
        if data is None and storage.url_scheme(path):
            data = read_bytes(path, "image")
        if data is not None:
            return _guarded(path, _File(None, data, len(data)), mode)
        with open_regular(path, "image") as opened:
            return _guarded(path, _opened(opened, mode), mode)
    except LinkedOutside:
        return None
    except ReadError:
        if not storage.exists(path):
            return None
        raise
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror or exc}") from None


def check_bytes(data: bytes, name: str, mode: str = DEFAULT_CHECK_MODE) -> str | None:
    """:func:`image_problem` of a file whose bytes are ``data`` and whose name is ``name``,
    with whatever a check raises let through: the tests' way to see labelguard's own bugs,
    which :func:`image_problem` turns into no verdict."""
    return _checked(name, _File(None, data, len(data)), mode)


def png_problem(data: bytes) -> str | None:
    """What :func:`image_problem` finds wrong with the structure of the PNG ``data`` (a chunk
    cut short, a critical chunk's CRC, no IHDR first, no IDAT, no IEND); None when whole."""
    return _png(_File(None, data, len(data)), data[:HEAD_BYTES])


def _opened(handle: BinaryIO, mode: str) -> _File:
    """The open file as the checks read it: whole, once, for a complete decode of a file that
    is not large (the structure check and the decoder then read the same bytes)."""
    size = stream_size(handle)
    if mode == "full" and size <= WHOLE_READ_BYTES:
        try:
            data = handle.read()
        except OSError as exc:
            raise _Unreadable(f"cannot read: {exc.strerror or exc}") from None
        return _File(None, data, len(data))
    return _File(handle, None, size)


def damaged_images(images: Iterable[tuple[str, str, str | None]], mode: str,
                   unnamed: bool = False) -> list[DamagedImage] | None:
    """The damaged ones among ``images`` (path, as shown, where the annotation names it),
    checked as ``mode`` says, each file once however often it is named (its places listed);
    None when ``mode`` is "off" (not checked). ``unnamed``: no annotation names them. An
    image that cannot be read at all is kept with ``unread`` set (LG001's, not LG008's). Each
    image read is a dependency of the running task's cached result."""
    if mode == "off":
        return None
    places: dict[str, tuple[str, list[str]]] = {}
    for path, display, place in images:
        _, where = places.setdefault(path, (display, []))
        if place:
            where.append(place)
    found = []
    for path, (display, where) in places.items():
        note_file(path)
        try:
            problem = image_problem(path, mode)
        except ReadError as exc:
            found.append(DamagedImage(display, str(exc), _places(where), unnamed, unread=True))
            continue
        if problem is not None:
            found.append(DamagedImage(display, problem, _places(where), unnamed))
    return found


def _places(where: list[str]) -> str | None:
    """Where an annotation names an image: its places, the first few and how many more."""
    return shorten(where, PLACES_SHOWN) if where else None


def _guarded(path: str, file: _File, mode: str) -> str | None:
    try:
        return _checked(path, file, mode)
    except _Unreadable:
        raise
    except Exception:  # a check meeting bytes it did not foresee: no verdict, the record goes on
        logger.debug("no verdict on whether %s is whole: its check raised", path, exc_info=True)
        return None


def _checked(path: str, file: _File, mode: str) -> str | None:
    head = file.read(0, HEAD_BYTES)
    if not head:
        # No bytes to judge: LG001 as for a paired image, an ImageFolder file or a label.
        raise _Unreadable("empty file (0 bytes)")
    kind = _kind(head, path)
    check = _STRUCTURE.get(kind) if kind else None
    if check is None:
        return None
    try:
        problem = check(file, head)
        if problem is None and mode == "full" and kind is not None:
            problem = _DECODE.get(kind, _decode_with_pillow)(file, head)
    except _NoVerdict:
        return None
    return problem


def _kind(head: bytes, path: str) -> str | None:
    """The format of a file as :func:`labelguard.readers.base.sniff` tells it from its first
    bytes; a RIFF file only when it holds WebP, a gzip file only when named as a NIfTI volume."""
    container = sniff(head)
    if container == "riff":
        return "webp" if head[8:12] == b"WEBP" else None
    if container == "gzip":
        return "nifti-gz" if path.lower().endswith(".nii.gz") else None
    return container


# ---- JPEG ---------------------------------------------------------------------------------

def _jpeg(file: _File, head: bytes) -> str | None:
    """The segments up to the first scan (SOS), then an end marker after it."""
    scan = _jpeg_scan_start(file, head)
    if isinstance(scan, str):
        return scan
    tail_start = max(scan, file.size - TAIL_BYTES)
    if file.read(tail_start, file.size - tail_start).rfind(b"\xff\xd9") >= 0:
        return None
    # No end marker near the end: bytes appended after it (a camera's), or none at all.
    position = scan
    while position < tail_start:
        piece = file.read(position, min(PIECE_BYTES, tail_start - position) + 1)
        if piece.find(b"\xff\xd9") >= 0:
            return None
        position += len(piece) - 1
        if len(piece) <= 1:
            break
    return f"ends after {file.size:,} bytes without the JPEG end marker (FF D9) after its image data"


def _jpeg_scan_start(file: _File, head: bytes) -> int | str:
    """Where the entropy-coded data of the first scan starts, or what is wrong before it.
    Bytes that are no marker between segments are skipped, as libjpeg skips them."""
    position = 2
    size = file.size
    window, window_start = head, 0
    while True:
        if position + 4 > window_start + len(window):
            window_start = position
            window = file.read(position, HEAD_BYTES)
        at = position - window_start
        if len(window) - at < 2:
            return f"ends after {size:,} bytes, before its image data (no JPEG start-of-scan marker FF DA)"
        if window[at] != 0xFF:
            skip = window.find(b"\xff", at)
            position = window_start + (skip if skip >= 0 else len(window))
            continue
        marker = window[at + 1]
        if marker == 0xFF:  # fill bytes
            position += 1
            continue
        if marker in _JPEG_STANDALONE or marker == 0xD8:
            position += 2
            continue
        if marker == 0xD9:
            return f"reaches its end marker (FF D9) at byte {position:,} before any image data (no start-of-scan)"
        if len(window) - at < 4:
            return f"ends after {size:,} bytes inside the JPEG segment header at byte {position:,}"
        length = int.from_bytes(window[at + 2:at + 4], "big")
        end = position + 2 + length
        if length < 2:
            return f"has JPEG segment FF {marker:02X} at byte {position:,} declaring a length of {length} (at least 2)"
        if end > size:
            return (f"has JPEG segment FF {marker:02X} at byte {position:,} declaring {length:,} bytes, but the "
                    f"file ends {size - position - 2:,} bytes after it")
        if marker == 0xDA:
            return end
        position = end


# ---- PNG ----------------------------------------------------------------------------------

def _png(file: _File, head: bytes) -> str | None:
    """Every chunk inside the file, IHDR first, an IDAT, and IEND; the CRC of every critical
    chunk (first letter upper case) and of the ancillary chunks before the image data, which
    Pillow refuses to open a file with. An ancillary chunk's CRC after the image data is not
    judged: libpng warns and skips the chunk, Pillow loads the image."""
    position = 8
    size = file.size
    idat = False
    first = True
    while position < size:
        header = file.read(position, 8)
        if len(header) < 8:
            return f"ends after {size:,} bytes inside the PNG chunk header at byte {position:,} (no IEND chunk)"
        length, name = int.from_bytes(header[:4], "big"), header[4:]
        shown = name.decode("latin-1")
        if not name.isalpha() or not name.isascii():
            return f"has no PNG chunk at byte {position:,}: its type bytes are {name!r}, not letters"
        if first and name != b"IHDR":
            return f"starts with PNG chunk {shown}, not IHDR"
        first = False
        end = position + 12 + length
        if end > size:
            return (f"has PNG chunk {shown} at byte {position:,} declaring {length:,} bytes of data (the chunk, with "
                    f"its CRC, ends at byte {end:,}) but the file ends after {size:,} bytes")
        if name[:1].isupper() or not idat:
            crc = zlib.crc32(name)
            for piece in file.pieces(position + 8, length):
                crc = zlib.crc32(piece, crc)
            stored = int.from_bytes(file.read(position + 8 + length, 4), "big")
            if stored != crc:
                return (f"has a wrong CRC in PNG chunk {shown} at byte {position:,} (stored {stored:08X}, the "
                        f"chunk's bytes give {crc:08X}): the bytes are not those it was written with")
        idat = idat or name == b"IDAT"
        if name == b"IEND":
            return None if idat else "has no IDAT chunk (no image data before IEND)"
        position = end
    return f"has no IEND chunk: it ends after {size:,} bytes{'' if idat else ', with no IDAT chunk'}"


# ---- TIFF ---------------------------------------------------------------------------------

def entry_budget(size: int) -> int:
    """The strip or tile entries a TIFF file of ``size`` bytes can hold, each in its own bytes."""
    return size // 4 + 64


class _TiffWalk:
    """The pages of one TIFF file as they are checked: the strip and tile tables already
    checked (pages may share one), and the entries left to walk, a budget the file's real
    size sets (a table of N entries takes at least 4N bytes of the file, counted once)."""

    def __init__(self, file: _File, order: str, big: bool) -> None:
        self.file, self.order, self.big = file, order, big
        self.checked: set[tuple] = set()
        self.budget = entry_budget(file.size)

    def spend(self, entries: int) -> None:
        self.budget -= entries
        if self.budget < 0:
            raise _NoVerdict


def _tiff(file: _File, head: bytes) -> str | None:
    """The chain of pages (IFDs), bounded and without loops, every tag's values, strip and
    tile inside the file."""
    order = "<" if head[:2] == b"II" else ">"
    big = head[2:4] in (b"+\x00", b"\x00+")
    size = file.size
    if big:
        if len(head) < 16:
            return f"ends after {size:,} bytes inside the BigTIFF header"
        offset = struct.unpack(order + "Q", head[8:16])[0]
        count_format, entry_bytes, next_format = "Q", 20, "Q"
    else:
        if len(head) < 8:
            return f"ends after {size:,} bytes inside the TIFF header"
        offset = struct.unpack(order + "I", head[4:8])[0]
        count_format, entry_bytes, next_format = "H", 12, "I"
    count_bytes = struct.calcsize(count_format)
    next_bytes = struct.calcsize(next_format)
    walk = _TiffWalk(file, order, big)
    seen: set[int] = set()
    page = 0
    while offset:
        page += 1
        if page > MAX_TIFF_PAGES:
            return f"has a TIFF chain of pages that goes on past {MAX_TIFF_PAGES:,} pages: a damaged chain"
        if offset in seen:
            return f"has TIFF page {page} pointing back to the page at byte {offset:,}: its chain of pages loops"
        seen.add(offset)
        if offset + count_bytes > size:
            return f"has TIFF page {page} at byte {offset:,}, past the file's end ({size:,} bytes)"
        entries = struct.unpack(order + count_format, file.read(offset, count_bytes))[0]
        if entries > MAX_TIFF_ENTRIES:
            return f"has TIFF page {page} at byte {offset:,} declaring {entries:,} tags: a damaged header"
        walk.spend(entries)
        table_end = offset + count_bytes + entries * entry_bytes
        if table_end + next_bytes > size:
            return (f"ends after {size:,} bytes, inside TIFF page {page}'s tag table ({entries:,} tags from byte "
                    f"{offset:,}, {table_end + next_bytes - offset:,} bytes with the next page's offset)")
        table = file.read(offset + count_bytes, entries * entry_bytes)
        problem = _tiff_page(walk, table, page)
        if problem:
            return problem
        offset = struct.unpack(order + next_format, file.read(table_end, next_bytes))[0]
    return None if page else "declares no TIFF page (its first page offset is 0)"


def _tiff_page(walk: _TiffWalk, table: bytes, page: int) -> str | None:
    """Every tag of one page whose values lie outside its entry inside the file, then its
    strips or tiles (each table once per file)."""
    file, order, big = walk.file, walk.order, walk.big
    entry_bytes, inline = (20, 8) if big else (12, 4)
    head_format = order + ("HHQ" if big else "HHI")
    pointer = order + ("Q" if big else "I")
    tags: dict[int, tuple[int, int, bytes]] = {}
    for start in range(0, len(table), entry_bytes):
        tag, kind, count = struct.unpack(head_format, table[start:start + entry_bytes - inline])
        value = table[start + entry_bytes - inline:start + entry_bytes]
        width = _TIFF_WIDTHS.get(kind)
        if width is not None and count * width > inline:
            at = struct.unpack(pointer, value)[0]
            if at + count * width > file.size:
                return (f"ends after {file.size:,} bytes, before the end of TIFF page {page}'s tag {tag} "
                        f"({count:,} values of {width} bytes from byte {at:,}, to byte {at + count * width:,})")
        if tag in (273, 279, 324, 325):
            tags[tag] = (kind, count, value)
    for offsets_tag, (what, counts_tag) in _TIFF_TAGS.items():
        if offsets_tag not in tags or counts_tag not in tags:
            continue
        file.tiff_entries += tags[offsets_tag][1]
        key = (tags[offsets_tag], tags[counts_tag])
        if key in walk.checked:
            continue
        walk.checked.add(key)
        offsets = _tiff_values(walk, *tags[offsets_tag])
        counts = _tiff_values(walk, *tags[counts_tag])
        if isinstance(offsets, str) or isinstance(counts, str):
            return f"has TIFF page {page} where {offsets if isinstance(offsets, str) else counts}"
        shared = min(len(offsets), len(counts))
        ends = offsets[:shared] + counts[:shared]
        past = np.flatnonzero((counts[:shared] > 0) & (ends > file.size))
        if past.size:
            index = int(past[0])
            return (f"ends after {file.size:,} bytes, before the end of TIFF page {page}'s {what} {index + 1} "
                    f"(bytes {int(offsets[index]):,}-{int(ends[index]):,})")
    return None


def _tiff_values(walk: _TiffWalk, kind: int, count: int, value: bytes) -> np.ndarray | str:
    """The integers of one strip or tile tag (inside the file: its entry was checked), as
    64-bit integers."""
    if kind not in _TIFF_INTEGERS:
        return f"a strip or tile tag has the value type {kind}, not an integer type"
    walk.spend(count)
    code = _TIFF_INTEGERS[kind]
    width = struct.calcsize(code)
    nbytes = count * width
    if nbytes <= len(value):
        raw = value[:nbytes]
    else:
        raw = walk.file.read(struct.unpack(walk.order + ("Q" if walk.big else "I"), value)[0], nbytes)
    return np.frombuffer(raw, dtype=walk.order + code).astype(np.uint64)


# ---- GIF, BMP, WebP -----------------------------------------------------------------------

class _Bytes:
    """One byte at a time of a file read in pieces: a walk through a GIF's sub-blocks."""

    def __init__(self, file: _File) -> None:
        self.file = file
        self.start = 0
        self.window = b""

    def __getitem__(self, position: int) -> int:
        at = position - self.start
        if not 0 <= at < len(self.window):
            self.start, self.window, at = position, self.file.read(position, PIECE_BYTES), 0
        return self.window[at]


def _gif(file: _File, head: bytes) -> str | None:
    """The blocks after the screen descriptor, up to the trailer (3B), or up to the file's end
    where a block ended there (Pillow loads such a file)."""
    size = file.size
    if size < 13:
        return f"ends after {size:,} bytes inside the GIF header"
    data = _Bytes(file)
    position = 13 + (3 << ((data[10] & 7) + 1) if data[10] & 0x80 else 0)
    images = 0
    while True:
        if position >= size:
            return None if images else f"ends after {size:,} bytes before any GIF image"
        block = data[position]
        if block == 0x3B:
            return None
        if block == 0x21:
            position += 2
        elif block == 0x2C:
            if position + 10 > size:
                return f"ends after {size:,} bytes inside the GIF image descriptor at byte {position:,}"
            flags = data[position + 9]
            position += 10 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0) + 1
            images += 1
        else:
            return f"holds no GIF block at byte {position:,} (byte {block:02X}): the block before it is damaged"
        while position < size and data[position]:  # sub-blocks, each its length first
            position += data[position] + 1
        if position >= size:
            return f"ends after {size:,} bytes inside GIF data, without the trailer (3B)"
        position += 1


def _bmp(file: _File, head: bytes) -> str | None:
    """The rows of an uncompressed bitmap inside the file; the last row's padding to four
    bytes may be missing (Pillow and other readers load such a file)."""
    if len(head) < 34:
        return f"ends after {file.size:,} bytes inside the BMP header"
    offset, header_size = struct.unpack("<II", head[10:18])
    if header_size < 40:
        return None  # an OS/2 header: not checked
    width, height, _, bits, compression = struct.unpack("<iiHHI", head[18:34])
    if compression not in (0, 3, 6) or width <= 0 or bits not in (1, 2, 4, 8, 16, 24, 32):
        return None
    rows = abs(height)
    needed = offset + (((width * bits + 31) // 32) * 4 * (rows - 1) + (width * bits + 7) // 8 if rows else 0)
    if needed > file.size:
        return (f"has a BMP header declaring {rows:,} rows of {width:,} pixels, ending at byte {needed:,}, "
                f"but the file ends after {file.size:,} bytes")
    return None


def _webp(file: _File, head: bytes) -> str | None:
    declared = int.from_bytes(head[4:8], "little") + 8
    if declared > file.size:
        return f"has a RIFF header declaring {declared:,} bytes of WebP but the file ends after {file.size:,} bytes"
    return None


# ---- NIfTI and NPY ------------------------------------------------------------------------

def nifti_extent(head: bytes, pair: bool = False) -> tuple[int, int] | None:
    """(vox_offset, bytes of voxels) that a NIfTI-1 or NIfTI-2 header declares, each voxel's
    size from its ``datatype`` as nibabel and ITK read the voxels: the one reckoning of what
    a NIfTI file must hold, for masks and images alike. None for bytes that are no such
    header, a header of a .hdr/.img pair unless ``pair`` (its voxels lie in the .img), or a
    header a reader refuses on its own (a rank, a size, a type or an offset out of range)."""
    if len(head) < 348:
        return None
    accepted = (b"n+1\x00", b"n+2\x00") + ((b"ni1\x00", b"ni2\x00") if pair else ())
    for order in ("<", ">"):
        kind = _NIFTI_BYTES.get(struct.unpack(order + "i", head[:4])[0])
        if kind == "nifti1" and head[344:348] in accepted:
            dims = struct.unpack(order + "8h", head[40:56])
            datatype = struct.unpack(order + "h", head[70:72])[0]
            vox_offset = struct.unpack(order + "f", head[108:112])[0]
        elif kind == "nifti2" and len(head) >= 540 and head[4:8] in accepted:
            datatype = struct.unpack(order + "h", head[12:14])[0]
            dims = struct.unpack(order + "8q", head[16:80])
            vox_offset = struct.unpack(order + "q", head[168:176])[0]
        else:
            continue
        rank = dims[0]
        itemsize = _NIFTI_ITEMSIZE.get(datatype)
        if not 0 < rank < 8 or itemsize is None or not math.isfinite(vox_offset) or vox_offset < 0 \
                or any(d < 0 for d in dims[1:rank + 1]):
            return None
        voxels = 1
        for side in dims[1:rank + 1]:
            voxels *= side
        return int(vox_offset), voxels * itemsize
    return None


def _nifti(file: _File, head: bytes) -> str | None:
    offset, nbytes = nifti_extent(head) or (0, 0)
    if offset + nbytes > file.size:
        return (f"ends after {file.size:,} bytes; its NIfTI header declares {nbytes:,} bytes of voxels from byte "
                f"{offset:,} ({offset + nbytes:,} in all)")
    return None


def _nifti_gz(file: _File, head: bytes) -> str | None:
    """The gzip trailer's size against the header's; on a mismatch the stream itself,
    decompressed piece by piece."""
    return _nifti_stream(file, head, full=False)


def _nifti_gz_full(file: _File, head: bytes) -> str | None:
    return _nifti_stream(file, head, full=True)


def _nifti_stream(file: _File, head: bytes, full: bool) -> str | None:
    decompressor = zlib.decompressobj(31)
    try:
        start = decompressor.decompress(head, 540)
    except zlib.error:
        return "is no gzip stream that can be decompressed: its first bytes are damaged"
    declared = nifti_extent(start)
    if declared is None:
        if len(start) < 348 and not decompressor.eof and len(head) == file.size:
            return (f"ends its gzip stream after {len(start):,} bytes, inside the NIfTI header (348 bytes), after "
                    f"{file.size:,} compressed bytes")
        return None  # not a single-file NIfTI volume: not checked here
    needed = sum(declared)
    if needed > DEFLATE_RATIO * file.size:
        return (f"has a NIfTI header declaring {needed:,} bytes (voxels from byte {declared[0]:,}), more than its "
                f"{file.size:,} gzip-compressed bytes can expand to (deflate: {DEFLATE_RATIO}x at most)")
    if not full and file.size >= 18 and int.from_bytes(file.read(file.size - 4, 4), "little") == needed % (1 << 32):
        return None
    return _gzip_stream(file, needed)


def _gzip_stream(file: _File, needed: int) -> str | None:
    """The decompressed bytes of every gzip member, counted (never held), to the last
    member's end, each member's CRC checked by zlib: fewer than ``needed`` is a cut stream,
    as is a member without its end. No verdict on a stream that holds more than ``needed``
    and a piece (nothing a reader reads), or more than the ``max_file_bytes`` read limit."""
    limit = min(current_limits().max_file_bytes, needed + PIECE_BYTES)
    produced = 0
    position = 0
    decompressor = zlib.decompressobj(31)
    member_open = False
    while position < file.size:
        piece = file.read(position, PIECE_BYTES)
        position += len(piece)
        while piece:
            member_open = True
            try:
                produced += len(decompressor.decompress(piece, PIECE_BYTES))
                while decompressor.unconsumed_tail and produced <= limit:
                    produced += len(decompressor.decompress(decompressor.unconsumed_tail, PIECE_BYTES))
            except zlib.error as exc:
                return (f"holds gzip data that cannot be decompressed ({exc}) after {produced:,} of the "
                        f"{needed:,} bytes its NIfTI header declares")
            if produced > limit:
                return None
            piece = b""
            if decompressor.eof:
                piece = decompressor.unused_data
                decompressor = zlib.decompressobj(31)
                member_open = False
                if piece[:1] not in (b"", b"\x1f"):
                    position = file.size  # padding after the last member, as some tools leave
                    piece = b""
    if produced < needed:
        return f"ends its gzip stream after {produced:,} of the {needed:,} bytes its NIfTI header declares"
    if member_open:
        return (f"ends its gzip stream after {file.size:,} compressed bytes without its last member's end "
                "(CRC and size)")
    return None


def _npy(file: _File, head: bytes) -> str | None:
    from labelguard.readers.arrays import read_npy_header

    try:
        header = read_npy_header(io.BytesIO(head), "the NPY file")
    except ReadError as exc:
        return str(exc)
    nbytes = header.dtype.itemsize
    for side in header.shape:
        nbytes *= side
    if header.offset + nbytes > file.size:
        return (f"ends after {file.size:,} bytes; its NPY header declares a {header.shape} {header.dtype} array: "
                f"{nbytes:,} bytes after the {header.offset}-byte header")
    return None


_STRUCTURE = {"jpeg": _jpeg, "png": _png, "tiff": _tiff, "gif": _gif, "bmp": _bmp, "webp": _webp,
              "nifti": _nifti, "nifti-gz": _nifti_gz, "npy": _npy}


# ---- full decode --------------------------------------------------------------------------

@contextlib.contextmanager
def _stream(file: _File) -> Iterator[BinaryIO]:
    """The file as a stream from its start, for a decoder; left open when it is the caller's."""
    if file.data is not None:
        with io.BytesIO(file.data) as stream:
            yield stream
        return
    assert file.handle is not None  # not a user mistake: a file without data has a handle
    file.handle.seek(0)
    yield file.handle


def _decode_with_pillow(file: _File, head: bytes) -> str | None:
    """Every frame decoded by Pillow (a JPEG's scans entropy-decoded in full, its pixels at an
    eighth of the size), truncated images refused, each frame's declared size checked against
    the read limits before it is decoded (an image over them: no verdict)."""
    problem = _pillow_decode(file)
    return None if problem is _NO_CODEC else problem


# What :func:`_pillow_decode` says of a file that Pillow has no decoder for (not damage).
_NO_CODEC = "no decoder"


def _pillow_decode(file: _File) -> str | None:
    from PIL import Image, ImageFile, UnidentifiedImageError

    if ImageFile.LOAD_TRUNCATED_IMAGES:
        return None  # the process accepts truncated images: a decode here proves nothing
    try:
        with warnings.catch_warnings(), _stream(file) as stream:
            warnings.simplefilter("ignore")
            with Image.open(stream) as image:
                for frame in range(getattr(image, "n_frames", 1)):
                    image.seek(frame)
                    width, height = image.size
                    check_array(f"the {image.format} header", (height, width, len(image.getbands())), 1, image.mode)
                    if image.format == "JPEG":
                        # Decoded at an eighth of its size: libjpeg still reads every entropy-coded
                        # bit (the coefficients must be decoded to find the next), so a cut or a
                        # broken scan fails alike, without the inverse DCT and colour conversion
                        # of every pixel (a third or more of a decode).
                        image.draft(image.mode, (max(1, width // 8), max(1, height // 8)))
                    image.load()
    except ReadError:
        return None
    except Image.DecompressionBombError:
        return None
    except UnidentifiedImageError:
        return _NO_CODEC  # a structure that checked out, in a variant Pillow has no plugin for
    except Exception as exc:  # Pillow's plugins raise OSError, SyntaxError, ValueError, struct.error...
        if isinstance(exc, OSError) and exc.errno is not None:
            raise _Unreadable(f"cannot read: {exc.strerror or exc}") from None
        if isinstance(exc, OSError) and "not available" in str(exc):
            return _NO_CODEC  # "decoder ... not available": Pillow built without that codec
        return f"cannot be decoded: {_said(exc)}"
    return None


def _decode_tiff(file: _File, head: bytes) -> str | None:
    """Every page decoded by tifffile; by Pillow without it, or where a page's compression or
    predictor needs a codec tifffile lacks (the imagecodecs package: LZW, JPEG, ...); no
    verdict where neither has the codec."""
    if file.tiff_entries > entry_budget(file.size):
        return None  # pages that share their strips: a decoder's work would pass what the file's size bounds
    try:
        import tifffile
    except ImportError:
        return _decode_with_pillow(file, head)
    tiff_logger = logging.getLogger("tifffile")
    level = tiff_logger.level
    tiff_logger.setLevel(logging.CRITICAL)
    try:
        with _tiff_stream(file) as stream, tifffile.TiffFile(stream, name="image.tif") as tiff:
            pages = list(tiff.pages)
            if any(not _tifffile_decodes(tifffile, page) for page in pages):
                return _decode_with_pillow(file, head)
            for page in pages:
                shape = tuple(int(side) for side in page.shape)  # type: ignore[union-attr]
                check_array("the TIFF page", shape, page.dtype.itemsize if page.dtype else 1,  # type: ignore[union-attr]
                            page.dtype)  # type: ignore[union-attr]
                page.asarray()  # type: ignore[union-attr]
    except _Unreadable:
        raise
    except ReadError:
        return None  # a page over the read limits
    except Exception as exc:  # tifffile raises TiffFileError, ValueError, OSError, codec errors...
        if isinstance(exc, OSError) and exc.errno is not None:
            raise _Unreadable(f"cannot read: {exc.strerror or exc}") from None
        return f"cannot be decoded: {_said(exc)}"
    finally:
        tiff_logger.setLevel(level)
    return None


def _tifffile_decodes(tifffile, page) -> bool:
    """Whether tifffile has the codecs a page needs (some come only with imagecodecs)."""
    codecs = tifffile.TIFF
    compression = getattr(page, "compression", 1)
    predictor = getattr(page, "predictor", 1)
    return (compression == 1 or compression in codecs.DECOMPRESSORS) and \
        (predictor == 1 or predictor in codecs.UNPREDICTORS)


@contextlib.contextmanager
def _tiff_stream(file: _File) -> Iterator[BinaryIO]:
    """The file for tifffile, without a descriptor or a name: tifffile then reads this file's
    bytes and no file that an OME-TIFF's or a Micro-Manager stack's metadata names."""
    try:
        descriptor = file.handle.fileno() if file.data is None and file.handle is not None else None
    except (AttributeError, io.UnsupportedOperation):
        descriptor = None  # an in-memory file: no descriptor to hide
    if descriptor is None:
        with _stream(file) as stream:
            yield stream
        return
    # tifffile takes the stream's position for the file's start; a duplicated descriptor
    # shares the position, and closing it leaves the caller's file open.
    assert file.handle is not None  # not a user mistake: a descriptor comes from a handle
    file.handle.seek(0)
    with ThisFileOnly(io.FileIO(os.dup(descriptor), "rb")) as stream:
        yield stream


def _said(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "\u2026"


def _no_more(file: _File, head: bytes) -> str | None:
    return None  # the structure check read every byte these formats have


_DECODE = {"tiff": _decode_tiff, "nifti": _no_more, "nifti-gz": _nifti_gz_full, "npy": _no_more}
