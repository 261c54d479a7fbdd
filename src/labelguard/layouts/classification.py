"""Classification datasets: label tables (CSV/TSV, "path label" lists) and ImageFolder trees.

Layouts:

* ``csv``: tables in the dataset's folder (or the table given as the path): ``path,label``
  CSVs, one-hot multi-label CSVs, ImageNet ``train.txt`` with ``synsets.txt``, Kaggle
  ``ann.txt``, MNIST-style ``label,pixels...`` CSVs. A ``synsets.txt``/``labels.txt``/
  ``classes.txt`` beside the table is the dataset's class list (ids index into it).
* ``imagefolder``: ``<split>/<class>/*.jpg`` (or ``<class>/*.jpg``) as torchvision's
  ``ImageFolder`` reads it: classes are the sorted folder names of a split, each split
  numbered on its own. Detected only when the class folders hold nothing but images and at
  least one looks like a photo (a JPEG, or an image with many distinct values), so folders
  of label masks (``images/`` + ``masks/``, per-case mask folders) are never taken for
  classes; ``--format imagefolder`` forces it.

Codes: labels outside the spec LG101/LG102/LG103 (the shared label checks), rows naming
missing files LG003, paths leaving the dataset LG005, unreadable rows LG001 with the line,
repeated rows LG303; in ImageFolder trees, a class folder without images LG002 (torchvision
raises "Found no valid file for the classes ..."), an image file that is empty or not an
image LG001, a class folder missing from one split LG104. A ``--path-column``/``--label-column``
that no table has is a :class:`~labelguard.errors.ColumnError` naming each table's columns.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import numpy as np

from labelguard.checks.boxes import DUPLICATE_BOX
from labelguard.checks.classes import CLASS_UNUSED, ID_TOO_LARGE, UNKNOWN_CLASS
from labelguard.checks.files import ESCAPES_ROOT, MISSING, UNPAIRED, UNREADABLE
from labelguard.checks.labels import PLACES_KEPT, id_findings, name_findings
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import LISTED, SHOWN, noun, plural, shorten, verb
from labelguard.errors import ColumnError
from labelguard.layouts.base import AuditOptions, Discovery, display_path, register_layout
from labelguard.readers.base import ReadError, read_head, sniff
from labelguard.readers.tabular import (
    IMAGE_EXTENSIONS, TABLE_EXTENSIONS, TableRows, UnknownColumn, is_int, label_names_file, read_names,
    read_table, read_text, sniff_layout,
)

CASE_FOLDING = sys.platform in ("darwin", "win32", "cygwin")
# torchvision.datasets.folder.IMG_EXTENSIONS
TORCHVISION_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
IMAGE_KINDS = frozenset({"png", "jpeg", "tiff", "bmp", "gif", "riff"})
SPLIT_NAMES = frozenset({"train", "training", "val", "valid", "validation", "test", "testing", "dev", "eval"})
# Folder names that make a tree a mask, detection or VOC dataset, never a class.
STRUCTURE_NAMES = frozenset(n.lower() for n in (
    "images", "image", "imgs", "img", "masks", "mask", "labels", "label", "annotations", "annotation",
    "jpegimages", "imagesets", "segmentationclass", "segmentationobject", "gt", "gts", "groundtruth",
    "ground_truth", "targets", "annots", "imagestr", "labelstr", "imagests", "leftimg8bit", "gtfine",
    "segmentations", "segmentation", "inputs", "input", "rgb", "photos", "depth",
))
NAME_FILES = frozenset({"labels.txt", "classes.txt", "class_names.txt", "labelmap.txt", "synsets.txt",
                        "readme.txt", "license.txt", "requirements.txt", "dataset.txt"})
# Detection samples this many entries per folder and this many folders.
SAMPLE_ENTRIES = 20
SAMPLE_FOLDERS = 20
# A non-JPEG image with more distinct values than this is a photo, not a label mask.
PHOTO_VALUES = 32


def _sample(items: list[str], count: int) -> str:
    return shorten(items, SHOWN, total=count, sep="; ")


# ---- label tables ----------------------------------------------------------------------------

def process_table(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one label table and check its labels, its files and its rows."""
    result = FileResult(task.display)
    result.summary.kinds["csv"] += 1
    display = task.display
    try:
        table = read_table(task.path, task.option("path_column"), task.option("label_column"))
    except ReadError as exc:
        result.summary.unreadable += 1
        result.findings.append(UNREADABLE.finding(display, str(exc)))
        return result
    findings = result.findings
    if table.problem_count:
        items = [f"line {line} {text}" for line, text in table.problems]
        findings.append(UNREADABLE.finding(
            display,
            f"{plural(table.problem_count, 'row')} cannot be read: "
            f"{_sample(items, table.problem_count)}; the other rows are still checked",
            hint="Fix or remove these rows: a Dataset that splits them fails (ValueError, IndexError) "
            "or reads a wrong label when it reaches them.",
            lines=[line for line, _ in table.problems], count=table.problem_count,
        ))
    findings.extend(_label_findings(display, table, spec))
    if table.layout.path_column is not None:
        bases = task.option("image_dirs") or (os.path.dirname(os.path.abspath(task.path)),)
        findings.extend(_path_findings(display, table, bases))
    findings.extend(_repeat_findings(display, table))
    _count_table(result, table)
    return result


