"""Cleaning file lists (train.txt, ImageSets/Main/*.txt): BOM, CRLF, whitespace, blank, comment
and duplicate lines, and entries whose file does not exist.

An entry is kept when any file answers to it: its path (with or without an extension), or any
file with its stem, however many share it (a VOC split list names ``2008_000001``, which is
``Annotations/2008_000001.xml`` and ``JPEGImages/2008_000001.jpg`` at once). Only entries that
nothing answers to are dropped, and a plan is refused when a file in the folder holding both the
root and the list answers to an entry it would drop (the root was wrong), or when it would
empty the list.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Sequence

from labelguard.core import storage
from labelguard.core.text import noun, printable, shorten
from labelguard.core.paths import display_path, inside_root, resolves_inside
from labelguard.fix._base import (
    PLANNED, REFUSED, SKIPPED, UNCHANGED, FileChange, FixResult, load_report, report_paths,
)
from labelguard.fix._engine import (
    FileState, apply_edits, bytes_edit, check_out, data_root, file_state, output_target, preview_edits, refuse_crashed,
    target_refusal,
)
from labelguard.fix._journal import FixError, refuse_object_storage
from labelguard.fix._remote import fixed_locally
from labelguard.layouts.base import AuditOptions, discover_datasets
from labelguard.layouts.folders import walk_files
from labelguard.layouts.pairing import pair_key, strip_extension
from labelguard.readers.base import ReadError, read_bytes
from labelguard.readers.lists import ListEntry, ListFile, parse_list
from labelguard.readers.masks import MASK_EXTENSIONS

# More than this share of entries missing means the root is wrong, not the list.
MISSING_LIMIT = 0.5
ROOT_LEVELS = 3
ENTRY_EXTENSIONS = tuple(MASK_EXTENSIONS) + (".xml", ".json", ".txt")


def clean_list(
    lists: "str | os.PathLike | Sequence[str | os.PathLike] | None" = None,
    *,
    root: str | None = None,
    drop_missing: bool = True,
    from_report: str | None = None,
    apply: bool = False,
    out: str | None = None,
    force: bool = False,
    storage_options: dict | None = None,
) -> FixResult:
    """Rewrite file lists as clean UTF-8, one entry a line, ``\\n`` endings, no BOM.

    Blank lines, comment lines and duplicates go; whitespace around entries goes; entries that
    no file answers to (see the module docstring) are removed and listed in the result. The
    root they resolve against is ``root``, else the nearest folder above the list where most
    entries resolve; when more than half of the entries are missing under every candidate the
    list is left alone (the root is wrong, not the list). The run's journal goes to that root,
    so ``fix undo`` finds it from the dataset root and from the list's folder alike.

    Args:
        lists: list files (default: the lists with LG004/LG003 findings in ``from_report`` that
            the dataset reads: :func:`lists_of_report`).
        root: the dataset root the entries are relative to; with ``from_report``, the dataset
            whose lists are cleaned (default: the paths the report audited).
        drop_missing: remove entries without a file (default True).
        from_report: a saved JSON audit report.
        apply: write (default: a dry run).
        out: write the cleaned lists under this folder instead (same relative paths).
        force: also rewrite read-only lists and lists with other hard links.
        storage_options: fsspec options for lists in object storage. Such lists need ``root``
            (its prefix) and ``out``: the prefix is copied there whole and its lists cleaned in
            that copy (:mod:`labelguard.fix._remote`).
    """
    ignored: list[str] = []
    if lists is None or (not isinstance(lists, (str, os.PathLike)) and not list(lists)):
        if not from_report:
            raise FixError("no list files given")
        lists, ignored = lists_of_report(from_report, root)
        if not lists:
            raise FixError(f"{from_report} names no unclean file list (LG004/LG003) that its datasets read"
                           + (f"; {'; '.join(ignored)}" if ignored else ""))
    if isinstance(lists, (str, os.PathLike)):
        lists = [lists]
    # A name of its own: the parameter's declared type is wider than these plain paths.
    files = [storage.local_path(os.fspath(p)) for p in lists]
    if root is not None:
        root = storage.local_path(os.fspath(root))
    remote = [p for p in files if storage.in_object_storage(os.fspath(p))]
    if remote:
        if root is None or not storage.in_object_storage(os.fspath(root)):
            raise FixError(f"{remote[0]} is in object storage: give --root, the prefix "
                           "its entries are relative to, which is copied with the list to the local --out folder "
                           "(a fix never writes object storage)")
        return fixed_locally([root, *files], out, apply, storage_options, lambda local, fix_out, staging: _clean_lists(
            local[1:], local[0], drop_missing, apply, fix_out, force))
    refuse_object_storage([root] if root is not None else [])
    result = _clean_lists(files, root, drop_missing, apply, out, force)
    result.notes.extend(ignored)
    return result


def lists_of_report(report_path: str, root: str | None) -> tuple[list[str], list[str]]:
    """(the lists to clean, a note for each list the report names that is not cleaned) for
    ``clean_list(from_report=...)``.

    A report's findings name the files the audited data named: a data.yaml can make an audit
    name a list outside the dataset, and a report can be edited. So a list is taken from the
    report only when the dataset, discovered again, reads it as a file list (never a data.yaml,
    an obj.data or a label file) and it lies inside the dataset once links are resolved. The
    datasets are ``root`` when given, else the paths the report audited (the audit's command
    line)."""
    report = load_report(report_path)
    datasets = [root] if root is not None else _report_datasets(report, report_path)
    folders = []
    # Keyed as the report shows paths (printable), so a name holding control characters or
    # bytes that are no UTF-8 is found again from its escape.
    read: dict[str, str] = {}
    for dataset in datasets:
        absolute = storage.abspath(dataset)
        folders.append(absolute if storage.isdir(absolute) else os.path.dirname(absolute))
        discoveries = discover_datasets(absolute, AuditOptions())
        refuse_crashed(discoveries)
        for discovery in discoveries:
            read.update((printable(storage.abspath(path)), path) for path in discovery.lists
                        if resolves_inside(path, folders[-1]))
    named = sorted({f["path"] for f in report["findings"]
                    if f.get("code") in ("LG004", "LG003") and isinstance(f.get("path"), str) and f["path"]})
    lists, ignored = [], []
    shown = ", ".join(display_path(d) for d in datasets)
    for path in named:
        found = read.get(printable(storage.abspath(path)))
        if found is not None:
            lists.append(found)
            continue
        if not any(resolves_inside(path, folder) for folder in folders):
            why = f"outside {shown}"
        elif not storage.isfile(path):
            why = "no file here"
        else:
            why = f"no file list {shown} reads"
        ignored.append(f"{report_path} names {path}, {why}: not cleaned")
    return lists, ignored


def _report_datasets(report: dict, report_path: str) -> list[str]:
    """The datasets whose lists a report's findings may name, without ``--root``: the paths
    the report audited, each inside the current folder. A report is a file like any other (it
    can be edited or come from elsewhere): its paths never lead the fix outside the folder it
    runs from."""
    paths = report_paths(report)
    here = os.getcwd()
    outside = [path for path in paths if not resolves_inside(path, here)]
    if outside:
        raise FixError(f"{report_path} audited {', '.join(display_path(p) for p in outside)}, outside the current "
                       "folder: name the dataset whose lists to clean with --root")
    return paths


def _clean_lists(lists: list[str], root: str | None, drop_missing: bool, apply: bool, out: str | None,
                 force: bool) -> FixResult:
    """:func:`clean_list` of local ``lists``."""
    for path in lists:
        if not os.path.isfile(path):
            raise FixError(f"{path}: no such file")
    base = data_root(lists)
    check_out(base, out)
    result = FixResult("list", apply)
    plans = [_plan(path, root, drop_missing) for path in lists]
    journal_root = out if out is not None else data_root([p.root for p in plans] + lists)
    edits = []
    for plan in plans:
        target = output_target(plan.path, base, out)
        refusal = target_refusal(plan.path, target, journal_root, out, force)
        if refusal and plan.change.status in (PLANNED, UNCHANGED):
            plan.change.status, plan.change.summary, plan.data = REFUSED, f"not fixed: {refusal}", None
        result.changes.append(plan.change)
        if plan.data is not None:
            edits.append(bytes_edit(plan.change, target, plan.data, _parses_clean(plan.entries),
                                    source=plan.path, state=plan.state))
    if apply:
        apply_edits(result, edits, journal_root, "fix list")
    else:
        preview_edits(result, edits)
    return result


@dataclass
class _ListPlan:
    path: str
    change: FileChange
    root: str  # the dataset root the entries resolved against (the list's folder when none did)
    data: bytes | None = None
    entries: list[str] = field(default_factory=list)
    state: FileState | None = None


class _FileIndex:
    """The files under one folder, by lower-case stem and by pairing key."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.by_name: dict[str, list[str]] = {}
        for file in walk_files(folder):
            name = os.path.basename(file)
            for key in {strip_extension(name).lower(), pair_key(name)}:
                self.by_name.setdefault(key, []).append(file)

    def answering(self, name: str, list_dir: str) -> str | None:
        """A file under the folder that answers to the list entry (field) ``name``, or None."""
        relative = name.lstrip("/\\") if os.path.isabs(name) else name
        for folder in (self.folder, list_dir):
            path = os.path.normpath(os.path.join(folder, relative))
            for candidate in (path, *(path + ext for ext in ENTRY_EXTENSIONS)):
                if os.path.isfile(candidate):
                    return candidate
        if os.path.isabs(name) and os.path.isfile(name):
            return name
        basename = os.path.basename(relative)
        for key in (strip_extension(basename).lower(), pair_key(basename)):
            if self.by_name.get(key):
                return self.by_name[key][0]
        return None


