"""Names of image files written inside an annotation file that names many of them (a COCO
file's ``file_name``s, a table's path column), resolved before the rules judge them.

:func:`resolve_names` is the one policy for such names: a plain relative name is looked up
under the image folders with one directory listing per folder (:class:`FileLookup`: a COCO
file names up to hundreds of thousands of images); a name that can leave its folder (an
absolute path, a ``..`` part) is resolved against the first folder and must stay inside the
dataset root, by the one inside-root test of :mod:`labelguard.layouts.pairing`.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from labelguard.layouts.pairing import inside_root
from labelguard.readers.tabular import IMAGE_EXTENSIONS

CASE_FOLDING = sys.platform in ("darwin", "win32", "cygwin")


class FileLookup:
    """Answers "does this file exist under one of these folders?" from one directory listing
    per folder instead of one stat per file. Where file systems usually fold case (macOS,
    Windows), a name missing from a listing is confirmed with a real stat, since "A.JPG"
    opens "a.jpg" there."""

    def __init__(self, bases: tuple[str, ...]) -> None:
        self.bases = bases
        self.preferred = 0
        self.listings: dict[str, frozenset[str]] = {}

    def _listing(self, directory: str) -> frozenset[str]:
        entries = self.listings.get(directory)
        if entries is None:
            try:
                entries = frozenset(os.listdir(directory))
            except OSError:
                entries = frozenset()
            self.listings[directory] = entries
        return entries

    def _in(self, base: str, name: str, any_extension: bool) -> bool:
        head, tail = os.path.split(name)
        entries = self._listing(os.path.join(base, head) if head else base)
        if tail in entries:
            return True
        return any_extension and any(tail + ext in entries for ext in IMAGE_EXTENSIONS)

    def exists(self, name: str) -> bool:
        """True when ``name`` (relative) is a file under a base; without an extension, with
        any image extension."""
        any_extension = not os.path.splitext(name)[1]
        if self._in(self.bases[self.preferred], name, any_extension):
            return True
        for k, base in enumerate(self.bases):
            if k != self.preferred and self._in(base, name, any_extension):
                self.preferred = k
                return True
        if not CASE_FOLDING:
            return False
        candidates = [os.path.join(b, name) for b in self.bases]
        if any_extension:
            candidates += [c + ext for c in candidates for ext in IMAGE_EXTENSIONS]
        return any(os.path.isfile(c) for c in candidates)


def may_leave(name: str) -> bool:
    """An absolute path, or one with a '..' part: the only names that can lead out of a folder."""
    return os.path.isabs(name) or name.startswith("\\") or ".." in name.replace("\\", "/").split("/")


def resolve_names(names: Sequence[str], bases: tuple[str, ...], root: str) -> tuple[list[int], list[int]]:
    """(missing, escaping): the indices of ``names`` whose file does not exist under ``bases``,
    and of those that lead outside ``root`` (and outside the first folder, which may be an
    image folder given elsewhere). Empty names are skipped."""
    missing: list[int] = []
    escaping: list[int] = []
    lookup = FileLookup(bases)
    for index, name in enumerate(names):
        if not name:
            continue
        if may_leave(name):
            target = os.path.normpath(name if os.path.isabs(name) else os.path.join(bases[0], name))
            if not (inside_root(target, root) or inside_root(target, bases[0])):
                escaping.append(index)
            elif not os.path.isfile(target):
                missing.append(index)
        elif not lookup.exists(name):
            missing.append(index)
    return missing, escaping