def _label_findings(display: str, table: TableRows, spec: LabelSpec) -> list[Finding]:
    if not table.labels:
        return []
    if table.layout.onehot_columns:
        names, places = [], []
        for line, labels in zip(table.lines, table.labels):
            names.extend(labels)
            places.extend([line] * len(labels))
        return name_findings(display, names, spec, unit="line", places=places)
    labels = table.labels
    if all(is_int(label) for label in labels):
        return id_findings(display, [int(label) for label in labels], spec, unit="line", places=table.lines)
    return name_findings(display, labels, spec, unit="line", places=table.lines)


class FileLookup:
    """Answers "does this file exist under one of these folders?" from one directory listing
    per folder instead of one stat per file. Where file systems usually fold case (macOS,
    Windows), a name missing from a listing is confirmed with a real stat, since "A.JPG"
    opens "a.jpg" there."""

    def __init__(self, bases: tuple[str, ...]) -> None:
        self.bases = bases
        self.preferred = 0
        self.listings: dict[str, frozenset[str]] = {}

    def _listing(self, directory: str) -> frozenset[str]:
        entries = self.listings.get(directory)
        if entries is None:
            try:
                entries = frozenset(os.listdir(directory))
            except OSError:
                entries = frozenset()
            self.listings[directory] = entries
        return entries

    def _in(self, base: str, name: str, any_extension: bool) -> bool:
        head, tail = os.path.split(name)
        entries = self._listing(os.path.join(base, head) if head else base)
        if tail in entries:
            return True
        return any_extension and any(tail + ext in entries for ext in IMAGE_EXTENSIONS)

    def exists(self, name: str) -> bool:
        """True when ``name`` (relative) is a file under a base; without an extension, with
        any image extension."""
        any_extension = not os.path.splitext(name)[1]
        if self._in(self.bases[self.preferred], name, any_extension):
            return True
        for k, base in enumerate(self.bases):
            if k != self.preferred and self._in(base, name, any_extension):
                self.preferred = k
                return True
        if not CASE_FOLDING:
            return False
        candidates = [os.path.join(b, name) for b in self.bases]
        if any_extension:
            candidates += [c + ext for c in candidates for ext in IMAGE_EXTENSIONS]
        return any(os.path.isfile(c) for c in candidates)


def escapes(name: str) -> bool:
    """An absolute path, or one that climbs out of its folder with '..'."""
    return os.path.isabs(name) or name.startswith("\\") or ".." in name.replace("\\", "/").split("/")


