"""NPY files and NPZ archives, read with every size they declare checked before it is allocated.

``np.load`` trusts the header: a 100-byte NPY that declares a shape of (100000, 100000)
makes it allocate 75 GiB before it finds the data missing, and an NPZ member that is not
an array comes back as the bytes of the whole member. Here the header is parsed on its own
(a literal dict, as NumPy writes it), the array it declares is checked against the read
limits and against what the file (or the zip member) really holds, and only then read,
into a buffer of that checked size.

A zip member states its uncompressed length; Python's zipfile never returns more than that,
and a deflated stream cannot expand more than :data:`DEFLATE_RATIO` times, so a member
claiming more than its compressed bytes can hold is refused without being inflated.
"""

from __future__ import annotations

import ast
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Literal

import numpy as np

from labelguard.core.text import clipped
from labelguard.readers.base import ReadError, check_array, check_decoded, check_holds, open_regular, stream_size

if TYPE_CHECKING:
    import zipfile

NPY_MAGIC = b"\x93NUMPY"
# NumPy's own loader refuses headers over 10,000 characters; version 1 headers stop at 65,535.
MAX_HEADER_BYTES = 1 << 16
_HEADER_KEYS = {"descr", "fortran_order", "shape"}
# deflate's largest expansion (258-byte matches coded in about two bits), plus room for the
# few bytes a tiny stream needs.
DEFLATE_RATIO = 1032
DEFLATE_SLACK = 1 << 10
# Arrays are read in pieces of this size, so a zip member's stream never builds one more copy.
READ_PIECE = 1 << 24


