"""What a path is before anything is read: a URL of object storage or a local path, and the
arithmetic of both (normalised, made absolute). Pure functions of the text, below every
module that reads, lists or judges paths (:mod:`labelguard.core.paths`,
:mod:`labelguard.core.storage`)."""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def url_scheme(path: Any) -> str | None:
    """The scheme of a URL (``s3`` for ``s3://bucket/key``), else None."""
    if type(path) is not str or "://" not in path:
        return None
    match = _URL.match(path)
    return match.group(1).lower() if match else None


def local_path(path: str) -> str:
    """``path`` with a ``file://`` URL turned into the local path it names (read as any
    local path: links, inside-root and fix as for a path); any other path unchanged."""
    if url_scheme(path) == "file":
        return path[len("file://"):] or "/"
    return path


def in_object_storage(path: Any) -> bool:
    """True for a URL of object storage (``s3://``, ``gs://``...), which is read through
    fsspec; a ``file://`` URL is a local path, and so is any path without a scheme."""
    return url_scheme(path) not in (None, "file")


def normpath(path: str) -> str:
    """:func:`os.path.normpath`, and for a URL the same on the part after the scheme, which
    ``..`` never leaves (``s3://b/../x`` is ``s3://x``: another bucket, which is not granted)."""
    scheme = url_scheme(path)
    if scheme is None:
        return os.path.normpath(path)
    rest = path[len(scheme) + 3:]
    return f"{scheme}://{posixpath.normpath('/' + rest).lstrip('/')}"


def abspath(path: str) -> str:
    return normpath(path) if url_scheme(path) else os.path.abspath(path)