def _path_findings(display: str, table: TableRows, bases: tuple[str, ...]) -> list[Finding]:
    missing: list[str] = []
    escaping: list[str] = []
    missing_lines: list[int] = []
    lookup = FileLookup(bases)
    seen: set[str] = set()
    for line, name in zip(table.lines, table.paths):
        if not name or name in seen:
            continue
        seen.add(name)
        if escapes(name):
            escaping.append(f"line {line} {name!r}")
        elif not lookup.exists(name):
            missing.append(f"line {line} {name!r}")
            missing_lines.append(line)
    findings = []
    shown_bases = ", ".join(display_path(b) for b in bases)
    if missing:
        every = " (none of them: is the image folder elsewhere? pass --images DIR)" if len(missing) == len(seen) else ""
        findings.append(MISSING.finding(
            display,
            f"{len(missing)} of {len(seen)} files named in this table do not exist under {shown_bases}{every}: "
            f"{_sample(missing, len(missing))}",
            hint="Restore the files, point --images at the image folder, or remove these rows.",
            missing=missing[:PLACES_KEPT], lines=missing_lines[:PLACES_KEPT], count=len(missing),
            image_dirs=[display_path(b) for b in bases],
        ))
    if escaping:
        findings.append(ESCAPES_ROOT.finding(
            display,
            f"{plural(len(escaping), 'path')} in this table "
            f"{verb(len(escaping), 'is')} absolute or {verb(len(escaping), 'leaves')} the image folder: "
            f"{_sample(escaping, len(escaping))}",
            hint="Write the paths relative to the image folder, so that the dataset works where it is copied.",
            entries=escaping[:PLACES_KEPT], count=len(escaping),
        ))
    return findings


def _repeat_findings(display: str, table: TableRows) -> list[Finding]:
    if not table.paths or table.layout.path_column is None:
        return []
    rest = table.rest or [""] * len(table.paths)
    first_line: dict[tuple, int] = {}
    repeats: list[str] = []
    lines: list[int] = []
    single = not table.rest and not table.layout.onehot_columns
    label_of: dict[str, object] = {}
    conflicting: dict[str, set] = {}
    for line, path, label, extra in zip(table.lines, table.paths, table.labels, rest):
        key = (path, label, extra)
        if key in first_line:
            repeats.append(f"line {line} repeats line {first_line[key]} ({path!r}, {_label_text(label)})")
            lines.append(line)
            continue
        first_line[key] = line
        if single:
            known = label_of.setdefault(path, label)
            if known != label:
                conflicting.setdefault(path, {known}).add(label)
    findings = []
    if repeats:
        findings.append(DUPLICATE_BOX.finding(
            display,
            f"{plural(len(repeats), 'row')} {verb(len(repeats), 'repeats')} an earlier row: "
            f"{_sample(repeats, len(repeats))}",
            hint="Remove the repeated rows: they oversample those images.",
            lines=lines[:PLACES_KEPT], count=len(repeats),
        ))
    conflicts = [f"{path!r} is labelled {', '.join(repr(v) for v in sorted(labels))}"
                 for path, labels in conflicting.items()]
    if conflicts:
        findings.append(DUPLICATE_BOX.finding(
            display,
            f"{plural(len(conflicts), 'file')} {verb(len(conflicts), 'is')} listed more than once with "
            f"different labels in a single-label table: {_sample(conflicts, len(conflicts))}",
            hint="Keep one label per image (or use a multi-label format); the loader takes whichever row it meets.",
            conflicts=conflicts[:PLACES_KEPT], count=len(conflicts),
        ))
    return findings


def _label_text(label) -> str:
    return "+".join(label) if isinstance(label, tuple) else repr(label)


def _count_table(result: FileResult, table: TableRows) -> None:
    summary = result.summary
    summary.samples += len(set(table.paths)) if table.layout.path_column is not None else len(table.labels)
    objects: Counter = Counter()
    images: dict[str, set] = {}
    for path, label, line in zip(table.paths, table.labels, table.lines):
        names = label if isinstance(label, tuple) else (label,)
        for name in names:
            objects[name] += 1
            images.setdefault(name, set()).add(path or line)
    summary.class_objects.update(objects)
    summary.class_images.update({name: len(keys) for name, keys in images.items()})
    for name in objects:
        summary.class_examples.setdefault(name, []).append(result.path)


