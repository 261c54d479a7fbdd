"""Walking a dataset's folders and saying what they hold.

:func:`walk_files` is every file under a folder (hidden entries skipped), through
:mod:`labelguard.core.storage`; :func:`describe_contents` the counts by file kind that a
report gives when an audit found nothing to audit, :func:`missing_reason` why a path gives
nothing; :func:`holds_yolo_rows` tells a text file of YOLO rows from other text files (what
discovery and the inventory say of label files no layout read).
"""

from __future__ import annotations

import os
from collections import Counter

from labelguard.core import storage
from labelguard.core.paths import display_path
from labelguard.core.text import plural
from labelguard.readers.base import IMAGE_EXTENSIONS, ReadError, read_bytes, read_head


def walk_files(root: str, skip_dirs: frozenset[str] = frozenset()) -> list[str]:
    """Every file under ``root`` (sorted, hidden entries skipped), without the ``skip_dirs``."""
    return list(storage.iter_files(root, skip_dirs))


def holds_yolo_rows(path: str) -> bool:
    """True when the first lines of a text file are YOLO rows (a class id and 4 or more
    numbers); an empty file counts when it sits in a ``labels`` folder (an image without
    objects)."""
    try:
        head = read_head(path, 4096)
    except ReadError:
        return False
    return yolo_rows_in(head, path)


def yolo_rows_in(head: bytes, path: str) -> bool:
    """:func:`holds_yolo_rows` of ``head``, the first 4 KiB of ``path``, already read."""
    lines = [line.split() for line in head.decode("utf-8", errors="replace").splitlines()[:5] if line.strip()]
    if not lines:
        return os.path.basename(os.path.dirname(storage.abspath(path))).lower() == "labels"
    for fields in lines:
        if len(fields) < 5 or not fields[0].isdigit():
            return False
        try:
            [float(f) for f in fields[1:]]
        except ValueError:
            return False
    return True



_DESCRIBE_LIMIT = 100_000
_KINDS_SHOWN = 6


def missing_reason(path: str) -> str:
    """Why ``path``, which is neither a file nor a folder to read, gives nothing: it does not
    exist, or it is a named pipe, socket or device (never opened)."""
    if storage.exists(path):
        return "not a regular file or folder (a named pipe, socket or device): not read"
    if storage.lexists(path):
        return "a symbolic link to nothing (no such file or directory at its target)"
    return "no such file or directory"


def describe_contents(root: str) -> str:
    """What ``root`` holds, by extension: "12 .jpg images, 3 .txt files and 1 .xml file", or
    why nothing is there (no such folder, an empty folder)."""
    if storage.isfile(root):
        if root.lower().endswith(".txt"):
            try:
                entries = sum(1 for line in read_bytes(root, "list").splitlines() if line.strip())
            except ReadError:
                return f"the file {display_path(root)}, which cannot be read"
            return f"the list {display_path(root)} with {plural(entries, 'entry')}"
        return f"the file {display_path(root)}"
    if not storage.isdir(root):
        return missing_reason(root)
    counts: Counter = Counter()
    for _, dirs, files in storage.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith("."):
                lower = name.lower()
                counts[".nii.gz" if lower.endswith(".nii.gz") else os.path.splitext(lower)[1]] += 1
        if sum(counts.values()) >= _DESCRIBE_LIMIT:
            break
    if not counts:
        return "an empty folder"
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = []
    for ext, count in ranked[:_KINDS_SHOWN]:
        kind = "image" if ext in IMAGE_EXTENSIONS else "file"
        parts.append(plural(count, f"{ext or 'extension-less'} {kind}"))
    rest = sum(count for _, count in ranked[_KINDS_SHOWN:])
    if rest:
        parts.append(plural(rest, "other file"))
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return ("at least " if sum(counts.values()) >= _DESCRIBE_LIMIT else "") + text
