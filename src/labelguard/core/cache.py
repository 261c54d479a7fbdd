"""A cache of per-file results keyed by content, which concurrent audits may share.

An entry holds one task's :class:`~labelguard.core.tasks.FileResult` (its findings and its
partial summary) and the dependencies it was computed from. It is reused only when every one
of them is what it was:

* the entry's place is a hash of the task's *identity*: the processor, the task's fields
  (paths, display names, options by value), the spec by value, the read limits, the working
  folder (display paths are relative to it) and the *environment*: labelguard's version, a
  hash of every source file of the package (so an edited rule invalidates the cache without
  a version bump), the source of a processor or rule registered from outside the package,
  the list of registered rules, the versions of the libraries that decode files, Python's;
* the entry lists the task's *dependencies* with a digest of each: the bytes of the task's
  file and of its paired image (SHA-256: of the bytes the reader decoded when it tells them,
  :func:`note_bytes`, else of the file read again after the task ran; either is kept only
  when the file's signature was the same before the task ran, when it was read and after),
  and what the processor looked at while it ran,
  which it tells through :func:`note_file` (a file's bytes: an HDF5 external link's target),
  :func:`note_folder` (a folder's listing: the names that a COCO file or a table names,
  looked up) and :func:`note_path` (whether a path is a file, a folder or nothing), or that
  its result must not be stored (:func:`note_uncacheable`: a NIfTI header whose voxels are in
  a file nibabel names; an OME-TIFF whose planes are in other files is refused, not read). A lookup
  recomputes every digest and compares; a file's size, mtime, ctime and inode only decide
  whether its bytes are hashed again, never whether a result is reused. An object of object
  storage (a URL, :mod:`labelguard.core.storage`) has no such signature: its digest is its
  validator, the store's content tag (S3's ETag: the MD5 of the bytes, or of the parts' MD5s,
  which changes whenever a byte does; GCS's MD5 and generation), looked at again at every
  lookup (one HEAD request, no download), else a SHA-256 of its bytes; it is looked at again
  after the task ran, and a result read from an object that changed meanwhile is not stored.

A processor is cached only when it says that this is all it reads (``processor.cacheable =
True``); a result with an internal error, a task whose inputs changed while it ran, and a
file modified in the last :data:`RACY_SECONDS` (a timestamp that coarse file systems may
not move on a second write) are not stored. Discovery is never cached.

Store: the tasks are cut into *blocks* by their paths alone (:func:`blocks`: a block ends
after a file whose path hashes to 0 modulo :data:`BLOCK_FILES`, 64 files on average), so that
every audit of the same files finds the same blocks whatever its batches, and a file added or
removed changes its own block only. A block's entries are one file, its *pack*,
``<dir>/v2/p<hex>/<31 hex>.<files>.pack``: each task's entry (its dependencies; the entries'
results are pickled together, unpickled only when one is used) and the block's merged result, which answers
for the whole block in one read and one merge when no dependency's signature moved; else each
task is judged by its own entry in the pack, and the pack is written again. A first audit
thus creates one file per block, not one per file (``benchmarks/bench_masks.py`` prints its
time beside ``--no-cache``'s). A file checked outside a whole block (a pool's batch of slow files, a part of a
block) has an entry of its own, ``<dir>/v2/<2 hex>/<30 hex>``, which a block without a pack
looks up. Packs and entries are written to a temporary name beside them and renamed into
place, so that two audits (or the workers of a cluster on a shared file system, where
SQLite's locks are unreliable) can share the folder with no lock: a reader sees a whole pack
or entry or none, and a writer killed mid-write leaves only a temporary file (deleted by a
later sweep). Two audits that fill one block at once each write the whole pack; the last
rename wins, and either is right. The folder is bounded: at the end of an audit that stored
entries (at most every :data:`SWEEP_EVERY_SECONDS`), the least recently used packs and
entries are deleted until it holds less than :attr:`CacheSettings.max_bytes`.

A cached result is a verdict, so the folder is trusted only as far as it is this user's own
(:meth:`ResultCache.refused`; a folder refused is not used at all): it must belong to this
user and let no one else write into it (it is made with mode 0700), and a symbolic link to it
must belong to this user or to root. Each pack and entry starts with an HMAC-SHA256 of its
whole body under a key of this user's (:data:`KEY_FILE`, 32 random bytes, mode 0600, made
once with an exclusive create), so every entry in a pack is checked with it; one written
without the key (forged, or copied from another user's cache, whose key differs) is a miss,
as is one truncated or damaged, and it is rewritten. A pack or entry is read only when it is
a regular file of this user's (opened without following a link or waiting on a pipe) of at
most :data:`MAX_ENTRY_BYTES`, the most this module writes (a block whose pack would be larger
is stored file by file); only then is its body unpickled, with only the classes of a result
allowed. Every process
that uses the folder (a pool's workers, a cluster's) checks it and reads the key from it
itself: the key never travels with a task.

Only the core's own modules are imported: readers and layouts call the ``note_*`` functions,
and the engine wraps each per-file call in :meth:`ResultCache.run`, in whichever process
(or cluster worker) runs it; :class:`CacheSettings` travels to it by value.
"""

from __future__ import annotations

import contextvars
import dataclasses
import enum
import hashlib
import hmac
import io
import json
import logging
import os
import pickle
import re
import stat
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Iterator, Sequence, cast

import numpy as np

from labelguard.core import storage
from labelguard.core.limits import current_limits
from labelguard.core.paths import LeadsOutside, open_within, stat_within
from labelguard.core.owner import POSIX, not_own, other_owner
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.workdir import working_folder

log = logging.getLogger(__name__)

# The layout of entries; a change of it starts a new folder beside the old one.
STORE_VERSION = "v2"
# An entry's head: the magic, then the HMAC-SHA256 of its body (LGCACHE1's plain checksum is
# read as damaged: its entries are rewritten).
MAGIC = b"LGCACHE2"
CHECKSUM_BYTES = 32
# The user's key that signs the entries, in the entries' folder (deleted with them).
KEY_FILE = "key"
KEY_BYTES = 32
# No entry larger is written (a result this large is computed again), so none larger is read.
MAX_ENTRY_BYTES = 64 << 20
# The memo files beside the shards (SOURCES_FILE, LIBRARIES_FILE) are read up to this size.
MEMO_BYTES = 1 << 20
# A file modified this recently may change again without its mtime moving (FAT keeps 2 s,
# HFS+ and S3 1 s): its digest and any result read from it are not stored.
RACY_SECONDS = 2.0
DEFAULT_MAX_BYTES = 1 << 30
# The size bound is enforced at the end of an audit that stored entries, at most this often.
SWEEP_EVERY_SECONDS = 600
# An entry read this long after it was last written or used is marked used again.
TOUCH_AFTER_SECONDS = 3600
# A temporary file this old was left by a process that died while writing.
STALE_TEMP_SECONDS = 3600
SWEEP_MARKER = "last-sweep"
# The digest of labelguard's sources with their stat signatures: one file beside the shards.
SOURCES_FILE = "sources"
# The digest of the decoding libraries' versions with what tells they are still installed.
LIBRARIES_FILE = "libraries"
# A pack's head: the magic, then the HMAC-SHA256 of its body (LGPACK01's, a result pickled
# per entry, is read as of another format: its block is checked again and its pack rewritten).
PACK_MAGIC = b"LGPACK02"
# The name ending of a pack: the entries of one block of files and their merged result (a
# file's own entry has none).
PACK_SUFFIX = ".pack"
# Packs lie in folders named this and a hex digit; files' own entries in folders of 2 hex digits.
PACK_FOLDER = "p"
# A block of tasks ends after a task whose path hashes to 0 modulo this (on average this many
# files), or after MAX_BLOCK_FILES tasks: a file added or removed changes its own block only.
# Each block is one file created (0.7 ms of CPU on some virtual machines' disks, more than a
# mask's checking), so a block is as large as a re-check of one costs little (40 ms for masks).
BLOCK_FILES = 64
MAX_BLOCK_FILES = 512
# The hashes of identities' shared beginnings kept (one per audit's spec and processor).
PREFIXES_KEPT = 64
# A file this large or smaller is hashed from one read.
ONE_READ_BYTES = 1 << 20
CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by labelguard.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")


