"""The one write path of every fix: atomic replaces recorded in a run journal, and undo.

A run lives in ``<root>/.labelguard/backups/<run-id>/``: ``journal.jsonl`` (one JSON object a
line) and ``files/`` (the original bytes of every file the run replaced). Each replace goes:

1. a ``temp`` line names the temporary file (in the target's folder, its name carrying the
   run id) *before* it is created, so undo finds it whenever the run was killed;
2. the new content is written to it and fsynced (the caller verifies it there: re-read,
   re-audit);
3. the original bytes are copied to ``files/`` and fsynced;
4. a ``write`` line (path, backup, content hashes before and after) is appended and fsynced;
5. ``os.replace`` swaps the temp file in, and the folder is fsynced;
6. a ``committed`` line is appended.

A kill at any point leaves every target either old or new (``os.replace`` is atomic), and
the journal names every file that may be new *before* it can be. :func:`undo` compares each
file's current hash with the recorded ones: ``after`` -> restore the backup, ``before`` ->
nothing to do; anything else is a conflict left alone. Then it removes the run's temporary
files. So undo works after a kill -9 (of the run or of undo itself), and running it twice
changes nothing the second time.

A removal (``fix drop``) goes the same way without a temporary file: the bytes are copied to
``files/`` and fsynced, a ``write`` line whose ``after`` is null (no file) is appended, with the
file's permission bits and modification time, then the file is unlinked; undo copies the backup
back with those permissions (never more than ``rwxrwxrwx``: a journal cannot make a file setuid)
and that time.

Renames of files and folders (ImageFolder class folders) are ``move`` lines written before
their ``os.rename``; ``mkdir``/``rmdir`` lines record the folders a run creates or empties.
Undo moves back what sits at the new place while the old place is free, removes the folders
the run created once empty and recreates the ones it removed.

The journal is untrusted input when undo reads it (it may have been edited, or copied from
elsewhere): its paths are relative to the data root, which is where the journal lies
(``<root>/.labelguard/backups/<run>/``), never a root written in it, so a moved or copied
dataset undoes in place. Every path must resolve inside that root once links are resolved
(a backup inside its run's ``files/``), outside ``.labelguard``; a temporary file is removed
only when its name carries the run id. An entry that fails any of this, a malformed line, a
missing or damaged backup are conflicts reported for that entry; undo goes on with the others.

One run or undo at a time holds ``<root>/.labelguard/lock``; another one meanwhile is refused
with a message naming the holder. Runs are therefore never interleaved, and the order of
their ids (a UTC timestamp taken under the lock) is the order they ran and completed in:
undo takes the latest run not yet undone.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass, field
from typing import BinaryIO, Sequence

from labelguard._version import __version__
from labelguard.core import storage
from labelguard.errors import LabelguardError
from labelguard.core.paths import inside_root, resolves_inside
from labelguard.readers.base import ReadError, parse_json

log = logging.getLogger(__name__)

STATE_DIR = ".labelguard"
BACKUPS = "backups"
FILES = "files"
JOURNAL = "journal.jsonl"
LOCK = "lock"
TEMP_MARK = ".lgtmp-"
# Test-only hook: seconds to sleep after each journal entry, before its replace, so a test can
# kill a run at a known point. Never set it in normal use.
PAUSE_ENV = "LABELGUARD_FIX_PAUSE"
# Bytes of a file's name kept in its temporary and backup names (a name has 255 at most).
NAME_KEPT = 80
# The permission bits a removed file gets back on undo, at most: never setuid, setgid or sticky
# (the journal is untrusted when undo reads it).
RESTORED_MODE = 0o777
# Modification times a journal may give a restored file: int64 nanoseconds either side of 1970.
TIME_NS_LIMIT = 2 ** 63
_HASH = re.compile(r"[0-9a-f]{64}")


class FixError(LabelguardError, ValueError):
    """A fix cannot be done as asked (bad map, nothing to undo, conflicting files)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _open_regular(path: str) -> BinaryIO | None:
    """``path`` opened for reading, or None when nothing is there; FixError when it is a
    symbolic link, a folder, a named pipe or a device. Opened without following a link and
    without blocking, and checked on the descriptor, so nothing can be swapped in between."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise FixError(f"{path} is a symbolic link (to {os.readlink(path)}); not followed") from None
        raise FixError(f"cannot open {path}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a named pipe, socket or device)"
        raise FixError(f"{path} is {kind}")
    return os.fdopen(fd, "rb")


def sha256_file(path: str) -> str | None:
    """The SHA-256 of the regular file at ``path``, or None when it does not exist; FixError
    when something else is there (see :func:`_open_regular`)."""
    handle = _open_regular(path)
    if handle is None:
        return None
    digest = hashlib.sha256()
    with handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def copy_file(source: str, target: str, mode: int = 0o666) -> str | None:
    """Copy the regular file ``source`` to the new file ``target`` (fsynced; ``mode`` less the
    umask) and return the SHA-256 of what was copied; None when ``source`` does not exist."""
    handle = _open_regular(source)
    if handle is None:
        return None
    digest = hashlib.sha256()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with handle, os.fdopen(os.open(target, flags, mode), "wb") as out:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
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


def _short(name: str) -> str:
    """``name`` cut to :data:`NAME_KEPT` bytes (whole characters), so that a name built from it
    stays within the 255 bytes a file name may have."""
    return name.encode("utf-8", "surrogateescape")[:NAME_KEPT].decode("utf-8", "ignore")


def temp_path_for(target: str, run_id: str | None = None) -> str:
    """A hidden temporary name in ``target``'s folder that keeps its extension (readers such
    as nibabel decide the format by the name) and carries ``run_id``, so undo can prove the
    file is its own."""
    folder, name = os.path.split(os.path.abspath(target))
    lower = name.lower()
    ext = next((e for e in (".nii.gz", ".npy.h5") if lower.endswith(e)), os.path.splitext(name)[1])
    if len(ext) > 16:
        ext = ""
    stem = _short(name[: len(name) - len(ext)] if ext else name)
    tag = f"{run_id}-" if run_id else ""
    return os.path.join(folder, f".{stem}{TEMP_MARK}{tag}{secrets.token_hex(4)}{ext}")


def is_run_temp(path: str, run_id: str) -> bool:
    """True when ``path`` is named as :func:`temp_path_for` names the temporary files of ``run_id``."""
    pattern = rf"\..*{re.escape(TEMP_MARK + run_id)}-[0-9a-f]{{8}}(\.[^{re.escape(os.sep)}]*)?"
    return re.fullmatch(pattern, os.path.basename(path), re.DOTALL) is not None


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
    ``os.replace``, fsync of the folder); a symbolic link at ``target`` is replaced, never
    written through. Not journaled: fixes go through :class:`Run`."""
    temp = temp_path_for(target)
    try:
        write_fsynced(temp, data)
        _copy_mode(target, temp)
        os.replace(temp, target)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)
    _fsync_dir(os.path.dirname(os.path.abspath(target)))


