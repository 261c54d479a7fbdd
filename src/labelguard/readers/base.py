"""What every reader shares: the read error, the one way to read a file's bytes, and byte
sniffing.

Every reader reads through :func:`read_bytes` (or :func:`read_head` before a library opens
the path): only regular files are read. A named pipe would block the audit until a writer
appears, a device (``/dev/zero``) may never end, and either can be planted in a dataset or
named by a list, an annotation or a ``data.yaml``."""

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
    """The first bytes of ``path``; ReadError with the OS reason when it cannot be opened or is
    not a regular file."""
    return read_bytes(path, "file", size)


def read_bytes(path: str, what: str = "file", size: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (the first ``size`` when given); ReadError
    with the reason when it cannot be opened, is a directory, or is not a regular file.

    The file is opened without blocking and checked on the open descriptor, so a named pipe
    is refused at once and nothing can be swapped in between the check and the read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise ReadError(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise ReadError(f"is a directory, not a {what}")
        if not stat.S_ISREG(status.st_mode):
            raise ReadError(f"not a regular file (a named pipe, socket or device), not read as a {what}")
        wanted = status.st_size + 1 if size is None else size
        chunks = []
        while wanted > 0:
            chunk = os.read(fd, wanted if size is not None else max(wanted, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            if size is not None:
                wanted -= len(chunk)
    except IsADirectoryError:
        raise ReadError(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def extension(path: str) -> str:
    """The lower-case extension, ``.nii.gz`` and ``.npy.h5`` counted as their last part."""
    return os.path.splitext(path)[1].lower()


def read_text_bytes(path: str, what: str = "text file") -> bytes:
    """The bytes of a text file (list, table); ReadError when unreadable or binary."""
    data = read_bytes(path, what)
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
    """The UTF-8 text of ``path`` (a BOM dropped, line ends made ``\\n`` as text mode makes
    them); ReadError with the reason otherwise."""
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


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