@dataclass(frozen=True)
class CacheSettings:
    """Where the cache lives and how large it may grow; sent by value to every worker.

    Attributes:
        directory: the cache folder (created when first written).
        max_bytes: the size the entries are swept back under.
    """

    directory: str
    max_bytes: int = DEFAULT_MAX_BYTES


def default_cache_dir() -> str:
    """``$LABELGUARD_CACHE_DIR`` when set, else the user's cache folder for labelguard as the
    platform's convention places it: ``$XDG_CACHE_HOME/labelguard`` (else
    ``~/.cache/labelguard``) on Linux and other Unixes, ``~/Library/Caches/labelguard`` on
    macOS, ``%LOCALAPPDATA%\\labelguard\\Cache`` on Windows."""
    chosen = os.environ.get("LABELGUARD_CACHE_DIR")
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
        return os.path.join(base, "labelguard", "Cache")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches", "labelguard")
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is invalid and ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "labelguard")


# ---- what a running processor reads beyond its task's files ----------------------------------

_NOTED: contextvars.ContextVar[list | None] = contextvars.ContextVar("labelguard_cache_noted", default=None)


def note_file(path: str) -> None:
    """The running task's result depends on the bytes of ``path``."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(("file", storage.abspath(path)))


def note_folder(path: str) -> None:
    """The running task's result depends on the listing of the folder ``path``: the names in
    it and whether each is a file (links followed)."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(("folder", storage.abspath(path)))


def note_path(path: str) -> None:
    """The running task's result depends on whether ``path`` is a file, a folder or nothing."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(("path", storage.abspath(path)))


def note_bytes(path: str, data: bytes, st: os.stat_result) -> None:
    """The running task read all of ``path``: ``data``, from a file whose descriptor had the
    stat ``st``. The cache takes their digest instead of reading the file again (a task's own
    file, hashed after it ran). Costs nothing outside a cached task."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(("bytes", path, _signature(st), hashlib.sha256(data).digest()))


def note_uncacheable(reason: str) -> None:
    """The running task's result depends on more than can be checked cheaply (files that a
    library opens by names it computes): it is not stored."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(("uncacheable", reason))


# ---- digests ------------------------------------------------------------------------------------

def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells that a file may have changed: size, mtime, ctime (which no one can set) and
    inode (a file replaced by a rename). Not the device number, which differs between the
    machines that mount one shared file system."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _racy(st: os.stat_result, now_ns: int) -> bool:
    """Modified too recently to be told from its next version by its signature (as git's
    "racily clean" files; ctime, which a file copied with its times kept moves, is not
    asked: such a copy gets a new inode)."""
    return now_ns - st.st_mtime_ns < RACY_SECONDS * 1e9


def _hash_file(path: str, limit: int | None = None) -> tuple[os.stat_result | None, bytes | None]:
    """(stat, digest) of a path's bytes; a path that is no regular file (missing, a folder,
    a pipe that would block) gets a digest that says what it is, without reading it. An
    object of object storage has no stat: its digest is its validator, else its bytes'
    hash (:func:`labelguard.core.storage.content_digest`; None past ``limit`` bytes). A path
    that leads outside the granted roots through a link is neither opened nor hashed: no
    digest (:mod:`labelguard.core.paths`), so no result that read it is stored or reused."""
    if storage.url_scheme(path):
        return None, storage.content_digest(path, limit)
    try:
        fd = open_within(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except LeadsOutside:
        return None, None
    except FileNotFoundError:
        return None, b"missing"
    except OSError as exc:
        return None, f"unopenable:{exc.errno}".encode()
    with os.fdopen(fd, "rb", buffering=0) as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return st, f"not-regular:{stat.S_IFMT(st.st_mode)}".encode()
        if st.st_size < ONE_READ_BYTES:
            # A mask's few KiB: one read (one byte more than the size sees a file that grew),
            # not a megabyte's buffer zeroed per file.
            data = os.read(fd, st.st_size + 1)
            if len(data) <= st.st_size:
                return st, hashlib.sha256(data).digest()
            digest = hashlib.sha256(data)
        else:
            digest = hashlib.sha256()
        buffer = bytearray(ONE_READ_BYTES)
        view = memoryview(buffer)
        while True:
            count = handle.readinto(buffer)
            if not count:
                break
            digest.update(view[:count])
        return st, digest.digest()


def _path_kind(path: str) -> bytes:
    """A path as ``os.path.isfile``/``isdir`` see it (links followed)."""
    if storage.url_scheme(path):
        return storage.path_kind(path)
    try:
        st = os.stat(path)
    except OSError:
        return b"none"
    if stat.S_ISREG(st.st_mode):
        return b"file"
    return b"dir" if stat.S_ISDIR(st.st_mode) else b"other"


def _listing_digest(folder: str) -> bytes:
    """A digest of a folder's entries: each name with whether it is a file, a folder or
    something else (links followed, a broken link counted as one)."""
    if storage.url_scheme(folder):
        return storage.listing_digest(folder)
    try:
        with storage.scandir(folder) as scan:
            entries = []
            for entry in scan:
                try:
                    kind = "f" if entry.is_file() else "d" if entry.is_dir() else "o"
                except OSError:
                    kind = "o"
                entries.append(f"{kind}{entry.name}")
    except OSError as exc:
        return f"unlistable:{exc.errno}".encode()
    entries.sort()
    return hashlib.sha256("\0".join(entries).encode("utf-8", "surrogateescape")).digest()


# ---- the identity of a task ---------------------------------------------------------------------

def canonical(value: Any) -> bytes:
    """``value`` as bytes that two processes give alike for equal values (sets sorted, dict
    items sorted, floats exact, dataclasses field by field); TypeError for a value of a kind
    that has no such form (the task is then not cached)."""
    out: list[bytes] = []
    _encode(value, out.append)
    return b"".join(out)


def _encode(value: Any, write: Callable[[bytes], Any]) -> None:
    kind = type(value)
    if kind is str:  # the common case first: paths and names
        data = value.encode("utf-8", "surrogatepass")
        write(b"s%d:" % len(data) + data)
    elif value is None:
        write(b"N")
    elif kind is tuple:  # a task's fields and options: as any tuple below, without its tests
        write(b"(")
        for item in value:
            _encode(item, write)
        write(b")")
    elif kind is bool:
        write(b"T" if value else b"F")
    elif isinstance(value, enum.Enum):
        write(b"E")
        _encode(f"{kind.__module__}.{kind.__qualname__}", write)
        _encode(value.value, write)
    elif isinstance(value, int) and not isinstance(value, bool):
        write(b"i%d;" % value)
    elif isinstance(value, float):
        write(b"f" + value.hex().encode() + b";")
    elif isinstance(value, str):
        _encode(str(value), write)
    elif isinstance(value, bytes):
        write(b"b%d:" % len(value) + value)
    elif isinstance(value, (tuple, list)):
        write(b"(" if isinstance(value, tuple) else b"[")
        for item in value:
            _encode(item, write)
        write(b")")
    elif isinstance(value, (set, frozenset)):
        write(b"{")
        for item in sorted(canonical(item) for item in value):
            write(item)
        write(b"}")
    elif isinstance(value, dict):
        write(b"<")
        for key, item in sorted((canonical(key), canonical(item)) for key, item in value.items()):
            write(key + item)
        write(b">")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        write(b"D")
        _encode(f"{kind.__module__}.{kind.__qualname__}", write)
        for item in dataclasses.fields(value):
            _encode(item.name, write)
            _encode(getattr(value, item.name), write)
        write(b";")
    elif isinstance(value, np.ndarray) and value.dtype.kind in "biufcSU":
        write(b"A")
        _encode((value.dtype.str, value.shape), write)
        write(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, np.generic) and value.dtype.kind in "biufc":
        write(b"G")
        _encode((value.dtype.str, value.item()), write)
    else:
        raise TypeError(f"no canonical form for {kind.__qualname__}")  # not a user mistake


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Libraries whose upgrade can change what a file decodes to.
DECODING_LIBRARIES = ("numpy", "Pillow", "deflate", "h5py", "nibabel", "tifffile", "defusedxml", "PyYAML")
_ENVIRONMENT: bytes | None = None
_MODULE_SOURCES: dict[str, bytes] = {}
_IN_PACKAGE: dict[str, bool] = {}
_RULES_DIGESTS: dict[tuple, tuple[tuple, bytes]] = {}


def environment_digest(memo: str | None = None) -> bytes:
    """What every entry of this process depends on besides its task: labelguard's version and
    the bytes of every source file of the package (any edit of a rule, reader or processor
    changes it; no version number to remember to bump), the decoding libraries' versions,
    Python's version and the platform. Computed once per process; with ``memo`` (a cache's
    folder) the sources' digest is kept there under their stat signatures
    (:func:`_source_digest`), and the libraries' under their metadata's
    (:func:`_libraries_digest`)."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        from labelguard._version import __version__

        digest = hashlib.sha256()
        for part in (STORE_VERSION, __version__, sys.implementation.name, sys.version, sys.platform):
            digest.update(canonical(part))
        digest.update(_libraries_digest(memo))
        digest.update(_source_digest(_PACKAGE, memo))
        _ENVIRONMENT = digest.digest()
    return _ENVIRONMENT