def _copy_mode(source: str, target: str) -> None:
    try:
        status = os.lstat(source)
        if stat.S_ISREG(status.st_mode):
            os.chmod(target, status.st_mode & 0o7777)
    except OSError:
        pass


def new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def runs_dir(root: str) -> str:
    return os.path.join(os.path.abspath(root), STATE_DIR, BACKUPS)


def _state_folder(root: str, *parts: str) -> str:
    """``<root>/.labelguard/<parts>``, created where missing; FixError when one of them is a
    symbolic link or not a folder, so backups, journals and the lock never land outside the
    data through a planted link."""
    path = os.path.abspath(root)
    os.makedirs(path, exist_ok=True)
    for part in (STATE_DIR, *parts):
        path = os.path.join(path, part)
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise FixError(f"{path} is not a plain folder (a symbolic link or a file); labelguard keeps its "
                           "backups and journals only in a folder of its own inside the data")
    return path


class DataLock:
    """The lock of one data root (``<root>/.labelguard/lock``), held by a run or an undo.

    Raises:
        FixError: another run or undo holds it (the message names it), or it cannot be taken.
    """

    def __init__(self, root: str, what: str) -> None:
        self.path = os.path.join(_state_folder(root), LOCK)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            self._fd: int | None = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise FixError(f"cannot open the lock {self.path}: {exc.strerror or exc}") from None
        try:
            _lock(self._fd)
        except BlockingIOError:
            holder = self._holder(self._fd)
            os.close(self._fd)
            self._fd = None
            raise FixError(f"another labelguard fix is running on this data ({holder}; lock {self.path}); "
                           "wait for it to end, then run this again") from None
        except OSError as exc:
            os.close(self._fd)
            self._fd = None
            raise FixError(f"cannot lock {self.path}: {exc.strerror or exc}") from None
        record = {"pid": os.getpid(), "what": what, "since": _dt.datetime.now(_dt.timezone.utc).isoformat()}
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, json.dumps(record).encode("utf-8"))

    def _holder(self, fd: int) -> str:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            record = parse_json(os.read(fd, 4096).decode("utf-8"), "lock file")
            return f"pid {int(record['pid'])}: {str(record['what'])[:200]}, since {str(record['since'])[:40]}"
        except (OSError, ValueError, ReadError, KeyError, TypeError):
            return "a process that has not said what it runs yet"

    def release(self) -> None:
        if self._fd is not None:
            _unlock(self._fd)
            os.close(self._fd)
            self._fd = None


try:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
except ImportError:  # Windows
    import msvcrt

    def _lock(fd: int) -> None:
        try:
            # The stubs hold these only for Windows; mypy checks this branch as on the machine it runs on.
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            raise BlockingIOError("locked") from None

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]  # Windows only, as above


class Run:
    """One applied fix run: every file it replaces goes through :meth:`replace`.

    Creating a run takes the data root's lock (refused while another run or an undo holds it);
    :meth:`close` releases it.

    Args:
        root: the data root the journal's paths are relative to; the run's folder is
            ``<root>/.labelguard/backups/<run-id>/``.
        command: what was run, for the journal and ``fix undo --list``.
    """

    def __init__(self, root: str, command: str) -> None:
        self.root = os.path.abspath(root)
        self._real_root = os.path.realpath(self.root)
        self._lock = DataLock(self.root, command)
        try:
            self.id = new_run_id()
            self.dir = os.path.join(_state_folder(self.root, BACKUPS), self.id)
            self.journal_path = os.path.join(self.dir, JOURNAL)
            self.written = 0
            os.mkdir(self.dir)
            os.mkdir(os.path.join(self.dir, FILES))
            self._journal = open(self.journal_path, "a", encoding="utf-8")
        except BaseException:
            self._lock.release()
            raise
        self._pause = float(os.environ.get(PAUSE_ENV) or 0)
        self._append({"event": "start", "run": self.id, "command": command, "format": 2,
                      "tool": f"labelguard {__version__}", "time": _dt.datetime.now(_dt.timezone.utc).isoformat()})

    def _append(self, entry: dict) -> None:
        self._journal.write(json.dumps(entry, sort_keys=True) + "\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())

    def _relative(self, path: str) -> str:
        """``path`` relative to the root, its folder's links resolved, so the journal travels with
        the data; FixError for a path that really lies outside the root or in ``.labelguard``."""
        path = os.path.abspath(path)
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if not inside_root(real, self._real_root) or real == self._real_root:
            raise FixError(f"{path} is outside the data root {self.root} (links resolved: {real}); "
                           "a fix run writes only inside it")
        relative = os.path.relpath(real, self._real_root)
        if relative.split(os.sep)[0] == STATE_DIR:
            raise FixError(f"{path} is in labelguard's own folder {STATE_DIR}; a fix run does not write there")
        return relative

    def new_temp(self, target: str) -> str:
        """A temporary name beside ``target`` for its new content, journaled before the file is
        created, so that undo removes it if the run is killed while writing it."""
        temp = temp_path_for(target, self.id)
        self._append({"event": "temp", "path": self._relative(temp)})
        return temp

    def replace(self, target: str, temp: str) -> None:
        """Swap the verified, fsynced ``temp`` (from :meth:`new_temp`) in for ``target``, backing
        up and journaling first."""
        target = os.path.abspath(target)
        relative = self._relative(target)
        after = sha256_file(temp)
        backup_name = f"{FILES}/{self.written:06d}-{_short(os.path.basename(target))}"
        before = copy_file(target, os.path.join(self.dir, backup_name), 0o600)
        backup: str | None = backup_name
        if before is None:
            backup = None
            os.makedirs(os.path.dirname(target), exist_ok=True)
        else:
            _copy_mode(target, temp)
        self._append({"event": "write", "path": relative, "backup": backup, "before": before, "after": after,
                      "temp": self._relative(temp)})
        if self._pause:
            time.sleep(self._pause)
        os.replace(temp, target)
        _fsync_dir(os.path.dirname(target))
        self._append({"event": "committed", "path": relative})
        self.written += 1

    def write_bytes(self, target: str, data: bytes) -> None:
        """Journaled atomic write of ``data`` to ``target``."""
        self._relative(target)
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        temp = self.new_temp(target)
        try:
            write_fsynced(temp, data)
            self.replace(target, temp)
        finally:
            if os.path.lexists(temp):
                os.unlink(temp)

    def remove(self, target: str) -> None:
        """Journaled removal of the regular file ``target``: its bytes go to the run's ``files/``
        first (copied and fsynced), then a ``write`` line with no ``after`` (no file) that keeps
        its permission bits and modification time, then the unlink; undo restores the bytes,
        the permissions and the time. FixError when no regular file is there."""
        target = os.path.abspath(target)
        relative = self._relative(target)
        backup = f"{FILES}/{self.written:06d}-{_short(os.path.basename(target))}"
        try:
            status = os.lstat(target)
        except FileNotFoundError:
            raise FixError(f"{target} does not exist; nothing to remove") from None
        before = copy_file(target, os.path.join(self.dir, backup), 0o600)
        if before is None:
            raise FixError(f"{target} does not exist; nothing to remove")
        self._append({"event": "write", "path": relative, "backup": backup, "before": before, "after": None,
                      "mode": stat.S_IMODE(status.st_mode) & RESTORED_MODE, "mtime_ns": status.st_mtime_ns})
        if self._pause:
            time.sleep(self._pause)
        os.unlink(target)
        _fsync_dir(os.path.dirname(target))
        self._append({"event": "committed", "path": relative})
        self.written += 1

    def move(self, source: str, target: str) -> None:
        """Journaled ``os.rename`` of a file or folder onto a path that does not exist (atomic on
        one file system); undo moves it back."""
        source, target = os.path.abspath(source), os.path.abspath(target)
        relative_source, relative = self._relative(source), self._relative(target)
        if os.path.lexists(target):
            raise FixError(f"cannot move {source} onto {target}: it exists")
        digest = None if os.path.isdir(source) or os.path.islink(source) else sha256_file(source)
        self._append({"event": "move", "path": relative, "source": relative_source, "after": digest})
        if self._pause:
            time.sleep(self._pause)
        os.rename(source, target)
        _fsync_dir(os.path.dirname(target))
        _fsync_dir(os.path.dirname(source))
        self._append({"event": "committed", "path": relative})
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
        try:
            if not self._journal.closed:
                self._append({"event": "end", "written": self.written,
                              "time": _dt.datetime.now(_dt.timezone.utc).isoformat()})
                self._journal.close()
            if self.written == 0:
                _remove_run(self.dir)
        finally:
            self._lock.release()

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

# The fields each kind of line must have, with the types they may hold.
_OPTIONAL_TEXT = (str, type(None))
_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "write": {"path": (str,), "backup": _OPTIONAL_TEXT, "before": _OPTIONAL_TEXT, "after": _OPTIONAL_TEXT},
    "move": {"path": (str,), "source": (str,), "after": _OPTIONAL_TEXT},
    "mkdir": {"path": (str,)},
    "rmdir": {"path": (str,)},
    "temp": {"path": (str,)},
    "undo-temp": {"path": (str,)},
}