def _table_candidates(folder: str) -> list[str]:
    """The files of a folder that may be label tables, by name."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        lower = name.lower()
        if name.startswith(".") or not lower.endswith(TABLE_EXTENSIONS) or not os.path.isfile(path):
            continue
        if lower in NAME_FILES or lower.startswith("synsets") or lower.startswith("readme"):
            continue
        found.append(path)
    return found


def _table_files(folder: str, options: AuditOptions) -> list[str]:
    return [path for path in _table_candidates(folder) if _is_table(path, options)]


def _sniff_table(path: str, options: AuditOptions):
    """The table layout of a file, or None; OSError or ReadError when it cannot be read."""
    if os.path.getsize(path) > 0:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
        if b"\x00" in head:
            return None
    text = read_text(path) if os.path.getsize(path) < (1 << 16) else \
        head.decode("utf-8", errors="replace").rsplit("\n", 1)[0]
    return sniff_layout(path, text, options.path_column, options.label_column)


def _is_table(path: str, options: AuditOptions) -> bool:
    try:
        return _sniff_table(path, options) is not None
    except (OSError, ReadError):
        return False


def check_columns(root: str, options: AuditOptions) -> None:
    """ColumnError when ``--path-column``/``--label-column`` name a column that no table at
    ``root`` has: auditing nothing and reporting no findings would read as a clean dataset."""
    if not (options.path_column or options.label_column):
        return
    candidates = [root] if os.path.isfile(root) else _table_candidates(root)
    headers = []
    for path in candidates:
        try:
            if _sniff_table(path, options) is not None:
                return
        except UnknownColumn as exc:
            headers.append((path, exc))
        except (OSError, ReadError):
            continue
    if not headers:
        return
    listing = shorten(headers, LISTED, lambda item: f"{display_path(item[0])}: {item[1]}", sep="; ", what="table")
    if os.path.isfile(root):
        raise ColumnError(listing)
    given = [f"--{what}-column {wanted!r}" for what, wanted in
             (("path", options.path_column), ("label", options.label_column)) if wanted]
    raise ColumnError(f"no table in {display_path(root)} has the {noun(len(given), 'column')} given "
                      f"({', '.join(given)}): {listing}")


def table_image_dirs(path: str, options: AuditOptions) -> tuple[str, ...]:
    """Where the files a table names are looked for: ``--images``, else the image folders
    beside it, then its own folder."""
    folder = os.path.dirname(os.path.abspath(path))
    if options.images:
        return (os.path.abspath(options.images),)
    stem = os.path.splitext(os.path.basename(path))[0]
    names = ["images", "imgs", "img", "data", stem, f"{stem}_images", f"{stem}_imgs", f"{stem}_img"]
    found = [os.path.join(folder, n) for n in names if os.path.isdir(os.path.join(folder, n))]
    return tuple(dict.fromkeys(found + [folder]))


def discover_tables(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("csv", root)
    check_columns(root, options)
    if os.path.isfile(root):
        tables = [os.path.abspath(root)]
        folder = os.path.dirname(os.path.abspath(root))
    else:
        folder = root
        tables = _table_files(root, options)
        if not tables:
            discovery.findings.append(UNREADABLE.finding(
                display_path(root), "no classification table found (a CSV/TSV with path and label "
                "columns, or a 'path label' text list)"))
            return discovery
    names_file = label_names_file(folder)
    if names_file is not None and names_file not in tables:
        try:
            names = read_names(names_file)
        except ReadError as exc:
            discovery.notes.append(f"class names ignored: {display_path(names_file)}: {exc}")
        else:
            discovery.spec = class_list_spec(names, display_path(names_file))
    extra: list[tuple[str, object]] = []
    if options.path_column:
        extra.append(("path_column", options.path_column))
    if options.label_column:
        extra.append(("label_column", options.label_column))
    for table in tables:
        discovery.tasks.append(FileTask(
            processor=process_table, path=table, display=display_path(table),
            options=tuple(extra) + (("image_dirs", table_image_dirs(table, options)),)))
    return discovery


def _detect_tables(root: str, options: AuditOptions) -> bool:
    check_columns(root, options)
    if os.path.isfile(root):
        return root.lower().endswith(TABLE_EXTENSIONS) and _is_table(root, options)
    return os.path.isdir(root) and bool(_table_files(root, options))


discover_tables.detect = _detect_tables
register_layout("csv", 60, "classification tables: CSV/TSV path + label columns, 'path label' lists "
                "(ImageNet train.txt + synsets.txt), MNIST-style CSV")(discover_tables)


# ---- ImageFolder -----------------------------------------------------------------------------

def process_class_folder(task: FileTask, spec: LabelSpec) -> FileResult:
    """Check one class folder of an ImageFolder tree: its images and its class name."""
    result = FileResult(task.display)
    summary = result.summary
    summary.kinds["imagefolder"] += 1
    name = task.option("class_name")
    images = []
    unreadable = []
    for directory, dirs, files in os.walk(task.path, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(files):
            if file.startswith(".") or not file.lower().endswith(TORCHVISION_EXTENSIONS):
                continue
            path = os.path.join(directory, file)
            images.append(path)
            problem = _image_problem(path)
            if problem:
                unreadable.append(f"{display_path(path)} {problem}")
    if unreadable:
        summary.unreadable += len(unreadable)
        result.findings.append(UNREADABLE.finding(
            task.display,
            f"{plural(len(unreadable), 'image file')} of class {name!r} cannot be "
            f"decoded: {_sample(unreadable, len(unreadable))}",
            hint="Re-copy these images or delete them; the DataLoader worker that opens one raises mid-epoch.",
            files=[u.split(" ", 1)[0] for u in unreadable[:PLACES_KEPT]], count=len(unreadable),
        ))
    if not images:
        result.findings.append(UNPAIRED.finding(
            task.display,
            f"class folder {name!r} holds no image files ({', '.join(TORCHVISION_EXTENSIONS)}): "
            f"torchvision's ImageFolder raises \"Found no valid file for the classes {name}\"",
            hint="Add the class's images, or remove the empty folder (and the class from the spec).",
            side="label", **{"class": name},
        ))
        return result
    summary.samples += len(images)
    summary.class_objects[name] += len(images)
    summary.class_images[name] += len(images)
    summary.class_examples.setdefault(name, []).append(task.display)
    result.findings.extend(_folder_class_findings(task, name, len(images), spec))
    return result


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


def _folder_class_findings(task: FileTask, name: str, count: int, spec: LabelSpec) -> list[Finding]:
    if spec.classes is None or spec.count_disagrees:
        return _folder_id_findings(task, name, count, spec) if spec.is_known else []
    if name in spec.classes:
        return []
    suggestions = spec.closest_classes(name)
    guess = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    split = task.option("split")
    where = f" in {split}/" if split else ""
    return [UNKNOWN_CLASS.finding(
        task.display,
        f"class folder {name!r}{where} ({plural(count, 'image')}) is not one of the "
        f"{len(spec.classes)} classes of the spec{guess}",
        hint=(f"Rename the folder to {suggestions[0]!r}" if suggestions else "Rename the folder")
        + ", add the class to the spec, or move the folder out of the dataset.",
        **{"class": name}, suggestions=suggestions, unit="image", places=[], count=count,
    )]


def _folder_id_findings(task: FileTask, name: str, count: int, spec: LabelSpec) -> list[Finding]:
    """A spec of ids only: a folder's id is its place among the split's sorted class folders,
    as torchvision's ImageFolder numbers them."""
    index, total = task.option("index"), task.option("classes")
    allowed = spec.allowed_values() or frozenset()
    if index is None or index in allowed:
        return []
    split = task.option("split")
    where = f"{split}/" if split else "the dataset"
    expected = f"0..{spec.effective_num_classes - 1}" if spec.is_contiguous() else str(sorted(allowed))
    return [ID_TOO_LARGE.finding(
        task.display,
        f"class folder {name!r} ({plural(count, 'image')}) gets class index {index}: "
        f"{where} has {total} class folders, which ImageFolder numbers 0..{total - 1} in sorted order, "
        f"but the spec allows {expected} ({spec.describe()})",
        hint=f"Set num_classes to {total}, or remove the class folders that are not classes.",
        ids=[index], num_classes=spec.effective_num_classes if spec.is_contiguous() else None,
        allowed=None if spec.is_contiguous() else sorted(allowed), unit="image", places=[], count=count,
    )]


