"""The ``imagefolder`` layout: ``<split>/<class>/*.jpg`` (or ``<class>/*.jpg``) as
torchvision's ``ImageFolder`` reads it: classes are the sorted folder names of a split, each
split numbered on its own. Detected only when the class folders hold nothing but images and
at least one looks like a photo (a JPEG, or an image with many distinct values), so folders
of label masks (``images/`` + ``masks/``, per-case mask folders) are never taken for
classes; ``--format imagefolder`` forces it.

Each class folder is one task: :func:`class_folder_record` reads it into an annotation
record and the annotation rules judge it: a class folder without images LG002 (torchvision
raises "Found no valid file for the classes ..."), an image file that is empty or not an
image LG001, one that is truncated or cannot be decoded LG008 (checked as ``--check-images``
says). A class folder missing from one split (LG104) is found at discovery, where the
splits' folders are listed.
"""

from __future__ import annotations

import os

import numpy as np

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.records import AnnotationRecord, ClassFolder
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import plural, shorten, verb
from labelguard.core.paths import display_path
from labelguard.layouts.base import NAMES, SHAPE, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout
from labelguard.layouts.conventions import IMAGE_DIRS, MASK_DIRS
from labelguard.layouts.pairing import may_pair, pair_in_folder
from labelguard.readers.base import ReadError, open_regular, read_head, sniff
from labelguard.readers.integrity import DEFAULT_CHECK_MODE, damaged_images
from labelguard.readers.masks import JPEG_EXTENSIONS, mask_extension
from labelguard.layouts.tables.reader import label_names_file, read_names
from labelguard.rules._annotations import process_annotation
from labelguard.rules.lg104 import class_folders_missing_from_a_split

# torchvision.datasets.folder.IMG_EXTENSIONS
TORCHVISION_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
IMAGE_KINDS = frozenset({"png", "jpeg", "tiff", "bmp", "gif", "riff"})
SPLIT_NAMES = frozenset({"train", "training", "val", "valid", "validation", "test", "testing", "dev", "eval"})
# Folder names that make a tree a mask, detection or VOC dataset, never a class.
STRUCTURE_NAMES = frozenset(n.lower() for n in (
    *IMAGE_DIRS, *MASK_DIRS, "ImageSets", "SegmentationObject", "gtFine", "depth",
))
# Detection samples this many entries per folder and this many folders.
SAMPLE_ENTRIES = 20
SAMPLE_FOLDERS = 20
# A non-JPEG image with more distinct values than this is a photo, not a label mask.
PHOTO_VALUES = 32


