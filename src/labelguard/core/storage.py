"""Where a dataset's files live: this machine's file system, or object storage behind an
fsspec URL (``s3://bucket/prefix``, ``gs://...``, ``memory://...``).

The layouts and readers ask these functions what the ``os`` module would tell them
(:func:`isfile`, :func:`isdir`, :func:`scandir`, :func:`walk`...). A path that is no URL
goes straight to ``os``: the same call, the same answer, so a local audit is what it was. A
URL is answered by fsspec, and only below a *location* that the caller granted
(:func:`grant`): the scheme and bucket of a PATH, ``--images``, ``--masks`` or ``--list`` it
gave, with the storage options it gave. Any other URL (one that a list entry, an annotation
or a joined name spells) is a path that does not exist: the data never makes labelguard
reach another bucket, host or protocol, nor a local file from a remote dataset.

Path arithmetic on URLs (:func:`normpath`, :func:`abspath` of :mod:`labelguard.core.urls`,
:func:`relpath`) works on the part after the scheme as on a POSIX path, and never climbs
above the bucket, so the one inside-root test of :mod:`labelguard.core.paths` holds for URLs
as for paths.

Object storage has no links, no named pipes and no devices: an object is a regular file,
a prefix with objects below it is a folder. Reading an object fetches it whole
(:func:`read_object`), after its size is checked against the read limits: masks and
annotation files are small, and one request per file is what object storage serves fastest.
The result cache tells one version of an object from another by its *validator*
(:func:`validator`): the store's content tag (S3's ETag, which changes whenever a byte does;
GCS's MD5 or generation), never its modification time; without one, by a hash of its bytes.

A task that reads object storage carries its :class:`RemoteAccess` in its options, and
unpickling the task grants it in the process that runs it (a worker of the local pool, a
Dask worker): the filesystem is opened there, lazily, on first use.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import heapq
import json
import logging
import os
import posixpath
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from labelguard.core import paths
# The pure URL arithmetic lives below both this module and core.paths; callers ask it here.
from labelguard.core.urls import abspath, in_object_storage, local_path, normpath, url_scheme  # noqa: F401

log = logging.getLogger(__name__)

# Fields of an object's listing that change whenever its bytes do (a strong validator).
CONTENT_FIELDS = ("ETag", "etag", "md5Hash", "content_md5", "generation", "VersionId", "version_id")
# Entries of one listing handed on at a time while a large prefix is listed page by page.
LISTING_CHUNK = 1000
# While a discovery keeps listings (:func:`listings_kept`): the most entries it holds in all
# with their names looked up at once; past it, listings are kept packed (names only, for
# the probes that walk them) up to KEPT_BYTES in memory in all, then in a temporary file up
# to SPILLED_BYTES in all (a flat prefix of 10^8 keys is some 3 GB there, where listing it
# again for each of the layouts' probes would cost a dozen listings of hours each); a prefix
# whose listing would pass that too is listed again each time it is asked for.
KEPT_ENTRIES = 20_000
KEPT_BYTES = 64 << 20
SPILLED_BYTES = 16 << 30
# A spilled listing is written and read back in pieces of this size.
SPILL_CHUNK = 1 << 20


class StorageError(Exception):
    """Object storage refused or failed a request; the message says why (a finding's text)."""


@dataclass(frozen=True)
class RemoteAccess:
    """What a caller allowed on object storage: the ``locations`` (``scheme://bucket``)
    below which URLs may be read, and the fsspec storage ``options`` (JSON) the
    filesystems are opened with. Travels by value to every process that reads."""

    locations: tuple[str, ...]
    options: str = field(default="{}", repr=False)  # may hold credentials: never shown

    def __setstate__(self, state: dict) -> None:
        # Unpickled in a worker (a task's option): the worker may read what the caller granted.
        self.__dict__.update(state)
        grant(self)


# location -> the access that granted it, in this process
_GRANTED: dict[str, RemoteAccess] = {}
# (process, scheme, options) -> filesystem: a forked worker opens its own (a filesystem's
# event loop thread does not survive a fork).
_FILESYSTEMS: dict[tuple[int, str, str], Any] = {}


def location(url: str) -> str:
    """``scheme://bucket`` of a URL: what :func:`grant` allows reading below."""
    normal = normpath(url)
    scheme, _, rest = normal.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def access_for(paths: list[str], options: dict | None = None) -> RemoteAccess | None:
    """The access to grant for the URLs among ``paths`` (None when there is none)."""
    locations = tuple(sorted({location(p) for p in paths if in_object_storage(p)}))
    if not locations:
        return None
    return RemoteAccess(locations, json.dumps(options or {}, sort_keys=True))


def grant(access: RemoteAccess) -> None:
    """Allow reading below ``access.locations`` in this process, with its options."""
    for place in access.locations:
        _GRANTED[place] = access


def revoke(access: RemoteAccess) -> None:
    """Undo :func:`grant`. An audit keeps its grant for the life of the process: its report
    reads flagged objects again (the HTML report's pictures)."""
    for place in access.locations:
        if _GRANTED.get(place) == access:
            del _GRANTED[place]


# ---- path arithmetic ------------------------------------------------------------------------


def isabs(path: str) -> bool:
    return True if url_scheme(path) else os.path.isabs(path)


def relpath(path: str, start: str = os.curdir) -> str:
    """:func:`os.path.relpath`; of two URLs on one scheme, the POSIX relative path between them."""
    scheme = url_scheme(path)
    if scheme is None and url_scheme(start) is None:
        return os.path.relpath(path, start)
    if scheme is None or url_scheme(start) != scheme:
        return abspath(path)
    cut = len(scheme) + 3
    return posixpath.relpath("/" + normpath(path)[cut:], "/" + normpath(start)[cut:])


def is_granted_url(path: Any) -> bool:
    """True for a URL below a granted location: one that is read from object storage (a URL
    in object storage that was not granted is a path that does not exist;
    :func:`in_object_storage` says whether a path names object storage at all)."""
    return url_scheme(path) is not None and _access(path) is not None


def _access(url: str) -> RemoteAccess | None:
    return _GRANTED.get(location(url))


# ---- the filesystem of a URL -------------------------------------------------------------------

def filesystem(url: str):
    """(fsspec filesystem, path in it) of a granted URL; None for a URL not granted."""
    access = _access(url)
    if access is None:
        return None
    scheme = url_scheme(url)
    assert scheme is not None
    key = (os.getpid(), scheme, access.options)
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        from labelguard._optional import require

        fsspec = require("fsspec", f"read {scheme}:// URLs")
        options = json.loads(access.options)
        # Every look is the store's state now: a listing kept from earlier would give an
        # object's old tag, and the result cache would take a changed file for unchanged.
        options.setdefault("use_listings_cache", False)
        try:
            fs = fsspec.filesystem(scheme, **options)
        except ImportError as exc:  # the backend of this scheme (s3fs, gcsfs...) is missing
            from labelguard.errors import MissingDependency

            raise MissingDependency(f"reading {scheme}:// URLs needs fsspec's backend for it: {exc} "
                                    "(for s3://: pip install 'labelguard[s3]')") from exc
        _FILESYSTEMS[key] = fs
    return fs, fs._strip_protocol(normpath(url))


def _info(url: str) -> dict | None:
    """The listing entry of a granted URL (``type``, ``size``, validators), or None when
    nothing is there or it is not granted."""
    found = filesystem(url)
    if found is None:
        return None
    fs, path = found
    try:
        return fs.info(path)
    except Exception:  # nothing there, or the store cannot be asked: a path that gives nothing
        return None


def info(path: str) -> dict | None:
    """The listing entry of a granted URL, or None (see :func:`_info`)."""
    return _info(path) if url_scheme(path) else None


def missing_reason(url: str) -> str | None:
    """None when something (an object, or a prefix with objects) is at a granted ``url``,
    else why not, in words: nothing there, or the store's error."""
    found = filesystem(url)
    if found is None:
        return "not a location this audit was given"
    fs, path = found
    try:
        fs.info(path)
    except FileNotFoundError:
        return "no object or prefix there"
    except Exception as exc:  # credentials, endpoint, permissions: the store's own words
        return f"object storage refused or failed the request: {type(exc).__name__}: {exc}"
    return None


# ---- listings kept while a dataset is discovered -------------------------------------------

class _Kept:
    """The listings (and looks at single URLs) of object storage kept for one discovery."""

    def __init__(self) -> None:
        self.listings: dict[str, "list[RemoteEntry] | _PackedListing"] = {}
        self.kinds: dict[str, str | None] = {}  # URL -> "file", "directory" or None (nothing)
        self.folders: dict[str, dict[str, bool]] = {}  # a kept listing's names -> is a folder
        self.entries = 0
        self.packed_bytes = 0
        self.spilled_bytes = 0
        self.local: dict[str, _FolderIndex] = {}  # a local folder -> its scan
        self.local_entries = 0  # names kept in those

    def close(self) -> None:
        """Delete the temporary files of the listings kept in them."""
        for listing in self.listings.values():
            if isinstance(listing, _PackedListing):
                listing.close()


class _PackedListing:
    """A long listing kept at a few bytes an entry (a prefix of a million masks in some 30 MB,
    not the 250 MB of its entries): each name packed in order after a byte saying whether it
    is a folder. Iterated as the listing it keeps; its names are not looked up (a look at one
    URL asks the store, once). Once :meth:`spill` is called the packed bytes go to a temporary
    file, deleted by :meth:`close`, and only a piece of :data:`SPILL_CHUNK` is held."""

    __slots__ = ("base", "packed", "file", "written")

    def __init__(self, base: str) -> None:
        self.base = base
        self.packed = bytearray()
        self.file: BinaryIO | None = None
        self.written = 0  # bytes in the file

    def add(self, entry: RemoteEntry) -> None:
        """Keep ``entry``; OSError when a spilled listing cannot be written."""
        self.packed += (b"1" if entry.is_dir() else b"0") + entry.name.encode("utf-8", "surrogateescape") + b"\0"
        if self.file is not None and len(self.packed) >= SPILL_CHUNK:
            self._flush()

    @property
    def size(self) -> int:
        """Bytes held in memory."""
        return len(self.packed)

    def spill(self) -> None:
        """Keep the listing in a temporary file from now on; OSError when none can be made."""
        import tempfile  # only for prefixes of millions of keys

        self.file = tempfile.TemporaryFile(prefix="labelguard-listing-")
        self._flush()

    def _flush(self) -> None:
        assert self.file is not None
        self.file.write(self.packed)
        self.written += len(self.packed)
        self.packed = bytearray()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
            self.written = 0

    def __iter__(self) -> Iterator[RemoteEntry]:
        for record in self._records():
            name = record[1:].decode("utf-8", "surrogateescape")
            yield RemoteEntry(name, self.base + name, record[:1] == b"1")

    def _records(self) -> Iterator[bytes]:
        """Each entry's packed bytes, from the pieces of :meth:`_pieces` (an entry may span two)."""
        rest = b""
        for piece in self._pieces():
            records = (rest + piece).split(b"\0")
            rest = records.pop()
            yield from records

    def _pieces(self) -> Iterator[bytes]:
        """The packed bytes: the file's, a piece at a time, then those in memory."""
        if self.file is not None:
            self.file.seek(0)
            for _ in range(0, self.written, SPILL_CHUNK):
                yield self.file.read(SPILL_CHUNK)
            self.file.seek(0, os.SEEK_END)
        yield bytes(self.packed)


class _FolderIndex:
    """One scan of a local folder, kept while a discovery runs: the names of its entries in
    groups, its sub-folders in one (``/``) and its other entries by extension (``.json``,
    lower case; ``""`` without one), each name after a letter saying what it is (``d`` a
    folder walked into, ``l`` a link to a folder, ``f`` a regular file, ``o`` anything else:
    a broken link, a socket). The layouts' probes ask a folder of 100,000 masks for its JSON,
    XML, table or text files and its sub-folders a dozen times: one scan answers them all.
    The names kept by a discovery's indexes stay within :data:`KEPT_ENTRIES`: past it the
    largest group of any of them (a folder's masks) is dropped, and asking for a dropped
    group scans the folder again."""

    __slots__ = ("groups", "dropped", "whole")

    def __init__(self) -> None:
        self.groups: dict[str, list[str]] = {}
        self.dropped: set[str] = set()
        self.whole = True  # False: no group but those kept is known (all others dropped)

    def scan(self, folder: str, kept: _Kept) -> None:
        with os.scandir(folder) as scan:
            for entry in scan:
                name = entry.name
                if is_folder(entry):
                    self._add("/", ("l" if _is_link(entry) else "d") + name, kept)
                else:
                    dot = name.rfind(".")
                    self._add(name[dot:].lower() if dot >= 0 else "",
                              ("f" if is_regular(entry) else "o") + name, kept)

    def _add(self, group: str, item: str, kept: _Kept) -> None:
        names = self.groups.get(group)
        if names is None:
            if group in self.dropped or not self.whole:
                return
            names = self.groups[group] = []
        if kept.local_entries >= KEPT_ENTRIES:
            self._make_room(kept)
            if group not in self.groups:
                return
        names.append(item)
        kept.local_entries += 1

    def _make_room(self, kept: _Kept) -> None:
        """Drop the largest group of the discovery's indexes (this one's included); when
        every group is small, stop keeping this folder's names instead, rather than look
        for the largest again at each name."""
        owner, largest, size = self, "", -1
        for index in kept.local.values():
            for group, names in index.groups.items():
                if len(names) > size:
                    owner, largest, size = index, group, len(names)
        if size < 2 or size * 256 < KEPT_ENTRIES:
            self.forget(kept)
        else:
            owner.drop(largest, kept)

    def drop(self, group: str, kept: _Kept) -> None:
        kept.local_entries -= len(self.groups.pop(group))
        self.dropped.add(group)

    def forget(self, kept: _Kept) -> None:
        """Drop every group (those not seen yet included)."""
        for group in list(self.groups):
            self.drop(group, kept)
        self.whole = False

    def files(self, suffixes: tuple[str, ...], kinds: str = "fo") -> list[str] | None:
        """The sorted names of the files (of the ``kinds``: letters) whose name, in lower
        case, ends with one of ``suffixes``; None when the group of one was dropped."""
        found: list[str] = []
        for suffix in suffixes:
            found_here = self._group(suffix[suffix.rfind("."):].lower())
            if found_here is None:
                return None
            found.extend(item[1:] for item in found_here if item[0] in kinds and item[1:].lower().endswith(suffix))
        return sorted(set(found))  # (".gz" and ".nii.gz" may both take a name)

    def folders(self, kinds: str = "dl") -> list[str] | None:
        """The sorted names of the sub-folders (of the ``kinds``), None when they were dropped."""
        found = self._group("/")
        return None if found is None else sorted(item[1:] for item in found if item[0] in kinds)

    def _group(self, group: str) -> list[str] | None:
        if group in self.dropped or (group not in self.groups and not self.whole):
            return None
        return self.groups.get(group, [])


def _folder_index(folder: Any) -> _FolderIndex | None:
    """The :class:`_FolderIndex` of a local ``folder`` while a discovery keeps listings
    (scanned now if it was not yet, empty for a folder that leads outside the granted roots;
    OSError as :func:`os.scandir` raises it), else None."""
    kept = _KEPT.get()
    if kept is None or url_scheme(folder) is not None:
        return None
    key = os.path.abspath(folder)
    index = kept.local.get(key)
    if index is None:
        index = kept.local[key] = _FolderIndex()  # among the indexes that may make room
        try:
            if not paths.listing_refused(folder, reported=True):  # a folder that leads out of the data is empty
                index.scan(folder, kept)
        except OSError:
            index.forget(kept)
            del kept.local[key]
            raise
    return index


_KEPT: contextvars.ContextVar[_Kept | None] = contextvars.ContextVar("labelguard_kept_listings", default=None)


@contextlib.contextmanager
def listings_kept() -> Iterator[None]:
    """Keep what object storage answers for the block: a prefix's listing (up to
    :data:`KEPT_ENTRIES` entries in all, then packed up to :data:`KEPT_BYTES`: a
    :class:`_PackedListing`) and whether a URL is an object, a prefix or nothing,
    so that the layouts' probes of one dataset (a dozen listings of its prefix and a hundred
    looks at names a layout may hold) cost one listing per prefix. A discovery is a snapshot
    of the store, as a local walk is of a folder; every object's bytes are still read, and
    checked by their validator, when its task runs. A local folder is scanned once for the
    probes too, but kept as a :class:`_FolderIndex` (its sub-folders, and its files by
    extension, within :data:`KEPT_ENTRIES` names in all), not whole: a folder of millions
    of masks would cost memory, and the probes ask it for its few JSON, XML or text files.
    The temporary files of spilled listings are deleted when the block ends."""
    kept = _Kept()
    token = _KEPT.set(kept)
    try:
        yield
    finally:
        _KEPT.reset(token)
        kept.close()


def _discovering() -> bool:
    """True while a discovery keeps listings: a folder it is refused is said in the report
    (a task's look at a folder is not: it runs in any process)."""
    return _KEPT.get() is not None


def _kept_kind(url: str) -> tuple[bool, str | None]:
    """(known, kind) of a URL from what the discovery kept: its own look, or its parent's
    whole listing (an object, a prefix, or absent from it: nothing there)."""
    kept = _KEPT.get()
    if kept is None:
        return False, None
    url = normpath(url).rstrip("/")
    if url in kept.kinds:
        return True, kept.kinds[url]
    parent, _, name = url.rpartition("/")
    names = kept.folders.get(parent)
    if names is None or not name or "://" not in parent:
        return False, None
    if name not in names:
        return True, None
    return True, "directory" if names[name] else "file"


def _url_kind(url: str) -> str | None:
    """"file", "directory" or None (nothing there) for a granted URL."""
    known, kind = _kept_kind(url)
    if known:
        return kind
    found = _info(url)
    kind = found.get("type") if found is not None else None
    kept = _KEPT.get()
    if kept is not None:
        kept.kinds[normpath(url).rstrip("/")] = kind
    return kind


def isfile(path: Any) -> bool:
    if url_scheme(path) is None:
        return os.path.isfile(path)
    return _url_kind(path) == "file"


def isdir(path: Any) -> bool:
    if url_scheme(path) is None:
        return os.path.isdir(path)
    return _url_kind(path) == "directory"


def exists(path: Any) -> bool:
    if url_scheme(path) is None:
        return os.path.exists(path)
    return _url_kind(path) is not None


def lexists(path: Any) -> bool:
    return exists(path) if url_scheme(path) else os.path.lexists(path)


def getsize(path: Any) -> int:
    """:func:`os.path.getsize`; OSError for a URL that names no object."""
    if url_scheme(path) is None:
        return os.path.getsize(path)
    found = _info(path)
    if found is None:
        raise FileNotFoundError(path)
    return int(found.get("size") or 0)


class RemoteEntry:
    """One entry of a listing of object storage, as :func:`os.scandir` gives one."""

    __slots__ = ("name", "path", "_folder")

    def __init__(self, name: str, path: str, folder: bool) -> None:
        self.name, self.path, self._folder = name, path, folder

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return not self._folder

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return self._folder

    def is_symlink(self) -> bool:
        return False


class _Listing:
    """A listing as a context manager, as :func:`os.scandir` returns one; its entries come
    as the store's pages do (a probe that stops at the first match reads one page)."""

    def __init__(self, entries: Iterator[RemoteEntry]) -> None:
        self.entries = entries

    def __enter__(self) -> "_Listing":
        return self

    def __exit__(self, *exc_info) -> None:
        pass

    def __iter__(self) -> Iterator[RemoteEntry]:
        return iter(self.entries)


def _remote_entries(url: str) -> Iterator[RemoteEntry]:
    """The entries of the folder ``url``, page by page where the store lists so (S3: as each
    page of 1,000 keys arrives: its objects in name order, then its prefixes in name order);
    FileNotFoundError when it is no folder.
    While :func:`listings_kept`, a listing read to its end is kept and given again."""
    kept = _KEPT.get()
    if kept is None:
        yield from _listed_entries(url)
        return
    key = normpath(url).rstrip("/")
    listing = kept.listings.get(key)
    if listing is not None:
        yield from listing
        return
    known, kind = _kept_kind(key)
    if known and kind != "directory":
        raise (NotADirectoryError if kind == "file" else FileNotFoundError)(url)
    collected: list[RemoteEntry] | None = []
    packed: _PackedListing | None = None
    ended = False
    try:
        for entry in _listed_entries(url):
            if collected is not None:
                if kept.entries + len(collected) < KEPT_ENTRIES:
                    collected.append(entry)
                else:  # too many to look names up in: kept packed, for the probes that walk it
                    packed = _PackedListing(normpath(url).rstrip("/") + "/")
                    for earlier in collected:
                        packed.add(earlier)
                    collected = None
            if packed is not None:
                packed = _packed_further(kept, packed, entry)
            yield entry
        ended = True
    finally:
        if not ended and packed is not None:
            packed.close()  # a listing left before its end is not kept: its file goes now
    if collected is not None:
        kept.listings[key] = collected
        folders = kept.folders[key] = {}
        for entry in collected:  # a name that is an object and a prefix is an object, as info() says
            folders[entry.name] = folders.get(entry.name, True) and entry.is_dir()
        kept.kinds[key] = "directory"
        kept.entries += len(collected)
    elif packed is not None:
        kept.listings[key] = packed
        kept.kinds[key] = "directory"
        kept.packed_bytes += packed.size
        kept.spilled_bytes += packed.written


def _packed_further(kept: _Kept, packed: _PackedListing, entry: RemoteEntry) -> _PackedListing | None:
    """``packed`` with ``entry`` added: in memory while the listings kept there stay within
    :data:`KEPT_BYTES`, then in a temporary file within :data:`SPILLED_BYTES`; None when it
    cannot be kept (listed again when asked again)."""
    try:
        packed.add(entry)
        if packed.file is None and kept.packed_bytes + packed.size > KEPT_BYTES:
            packed.spill()
        if packed.file is not None and kept.spilled_bytes + packed.written > SPILLED_BYTES:
            raise OSError("over the bound of spilled listings")
    except OSError:  # no temporary file, a full disk: listed again instead
        log.debug("a listing of %s was not kept", packed.base, exc_info=True)
        packed.close()
        return None
    return packed


def _listed_entries(url: str) -> Iterator[RemoteEntry]:
    """:func:`_remote_entries` as the store lists them now."""
    found = filesystem(url)
    if found is None:
        raise FileNotFoundError(url)
    fs, path = found
    base = normpath(url).rstrip("/") + "/"
    iterdir = getattr(fs, "_iterdir", None)
    if iterdir is None or not path:
        try:
            listed = fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(url) from None
        if len(listed) == 1 and listed[0].get("type") == "file" and listed[0]["name"].rstrip("/") == path.rstrip("/"):
            raise NotADirectoryError(url)
        for item in sorted(listed, key=lambda item: item["name"]):
            name = item["name"].rstrip("/").rsplit("/", 1)[-1]
            if name:
                yield RemoteEntry(name, base + name, item.get("type") == "directory")
        return
    yield from _paged_entries(fs, path, base)


def _paged_entries(fs, path: str, base: str) -> Iterator[RemoteEntry]:
    """The entries below an S3 prefix as its listing's pages arrive (keys and prefixes each
    come in name order; prefixes are kept until the files are all yielded)."""
    from fsspec.asyn import sync

    bucket, _, key = path.partition("/")
    prefix = key.rstrip("/") + "/" if key else ""
    pages = fs._iterdir(bucket, prefix=prefix)

    async def take() -> list[dict]:
        items = []
        async for item in pages:
            items.append(item)
            if len(items) >= LISTING_CHUNK:
                break
        return items

    folders: list[str] = []
    seen = False
    while True:
        try:
            chunk = sync(fs.loop, take)
        except FileNotFoundError:
            raise FileNotFoundError(base) from None
        except Exception as exc:  # botocore's ClientError and the like
            raise StorageError(f"cannot list {base}: {exc}") from None
        if not chunk:
            break
        seen = True
        for item in chunk:
            name = item["name"].rstrip("/").rsplit("/", 1)[-1]
            if not name:
                continue
            if item.get("type") == "directory":
                folders.append(name)
            else:
                yield RemoteEntry(name, base + name, False)
    if not seen and not fs.isdir(path):
        raise FileNotFoundError(base)
    for name in sorted(folders):
        yield RemoteEntry(name, base + name, True)


def scandir(path: Any):
    """:func:`os.scandir`; for a URL, its listing, read as it is iterated (OSError then). A
    local folder that leads outside the granted roots through a link is not listed: it has no
    entries (:func:`labelguard.core.paths.listing_refused`)."""
    if url_scheme(path) is None:
        return _Listing(iter(())) if paths.listing_refused(path, _discovering()) else os.scandir(path)
    return _Listing(_remote_entries(path))


def names_where(folder: Any, keep: Callable[[Any], bool]) -> list[str]:
    """The sorted names of the entries of ``folder`` that ``keep(entry)`` (an
    :func:`os.scandir` entry) takes: a probe of a folder of 100,000 masks for its few JSON
    files or sub-folders holds those, never the whole listing. OSError as
    :func:`os.listdir` raises it."""
    with scandir(folder) as scan:
        return sorted(entry.name for entry in scan if keep(entry))


def names_with_suffix(folder: Any, suffixes: tuple[str, ...], files_only: bool = False) -> list[str]:
    """The sorted names of the entries of ``folder`` that are no folder and whose name, in
    lower case, ends with one of ``suffixes`` (lower case, each with a dot: ``.json``,
    ``.nii.gz``, ``_seg.png``); only regular files (links followed) when ``files_only``. Hidden
    names are included. While :func:`listings_kept`, a local folder is scanned once for all
    such probes (:class:`_FolderIndex`). OSError as :func:`os.listdir` raises it."""
    index = _folder_index(folder)
    found = index.files(suffixes, "f" if files_only else "fo") if index is not None else None
    if found is not None:
        return found
    return names_where(folder, lambda entry: not is_folder(entry) and entry.name.lower().endswith(suffixes)
                       and (not files_only or is_regular(entry)))


def folder_names(folder: Any, hidden: bool = True) -> list[str]:
    """The sorted names of the folders in ``folder`` (links followed; hidden ones unless not
    ``hidden``), OSError as :func:`os.listdir` raises it. While :func:`listings_kept`, a
    local folder is scanned once for all the layouts' probes (:class:`_FolderIndex`; an
    object store's listing is kept whole)."""
    index = _folder_index(folder)
    found = index.folders() if index is not None else None
    if found is None:
        found = names_where(folder, is_folder)
    return [name for name in found if hidden or not name.startswith(".")]


def folder_paths(folder: Any, hidden: bool = True) -> list[str]:
    """:func:`folder_names` as the paths :func:`scandir` gives its entries."""
    base = os.path.join(folder, "") if url_scheme(folder) is None else normpath(folder).rstrip("/") + "/"
    return [base + name for name in folder_names(folder, hidden)]


def is_folder(entry: Any) -> bool:
    """``entry.is_dir()`` (links followed, as :func:`os.path.isdir`), False when it cannot be told."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry) -> bool:
    """``entry.is_symlink()``; an entry that cannot be told is no link (as :func:`_kind` takes it)."""
    try:
        return entry.is_symlink()
    except OSError:
        return False


def is_regular(entry: Any) -> bool:
    """``entry.is_file()`` (links followed, as :func:`os.path.isfile`), False when it cannot be told."""
    try:
        return entry.is_file()
    except OSError:
        return False


def listdir(path: Any) -> list[str]:
    if url_scheme(path) is None:
        return [] if paths.listing_refused(path, _discovering()) else os.listdir(path)
    return [entry.name for entry in _remote_entries(path)]


def walk(top: Any, followlinks: bool = False) -> Iterator[tuple[str, list[str], list[str]]]:
    """:func:`os.walk` (top down: the ``dirs`` a caller keeps are walked); errors skip a folder,
    and a ``top`` that leads outside the granted roots is not walked
    (:func:`labelguard.core.paths.listing_refused`: the report names it)."""
    if url_scheme(top) is None:
        if not paths.listing_refused(top, reported=True):
            yield from os.walk(top, followlinks=followlinks)
        return
    try:
        entries = list(_remote_entries(top))
    except (OSError, StorageError):
        return
    dirs = [e.name for e in entries if e.is_dir()]
    files = [e.name for e in entries if e.is_file()]
    base = normpath(top)
    yield base, dirs, files
    for name in dirs:
        yield from walk(f"{base.rstrip('/')}/{name}")


def iter_files(root: Any, skip_dirs: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every file under ``root``, folder by folder, in the order of a sorted :func:`os.walk`
    (a folder's files by name, then its sub-folders by name; links to folders are not
    walked into, as :func:`os.walk` does not), hidden entries and ``skip_dirs`` left out."""
    for prefix, names in iter_folders(root, skip_dirs):
        for name in names:
            yield prefix + name


def iter_folders(root: Any, skip_dirs: frozenset[str] = frozenset(), suffixes: tuple[str, ...] | None = None
                 ) -> Iterator[tuple[str, Iterable[str]]]:
    """(folder as ``os.path.join(folder, "")`` writes it, its files' names in order) for each
    folder of :func:`iter_files`'s walk. Only one folder's names are held at a time: a local
    folder's (sorted, packed past :data:`SORT_RUN` names: :class:`SortedNames`, which may be
    iterated again), or an S3 prefix's page of keys (S3 lists keys in order; a one-pass
    iterator: read the names before asking for the next folder). With ``suffixes``, only
    the names that end with one of them in lower case (as :func:`names_with_suffix` takes
    them): a probe's walk, which reads a local folder's from its index while
    :func:`listings_kept`. A local ``root`` that leads outside the granted roots through a
    link is not walked (:func:`labelguard.core.paths.listing_refused`: the report names it);
    the folders below it are entries the scan found, never links."""
    if url_scheme(root) is None and paths.listing_refused(root, reported=True):
        return
    pending = [root]
    while pending:
        folder = pending.pop()
        prefix = os.path.join(folder, "")  # as os.path.join(folder, name) writes it
        folders: list[str] = []
        if url_scheme(folder) is None:
            try:
                names: SortedNames | list[str] | None = (
                    _indexed_walk(folder, skip_dirs, suffixes, folders) if suffixes is not None else None)
                if names is None:
                    names = _scanned_walk(folder, skip_dirs, suffixes, folders)
            except OSError:
                continue
            yield prefix, names
            del names
        else:
            keys = _remote_files(folder, skip_dirs, folders)
            yield prefix, keys if suffixes is None else (name for name in keys if name.lower().endswith(suffixes))
        pending.extend(prefix + name for name in sorted(folders, reverse=True))


def _scanned_walk(folder: str, skip_dirs: frozenset[str], suffixes: tuple[str, ...] | None,
                  folders: list[str]) -> "SortedNames | list[str]":
    """A local folder's files for :func:`iter_folders`, from a scan; its sub-folders to walk
    go to ``folders``."""
    files = SortedNames()
    with os.scandir(folder) as scan:
        for entry in scan:
            name = entry.name
            if name[0] == ".":
                continue
            kind = _kind(entry)
            if kind == "file":
                if suffixes is None or name.lower().endswith(suffixes):
                    files.add(name)
            elif kind == "dir" and name not in skip_dirs:
                folders.append(name)
    return files.done()


def _indexed_walk(folder: str, skip_dirs: frozenset[str], suffixes: tuple[str, ...],
                  folders: list[str]) -> list[str] | None:
    """:func:`_scanned_walk` from the folder's :class:`_FolderIndex`, or None when there is
    none or it dropped a group asked for."""
    index = _folder_index(folder)
    files = index.files(suffixes) if index is not None else None
    below = index.folders("d") if index is not None else None
    if files is None or below is None:
        return None
    folders.extend(name for name in below if name[0] != "." and name not in skip_dirs)
    return [name for name in files if name[0] != "."]


# Names sorted in memory at a time; a larger folder's are kept as sorted runs of packed bytes.
SORT_RUN = 8192


class SortedNames:
    """The names of one folder in sorted order, iterable any number of times, at a cost of
    about their bytes: they are sorted in runs of :data:`SORT_RUN`, each run packed into
    one bytes object, and the runs merged as they are read. A folder of 100,000 masks then
    holds some 2 MB rather than the 7 MB of a sorted list of its names."""

    def __init__(self) -> None:
        self.runs: list[bytes] = []
        self.pending: list[str] = []

    def add(self, name: str) -> None:
        self.pending.append(name)
        if len(self.pending) >= SORT_RUN:
            self._pack()

    def done(self) -> "SortedNames | list[str]":
        """The names: a sorted list when they are few (the common folder), else self."""
        if not self.runs:
            self.pending.sort()
            return self.pending
        if self.pending:
            self._pack()
        return self

    def _pack(self) -> None:
        self.pending.sort()
        self.runs.append("\0".join(self.pending).encode("utf-8", "surrogateescape"))
        self.pending = []

    def __iter__(self) -> Iterator[str]:
        return heapq.merge(*(_unpacked(run) for run in self.runs))


def _unpacked(run: bytes) -> Iterator[str]:
    """The names of one packed run, one at a time (a file name never holds a NUL)."""
    start = 0
    while True:
        end = run.find(b"\0", start)
        if end < 0:
            yield run[start:].decode("utf-8", "surrogateescape")
            return
        yield run[start:end].decode("utf-8", "surrogateescape")
        start = end + 1


def _remote_files(folder: str, skip_dirs: frozenset[str], folders: list[str]) -> Iterator[str]:
    """The names of a remote folder's files as its listing gives them; its sub-folders'
    names go to ``folders``. A folder that cannot be listed has none."""
    try:
        for entry in _remote_entries(folder):
            if entry.name[0] == ".":
                continue
            if not entry.is_dir():
                yield entry.name
            elif entry.name not in skip_dirs:
                folders.append(entry.name)
    except (OSError, StorageError):
        return


def _kind(entry: os.DirEntry) -> str:
    """How :func:`os.walk` takes an entry: a folder it walks into ("dir"), a link to a folder
    it lists but does not walk ("link"), else a file (an entry it cannot stat included)."""
    if not is_folder(entry):
        return "file"
    return "link" if _is_link(entry) else "dir"


# ---- reading objects ------------------------------------------------------------------------------

def validator(entry: dict | None) -> bytes | None:
    """What tells this version of an object from any other: its size with the content
    fields of its listing entry (:data:`CONTENT_FIELDS`: S3's ETag, GCS's MD5 and
    generation), or None when the store gives none (or only a weak ETag) and only its bytes
    can tell."""
    if entry is None:
        return None
    fields = sorted((name, str(entry[name])) for name in CONTENT_FIELDS
                    if entry.get(name) not in (None, "") and not str(entry[name]).startswith("W/"))
    if not fields:
        return None
    return hashlib.sha256(json.dumps([int(entry.get("size") or 0), fields]).encode()).digest()


def read_object(url: str, limit: int | None = None, size: int | None = None) -> bytes:
    """The bytes of the object at ``url``: its first ``size`` bytes (one ranged request), or
    the whole object when ``size`` is None, refused (:class:`ObjectTooLarge`) before it is
    fetched when larger than ``limit``. FileNotFoundError when no object is there,
    IsADirectoryError for a folder, :class:`StorageError` when the store fails."""
    found = filesystem(url)
    if found is None:
        raise FileNotFoundError(url)
    fs, path = found
    try:
        if size is not None:
            return fs.cat_file(path, start=0, end=size)
        # One look at the object's size and tag, then its bytes (S3: fetched only while
        # the object still has that tag).
        with fs.open(path, "rb") as handle:
            details = getattr(handle, "details", None) or {}
            if details.get("type") == "directory":
                raise IsADirectoryError(url)
            length = int(details.get("size") or getattr(handle, "size", 0) or 0)
            if limit is not None and length > limit:
                raise ObjectTooLarge(length)
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, ObjectTooLarge):
        raise
    except Exception as exc:  # the backend's own errors (botocore, aiohttp, OSError)
        if isinstance(exc.__cause__, FileNotFoundError):
            raise FileNotFoundError(url) from None
        raise StorageError(f"{type(exc).__name__}: {exc}") from None


