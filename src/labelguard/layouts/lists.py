"""File lists and the names written in them: the one reading of lists and the one resolution
of a name a list or a dataset file writes.

* **lists** (:func:`select_from_lists`): every list file (``--list``, VOC's ImageSets, a
  data.yaml's .txt splits, darknet's train.txt) is read once, its entries resolved by the
  layout's naming rule (:class:`ListRule`: paths, stems, VOC ids, images whose labels follow
  from them) against its roles (:class:`Role`); an entry that names an image selects the
  image's labels, never the image.
* **names**: :func:`resolve_entry` is the one resolution of a name written in a list or a
  dataset file, :func:`resolve_declared` of a path a dataset file declares in a field;
  :class:`DirectoryListings` answers "does it exist" for many names at once.
* **findings**: none are made here: what was resolved becomes an
  :class:`~labelguard.core.records.EntriesRecord` (the entries that name no file, those that
  lead outside the root, a list's unclean lines), judged by the ``entries`` rules (LG003,
  LG004, LG005) through :func:`judged`.
* **the dataset root** of what a list or a dataset file names is the folder of the file that
  names it (a data.yaml's or obj.data's folder, or the folder below it that a data.yaml's
  ``path`` names), or the root of the layout that reads a list; every path a field names
  (splits, list files, names files, a saved dataset's data files) and every list entry must
  lie in it, as written and, for the declared paths, with links resolved. What leaves it is
  LG005 naming the field or line, and is never opened, listed or walked: its content never
  reaches a report. A list inside the dataset that is a link out of it is not read
  (:func:`~labelguard.layouts.metadata.linked_outside`).

A name is looked up in dictionaries (one listing per folder), never compared pairwise or
stat-ed per try.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Container, Sequence

from labelguard.core import storage
import labelguard.rules  # noqa: F401  (registers every rule: the entries rules judge what is read here)
from labelguard.core.records import EntriesRecord, EntryProblem
from labelguard.core.rules import run_rules
from labelguard.core.spec import NO_SPEC
from labelguard.rules._unread import not_read
from labelguard.core.cache import note_folder
from labelguard.core.paths import display_path, inside_root, resolves_inside
from labelguard.core.findings import Finding
from labelguard.layouts.metadata import linked_outside
from labelguard.layouts.pairing import extension_of, may_carry_convention, pair_key, strip_extension
from labelguard.readers.base import ReadError
from labelguard.readers.lists import ListFile, parse_list

# File systems that usually fold case (a listing then cannot tell that "A.PNG" opens "a.png").
CASE_FOLDING = sys.platform in ("darwin", "win32", "cygwin")


@dataclass(frozen=True)
class ListRule:
    """How the entries of one kind of list name files: a naming rule a layout declares.

    Attributes:
        extensions: tried after an entry written without one.
        ids: entries are ids (Pascal VOC's ImageSets): the first field of a line is a file's
            path below its role's folder, without extension, matched exactly (per-class lists
            add ``1`` / ``-1`` after it). An id is never looked for elsewhere.
        stems: an entry may name a file by its stem alone (mmsegmentation splits), when one
            file has that stem.
        loose: a leading ``../`` or leading folders may be dropped from an entry, as trainers
            do (darknet's ``data/``, Roboflow's ``../``).
        folders: an entry may name a folder (the splits of a data.yaml).
        images: entries name images, and each image's label follows from it (Ultralytics
            and darknet image lists); otherwise an entry names the label file itself.
        required: the role an entry must have a file of ("annotation", "mask"); None: any.
        images_suffice: an entry whose image has no label is not missing (a VOC test split
            comes without annotations; Ultralytics takes such an image for a background).
    """

    extensions: tuple[str, ...] = ()
    ids: bool = False
    stems: bool = True
    loose: bool = False
    folders: bool = False
    images: bool = False
    required: str | None = None
    images_suffice: bool = False


@dataclass(frozen=True)
class Role:
    """Files that play one part in a dataset (its annotations, masks or images), as a
    layout declares them.

    Attributes:
        name: what the files are, in messages ("annotation", "mask", "image").
        files: the files found.
        folder: the folder a loader opens them in by id (VOC's ``Annotations/<id>.xml``);
            None when they are named by path only.
        extension: the extension an id gets there, in messages (".xml"; "" for any).
    """

    name: str
    files: Sequence[str]
    folder: str | None = None
    extension: str = ""

    def expected(self, name: str, root: str) -> str:
        """Where a loader opens the file of id ``name``, as shown (``Annotations/x.xml``)."""
        where = os.path.join(self.folder or root, name + (self.extension or ".*"))
        return storage.relpath(where, root) if inside_root(where, root) else display_path(where)


def image_sets_rule(list_path: str, root: str, required: str, extensions: tuple[str, ...]) -> ListRule:
    """The naming rule of a list of a Pascal VOC folder ``root``: under ``ImageSets`` (Main,
    Segmentation, Action, Layout), image ids of which a test split may come without labels
    (VOC2012's test images are published without annotations or masks); elsewhere, paths
    or stems of the files ``extensions`` name."""
    if inside_root(list_path, os.path.join(root, "ImageSets")):
        return ListRule(ids=True, required=required, images_suffice="test" in os.path.basename(list_path).lower())
    return ListRule(extensions=extensions)


@dataclass
class ListSelection:
    """The files a set of lists names, and the findings about the lists themselves."""

    paths: list[str] = field(default_factory=list)  # resolved label files (masks, annotations), in order
    pairs: dict[str, str] = field(default_factory=dict)  # label path -> the image named with it
    unlabelled: list[str] = field(default_factory=list)  # images named where images suffice, without a label
    findings: list[Finding] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)  # the list files read, as given
    errors: list[str] = field(default_factory=list)  # internal errors of the rules that judged them


def judged(record: EntriesRecord, errors: list[str]) -> list[Finding]:
    """The findings of the ``entries`` rules (LG003, LG004, LG005) on what discovery resolved of
    a file that names other files, through the one runner: a rule that crashes is an entry of
    ``errors`` and the others still run."""
    found: list[Finding] = []
    run_rules("entries", record, NO_SPEC, record.display, found, errors)
    return found


def read_list(list_path: str) -> tuple[ListFile | None, list[Finding]]:
    """A parsed file list, or None and the LG001 finding of a list that cannot be read."""
    try:
        return parse_list(list_path), []
    except ReadError as exc:
        return None, [not_read(display_path(list_path), ReadError(f"cannot read the file list: {exc}"))]


def stem_index(candidates: Sequence[str]) -> dict[str, list[str]]:
    """Stem and :func:`pair_key` -> the ``candidates`` that have it, for entries named without
    folder or extension."""
    by_stem: dict[str, list[str]] = {}
    for path in candidates:
        base = os.path.basename(path)
        by_stem.setdefault(strip_extension(base).lower(), []).append(path)
        key = pair_key(base)
        if key != strip_extension(base).lower():
            by_stem.setdefault(key, []).append(path)
    return by_stem


def _by_stem(by_stem: dict[str, list[str]], name: str) -> set[str]:
    """The files of ``by_stem`` that answer to the stem of ``name``."""
    base = os.path.basename(name)
    stem = strip_extension(base)
    found = by_stem.get(stem.lower())
    if not found and may_carry_convention(stem):
        found = by_stem.get(pair_key(base))
    return set(found or ())


class _Lists:
    """One reading of a set of lists against a dataset's roles (see :func:`select_from_lists`)."""

    def __init__(self, root: str, roles: Sequence[Role], images: Role | None,
                 label_of: Callable[[str], Sequence[str]] | None):
        self.root = storage.abspath(root)
        self.roles = roles
        self.images = images
        self.role_of = {path: role.name for role in roles for path in role.files}
        self.image_set = frozenset(images.files) if images else frozenset()
        self.stems: list[dict[str, list[str]]] | None = None
        self.label_of = label_of
        self.ids: list[tuple[Role, _Ids]] | None = None
        self.image_ids: _Ids | None = None
        self.known: dict[str, str] | None = None
        self.selection = ListSelection()
        self.chosen: set[str] = set()
        self.listings = DirectoryListings()

    def as_found(self, path: str) -> str:
        """``path`` (resolved, absolute) as the layout found it: the label or image of that
        file in the form the layout's pairs and tasks use, else ``path`` itself."""
        if self.known is None:
            files = [*self.role_of, *self.image_set]
            self.known = {storage.abspath(file): file for file in files}
        return self.known.get(path, path)

    def read(self, list_path: str, rule: ListRule) -> None:
        # A list in the dataset (not one the user named outside it) is data: a link out of it is not read.
        outside = linked_outside(list_path, self.root, "file list") if inside_root(list_path, self.root) else []
        if outside:
            self.selection.findings.extend(outside)
            return
        self.selection.lists.append(list_path)
        listing, findings = read_list(list_path)
        self.selection.findings.extend(findings)
        if listing is None:
            return
        list_dir = os.path.dirname(storage.abspath(list_path))
        missing: list[EntryProblem] = []
        escaping: list[EntryProblem] = []
        for entry in listing.entries:
            problems = (self._by_id(entry.fields[0], rule) if rule.ids
                        else self._by_path(entry.text, entry.fields, list_dir, rule))
            for name, says, detail, escapes in problems:
                (escaping if escapes else missing).append(
                    EntryProblem(f"line {entry.line}", name, says, detail, (("line", entry.line),)))
        self.selection.findings.extend(judged(EntriesRecord(
            display_path(list_path), display_path(self.root), missing, escaping, unclean=listing.problems,
            lines=listing.examples), self.selection.errors))

    def _choose(self, label: str, image: str | None = None) -> None:
        if label not in self.chosen:
            self.chosen.add(label)
            self.selection.paths.append(label)
            if image is not None and image != label:
                self.selection.pairs[label] = image

    def _by_id(self, name: str, rule: ListRule) -> list[tuple[str, str, str, bool]]:
        """Select the files of id ``name``; the problems with it."""
        if self.ids is None:
            self.ids = [(role, _Ids(role, {p for p in role.files})) for role in self.roles]
        if (".." in name or name.startswith(("/", "\\"))) and not inside_root(os.path.join(self.root, name), self.root):
            return [(name, "", "", True)]
        found = False
        for role, by_id in self.ids:
            for label in by_id.get(name):
                self._choose(label)
                found = found or rule.required in (None, role.name)
        if found:
            return []
        if self.image_ids is None and self.images is not None:
            self.image_ids = _Ids(self.images, self.image_set)
        images = self.image_ids.get(name) if self.image_ids is not None else []
        if images and rule.images_suffice:
            self.selection.unlabelled.append(images[0])
            return []
        looked = "no " + " or ".join(role.expected(name, self.root) for role, _ in self.ids
                                     if rule.required in (None, role.name))
        if images:
            looked += f" for its image {display_path(images[0])}"
        elif rule.images_suffice and self.images is not None:
            looked += f", no image {self.images.expected(name, self.root)}"
        return [(name, "", looked, False)]

    def _by_path(self, text: str, fields: tuple[str, ...], list_dir: str,
                 rule: ListRule) -> list[tuple[str, str, str, bool]]:
        """Select the files a line names by path; the problems with it."""
        # A whole line of several fields is only ever a file name with spaces, never a stem.
        whole = self._resolve(text, list_dir, rule, stems=rule.stems and len(fields) == 1)
        if whole[0] or len(fields) == 1:
            parts = [(text, whole)]
        else:
            parts = [(name, self._resolve(name, list_dir, rule, rule.stems)) for name in fields]
        found = []
        problems = []
        for name, (paths, escapes) in parts:
            if not paths and len(parts) > 1 and name.lstrip("+-").isdigit():
                continue  # a number beside a name (VOC's "id 1", "path class") names no file
            if escapes:
                problems.append((name, "", "", True))
            elif not paths:
                problems.append((name, "", "", False))
            else:
                found.append(paths)
        if len(found) > 1:
            for label in found[-1]:  # "image label" lines name the label last
                self._choose(label, found[0][0])
        elif found and len(found[0]) > 1:
            for label in found[0]:  # a stem that names a label of each role (VOC: x.xml and x.png)
                self._choose(label)
        elif found:
            problems.extend(self._named_alone(text, found[0][0], rule))
        return problems

    def _resolve(self, name: str, list_dir: str, rule: ListRule, stems: bool) -> tuple[list[str], bool]:
        """(the files ``name`` names, escapes the root): the file it resolves to, as the
        layout found it; else, by stem, the one label of each role that has that stem."""
        path, escapes = resolve_entry(name, self.root, list_dir, rule, self.listings)
        if path is not None:
            return [self.as_found(path)], escapes
        if escapes or not stems:
            return [], escapes
        return self._by_stems(name), False

    def _by_stems(self, name: str) -> list[str]:
        """The labels that answer to the stem of ``name``: one of each role that has exactly
        one (a stem shared by an annotation and a mask names both, never neither)."""
        if self.stems is None:
            self.stems = [stem_index(role.files) for role in self.roles]
        found = []
        for index in self.stems:
            matches = _by_stem(index, name)
            if len(matches) == 1:
                found.append(matches.pop())
        return found

    def _named_alone(self, text: str, path: str, rule: ListRule) -> list[tuple[str, str, str, bool]]:
        """Select what a line naming one file selects: a label itself; for an image, its
        labels (a problem when it has none and images do not suffice)."""
        if path in self.role_of:
            self._choose(path)
            return []
        is_image = rule.images or path in self.image_set
        labels = self._labels_of(path)
        for label in labels:
            self._choose(label, path)
        if labels:
            return []
        if not is_image:
            self._choose(path)  # a file the layout did not find, named as a label
        elif rule.images_suffice:
            self.selection.unlabelled.append(path)
        else:
            what = rule.required or (self.roles[0].name if len(self.roles) == 1 else "label")
            return [(text, f"is an image without {_article(what)} {what}", display_path(path), False)]
        return []

    def _labels_of(self, image: str) -> list[str]:
        if self.label_of is not None:
            return list(self.label_of(image))
        # Without the layout's pairing: the labels that share the image's stem.
        return self._by_stems(image)


class _Ids:
    """The files of a role by id: ``<folder>/<id><extension>``, as its loader opens them,
    looked up for each extension the role's files have (one, mostly)."""

    def __init__(self, role: Role, members: Container[str]):
        self.members = members
        self.prefix = os.path.join(role.folder or "", "")
        self.extensions = (role.extension,) if role.extension else tuple(sorted(
            {extension_of(path) for path in role.files}))

    def get(self, name: str) -> Sequence[str]:
        if len(self.extensions) == 1:
            path = self.prefix + name + self.extensions[0]
            return (path,) if path in self.members else ()
        return [path for path in (self.prefix + name + ext for ext in self.extensions) if path in self.members]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def select_from_lists(
    lists: Sequence[str],
    root: str,
    candidates: Sequence[str] | Sequence[Role],
    extensions: tuple[str, ...] = (),
    *,
    rule: ListRule | Callable[[str], ListRule] | None = None,
    images: Role | None = None,
    label_of: Callable[[str], Sequence[str]] | None = None,
) -> ListSelection:
    """Read every list once and resolve its entries against ``root`` by the layout's naming
    rule: the one reading of file lists (LG004 on unclean lines, LG003 for entries that name
    no file, LG005 for entries that lead outside the root).

    Args:
        lists: the list files.
        root: the dataset root entries are relative to, and must stay inside.
        candidates: the label files an entry may name: paths, or the layout's roles (VOC's
            annotations and masks, each in its folder).
        extensions: tried after an entry written without one (when no ``rule`` is given).
        rule: the lists' naming rule, or a function of a list's path giving it.
        images: the dataset's images: an entry naming one selects its labels (``label_of``),
            never the image itself.
        label_of: image -> its label files, as the layout pairs them; by default the one
            candidate that shares the image's stem.

    Entries resolve as :func:`resolve_entry` says, or by id (:attr:`ListRule.ids`). An
    "image label" line names the label last; its image is kept as the label's pair.
    """
    if not lists:
        return ListSelection()
    roles = list(candidates) if candidates and isinstance(candidates[0], Role) else [
        Role("file", list(candidates))]  # type: ignore[arg-type]
    reading = _Lists(root, roles, images, label_of)  # type: ignore[arg-type]
    for list_path in lists:
        chosen = rule(list_path) if callable(rule) else rule or ListRule(extensions=extensions)
        reading.read(list_path, chosen)
    return reading.selection


class DirectoryListings:
    """Answers "is this path a file (or a folder)?" from one listing per folder, read the
    first time a path in it is asked about: the cost of resolving a list of millions of
    entries is its folders' listings and a dictionary look-up per entry, never a stat per try
    (a list of 2,000,000 missing entries tried with 15 extensions under two folders would
    be 60,000,000 stats).

    A name a listing lacks is confirmed with a real stat where file systems usually fold
    case (macOS, Windows), since "A.PNG" opens "a.png" there.
    """

    def __init__(self) -> None:
        self._folders: dict[str, _Listing] = {}
        self._plain: dict[tuple, tuple] = {}

    def _listing(self, folder: str) -> "_Listing":
        found = self._folders.get(folder)
        if found is None:
            found = self._folders[folder] = _Listing(folder)
        return found

    def find_plain(self, relative: str, bases: tuple[str, str], root: str, extensions: tuple[str, ...],
                   folders: bool) -> tuple[str | None, bool]:
        """:func:`resolve_entry`'s first tries for a plain relative name (no ``..``, no ``.``
        part, no backslash, not absolute), with the folder it names looked up once for all
        the names in it: (path or None, escapes the root)."""
        folder, _, name = relative.rpartition("/")
        key = (bases, folder)
        places = self._plain.get(key)
        if places is None:
            looked_up: list[tuple[str, _Listing, bool]] = []
            for base in dict.fromkeys(bases):
                where = storage.normpath(os.path.join(base, folder)) if folder else base
                looked_up.append((where, self._listing(where), inside_root(where, root)))
            places = self._plain[key] = tuple(looked_up)
        for where, listing, inside in places:
            entries = listing.entries if folders else listing.files
            if name in entries:
                return os.path.join(where, name), not inside
            longer = listing.by_prefix.get(name)
            if longer:
                for ext in extensions:
                    if name + ext in longer and name + ext in entries:
                        return os.path.join(where, name + ext), not inside
        if CASE_FOLDING:
            find = _stat_finder(folders)
            for where, _, inside in places:
                found = find(os.path.join(where, name), extensions)
                if found is not None:
                    return found, not inside
        return None, False

    def holds(self, path: str, extensions: tuple[str, ...] = (), *, folders: bool = False) -> str | None:
        """The first of ``path`` and ``path`` + each of ``extensions`` that is a file (or, with
        ``folders``, any entry), from their folder's listing; None."""
        folder, name = os.path.split(path)
        listing = self._listing(folder)
        entries = listing.entries if folders else listing.files
        if name in entries:
            return path
        longer = listing.by_prefix.get(name)
        if longer:
            for ext in extensions:
                if name + ext in longer and name + ext in entries:
                    return path + ext
        if CASE_FOLDING:
            return _stat_finder(folders)(path, extensions)
        return None


class _Listing:
    """One folder's entries: its files, all its entries, and the names that extend a shorter
    name by an extension ("a.nii.gz" under "a" and "a.nii")."""

    __slots__ = ("files", "entries", "by_prefix")

    def __init__(self, folder: str) -> None:
        files: set[str] = set()
        entries: set[str] = set()
        note_folder(folder)  # a cached result that looked names up here depends on the listing
        try:
            with storage.scandir(folder) as scan:
                for entry in scan:
                    # As os.path.isfile and os.path.exists see them: links followed, a
                    # broken link is nothing.
                    try:
                        if entry.is_file():
                            files.add(entry.name)
                            entries.add(entry.name)
                        elif entry.is_dir() or not entry.is_symlink() or storage.exists(entry.path):
                            entries.add(entry.name)
                    except OSError:
                        pass
        except OSError:
            pass
        by_prefix: dict[str, set[str]] = {}
        for name in entries:
            dot = name.find(".", 1)
            while dot > 0:
                by_prefix.setdefault(name[:dot], set()).add(name)
                dot = name.find(".", dot + 1)
        self.files, self.entries, self.by_prefix = files, entries, by_prefix


def resolve_entry(name: str, root: str, list_dir: str, rule: ListRule,
                  listings: "DirectoryListings | None" = None) -> tuple[str | None, bool]:
    """(path or None, escapes_root) for one name written in a list or a dataset file: the
    one resolution of such names.

    Tried in order: the name under the root and the list's folder, with or without one of
    the rule's extensions; a name starting with '/' as root-relative (CamVid lists), then
    as the absolute path it is; with :attr:`ListRule.loose`, the name without a leading
    ``../`` or without leading folders, under the root and the list's folder, when that
    lands inside the root (darknet reads ``data/obj_train_data/1.jpg`` from the folder
    above its ``data/``, wherever labelguard runs). A name found outside ``root``, or that
    leads outside it and is found nowhere, escapes it. (Names that are stems are looked up
    among the dataset's files by :func:`select_from_lists`.)

    ``listings`` answers "does it exist" from one listing per folder instead of a stat per
    try: a list of many entries passes one for all of them."""
    if listings is not None and _plain(name):
        found, escapes = listings.find_plain(name, (root, list_dir), root, rule.extensions, rule.folders)
        if found is not None or not rule.loose:
            return found, escapes
    find = _stat_finder(rule.folders) if listings is None else partial(listings.holds, folders=rule.folders)
    absolute = storage.isabs(name)
    relative = name.lstrip("/\\") if absolute else name
    for base in (root, list_dir):
        found = find(storage.normpath(os.path.join(base, relative)), rule.extensions)
        if found is not None:
            return found, not inside_root(found, root)
    # A local path is never looked at for a dataset in object storage (nor a URL for a local
    # one): it lies outside the root either way.
    if absolute and bool(storage.url_scheme(name)) == bool(storage.url_scheme(root)) and find(storage.normpath(name)):
        path = storage.abspath(name)
        return path, not inside_root(path, root)
    if rule.loose and not absolute:
        for written in _loose_forms(relative):
            for base in (root, list_dir):
                found = find(storage.normpath(os.path.join(base, written)), rule.extensions)
                if found is not None and inside_root(found, root):
                    return found, False
    return None, not inside_root(os.path.join(root, relative), root)


def resolve_declared(name: str, root: str, base: str, rule: ListRule) -> tuple[str | None, bool, str]:
    """(path, leaves the dataset, why) for a path a dataset file declares in one of its fields
    (a data.yaml's ``path`` and splits, an obj.data's lists and ``names``, a saved dataset's
    data files): :func:`resolve_entry` under ``root`` and ``base``, stricter on what leaves.

    Such a path leaves ``root`` when it is written outside it, whether a file is there or not
    (an absolute path found nowhere under the root, a URL), or when it is a link, or lies in a
    linked folder, that resolves outside it (:func:`resolves_inside`). An absolute path is
    read as root-relative (as CamVid's lists write them) only under a ``loose`` rule, the
    trainers' lenient reading: a data.yaml's ``path: /`` is the file system's root, never
    the dataset's. A path that leaves comes back as None: it is never opened, listed or
    walked, and ``why`` says "a link to ..." when only its link leaves. A dataset declares a
    handful of these: each costs a ``realpath``, never a list entry or a file of the walk."""
    outside = storage.isabs(name) and not inside_root(storage.abspath(name), root)
    if outside and not rule.loose:
        return None, True, ""
    path, escapes = resolve_entry(name, root, base, rule)
    if escapes or (path is None and outside):
        return None, True, ""
    if path is not None and not resolves_inside(path, root):
        return None, True, f"a link to {display_path(os.path.realpath(path))}"
    return path, False, ""


def _plain(name: str) -> bool:
    """True for a relative name of plain parts: no ``..`` or ``.`` part, no backslash, not
    absolute, no doubled or trailing slash (it names the path it spells)."""
    return bool(name) and name[0] != "/" and "\\" not in name and "//" not in name and name[-1] != "/" and not (
        name.startswith("./") or name.startswith("../") or "/./" in name or "/../" in name
        or name.endswith("/.") or name.endswith("/..") or name in (".", ".."))


def _stat_finder(folders: bool) -> Callable[..., str | None]:
    """A finder that stats each try: the first of a path and the path + each of the extensions
    that is a file (any entry, with ``folders``), or None."""
    exists = storage.exists if folders else storage.isfile  # an object of object storage too

    def find(path: str, extensions: tuple[str, ...] = ()) -> str | None:
        return next((candidate for candidate in (path, *(path + ext for ext in extensions)) if exists(candidate)),
                    None)

    return find


def _loose_forms(name: str) -> list[str]:
    """``name`` without a leading ``../``, then without each leading folder, as trainers
    read them (``data/obj_train_data/1.jpg``: ``obj_train_data/1.jpg``, ``1.jpg``)."""
    normal = name.replace("\\", "/")
    forms = []
    if normal.startswith("../"):
        forms.append(normal[3:])
    parts = [p for p in normal.split("/") if p not in ("", ".")]
    forms.extend("/".join(parts[i:]) for i in range(1, len(parts)))
    return forms

