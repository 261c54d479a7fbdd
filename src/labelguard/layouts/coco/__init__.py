"""COCO JSON datasets: the layouts that hold them and the reader of one file into a record.

Layouts found: ``annotations/<flavour>_<split>.json`` beside ``images/<split>/`` (Datumaro,
the official ``train2017/`` folders, mmdet's ``<split>/``), Roboflow's
``<split>/_annotations.coco.json`` with the images beside it, a COCO file in the dataset's
root (Kaggle "relaxed" COCO), or a COCO file given as the path.

One file is one task: it is streamed once into columns (:mod:`labelguard.layouts.coco.reader`),
which :func:`coco_record` hands to the annotation rules as they are (numpy columns: a file
can hold a million annotations), with what the rules need resolved first: each
annotation's row in ``images``, the ``file_name``s looked up on disk, the categories of the
reference file of the same flavour, the panoptic PNGs. The rules judge; code choices:

* An annotation whose ``image_id`` is not in ``images`` is LG002 (an annotation without its
  image: the pairing inside the file is broken); LG003 is kept for files named in the JSON
  (``file_name``, panoptic PNGs) that do not exist on disk.
* A ``category_id`` missing from ``categories`` is LG101 (a class the dataset does not
  declare). Category ids are not class indices: they are checked against ``num_classes``
  (LG102) only when a number of classes is given, and the finding then carries the
  contiguous ``category_index_map`` (id -> index, ids sorted as torchvision, detectron2 and
  mmdet build it).
* Wrong JSON types are LG001 naming the element; the rest of the file is still checked.
"""

from __future__ import annotations

import os
import re

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.core.text import noun, spans, verb
from labelguard.core.paths import display_path
from labelguard.layouts.base import (
    CONTENT, IMAGES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.layouts.coco import editor
from labelguard.layouts.coco.reader import looks_like_coco, peek_categories, peek_file_name
from labelguard.layouts.coco.record import coco_record, is_coco_file, process_coco
from labelguard.layouts.formats import AnnotationFormat, register_format
from labelguard.rules.lg102 import category_index_map, short_map

__all__ = ["coco_record", "discover_coco", "process_coco"]

ANNOTATION_DIRS = ("annotations", "annotation", "Annotations")
COCO_NAME = re.compile(r"^(instances|person_keypoints|captions|panoptic|stuff|image_info)_.+\.json$"
                       r"|^_annotations\.coco\.json$")

# ---- discovery ---------------------------------------------------------------------------

def _json_files(folder: str) -> list[str]:
    try:
        names = storage.names_with_suffix(folder, (".json",), files_only=True)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if not n.startswith(".")]


def coco_files(root: str) -> list[str]:
    """The COCO files of a dataset: the root itself, ``annotations/*.json``, ``*.json`` in the
    root, and Roboflow's ``<split>/_annotations.coco.json``."""
    if storage.isfile(root):
        return [storage.abspath(root)] if looks_like_coco(root) else []
    if not storage.isdir(root):
        return []
    found: list[str] = []
    for name in ANNOTATION_DIRS:
        folder = os.path.join(root, name)
        if storage.isdir(folder):
            found.extend(_json_files(folder))
            break
    found.extend(_json_files(root))
    for entry in storage.folder_names(root):  # only a folder holds a file
        candidate = os.path.join(root, entry, "_annotations.coco.json")
        if storage.isfile(candidate):
            found.append(candidate)
    unique = list(dict.fromkeys(storage.abspath(p) for p in found))
    # A file named as COCO files are is kept even when broken: the audit reports why.
    return [p for p in unique if looks_like_coco(p) or COCO_NAME.match(os.path.basename(p))]


def flavour_and_split(path: str) -> tuple[str, str]:
    """('instances', 'train2017') for instances_train2017.json; Roboflow files split by folder."""
    stem = os.path.basename(path)[: -len(".json")]
    if stem.startswith("_annotations"):
        return stem, os.path.basename(os.path.dirname(path))
    match = re.match(r"^(.+?)_([^_]+)$", stem)
    if match and not stem.startswith("_"):
        return match.group(1), match.group(2)
    return stem, ""


def dataset_root(path: str) -> str:
    folder = os.path.dirname(storage.abspath(path))
    if os.path.basename(folder).lower() in {d.lower() for d in ANNOTATION_DIRS}:
        return os.path.dirname(folder)
    if os.path.basename(path) == "_annotations.coco.json":
        return os.path.dirname(folder)
    return folder


def image_dirs(path: str, options: AuditOptions) -> tuple[str, ...]:
    """Where the images of one COCO file are looked for: ``--images``, else the folders its
    layout puts them in (only those that exist)."""
    root = dataset_root(path)
    if options.images:
        return (storage.abspath(options.images), root)
    _, split = flavour_and_split(path)
    here = os.path.dirname(storage.abspath(path))
    candidates = []
    if split:
        candidates += [os.path.join(root, "images", split), os.path.join(root, split),
                       os.path.join(root, split, "images")]
    candidates += [os.path.join(root, "images"), here]
    if os.path.basename(here).lower() in {d.lower() for d in ANNOTATION_DIRS}:
        candidates.remove(here)
    found = [c for c in dict.fromkeys(candidates) if storage.isdir(c) and _holds_files(c)]
    if found and root not in found:
        found.append(root)
    return tuple(found)


# Folders below a COCO dataset's root looked into for the folder of its images.
IMAGE_SEARCH_FOLDERS = 50