@dataclass
class RunInfo:
    """A run found on disk.

    Attributes:
        id: the run id (the name of its folder).
        dir: the run folder.
        root: the data root, where the journal lies (three folders above it).
        entries: the write, move, mkdir and rmdir entries, in order, each checked for its fields.
        temps: the temporary files the run (or an undo of it) named, relative to the root.
        problems: (journal:line, why) for lines that could not be used.
        undone: the last undo of the run restored everything; partly_undone: it met conflicts.
    """

    id: str
    dir: str
    root: str
    command: str
    entries: list[dict] = field(default_factory=list)
    temps: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    finished: bool = False
    undone: bool = False
    partly_undone: bool = False


def _run_root(directory: str) -> str:
    """The data root of the run folder ``directory`` (``<root>/.labelguard/backups/<run>``)."""
    backups = os.path.dirname(directory)
    state = os.path.dirname(backups)
    if os.path.basename(backups) != BACKUPS or os.path.basename(state) != STATE_DIR:
        raise FixError(f"{directory} is not a run folder (DATA/{STATE_DIR}/{BACKUPS}/RUN); undo reads a journal "
                       "where its run left it, since the data root is the folder around it")
    return os.path.dirname(state)


def read_journal(journal_path: str) -> RunInfo:
    """Parse a journal. Lines that are not JSON or lack what their event needs are listed in
    ``problems`` (reported, never followed); a torn last line (a kill while appending) is
    ignored: its replace cannot have happened, since each line is synced before it."""
    directory = os.path.dirname(os.path.abspath(journal_path))
    info = RunInfo(os.path.basename(directory), directory, _run_root(directory), "")
    handle = _open_regular(journal_path)
    if handle is None:
        raise FixError(f"no journal at {journal_path}")
    with handle:
        data = handle.read()
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"{journal_path}:{number}"
        try:
            entry = parse_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ReadError) as exc:
            if number == len(lines):
                log.info("ignoring the torn last line of %s", journal_path)
            else:
                reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
                info.problems.append((where, f"the journal line is not JSON labelguard reads ({reason}); "
                                             "whatever it recorded is not undone"))
            continue
        event = entry.get("event") if isinstance(entry, dict) else None
        wrong = _wrong_fields(entry, event)
        if wrong:
            info.problems.append((where, f"the journal line {wrong}; whatever it recorded is not undone"))
            continue
        entry["line"] = where
        if event == "start":
            info.command = str(entry.get("command", ""))
        elif event in ("temp", "undo-temp"):
            info.temps.append(entry["path"])
        elif event in ("write", "move", "mkdir", "rmdir"):
            info.entries.append(entry)
            if event == "write" and isinstance(entry.get("temp"), str):
                info.temps.append(entry["temp"])
        elif event == "end":
            info.finished = True
        elif event == "undone":
            # Only an undo without conflicts undid the run; after one with conflicts it is
            # still the run to undo (resolve them, or force).
            info.undone = entry.get("conflicts") == 0
            info.partly_undone = not info.undone
    return info


