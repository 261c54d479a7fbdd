"""The one write path of every fix: atomic replaces recorded in a run journal, and undo.

A run lives in ``<root>/.labelguard/backups/<run-id>/``: ``journal.jsonl`` (one JSON object a
line) and ``files/`` (the original bytes of every file the run replaced). Each replace goes:

1. the new content is written to a temporary file in the target's folder and fsynced
   (the caller verifies it there: re-read, re-audit);
2. the original bytes are copied to ``files/`` and fsynced;
3. a ``write`` line (path, backup, content hashes before and after, temp name) is appended
   to the journal and fsynced;
4. ``os.replace`` swaps the temp file in, and the folder is fsynced;
5. a ``committed`` line is appended.

A kill at any point leaves every target either old or new (``os.replace`` is atomic), and
the journal names every file that may be new *before* it can be. :func:`undo` compares each
file's current hash with the recorded ones: ``after`` -> restore the backup, ``before`` ->
nothing to do; anything else is a conflict left alone. So undo works after a kill -9,
and running it twice changes nothing the second time.

Renames of files and folders (ImageFolder class folders) are ``move`` lines written before
their ``os.rename``; ``mkdir``/``rmdir`` lines record the folders a run creates or empties.
Undo moves back what sits at the new place while the old place is free, removes the folders
the run created once empty and recreates the ones it removed.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass, field

from labelguard._version import __version__
from labelguard.errors import LabelguardError

log = logging.getLogger(__name__)

STATE_DIR = ".labelguard"
BACKUPS = "backups"
JOURNAL = "journal.jsonl"
# Test-only hook: seconds to sleep after each journal entry, before its replace, so a test can
# kill a run at a known point. Never set it in normal use.
PAUSE_ENV = "LABELGUARD_FIX_PAUSE"


class FixError(LabelguardError, ValueError):
    """A fix cannot be done as asked (bad map, nothing to undo, conflicting files)."""


def inside(path: str, root: str) -> bool:
    """True when the absolute, normalised ``path`` is ``root`` or lies under it."""
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str) -> str | None:
    """The file's SHA-256, or None when it does not exist."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        return None
    return digest.hexdigest()


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders; the replace is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path_for(target: str) -> str:
    """A hidden temporary name in ``target``'s folder that keeps its extension (readers such
    as nibabel decide the format by the name)."""
    folder, name = os.path.split(os.path.abspath(target))
    lower = name.lower()
    ext = next((e for e in (".nii.gz", ".npy.h5") if lower.endswith(e)), os.path.splitext(name)[1])
    stem = name[: len(name) - len(ext)] if ext else name
    return os.path.join(folder, f".{stem}.lgtmp-{secrets.token_hex(4)}{ext}")


