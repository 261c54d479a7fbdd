"""Where a path lies: the one test of "inside the dataset", as written and with links resolved.

:func:`inside_root` judges a path as it is written, made absolute and normalised (``..``
collapsed, links not followed): where a loader opens it. :func:`resolves_inside` judges
what the file system really reaches once every symbolic link is resolved: what a read or a
write of the path touches. A path a dataset's metadata names (a data.yaml's splits, the
names file of an obj.data) must pass both before it is read; a file ``fix`` writes must
pass the second. URLs of object storage have no links: both tests are the same for them.
:func:`display_path` is a path as a report shows it (:class:`DisplayNames` for many, each
folder worked out once).

The *granted roots* of an operation (:class:`Roots`) are what the user named: an audit's
PATHs (and the dataset a named file belongs to), ``--images``, ``--masks``, ``--list``,
``--color-map``; a fix's paths and ``--root``. They are a context value, as the read limits
are (:func:`applied_roots`, :func:`current_roots`), set by the audit and the fix, carried to
worker processes and applied again when a report reads flagged files. A path written inside
them that leads outside them through a symbolic link (the file is one, or a folder on its
way is) is never opened, listed, walked or hashed (:func:`open_within` and the result
cache's :func:`stat_within` raise :class:`LeadsOutside`, :func:`listing_refused` says so;
whether such a path exists may still be asked: a stat reads nothing of it). A plain
file pays one dictionary look-up of its folder more; only links pay a ``realpath``. Links
that stay inside the granted roots (a git-annex or DVC checkout audited from its repository,
an nnU-Net folder of links) are followed as before. A path written outside them (a
dataset's ``../``, the folder above a named list) is judged by the inside-root policy of
what names it, not here. Outside an audit or a fix no roots are in force, and nothing is
refused.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat
from typing import Iterable, Iterator

from labelguard.core import urls
from labelguard.core.text import clipped, shorten
from labelguard.core.workdir import working_folder


def is_below(path: str, root: str) -> bool:
    """True when the absolute, normalised ``path`` is ``root`` or lies below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def inside_root(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or lies below it (both made absolute and normalised;
    links are not followed, as loaders open the path as written)."""
    return is_below(urls.abspath(path), urls.abspath(root))


def resolves_inside(path: str, root: str) -> bool:
    """True when ``path`` lies inside ``root`` once every symbolic link of both is resolved
    (:func:`inside_root` on the real paths): what reading or writing ``path`` really reaches."""
    if urls.url_scheme(path) or urls.url_scheme(root):
        return inside_root(path, root)
    return inside_root(os.path.realpath(path), os.path.realpath(root))


def display_path(path: str) -> str:
    """``path`` relative to the working folder (:mod:`labelguard.core.workdir`) when inside
    it, else absolute (a URL: as it is, normalised)."""
    if urls.url_scheme(path):
        return urls.abspath(path)
    cwd = working_folder()
    absolute = os.path.normpath(os.path.join(cwd, path))
    if absolute == cwd:
        return "."
    if is_below(absolute, cwd):
        # What os.path.relpath gives for a normalised path below cwd, without its two more
        # abspath calls: a 20,000-file folder spends a tenth of its discovery here.
        return absolute[len(cwd.rstrip(os.sep)) + 1:]
    return absolute


class DisplayNames:
    """:func:`display_path` of paths one at a time, each folder's display path worked out
    once and kept (one entry per folder, never per file)."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        folder, sep, name = path.rpartition(os.sep)
        shown = self.folders.get(folder + sep)
        if shown is None:
            shown = self.folders[folder + sep] = display_path(folder or sep or os.curdir)
        return name if shown == os.curdir else os.path.join(shown, name)


# ---- the granted roots --------------------------------------------------------------------

# Where os.open can refuse to follow a link in the last part of a path (not on Windows,
# where a link is told by an lstat first).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# What open(O_NOFOLLOW) of a link fails with: ELOOP (Linux, macOS), EMLINK (FreeBSD).
_LINK_ERRORS = frozenset({errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP)})
# Folders' verdicts kept by one Roots; past this many the memo starts again.
FOLDERS_KEPT = 65536
# The roots a message names before it counts the rest.
ROOTS_SHOWN = 3
# The most characters of a path a message about a link shows.
PATH_SHOWN = 256