def _distribution_key(name: str) -> str:
    """A distribution's name as metadata folders may spell it, folded (PEP 503: ``PyYAML``,
    ``pyyaml`` and ``Py_YAML`` are one)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _libraries_digest(memo: str | None = None) -> bytes:
    """A digest of the versions of :data:`DECODING_LIBRARIES` installed now.

    With ``memo`` (a folder), it is kept in its file :data:`LIBRARIES_FILE` with the stat
    signatures of the folders on ``sys.path`` and of the metadata files it read: installing,
    upgrading or removing a distribution adds or removes a metadata folder, which moves its
    folder's signature, and a metadata file rewritten in place (a development install) has
    another signature; then the folders are listed again. Nothing modified within
    :data:`RACY_SECONDS` is kept."""
    place = None if memo is None else os.path.join(memo, LIBRARIES_FILE)
    now = time.time_ns()
    folders, racy = _signed(sys.path, now) if place is not None else ([], False)
    memo_file = _read_own(place, MEMO_BYTES) if place is not None else None
    if memo_file is not None:
        try:
            kept = json.loads(memo_file[0])
            if kept["folders"] == folders and _signed([path for path, _ in kept["files"]], now)[0] == kept["files"]:
                return bytes.fromhex(kept["digest"])
        except (ValueError, KeyError, TypeError, RecursionError):  # a memo nested past the stack is a miss
            pass
    read: list[str] = []
    versions = installed_versions(DECODING_LIBRARIES, read)
    digest = hashlib.sha256()
    for library in DECODING_LIBRARIES:
        digest.update(canonical((library, versions.get(library))))
    found = digest.digest()
    if place is not None:
        files, racy_file = _signed(read, now)
        if not (racy or racy_file):
            _write_atomically(place, json.dumps({"folders": folders, "files": files,
                                                 "digest": found.hex()}).encode("utf-8"))
    return found


def _signed(paths: Sequence[str], now_ns: int) -> tuple[list[list], bool]:
    """``[path, signature]`` of each of ``paths`` (the signature as a list, as JSON gives it
    back; None for a missing path, so that one made later is seen: python311.zip, usually),
    and whether any was modified within :data:`RACY_SECONDS`. The path "" is the working
    folder, as on ``sys.path``."""
    signed: list[list] = []
    racy = False
    for path in paths:
        try:
            st = os.stat(path or ".")
        except OSError:
            signed.append([path, None])
            continue
        signed.append([path, list(_signature(st))])
        racy = racy or _racy(st, now_ns)
    return signed, racy


def installed_versions(names: Sequence[str], read: list[str] | None = None) -> dict[str, str]:
    """The version of each distribution of ``names`` installed on ``sys.path`` (the first
    found, as the import system finds it), read from its metadata folder's ``METADATA`` (a
    wheel's ``.dist-info``) or ``PKG-INFO`` (an ``.egg-info`` folder, or file); a name not installed is left
    out. What ``importlib.metadata.version`` reads, without its imports (email, zipfile,
    pathlib: some 10 ms of every cached audit's start-up). The metadata files that gave a
    version are appended to ``read``."""
    wanted = {_distribution_key(name): name for name in names}
    versions: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:  # a zip file, or a folder gone
            continue
        for folder in sorted(listing):
            stem, dot, kind = folder.rpartition(".")
            if kind not in ("dist-info", "egg-info"):
                continue
            name = wanted.get(_distribution_key(stem.split("-", 1)[0]))
            if name is None or name in versions:
                continue
            place = os.path.join(entry or ".", folder)
            version = _metadata_version(os.path.join(place, "METADATA" if kind == "dist-info" else "PKG-INFO"))
            if version is None and kind == "egg-info":  # an .egg-info may be the PKG-INFO file itself
                version = _metadata_version(place)
            if version is not None:
                versions[name] = version
                if read is not None:
                    read.append(place if os.path.isfile(place) else
                                os.path.join(place, "METADATA" if kind == "dist-info" else "PKG-INFO"))
    return versions


def _metadata_version(path: str) -> str | None:
    """The ``Version:`` header of a core metadata file; None where it has none or is unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line[len("Version:"):].strip()
                if not line.strip():  # the headers end at the first blank line
                    break
    except OSError:
        pass
    return None


def _source_digest(package: str, memo: str | None = None) -> bytes:
    """A digest of every ``.py`` file under ``package``: its path inside and its bytes.

    With ``memo`` (a folder), the digest is kept in its file :data:`SOURCES_FILE` with the
    files' stat signatures, as a data file's digest is kept in its entry: a start-up whose sources have
    the signatures of one before reads the digest instead of every source (some 10 ms of a
    one-file audit); a source edited since has another signature, so its bytes are hashed
    again. Sources modified within :data:`RACY_SECONDS` are never kept."""
    sources: list[str] = []
    for directory, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        sources.extend(os.path.join(directory, name) for name in sorted(files) if name.endswith(".py"))
    place = None
    if memo is not None:
        signatures = hashlib.sha256()
        try:
            stats = [os.stat(path) for path in sources]
        except OSError:
            stats = None
        if stats is not None:
            for path, st in zip(sources, stats):
                signatures.update(canonical((os.path.relpath(path, package), _signature(st))))
            signed = signatures.digest()
            place = os.path.join(memo, SOURCES_FILE)
            kept = _read_own(place, 64)
            if kept is not None and len(kept[0]) == 64 and kept[0][:32] == signed:
                return kept[0][32:]
    digest = hashlib.sha256()
    for path in sources:
        digest.update(canonical(os.path.relpath(path, package)))
        with open(path, "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    found = digest.digest()
    now = time.time_ns()
    # (a place is set only once the stats were read)
    if place is not None and stats is not None and not any(_racy(st, now) for st in stats):
        _write_atomically(place, signed + found)
    return found


def _in_package(module_name: str) -> bool:
    """True when the module's source file lies inside labelguard's package (asked once per
    module and process: every batch's lookup asks it of every registered rule)."""
    found = _IN_PACKAGE.get(module_name)
    if found is None:
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        found = path is not None and os.path.abspath(path).startswith(_PACKAGE + os.sep)
        if module is not None:  # a module not imported yet may be later, from elsewhere
            _IN_PACKAGE[module_name] = found
    return found


def _module_source(module_name: str) -> bytes:
    """The digest of a module's source file when it lies outside the package (a processor or
    rule registered by a plugin or a test), else nothing: the package's digest covers it."""
    found = _MODULE_SOURCES.get(module_name)
    if found is None:
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        if path is None:
            found = canonical(("no source", module_name))
        elif _in_package(module_name):
            found = b""
        else:
            digest = _hash_file(path)[1]
            # No digest for a source reached through a link that leads outside the granted
            # roots: a digest of this process alone, so that no later audit takes an entry
            # made with it (the source it would vouch for was not read).
            found = digest if digest is not None else canonical(("unread source", module_name, os.urandom(16)))
        _MODULE_SOURCES[module_name] = found
    return found


def rules_digest() -> bytes:
    """The rules registered now from outside the package (plugins), in their order, with their
    source: an audit that registered another rule gets entries of its own. The package's own
    rules are left out: their sources are in :func:`environment_digest`, and which of their
    modules a process has imported so far (an audit imports those its files need) must not
    make its entries differ from another process's."""
    from labelguard.core.rules import RULES

    registered = tuple((scope, rule) for scope, rules in RULES.items() for rule in rules
                       if not _in_package(getattr(rule.apply, "__module__", "") or ""))
    key = tuple((scope, id(rule)) for scope, rule in registered)
    found = _RULES_DIGESTS.get(key)
    if found is None:
        digest = hashlib.sha256()
        for scope, rule in registered:
            module = getattr(rule.apply, "__module__", "") or ""
            digest.update(canonical((scope, rule.code, module, getattr(rule.apply, "__qualname__", ""))))
            digest.update(_module_source(module))
        # The rules are kept with their digest, so that their ids are never reused by others.
        found = _RULES_DIGESTS[key] = (registered, digest.digest())
    return found[1]


# ---- entries ------------------------------------------------------------------------------------

class _ResultUnpickler(pickle.Unpickler):
    """Loads what a result holds and nothing else: a damaged or planted entry cannot make the
    audit call an arbitrary function."""

    ALLOWED = frozenset({
        ("labelguard.core.findings", "Finding"),
        ("labelguard.core.findings", "Severity"),
        ("collections", "Counter"),
        ("collections", "OrderedDict"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "complex"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
    })

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a cached result")
        return super().find_class(module, name)


@dataclass
class _Entry:
    identity: str
    dependencies: list[tuple[str, str, tuple | None, bytes]]  # (kind, path, file signature, digest)
    findings: list
    summary: dict[str, Any]  # the summary's fields that are not empty, counters as plain dicts
    files: int
    used: float = 0.0  # when it was last written or marked used (its mtime)


def _encode_entry(entry: _Entry, key: bytes) -> bytes:
    body = pickle.dumps((entry.identity, entry.dependencies, entry.findings, entry.summary, entry.files),
                        protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + hmac.digest(key, body, "sha256") + body


_SUMMARY_EMPTY = {item.name: item.default_factory() if item.default_factory is not dataclasses.MISSING
                  else item.default for item in dataclasses.fields(Summary)}


def _summary_parts(summary: Summary) -> dict[str, Any]:
    """The fields of ``summary`` that are not empty (a file's summary has a few), counters as
    plain dicts: a small entry, quick to load. Every field's empty value is false (0, False,
    an empty counter, dict or list), and a counter that holds a key counted 0 is kept whole."""
    return {name: dict(value) if isinstance(value, Counter) else value
            for name, value in vars(summary).items() if value and name in _SUMMARY_EMPTY}


def _parts_view(parts: dict[str, Any]) -> SimpleNamespace:
    """A summary given by its parts, as :meth:`Summary.update` reads one (it never writes the
    summary it adds): building a Summary of empty counters per cached file would cost more
    than reading its entry. Plain dicts add into counters as counters do."""
    view = SimpleNamespace(**_SUMMARY_EMPTY)
    view.__dict__.update(parts)
    return view


@dataclass
class CachedResult:
    """A task's result read from the cache: a :class:`FileResult` to merge (``summary`` is a
    read-only view that :meth:`Summary.update` adds), never to change."""

    path: str
    findings: list
    summary: SimpleNamespace
    files: int
    errors: tuple = ()

    @property
    def cached(self) -> int:
        return self.files


def _decode_entry(data: bytes, key: bytes) -> _Entry | None:
    """The entry in ``data``, or None when it is truncated, damaged, of another format or not
    signed with ``key`` (nothing of it is unpickled then)."""
    head = len(MAGIC) + CHECKSUM_BYTES
    if len(data) <= head or not data.startswith(MAGIC):
        return None
    body = memoryview(data)[head:]
    if not hmac.compare_digest(hmac.digest(key, body, "sha256"), data[len(MAGIC):head]):
        return None
    try:
        identity, dependencies, findings, summary, files = _ResultUnpickler(io.BytesIO(body)).load()
    except Exception:  # a well-formed checksum over a body of another version of the classes
        log.debug("cache entry could not be loaded", exc_info=True)
        return None
    if not (isinstance(dependencies, list) and isinstance(findings, list) and isinstance(summary, dict)
            and set(summary) <= _SUMMARY_EMPTY.keys() and isinstance(files, int)):
        return None
    return _Entry(identity, dependencies, findings, summary, files)


@dataclass
class Batch:
    """A block's lookup: each task's identity and, once known, its entry as the block's pack
    will hold it, (dependencies, (findings, summary parts, files)), None while not cached;
    ``key`` names the pack, ``hit`` is its merged result when still valid, ``pack`` the
    entries read from it (identity -> (dependencies, place in its results)) and ``results``
    their results, unpickled when first needed; ``fresh`` when the pack must be written."""

    identities: list[str | None]
    entries: list[tuple[list, tuple] | None]
    key: str | None = None
    hit: CachedResult | None = None
    pack: dict[str, tuple[list, int]] | None = None
    results: bytes | list | None = None
    fresh: bool = False

    def result(self, place: int) -> tuple[list, dict[str, Any], int] | None:
        """The result at ``place`` of the pack read, or None when it holds none there."""
        if isinstance(self.results, bytes):
            self.results = _load_results(self.results)
        if self.results is None or not 0 <= place < len(self.results):
            return None
        return self.results[place]


def blocks(tasks: Iterable[FileTask]) -> Iterator[list[FileTask]]:
    """``tasks`` cut into the blocks whose results share a pack: a block ends after a task
    whose path hashes to 0 modulo :data:`BLOCK_FILES`, or after :data:`MAX_BLOCK_FILES` tasks.
    The cuts depend on the paths alone, not on where a batch began: a file added to or removed
    from a dataset changes the pack of its own block, and the next audit finds the others."""
    block: list[FileTask] = []
    for task in tasks:
        block.append(task)
        if (zlib.crc32(task.path.encode("utf-8", "surrogateescape")) % BLOCK_FILES == 0
                or len(block) >= MAX_BLOCK_FILES):
            yield block
            block = []
    if block:
        yield block


def _result_blob(findings: list, parts: dict[str, Any], files: int) -> bytes:
    """A result as a pack keeps it: unpickled only when it is used."""
    return pickle.dumps((findings, parts, files), protocol=pickle.HIGHEST_PROTOCOL)


def _picklable(result: tuple) -> bool:
    try:
        pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return False
    return True


def _is_result(result: Any) -> bool:
    """Whether ``result`` has the shape of :func:`_result_blob`'s (findings, parts, files)."""
    return (isinstance(result, tuple) and len(result) == 3 and isinstance(result[0], list)
            and isinstance(result[1], dict) and set(result[1]) <= _SUMMARY_EMPTY.keys() and isinstance(result[2], int))


def _load_result(blob: bytes) -> tuple[list, dict[str, Any], int] | None:
    """The result of :func:`_result_blob`, or None when it is not one."""
    try:
        result = _ResultUnpickler(io.BytesIO(blob)).load()
    except Exception:  # a signed body of another version of the classes
        log.debug("cached result could not be loaded", exc_info=True)
        return None
    return result if _is_result(result) else None


def _load_results(blob: bytes) -> list | None:
    """The results of a pack's entries, pickled together (one call for the block, not one per
    file), each as :func:`_result_blob` keeps one; None unless every one is one."""
    try:
        results = _ResultUnpickler(io.BytesIO(blob)).load()
    except Exception:
        log.debug("cached results could not be loaded", exc_info=True)
        return None
    return results if isinstance(results, list) and all(_is_result(result) for result in results) else None


def _encode_pack(key: str, merged: bytes | None, items: list[tuple[str, list]], results: bytes,
                 secret: bytes) -> bytes:
    body = pickle.dumps((key, merged, items, results), protocol=pickle.HIGHEST_PROTOCOL)
    return PACK_MAGIC + hmac.digest(secret, body, "sha256") + body


def _decode_pack(data: bytes, key: str, secret: bytes
                 ) -> tuple[bytes | None, dict[str, tuple[list, int]], bytes] | None:
    """(merged result, {identity: (dependencies, place in the results)}, the entries' results
    pickled) of the pack ``key`` in ``data``; None when it is truncated, damaged, of another
    block or not signed with ``secret`` (nothing of it is unpickled then)."""
    head = len(PACK_MAGIC) + CHECKSUM_BYTES
    if len(data) <= head or not data.startswith(PACK_MAGIC):
        return None
    body = memoryview(data)[head:]
    if not hmac.compare_digest(hmac.digest(secret, body, "sha256"), data[len(PACK_MAGIC):head]):
        return None
    try:
        found, merged, items, results = _ResultUnpickler(io.BytesIO(body)).load()
        entries = {identity: (dependencies, place) for place, (identity, dependencies) in enumerate(items)}
    except Exception:
        log.debug("cache pack could not be loaded", exc_info=True)
        return None
    if found != key or not (merged is None or isinstance(merged, bytes)) or not isinstance(results, bytes) or not all(
            isinstance(dependencies, list) for dependencies, _ in entries.values()):
        return None
    return merged, entries, results


def _read_as(read: dict[str, tuple], path: str) -> tuple:
    """What :func:`note_bytes` noted of ``path`` under another spelling of it (the task's
    file named relative by its reader), else (None, None)."""
    place = os.path.abspath(path)
    return next((found for named, found in read.items() if os.path.abspath(named) == place), (None, None))


def _unchanged(dependency: tuple) -> bool:
    """A dependency as it was, without hashing anything: a file by its signature (a file
    whose signature moved is checked by its own entry, which hashes it)."""
    kind, path, signature, digest = dependency
    if kind == "file":
        if signature is None:
            # An object's validator is one cheap look; a hash of its bytes is left to its entry.
            return (bool(storage.url_scheme(path)) and digest.startswith(b"v:")
                    and storage.content_digest(path) == digest)
        try:
            return _signature(stat_within(path)) == signature
        except OSError:  # LeadsOutside too: a link out of the granted roots is never taken as unchanged
            return False
    if kind == "folder":
        return _listing_digest(path) == digest
    return kind == "path" and _path_kind(path) == digest


@dataclass
class CacheInfo:
    """What ``labelguard cache info`` shows."""

    directory: str
    entries: int  # files' results, in their own entries and in packs
    batches: int  # packs: the entries of a block of files with their merged result
    size: int
    max_bytes: int


class ResultCache:
    """The cache at one folder, as one process uses it."""

    def __init__(self, settings: CacheSettings):
        self.settings = settings
        self.root = os.path.join(os.path.abspath(settings.directory), STORE_VERSION)
        self._spec: tuple[Any, bytes] | None = None
        # (context, processor) -> the hash of what their tasks' identities begin with
        self._prefixes: dict[tuple[bytes, Any], Any] = {}
        self._tagged = False
        self._singles: bool | None = None
        # (the key, None) once the folder was found this user's own, else (None, why not)
        self._state: tuple[bytes | None, str | None] | None = None

    def refused(self, again: bool = False) -> str | None:
        """None when this folder may be used, else why not (a clause: "it belongs to user
        65534, not to this user (1000)"); then nothing is read from it or written to it.
        Checked once per process (``again``: once more; an audit asks at its start), making
        the folder (mode 0700) and the key when missing."""
        return self._opened(again)[1]

    def _opened(self, again: bool = False) -> tuple[bytes | None, str | None]:
        state = self._state
        if state is None or again:
            try:
                state = (_open_folder(os.path.abspath(self.settings.directory), self.root), None)
            except _Refused as exc:
                state = (None, str(exc))
            self._state = state
        return state

    def environment(self) -> bytes:
        """:func:`environment_digest`, its memo files kept in this folder when it may be used."""
        return environment_digest(None if self.refused() else self.root)

    # -- the per-file wrapper ---------------------------------------------------------------------

    def context(self, spec: Any) -> bytes:
        """What the identities of a batch's tasks share: the environment, the registered rules,
        the spec, the read limits and the audit's working folder (display paths are relative
        to it; :mod:`labelguard.core.workdir`)."""
        # Read once: the threads of a cluster worker may share this object for other specs.
        memo = self._spec
        if memo is None or memo[0] is not spec:
            memo = self._spec = (spec, hashlib.sha256(canonical(spec)).digest())
        digest = hashlib.sha256(self.environment())
        digest.update(rules_digest())
        digest.update(memo[1])
        digest.update(canonical((working_folder(), current_limits())))
        return digest.digest()

    def batch(self, tasks: Sequence[FileTask], context: bytes) -> Batch:
        """The lookup of a block of tasks (:func:`blocks`): its pack, whose merged result is
        the block's when every dependency of every task is unchanged by its signature (one
        read and one merge for the block's files), else what :meth:`run` of each task and
        :meth:`store_batch` need."""
        batch = Batch([None] * len(tasks), [None] * len(tasks))
        if len(tasks) < 2:
            return batch  # its file's entry is the block's
        for index, task in enumerate(tasks):
            if not getattr(task.processor, "cacheable", False):
                return batch
            try:
                batch.identities[index] = self._identity(task, context)
            except TypeError:
                log.debug("task of %s has an option without a canonical form: not cached", task.path,
                          exc_info=True)
                return batch
        identities = cast("list[str]", batch.identities)  # every task's was set above
        batch.key = (hashlib.sha256(":".join(identities).encode()).hexdigest()[:32]
                     + f".{len(tasks)}{PACK_SUFFIX}")
        secret = self._opened()[0]
        found = _read_own(self._path(batch.key), MAX_ENTRY_BYTES) if secret is not None else None
        if found is None or secret is None:
            return batch
        pack = _decode_pack(found[0], batch.key, secret)
        if pack is None:
            return batch
        merged, batch.pack, batch.results = pack
        if time.time() - found[1].st_mtime > TOUCH_AFTER_SECONDS:
            self._touch(batch.key)
        if merged is not None and all(_unchanged(dependency) for dependencies, _ in batch.pack.values()
                                      for dependency in dependencies):
            result = _load_result(merged)
            if result is not None:
                batch.hit = CachedResult(tasks[0].display, result[0], _parts_view(result[1]), result[2])
        return batch

    def run(self, task: FileTask, spec: Any, runner: Callable[[FileTask, Any], FileResult],
            context: bytes, batch: Batch | None = None, index: int = 0) -> FileResult | CachedResult:
        """The result cached for ``task`` when its inputs are unchanged, else
        ``runner(task, spec)``, stored. ``context`` is :meth:`context` of ``spec``; with the
        task's ``batch`` (a block's, with a key), its identity is taken from there and its
        entry is looked up in, and kept for, the block's pack."""
        if not getattr(task.processor, "cacheable", False):
            return runner(task, spec)
        identity = batch.identities[index] if batch is not None else None
        if identity is None:
            try:
                identity = self._identity(task, context)
            except TypeError:
                log.debug("task of %s has an option without a canonical form: not cached", task.path,
                          exc_info=True)
                return runner(task, spec)
        packed = batch if batch is not None and batch.key is not None else None
        declared = [task.path] + ([task.image] if task.image else [])
        kept = None
        if packed is not None and packed.pack is not None:
            kept = packed.pack.get(identity)
            loaded = packed.result(kept[1]) if kept is not None else None
            entry = _Entry(identity, kept[0], *loaded) if kept is not None and loaded is not None else None
        elif packed is None or self._has_singles():
            # No pack: the file's own entry, written where it ran outside a whole block.
            entry = self._read(identity)
        else:
            entry = None
        if entry is not None and self._still_valid(entry, declared, rewrite=packed is None):
            if packed is not None:
                if kept is None or entry.dependencies is not kept[0]:  # refreshed, or from its own entry
                    packed.fresh = True
                packed.entries[index] = (entry.dependencies, (entry.findings, entry.summary, entry.files))
            return CachedResult(task.display, entry.findings, _parts_view(entry.summary), entry.files)
        limit = current_limits().max_file_bytes
        # A local file's stat before it is read; its bytes are hashed after the task ran (or
        # taken from the reader, :func:`note_bytes`), and the result is stored only when the
        # signature was the same before, while hashing and after. An object's validator is
        # looked at before (its size comes with it: one look).
        before: list = []
        for path in declared:
            if storage.url_scheme(path):
                before.append(_hash_file(path, limit))
                continue
            try:
                # (A link that leads outside the granted roots is neither read by the reader,
                # which notes no bytes then, nor hashed: no digest, so nothing is stored.)
                st = os.stat(path)
            except OSError:
                return runner(task, spec)
            # A file over the limit is refused unread by the reader: hashing would read it all.
            if st.st_size > limit:
                return runner(task, spec)
            before.append((st, None))
        if any(st is None and digest is None for st, digest in before):
            return runner(task, spec)
        noted: list = []  # what the runner reads beyond its files, noted there
        token = _NOTED.set(noted)
        try:
            result = runner(task, spec)
        finally:
            _NOTED.reset(token)
        if not result.errors:
            dependencies = self._dependencies(declared, before, noted)
            if dependencies is not None:
                parts = _summary_parts(result.summary)
                if packed is not None:
                    # Pickled with the block's other results when its pack is written.
                    packed.fresh = True
                    packed.entries[index] = (dependencies, (result.findings, parts, result.files))
                else:
                    self._write(_Entry(identity, dependencies, result.findings, parts, result.files))
        elif packed is not None:
            packed.fresh = True  # the pack read holds an entry this task no longer has
        return result

    def store_batch(self, batch: Batch, result: FileResult) -> None:
        """Write the block's pack: the entries of its tasks that were stored or reused and, when
        every task's was, the block's merged ``result``; nothing when the pack read is still
        whole. A pack too large to be read back is written as one entry per file."""
        if batch.key is None or not batch.fresh:
            return
        secret = self._opened()[0]
        if secret is None:
            return
        items = [(identity, *entry) for identity, entry in zip(batch.identities, batch.entries)
                 if identity is not None and entry is not None]
        try:
            results = pickle.dumps([found for _, _, found in items], protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a result that cannot be pickled is computed again next time
            log.debug("a result of pack %s cannot be cached", batch.key, exc_info=True)
            items = [item for item in items if _picklable(item[2])]
            results = pickle.dumps([found for _, _, found in items], protocol=pickle.HIGHEST_PROTOCOL)
        if not items:
            _unlink(self._path(batch.key))  # a pack of entries no longer valid
            return
        whole = len(items) == len(batch.entries) and not result.errors
        try:
            merged = _result_blob(result.findings, _summary_parts(result.summary), result.files) if whole else None
        except Exception:
            log.debug("the merged result of pack %s cannot be cached", batch.key, exc_info=True)
            merged = None
        data = _encode_pack(batch.key, merged, [(identity, dependencies) for identity, dependencies, _ in items],
                            results, secret)
        if len(data) <= MAX_ENTRY_BYTES:
            self._put(self._path(batch.key), data)
            return
        for identity, dependencies, found in items:
            self._write(_Entry(identity, dependencies, *found))

    def _identity(self, task: FileTask, context: bytes) -> str:
        """The hash of the task's identity: the ``context``, the processor (its name, and its
        source when outside the package) and the task's fields, canonical as one tuple."""
        processor = task.processor
        prefix = self._prefixes.get((context, processor))
        if prefix is None:
            # What every task of a processor shares in an audit, hashed once (a third of the
            # identity's cost per file): the hash is copied and the task's fields added.
            prefix = hashlib.sha256(context)
            prefix.update(_module_source(processor.__module__))
            prefix.update(b"(" + canonical(f"{processor.__module__}.{processor.__qualname__}"))
            if len(self._prefixes) >= PREFIXES_KEPT:
                self._prefixes.clear()
            self._prefixes[(context, processor)] = prefix
        digest = prefix.copy()
        # (the fields' tuple without its opening, which the prefix holds)
        digest.update(canonical((task.path, task.display, task.image, task.image_display, task.options))[1:])
        return digest.hexdigest()[:32]

    def _path(self, identity: str) -> str:
        if identity.endswith(PACK_SUFFIX):
            # Packs in 16 folders: a first audit's few hundred packs make few folders.
            return os.path.join(self.root, PACK_FOLDER + identity[0], identity[1:])
        return os.path.join(self.root, identity[:2], identity[2:])

    def _has_singles(self) -> bool:
        """Whether the folder may hold files' own entries (those written outside a whole
        block), asked once per process: a first audit then looks up no file of a block
        without a pack, one open that fails per file. An entry another process writes
        meanwhile is not looked for (a miss, never a wrong result)."""
        if self._singles is None:
            try:
                with os.scandir(self.root) as scan:
                    self._singles = any(len(item.name) == 2 and item.is_dir(follow_symlinks=False) for item in scan)
            except OSError:
                self._singles = False
        return self._singles

    def _read(self, identity: str) -> _Entry | None:
        key = self._opened()[0]
        if key is None:
            return None
        found = _read_own(self._path(identity), MAX_ENTRY_BYTES)
        if found is None:
            return None
        entry = _decode_entry(found[0], key)
        if entry is None or entry.identity != identity:
            return None
        used = entry.used = found[1].st_mtime
        if time.time() - used > TOUCH_AFTER_SECONDS:
            self._touch(identity)
        return entry

    def _touch(self, identity: str) -> None:
        """Mark an entry used now: the sweep deletes the least recently used first."""
        try:
            os.utime(self._path(identity), follow_symlinks=_UTIME_FOLLOWS)
        except OSError:
            pass

    def _still_valid(self, entry: _Entry, declared: list[str], rewrite: bool = True) -> bool:
        """True when every dependency of the entry is as it was; when a file's signature
        changed but not its bytes (touched, copied back) the entry's dependencies are
        refreshed, and the entry rewritten with ``rewrite`` (its pack is, without), so that
        the next audit need not hash it again."""
        kinds = [(kind, path) for kind, path, _, _ in entry.dependencies[:len(declared)]]
        if kinds != [("file", path) for path in declared]:
            return False
        now = time.time_ns()
        refreshed = []
        changed = False
        for kind, path, signature, digest in entry.dependencies:
            if kind == "file" and storage.url_scheme(path):
                # An object has no signature: its validator is looked at (one HEAD), nothing rewritten.
                if _hash_file(path, current_limits().max_file_bytes)[1] != digest:
                    return False
                refreshed.append((kind, path, signature, digest))
            elif kind == "file":
                try:
                    st = stat_within(path)
                except OSError:  # LeadsOutside too: then it has no digest, and the entry is a miss
                    st = None
                if st is not None and _signature(st) == signature:
                    refreshed.append((kind, path, signature, digest))
                    continue
                st, current = _hash_file(path)
                if current != digest:
                    return False
                changed = True
                signature = _signature(st) if st is not None and not _racy(st, now) else None
                refreshed.append((kind, path, signature, digest))
            elif kind == "folder":
                if _listing_digest(path) != digest:
                    return False
                refreshed.append((kind, path, signature, digest))
            elif kind == "path":
                if _path_kind(path) != digest:
                    return False
                refreshed.append((kind, path, signature, digest))
            else:
                return False
        if changed:
            entry.dependencies = refreshed
            if rewrite:
                self._write(entry)
        return True

    def _dependencies(self, declared: list[str], before: list, noted: list,
                      read: dict[str, tuple] | None = None) -> list | None:
        """The dependencies of a result computed from ``declared`` files (``before``: their
        stat and digest) and what the processor ``noted``; None when an input changed while it
        was computed or was modified too recently to be told apart from its next version (the
        result is then not stored). ``read``: the files the processor noted reading whole
        (:func:`note_bytes`), by path as the reader named it, when already taken out of ``noted``."""
        if read is None:
            read = {item[1]: item[2:] for item in noted if item[0] == "bytes"}
            noted = [item for item in noted if item[0] != "bytes"]
        if any(kind == "uncacheable" for kind, _ in noted):
            return None
        now = time.time_ns()
        dependencies: list[tuple] = []
        for path, (st, digest) in zip(declared, before):
            if st is None and storage.url_scheme(path) and storage.content_digest(path) != digest:
                return None  # the object was replaced while it was read
            if st is not None:
                signature = _signature(st)
                if digest is None:
                    signature_read, digest = read.get(path) or _read_as(read, path)
                    if signature_read == signature:
                        # Read whole between two looks that saw one signature, the second on the
                        # descriptor read, after the last byte: the bytes are the file's.
                        if _racy(st, now):
                            return None
                        dependencies.append(("file", path, signature, digest))
                        continue
                    hashed, digest = _hash_file(path)
                    if hashed is None or digest is None or _signature(hashed) != signature:
                        return None
                try:
                    after = os.stat(path)
                except OSError:
                    return None
                if _signature(after) != signature or _racy(after, now):
                    return None
            dependencies.append(("file", path, _signature(st) if st is not None else None, digest))
        for kind, path in dict.fromkeys(noted):
            if kind == "file":
                st, digest = _hash_file(path)
                if digest is None or (st is not None and _racy(st, now)):
                    return None
                dependencies.append((kind, path, _signature(st) if st is not None else None, digest))
            elif kind == "folder":
                dependencies.append((kind, path, None, _listing_digest(path)))
            else:
                dependencies.append((kind, path, None, _path_kind(path)))
        return dependencies

    def _write(self, entry: _Entry) -> None:
        key = self._opened()[0]
        if key is None:
            return
        try:
            data = _encode_entry(entry, key)
        except Exception:  # a result that cannot be pickled is computed again next time
            log.debug("result of entry %s cannot be cached", entry.identity, exc_info=True)
            return
        if len(data) > MAX_ENTRY_BYTES:
            log.debug("result of entry %s is %d bytes, over %d: not cached", entry.identity, len(data),
                      MAX_ENTRY_BYTES)
            return
        self._singles = True
        self._put(self._path(entry.identity), data)

    def _put(self, path: str, data: bytes) -> None:
        """Write an entry or a pack into place, its shard folder made when missing."""
        if not _write_atomically(path, data) and not os.path.isdir(os.path.dirname(path)):
            try:
                self._make_folders(os.path.dirname(path))
            except OSError:
                log.debug("cannot make the folder of cache file %s", path, exc_info=True)
                return
            _write_atomically(path, data)

    def _make_folders(self, folder: str) -> None:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not self._tagged:
            self._tagged = True
            tag = os.path.join(self.settings.directory, "CACHEDIR.TAG")
            if not os.path.exists(tag):
                try:
                    with open(tag, "x", encoding="ascii") as handle:
                        handle.write(CACHEDIR_TAG)
                except OSError:
                    pass

    # -- the folder as a whole --------------------------------------------------------------------

    def writable(self) -> str | None:
        """None when entries can be written here, else why not."""
        refused = self.refused()
        if refused:
            return refused
        try:
            self._make_folders(self.root)
            probe = os.path.join(self.root, f".probe.{os.getpid()}.{time.monotonic_ns()}.tmp")
            with open(probe, "xb"):
                pass
            os.unlink(probe)
        except OSError as exc:
            return exc.strerror or type(exc).__name__
        return None

    def _entries(self) -> Iterable[tuple[str, os.stat_result]]:
        """(path, stat) of every entry and temporary file."""
        try:
            shards = [e.path for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for shard in shards:
            try:
                with os.scandir(shard) as scan:
                    for entry in scan:
                        try:
                            yield entry.path, entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
            except OSError:
                continue

    def info(self) -> CacheInfo:
        entries = batches = size = 0
        for path, st in self._entries():
            if path.endswith(".tmp"):
                continue
            if path.endswith(PACK_SUFFIX):
                batches += 1
                count = path[:-len(PACK_SUFFIX)].rpartition(".")[2]  # a pack's name ends .N.pack
                entries += int(count) if count.isdigit() else 0
            else:
                entries += 1
            size += st.st_size
        return CacheInfo(os.path.abspath(self.settings.directory), entries, batches, size, self.settings.max_bytes)

    def clear(self) -> int:
        """Delete every entry (only what labelguard wrote: the entries' folder and its marker
        files, never other files in a folder given as the cache); the number deleted."""
        count = self.info().entries
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)  # the key with the entries: a new one is made
        self._state = self._singles = None
        _unlink(os.path.join(self.settings.directory, "CACHEDIR.TAG"))
        try:
            os.rmdir(self.settings.directory)  # only when nothing else is in it
        except OSError:
            pass
        return count

    def sweep(self, force: bool = False) -> int:
        """Delete the least recently used entries until the folder is under its bound, and
        temporary files left by dead writers; at most every :data:`SWEEP_EVERY_SECONDS`
        unless ``force``. The number of entries deleted."""
        if self.refused():
            return 0
        marker = os.path.join(self.root, SWEEP_MARKER)
        now = time.time()
        if not force:
            try:
                if now - os.stat(marker).st_mtime < SWEEP_EVERY_SECONDS:
                    return 0
            except OSError:
                pass
        if not _write_atomically(marker, b""):
            return 0
        entries, total = [], 0
        for path, st in self._entries():
            if path.endswith(".tmp"):
                if now - st.st_mtime > STALE_TEMP_SECONDS:
                    _unlink(path)
                continue
            entries.append((st.st_mtime, st.st_size, path))
            total += st.st_size
        deleted = 0
        if total > self.settings.max_bytes:
            # Down to 90 %, so that the next audits do not sweep again at once.
            target = self.settings.max_bytes * 0.9
            for _, size, path in sorted(entries):
                if total <= target:
                    break
                if _unlink(path):
                    total -= size
                    deleted += 1
        return deleted


def _write_atomically(path: str, data: bytes) -> bool:
    """Write ``data`` to a temporary name beside ``path`` and rename it into place: a reader
    sees all of it or none. False when it could not (its folder missing, say)."""
    temporary = f"{path}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(temporary, flags, 0o600)
    except OSError:
        log.debug("cannot write %s", path, exc_info=True)
        return False
    try:
        try:
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        log.debug("cannot write %s", path, exc_info=True)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
    return True


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:  # another audit's sweep took it first
        return False
    return True


# ---- trusting the folder ------------------------------------------------------------------------

# A link is not followed, a pipe not waited on (its fstat tells what it is).
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_BINARY", 0))
# False where os.utime can leave a link alone (a link planted as an entry must not touch its target).
_UTIME_FOLLOWS = os.utime not in os.supports_follow_symlinks


class _Refused(Exception):
    """Why a cache folder is not trusted (a clause that completes "the result cache ... was
    not used: ...")."""


def _own(st: os.stat_result) -> bool:
    return other_owner(st) is None


def _read_own(path: str, limit: int) -> tuple[bytes, os.stat_result] | None:
    """(bytes, stat) of ``path`` when it is a regular file of this user's of at most ``limit``
    bytes, else None: missing, a link, a pipe, a device, another user's file, or larger (then
    deleted: nothing this module writes is)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _own(st):
            return None
        if st.st_size <= limit:
            # One byte more than the size: a short read is the end of the file.
            data = os.read(fd, st.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if st.st_size > limit or len(data) > limit:
        _unlink(path)
        return None
    return data, st


def _not_own_folder(st: os.stat_result) -> str | None:
    """Why a folder (its stat, links followed) is not this user's own, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    return other_owner(st)


def _open_folder(directory: str, root: str) -> bytes:
    """The key of the cache at ``directory`` (entries under ``root``), the folders (mode 0700)
    and the key made when missing; :class:`_Refused` when ``directory`` is not this user's own
    (another user's, one others may write into, a symbolic link of another user's: a link
    planted in a shared folder is not followed) or the key is not private."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except FileExistsError:
        pass  # something that is no folder: said below
    except OSError as exc:
        raise _Refused(f"it cannot be made ({exc.strerror})") from None
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise _Refused(f"it cannot be looked at ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        if other_owner(st, root_too=True):
            raise _Refused(f"it is a symbolic link of user {st.st_uid}'s")
        try:
            st = os.stat(directory)
        except OSError:
            raise _Refused("it is a symbolic link to nothing") from None
    problem = _not_own_folder(st) or not_own(directory, st)
    if problem:
        raise _Refused(problem)
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise _Refused(f"its folder {root} cannot be made ({exc.strerror})") from None
    try:
        st = os.lstat(root)  # never followed: labelguard makes it a folder
        problem = _not_own_folder(st)
        if problem:
            raise _Refused(f"{root}: {problem}")
        if POSIX and st.st_mode & 0o077:
            os.chmod(root, 0o700)  # labelguard's own folder, made before entries were signed
    except OSError as exc:
        raise _Refused(f"its folder {root} cannot be used ({exc.strerror})") from None
    return _user_key(os.path.join(root, KEY_FILE))


def _user_key(path: str) -> bytes:
    """The key at ``path``, made when missing; :class:`_Refused` unless it is a regular file of
    this user's that no one else may read or write, of :data:`KEY_BYTES` bytes."""
    if not os.path.lexists(path):
        _make_key(path)
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise _Refused(f"its key {path} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Refused(f"its key {path} is not a regular file")
        if POSIX and st.st_uid != os.geteuid():
            raise _Refused(f"its key {path} belongs to user {st.st_uid}, not to this user ({os.geteuid()})")
        if POSIX and st.st_mode & 0o077:
            raise _Refused(f"other users may read or write its key {path} (mode {stat.S_IMODE(st.st_mode):04o}); "
                           "`labelguard cache clear` deletes it with the entries")
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise _Refused(f"its key {path} is damaged ({len(key)} bytes, not {KEY_BYTES})")
    return key


def _make_key(path: str) -> None:
    """Write a new random key at ``path`` unless another process wrote one first: the key is
    written whole under a temporary name, then linked to ``path``, which fails when it exists."""
    temporary = f"{path}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            os.write(fd, os.urandom(KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process's key is the one
        except OSError:
            # A file system without hard links: a key another process wrote meanwhile is
            # replaced, and the entries it signed are misses (the cost of a race, no more).
            os.replace(temporary, path)
    except OSError as exc:
        raise _Refused(f"its key {path} cannot be written ({exc.strerror})") from None
    finally:
        _unlink(temporary)


_OPEN: dict[CacheSettings, ResultCache] = {}


def open_cache(settings: CacheSettings) -> ResultCache:
    """This process's :class:`ResultCache` for ``settings``."""
    cache = _OPEN.get(settings)
    if cache is None:
        cache = _OPEN[settings] = ResultCache(settings)
    return cache