def write_fsynced(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def fsync_file(path: str) -> None:
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def atomic_write(target: str, data: bytes) -> None:
    """Replace ``target`` with ``data`` atomically (temp file in the same folder, fsync,
    ``os.replace``, fsync of the folder). Not journaled: fixes go through :class:`Run`."""
    temp = temp_path_for(target)
    try:
        write_fsynced(temp, data)
        _copy_mode(target, temp)
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    _fsync_dir(os.path.dirname(os.path.abspath(target)))


def _copy_mode(source: str, target: str) -> None:
    try:
        os.chmod(target, os.stat(source).st_mode & 0o7777)
    except OSError:
        pass


def new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def runs_dir(root: str) -> str:
    return os.path.join(os.path.abspath(root), STATE_DIR, BACKUPS)


class Run:
    """One applied fix run: every file it replaces goes through :meth:`replace`.

    Args:
        root: the data root the journal's paths are relative to; the run's folder is
            ``<root>/.labelguard/backups/<run-id>/``.
        command: what was run, for the journal and ``fix undo --list``.
    """

    def __init__(self, root: str, command: str) -> None:
        self.root = os.path.abspath(root)
        self.id = new_run_id()
        self.dir = os.path.join(runs_dir(self.root), self.id)
        self.journal_path = os.path.join(self.dir, JOURNAL)
        self.written = 0
        os.makedirs(os.path.join(self.dir, "files"), exist_ok=True)
        self._journal = open(self.journal_path, "a", encoding="utf-8")
        self._pause = float(os.environ.get(PAUSE_ENV) or 0)
        self._append({"event": "start", "run": self.id, "command": command, "root": self.root,
                      "tool": f"labelguard {__version__}", "time": _dt.datetime.now(_dt.timezone.utc).isoformat()})

    def _append(self, entry: dict) -> None:
        self._journal.write(json.dumps(entry, sort_keys=True) + "\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())

    def _relative(self, path: str) -> str:
        """``path`` relative to the root, so the journal travels with the data; a run never
        touches a file outside its root."""
        path = os.path.abspath(path)
        if not inside(path, self.root):
            raise FixError(f"{path} is outside the data root {self.root}; a fix run writes only inside it")
        return os.path.relpath(path, self.root)

    def replace(self, target: str, temp: str) -> None:
        """Swap the verified, fsynced ``temp`` in for ``target``, backing up and journaling first."""
        target = os.path.abspath(target)
        self._relative(target)
        after = sha256_file(temp)
        backup = None
        before = None
        if os.path.exists(target):
            with open(target, "rb") as handle:
                original = handle.read()
            before = sha256_bytes(original)
            backup = os.path.join("files", f"{self.written:06d}-{os.path.basename(target)}")
            write_fsynced(os.path.join(self.dir, backup), original)
            _copy_mode(target, temp)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
        self._append({"event": "write", "path": self._relative(target), "backup": backup,
                      "before": before, "after": after, "temp": self._relative(temp)})
        if self._pause:
            time.sleep(self._pause)
        os.replace(temp, target)
        _fsync_dir(os.path.dirname(target))
        self._append({"event": "committed", "path": self._relative(target)})
        self.written += 1

    def write_bytes(self, target: str, data: bytes) -> None:
        """Journaled atomic write of ``data`` to ``target``."""
        self._relative(target)
        temp = temp_path_for(target)
        os.makedirs(os.path.dirname(temp), exist_ok=True)
        try:
            write_fsynced(temp, data)
            self.replace(target, temp)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)

    def move(self, source: str, target: str) -> None:
        """Journaled ``os.rename`` of a file or folder onto a path that does not exist (atomic on
        one file system); undo moves it back."""
        source, target = os.path.abspath(source), os.path.abspath(target)
        self._relative(source)
        self._relative(target)
        if os.path.lexists(target):
            raise FixError(f"cannot move {source} onto {target}: it exists")
        digest = None if os.path.isdir(source) else sha256_file(source)
        self._append({"event": "move", "path": self._relative(target), "source": self._relative(source),
                      "after": digest})
        if self._pause:
            time.sleep(self._pause)
        os.rename(source, target)
        _fsync_dir(os.path.dirname(target))
        _fsync_dir(os.path.dirname(source))
        self._append({"event": "committed", "path": self._relative(target)})
        self.written += 1

    def mkdir(self, folder: str) -> None:
        """Journaled creation of ``folder`` (and the missing folders above it); undo removes them
        when empty."""
        folder = os.path.abspath(folder)
        self._relative(folder)
        missing = []
        current = folder
        while not os.path.isdir(current):
            missing.append(current)
            current = os.path.dirname(current)
        for path in reversed(missing):
            self._append({"event": "mkdir", "path": self._relative(path)})
            os.mkdir(path)

    def rmdir(self, folder: str) -> None:
        """Journaled removal of an empty folder; undo creates it again."""
        folder = os.path.abspath(folder)
        self._append({"event": "rmdir", "path": self._relative(folder)})
        os.rmdir(folder)
        _fsync_dir(os.path.dirname(folder))

    def close(self) -> None:
        if not self._journal.closed:
            self._append({"event": "end", "written": self.written})
            self._journal.close()
        if self.written == 0:
            _remove_run(self.dir)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _remove_run(directory: str) -> None:
    for folder, dirs, files in os.walk(directory, topdown=False):
        for name in files:
            os.unlink(os.path.join(folder, name))
        for name in dirs:
            os.rmdir(os.path.join(folder, name))
    os.rmdir(directory)


# ---- reading journals and undo --------------------------------------------------------------

@dataclass
class RunInfo:
    """A run found on disk."""

    id: str
    dir: str
    root: str
    command: str
    entries: list[dict] = field(default_factory=list)  # the write entries, in order
    finished: bool = False
    undone: bool = False


def read_journal(journal_path: str) -> RunInfo:
    """Parse a journal; a torn last line (a kill while appending) is ignored: its replace
    cannot have happened, since the line is synced before the replace."""
    directory = os.path.dirname(os.path.abspath(journal_path))
    info = RunInfo(os.path.basename(directory), directory, "", "")
    try:
        with open(journal_path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
    except OSError as exc:
        raise FixError(f"cannot read the journal {journal_path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if number >= len(lines) - 1:
                log.info("ignoring the torn last line of %s", journal_path)
                continue
            raise FixError(f"{journal_path} line {number} is not JSON") from None
        event = entry.get("event")
        if event == "start":
            info.id, info.root, info.command = entry["run"], entry["root"], entry.get("command", "")
        elif event in ("write", "move", "mkdir", "rmdir"):
            info.entries.append(entry)
        elif event == "end":
            info.finished = True
        elif event == "undone":
            info.undone = True
    if not info.root:
        # Journals travel with their data: the root is two folders above the run folder.
        info.root = os.path.dirname(os.path.dirname(os.path.dirname(directory)))
    return info


def find_runs(path: str) -> list[RunInfo]:
    """The runs recorded under ``path`` or the nearest folder above it that has some, oldest first."""
    current = os.path.abspath(path)
    if os.path.isfile(current) and current.endswith(JOURNAL):
        return [read_journal(current)]
    if os.path.isfile(os.path.join(current, JOURNAL)):
        return [read_journal(os.path.join(current, JOURNAL))]
    if os.path.isfile(current):
        current = os.path.dirname(current)
    while True:
        folder = runs_dir(current)
        if os.path.isdir(folder):
            runs = [read_journal(os.path.join(folder, name, JOURNAL)) for name in sorted(os.listdir(folder))
                    if os.path.isfile(os.path.join(folder, name, JOURNAL))]
            if runs:
                return runs
        parent = os.path.dirname(current)
        if parent == current:
            return []
        current = parent


@dataclass
class UndoResult:
    """What :func:`undo` did.

    Attributes:
        run: the run undone.
        restored: files put back to their bytes before the run.
        removed: files the run had created, removed.
        unchanged: files already as before the run (an earlier undo, or a kill before their replace).
        conflicts: (path, reason) for files changed since the run; left alone.
    """

    run: str
    journal: str
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)


def undo(path: str = ".", run: str | None = None, *, force: bool = False) -> UndoResult:
    """Restore the bytes every file had before a fix run.

    Args:
        path: the data root (or a folder inside it) holding ``.labelguard/backups``, a run
            folder, or a ``journal.jsonl``.
        run: the run id (or a unique prefix); default: the latest run not yet undone.
        force: also restore files that changed after the run (their current bytes are lost).

    Raises:
        FixError: no run found, or the run id is unknown.
    """
    runs = find_runs(path)
    if not runs:
        raise FixError(f"no fix runs recorded under {path} (looked for {STATE_DIR}/{BACKUPS}/)")
    if run is not None:
        chosen = [r for r in runs if r.id.startswith(run)]
        if len(chosen) != 1:
            known = ", ".join(r.id for r in runs[-5:])
            raise FixError(f"run {run!r} {'is ambiguous' if chosen else 'not found'}; recent runs: {known}")
        info = chosen[0]
    else:
        pending = [r for r in runs if not r.undone]
        info = pending[-1] if pending else runs[-1]
    for entry in info.entries:
        for name in ("path", "source", "temp"):
            if entry.get(name):
                _in_root(info, entry[name])
    result = UndoResult(info.id, os.path.join(info.dir, JOURNAL))
    for entry in reversed(info.entries):
        _undo_entry(info, entry, result, force)
    with open(result.journal, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": "undone", "restored": len(result.restored),
                                 "removed": len(result.removed),
                                 "conflicts": len(result.conflicts)}, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return result


def _in_root(info: RunInfo, relative: str) -> str:
    """A journal path as an absolute path; FixError for one that leaves the run's root (a journal
    edited by hand or written by something else)."""
    path = os.path.normpath(os.path.join(info.root, relative))
    if os.path.isabs(relative) or not inside(path, os.path.abspath(info.root)):
        raise FixError(f"the journal {info.dir} names {relative!r}, outside its data root {info.root}; "
                       "nothing was undone")
    return path


def _undo_entry(info: RunInfo, entry: dict, result: UndoResult, force: bool) -> None:
    target = _in_root(info, entry["path"])
    event = entry.get("event", "write")
    if event == "move":
        _undo_move(info, entry, target, result, force)
        return
    if event == "mkdir":
        if os.path.isdir(target) and not os.listdir(target):
            os.rmdir(target)
            result.removed.append(target)
        elif os.path.isdir(target):
            result.conflicts.append((target, "a folder the run created is no longer empty; left in place"))
        return
    if event == "rmdir":
        if os.path.isdir(target):
            result.unchanged.append(target)
        else:
            os.makedirs(target)
            result.restored.append(target)
        return
    temp = entry.get("temp")
    if temp:
        leftover = _in_root(info, temp)
        if os.path.exists(leftover):
            os.unlink(leftover)  # a kill between the journal line and the replace
    current = sha256_file(target)
    if current == entry["before"]:
        result.unchanged.append(target)
        return
    if current != entry["after"] and not force:
        state = "deleted" if current is None else "changed"
        result.conflicts.append((target, f"{state} since the run; pass force to restore it anyway"))
        return
    if entry["backup"] is None:
        os.unlink(target)
        result.removed.append(target)
        return
    backup = os.path.join(info.dir, entry["backup"])
    with open(backup, "rb") as handle:
        original = handle.read()
    if sha256_bytes(original) != entry["before"]:
        result.conflicts.append((target, f"its backup {backup} is damaged (hash differs)"))
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    atomic_write(target, original)
    result.restored.append(target)


def _undo_move(info: RunInfo, entry: dict, target: str, result: UndoResult, force: bool) -> None:
    """Move ``target`` back to where the run found it, unless that place is taken again."""
    source = _in_root(info, entry["source"])
    if not os.path.lexists(target):
        if os.path.lexists(source):
            result.unchanged.append(source)  # killed before the rename, or undone already
        else:
            result.conflicts.append((target, "moved or deleted since the run"))
        return
    if os.path.lexists(source):
        result.conflicts.append((source, f"exists again, so {target} cannot move back"))
        return
    if entry.get("after") is not None and sha256_file(target) != entry["after"] and not force:
        result.conflicts.append((target, "changed since the run; pass force to move it back anyway"))
        return
    os.makedirs(os.path.dirname(source), exist_ok=True)
    os.rename(target, source)
    _fsync_dir(os.path.dirname(source))
    result.restored.append(source)
