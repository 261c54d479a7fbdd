"""Dropping files that do not belong to a dataset: ``labelguard fix drop``.

A foreign annotation file (a VOC XML copied in from another dataset, whose class names the spec
does not know: LG101, a ``KeyError`` or a device-side assert in training) goes together with the
lines of the dataset's list files that name it, so that no loader asks for it any more: the lists
its datasets read, every list under VOC's ``ImageSets/`` (split, per-class, Segmentation, Action
and Layout lists) and the lists given. A line names a dropped file when one of its fields is the
file's path (relative to the dataset root or to the list, with or without its extension) or its
bare id (``2008_000001``, the stem a VOC or mmsegmentation list names a sample by). Each list
keeps every other byte (line endings, a BOM, spaces).

Nothing is deleted for good: the file's bytes go into the run's backups before it is unlinked
(:meth:`labelguard.fix._journal.Run.remove`), and each list is rewritten through the engine, so
``labelguard fix undo`` restores the file and every list byte for byte. Only files inside the
dataset root are touched once links are resolved (:func:`labelguard.fix._engine.in_place_refusal`,
the one inside-root policy of every fix). It is all or nothing: a file that cannot be removed, or a
list that names one and cannot be rewritten (a link, read-only, not UTF-8), stops the whole drop
while planning, so no list is left naming a file that is gone; a list that changes between
planning and writing holds the files back (the engine's companions).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from labelguard.core import storage
from labelguard.core.paths import display_path, resolves_inside
from labelguard.core.text import plural, shorten
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, FileChange, FixResult
from labelguard.fix._engine import (
    Edit, apply_edits, bytes_edit, data_root, file_state, in_place_refusal, preview_edits, refuse_crashed,
)
from labelguard.fix._journal import STATE_DIR, FixError, Run, refuse_object_storage
from labelguard.layouts.base import AuditOptions, discover_datasets
from labelguard.layouts.pairing import strip_extension
from labelguard.readers.base import ReadError, read_bytes

# VOC's folder of id lists, searched under each dataset root.
IMAGE_SETS = "ImageSets"
LIST_EXTENSION = ".txt"
UTF8_BOM = b"\xef\xbb\xbf"


def drop(
    files: "str | os.PathLike | Sequence[str | os.PathLike]",
    *,
    root: "str | os.PathLike | None" = None,
    lists: "Sequence[str | os.PathLike] | None" = None,
    apply: bool = False,
    force: bool = False,
) -> FixResult:
    """Remove ``files`` from their dataset, with the lines of its list files that name them.

    Args:
        files: the files to remove (a foreign VOC XML in ``Annotations/``...).
        root: the dataset root: only what lies inside it (links resolved) is touched, its lists
            are searched and the run's journal goes there (default: the folder holding the
            folders of ``files``, a VOC folder for ``Annotations/x.xml``).
        lists: more list files to take the lines from, besides the lists the datasets under
            ``root`` read and VOC's ``ImageSets/`` lists.
        apply: remove and rewrite (default: a dry run that shows what would go).
        force: also remove read-only files and files with other hard links, and rewrite such lists.

    Returns:
        A :class:`FixResult` with one change per file removed and per list rewritten.

    Raises:
        FixError: no files, a file that does not exist or is a folder, a root that does not hold
            them, a path in object storage, discovery of the data failing.
    """
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    paths = [os.path.abspath(storage.local_path(os.fspath(f))) for f in files]
    given_lists = [os.path.abspath(storage.local_path(os.fspath(p))) for p in lists or ()]
    if not paths:
        raise FixError("no files given to drop")
    refuse_object_storage([*paths, *given_lists, *([root] if root is not None else [])])
    for path in paths:
        if not os.path.lexists(path):
            raise FixError(f"{path}: no such file")
        if os.path.isdir(path) and not os.path.islink(path):
            raise FixError(f"{path} is a folder; fix drop removes files (name the files in it)")
    base = os.path.abspath(os.fspath(root)) if root is not None else data_root(
        [os.path.dirname(os.path.dirname(p)) for p in paths])
    if not os.path.isdir(base):
        raise FixError(f"{base}: the dataset root is not a folder")
    result = FixResult("drop", apply)
    removals = [_plan_removal(path, base, force) for path in dict.fromkeys(paths)]
    refused = [r for r in removals if r.edit.change.status == REFUSED]
    if refused:
        # All or nothing: the files named are dropped together, or the user drops the others alone.
        for removal in removals:
            if removal not in refused:
                removal.edit.change.status = SKIPPED
                removal.edit.change.summary = (f"not dropped: {display_path(refused[0].path)} is refused; drop the "
                                               "other files on their own")
        result.changes.extend(r.edit.change for r in removals)
        return result
    dropped = [r.path for r in removals]
    edits: list[Edit] = []
    for list_path, scope in _lists_of(base, given_lists, set(paths), result.notes):
        edit = _plan_list(list_path, scope, dropped, base, force)
        if edit is not None:
            edits.append(edit)
    blocked = [edit for edit in edits if edit.change.status == REFUSED]
    if blocked:
        # A list that cannot be rewritten would go on naming a file that is gone: nothing is done.
        held = f"{blocked[0].change.path} cannot be rewritten; fix that list, then drop the files again"
        for edit in edits:
            if edit not in blocked:
                edit.change.status, edit.change.summary = SKIPPED, f"not rewritten: {held}"
        for removal in removals:
            removal.edit.change.status, removal.edit.change.summary = SKIPPED, f"not dropped: {held}"
        result.changes.extend([*(edit.change for edit in edits), *(r.edit.change for r in removals)])
        return result
    for removal in removals:
        named = [line for edit in edits for line in edit.change.details.get("removed", ())
                 if line["names"] == display_path(removal.path)]
        lists_naming = shorten(sorted({line["list"] for line in named}), 4)
        removal.edit.change.summary = (
            f"removed from the dataset ({plural(len(named), 'list line')} naming it removed from {lists_naming}"
            if named else "removed from the dataset (no list names it")
        removal.edit.change.summary += "); its bytes go into the run's backup: `labelguard fix undo` restores it"
        removal.edit.change.details["list_lines"] = len(named)
        edits.append(removal.edit)
    result.changes.extend(edit.change for edit in edits)
    if apply:
        apply_edits(result, edits, base, "fix drop " + " ".join(os.path.relpath(p, base) for p in dropped))
    else:
        preview_edits(result, edits)
    for removal in removals:
        if removal.edit.change.status == SKIPPED:  # held back: a list changed since it was planned
            removal.edit.change.summary = ("not dropped: a list that names it could not be rewritten (see its line); "
                                           "run the drop again")
    return result


@dataclass
class _Removal:
    path: str
    edit: Edit


def _plan_removal(path: str, root: str, force: bool) -> _Removal:
    shown = display_path(path)
    refusal = in_place_refusal(path, root, force)
    own_folder = os.path.relpath(os.path.realpath(path), os.path.realpath(root)).split(os.sep)[0] == STATE_DIR
    if refusal is None and own_folder:
        refusal = f"in labelguard's own folder {STATE_DIR}; fix drop removes files of the data only"
    if refusal is not None:
        return _Removal(path, Edit(FileChange(shown, REFUSED, f"not dropped: {refusal}", shown), path))

    def remove(run: Run) -> None:
        run.remove(path)

    # A companion: written only when no list edit before it was refused.
    return _Removal(path, Edit(FileChange(shown, PLANNED, "", shown), path, companion=True, perform=remove,
                               source=path, state=file_state(path)))


def _lists_of(root: str, given: list[str], dropped: set[str], notes: list[str]) -> list[tuple[str, str]]:
    """(list file, the dataset folder it belongs to) for every list to search: those the datasets
    under ``root`` read, the ``.txt`` files under each dataset's ``ImageSets/``, and ``given``
    (of ``root``); never a file being dropped."""
    found: list[tuple[str, str]] = []
    discoveries = discover_datasets(root, AuditOptions())
    refuse_crashed(discoveries)
    for discovery in discoveries:
        scope = os.path.abspath(discovery.root if os.path.isdir(discovery.root) else os.path.dirname(discovery.root))
        found.extend((os.path.abspath(p), scope) for p in discovery.lists)
        image_sets = os.path.join(scope, IMAGE_SETS)
        if os.path.isdir(image_sets) and not os.path.islink(image_sets):
            found.extend((os.path.abspath(p), scope) for p in storage.iter_files(image_sets)
                         if p.lower().endswith(LIST_EXTENSION))
    found.extend((path, root) for path in given)
    lists: dict[str, str] = {}
    for path, scope in found:
        if path in dropped or path in lists:
            continue
        if not resolves_inside(path, root):
            notes.append(f"{display_path(path)} lies outside the dataset root {display_path(root)}: not searched")
            continue
        lists[path] = scope
    return list(lists.items())


def _plan_list(path: str, scope: str, dropped: list[str], root: str, force: bool) -> Edit | None:
    """The edit that takes the lines naming ``dropped`` out of the list ``path`` of the dataset
    folder ``scope`` (every other byte kept), a refusal when it cannot be read or rewritten, or
    None when no line names them."""
    shown = display_path(path)
    state = file_state(path)
    try:
        original = read_bytes(path, "text list")
    except ReadError as exc:
        return Edit(FileChange(shown, REFUSED, f"not searched: {exc}; the files stay until it can be", shown), path)
    pieces = original.split(b"\n")
    lines = [piece + b"\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    removed: list[tuple[int, bytes, str]] = []
    kept: list[bytes] = []
    for number, raw in enumerate(lines, 1):
        try:
            named = _named(raw, number, path, scope, dropped, root)
        except UnicodeDecodeError:
            return Edit(FileChange(
                shown, REFUSED, f"not rewritten: line {number} is not UTF-8, so the lines naming the dropped files "
                "cannot be told in it; re-save it as UTF-8 first (the files stay until then)", shown), path)
        if named is None:
            kept.append(raw)
        else:
            removed.append((number, raw, named))
    if not removed:
        return None
    data = b"".join(kept)
    if original.startswith(UTF8_BOM) and not data.startswith(UTF8_BOM):
        data = UTF8_BOM + data  # the BOM of a removed first line stays the list's
    details = {"removed": [{"list": shown, "line": number, "text": _text(raw), "names": display_path(name)}
                           for number, raw, name in removed]}
    summary = f"{plural(len(removed), 'line')} naming the dropped files removed: " + shorten(
        removed, 4, lambda item: f"line {item[0]} {_text(item[1])!r} ({display_path(item[2])})")
    refusal = in_place_refusal(path, root, force)
    if refusal is not None:
        return Edit(FileChange(shown, REFUSED, f"not rewritten: {refusal}; the files stay until it can be",
                               shown, details), path)

    def verify(temp: str) -> str | None:
        return None if read_bytes(temp, "text list") == data else "the list does not read back as written"

    return bytes_edit(FileChange(shown, PLANNED, summary, shown, details), path, data, verify, source=path,
                      state=state)


def _text(raw: bytes) -> str:
    return raw.removeprefix(UTF8_BOM).decode("utf-8", "replace").strip()


def _named(raw: bytes, number: int, list_path: str, scope: str, dropped: list[str], root: str) -> str | None:
    """The dropped file that line ``number`` (``raw``, its line ending included) of a list names,
    or None. UnicodeDecodeError for a line that is not UTF-8."""
    text = (raw.removeprefix(UTF8_BOM) if number == 1 else raw).decode("utf-8").strip()
    if not text or text.startswith("#"):
        return None
    folders = tuple(dict.fromkeys([scope, root, os.path.dirname(list_path)]))
    for name in dict.fromkeys([text, *text.split()]):
        for path in dropped:
            if _names(name, path, folders, by_id=resolves_inside(path, scope)):
                return path
    return None


def _names(name: str, path: str, folders: tuple[str, ...], by_id: bool) -> bool:
    """True when the list entry ``name`` names the file ``path``: its path from one of
    ``folders`` (or absolute), with or without the extension, or, when ``by_id`` (the file is of
    the list's own dataset), its bare id: a name without folders that is the file's name or stem."""
    basename = os.path.basename(path)
    if by_id and "/" not in name and "\\" not in name and name in (basename, strip_extension(basename)):
        return True
    relative = name if os.path.isabs(name) else name.replace("\\", "/")
    without_extension = strip_extension(relative) == relative
    for folder in folders:
        candidate = os.path.normpath(os.path.join(folder, relative))
        if candidate == path or (without_extension and candidate == strip_extension(path)):
            return True
    return False
