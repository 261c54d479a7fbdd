"""The one apply engine of every fix: plan -> temp file -> verify (re-read, re-audit) -> atomic
replace -> journal.

A format's editor (:mod:`~labelguard.fix._masks`, :mod:`~labelguard.fix._annotations`,
:mod:`~labelguard.fix._lists`, :mod:`~labelguard.fix._folders`) plans: it reads each file and
turns what would change into an :class:`Edit` holding a :class:`~labelguard.fix._base.FileChange`
(``planned``, or why not) and how to write and check the new content. Everything that
``--apply`` would refuse is decided while planning, so a dry run shows it too: a file that is a
symbolic link or reached through one from outside the data (:func:`in_place_refusal`), a
hard-linked or read-only file without ``force``, a target under ``--out`` that a link leads
elsewhere (:func:`out_refusal`); and :func:`preview_edits` writes each new file into a private
scratch folder outside the data and checks it exactly as ``--apply`` will.

:func:`apply_edits` writes: the new content goes to a temporary file beside its target (named
in the journal before it exists), is fsynced and verified, and only then replaces the target
through one journaled, locked :class:`~labelguard.fix._journal.Run`, so every write is atomic,
backed up and undoable. A file that changed between planning and writing is refused.

Files reached through a symbolic link are refused, not written through: replacing the link
would cut it off from its target, and writing the target would change a file that may lie
outside the data or be shared with another dataset. The user fixes the target itself.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from typing import Callable, Sequence

from labelguard import layouts
from labelguard._audit import dataset_settings
from labelguard.rules.lg005 import ESCAPES_ROOT
from labelguard.config import ConfigFinder
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult
from labelguard.core.text import plural, verb
from labelguard.core.paths import inside_root, resolves_inside
from labelguard.errors import MissingDependency
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, UNCHANGED, WRITTEN, CannotFix, FileChange, FixResult
from labelguard.fix._journal import FixError, Run, copy_file, fsync_file, refuse_object_storage
from labelguard.layouts.base import AuditOptions, discover_datasets

# (device, inode, size, mtime, ctime, mode): what a write to the file would change.
FileState = tuple


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
        source: the file the new content was planned from, and ``state`` its
            :func:`file_state` then: a file changed since is refused, not overwritten.
        preview: the dry run's ``verify`` for a new file written outside the data, when
            ``verify`` gives another answer there (an annotation whose re-audit looks for its
            images beside it); default ``verify``.
    """

    change: FileChange
    target: str
    # What ``write`` returns is not used (a copy returns its hash).
    write: Callable[[str], object] | None = None
    verify: Callable[[str], str | None] | None = None
    companion: bool = False
    perform: Callable[[Run], None] | None = None
    source: str | None = None
    state: FileState | None = None
    preview: Callable[[str], str | None] | None = None


def file_state(path: str) -> FileState | None:
    """What identifies the file's current content without reading it, or None when absent."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_mode)


def data_root(paths: Sequence[str]) -> str:
    """The deepest folder holding every path: where a run's journal goes."""
    folders = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths]
    return os.path.commonpath(folders)


def output_target(path: str, root: str, out: str | None) -> str:
    """Where the fixed ``path`` goes: in place, or at its place under ``out``."""
    return path if out is None else os.path.join(out, os.path.relpath(os.path.abspath(path), root))


def check_out(root: str, out: str | None) -> None:
    """FixError when ``out`` (links resolved) is the data folder, lies inside it or holds it:
    the fixed copies would mix with the input, or be read as part of it."""
    if out is None:
        return
    refuse_object_storage([out])
    real_root, real_out = os.path.realpath(root), os.path.realpath(out)
    if real_out == real_root:
        raise FixError(f"--out {out} is the data folder itself; omit --out to fix in place (with backups)")
    if inside_root(real_out, real_root):
        raise FixError(f"--out {out} lies inside the data folder {root} ({real_out}); choose a folder outside "
                       "it, so the fixed copies are never read as part of the data")
    if inside_root(real_root, real_out):
        raise FixError(f"--out {out} holds the data folder {root}; choose a folder outside it, so no fixed copy "
                       "can land on an input file")