def _answering_entry(entry: ListEntry, index: _FileIndex, list_dir: str) -> str | None:
    """A file that answers to the entry: the whole line, or any of its fields (``image mask``
    pairs, or VOC's per-class ``2008_000001 -1`` lines); None when nothing does."""
    for name in (entry.text, *entry.fields):
        found = index.answering(name, list_dir)
        if found is not None:
            return found
    return None


def _candidates(list_dir: str, root: str | None) -> list[str]:
    if root is not None:
        return [os.path.abspath(root)]
    candidates, current = [list_dir], list_dir
    for _ in range(ROOT_LEVELS):
        current = os.path.dirname(current)
        candidates.append(current)
    return list(dict.fromkeys(candidates))


def _plan(path: str, root: str | None, drop_missing: bool) -> _ListPlan:
    shown = display_path(path)
    list_dir = os.path.dirname(os.path.abspath(path))
    state = file_state(path)
    try:
        original = read_bytes(path, "text list")
        listing = parse_list(path)
    except ReadError as exc:
        return _ListPlan(path, FileChange(shown, SKIPPED, str(exc)), list_dir)
    try:
        original.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        return _ListPlan(path, FileChange(
            shown, REFUSED, f"not UTF-8 (byte {original[exc.start]:#04x} at offset {exc.start}): its entries name "
            "files in another encoding, and rewriting it as UTF-8 would rename them; re-save it as UTF-8 first"),
            list_dir)
    found_root, missing = _resolve_root(listing, _candidates(list_dir, root), list_dir, root is not None)
    index = _FileIndex(found_root or list_dir)
    # A name with spaces around it that a file has exactly keeps them.
    spaced = {e.line: replace(e, text=e.raw) for e in missing
              if e.raw != e.text and index.answering(e.raw, list_dir) is not None}
    missing = [e for e in missing if e.line not in spaced]
    entries = [spaced.get(e.line, e) for e in _kept_comment_lines(listing, index, list_dir)]
    if drop_missing:
        if found_root is None:
            return _ListPlan(path, FileChange(
                shown, REFUSED, f"{len(missing)} of {len(listing.entries)} entries have no file under any folder "
                "above the list; pass the dataset root (--root)", details={"missing": [e.text for e in missing[:20]]}),
                list_dir)
        refusal = _drops_existing(missing, found_root, list_dir, len(listing.entries))
        if refusal:
            return _ListPlan(path, FileChange(shown, REFUSED, f"not written: {refusal}",
                                              details={"missing": [e.text for e in missing[:20]]}), found_root)
        entries = [e for e in entries if e not in missing]
    else:
        missing = []
    journal_root = found_root or list_dir
    data = "".join(e.text + "\n" for e in entries).encode("utf-8")
    if data == original:
        return _ListPlan(path, FileChange(shown, UNCHANGED, f"clean ({len(entries)} entries)"), journal_root)
    problems = dict(listing.problems)
    kept = [e.line for e in entries if e.text.startswith("#")]
    if kept:
        problems["comment"] = [n for n in problems["comment"] if n not in kept]
        problems = {name: lines for name, lines in problems.items() if lines}
    if missing:
        problems["missing"] = [e.line for e in missing]
    parts = [f"{name} on {noun(len(lines), 'line')} {shorten(lines)}" for name, lines in problems.items()]
    parts += [f"line {n} starts with '#' but names a file; kept" for n in kept[:5]]
    summary = (f"{len(listing.entries) + len(listing.problems.get('duplicate', []))} -> {len(entries)} entries; "
               + "; ".join(parts or ["the last newline"]))
    details = {"problems": problems, "removed": [e.text for e in missing], "entries": len(entries)}
    return _ListPlan(path, FileChange(shown, PLANNED, summary, shown, details), journal_root, data,
                     [e.text for e in entries], state)


