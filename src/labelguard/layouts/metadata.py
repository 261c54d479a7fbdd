"""A dataset's own metadata files (class lists, data.yaml, obj.data, colour maps) and the
links that lead out of the dataset: what may be read, and the findings when it may not.

:func:`read_metadata` reads a metadata file with a layout's reader: LG001 for one that
cannot be read, LG005 for one that is a link out of the dataset root
(:func:`linked_outside`); :func:`metadata_findings` is LG001 for what is wrong inside one
that could be read. A metadata file found by convention (a class list, a colour map, a
dataset.json) in the dataset or one of its role folders must lie inside the layout's root
once links are resolved, never merely inside its own folder, which may itself be a link.
Below all of this, no link in the data is followed outside what the audit was given
(:mod:`labelguard.core.paths`); :func:`refused_folder_findings` reports the folders
discovery did not list for that reason.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence, TypeVar

from labelguard.core import storage
from labelguard.rules._unread import linked_out, unreadable
from labelguard.core.paths import display_path, inside_root, resolves_inside, take_refused
from labelguard.core.findings import Finding
from labelguard.readers.base import ReadError

T = TypeVar("T")


def refused_folder_findings(under: str | None = None) -> list[Finding]:
    """LG005 for each folder discovery did not look into or walk because it leads outside the
    data the audit was given through a link (:func:`labelguard.core.paths.listing_refused`);
    with ``under``, only those inside that folder."""
    return [linked_out(display_path(refused.path), refused.describe("its files were not listed or read"))
            for refused in take_refused(under)]


def linked_outside(path: str, root: str, what: str = "") -> list[Finding]:
    """LG005 when the metadata file ``path`` is a link (or lies in a linked folder) that
    resolves outside the dataset ``root``: such a file is not read, since its content would
    come from outside the dataset into the report. [] otherwise.

    A file inside the root as written is judged against the root, never against its own
    folder, which may itself be a link out (``masks -> ../private`` would make
    ``private/classes.txt`` lie "in its folder"). A file a layout looks for above the root (a
    class list beside the dataset folder) is judged against that folder, an ancestor of
    the data."""
    folder = root if inside_root(path, root) else os.path.dirname(storage.abspath(path))
    if resolves_inside(path, folder):
        return []
    return [linked_out(
        display_path(path), f"{what + ': ' if what else ''}a link to {display_path(os.path.realpath(path))}, "
        f"outside the dataset root {display_path(folder)}: not read")]


def read_metadata(path: str, reader: Callable[[str], T], root: str, what: str = "") -> tuple[T | None, list[Finding]]:
    """A dataset's metadata file (a class list, a data.yaml, an obj.data) read by ``reader``;
    LG001 when it cannot be read, LG005 when it is a link that leads outside the dataset
    ``root`` (:func:`linked_outside`), and None."""
    outside = linked_outside(path, root, what)
    if outside:
        return None, outside
    try:
        return reader(path), []
    except ReadError as exc:
        return None, [unreadable(display_path(path), f"{what}: {exc}" if what else str(exc))]


def metadata_findings(path: str, problems: Sequence[str], hint: str = "") -> list[Finding]:
    """LG001 for each thing wrong in a metadata file that could be read (a key of the wrong
    type, a line that is no ``key = value``)."""
    return [unreadable(display_path(path), problem, hint=hint) for problem in problems]
