"""Cleaning file lists (train.txt): BOM, CRLF, whitespace, blank and duplicate lines, and entries
whose file does not exist."""

from __future__ import annotations

import os
import tempfile
from typing import Sequence

from labelguard.fix.base import PLANNED, REFUSED, SKIPPED, UNCHANGED, WRITTEN, FileChange, FixResult, load_report
from labelguard.fix.engine import data_root
from labelguard.fix.journal import FixError, Run
from labelguard.layouts.base import _resolve, display_path, pair_key, strip_extension, walk_files
from labelguard.readers.base import ReadError
from labelguard.readers.lists import ListEntry, ListFile, parse_list
from labelguard.readers.masks import MASK_EXTENSIONS

# More than this share of entries missing means the root is wrong, not the list.
MISSING_LIMIT = 0.5
ROOT_LEVELS = 3


def clean_list(
    lists: "str | os.PathLike | Sequence[str | os.PathLike] | None" = None,
    *,
    root: str | None = None,
    drop_missing: bool = True,
    from_report: str | None = None,
    apply: bool = False,
    out: str | None = None,
) -> FixResult:
    """Rewrite file lists as clean UTF-8, one entry a line, ``\\n`` endings, no BOM.

    Blank lines, duplicates and comment lines go; whitespace around entries goes; entries whose
    file is not found (by name, with a mask/image extension added, or by stem) are removed and
    listed in the result. The root they resolve against is ``root``, else the nearest folder
    above the list where most entries resolve; when more than half of the entries are missing
    under every candidate the list is left alone (the root is wrong, not the list).

    Args:
        lists: list files (default: the lists with LG004/LG003 findings in ``from_report``).
        root: the dataset root the entries are relative to.
        drop_missing: remove entries without a file (default True).
        from_report: a saved JSON audit report.
        apply: write (default: a dry run).
        out: write the cleaned lists under this folder instead (same relative paths).
    """
    if lists is None or (not isinstance(lists, (str, os.PathLike)) and not list(lists)):
        if not from_report:
            raise FixError("no list files given")
        report = load_report(from_report)
        lists = sorted({f["path"] for f in report["findings"] if f["code"] in ("LG004", "LG003") and f["path"]
                        and os.path.isfile(f["path"]) and not f["path"].lower().endswith(tuple(MASK_EXTENSIONS))})
        if not lists:
            raise FixError(f"{from_report} names no unclean file list (LG004/LG003)")
    if isinstance(lists, (str, os.PathLike)):
        lists = [lists]
    lists = [os.fspath(p) for p in lists]
    for path in lists:
        if not os.path.isfile(path):
            raise FixError(f"{path}: no such file")
    result = FixResult("list", apply)
    base = data_root(lists)
    run: Run | None = None
    try:
        for path in lists:
            change, data = _plan(path, root, drop_missing)
            result.changes.append(change)
            if data is None or not apply or change.status != PLANNED:
                continue
            target = path if out is None else os.path.join(out, os.path.relpath(path, base))
            if run is None:
                run = Run(out if out is not None else base, "fix list")
            run.write_bytes(target, data)
            change.status, change.target = WRITTEN, display_path(target)
    finally:
        result.close_run(run)
    return result


def _plan(path: str, root: str | None, drop_missing: bool) -> tuple[FileChange, bytes | None]:
    shown = display_path(path)
    try:
        listing = parse_list(path)
    except ReadError as exc:
        return FileChange(shown, SKIPPED, str(exc)), None
    entries = listing.entries
    missing: list[ListEntry] = []
    if drop_missing:
        found_root, missing = _missing_entries(path, listing, root)
        if found_root is None:
            return FileChange(shown, REFUSED, f"{len(missing)} of {len(entries)} entries have no file under "
                              f"any folder above the list; pass the dataset root (--root)",
                              details={"missing": [e.text for e in missing[:20]]}), None
        entries = [e for e in entries if e not in missing]
    data = "".join(e.text + "\n" for e in entries).encode("utf-8")
    with open(path, "rb") as handle:
        original = handle.read()
    problems = {name: lines for name, lines in listing.problems.items()}
    if missing:
        problems["missing"] = [e.line for e in missing]
    if data == original:
        return FileChange(shown, UNCHANGED, f"clean ({len(entries)} entries)"), None
    check = _reparse(data)
    if check is not None and (check.problems or [e.text for e in check.entries] != [e.text for e in entries]):
        return FileChange(shown, REFUSED, "not written: the cleaned list does not parse back clean"), None
    parts = [f"{name} on line{'s' if len(lines) > 1 else ''} {', '.join(str(n) for n in lines[:5])}"
             + (f" and {len(lines) - 5} more" if len(lines) > 5 else "") for name, lines in problems.items()]
    summary = (f"{len(listing.entries) + len(listing.problems.get('duplicate', []))} -> {len(entries)} entries; "
               + "; ".join(parts or ["comment lines or the last newline"]))
    details = {"problems": problems, "removed": [e.text for e in missing], "entries": len(entries)}
    return FileChange(shown, PLANNED, summary, shown, details), data


def _reparse(data: bytes) -> ListFile | None:
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as handle:
        handle.write(data)
    try:
        return parse_list(handle.name)
    finally:
        os.unlink(handle.name)


def _missing_entries(path: str, listing: ListFile, root: str | None) -> tuple[str | None, list[ListEntry]]:
    """(the root the entries resolve against, the entries with no file)."""
    list_dir = os.path.dirname(os.path.abspath(path))
    if root is not None:
        candidates = [os.path.abspath(root)]
    else:
        candidates, current = [], list_dir
        for _ in range(ROOT_LEVELS):
            current = os.path.dirname(current)
            candidates.append(current)
        candidates.insert(0, list_dir)
    worst: list[ListEntry] = []
    for candidate in candidates:
        missing = _missing_under(candidate, list_dir, listing)
        if len(missing) <= MISSING_LIMIT * max(1, len(listing.entries)) or root is not None:
            return candidate, missing
        worst = missing if not worst or len(missing) < len(worst) else worst
    return None, worst


def _missing_under(root: str, list_dir: str, listing: ListFile) -> list[ListEntry]:
    by_stem: dict[str, list[str]] = {}
    for file in walk_files(root):
        by_stem.setdefault(strip_extension(os.path.basename(file)).lower(), []).append(file)
        by_stem.setdefault(pair_key(os.path.basename(file)), []).append(file)
    extensions = tuple(MASK_EXTENSIONS)
    missing = []
    for entry in listing.entries:
        if _resolve(entry.text, root, list_dir, by_stem, extensions)[0]:
            continue
        if len(entry.fields) > 1 and all(_resolve(f, root, list_dir, by_stem, extensions)[0] for f in entry.fields):
            continue
        missing.append(entry)
    return missing