def images_found_below(path: str, dirs: tuple[str, ...]) -> list[str] | None:
    """The folders below the dataset root of COCO file ``path`` (two levels at most) that hold
    its first image by its bare ``file_name``, when none of ``dirs`` holds it (NWPU VHR-10's
    ``NWPU VHR-10 dataset/positive image set/``); None when the name resolves in ``dirs`` or
    cannot be peeked."""
    name = peek_file_name(path)
    if name is None or "/" in name or "\\" in name or any(storage.isfile(os.path.join(d, name)) for d in dirs):
        return None
    root = dataset_root(path)
    found: list[str] = []
    looked = 0
    level = [root]
    for _ in range(2):
        below = []
        for folder in level:
            try:
                children = storage.folder_paths(folder, hidden=False)
            except OSError:
                continue
            for child in children:
                looked += 1
                if looked > IMAGE_SEARCH_FOLDERS:
                    return found
                if storage.isfile(os.path.join(child, name)):
                    found.append(child)
                below.append(child)
        level = below
    return found


def _holds_files(folder: str) -> bool:
    """True when ``folder`` can hold the images: a file other than JSON, or a subfolder
    (labelme2coco writes ``file_name`` as ``JPEGImages/x.jpg`` beside annotations.json)."""
    try:
        with storage.scandir(folder) as entries:
            return any((e.is_file() and not e.name.lower().endswith(".json"))
                       or (e.is_dir() and not e.name.startswith(".")) for e in entries)
    except OSError:
        return False


def discover_coco(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("coco", root)
    files = [storage.abspath(root)] if storage.isfile(root) else coco_files(root)
    if not files:
        shown = display_path(root)
        message = "no COCO JSON file found (annotations/*.json, *.json, <split>/_annotations.coco.json)"
        discovery.findings.append(unreadable(shown, message))
        return discovery
    peeked = {path: peek_categories(path) for path in files}
    references: dict[str, tuple] = {}
    for flavour in dict.fromkeys(flavour_and_split(p)[0] for p in files):
        members = [p for p in files if flavour_and_split(p)[0] == flavour and peeked[p]]
        members.sort(key=lambda p: (flavour_and_split(p)[1].lower() not in ("train", "train2017"),
                                    "train" not in p.lower(), p))
        if members:
            first = peeked[members[0]]
            assert first is not None  # not a user mistake: members are files whose categories were peeked
            references[flavour] = (members[0], tuple(first), display_path(members[0]))
    primary = _primary(references)
    discovered = None
    if primary is not None:
        categories = peeked[primary]
        assert categories is not None  # not a user mistake: it is a reference: its categories were peeked
        names = [name for _, name in sorted(categories)]
        discovered = tuple(names)
        discovery.spec = LabelSpec.from_source(display_path(primary), classes=discovered)
        ids = sorted(cat_id for cat_id, _ in categories)
        if ids != list(range(len(ids))):
            one = len(ids) == 1
            discovery.notes.append(
                f"{display_path(primary)}: {noun(len(ids), 'category id')} {spans(ids)} {verb(len(ids), 'is')} "
                f"not {'a class index' if one else 'class indices'}; training code maps "
                f"{'it to 0' if one else f'them to 0..{len(ids) - 1}'} with "
                f"{short_map(category_index_map(dict(categories)))}")
    for path in files:
        flavour, _ = flavour_and_split(path)
        dirs = image_dirs(path, options)
        below = images_found_below(path, dirs) if dirs and not options.images else None
        if below and len(below) == 1:
            dirs = (below[0], *dirs)
        elif below:
            discovery.notes.append(
                f"{display_path(path)}: its images are named without a folder and lie in "
                f"{len(below)} folders below it ({', '.join(display_path(b) for b in below)}); which one they are "
                "taken from is not known, so image files are not checked (pass --images DIR)")
            dirs = ()
        elif not dirs:
            discovery.notes.append(f"{display_path(path)}: no image folder found beside it; image files "
                                   "are not checked (pass --images DIR)")
        panoptic = os.path.join(os.path.dirname(path), os.path.basename(path)[: -len(".json")])
        extra: list[tuple[str, object]] = [
            ("image_dirs", dirs), ("root", dataset_root(path)),
            ("reference", references.get(flavour)), ("discovered_classes", discovered),
            ("check_images", options.check_images),
        ]
        if flavour.startswith("panoptic") and storage.isdir(panoptic):
            extra.append(("panoptic_dir", panoptic))
            # The panoptic PNGs are the JSON's segments: it names each, and the audit checks
            # that each exists.
            discovery.left_out.append((storage.relpath(panoptic, root).replace(os.sep, "/") + "/*",
                                       f"a panoptic mask of {os.path.basename(path)}, which names it"))
        discovery.tasks.append(FileTask(
            processor=process_coco, path=path, display=display_path(path), options=tuple(extra)))
    return discovery


def _primary(references: dict) -> str | None:
    """The file whose categories are the dataset's spec: instances first, then any file
    with categories (captions and image_info files have none)."""
    order = ("instances", "_annotations.coco", "annotations", "person_keypoints", "panoptic", "stuff", "labels")
    for flavour in order:
        if flavour in references:
            return references[flavour][0]
    for reference in references.values():
        return reference[0]
    return None


def _detect_coco(root: str, options: AuditOptions) -> Evidence:
    found = coco_files(root)
    if not found:
        return no()
    return evidence(0.89, Seen(f"{display_path(found[0])} holds COCO images/annotations/categories", CONTENT))


discover_coco.detect = _detect_coco  # type: ignore[attr-defined]  # read by register_layout
register_layout("coco", "COCO JSON (annotations/instances_*.json, Roboflow _annotations.coco.json)", 0.89,
                (IMAGES,))(
    discover_coco)
register_format(AnnotationFormat("coco", (".json",), process_coco, sniff=is_coco_file, rename=editor.rename,
                                 remap=editor.remap))
