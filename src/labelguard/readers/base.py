"""What every reader shares: the read error and byte sniffing."""

from __future__ import annotations

import os
import stat


class ReadError(Exception):
    """A file cannot be read, decoded or parsed; the message says why, for an LG001 finding."""


MAGIC = (
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
)

EXTENSION_KINDS = {
    ".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".tif": "tiff", ".tiff": "tiff",
    ".bmp": "bmp", ".npy": "npy", ".npz": "zip", ".h5": "hdf5", ".hdf5": "hdf5",
    ".nii": "nifti", ".gz": "gzip", ".gif": "gif", ".webp": "riff",
}


def sniff(head: bytes) -> str | None:
    """The container format that ``head`` (the first bytes of a file) starts with."""
    for magic, kind in MAGIC:
        if head.startswith(magic):
            return kind
    if len(head) >= 348 and head[344:348] in (b"n+1\x00", b"ni1\x00"):
        return "nifti"
    return None


def read_head(path: str, size: int = 352) -> bytes:
    """The first bytes of ``path``; ReadError with the OS reason when it cannot be opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        # Opening a named pipe blocks until a writer appears; a device may never end.
        raise ReadError("not a regular file (a named pipe, socket or device)")
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except IsADirectoryError:
        raise ReadError("is a directory, not a file") from None
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from None


def extension(path: str) -> str:
    """The lower-case extension, ``.nii.gz`` and ``.npy.h5`` counted as their last part."""
    return os.path.splitext(path)[1].lower()


def read_text_bytes(path: str, what: str = "text file") -> bytes:
    """The bytes of a text file (list, table); ReadError when unreadable or binary."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except IsADirectoryError:
        raise ReadError(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from None
    if b"\x00" in data[:4096]:
        raise ReadError(f"binary content, not a {what}")
    return data


def decode_text(data: bytes) -> str:
    """UTF-8, with Latin-1 as the fallback for lists and tables written by old tools."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (a BOM dropped); ReadError with the reason otherwise."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read()
    except IsADirectoryError:
        raise ReadError("is a directory, not a file") from None
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ReadError("not UTF-8 text") from None


# Class-name files a dataset keeps beside its data, in the order they are looked for in one
# folder (labelme2voc writes class_names.txt into its output folder).
CLASS_NAME_FILES = ("labels.txt", "classes.txt", "class_names.txt")


def read_class_names(path: str) -> list[str]:
    """Class names from labels.txt / classes.txt / class_names.txt / obj.names (one per line, blank lines
    skipped) or a Datumaro/CVAT ``labelmap.txt`` (``name:r,g,b:parts:actions``, ``#``
    comments); ReadError when unreadable."""
    labelmap = os.path.basename(path).lower() == "labelmap.txt"
    names = []
    for line in read_text(path).splitlines():
        text = line.strip()
        if not text or (labelmap and text.startswith("#")):
            continue
        names.append(text.split(":", 1)[0].strip() if labelmap else text)
    return names