class LeadsOutside(OSError):
    """A path written inside the granted roots leads outside them through a symbolic link:
    ``link`` (the path itself, or a folder on its way) leads to ``target``. Nothing there is
    opened, listed or hashed."""

    def __init__(self, path: str, link: str, target: str, roots: "Roots") -> None:
        super().__init__(errno.EACCES, "a link leading outside the audited data", path)
        self.path, self.link, self.target, self.roots = path, link, target, roots

    def describe(self, refused: str = "not read") -> str:
        """What a finding about ``path`` says: the link (when a folder on its way is the
        link), where it leads, the granted roots, and what was not done."""
        roots = shorten([display_path(root) for root, _ in self.roots.paths], ROOTS_SHOWN)
        where = f"{clipped(display_path(self.target), PATH_SHOWN)}, outside the audited data ({roots})"
        if os.path.abspath(self.link) == os.path.abspath(self.path):
            return f"a link to {where}: {refused}"
        return f"{clipped(display_path(self.link), PATH_SHOWN)} is a link to {where}: {refused}"


class Roots:
    """The granted roots of one operation, each as written (absolute) and as it really is
    (links resolved). Sent by value to worker processes, without the verdicts kept here."""

    __slots__ = ("paths", "_folders", "refused")

    def __init__(self, paths: Iterable[tuple[str, str]] = ()) -> None:
        self.paths: tuple[tuple[str, str], ...] = tuple(sorted(set(paths)))
        # a folder as asked about -> None (what lies in it may be read) or why not
        self._folders: dict[str, LeadsOutside | None] = {}
        # the folders whose walk was refused (absolute) -> why, until the report takes them
        self.refused: dict[str, LeadsOutside] = {}

    def __reduce__(self):
        return Roots, (self.paths,)

    def __repr__(self) -> str:
        return f"Roots({[root for root, _ in self.paths]!r})"

    def grant(self, paths: Iterable[str]) -> None:
        """Add the local ``paths`` (the datasets an audit found for a file it was given)."""
        granted = set(self.paths) | set(_granted(paths))
        if len(granted) != len(self.paths):
            self.paths = tuple(sorted(granted))
            self._folders.clear()

    def written_inside(self, absolute: str) -> bool:
        return any(is_below(absolute, root) for root, _ in self.paths)

    def really_inside(self, real: str) -> bool:
        return any(is_below(real, root) for _, root in self.paths)

    def folder(self, folder: str) -> LeadsOutside | None:
        """Why nothing in ``folder`` (as written) may be read, or None: it lies inside the
        roots as written and outside them once links are resolved. Worked out once a folder."""
        try:
            return self._folders[folder]
        except KeyError:
            pass
        found = None
        absolute = os.path.abspath(folder)
        if self.written_inside(absolute):
            real = os.path.realpath(absolute)
            if real != absolute and not self.really_inside(real):
                link, target = self._link_on_the_way(absolute)
                found = LeadsOutside(folder, link, target, self)
        if len(self._folders) >= FOLDERS_KEPT:
            self._folders.clear()
        self._folders[folder] = found
        return found

    def link(self, path: str) -> tuple[str, LeadsOutside | None]:
        """(real path, why it must not be read or None) of ``path``, a symbolic link in a
        folder that :meth:`folder` passed."""
        real = os.path.realpath(path)
        if self.really_inside(real) or not self.written_inside(os.path.abspath(path)):
            return real, None
        return real, LeadsOutside(path, path, real, self)

    def _link_on_the_way(self, absolute: str) -> tuple[str, str]:
        """(link, its real path): the first folder of ``absolute`` inside the roots as written
        that is a link leading outside them (worked out on a refusal only)."""
        parts = absolute.split(os.sep)
        for end in range(2, len(parts) + 1):
            prefix = os.sep.join(parts[:end])
            if self.written_inside(prefix) and os.path.islink(prefix):
                real = os.path.realpath(prefix)
                if not self.really_inside(real):
                    return prefix, real
        return absolute, os.path.realpath(absolute)