def _subdirs(folder: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


def _splits(root: str) -> list[str]:
    return [d for d in _subdirs(root) if d.lower() in SPLIT_NAMES and _subdirs(os.path.join(root, d))]


def _entries(folder: str, limit: int) -> tuple[list[str], list[str]]:
    """Up to ``limit`` (files, subfolders) of a folder, hidden entries skipped."""
    files, dirs = [], []
    try:
        with os.scandir(folder) as scan:
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
        with Image.open(path) as image:
            if image.mode in ("P", "1", "I", "I;16", "F"):
                return False
            image.thumbnail((64, 64))
            values = np.asarray(image)
    except Exception:  # unreadable files are the audit's business, not the detection's
        return False
    flat = values.reshape(-1, values.shape[-1]) if values.ndim == 3 else values.reshape(-1, 1)
    return len(np.unique(flat, axis=0)) > PHOTO_VALUES


def _class_folders_ok(split_dir: str, minimum: int) -> bool:
    """True when a folder's subfolders look like classes of photos."""
    classes = _subdirs(split_dir)
    if len(classes) < minimum or any(c.lower() in STRUCTURE_NAMES or c.lower() in SPLIT_NAMES for c in classes):
        return False
    photo_checked = False
    for name in classes[:SAMPLE_FOLDERS]:
        files, dirs = _entries(os.path.join(split_dir, name), SAMPLE_ENTRIES)
        while not files and dirs:  # nested class folders (class/sub/x.jpg)
            files, dirs = _entries(dirs[0], SAMPLE_ENTRIES)
        if any(not f.lower().endswith(TORCHVISION_EXTENSIONS) for f in files):
            return False
        if files and not photo_checked:
            if not _looks_like_photo(files[0]):
                return False
            photo_checked = True
    return photo_checked


def _detect_imagefolder(root: str, options: AuditOptions) -> bool:
    if not os.path.isdir(root):
        return False
    splits = _splits(root)
    if splits:
        return all(_class_folders_ok(os.path.join(root, s), 1) for s in splits)
    return _class_folders_ok(root, 2)


def discover_imagefolder(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("imagefolder", root)
    if not os.path.isdir(root):
        discovery.findings.append(UNREADABLE.finding(display_path(root), "no such directory"))
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
        discovery.spec = LabelSpec(classes=tuple(classes_of[reference]),
                                   sources=(f"class folders of {shown}",))
    for split, folder in split_dirs:
        loose = [f for f in _entries(folder, 1 << 30)[0]]
        if loose:
            discovery.notes.append(
                f"{plural(len(loose), 'file')} directly in {display_path(folder)} "
                f"{verb(len(loose), 'belongs')} to no class folder (ImageFolder skips them)")
        if split != reference:
            discovery.findings.extend(_split_findings(root, split, reference, classes_of))
        for index, name in enumerate(classes_of[split]):
            path = os.path.join(folder, name)
            discovery.tasks.append(FileTask(
                processor=process_class_folder, path=path, display=display_path(path),
                options=(("class_name", name), ("split", split), ("index", index),
                         ("classes", len(classes_of[split])))))
    numeric = classes_of[reference]
    if len(numeric) > 10 and all(n.isdigit() for n in numeric) and numeric != sorted(numeric, key=int):
        order = ", ".join(numeric[:4])
        discovery.notes.append(
            f"class folders are numbers: torchvision's ImageFolder sorts them as text ({order}, ...), so "
            f"folder {numeric[2]!r} gets index 2; pass the class order explicitly if the names are ids")
    return discovery


def _split_findings(root: str, split: str, reference: str, classes_of: dict) -> list[Finding]:
    missing = [c for c in classes_of[reference] if c not in set(classes_of[split])]
    if not missing:
        return []
    folder = display_path(os.path.join(root, split))
    shifted = [c for c in classes_of[split] if classes_of[split].index(c) != classes_of[reference].index(c)] \
        if all(c in classes_of[reference] for c in classes_of[split]) else classes_of[split]
    shift = (f"; ImageFolder numbers each split on its own, so {plural(len(shifted), 'class')} "
             f"({shorten(shifted, SHOWN, repr)}) {verb(len(shifted), 'gets')} other "
             f"indices in {split}/ than in {reference}/") if shifted else ""
    return [CLASS_UNUSED.finding(
        folder,
        f"{split}/ lacks the {noun(len(missing), 'class folder')} "
        f"{shorten(missing, LISTED, repr)} of {reference}/{shift}",
        hint=f"Add the missing class folders to {split}/ (empty folders do not help: ImageFolder rejects "
        "them), or build every split with the class list of the training split (class_to_idx).",
        missing=missing, split=split, reference=reference, shifted=shifted,
    )]


discover_imagefolder.detect = _detect_imagefolder
register_layout("imagefolder", 70, "ImageFolder trees: <split>/<class>/*.jpg or <class>/*.jpg "
                "(torchvision, Ultralytics classify)")(discover_imagefolder)
