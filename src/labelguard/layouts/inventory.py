"""The inventory: what became of every file under an audited PATH.

Discovery says which files each dataset reads; the inventory walks the PATH once more and
gives every file that could hold labels a role: a label a dataset audited, an image a label
was paired with, a file the dataset's metadata or lists named, an image by its content or its
place, or *not audited*, with the reason. A label-capable file that no dataset audited is
LG007: a linter that read the wrong files must not say "No findings" about the right ones.

The walk costs one listing of the PATH's folders (the audit has read every label by then), and
the first bytes of each file whose role its name does not give, for at most
:data:`EXAMINED` files per PATH; past them, files are counted by extension.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
from array import array
from typing import TYPE_CHECKING, Iterable, NamedTuple

if TYPE_CHECKING:
    import numpy as np

    from labelguard.core.tasks import FileTask

from labelguard.core.records import FileFacts, UnauditedLabels
from labelguard.core import storage
from labelguard.core.text import plural
from labelguard.layouts.base import LAYOUTS, MASKS, Discovery
from labelguard.layouts.conventions import IMAGE_DIRS, LABEL_TOKENS, is_mask_dir
from labelguard.core.paths import display_path, is_below
from labelguard.layouts.folders import yolo_rows_in
from labelguard.readers.base import ReadError, read_head
from labelguard.readers.masks import MASK_EXTENSIONS, PHOTO_EXTENSIONS, mask_extension
from labelguard.layouts.tables.data_list import is_data_list_head
from labelguard.layouts.tables.reader import head_layout

# Files examined by their first bytes per PATH; the rest are counted, not examined.
EXAMINED = 2000
# Files named per reason in a report; the counts are always whole.
SHOWN = 5
# Files of one folder looked up at a time.
CHUNK = 4096

ANNOTATION_EXTENSIONS = (".xml", ".json", ".txt", ".csv", ".tsv")
TOKEN_EXTENSIONS = (".arrow", ".parquet", ".jsonl")
_IMAGE_DIRS = frozenset(name.lower() for name in IMAGE_DIRS)
_WORDS = re.compile(r"[^a-z0-9]+")
# PNG colour types of a photo (RGB, RGBA) as IHDR stores them, at byte 25.
_PNG_COLOUR = frozenset({2, 6})


class _Budget:
    """The files examined by their bytes so far in one walk, and the photos' stems of each
    folder listed for :func:`_named_after_a_photo`."""

    def __init__(self) -> None:
        self.count = 0
        self.photos: dict[str, set[str]] = {}

    def spent(self) -> bool:
        return self.count >= EXAMINED


class Claims:
    """The files the datasets of one audit read, by role: labels, the images they were paired
    with, and the metadata files and lists they named. Kept as 8-byte hashes of the paths in
    flat arrays (a dataset of 100,000 masks: under a megabyte, never its paths twice); looked
    up, once the audit is done, folder by folder against their sorted copies."""

    def __init__(self) -> None:
        self._held = (array("q"), array("q"), array("q"))  # labels, images, metadata
        self._sorted: tuple | None = None

    @staticmethod
    def key(path: str) -> int:
        """The key of a local path (absolute, normalised: one file, however it was spelled)."""
        return hash(os.path.abspath(path))

    def add(self, role: str, path: str) -> None:
        """Note that a dataset read ``path`` as a "label", an "image" or "metadata"."""
        self._held[ROLES.index(role) - 1].append(self.key(path))
        self._sorted = None

    def add_task(self, task: "FileTask") -> None:
        """Note a task's label and the image it was paired with."""
        self.add("label", task.path)
        if task.image:
            self.add("image", task.image)

    def add_read(self, discovery: Discovery, sources: Iterable[str]) -> None:
        """Note the metadata a dataset read: its lists, the files its spec came from
        (``sources``) and its colour map."""
        for named in (*discovery.lists, *sources, getattr(discovery.color_map, "source", None)):
            if named and not storage.url_scheme(named):
                self.add("metadata", named)

    def roles(self, keys: "np.ndarray") -> "np.ndarray":
        """For each of ``keys``: 1 a label's, 2 an image's, 3 a metadata file's, 0 none's (a
        file read in two roles has the first)."""
        import numpy as np

        if self._sorted is None:
            self._sorted = tuple(np.sort(np.frombuffer(held, np.int64)) for held in self._held)
        roles = np.zeros(len(keys), np.int8)
        for code in (3, 2, 1):
            ordered = self._sorted[code - 1]
            if len(ordered):
                place = np.minimum(np.searchsorted(ordered, keys), len(ordered) - 1)
                roles[ordered[place] == keys] = code
        return roles

    def role(self, path: str) -> str | None:
        """"label", "image", "metadata" or None for a file no dataset read."""
        import numpy as np

        return ROLES[int(self.roles(np.array([self.key(path)], np.int64))[0])]