@dataclass(frozen=True)
class NpyHeader:
    """What an NPY header declares.

    Attributes:
        shape: the array's shape.
        dtype: its element type.
        fortran_order: the data is in column-major order.
        offset: bytes from the start of the NPY data to the first array byte.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    offset: int


def read_npy_header(stream: BinaryIO, what: str) -> NpyHeader:
    """Parse the NPY header at the start of ``stream``; ReadError saying what is wrong.

    ``what`` names the array in messages ("the NPY file", "NPZ member 'label.npy'")."""
    magic = stream.read(8)
    if len(magic) < 8 or not magic.startswith(NPY_MAGIC):
        raise ReadError(f"{what} is not a NumPy array (starts with {magic[:8]!r}, not {NPY_MAGIC!r})")
    major, minor = magic[6], magic[7]
    if major == 1:
        size_format, encoding = "<H", "latin-1"
    elif major in (2, 3):
        size_format, encoding = "<I", "latin-1" if major == 2 else "utf-8"
    else:
        raise ReadError(f"{what} has NPY format version {major}.{minor}; versions 1.0 to 3.0 exist")
    length_bytes = stream.read(struct.calcsize(size_format))
    if len(length_bytes) < struct.calcsize(size_format):
        raise ReadError(f"{what} ends inside its header: truncated")
    length = struct.unpack(size_format, length_bytes)[0]
    if length > MAX_HEADER_BYTES:
        raise ReadError(f"{what} declares a header of {length:,} bytes; NPY headers are a short dict "
                        f"(at most {MAX_HEADER_BYTES:,} bytes are read): a damaged or hostile file")
    raw = stream.read(length)
    if len(raw) < length:
        raise ReadError(f"{what} ends inside its header: truncated")
    try:
        declared = ast.literal_eval(raw.decode(encoding))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError, TypeError):
        raise ReadError(f"{what} has a header that is not a Python literal: {_shown(raw)}") from None
    if not isinstance(declared, dict) or set(declared) != _HEADER_KEYS:
        raise ReadError(f"{what} has a header that is not a dict of descr, fortran_order and shape: "
                        f"{_shown(raw)}")
    shape = declared["shape"]
    if not (isinstance(shape, tuple) and all(type(side) is int and side >= 0 for side in shape)):
        raise ReadError(f"{what} declares the shape {_shown(repr(shape).encode())}, not a tuple of "
                        "whole numbers >= 0")
    if type(declared["fortran_order"]) is not bool:
        raise ReadError(f"{what} declares fortran_order {declared['fortran_order']!r}, not True or False")
    try:
        dtype = np.lib.format.descr_to_dtype(declared["descr"])
    except Exception:  # NumPy raises several types on descriptors a hostile header can hold
        raise ReadError(f"{what} declares the element type {_shown(repr(declared['descr']).encode())}, "
                        "which NumPy does not know") from None
    if dtype.hasobject:
        raise ReadError(f"{what} holds Python objects ({dtype}), which only pickle can load; a label "
                        "array holds numbers")
    if dtype.subdtype is not None or dtype.itemsize == 0:
        raise ReadError(f"{what} declares the element type {dtype}, which no NumPy array is saved with")
    return NpyHeader(shape, dtype, declared["fortran_order"], len(magic) + len(length_bytes) + length)


def _shown(raw: bytes) -> str:
    return repr(clipped(raw.decode("latin-1").strip(), 80))


def read_npy_data(stream: BinaryIO, header: NpyHeader, holds: int, what: str) -> np.ndarray:
    """The array ``header`` declares, read from ``stream`` (placed after the header), which
    holds ``holds`` bytes from there; ReadError when the declared array is over the read
    limits, larger than what the stream holds, or cut short."""
    nbytes = check_array(what, header.shape, header.dtype.itemsize, header.dtype)
    check_holds(what, nbytes, holds)
    buffer = np.empty(nbytes, dtype=np.uint8)  # not zero-filled: every byte is read into it
    view = memoryview(buffer)  # type: ignore[arg-type]  # numpy declares ndarray's __buffer__ for Python 3.12+ only
    done = 0
    while done < nbytes:
        # Every stream given here (a file, BytesIO, a zip member) has readinto.
        got = stream.readinto(view[done:done + READ_PIECE])  # type: ignore[attr-defined]  # BinaryIO omits it
        if not got:
            raise ReadError(f"{what} ends after {done:,} of its {nbytes:,} data bytes: truncated")
        done += got
    array = buffer.view(header.dtype)
    if header.fortran_order:
        return array.reshape(header.shape[::-1]).transpose()
    return array.reshape(header.shape)


def read_npy(path: str) -> np.ndarray:
    """The array of the NPY file at ``path``; ReadError when it cannot be read."""
    with open_regular(path, "NPY file") as handle:
        try:
            header = read_npy_header(handle, "the NPY file")
            size = stream_size(handle)
            return read_npy_data(handle, header, size - header.offset, "the NPY file")
        except OSError as exc:
            raise ReadError(f"cannot read NPY: {exc.strerror or exc}") from None


def npy_shape(path: str) -> tuple[int, ...]:
    """The shape an NPY file declares, read from its header alone."""
    with open_regular(path, "NPY file") as handle:
        return read_npy_header(handle, "the NPY file").shape


class NpzArchive:
    """An NPZ file opened for reading members one at a time, as ``np.load`` names them.

    ``keys`` are the member names, ``.npy`` dropped (``label`` for ``label.npy``). Use as a
    context manager; every method raises ReadError for what cannot be read."""

    def __init__(self, path: str) -> None:
        # Imported here: zipfile brings pathlib, urllib and three compression modules, some
        # 10 ms of every audit's start-up that only NPZ files need.
        import zipfile

        handle = open_regular(path, "NPZ file")
        try:
            self._zip = zipfile.ZipFile(handle)
        except Exception as exc:  # zipfile raises many types on damaged central directories
            handle.close()
            raise ReadError(f"cannot open NPZ: {_reason(exc)}") from None
        self._handle = handle
        self._members: dict[str, zipfile.ZipInfo] = {}
        for info in self._zip.infolist():
            name = info.filename
            self._members.setdefault(name[:-4] if name.endswith(".npy") else name, info)
        self.keys = list(self._members)

    def __enter__(self) -> "NpzArchive":
        return self

    def __exit__(self, *exc_info) -> None:
        self._zip.close()
        self._handle.close()

    def header(self, key: str) -> NpyHeader:
        """The header of member ``key`` (the array's shape without reading its data)."""
        with self._open(key) as (stream, what):
            return read_npy_header(stream, what)

    def array(self, key: str) -> np.ndarray:
        """The array of member ``key``."""
        info = self._members[key]
        with self._open(key) as (stream, what):
            header = read_npy_header(stream, what)
            return read_npy_data(stream, header, info.file_size - header.offset, what)

    def _open(self, key: str) -> "_Member":
        import zipfile

        info = self._members[key]
        what = f"NPZ member {info.filename!r}"
        check_decoded(what, info.file_size, "declares")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise ReadError(f"{what} is stored uncompressed but declares {info.file_size:,} bytes in "
                            f"{info.compress_size:,}: a damaged archive")
        if info.compress_type == zipfile.ZIP_DEFLATED and \
                info.file_size > DEFLATE_RATIO * info.compress_size + DEFLATE_SLACK:
            raise ReadError(f"{what} declares {info.file_size:,} bytes from {info.compress_size:,} "
                            f"compressed, more than deflate can expand ({DEFLATE_RATIO}x): a damaged "
                            "or hostile archive")
        return _Member(self._zip, info, what)


class _Member:
    """One zip member as a context: (stream, name for messages); read errors become ReadError."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str) -> None:
        self.archive, self.info, self.what = archive, info, what
        self.stream = None

    def __enter__(self):
        try:
            self.stream = self.archive.open(self.info)
        except Exception as exc:  # encrypted, unknown compression, bad local header...
            raise ReadError(f"cannot open {self.what}: {_reason(exc)}") from None
        return self.stream, self.what

    def __exit__(self, kind, error, trace) -> Literal[False]:
        if self.stream is not None:
            self.stream.close()
        if error is None or isinstance(error, ReadError):
            return False
        if isinstance(error, Exception):  # a damaged stream: bad CRC, inflate error, EOF
            raise ReadError(f"cannot read {self.what}: {_reason(error)}") from None
        return False


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