def class_folder_record(task: FileTask) -> AnnotationRecord:
    """One ImageFolder class folder as an annotation record: its images (each read far
    enough to tell an image from an empty or foreign file) under the folder's class, with
    the index ImageFolder gives it."""
    images = 0
    unreadable = []
    whole: list[tuple[str, str, None]] = []  # images, to check for truncation
    for directory, dirs, files in storage.walk(task.path, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(files):
            if file.startswith(".") or not file.lower().endswith(TORCHVISION_EXTENSIONS):
                continue
            path = os.path.join(directory, file)
            images += 1
            problem = _image_problem(path)
            if problem:
                unreadable.append(f"{display_path(path)} {problem}")
            else:
                whole.append((path, display_path(path), None))
    folder = ClassFolder(task.option("class_name"), task.option("split"), task.option("index"),
                         task.option("classes"), images, TORCHVISION_EXTENSIONS, tuple(unreadable))
    damaged = damaged_images(whole, task.option("check_images", DEFAULT_CHECK_MODE), unnamed=True)
    return AnnotationRecord(task.display, "folder", "image", folder=folder, damaged_images=damaged)


def process_class_folder(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one class folder of an ImageFolder tree and run the annotation rules on it."""
    return process_annotation(task, spec, class_folder_record, "imagefolder")


def _image_problem(path: str) -> str | None:
    try:
        head = read_head(path, 16)
    except ReadError as exc:
        return str(exc)
    if not head:
        return "is empty (0 bytes)"
    kind = sniff(head)
    if kind not in IMAGE_KINDS and not path.lower().endswith((".ppm", ".pgm")):
        return f"is not an image (starts with {head[:8]!r})"
    return None


def _subdirs(folder: str) -> list[str]:
    try:
        return storage.folder_names(folder, hidden=False)
    except OSError:
        return []


def _splits(root: str) -> list[str]:
    return [d for d in _subdirs(root) if d.lower() in SPLIT_NAMES and _subdirs(os.path.join(root, d))]


def _entries(folder: str, limit: int) -> tuple[list[str], list[str]]:
    """Up to ``limit`` (files, subfolders) of a folder, hidden entries skipped."""
    files: list[str] = []
    dirs: list[str] = []
    try:
        with storage.scandir(folder) as scan:
            for entry in scan:
                if entry.name.startswith("."):
                    continue
                (dirs if entry.is_dir() else files).append(entry.path)
                if len(files) + len(dirs) >= limit:
                    break
    except OSError:
        pass
    return files, dirs


def _looks_like_photo(path: str) -> bool:
    lower = path.lower()
    if lower.endswith((".jpg", ".jpeg", ".webp")):
        return True
    try:
        from PIL import Image
        # Opened as a regular file: a named pipe among the class folders never blocks detection.
        with open_regular(path, "image") as handle, Image.open(handle) as image:
            if image.mode in ("P", "1", "I", "I;16", "F"):
                return False
            image.thumbnail((64, 64))
            values = np.asarray(image)
    except Exception:  # unreadable files are the audit's business, not the detection's
        return False
    flat = values.reshape(-1, values.shape[-1]) if values.ndim == 3 else values.reshape(-1, 1)
    return len(np.unique(flat, axis=0)) > PHOTO_VALUES


def _class_folders(split_dir: str, minimum: int) -> tuple[bool, str | None]:
    """(whether a folder's subfolders look like classes of photos, what was seen against
    it when that is more than a shape that does not fit): a class folder holding image and
    label folders, or images beside the labels a naming convention pairs with them
    (DeepGlobe's ``x_sat.jpg`` and ``x_mask.png``, Roboflow's ``x.jpg`` and ``x_mask.png``)."""
    classes = _subdirs(split_dir)
    if len(classes) < minimum or any(c.lower() in SPLIT_NAMES for c in classes):
        return False, None
    structure = [c for c in classes if c.lower() in STRUCTURE_NAMES]
    if structure:
        return False, f"{display_path(os.path.join(split_dir, structure[0]))} is named as an image or label folder"
    photo_checked = False
    for name in classes[:SAMPLE_FOLDERS]:
        folder = os.path.join(split_dir, name)
        files, dirs = _entries(folder, SAMPLE_ENTRIES)
        while not files and dirs:  # nested class folders (class/sub/x.jpg)
            structure = [d for d in dirs if os.path.basename(d).lower() in STRUCTURE_NAMES]
            if structure:
                return False, (f"{display_path(folder)} holds {os.path.basename(structure[0])}/, an image or label "
                               "folder: an image and label dataset, not a class")
            folder = dirs[0]
            files, dirs = _entries(folder, SAMPLE_ENTRIES)
        if any(not f.lower().endswith(TORCHVISION_EXTENSIONS) for f in files):
            return False, None
        against = _paired_by_name(folder, files)
        if against:
            return False, against
        if files and not photo_checked:
            if not _looks_like_photo(files[0]):
                return False, None
            photo_checked = True
    return photo_checked, None


def _paired_by_name(folder: str, sample: list[str]) -> str | None:
    """What shows that a class folder holds labels beside their images: a label of a naming
    convention (``x_mask.png``) among ``sample``, its files, that pairs with an image of the
    folder (the folder is listed only then)."""
    if not may_pair(sample):
        return None
    pairing = pair_in_folder(_entries(folder, 1 << 30)[0])
    # A photo named like a label (x_m.jpg, a medium-size copy of x.jpg) is a photo still.
    pairs = {label: image for label, image in pairing.pairs.items() if mask_extension(label) not in JPEG_EXTENSIONS}
    if not pairs:
        return None
    label, image = min(pairs.items())
    return (f"{display_path(label)} is the label of {os.path.basename(image)} beside it by its name: "
            "labels with their images, not a class of photos")


def _detect_imagefolder(root: str, options: AuditOptions) -> Evidence:
    if not storage.isdir(root):
        return no()
    splits = _splits(root)
    if splits:
        verdicts = [_class_folders(os.path.join(root, s), 1) for s in splits]
        if all(ok for ok, _ in verdicts):
            return evidence(0.23, Seen("class folders of photos", SHAPE),
                            Seen(f"split folders {', '.join(splits)}", NAMES))
        return no(*(against for _, against in verdicts if against))
    ok, against = _class_folders(root, 2)
    if ok:
        return evidence(0.23, Seen("class folders of photos", SHAPE))
    return no(*([against] if against else []))


def discover_imagefolder(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("imagefolder", root)
    if not storage.isdir(root):
        discovery.findings.append(unreadable(display_path(root), "no such directory"))
        return discovery
    splits = _splits(root)
    split_dirs = [(s, os.path.join(root, s)) for s in splits] or [("", root)]
    classes_of = {split: _subdirs(folder) for split, folder in split_dirs}
    reference = next((s for s in splits if s.lower() in ("train", "training")), split_dirs[0][0])
    names_file = label_names_file(root)
    if names_file is not None:
        try:
            declared = read_names(names_file)
        except ReadError as exc:
            discovery.notes.append(f"class names ignored: {display_path(names_file)}: {exc}")
            declared = []
        discovery.spec = class_list_spec(declared, display_path(names_file))
    if not discovery.spec.is_known and classes_of[reference]:
        shown = display_path(os.path.join(root, reference)) if reference else display_path(root)
        discovery.spec = LabelSpec.from_source(f"class folders of {shown}", classes=tuple(classes_of[reference]))
    for split, folder in split_dirs:
        loose = [f for f in _entries(folder, 1 << 30)[0]]
        if loose:
            discovery.notes.append(
                f"{plural(len(loose), 'file')} directly in {display_path(folder)} "
                f"{verb(len(loose), 'belongs')} to no class folder (ImageFolder skips them)")
        if split != reference:
            discovery.findings.extend(class_folders_missing_from_a_split(
                display_path(os.path.join(root, split)), split, reference, classes_of))
        for index, name in enumerate(classes_of[split]):
            path = os.path.join(folder, name)
            discovery.tasks.append(FileTask(
                processor=process_class_folder, path=path, display=display_path(path),
                options=(("class_name", name), ("split", split), ("index", index),
                         ("classes", len(classes_of[split])), ("check_images", options.check_images))))
    numeric = classes_of[reference]
    if len(numeric) > 10 and all(n.isdigit() for n in numeric) and numeric != sorted(numeric, key=int):
        discovery.notes.append(
            f"class folders are numbers: torchvision's ImageFolder sorts them as text ({shorten(numeric, 4)}), so "
            f"folder {numeric[2]!r} gets index 2; pass the class order explicitly if the names are ids")
    return discovery


discover_imagefolder.detect = _detect_imagefolder  # type: ignore[attr-defined]  # read by register_layout
register_layout("imagefolder", "ImageFolder trees: <split>/<class>/*.jpg or <class>/*.jpg "
                "(torchvision, Ultralytics classify)", 0.23)(discover_imagefolder)