ROLES = (None, "label", "image", "metadata")


# Plain classes, not dataclasses: this module is imported by every audit, and a dataclass
# costs a fraction of a millisecond of start-up to build.
class Unaudited:
    """Files of one kind no dataset audited, with why."""

    def __init__(self, kind: str, reason: str, label: bool = True) -> None:
        self.kind = kind
        self.reason = reason
        self.files: list[str] = []  # the first SHOWN, as shown
        self.count = 0
        self.label = label  # could hold labels (LG007), else only said (a file left out, not listed)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "reason": self.reason, "count": self.count, "files": self.files,
                "lg007": self.label}


class Inventory:
    """What became of the files under one dataset's root (or, for ``dataset`` None, of the
    files under a PATH that lie in no dataset)."""

    def __init__(self, root: str, taken: bool = True, why_not: str = "") -> None:
        self.root = root
        self.labels = 0
        self.images = 0  # paired with a label
        self.photos = 0  # images no label was paired with (by their kind or place): not label files
        self.metadata = 0
        self.other = 0  # files that hold no labels by their kind (READMEs, licences, code)
        self.unaudited: dict[tuple[str, str], Unaudited] = {}
        self.taken = taken
        self.why_not = why_not

    def add(self, path: str, kind: str, reason: str, label: bool) -> None:
        group = self.unaudited.get((kind, reason))
        if group is None:
            group = self.unaudited[(kind, reason)] = Unaudited(kind, reason, label=label)
        group.count += 1
        if len(group.files) < SHOWN:
            group.files.append(display_path(path))

    @property
    def not_audited(self) -> int:
        return sum(group.count for group in self.unaudited.values())

    def coverage(self, done: bool = True) -> str:
        """The report's line for this dataset (``done``: after the audit; else what an audit
        would read, as ``labelguard detect`` says it)."""
        if not self.taken:
            return f"no inventory of the files: {self.why_not}"
        # Annotation formats name their images inside the files (read by the workers), so
        # the images discovery paired and the others are one count here.
        # "took in", not "audited": a file taken in may still be unreadable (the "audited:" line
        # counts what was checked, the "unreadable:" line the rest).
        line = (f"{'took in' if done else 'would take in'} {plural(self.labels, 'label file')} and "
                f"{plural(self.images + self.photos, 'image')}, {'read' if done else 'would read'} "
                f"{plural(self.metadata, 'metadata file')}")
        if self.unaudited:
            labels = sum(group.count for group in self.unaudited.values() if group.label)
            line += f"; not audited: {plural(self.not_audited, 'file')}"
            if labels:
                line += f", {labels} of which could hold labels (LG007)"
        return line

    def to_dict(self) -> dict:
        return {"root": self.root, "taken": self.taken, "why_not": self.why_not or None, "labels": self.labels,
                "images": self.images, "other_images": self.photos, "metadata": self.metadata, "other": self.other,
                "not_audited": [group.to_dict() for group in self.unaudited.values()]}


class Found(NamedTuple):
    """A dataset as the inventory needs it."""

    root: str
    layout: str
    masks: bool  # its labels are masks: any mask container it did not read is suspect
    left_out: tuple[tuple[str, str], ...] = ()  # (pattern relative to the root, why)


