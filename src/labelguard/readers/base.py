"""What every reader shares: the read error, the one way to open and read a file, the
checks of declared sizes against the read limits, and byte sniffing.

Every reader opens files through :func:`open_regular` (:func:`read_bytes` reads one whole;
:func:`read_head` checks one before a library opens the path): only regular files are read.
A named pipe would block the audit until a writer appears, a device (``/dev/zero``) may
never end, and either can be planted in a dataset or named by a list, an annotation or a
``data.yaml``. A file that leads outside the data the audit was given through a symbolic
link is not opened at all (:class:`LinkedOutside`; :func:`labelguard.core.paths.open_within`).

A URL below a location the audit was given (:mod:`labelguard.core.storage`) is read from
object storage: fetched whole, after its size is checked against the ``max_file_bytes``
limit, and handed to the reader as an in-memory file; readers never need a local path.

Sizes a file declares (an array's shape, a member's length) are checked with
:func:`check_array`, :func:`check_decoded` and :func:`check_elements` against
:mod:`labelguard.core.limits` before anything of that size is allocated."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import stat
from types import ModuleType
from typing import Any, BinaryIO, Iterable, Iterator

from labelguard._optional import extra_of, require
from labelguard.core import storage
from labelguard.core.cache import note_uncacheable
from labelguard.core.limits import RAISE_WITH, current_limits
from labelguard.core.paths import LeadsOutside, open_within
from labelguard.core.text import byte_size, with_article
from labelguard.errors import MissingDependency


# Problems with rows or samples kept per file, with their places; the count is always whole.
PROBLEMS_KEPT = 100


class ProblemLog:
    """What of a file's rows or samples could not be read: ``problems``, the first
    :data:`PROBLEMS_KEPT` as (place, what is wrong), and ``problem_count``, how many in all
    (the fields are the dataclass's that takes this in)."""

    problems: list[tuple[int, str]]
    problem_count: int

    def problem(self, place: int, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append((place, text))


class ReadError(Exception):
    """A file cannot be read, decoded or parsed; the message says why, for an LG001 finding."""


class LinkedOutside(ReadError):
    """The file is a symbolic link, or lies in a linked folder, that leads outside the data the
    audit was given (:mod:`labelguard.core.paths`): it was not opened (LG005)."""


class NeedsExtra(ReadError):
    """Reading the file needs an optional extra that cannot be imported where it is read: the
    file was not read (LG001 naming ``extra``), and the other files are audited as usual."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


def require_to_read(module: str, purpose: str) -> ModuleType:
    """``module`` imported, for a reader to ``purpose`` ("read NIfTI masks"); else
    :class:`NeedsExtra`. It is raised where the file is read (in the worker that reads it), so
    the file is an LG001 finding of its own, not the end of the audit; and the task's result is
    not cached, so the first audit after the extra is installed reads the file."""
    try:
        return require(module, purpose)
    except MissingDependency as exc:
        note_uncacheable(f"{module} cannot be imported")
        raise NeedsExtra(f"not read: {exc}", extra_of(module)) from None


# How deep JSON, YAML and XML documents may nest. Label files nest a handful of levels (a
# COCO annotation's polygon is 4, a VOC part 4); parsers and code that walk a document
# recursively fail far deeper, with a RecursionError instead of a finding.
MAX_NESTING = 100


# (magic bytes, container) of every container :func:`sniff` knows; a container a reader adds
# registers its own (:func:`register_container`).
MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"II+\x00", "tiff"),
    (b"MM\x00+", "tiff"),
    (b"BM", "bmp"),
    (b"\x93NUMPY", "npy"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"\x1f\x8b", "gzip"),
    (b"GIF8", "gif"),
    (b"RIFF", "riff"),
]

# Extensions of image files, as the tools that read datasets accept them (Ultralytics' list,
# a superset of VOC's and most tools', with the netpbm files torchvision reads), lower case.
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".gif", ".dng", ".mpo",
                              ".pfm", ".heic", ".ppm", ".pgm"})

# extension -> the container files so named hold (what a name declares).
EXTENSION_KINDS: dict[str, str] = {
    ".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".tif": "tiff", ".tiff": "tiff",
    ".bmp": "bmp", ".npy": "npy", ".npz": "zip", ".h5": "hdf5", ".hdf5": "hdf5",
    ".nii": "nifti", ".gz": "gzip", ".gif": "gif", ".webp": "riff",
}


def register_container(kind: str, *, magic: Iterable[bytes] = (), extensions: Iterable[str] = ()) -> None:
    """Make the container ``kind`` known: :func:`sniff` tells it by ``magic`` (the bytes its
    files start with) and a name ending in one of ``extensions`` (lower case, with the dot)
    declares it."""
    for start in magic:
        if (start, kind) not in MAGIC:
            MAGIC.append((start, kind))
    for extension in extensions:
        EXTENSION_KINDS[extension] = kind


def sniff(head: bytes) -> str | None:
    """The container format that ``head`` (the first bytes of a file) starts with."""
    for magic, kind in MAGIC:
        if head.startswith(magic):
            return kind
    if len(head) >= 348 and head[344:348] in (b"n+1\x00", b"ni1\x00"):
        return "nifti"
    if len(head) >= 540 and head[4:8] in (b"n+2\x00", b"ni2\x00"):
        return "nifti"
    return None


def read_head(path: str, size: int = 352) -> bytes:
    """The first bytes of ``path``; ReadError with the OS reason when it cannot be opened or is
    not a regular file."""
    return read_bytes(path, "file", size)


def open_regular(path: str, what: str = "file") -> BinaryIO:
    """``path`` opened for binary reading; ReadError with the reason when it cannot be opened,
    is a directory, or is not a regular file. An object of object storage is fetched whole
    (refused unread when over the ``max_file_bytes`` limit) into an in-memory file."""
    if storage.url_scheme(path):
        return io.BytesIO(_read_remote(path, what))
    fd, _ = _open_regular_fd(path, what)
    return os.fdopen(fd, "rb")


def open_stream(path: str, what: str = "file") -> BinaryIO:
    """``path`` opened for reading as it is streamed: a local file as :func:`open_regular`
    opens it; an object of object storage as a seekable file fetched in ranges as it is read
    (never whole, so no ``max_file_bytes`` bound: the reader holds a part at a time)."""
    if not storage.url_scheme(path):
        return open_regular(path, what)
    with _from_object_storage(path, what):
        # Buffered as a local file is: readline(size) and readinto, over fsspec's ranged reads.
        return io.BufferedReader(storage.open_object(path))  # type: ignore[type-var]  # fsspec's file has readinto


class ThisFileOnly(io.BufferedReader):
    """A raw file read without its descriptor showing. tifffile reads the other files that an
    OME-TIFF's metadata, a Micro-Manager stack or an NDTiff index name (found by name beside
    a file it is given open) only for a file that has a descriptor: given this, it reads the
    bytes of this file and nothing else."""

    def fileno(self) -> int:
        raise io.UnsupportedOperation("read as this file alone")


def stream_size(handle: BinaryIO) -> int:
    """The size in bytes of an open file: its descriptor's, or an in-memory file's length."""
    try:
        return os.fstat(handle.fileno()).st_size
    except (AttributeError, io.UnsupportedOperation):
        position = handle.tell()
        end = handle.seek(0, io.SEEK_END)
        handle.seek(position)
        return end


def _read_remote(url: str, what: str, size: int | None = None) -> bytes:
    """The bytes of an object (the first ``size``), as :func:`read_bytes` reads a file."""
    with _from_object_storage(url, what):
        return storage.read_object(url, current_limits().max_file_bytes, size)


@contextlib.contextmanager
def _from_object_storage(url: str, what: str) -> Iterator[None]:
    """A read of the object at ``url``: refused for a URL outside the locations the audit was
    given, and the store's errors said as a :class:`ReadError` (as a file's are)."""
    if not storage.is_granted_url(url):
        raise ReadError(f"cannot open: {url} is on object storage outside the locations this audit was given "
                        "(the buckets of its PATH, --images, --masks and --list): not read")
    try:
        yield
    except storage.ObjectTooLarge as exc:
        check_decoded(f"the {what}", exc.size, "is")
        raise  # not reached: the size is over the limit
    except IsADirectoryError:
        raise ReadError(f"is a directory, not {with_article(what)}") from None
    except FileNotFoundError:
        raise ReadError("cannot open: No such file or directory (no object at this URL)") from None
    except storage.StorageError as exc:
        raise ReadError(f"cannot read from object storage: {exc}") from None


def _open_regular_fd(path: str, what: str) -> tuple[int, int]:
    """(descriptor, size) of the regular file at ``path``, opened for reading.

    The file is opened without blocking and checked on the open descriptor, so a named pipe
    is refused at once and nothing can be swapped in between the check and the read."""
    try:
        fd = open_within(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except LeadsOutside as exc:
        raise LinkedOutside(exc.describe()) from None
    except IsADirectoryError:
        raise ReadError(f"is a directory, not {with_article(what)}") from None
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise ReadError(f"is a directory, not {with_article(what)}")
        if not stat.S_ISREG(status.st_mode):
            raise ReadError(f"not a regular file (a named pipe, socket or device), not read as {with_article(what)}")
    except BaseException:
        os.close(fd)
        raise
    return fd, status.st_size


def read_bytes(path: str, what: str = "file", size: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (the first ``size`` when given); ReadError
    with the reason when it cannot be opened, is not a regular file, or (read whole) is
    larger than the ``max_file_bytes`` limit."""
    if storage.url_scheme(path):
        return _read_remote(path, what, size)
    fd, length = _open_regular_fd(path, what)
    try:
        if size is None:
            check_decoded(f"the {what}", length, "is")
        wanted = length + 1 if size is None else size
        chunks = []
        while wanted > 0:
            chunk = os.read(fd, wanted if size is not None else max(wanted, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            if size is not None:
                wanted -= len(chunk)
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _over(limit: str, declared: str, allowed: str) -> ReadError:
    return ReadError(f"{declared}, over the limit of {allowed} ({limit}): if the file is real, raise it "
                     f"with {RAISE_WITH[limit]}")


def check_array(what: str, shape: tuple[int, ...], itemsize: int, dtype: object) -> int:
    """The bytes of an array of ``shape`` and ``itemsize`` that a file declares; ReadError when
    they exceed the read limits (elements: ``max_pixels``, bytes: ``max_file_bytes``).

    ``what`` names the array in the message ("the NPY header", "HDF5 dataset 'label'")."""
    elements = math.prod(shape)
    nbytes = elements * itemsize
    limits = current_limits()
    shown = f"{what} declares a {tuple(shape)} {dtype} array"
    if elements > limits.max_pixels:
        raise _over("max_pixels", f"{shown}: {elements:,} elements ({byte_size(nbytes)})",
                    f"{limits.max_pixels:,} elements per array")
    if nbytes > limits.max_file_bytes:
        raise _over("max_file_bytes", f"{shown}: {byte_size(nbytes)}", byte_size(limits.max_file_bytes))
    return nbytes


def check_decoded(what: str, nbytes: int, verb: str = "decodes to") -> None:
    """ReadError when ``what`` (a file read whole, a compressed stream once decompressed)
    ``verb`` more bytes than the ``max_file_bytes`` limit."""
    limit = current_limits().max_file_bytes
    if nbytes > limit:
        raise _over("max_file_bytes", f"{what} {verb} {byte_size(nbytes)}", byte_size(limit))


def check_elements(what: str, count: int, noun: str = "elements", verb: str = "declares") -> None:
    """ReadError when ``what`` ``verb`` more elements (the values of one array, the rows of a
    table) than the ``max_pixels`` limit: the per-element work stays bounded where the
    elements cost the file nothing (a column of nulls, lists of no values)."""
    limit = current_limits().max_pixels
    if count > limit:
        raise _over("max_pixels", f"{what} {verb} {count:,} {noun}", f"{limit:,} elements per array")


def check_holds(what: str, declared: int, holds: int) -> None:
    """ReadError when ``what`` declares ``declared`` bytes of data but the file (or member)
    holds only ``holds`` after its header: truncated, or a damaged header."""
    if declared > holds:
        raise ReadError(f"{what} declares {byte_size(declared)} of data but the file holds "
                        f"{byte_size(max(holds, 0))} after it: truncated, or a damaged header")


def extension(path: str) -> str:
    """The lower-case extension, ``.nii.gz`` and ``.npy.h5`` counted as their last part."""
    return os.path.splitext(path)[1].lower()


def read_text_bytes(path: str, what: str = "text file") -> bytes:
    """The bytes of a text file (list, table); ReadError when unreadable or binary."""
    data = read_bytes(path, what)
    if b"\x00" in data[:4096]:
        raise ReadError(f"binary content, not {with_article(what)}")
    return data


def parse_json(text: str, what: str = "JSON") -> Any:
    """The JSON value of ``text``; ReadError naming ``what`` when it is malformed or nests
    deeper than :data:`MAX_NESTING`."""
    too_deep = ReadError(f"{what} nests arrays and objects more than {MAX_NESTING} levels deep: refused, "
                         "nothing labelguard reads nests so deep")
    try:
        value = json.loads(text)
    except RecursionError:  # the C decoder stops at Python's recursion limit, far past ours
        raise too_deep from None
    except ValueError as exc:  # JSONDecodeError, or an integer of more digits than Python converts
        raise ReadError(f"invalid {what}: {exc}") from None
    if nesting_depth(value, MAX_NESTING) > MAX_NESTING:
        raise too_deep
    return value


def nesting_depth(value: Any, limit: int) -> int:
    """How deep lists and dicts nest in ``value`` (a scalar is 0, ``[]`` is 1), counted without
    recursion and only up to ``limit + 1``."""
    if not isinstance(value, (list, dict)):
        return 0
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > deepest:
            deepest = depth
            if depth > limit:
                break
        children = item.values() if isinstance(item, dict) else item
        # Only containers are kept: a tokenizer.json's vocabulary is hundreds of thousands of scalars.
        pending.extend([(child, depth + 1) for child in children if isinstance(child, (list, dict))])
    return deepest


def decode_text(data: bytes) -> str:
    """UTF-8, with Latin-1 as the fallback for lists and tables written by old tools."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (a BOM dropped, line ends made ``\\n`` as text mode makes
    them); ReadError with the reason otherwise."""
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


# The files that hold a dataset's class names, the one list of them: each format looks for
# those it reads in its own order, and every other part of labelguard asks these names.
PLAIN_NAME_FILES = ("labels.txt", "classes.txt", "class_names.txt")  # labelme, LabelImg; labelme2voc's
DARKNET_NAME_FILES = ("obj.names", "classes.names", "coco.names")  # darknet and YOLO tools
NAME_LIST_FILES = PLAIN_NAME_FILES + DARKNET_NAME_FILES  # one class name a line
LABEL_MAP_FILE = "labelmap.txt"  # Datumaro's and CVAT's VOC export: name:r,g,b:parts:actions
SYNSETS_FILE = "synsets.txt"  # ImageNet: a WordNet id and its names a line
CLASS_NAME_FILES = NAME_LIST_FILES + (LABEL_MAP_FILE,)


def read_class_names(path: str) -> list[str]:
    """Class names from labels.txt / classes.txt / class_names.txt / obj.names (one per line, blank lines
    skipped) or a Datumaro/CVAT ``labelmap.txt`` (``name:r,g,b:parts:actions``, ``#``
    comments); ReadError when unreadable."""
    labelmap = os.path.basename(path).lower() == LABEL_MAP_FILE
    names = []
    for line in read_text(path).splitlines():
        text = line.strip()
        if not text or (labelmap and text.startswith("#")):
            continue
        names.append(text.split(":", 1)[0].strip() if labelmap else text)
    return names
