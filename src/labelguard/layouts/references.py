"""Names of image files written inside an annotation file that names many of them (a COCO
file's ``file_name``s, a table's path column), resolved before the rules judge them.

:func:`resolve_names` is the one policy for such names: a plain relative name is looked up
under the image folders with one directory listing per folder (the list resolution's
:class:`~labelguard.layouts.lists.DirectoryListings`: a COCO file names up to hundreds of
thousands of images); a name written without an extension is found with any image extension;
a name that can leave its folder (an absolute path, a ``..`` part) is resolved against the
first folder and must stay inside the dataset root, by the one inside-root test of
:mod:`labelguard.core.paths`.
"""

from __future__ import annotations

import os
from typing import Sequence

from labelguard.core import storage
from labelguard.core.cache import note_path
from labelguard.core.paths import inside_root
from labelguard.layouts.lists import DirectoryListings
from labelguard.readers.base import IMAGE_EXTENSIONS

def may_leave(name: str) -> bool:
    """An absolute path, or one with a '..' part: the only names that can lead out of a folder."""
    return storage.isabs(name) or name.startswith("\\") or ".." in name.replace("\\", "/").split("/")


def resolve_names(names: Sequence[str], bases: tuple[str, ...], root: str,
                  found: list[tuple[int, str]] | None = None) -> tuple[list[int], list[int]]:
    """(missing, escaping): the indices of ``names`` whose file does not exist under ``bases``,
    and of those that lead outside ``root`` (and outside the first folder, which may be an
    image folder given elsewhere). Empty names are skipped. ``found`` (when given) gets the
    (index, path) of each name whose file exists."""
    missing: list[int] = []
    escaping: list[int] = []
    listings = DirectoryListings()
    for index, name in enumerate(names):
        if not name:
            continue
        if may_leave(name):
            target = storage.normpath(name if storage.isabs(name) else os.path.join(bases[0], name))
            if not (inside_root(target, root) or inside_root(target, bases[0])):
                escaping.append(index)
            else:
                note_path(target)
                if not storage.isfile(target):
                    missing.append(index)
                elif found is not None:
                    found.append((index, target))
        else:
            path = _found(name, bases, listings)
            if path is None:
                missing.append(index)
            elif found is not None:
                found.append((index, path))
    return missing, escaping


# Tried after a name written without an extension: each image extension, as exported in
# lower and upper case ("x.JPG" from cameras).
NAMELESS_TRIES = tuple(sorted(IMAGE_EXTENSIONS)) + tuple(sorted(ext.upper() for ext in IMAGE_EXTENSIONS))


def _found(name: str, bases: tuple[str, ...], listings: DirectoryListings) -> str | None:
    """The file the plain relative ``name`` is under one of ``bases`` (written without an
    extension: with one of the image extensions), or None."""
    extensions = () if os.path.splitext(name)[1] else NAMELESS_TRIES
    for base in bases:
        path = listings.holds(storage.normpath(os.path.join(base, name)), extensions)
        if path is not None:
            return path
    return None