def in_place_refusal(path: str, root: str, force: bool = False) -> str | None:
    """Why a fix must not replace (or move) ``path`` in place, or None.

    Always refused: a symbolic link (see the module docstring), a file that lies outside
    ``root`` once the links of its folders are resolved, anything but a regular file or a
    folder. Refused unless ``force``: a file with other hard links (replacing it gives this
    name the new bytes and leaves the other names with the old) and a read-only file."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(status.st_mode):
        return (f"a symbolic link (to {os.readlink(path)}); fix writes no file through a link: fix the file it "
                "points to, or replace the link by a copy")
    if not resolves_inside(path, root):
        return f"outside the data root {root} once links are resolved ({os.path.realpath(path)})"
    if stat.S_ISDIR(status.st_mode):
        return None
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file (a named pipe, socket or device)"
    if status.st_nlink > 1 and not force:
        others = status.st_nlink - 1
        return (f"{plural(others, 'other hard link')} {verb(others, 'shares')} this file; replacing it would leave "
                "them with the old bytes: pass --force to replace this name only")
    if not status.st_mode & 0o222 and not force:
        return (f"read-only (mode {stat.filemode(status.st_mode)}); pass --force to replace it anyway "
                "(it stays read-only)")
    return None


def out_refusal(target: str, out: str) -> str | None:
    """Why ``target`` under ``out`` must not be written, or None: it (or a folder above it that
    exists) leads outside ``out`` through a link, or a folder sits there."""
    if not resolves_inside(target, out):
        return (f"its place {target} leads outside --out {out} through a symbolic link "
                f"({os.path.realpath(target)}); nothing is written there")
    if os.path.isdir(target):
        return f"a folder sits at its place {target}"
    return None


def target_refusal(path: str, target: str, root: str, out: str | None, force: bool) -> str | None:
    """:func:`in_place_refusal` of ``path`` (in place) or :func:`out_refusal` of its ``target``."""
    return in_place_refusal(path, root, force) if out is None else out_refusal(target, out)


def dataset_specs(path: str, options: AuditOptions, spec: LabelSpec | None,
                  use_project_config: bool = True) -> list[tuple[layouts.Discovery, LabelSpec]]:
    """The datasets at ``path`` as the audit finds them, each with its own effective spec (its
    metadata < the config above it < ``spec``), as the audit checks them: one dataset's spec
    never leaks onto another."""
    refuse_object_storage([path])
    path = os.fspath(path)
    found = discover_datasets(path, options)
    refuse_crashed(found)
    for discovery in found:
        # What the fix will not see (a folder or metadata file that leads out of the data) is said.
        discovery.notes.extend(f"{finding.path}: {finding.message}" for finding in discovery.findings
                               if finding.code == ESCAPES_ROOT.code)
    settings = dataset_settings([(discovery, path) for discovery in found], ConfigFinder(None, use_project_config),
                                spec)
    return [(discovery, own_spec) for discovery, (own_spec, _) in zip(found, settings)]


def refuse_crashed(found: Sequence[layouts.Discovery]) -> None:
    """FixError when discovery of the data hit a bug of labelguard (a layout's detection or
    discovery crashed): a fix planned on what was found might take a photo for a mask, or miss
    files; nothing is written."""
    errors = [error for discovery in found for error in discovery.errors]
    if errors:
        raise FixError(f"discovering the data failed, so nothing is fixed: {'; '.join(errors)}")


def unknown_spec_note(roots: Sequence[str]) -> str:
    """The note of a run whose re-audit cannot judge values: no spec is known for ``roots``."""
    return (f"no label spec is known for {', '.join(roots)} (give --num-classes, --values or --classes, or a "
            "config): each written file is checked to read back as intended, but its labels are not "
            "checked against a spec, so the re-audit cannot say the fix made nothing worse")


def copy_edit(path: str, target: str, change: FileChange) -> Edit:
    """An unchanged file copied to its place under ``out``, so the output is a whole dataset."""
    return Edit(change, target, lambda temp: copy_file(path, temp), source=path, state=file_state(path))


def bytes_edit(change: FileChange, target: str, data: bytes, verify: Callable[[str], str | None] | None = None,
               companion: bool = False, source: str | None = None, state: FileState | None = None,
               preview: Callable[[str], str | None] | None = None) -> Edit:
    def write(temp: str) -> None:
        with open(temp, "wb") as handle:
            handle.write(data)

    return Edit(change, target, write, verify, companion, source=source, state=state, preview=preview)


def _produce(edit: Edit, temp: str, check: Callable[[str], str | None] | None) -> tuple[str, str] | None:
    """Write ``edit``'s new file to ``temp`` and check it: None when it may replace the target,
    else (skipped or refused, why)."""
    # Not a user mistake: every edit planned to be written has a ``write`` (the dry run picks
    # those; a run hands the edits with a ``perform`` to it instead).
    assert edit.write is not None
    try:
        edit.write(temp)
        fsync_file(temp)
        reason = check(temp) if check is not None else None
    except (CannotFix, MissingDependency) as exc:
        return SKIPPED, str(exc)
    except FixError as exc:
        reason = str(exc)
    return (REFUSED, reason) if reason else None


def _hold_companions(result: FixResult, edits: Sequence[Edit], verb: str) -> None:
    if result.ok:
        return
    for edit in edits:
        if edit.companion and edit.change.status == PLANNED:
            edit.change.status = SKIPPED
            edit.change.summary = f"{verb}: it goes with the files of this run, and one of them is refused"


def preview_edits(result: FixResult, edits: Sequence[Edit]) -> None:
    """The dry run's check: each planned new file is written into a private scratch folder
    outside the data (removed after) and verified as ``--apply`` will, so what ``--apply``
    would refuse or skip shows now."""
    pending = [e for e in edits if e.change.status == PLANNED and e.write is not None and not e.companion]
    if pending:
        with tempfile.TemporaryDirectory(prefix="labelguard-dry-run-") as scratch:
            for number, edit in enumerate(pending):
                folder = os.path.join(scratch, str(number))
                os.mkdir(folder)
                outcome = _produce(edit, os.path.join(folder, os.path.basename(edit.target)),
                                   edit.preview or edit.verify)
                if outcome is not None:
                    status, reason = outcome
                    edit.change.status = status
                    edit.change.summary = f"would not be written: {reason}" if status == REFUSED else reason
    _hold_companions(result, edits, "would not be written")


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
                _hold_companions(result, [edit], "not written")
                continue
            reason = _refusal_now(edit, root)
            if reason:
                change.status, change.summary = REFUSED, f"not written: {reason}"
                continue
            if run is None:
                run = Run(root, command)
            if edit.perform is not None:
                try:
                    edit.perform(run)
                    change.status = WRITTEN
                except (OSError, FixError) as exc:  # what moved before is journaled: undo moves it back
                    change.status, change.summary = REFUSED, f"stopped: {_reason(exc)}"
                continue
            _write_one(edit, run, copy)
    finally:
        result.close_run(run)


def _refusal_now(edit: Edit, root: str) -> str | None:
    """What stops ``edit`` at the moment of writing: its target leaves the root, or its source
    changed since it was planned."""
    if not resolves_inside(edit.target, root):
        return f"{edit.target} is outside the data root {root} once links are resolved"
    if edit.source is not None and file_state(edit.source) != edit.state:
        return (f"{edit.source} changed since this fix was planned (another program or run wrote it); "
                "run the fix again")
    return None


def _write_one(edit: Edit, run: Run, copy: bool) -> None:
    change = edit.change
    target = os.path.abspath(edit.target)
    temp = None
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temp = run.new_temp(target)
        outcome = _produce(edit, temp, edit.verify)
        if outcome is not None:
            status, reason = outcome
            change.status, change.summary = status, f"not written: {reason}" if status == REFUSED else reason
            return
        run.replace(target, temp)
        if not copy:
            change.status = WRITTEN
    except (OSError, FixError) as exc:  # the target turned into a link, a full disk...
        change.status, change.summary = REFUSED, f"not written: {_reason(exc)}"
    finally:
        if temp is not None and os.path.lexists(temp):
            os.unlink(temp)


def _reason(exc: Exception) -> str:
    return f"{exc.strerror} ({exc.filename})" if isinstance(exc, OSError) and exc.strerror else str(exc)


def error_amounts(result: FileResult) -> dict[str, int]:
    """Per error code: how much of it (out-of-spec pixels for LG201, the finding's count, or 1)."""
    found: dict[str, int] = {}
    for finding in result.findings:
        if finding.severity >= Severity.ERROR:
            if finding.code == "LG201" and finding.data.get("pixels") is not None:
                amount = int(finding.data["pixels"])
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