def _granted(paths: Iterable[str]) -> Iterator[tuple[str, str]]:
    for path in paths:
        if path and not urls.in_object_storage(path):
            local = urls.local_path(os.fspath(path))
            yield os.path.abspath(local), os.path.realpath(local)


def granted_roots(paths: Iterable[str]) -> Roots:
    """The granted roots of the ``paths`` the user named (URLs of object storage left out:
    :func:`labelguard.core.storage.grant` says what of those is read)."""
    return Roots(_granted(paths))


_ROOTS: contextvars.ContextVar[Roots | None] = contextvars.ContextVar("labelguard_granted_roots", default=None)


def current_roots() -> Roots | None:
    """The granted roots in force, or None (outside an audit or a fix: nothing is refused)."""
    return _ROOTS.get()


def set_roots(roots: Roots | None) -> None:
    """Make ``roots`` those of this context for good (a worker process's start)."""
    _ROOTS.set(roots)


@contextlib.contextmanager
def applied_roots(roots: Roots | None) -> Iterator[Roots | None]:
    """Apply ``roots`` for the duration of the block (None: nothing is refused)."""
    token = _ROOTS.set(roots)
    try:
        yield roots
    finally:
        _ROOTS.reset(token)


def _folder_of(path: str) -> str:
    """The folder of ``path`` as the key of its verdict: :func:`os.path.dirname`'s answer,
    at half its cost where paths have one separator (it runs once a file)."""
    if os.altsep:
        return os.path.dirname(path)
    cut = path.rfind(os.sep)
    return (path[:cut] or os.sep) if cut >= 0 else ""


def open_within(path: str, flags: int) -> int:
    """``os.open(path, flags)`` of a local path; :class:`LeadsOutside` (an OSError) when the
    granted roots are in force and the path leads outside them through a link. A link that
    stays inside is opened at its target."""
    roots = _ROOTS.get()
    if roots is None:
        return os.open(path, flags)
    refused = roots.folder(_folder_of(path))
    if refused is not None:
        raise LeadsOutside(path, refused.link, refused.target, roots)
    if _NOFOLLOW:
        try:
            return os.open(path, flags | _NOFOLLOW)
        except OSError as exc:
            if exc.errno not in _LINK_ERRORS or not os.path.islink(path):
                raise
    elif not os.path.islink(path):
        return os.open(path, flags)
    real, refused = roots.link(path)
    if refused is not None:
        raise refused
    return os.open(real, flags)


def stat_within(path: str) -> os.stat_result:
    """``os.stat(path)`` (links followed) of a local path; :class:`LeadsOutside` where
    :func:`open_within` refuses it. A plain file costs one lstat, as a stat would."""
    roots = _ROOTS.get()
    if roots is None:
        return os.stat(path)
    refused = roots.folder(_folder_of(path))
    if refused is not None:
        raise LeadsOutside(path, refused.link, refused.target, roots)
    status = os.lstat(path)
    if not stat.S_ISLNK(status.st_mode):
        return status
    real, refused = roots.link(path)
    if refused is not None:
        raise refused
    return os.stat(real)


def listing_refused(folder: str, reported: bool = False) -> bool:
    """True when the granted roots are in force and the local ``folder`` leads outside them
    through a link: it is not listed (the listing functions of :mod:`labelguard.core.storage`
    give it as empty, as the probes of every layout can take it). A ``reported`` folder (one
    that discovery looked into or walked) is kept for the report (:func:`take_refused`)."""
    roots = _ROOTS.get()
    if roots is None or urls.url_scheme(folder):
        return False
    refused = roots.folder(folder.rstrip(os.sep) or os.sep)
    if refused is None:
        return False
    if reported:
        roots.refused.setdefault(os.path.abspath(folder), refused)
    return True


def take_refused(under: str | None = None) -> list[LeadsOutside]:
    """The folders whose walk was refused since last asked (:func:`listing_refused`), each
    once, in path order; with ``under``, only those inside that folder (a dataset's own), the
    others kept for whoever asks next."""
    roots = _ROOTS.get()
    if roots is None or not roots.refused:
        return []
    folders = sorted(folder for folder in roots.refused if under is None or inside_root(folder, under))
    return [roots.refused.pop(folder) for folder in folders]