def _wrong_fields(entry, event) -> str | None:
    """What is wrong with a parsed journal line, or None."""
    if not isinstance(event, str):
        return "has no event"
    for name, types in _FIELDS.get(event, {}).items():
        value = entry.get(name)
        if name not in entry or not isinstance(value, types) or (isinstance(value, str) and "\0" in value):
            return f"({event}) has no valid {name!r}"
    for name in ("before", "after"):
        value = entry.get(name) if name in _FIELDS.get(event, {}) else None
        if value is not None and not _HASH.fullmatch(value):
            return f"({event}) has a {name!r} that is no SHA-256"
    if event == "write":
        for name, low, high, what in (("mode", 0, RESTORED_MODE, "permission mode"),
                                      ("mtime_ns", -TIME_NS_LIMIT, TIME_NS_LIMIT - 1, "time in nanoseconds")):
            value = entry.get(name)
            if name in entry and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
                return f"(write) has a {name!r} that is no {what}"
    return None


def find_runs(path: str) -> list[RunInfo]:
    """The runs recorded under ``path`` or the nearest folder above it that has some, oldest first."""
    current = os.path.abspath(path)
    if os.path.isfile(current) and os.path.basename(current) == JOURNAL:
        return [read_journal(current)]
    if os.path.isfile(os.path.join(current, JOURNAL)):
        return [read_journal(os.path.join(current, JOURNAL))]
    if os.path.isfile(current):
        current = os.path.dirname(current)
    while True:
        folder = runs_dir(current)
        if os.path.isdir(folder) and not os.path.islink(folder):
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
        removed: files the run had created, and its temporary files, removed.
        unchanged: files already as before the run (an earlier undo, or a kill before their replace).
        conflicts: (path or journal line, reason) for what was left alone: files changed since
            the run, missing or damaged backups, journal entries that name a path outside the
            data or are malformed.
    """

    run: str
    journal: str
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)


# Why a fix never writes object storage, said for a PATH that is a URL.
OBJECT_STORAGE_REFUSAL = (
    "labelguard fix never writes object storage, and {path} is there: it has no atomic rename, and a fix replaces "
    "each file atomically, keeps its original and journals the change so that `labelguard fix undo` restores it. "
    "`fix remap`, `fix rename`, `fix colors` and `fix list` (with --root) take --out LOCAL_FOLDER: the dataset is "
    "copied there and the copy is fixed (undoable), for you to upload when it is right. `fix undo` takes the local "
    "copy; or copy the dataset yourself (for S3: aws s3 sync {path} ./copy), fix the copy, then upload it")


def refuse_object_storage(paths: Sequence[str | os.PathLike]) -> None:
    """FixError when one of ``paths`` is a URL of object storage (a ``file://`` URL is a path)."""
    for path in paths:
        if storage.in_object_storage(os.fspath(path)):
            raise FixError(OBJECT_STORAGE_REFUSAL.format(path=os.fspath(path)))


def undo(path: str = ".", run: str | None = None, *, force: bool = False) -> UndoResult:
    """Restore the bytes every file had before a fix run.

    Args:
        path: the data root (or a folder inside it) holding ``.labelguard/backups``, a run
            folder, or a ``journal.jsonl``.
        run: the run id (or a unique prefix); default: the latest run not yet undone (an undo
            that met conflicts leaves its run to be undone again).
        force: also restore files that changed after the run (their current bytes are lost).

    Raises:
        FixError: no run found, the run id is unknown, or another fix holds the data's lock.
    """
    refuse_object_storage([path])
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
    lock = DataLock(info.root, f"fix undo {info.id}")
    try:
        return _Undo(info, force).run()
    finally:
        lock.release()


class _Undo:
    """One undo of one run: every entry checked, done or reported as a conflict."""

    def __init__(self, info: RunInfo, force: bool) -> None:
        self.info = info
        self.force = force
        self.real_root = os.path.realpath(info.root)
        self.result = UndoResult(info.id, os.path.join(info.dir, JOURNAL))
        self.result.conflicts.extend(info.problems)

    def run(self) -> UndoResult:
        for entry in reversed(self.info.entries):
            try:
                self._undo_entry(entry)
            except (FixError, OSError) as exc:
                where = entry.get("path") if isinstance(entry.get("path"), str) else entry["line"]
                reason = str(exc) if isinstance(exc, FixError) else f"{exc.strerror or exc}"
                self.result.conflicts.append((where, f"not undone: {reason}"))
        self._remove_temps()
        self._append({"event": "undone", "restored": len(self.result.restored), "removed": len(self.result.removed),
                      "conflicts": len(self.result.conflicts)})
        return self.result

    def _append(self, entry: dict) -> None:
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(self.result.journal, flags), "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _path(self, relative: str) -> str:
        """A journal path as an absolute path in the data; FixError for one that leaves the root
        (before or after resolving links) or lies in ``.labelguard``."""
        if "\0" in relative:
            raise FixError(f"the journal names {relative!r}, which no file can be named")
        path = os.path.normpath(os.path.join(self.info.root, relative))
        if os.path.isabs(relative) or not inside_root(path, self.info.root) or path == os.path.normpath(self.info.root):
            raise FixError(f"the journal names {relative!r}, outside the data root {self.info.root}")
        real = os.path.realpath(path)
        if not inside_root(real, self.real_root):
            raise FixError(f"{relative!r} leads outside the data root {self.info.root} through a symbolic link "
                           f"({real})")
        if os.path.relpath(real, self.real_root).split(os.sep)[0] == STATE_DIR:
            raise FixError(f"the journal names {relative!r}, inside labelguard's own folder {STATE_DIR}")
        return path

    def _backup(self, relative: str) -> str:
        """The backup file ``relative`` names, checked to lie in this run's ``files/`` folder."""
        files = os.path.join(self.info.dir, FILES)
        path = os.path.normpath(os.path.join(self.info.dir, relative))
        if "\0" in relative or os.path.isabs(relative) or os.path.dirname(path) != files \
                or not resolves_inside(path, files):
            raise FixError(f"the journal names the backup {relative!r}, outside the run's {FILES}/ folder")
        return path

    def _undo_entry(self, entry: dict) -> None:
        target = self._path(entry["path"])
        event = entry["event"]
        result = self.result
        if event == "move":
            self._undo_move(entry, target)
        elif event == "mkdir":
            if _is_folder(target) and not os.listdir(target):
                os.rmdir(target)
                result.removed.append(target)
            elif _is_folder(target):
                result.conflicts.append((target, "a folder the run created is no longer empty; left in place"))
        elif event == "rmdir":
            if _is_folder(target):
                result.unchanged.append(target)
            else:
                os.makedirs(target)
                result.restored.append(target)
        else:
            self._undo_write(entry, target)

    def _undo_write(self, entry: dict, target: str) -> None:
        result = self.result
        current = sha256_file(target)
        if current == entry["before"]:
            result.unchanged.append(target)
            return
        if current != entry["after"] and not self.force:
            state = "deleted" if current is None else "changed"
            result.conflicts.append((target, f"{state} since the run; pass force to restore it anyway"))
            return
        if entry["backup"] is None:
            if current is not None:
                os.unlink(target)
                result.removed.append(target)
            return
        backup = self._backup(entry["backup"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temp = temp_path_for(target, self.info.id)
        self._append({"event": "undo-temp", "path": os.path.relpath(temp, self.info.root)})
        try:
            copied = copy_file(backup, temp)
            if copied is None:
                result.conflicts.append((target, f"its backup {backup} is missing; not restored"))
                return
            if copied != entry["before"]:
                result.conflicts.append((target, f"its backup {backup} is damaged (its hash differs from the "
                                                 "journal's); not restored"))
                return
            _copy_mode(target, temp)
            _restore_status(entry, temp)
            os.replace(temp, target)
            _fsync_dir(os.path.dirname(target))
        finally:
            if os.path.lexists(temp):
                os.unlink(temp)
        result.restored.append(target)

    def _undo_move(self, entry: dict, target: str) -> None:
        """Move ``target`` back to where the run found it, unless that place is taken again."""
        result = self.result
        source = self._path(entry["source"])
        if not os.path.lexists(target):
            if os.path.lexists(source):
                result.unchanged.append(source)  # killed before the rename, or undone already
            else:
                result.conflicts.append((target, "moved or deleted since the run"))
            return
        if os.path.lexists(source):
            result.conflicts.append((source, f"exists again, so {target} cannot move back"))
            return
        if entry.get("after") is not None and sha256_file(target) != entry["after"] and not self.force:
            result.conflicts.append((target, "changed since the run; pass force to move it back anyway"))
            return
        os.makedirs(os.path.dirname(source), exist_ok=True)
        os.rename(target, source)
        _fsync_dir(os.path.dirname(source))
        result.restored.append(source)

    def _remove_temps(self) -> None:
        """Remove the temporary files the run or an undo of it left (a kill while writing one);
        only regular files whose name carries the run id, inside the data."""
        for relative in dict.fromkeys(self.info.temps):
            try:
                path = self._path(relative)
            except FixError as exc:
                self.result.conflicts.append((relative, f"temporary file not removed: {exc}"))
                continue
            try:
                status = os.lstat(path)
            except FileNotFoundError:
                continue
            if not is_run_temp(path, self.info.id):
                self.result.conflicts.append((path, f"named as a temporary file but without the run id "
                                                    f"{self.info.id}; not removed"))
                continue
            if stat.S_ISREG(status.st_mode):
                os.unlink(path)
                self.result.removed.append(path)
            else:
                self.result.conflicts.append((path, "a temporary name of the run that is not a regular file; "
                                                    "not removed"))


def _restore_status(entry: dict, temp: str) -> None:
    """Give the restored copy ``temp`` of a removed file the permission bits and modification
    time its journal line kept (a removal's; other writes restore onto the file that is there,
    whose mode the copy took)."""
    if "mode" in entry:
        os.chmod(temp, entry["mode"] & RESTORED_MODE)
    if "mtime_ns" in entry:
        os.utime(temp, ns=(time.time_ns(), entry["mtime_ns"]))


def _is_folder(path: str) -> bool:
    """A real folder at ``path`` (not a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