def take_inventory(path: str, datasets: list[Found], claims: Claims, counts: dict[str, int],
                   listed: Iterable[str] = ()) -> dict[str | None, Inventory]:
    """The inventory of every file under ``path``, per dataset: ``datasets`` are the datasets
    found under it; ``counts`` the labels each audited (by root as given); ``listed`` the
    roots whose files were chosen by a list or a sample (their other files are "not listed",
    not LG007, and so are the files in no dataset when there are such roots). A file belongs
    to the deepest dataset root it lies in, or to None when it lies in none."""
    if storage.url_scheme(path):
        return {root_key(d.root): Inventory(display_path(d.root), taken=False,
                                            why_not="object storage is not listed a second time")
                for d in datasets}
    by_root = {root_key(d.root): d for d in datasets}
    roots = sorted(((root, d.layout) for root, d in by_root.items()), key=lambda item: -len(item[0]))
    listed = {root_key(root) for root in listed}
    inventories: dict[str | None, Inventory] = {
        root: Inventory(display_path(root)) for root, _ in roots}
    # ``counts`` are keyed as ``datasets`` give the roots
    for dataset in datasets:
        inventories[root_key(dataset.root)].labels = counts.get(dataset.root, 0)
    examined = _Budget()
    folders: Iterable[tuple[str, Iterable[str]]]
    if storage.isfile(path):
        folders = [(os.path.join(os.path.dirname(path), ""), [os.path.basename(path)])]
    else:
        folders = storage.iter_folders(path)
    top = os.path.abspath(path if storage.isdir(path) else os.path.dirname(storage.abspath(path)))
    import numpy as np

    for prefix, names in folders:
        # One folder at a time: its absolute path and its dataset worked out once, then the
        # roles of all its files in one look-up of their hashes.
        folder = os.path.abspath(prefix)
        owner = next((root for root, _ in roots if is_below(folder, root)), None)
        inventory = inventories.get(owner)
        if inventory is None:
            inventory = inventories[None] = Inventory(display_path(path))
        base = folder + os.sep
        names = iter(names)
        while True:
            # A chunk at a time: a folder of 100,000 masks is never held as a list of names.
            chunk = list(itertools.islice(names, CHUNK))
            if not chunk:
                break
            roles = claims.roles(np.fromiter((hash(base + name) for name in chunk), np.int64, len(chunk)))
            inventory.images += int(np.count_nonzero(roles == 2))
            inventory.metadata += int(np.count_nonzero(roles == 3))
            for index in np.flatnonzero(roles == 0).tolist():
                name = chunk[index]
                _classify(prefix + name, os.path.relpath(base + name, owner or top),
                          by_root.get(owner) if owner is not None else None,
                          owner in listed or (owner is None and bool(listed)), inventory, examined)
    return inventories


def inventories_of(path: str, discoveries: list[Discovery], claims: Claims, counts: dict[str, int],
                   chosen: bool) -> dict[str | None, Inventory]:
    """:func:`take_inventory` of the datasets ``discoveries`` found under ``path``;
    ``chosen``: their files were chosen by a list or a sample."""
    found = [Found(d.root, d.layout, d.layout in LAYOUTS and LAYOUTS[d.layout].can(MASKS), tuple(d.left_out))
             for d in discoveries]
    return take_inventory(path, found, claims, counts, listed=[d.root for d in discoveries] if chosen else ())


def root_key(root: str) -> str:
    """How :func:`take_inventory` keys a dataset's root: absolute, normalised (a URL as it is)."""
    return root if storage.url_scheme(root) else os.path.abspath(root)


def _classify(path: str, where: str, dataset: Found | None, listed: bool, inventory: Inventory,
              examined: "_Budget") -> None:
    """Give a file no dataset read its role, or its reason for not being audited; ``where``
    is its path below its dataset's root (or below the PATH, for a file in no dataset)."""
    lower = path.lower()
    extension = mask_extension(lower)
    absolute = os.path.abspath(path)
    words = set(_WORDS.split(where.lower()))
    folders = {part.lower() for part in where.split(os.sep)[:-1]}
    read_by = f"the {dataset.layout} layout read this dataset and reads no such file here" if dataset else \
        "in no dataset found under the PATH"
    if dataset is not None:
        relative = where.replace(os.sep, "/")
        why = next((why for pattern, why in dataset.left_out if fnmatch.fnmatchcase(relative, pattern)), None)
        if why is not None:
            inventory.add(path, "file", f"left out by the {dataset.layout} layout: {why}", label=False)
            return
    if listed:
        inventory.add(path, "file", "not named by the list or sample the audit was given", label=False)
        return
    if extension in PHOTO_EXTENSIONS:
        inventory.photos += 1  # a photo no label was paired with (COCO's, an unannotated one)
        return
    if extension in MASK_EXTENSIONS:
        # In a dataset of annotation files, a mask container is an image unless its name or
        # folder says label; among masks, any one not read is suspect.
        named_label = bool(words & LABEL_TOKENS) or any(is_mask_dir(folder) for folder in folders) or \
            _named_after_a_photo(absolute, examined)
        if folders & _IMAGE_DIRS or (dataset is not None and not dataset.masks and not named_label) or (
                not named_label and _colour_png(path, examined)):
            inventory.photos += 1
            return
        inventory.add(path, f"{extension[1:].upper()} file", read_by, label=True)
        return
    kind = _annotation_kind(path, lower, examined)
    if kind is None:
        inventory.other += 1
    elif kind == "metadata":
        inventory.metadata += 1
    else:
        inventory.add(path, kind, read_by, label=True)