def open_object(url: str) -> BinaryIO:
    """The object at ``url`` opened for reading as a seekable file whose bytes are fetched in
    ranges as they are read (a Parquet file's footer, then its row groups), for readers that
    stream a file instead of holding it. FileNotFoundError when no object is there,
    IsADirectoryError for a folder, :class:`StorageError` when the store fails; a read that
    fails later raises the backend's OSError."""
    found = filesystem(url)
    if found is None:
        raise FileNotFoundError(url)
    fs, path = found
    try:
        handle = fs.open(path, "rb")
    except (FileNotFoundError, IsADirectoryError):
        raise
    except Exception as exc:  # the backend's own errors (botocore, aiohttp, OSError)
        if isinstance(exc.__cause__, FileNotFoundError):
            raise FileNotFoundError(url) from None
        raise StorageError(f"{type(exc).__name__}: {exc}") from None
    if (getattr(handle, "details", None) or {}).get("type") == "directory":
        handle.close()
        raise IsADirectoryError(url)
    return handle


class ObjectTooLarge(Exception):
    """The object is larger than the read limit: not fetched."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def content_digest(url: str, limit: int | None = None) -> bytes | None:
    """What the result cache keys a remote file on: its :func:`validator` when the store
    gives one (one look at the object, no byte fetched), else a SHA-256 of its bytes (None,
    unhashed, when there are more than ``limit``); a digest that says what is there instead
    for a missing object or a folder."""
    entry = _info(url)
    if entry is None:
        return b"missing"
    if entry.get("type") == "directory":
        return b"not-regular:directory"
    tag = validator(entry)
    if tag is not None:
        return b"v:" + tag
    if limit is not None and int(entry.get("size") or 0) > limit:
        return None
    found = filesystem(url)
    assert found is not None
    fs, path = found
    digest = hashlib.sha256()
    try:
        with fs.open(path, "rb") as handle:
            while True:
                chunk = handle.read(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
    except Exception as exc:  # unreadable now: a digest that differs from any content's
        return f"unreadable:{type(exc).__name__}".encode()
    return b"h:" + digest.digest()


def path_kind(path: str) -> bytes:
    """``file``, ``dir`` or ``none`` for a URL, as :func:`isfile` / :func:`isdir` see it."""
    entry = _info(path)
    if entry is None:
        return b"none"
    return b"dir" if entry.get("type") == "directory" else b"file"


def listing_digest(url: str) -> bytes:
    """A digest of a remote folder's entries: each name with whether it is a file or a folder."""
    try:
        entries = [("d" if entry.is_dir() else "f") + entry.name for entry in _remote_entries(url)]
    except (OSError, StorageError) as exc:
        return f"unlistable:{type(exc).__name__}".encode()
    return hashlib.sha256("\0".join(sorted(entries)).encode("utf-8", "surrogateescape")).digest()
