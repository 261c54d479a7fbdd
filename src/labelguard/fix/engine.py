"""The one apply engine of every fix: plan -> temp file -> verify (re-read, re-audit) -> atomic
replace -> journal.

A format's editor (:mod:`~labelguard.fix.masks`, :mod:`~labelguard.fix.annotations`,
:mod:`~labelguard.fix.lists`, :mod:`~labelguard.fix.folders`) plans: it reads each file and
turns what would change into an :class:`Edit` holding a :class:`~labelguard.fix.base.FileChange`
(``planned``, or why not) and how to write and check the new content. A dry run stops there.
:func:`apply_edits` writes: the new content goes to a temporary file beside its target, is
fsynced and verified, and only then replaces the target through one journaled
:class:`~labelguard.fix.journal.Run`, so every write is atomic, backed up and undoable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from labelguard.core.findings import Severity
from labelguard.core.tasks import FileResult
from labelguard.errors import MissingDependency
from labelguard.fix.base import PLANNED, REFUSED, SKIPPED, UNCHANGED, WRITTEN, CannotFix, FileChange, FixResult
from labelguard.fix.journal import FixError, Run, fsync_file, inside, temp_path_for


@dataclass
class Edit:
    """One file's planned edit.

    Attributes:
        change: the outcome shown to the user; only ``planned`` edits are written.
        target: where the new content goes (the input, or its place under ``out``).
        write: ``write(temp)`` writes the whole new file to the temporary path ``temp``;
            CannotFix makes the edit a skip, FixError a refusal.
        verify: ``verify(temp)`` says why the written file must not replace the target (it reads
            back differently, its re-audit is worse), or None.
        companion: a file written only when no edit before it was refused (the class-name file
            that goes with renamed annotations).
        perform: instead of ``write``, ``perform(run)`` moves files through the run's journaled
            ``move``/``mkdir``/``rmdir`` (class folders).
    """

    change: FileChange
    target: str
    write: Callable[[str], None] | None = None
    verify: Callable[[str], str | None] | None = None
    companion: bool = False
    perform: Callable[[Run], None] | None = None


def data_root(paths: Sequence[str]) -> str:
    """The deepest folder holding every path: where a run's journal goes."""
    folders = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths]
    return os.path.commonpath(folders)


def output_target(path: str, root: str, out: str | None) -> str:
    """Where the fixed ``path`` goes: in place, or at its place under ``out``."""
    return path if out is None else os.path.join(out, os.path.relpath(os.path.abspath(path), root))


def check_out(root: str, out: str | None) -> None:
    if out is not None and os.path.abspath(out) == os.path.abspath(root):
        raise FixError("--out is the data folder itself; omit --out to fix in place (with backups)")


def copy_edit(path: str, target: str, change: FileChange) -> Edit:
    """An unchanged file copied to its place under ``out``, so the output is a whole dataset."""
    def write(temp: str) -> None:
        with open(path, "rb") as source, open(temp, "wb") as handle:
            handle.write(source.read())

    return Edit(change, target, write)


def bytes_edit(change: FileChange, target: str, data: bytes,
               verify: Callable[[str], str | None] | None = None, companion: bool = False) -> Edit:
    def write(temp: str) -> None:
        with open(temp, "wb") as handle:
            handle.write(data)

    return Edit(change, target, write, verify, companion)


def apply_edits(result: FixResult, edits: Sequence[Edit], root: str, command: str) -> None:
    """Write every planned edit (and the copies under ``out``) through one journaled run rooted at
    ``root``; each change's status becomes written, refused or skipped. A run that writes
    nothing leaves no journal."""
    root = os.path.abspath(root)
    run: Run | None = None
    try:
        for edit in edits:
            change = edit.change
            copy = change.status == UNCHANGED and edit.write is not None
            if change.status != PLANNED and not copy:
                continue
            if edit.companion and not result.ok:
                continue
            if not inside(os.path.abspath(edit.target), root):
                raise FixError(f"{edit.target} is outside the data root {root}; nothing there is written")
            if run is None:
                run = Run(root, command)
            if edit.perform is not None:
                edit.perform(run)
                change.status = WRITTEN
                continue
            _write_one(edit, run, copy)
    finally:
        result.close_run(run)


def _write_one(edit: Edit, run: Run, copy: bool) -> None:
    change = edit.change
    target = os.path.abspath(edit.target)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    temp = temp_path_for(target)
    try:
        try:
            edit.write(temp)
            fsync_file(temp)
            reason = edit.verify(temp) if edit.verify is not None else None
        except (CannotFix, MissingDependency) as exc:
            change.status, change.summary = SKIPPED, str(exc)
            return
        except FixError as exc:
            reason = str(exc)
        if reason:
            change.status, change.summary = REFUSED, f"not written: {reason}"
            return
        run.replace(target, temp)
        if not copy:
            change.status = WRITTEN
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def error_amounts(result: FileResult) -> dict[str, int]:
    """Per error code: how much of it (out-of-spec pixels for LG201, the finding's count, or 1)."""
    found: dict[str, int] = {}
    for finding in result.findings:
        if finding.severity >= Severity.ERROR:
            if finding.code == "LG201" and finding.data.get("counts"):
                amount = sum(finding.data["counts"])
            else:
                amount = int(finding.data.get("count") or 1)
            found[finding.code] = found.get(finding.code, 0) + amount
    return found


def worse(before: FileResult, after: FileResult) -> str | None:
    """Why the re-audit ``after`` is worse than ``before`` (a new error code, or more of one), or None."""
    old, new = error_amounts(before), error_amounts(after)
    for code, amount in new.items():
        if code not in old:
            message = next(f.message for f in after.findings if f.code == code)
            return f"the fixed file would have {code}: {message}"
        if amount > old[code]:
            what = "out-of-spec pixels" if code == "LG201" else f"{code} errors"
            return f"the fixed file would have more {what} ({amount} > {old[code]})"
    return None