def _kept_comment_lines(listing: ListFile, index: _FileIndex, list_dir: str) -> list[ListEntry]:
    """The list's entries, with its ``#`` lines that name a file (``#hash.png``) among them in
    their place: a comment to the parser, a file to the loader that opens it."""
    named = []
    seen = {e.text for e in listing.entries}
    for number in listing.problems.get("comment", []):
        text = listing.examples[number].strip()
        if text not in seen and index.answering(text, list_dir) is not None:
            seen.add(text)
            named.append(ListEntry(number, listing.examples[number], text, (text,)))
    return sorted(listing.entries + named, key=lambda e: e.line) if named else list(listing.entries)


def _resolve_root(listing: ListFile, candidates: list[str], list_dir: str,
                  given: bool) -> tuple[str | None, list[ListEntry]]:
    """(the root the entries resolve against, the entries no file answers to there)."""
    worst: list[ListEntry] = []
    for candidate in candidates:
        index = _FileIndex(candidate)
        missing = [e for e in listing.entries if _answering_entry(e, index, list_dir) is None]
        if given or len(missing) <= MISSING_LIMIT * max(1, len(listing.entries)):
            return candidate, missing
        worst = missing if not worst or len(missing) < len(worst) else worst
    return None, worst


def _drops_existing(missing: list[ListEntry], root: str, list_dir: str, total: int) -> str | None:
    """Why dropping ``missing`` would lose entries that exist, or None. The folder searched is the
    one holding both the root and the list (a --root that names the wrong part of the dataset),
    unless that is further above the list than the root search ever looks."""
    scope = os.path.commonpath([root, list_dir])
    if missing and scope != root and inside_root(scope, _candidates(list_dir, None)[-1]):
        index = _FileIndex(scope)
        existing = [(e, found) for e in missing if (found := _answering_entry(e, index, list_dir)) is not None]
        if existing:
            shown = shorten(existing, 3, lambda item: f"line {item[0].line} {item[0].text!r} ({display_path(item[1])})")
            return (f"{len(existing)} of the {len(missing)} entries it would drop have files outside the root "
                    f"{display_path(root)}: {shown}; pass the root those entries are relative to (--root), "
                    "or --keep-missing")
    if missing and len(missing) == total:
        return (f"every one of the {total} entries would be dropped (no file answers to any); pass the dataset "
                "root (--root), or --keep-missing")
    return None


def _parses_clean(entries: list[str]):
    """The check of a written list: its lines are ``entries`` exactly, and the parser finds no
    unclean line in it but the ``#`` lines and spaced names kept on purpose."""
    def verify(temp: str) -> str | None:
        lines = read_bytes(temp, "text list").decode("utf-8").split("\n")
        if lines != entries + [""]:
            return "the cleaned list does not read back as written"
        deliberate = {n for n, text in enumerate(entries, 1) if text.startswith("#") or text != text.strip()}
        unclean = {n for lines in parse_list(temp).problems.values() for n in lines} - deliberate
        if unclean:
            return f"the cleaned list still has unclean lines ({', '.join(str(n) for n in sorted(unclean)[:5])})"
        return None

    return verify