def _named_after_a_photo(path: str, examined: "_Budget") -> bool:
    """True when a photo beside ``path`` has its name up to a separator (``x.jpg`` beside
    ``x_m.png``, ``x_mask.png``): the file is that photo's label, whatever its colours."""
    if examined.spent():
        return False
    examined.count += 1
    folder, name = os.path.split(path)
    stem = name[:-len(mask_extension(name))]
    photos = examined.photos.get(folder)
    if photos is None:
        try:
            names = storage.listdir(folder)
        except OSError:
            names = []
        photos = examined.photos[folder] = {n[:-len(mask_extension(n))] for n in names
                                            if mask_extension(n.lower()) in PHOTO_EXTENSIONS}
    return any(stem.startswith(photo) and len(stem) > len(photo) and stem[len(photo)] in "_-." for photo in photos)


def _colour_png(path: str, examined: "_Budget") -> bool:
    """True when ``path`` is a PNG whose header says RGB or RGBA (a photo, unless its name or
    folder says label)."""
    if not path.lower().endswith(".png") or examined.spent():
        return False
    examined.count += 1
    try:
        head = read_head(path, 33)
    except ReadError:
        return False
    return len(head) > 25 and head[12:16] == b"IHDR" and head[25] in _PNG_COLOUR


def _annotation_kind(path: str, lower: str, examined: "_Budget") -> str | None:
    """What a file no dataset read holds, by its first bytes: "VOC XML file", "COCO JSON file",
    "labelme JSON file", "YOLO label file", "token file", "table of paths and labels",
    "metadata" (a file that declares something but holds no labels), or None (nothing
    labelguard knows)."""
    if lower.endswith((".arrow", ".parquet")):
        return "token file"
    if not lower.endswith((*ANNOTATION_EXTENSIONS, *TOKEN_EXTENSIONS)):
        return None
    head = _head(path, examined)
    if head is None:
        return None
    if lower.endswith(".jsonl"):
        return "token file" if b'"input_ids"' in head else None
    if lower.endswith(".xml"):
        return "VOC XML file" if b"<annotation" in head else None
    if lower.endswith(".json"):
        if re.search(rb'"(images|annotations)"\s*:', head) and re.search(rb'"(annotations|categories)"\s*:', head):
            return "COCO JSON file"
        if re.search(rb'"shapes"\s*:', head) and re.search(rb'"imagePath"\s*:', head):
            return "labelme JSON file"
        if is_data_list_head(head):
            return "OpenMMLab JSON annotation file"  # mmpretrain/mmengine's data_list of img_path, gt_label
        return None
    if lower.endswith((".csv", ".tsv")):
        # A table of paths and labels (Kaggle's train.csv), read as the table layout reads one.
        try:
            layout = head_layout(path, head, len(head) < 4096)
        except ReadError:
            return None
        # Only a table that names files: a table of numbers may be anything (metrics, statistics).
        return "table of paths and labels" if layout is not None and layout.path_column is not None else None
    return "YOLO label file" if head.strip() and yolo_rows_in(head, path) else None


def _head(path: str, examined: "_Budget") -> bytes | None:
    """The first 4 KiB of ``path``, counted against the walk's budget; None past it or for a
    file that cannot be read."""
    if examined.spent():
        return None
    examined.count += 1
    try:
        return read_head(path, 4096)
    except ReadError:
        return None


def inventory_facts(inventory: Inventory) -> FileFacts:
    """What the ``files`` rules judge of an inventory (LG007): each kind of label-capable file
    no dataset audited."""
    return FileFacts(root=inventory.root, unaudited=[
        UnauditedLabels(group.kind, group.reason, group.count, tuple(group.files))
        for group in inventory.unaudited.values() if group.label])
