"""Dropping files that do not belong to a dataset: ``labelguard fix drop``.

A foreign annotation file (a VOC XML copied in from another dataset, whose class names the spec
does not know: LG101, a ``KeyError`` or a device-side assert in training) goes together with the
lines of the dataset's list files that name it, so that no loader asks for it any more: the lists
its datasets read, every list under VOC's ``ImageSets/`` (split, per-class, Segmentation, Action
and Layout lists), the label tables they read (ImageNet's ``train.txt`` of ``1.jpg 1`` lines, a
``path,label`` CSV) and the lists given. A line of a list names a dropped file when its first
field is the file's path (relative to the dataset root or to the list, with or without its
extension) or its bare id (``2008_000001``, the stem a VOC or mmsegmentation list names a sample
by), or when another of its fields is the file's path (written with a folder or an extension:
the ``1`` of a per-class list's ``2008_000001  1`` is a flag, never an id). A row of a label table
names it when its path cell leads to the file, as the table's reader looks it up. Each list keeps
every other byte (line endings, CR-only ones included, a BOM, spaces).

Nothing is deleted for good: the file's bytes, permissions and modification time go into the
run's journal before it is unlinked (:meth:`labelguard.fix._journal.Run.remove`), and each list is
rewritten through the engine, so ``labelguard fix undo`` restores the file and every list byte for
byte. Only files inside the dataset root are read or touched once links are resolved
(:func:`labelguard.fix._engine.in_place_refusal`, the one inside-root policy of every fix). It is
all or nothing: a file that cannot be removed, a list that names one and cannot be rewritten (a
link, read-only, not UTF-8, an OpenMMLab JSON), or a list the data reads that cannot be searched
(it lies outside the root) stops the whole drop while planning, so no list is left naming a file
that is gone; a file or list reached by two paths (a linked folder) is planned once; and a list
that changes between planning and writing stops the run, whose writes are then undone.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Sequence

from labelguard.core import storage
from labelguard.core.paths import display_path, resolves_inside
from labelguard.core.text import plural, shorten
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, WRITTEN, FileChange, FixResult
from labelguard.fix._engine import (
    Edit, apply_edits, bytes_edit, data_root, file_state, in_place_refusal, preview_edits, refuse_crashed,
)
from labelguard.fix._journal import STATE_DIR, FixError, Run, refuse_object_storage, undo
from labelguard.layouts.base import AuditOptions, discover_datasets
from labelguard.layouts.pairing import strip_extension
from labelguard.layouts.tables import process_table
from labelguard.layouts.tables.data_list import read_data_list
from labelguard.layouts.tables.reader import TableLayout, read_table, table_text
from labelguard.readers.base import ReadError, read_bytes

# VOC's folder of id lists, searched under each dataset root.
IMAGE_SETS = "ImageSets"
LIST_EXTENSION = ".txt"
UTF8_BOM = b"\xef\xbb\xbf"
# How a refused list holds the files back, by the start of its summary.
NOT_SEARCHED = "not searched"


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
        root: the dataset root: only what lies inside it (links resolved) is read or touched, its
            lists are searched and the run's journal goes there (default: the folder holding the
            folders of ``files``, a VOC folder for ``Annotations/x.xml``).
        lists: more list files to take the lines from, besides the lists and label tables the
            datasets under ``root`` read and VOC's ``ImageSets/`` lists.
        apply: remove and rewrite (default: a dry run that shows what would go).
        force: also remove read-only files and files with other hard links, and rewrite such
            lists; and drop the files although a list the data reads lies outside ``root`` and
            cannot be searched (each such list is named).

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
    removals = [_plan_removal(path, base, force) for path in _one_path_each(paths, result.notes)]
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
    dropped = [_Dropped.of(r.path) for r in removals]
    searched, unsearched = _lists_of(base, given_lists, {d.real for d in dropped})
    edits: list[Edit] = [] if force else [_unsearched_refusal(path, why) for path, why in unsearched]
    for found in searched:
        edit = (_plan_list(found, dropped, base, force) if found.table is None
                else _plan_table(found, found.table, dropped, base, force))
        if edit is not None:
            edits.append(edit)
    blocked = [edit for edit in edits if edit.change.status == REFUSED]
    if blocked:
        # A list that cannot be rewritten (or searched) could go on naming a file that is gone: nothing is done.
        first = blocked[0].change
        problem = "could not be searched" if first.summary.startswith(NOT_SEARCHED) else "cannot be rewritten"
        held = f"{first.path} {problem}; fix that list, then drop the files again"
        for edit in edits:
            if edit not in blocked:
                edit.change.status, edit.change.summary = SKIPPED, f"not rewritten: {held}"
        for removal in removals:
            removal.edit.change.status, removal.edit.change.summary = SKIPPED, f"not dropped: {held}"
        result.changes.extend([*(edit.change for edit in edits), *(r.edit.change for r in removals)])
        return result
    not_searched = shorten([display_path(path) for path, _ in unsearched], 4)
    if unsearched:
        result.notes.extend(f"{display_path(path)} not searched (--force): {why}" for path, why in unsearched)
    for removal in removals:
        named = [line for edit in edits for line in edit.change.details.get("removed", ())
                 if line["names"] == display_path(removal.path)]
        lists_naming = shorten(sorted({line["list"] for line in named}), 4)
        if named:
            lines = f"{plural(len(named), 'list line')} naming it removed from {lists_naming}"
        elif unsearched:
            lines = f"no list searched names it; not searched: {not_searched}"
        else:
            lines = "no list names it"
        removal.edit.change.summary = (f"removed from the dataset ({lines}); its bytes go into the run's backup: "
                                       "`labelguard fix undo` restores it")
        removal.edit.change.details["list_lines"] = len(named)
        edits.append(removal.edit)
    result.changes.extend(edit.change for edit in edits)
    if apply:
        apply_edits(result, edits, base, "fix drop " + " ".join(os.path.relpath(p.path, base) for p in dropped))
    else:
        preview_edits(result, edits)
    for removal in removals:
        if removal.edit.change.status == SKIPPED:  # held back: a list changed since it was planned...
            removal.edit.change.summary = ("not dropped: another change of this drop was refused (see its line); "
                                           "run the drop again")
    if apply:
        _undo_a_partial_run(result, base)
    return result


def _one_path_each(paths: list[str], notes: list[str]) -> list[str]:
    """``paths`` with each file once: two paths that lead to one file through a linked folder
    (``A/x.xml`` and ``Alink/x.xml``) are one removal, planned at the first. (A file that is
    itself a link stays a path of its own, which planning refuses.)"""
    first_of: dict[str, str] = {}
    for path in paths:
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if real in first_of:
            if first_of[real] != path:
                notes.append(f"{display_path(path)} is {display_path(first_of[real])} (links resolved): dropped once")
            continue
        first_of[real] = path
    return list(first_of.values())


def _undo_a_partial_run(result: FixResult, root: str) -> None:
    """All or nothing at writing too: when a change was refused while the run wrote (a list
    changed since it was planned), what the run wrote before it is undone, so no list loses the
    lines naming a file that stays, and says so."""
    if result.ok or result.run_id is None:
        return
    try:
        undone = undo(root, result.run_id)
    except FixError as exc:
        result.notes.append(f"the lists rewritten before a refusal keep their new bytes ({exc}); "
                            f"run `labelguard fix undo {root} --run {result.run_id}`")
        return
    if undone.conflicts:
        result.notes.append(f"undoing the lists rewritten before a refusal met conflicts: {undone.conflicts[:4]}; "
                            f"run `labelguard fix undo {root} --run {result.run_id}`")
        return
    for change in result.changes:
        if change.status == WRITTEN:
            change.status = SKIPPED
            change.summary = ("written, then undone: another change of this drop was refused while writing (see its "
                              "line), so none of it stays; run the drop again")


@dataclass
class _Removal:
    path: str
    edit: Edit


@dataclass(frozen=True)
class _Dropped:
    """A file being dropped: its path as given (made absolute), with links resolved, its name."""

    path: str
    real: str
    name: str
    stem: str

    @classmethod
    def of(cls, path: str) -> "_Dropped":
        name = os.path.basename(path)
        return cls(path, os.path.realpath(path), name, strip_extension(name))

    def is_at(self, candidate: str) -> bool:
        """True when the path ``candidate`` (absolute, normalised) leads to this file."""
        return candidate == self.path or (os.path.basename(candidate) == self.name
                                          and os.path.realpath(candidate) == self.real)


@dataclass
class _List:
    """A list to search: its path, the dataset folder it belongs to and, for a label table the
    dataset reads, how the table is read (``table``: its task's options; None for a list)."""

    path: str
    scope: str
    table: dict | None = None


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


def _lists_of(root: str, given: list[str], dropped: set[str]) -> tuple[list[_List], list[tuple[str, str]]]:
    """(the lists to search, (list, why) for those that cannot be): the label tables and lists
    the datasets under ``root`` read, the ``.txt`` files under each dataset's ``ImageSets/``, and
    ``given``; each file once (links resolved; a path that is no link is preferred), never a
    file being dropped (``dropped``: their real paths). A list outside ``root`` once links are
    resolved is never read: it is one that cannot be searched."""
    found: list[_List] = []
    discoveries = discover_datasets(root, AuditOptions())
    refuse_crashed(discoveries)
    for discovery in discoveries:
        scope = os.path.abspath(discovery.root if os.path.isdir(discovery.root) else os.path.dirname(discovery.root))
        found.extend(_List(os.path.abspath(task.path), scope, dict(task.options)) for task in discovery.tasks
                     if task.processor is process_table)
        found.extend(_List(os.path.abspath(p), scope) for p in discovery.lists)
        image_sets = os.path.join(scope, IMAGE_SETS)
        if os.path.isdir(image_sets) and not os.path.islink(image_sets):
            found.extend(_List(os.path.abspath(p), scope) for p in storage.iter_files(image_sets)
                         if p.lower().endswith(LIST_EXTENSION))
    found.extend(_List(path, root) for path in given)
    lists: dict[str, _List] = {}
    unsearched: dict[str, str] = {}
    for item in found:
        real = os.path.realpath(item.path)
        if real in dropped:
            continue
        if not resolves_inside(item.path, root):
            unsearched.setdefault(item.path, f"it lies outside the dataset root {display_path(root)} once links are "
                                             f"resolved ({real}), and fix drop reads nothing outside the root")
            continue
        kept = lists.get(real)
        if kept is None or (os.path.islink(kept.path) and not os.path.islink(item.path)):
            lists[real] = item
    return list(lists.values()), list(unsearched.items())


def _unsearched_refusal(path: str, why: str) -> Edit:
    shown = display_path(path)
    return Edit(FileChange(shown, REFUSED, (
        f"{NOT_SEARCHED}: {why}; a list of the data, it may name the files, so none is dropped: give --root a "
        "folder that holds it, or pass --force to drop them without searching it"), shown), path)


def _split_lines(data: bytes) -> list[bytes]:
    """The lines of a list, each with its ending: LF, CRLF or a lone CR (old Mac tools)."""
    return data.splitlines(keepends=True)


def _plan_list(found: _List, dropped: list[_Dropped], root: str, force: bool) -> Edit | None:
    """The edit that takes the lines naming ``dropped`` out of the list ``found`` (every other
    byte kept), a refusal when it cannot be read or rewritten, or None when no line names them."""
    path = found.path
    shown = display_path(path)
    state = file_state(path)
    try:
        original = read_bytes(path, "text list")
    except ReadError as exc:
        return Edit(FileChange(shown, REFUSED, f"{NOT_SEARCHED}: {exc}; the files stay until it can be", shown), path)
    folders = tuple(dict.fromkeys([found.scope, root, os.path.dirname(path)]))
    # A bare id names only a file of the list's own dataset.
    own = {file.path: resolves_inside(file.path, found.scope) for file in dropped}
    removed: list[tuple[int, bytes, _Dropped]] = []
    for number, raw in enumerate(_split_lines(original), 1):
        try:
            named = _named(raw, number, folders, dropped, own)
        except UnicodeDecodeError:
            return Edit(FileChange(
                shown, REFUSED, f"not rewritten: line {number} is not UTF-8, so the lines naming the dropped files "
                "cannot be told in it; re-save it as UTF-8 first (the files stay until then)", shown), path)
        if named is not None:
            removed.append((number, raw, named))
    return _removing_lines(path, original, removed, root, force, state)


def _plan_table(found: _List, options: dict, dropped: list[_Dropped], root: str, force: bool) -> Edit | None:
    """:func:`_plan_list` of a label table the dataset reads (``options``: its task's): its rows
    as the table's reader reads them, a row naming a dropped file when its path cell leads to it under the table's
    image folders. A row that is not one line of its own (a quoted cell across lines) is not cut
    out; an OpenMMLab JSON naming a dropped file is refused (fix drop rewrites text lists)."""
    path = found.path
    shown = display_path(path)
    state = file_state(path)
    bases = tuple(options.get("image_dirs") or (os.path.dirname(path),))
    layout: TableLayout | None = None
    try:
        original = read_bytes(path, "label table")
        if path.lower().endswith(".json"):
            samples = read_data_list(path)
            rows: list[tuple[int, str]] = list(zip(samples.samples, samples.paths))
        else:
            table = read_table(path, options.get("path_column"), options.get("label_column"))
            layout = table.layout
            if layout.path_column is None:
                return None  # rows numbered, naming no files (MNIST-style)
            rows = list(zip(table.lines, table.paths))
    except ReadError as exc:
        return Edit(FileChange(shown, REFUSED, f"{NOT_SEARCHED}: {exc}; the files stay until it can be", shown), path)
    naming = [(place, cell, file) for place, cell in rows for file in dropped if _leads_to(cell, bases, file)]
    if not naming:
        return None
    if layout is None:
        sample, cell, file = naming[0]
        return Edit(FileChange(shown, REFUSED, (
            f"not rewritten: its data_list[{sample}] names {display_path(file.path)} ({cell!r}), and fix drop rewrites "
            "text lists only; remove those samples from it first (the files stay until then)"), shown), path)
    lines = _split_lines(original)
    removed: list[tuple[int, bytes, _Dropped]] = []
    for number, cell, file in naming:
        if number > len(lines) or _path_cell(lines[number - 1], layout) != cell:
            return Edit(FileChange(shown, REFUSED, (
                f"not rewritten: the row naming {display_path(file.path)} at line {number} is not that line alone "
                "(a quoted cell spanning lines, or line breaks the reader counts otherwise); remove it by hand "
                "(the files stay until then)"), shown), path)
        removed.append((number, lines[number - 1], file))
    return _removing_lines(path, original, removed, root, force, state)


def _removing_lines(path: str, original: bytes, removed: list[tuple[int, bytes, _Dropped]], root: str,
                    force: bool, state) -> Edit | None:
    """The edit of the list ``path`` without the ``removed`` lines (number, bytes, the file
    each names), every other byte kept; a refusal when the list cannot be rewritten in place;
    None when nothing is removed."""
    if not removed:
        return None
    shown = display_path(path)
    gone = {number for number, _, _ in removed}
    data = b"".join(raw for number, raw in enumerate(_split_lines(original), 1) if number not in gone)
    if original.startswith(UTF8_BOM) and not data.startswith(UTF8_BOM):
        data = UTF8_BOM + data  # the BOM of a removed first line stays the list's
    details = {"removed": [{"list": shown, "line": number, "text": _text(raw), "names": display_path(file.path)}
                           for number, raw, file in removed]}
    summary = f"{plural(len(removed), 'line')} naming the dropped files removed: " + shorten(
        removed, 4, lambda item: f"line {item[0]} {_text(item[1])!r} ({display_path(item[2].path)})")
    refusal = in_place_refusal(path, root, force)
    if refusal is not None:
        return Edit(FileChange(shown, REFUSED, f"not rewritten: {refusal}; the files stay until it can be",
                               shown, details), path)

    def verify(temp: str) -> str | None:
        return None if read_bytes(temp, "text list") == data else "the list does not read back as written"

    return bytes_edit(FileChange(shown, PLANNED, summary, shown, details), path, data, verify, source=path,
                      state=state)


def _text(raw: bytes) -> str:
    return table_text(raw).strip()


def _named(raw: bytes, number: int, folders: tuple[str, ...], dropped: list[_Dropped],
           own: dict[str, bool]) -> _Dropped | None:
    """The dropped file that line ``number`` (``raw``, its line ending included) of a list names,
    or None: the whole line (a name with spaces) or its first field as a path or a bare id (an
    id only for a file of the list's own dataset: ``own``), another field only as a path written
    with a folder or an extension (``2008_000001  1``: the 1 is a flag). UnicodeDecodeError for a
    line that is not UTF-8."""
    text = (raw.removeprefix(UTF8_BOM) if number == 1 else raw).decode("utf-8").strip()
    if not text or text.startswith("#"):
        return None
    first, *others = text.split()
    names = [(text, True), (first, True), *((name, False) for name in others if _written_as_path(name))]
    for name, may_be_id in dict.fromkeys(names):
        for file in dropped:
            if _names(name, file, folders, by_id=may_be_id and own[file.path]):
                return file
    return None


def _written_as_path(name: str) -> bool:
    """True for a field written as a path: with a folder or an extension (not ``1``, ``-1``)."""
    return "/" in name or "\\" in name or bool(os.path.splitext(name)[1])


def _names(name: str, file: _Dropped, folders: tuple[str, ...], by_id: bool) -> bool:
    """True when the list entry ``name`` names ``file``: its path from one of ``folders`` (or
    absolute, links resolved), with or without the extension, or, when ``by_id``, its bare id:
    a name without folders that is the file's name or stem."""
    if by_id and "/" not in name and "\\" not in name and name in (file.name, file.stem):
        return True
    relative = name if os.path.isabs(name) else name.replace("\\", "/")
    leaf = os.path.basename(relative)
    with_extension = leaf == file.name
    if not with_extension and not (leaf == file.stem and strip_extension(relative) == relative):
        return False
    tail = "" if with_extension else file.name[len(file.stem):]
    return any(file.is_at(os.path.normpath(os.path.join(folder, relative)) + tail) for folder in folders)


def _leads_to(cell: str, bases: tuple[str, ...], file: _Dropped) -> bool:
    """True when a label table's path cell leads to ``file`` as the table's reader looks it up:
    under the first of ``bases`` that holds it (a cell without an extension: with the file's)."""
    if not cell:
        return False
    leaf = os.path.basename(cell.replace("\\", "/"))
    if leaf not in (file.name, file.stem):
        return False
    tail = "" if leaf == file.name or os.path.splitext(leaf)[1] else file.name[len(file.stem):]
    for folder in bases:
        candidate = os.path.normpath(os.path.join(folder, cell)) + tail
        if os.path.lexists(candidate):
            return file.is_at(candidate)
    return False


def _path_cell(raw: bytes, layout: TableLayout) -> str | None:
    """The path cell of the one line ``raw`` of a table, split as its reader splits a row."""
    body = table_text(raw).rstrip("\r\n")
    if layout.separator is None:
        cells = body.strip().rsplit(None, 1) if layout.width == 2 else body.split()
    else:
        try:
            cells = next(csv.reader([body], delimiter=layout.separator), [])
        except csv.Error:
            return None
    column = layout.path_column
    return cells[column].strip() if column is not None and column < len(cells) else None
