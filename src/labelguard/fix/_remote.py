"""Fixing a dataset that lies in object storage: into a local copy, never in the store.

Object storage has no atomic rename, so a fix never writes there (:data:`OBJECT_STORAGE_REFUSAL`).
With ``--out`` naming a local folder, the objects the fix is given are copied there (a prefix
whole, hidden keys left out, each file written to a temporary name and renamed), and the fix
runs on that copy in place, as on any local dataset: journaled, with its originals kept, so
``labelguard fix undo OUT`` restores the copied bytes. The store is only read. A dry run copies
into a private temporary folder, which it deletes, and shows each change under the object's
URL; it writes nothing under ``--out``.

The copy goes to an empty or new folder only: a fix must not mix the objects with files that
were there before. Every local path is the object's key relative to the common prefix of what
was given, and is checked to lie inside the copy before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from labelguard.core import storage
from labelguard.core.paths import applied_roots, granted_roots, inside_root
from labelguard.core.text import plural, verb
from labelguard.fix._base import FixResult
from labelguard.fix._journal import OBJECT_STORAGE_REFUSAL, STATE_DIR, FixError, refuse_object_storage

# Bytes copied at a time from an object to its local file.
CHUNK = 1 << 20


@dataclass
class Staging:
    """The local copy of the objects a fix was given.

    Attributes:
        paths: the local paths the fix runs on, one per path given.
        folder: the copy's root (``--out``, or a temporary folder for a dry run).
        root: the URL the copy's root stands for (the common prefix of the paths given).
        temporary: the folder is deleted by :meth:`close` (a dry run).
        copied: how many files were copied.
    """

    paths: list[str]
    folder: str
    root: str
    temporary: bool
    copied: int = 0
    skipped: list[str] = field(default_factory=list)

    def url_of(self, path: str | None) -> str | None:
        """The object a local path of the copy stands for (other paths unchanged)."""
        if path is None or not inside_root(path, self.folder):
            return path
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.folder))
        return self.root if relative == "." else self.root.rstrip("/") + "/" + relative.replace(os.sep, "/")

    def close(self) -> None:
        if self.temporary:
            shutil.rmtree(self.folder, ignore_errors=True)

    def describe(self, result: FixResult, out: str) -> FixResult:
        """``result`` told in terms of the store: a dry run's changes under the objects' URLs
        (their targets under ``out``), and a note of what was copied where."""
        if self.temporary:
            for change in result.changes:
                change.target = _under(out, self.folder, change.target or change.path)
                change.path = self.url_of(change.path) or change.path
            result.notes = [note.replace(os.path.join(self.folder, ""), self.root.rstrip("/") + "/")
                            .replace(self.folder, self.root) for note in result.notes]
            result.notes.append(
                f"{self.root} is in object storage, which a fix never writes: this dry run planned on a temporary "
                f"copy of its {plural(self.copied, 'file')} (deleted); --apply copies them to {out} and fixes "
                "that copy")
        else:
            result.notes.append(
                f"{self.root} is in object storage, which a fix never writes: its {plural(self.copied, 'file')} "
                f"{verb(self.copied, 'was')} copied "
                f"to {out} and the fix was applied to that copy (`labelguard fix undo {out}` restores the copied "
                f"files); upload it when it is right, leaving out {STATE_DIR}/ (for S3: aws s3 sync {out} "
                f"{self.root} --exclude '{STATE_DIR}/*')")
        if self.skipped:
            result.notes.append(f"{len(self.skipped)} object(s) not copied: their keys lead outside {self.root} "
                                f"({', '.join(self.skipped[:3])})")
        return result


def _under(out: str, folder: str, path: str) -> str:
    """``path`` of the temporary copy at its place under ``out``."""
    if not inside_root(path, folder):
        return path
    return os.path.join(out, os.path.relpath(os.path.abspath(path), os.path.abspath(folder)))


def stage(paths: Sequence[str], out: str | None, apply: bool,
          storage_options: dict | None = None) -> Staging | None:
    """The local copy a fix of ``paths`` runs on, or None when they are all local.

    Raises:
        FixError: some paths are URLs and some not; no ``out`` (or ``out`` in object storage);
            ``out`` holds files already; nothing at a URL.
    """
    remote = [os.fspath(p) for p in paths if storage.in_object_storage(os.fspath(p))]
    if not remote:
        return None
    if len(remote) != len(paths):
        local = next(os.fspath(p) for p in paths if os.fspath(p) not in remote)
        raise FixError("a fix takes local paths or URLs of object storage, not both: "
                       f"{remote[0]} is in object storage and {local} is not")
    if out is None:
        raise FixError(OBJECT_STORAGE_REFUSAL.format(path=remote[0]))
    refuse_object_storage([out])
    out = os.path.abspath(storage.local_path(os.fspath(out)))
    if apply and os.path.isdir(out) and any(True for _ in os.scandir(out)):
        raise FixError(f"--out {out} already holds files: the objects of {remote[0]} are copied into it whole and "
                       "fixed there, so it must be a new or empty folder")
    if apply and os.path.exists(out) and not os.path.isdir(out):
        raise FixError(f"--out {out} is a file, not a folder")
    access = storage.access_for(remote, storage_options)
    # Not a user mistake: ``remote`` is not empty and holds only URLs of object storage, which
    # is what access_for grants access to.
    assert access is not None
    storage.grant(access)
    kinds = {}
    for url in remote:
        if storage.isfile(url):
            kinds[url] = "file"
        elif storage.isdir(url):
            kinds[url] = "dir"
        else:
            raise FixError(f"{url}: {storage.missing_reason(url) or 'no object or prefix there'}")
    parents = [storage.normpath(url).rstrip("/") if kind == "dir" else storage.normpath(url).rsplit("/", 1)[0]
               for url, kind in kinds.items()]
    root = _common_prefix(parents)
    if root is None:
        raise FixError("the URLs of one fix must lie in one bucket: " + ", ".join(remote))
    created = not os.path.exists(out)
    if apply:
        os.makedirs(out, exist_ok=True)
        folder = out
    else:
        folder = tempfile.mkdtemp(prefix="labelguard-fix-")
    staging = Staging([], folder, root, temporary=not apply)
    try:
        for url, kind in kinds.items():
            objects = storage.iter_files(url) if kind == "dir" else [url]
            for name in objects:
                _copy(name, staging)
            staging.paths.append(_local(url, staging) or folder)
    except BaseException:
        # A copy cut short is no dataset: what was copied goes (the folder was new or empty).
        if staging.temporary or created:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            for entry in os.scandir(folder):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    _remove(entry.path)
        raise
    return staging


@contextlib.contextmanager
def local_copy(paths: list[str], out: str | None, apply: bool,
               storage_options: dict | None) -> Iterator[tuple[list[str], str | None, Staging | None]]:
    """(local paths, --out for the fix, staging) of a fix of ``paths``: the paths and ``out``
    as they are, or for URLs of object storage their copy under ``out`` (a temporary one for
    a dry run, deleted after the block), to be fixed in place. The local paths are the
    granted roots of the block (:mod:`labelguard.core.paths`): a link in the data that leads
    outside them is not read, as in the audit."""
    staging = stage(paths, out, apply, storage_options)
    if staging is None:
        with applied_roots(granted_roots(paths)):
            yield paths, out, None
        return
    try:
        with applied_roots(granted_roots(staging.paths)):
            yield staging.paths, None, staging
    finally:
        staging.close()


def fixed_locally(paths: list[str], out: str | None, apply: bool, storage_options: dict | None,
                  fix: Callable[[list[str], str | None, Staging | None], FixResult]) -> FixResult:
    """What every public fix does around its work: ``fix(local paths, --out for the fix,
    staging)`` run on ``paths`` as they are, or for URLs of object storage on their local copy
    (:func:`local_copy`), and its result told in terms of the store when it was computed on a
    copy."""
    with local_copy(paths, out, apply, storage_options) as (local, fix_out, staging):
        result = fix(local, fix_out, staging)
    return staging.describe(result, os.path.abspath(out)) if staging is not None and out else result


def _common_prefix(urls: list[str]) -> str | None:
    """The deepest prefix (``scheme://bucket/a/b``) holding every URL; None across buckets."""
    split = [url.split("/") for url in urls]
    common = []
    for parts in zip(*split):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    if len(common) < 3:  # "s3:", "", "bucket"
        return None
    return "/".join(common)


def _local(url: str, staging: Staging) -> str | None:
    """The local path of ``url`` in the copy; None when it (normalised) lies outside the
    root, or its place would (a name the local file system reads otherwise)."""
    url, root = storage.normpath(url), storage.normpath(staging.root)
    if not inside_root(url, root):
        return None
    if url == root:
        return staging.folder
    parts = url[len(root.rstrip("/")) + 1:].split("/")
    if any(part in ("", ".", "..") or os.sep in part or (os.altsep and os.altsep in part) for part in parts):
        return None
    target = os.path.join(staging.folder, *parts)
    return target if inside_root(target, staging.folder) else None


def _copy(url: str, staging: Staging) -> None:
    """Copy one object to its place in the copy: a temporary name, then a rename."""
    target = _local(url, staging)
    if target is None or target == staging.folder:
        staging.skipped.append(url)
        return
    found = storage.filesystem(url)
    if found is None:
        raise FixError(f"{url} is not a location this fix was given")
    fs, key = found
    temporary = f"{target}.{os.getpid()}.labelguard-copy.tmp"
    try:
        # A key may be both an object and a prefix (s3://b/x and s3://b/x/y): no local folder
        # can hold both, which is an OSError here.
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with fs.open(key, "rb") as source, open(temporary, "xb") as copy:
            shutil.copyfileobj(source, copy, CHUNK)
        os.replace(temporary, target)
    except FileNotFoundError:
        _remove(temporary)
        raise FixError(f"{url} disappeared while it was copied") from None
    except OSError as exc:
        _remove(temporary)
        raise FixError(f"cannot copy {url} to {target}: {exc}") from None
    except Exception as exc:  # the store's own errors (credentials, throttling)
        _remove(temporary)
        raise FixError(f"object storage refused or failed to give {url}: {type(exc).__name__}: {exc}") from None
    staging.copied += 1


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
