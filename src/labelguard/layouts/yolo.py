"""YOLO detection, segmentation and pose datasets.

Layouts found: an Ultralytics ``data.yaml`` (given as the path, or in the folder) and the
splits it names; a darknet ``obj.data`` with its ``obj.names`` and image lists (CVAT and
Datumaro exports); an ``images/<split>`` + ``labels/<split>`` tree, or label files beside
their images, with the class names in ``obj.names`` / ``classes.txt`` when present.

Label files are found from the images as Ultralytics finds them (the last ``/images/`` of the
path becomes ``/labels/``, the extension ``.txt``), or beside the image. An image without a
label file is a background image, as an empty label file is.
"""

from __future__ import annotations

import os

from labelguard.checks.files import ESCAPES_ROOT, MISSING, UNREADABLE
from labelguard.core.records import AnnotationRecord
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import plural
from labelguard.layouts.base import (
    AuditOptions, Discovery, display_path, read_list, register_layout, unpaired_findings,
    walk_files,
)
from labelguard.layouts.pairing import holds_yolo_rows, inside_root
from labelguard.layouts.pairing import IMAGE_EXTENSIONS, relative_files
from labelguard.rules._annotations import process_annotation
from labelguard.readers.base import ReadError
from labelguard.readers.yolo import (
    DatasetFile, read_darknet_data, read_data_yaml, read_label_file, read_names,
)

YAML_NAMES = ("data.yaml", "data.yml", "dataset.yaml", "dataset.yml")
NAMES_FILES = ("obj.names", "classes.names", "coco.names", "classes.txt", "labels.txt")
LABEL_DIRS = ("labels", "Labels", "Annotations", "annotations")


# ---- per-file processor -----------------------------------------------------------------

ROW_HINT = ("Fix or delete the row: Ultralytics drops the whole image as corrupt, darknet reads "
            "garbage; the other rows of the file were checked.")


def yolo_record(task: FileTask) -> AnnotationRecord:
    """One YOLO label file as an annotation record: class ids by line, the values that must be
    fractions of the image (LG302), box sizes (LG301) and rows as duplicates compare them."""
    shape = task.option("keypoint_shape")
    labels = read_label_file(task.path, shape[0] * shape[1] if shape else None)
    keypoint_dims = shape[1] if shape else 2
    normalised = [_checked_values(values, kind, keypoint_dims) for values, kind in zip(labels.values, labels.kinds)]
    # A row outside [0, 1] is LG302's; its size is not judged again.
    extents = [None if kind == "polygon" or min(checked) < 0.0 or max(checked) > 1.0 else values[2:4]
               for values, kind, checked in zip(labels.values, labels.kinds, normalised)]
    return AnnotationRecord(
        task.display, "yolo", "row", list(labels.ids), list(labels.lines),
        keys=list(zip(labels.ids, labels.values)), normalised=normalised, extents=extents,
        problems=list(labels.problems), problem_hint=ROW_HINT,
    )


def process_yolo(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one label file and run the annotation rules on it."""
    return process_annotation(task, spec, yolo_record, "yolo")


def _checked_values(values: tuple[float, ...], kind: str, keypoint_dims: int) -> tuple[float, ...]:
    """The values that must lie in [0, 1]: all of them, except pose visibility flags."""
    if kind != "pose" or keypoint_dims != 3:
        return values
    keypoints = values[4:]
    return values[:4] + tuple(v for i, v in enumerate(keypoints) if i % 3 != 2)


# ---- discovery --------------------------------------------------------------------------

def label_path(image: str) -> str:
    """Where Ultralytics looks for an image's labels: the last ``/images/`` becomes
    ``/labels/`` and the extension ``.txt``."""
    marker = f"{os.sep}images{os.sep}"
    if marker in image:
        head, tail = image.rsplit(marker, 1)
        image = f"{head}{os.sep}labels{os.sep}{tail}"
    return os.path.splitext(image)[0] + ".txt"


def _is_image(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in IMAGE_EXTENSIONS


def _not_labels(name: str) -> bool:
    """Text files that sit among label files but hold no rows: class lists, READMEs, licences."""
    lower = name.lower()
    return lower in NAMES_FILES or lower.startswith(("readme", "license", "licence"))


class _Collector:
    """Label tasks and findings gathered from the splits of one dataset."""

    def __init__(self, discovery: Discovery, keypoint_shape: tuple[int, int] | None):
        self.discovery = discovery
        self.options = (("keypoint_shape", keypoint_shape),) if keypoint_shape else ()
        self.labels: dict[str, None] = {}  # label files, in order, without repeats
        self.backgrounds = 0

    def add_images(self, images: list[str], known: set[str] | frozenset = frozenset()) -> None:
        """The label files of ``images``; ``known``: label files already found on disk."""
        for image in images:
            label = label_path(image)
            if label in known or os.path.isfile(label):
                self.labels.setdefault(label)
                continue
            beside = os.path.splitext(image)[0] + ".txt"
            if beside != label and os.path.isfile(beside):
                self.labels.setdefault(beside)
            else:
                self.backgrounds += 1

    def add_label_dir(self, folder: str, images_dir: str | None) -> set[str]:
        """Every label file under ``folder`` (returned); LG002 for those without an image when
        the mirrored image folder exists."""
        images = _stems(images_dir) if images_dir and os.path.isdir(images_dir) else None
        orphans = []
        found = set()
        for relative, path in relative_files(folder):
            if not relative.endswith(".txt") or _not_labels(os.path.basename(relative)):
                continue
            found.add(path)
            self.labels.setdefault(path)
            if images is not None and relative[:-4] not in images:
                orphans.append(path)
        self.discovery.findings.extend(unpaired_findings([], orphans, what="label"))
        return found

    def finish(self) -> None:
        shown: dict[str, str] = {}
        tasks = []
        for path in self.labels:
            folder, name = os.path.split(path)
            base = shown.get(folder)
            if base is None:
                base = shown[folder] = display_path(folder)
            tasks.append(FileTask(process_yolo, path, name if base == "." else os.path.join(base, name),
                                  options=self.options))
        self.discovery.tasks.extend(tasks)
        if self.backgrounds:
            self.discovery.notes.append(
                f"{plural(self.backgrounds, 'image')} without a label file "
                "(background images, as an empty label file)")


def _stems(folder: str) -> set[str]:
    return {os.path.splitext(relative)[0] for relative, _ in relative_files(folder) if _is_image(relative)}


def _spec(names: list[str] | None, nc: int | None, source: str, discovery: Discovery) -> LabelSpec:
    """The dataset's spec: the names (Ultralytics sets nc from them), else nc."""
    if names:
        if nc is not None and nc != len(names):
            discovery.notes.append(
                f"{source}: nc: {nc} but {len(names)} names; Ultralytics uses the {len(names)} names "
                f"(YOLOv5 stops on the mismatch): ids are checked against {len(names)}")
        return LabelSpec(classes=tuple(names), sources=(source,))
    if nc is not None:
        return LabelSpec(num_classes=nc, sources=(source,))
    return LabelSpec()


def _resolve(entry: str, bases: list[str]) -> str | None:
    """An existing path for ``entry`` as written in a dataset file: absolute, or under one
    of ``bases``; a leading ``../`` (Roboflow) or a leading folder (darknet's ``data/``) may
    be dropped, as the trainers do."""
    entry = entry.strip()
    if os.path.isabs(entry):
        return entry if os.path.exists(entry) else None
    candidates = [entry]
    normal = entry.replace("\\", "/")
    if normal.startswith("../"):
        candidates.append(normal[3:])
    parts = [p for p in normal.split("/") if p not in ("", ".")]
    candidates.extend("/".join(parts[i:]) for i in range(1, len(parts)))
    for candidate in candidates:
        for base in bases:
            path = os.path.normpath(os.path.join(base, candidate))
            if os.path.exists(path):
                return path
    return None


def _add_split(collector: _Collector, split: str, entry: str, bases: list[str], source: str,
               root: str) -> None:
    discovery = collector.discovery
    path = _resolve(entry, bases)
    if path is None:
        discovery.findings.append(MISSING.finding(
            source, f"{split}: {entry!r} does not exist (looked under {', '.join(display_path(b) for b in bases)})",
            hint="Correct the path in the dataset file (relative to its 'path', or to the file's folder).",
            split=split, entry=entry,
        ))
        return
    if os.path.isdir(path):
        label_dir = os.path.dirname(label_path(os.path.join(path, "x.jpg")))
        known: set[str] = set()
        if label_dir != path and os.path.isdir(label_dir):
            known = collector.add_label_dir(label_dir, path)
        collector.add_images([p for p in walk_files(path) if _is_image(p)], known)
        return
    if _is_image(path):
        collector.add_images([path])
        return
    _add_image_list(collector, path, root)


def _add_image_list(collector: _Collector, list_path: str, root: str) -> None:
    """A list file of image paths (train.txt): LG003/LG004/LG005 on its lines."""
    discovery = collector.discovery
    shown = display_path(list_path)
    listing, findings = read_list(list_path)
    discovery.findings.extend(findings)
    if listing is None:
        return
    bases = [os.path.dirname(os.path.abspath(list_path)), root]
    images = []
    root_abs = os.path.abspath(root)
    for entry in listing.entries:
        path = _resolve(entry.text, bases)
        if path is None:
            discovery.findings.append(MISSING.finding(
                shown, f"line {entry.line}: image {entry.text!r} does not exist",
                hint="Regenerate the list from the images on disk, or restore the image.",
                line=entry.line, entry=entry.text,
            ))
            continue
        if not inside_root(path, root_abs):
            discovery.findings.append(ESCAPES_ROOT.finding(
                shown, f"line {entry.line}: {entry.text!r} points outside the dataset root {display_path(root)}",
                line=entry.line, entry=entry.text,
            ))
        images.append(path)
    collector.add_images(images)


def discover_data_yaml(yaml_path: str, options: AuditOptions, discovery: Discovery) -> None:
    """The splits of an Ultralytics data.yaml."""
    source = display_path(yaml_path)
    declared = _read_declaration(read_data_yaml, yaml_path, source, discovery)
    if declared is None:
        return
    folder = os.path.dirname(os.path.abspath(yaml_path))
    root = folder
    if declared.root:
        declared_root = declared.root if os.path.isabs(declared.root) else os.path.join(folder, declared.root)
        if os.path.isdir(declared_root):
            root = os.path.normpath(declared_root)
        else:
            discovery.notes.append(f"{source}: path: {declared.root!r} does not exist here; "
                                   f"the splits are looked for under {display_path(folder)}")
    discovery.spec = _spec(declared.names, declared.nc, source, discovery)
    collector = _Collector(discovery, declared.keypoint_shape)
    if not declared.splits:
        discovery.notes.append(f"{source} names no train/val/test split; label folders under "
                               f"{display_path(root)} are audited")
        _add_tree(collector, root)
    for split, entries in declared.splits.items():
        for entry in entries:
            _add_split(collector, split, entry, [root, folder], source, root)
    collector.finish()


def _read_declaration(reader, path: str, source: str, discovery: Discovery) -> DatasetFile | None:
    """A data.yaml / obj.data read by ``reader``, its problems as LG001; None when unreadable."""
    try:
        declared = reader(path)
    except ReadError as exc:
        discovery.findings.append(UNREADABLE.finding(source, str(exc)))
        return None
    for problem in declared.problems:
        discovery.findings.append(UNREADABLE.finding(
            source, problem, hint="Correct the dataset file; trainers stop on it or misread it."))
    return declared


def discover_darknet(data_path: str, options: AuditOptions, discovery: Discovery) -> None:
    """A darknet ``obj.data``: its names file and image lists."""
    source = display_path(data_path)
    declared = _read_declaration(read_darknet_data, data_path, source, discovery)
    if declared is None:
        return
    root = os.path.dirname(os.path.abspath(data_path))
    names = None
    names_source = source
    if declared.names_file:
        names_path = _resolve(declared.names_file, [root])
        if names_path is None:
            discovery.findings.append(MISSING.finding(
                source, f"names = {declared.names_file!r} does not exist",
                hint="Correct the names path in obj.data.", entry=declared.names_file))
        else:
            names, names_source = _read_names(names_path, discovery)
    if names is None:
        names, names_source = _names_beside([root], discovery, default=(None, source))
    discovery.spec = _spec(names, declared.nc, names_source if names else source, discovery)
    collector = _Collector(discovery, None)
    for split, entries in declared.splits.items():
        for entry in entries:
            _add_split(collector, split, entry, [root], source, root)
    if not declared.splits:
        _add_tree(collector, root)
    collector.finish()


def _read_names(path: str, discovery: Discovery) -> tuple[list[str] | None, str]:
    shown = display_path(path)
    try:
        return read_names(path) or None, shown
    except ReadError as exc:
        discovery.findings.append(UNREADABLE.finding(shown, f"class names: {exc}"))
        return None, shown


def _names_beside(folders: list[str], discovery: Discovery, default=(None, "")):
    """Names from the first class-name file in ``folders`` (nearest first: the dataset's own
    folder before the one above it); the spec they give is marked as found beside the data."""
    for folder in folders:
        for name in NAMES_FILES:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                return _read_names(path, discovery)
    return default


def _label_dir(root: str) -> str | None:
    for name in LABEL_DIRS:
        path = os.path.join(root, name)
        if os.path.isdir(path) and _holds_txt(path):
            return path
    return None


def _mirrored_images(label_folder: str) -> str:
    """The image folder of a label folder, as :func:`label_path` mirrors them: the last
    ``labels`` component becomes ``images``."""
    parts = label_folder.split(os.sep)
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in LABEL_DIRS:
            return os.sep.join(parts[:i] + ["images" if parts[i].islower() else "Images"] + parts[i + 1:])
    return label_folder


def _is_label_folder(folder: str) -> bool:
    """True when ``folder`` is itself a ``labels`` folder of YOLO rows, or a split folder
    of one (``labels/train``), given as PATH."""
    folder = os.path.abspath(folder)
    if not ({os.path.basename(folder), os.path.basename(os.path.dirname(folder))} & set(LABEL_DIRS)) \
            or not _holds_txt(folder):
        return False
    first = next((path for path in walk_files(folder) if path.endswith(".txt")
                  and not _not_labels(os.path.basename(path))), None)
    return first is not None and holds_yolo_rows(first)


def _holds_txt(folder: str, limit: int = 2000) -> bool:
    """True when ``folder`` holds more .txt files than mask files (among its first files)."""
    texts = masks = 0
    for _, _, files in os.walk(folder):
        for name in files:
            lower = name.lower()
            if lower.endswith(".txt"):
                texts += 1
            elif lower.endswith((".png", ".npy", ".npz", ".nii", ".nii.gz", ".tif", ".tiff", ".h5")):
                masks += 1
            if texts + masks >= limit:
                return texts > masks
    return texts > masks


def _paired_txt(folder: str) -> list[str]:
    """The .txt files of ``folder`` that have an image of the same name beside them."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    stems = {os.path.splitext(n)[0] for n in names if _is_image(n)}
    return sorted(os.path.join(folder, n) for n in names
                  if n.endswith(".txt") and n[:-4] in stems)


def _add_tree(collector: _Collector, root: str) -> None:
    """Label files of a folder without a dataset file: a ``labels`` tree mirrored by
    ``images``, or .txt files beside their images (also in image folders below ``root``)."""
    label_dir = _label_dir(root)
    if label_dir is None and _is_label_folder(root):
        # PATH is a label folder itself: its images are where Ultralytics looks for them.
        images_dir = _mirrored_images(os.path.abspath(root))
        collector.add_label_dir(root, images_dir if os.path.isdir(images_dir) else None)
        return
    if label_dir is not None:
        images_dir = os.path.join(root, "images" if os.path.basename(label_dir).lower() == "labels" else "Images")
        if not os.path.isdir(images_dir):
            images_dir = next((os.path.join(root, d) for d in ("images", "Images", "JPEGImages")
                               if os.path.isdir(os.path.join(root, d))), None)
        collector.add_label_dir(label_dir, images_dir)
        return
    for directory, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for path in _paired_txt(directory):
            collector.labels.setdefault(path)


def _dataset_file(root: str) -> tuple[str, str] | None:
    """("yaml" | "darknet", path) of the dataset file of ``root``, if any."""
    for name in YAML_NAMES:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            return "yaml", path
    path = os.path.join(root, "obj.data")
    if os.path.isfile(path):
        return "darknet", path
    return None


def discover_yolo(root: str, options: AuditOptions) -> Discovery:
    """A YOLO dataset: a data.yaml or obj.data (as the path or in the folder), or a folder
    of label files."""
    discovery = Discovery("yolo", root)
    if os.path.isfile(root):
        lower = root.lower()
        if lower.endswith((".yaml", ".yml")):
            discover_data_yaml(root, options, discovery)
        elif lower.endswith(".data"):
            discover_darknet(root, options, discovery)
        else:
            folder = os.path.dirname(os.path.abspath(root))
            names, source = _names_beside([folder, os.path.dirname(folder)], discovery)
            discovery.spec = class_list_spec(names or (), source)
            discovery.tasks.append(FileTask(process_yolo, root, display_path(root)))
        return discovery
    if not os.path.isdir(root):
        discovery.findings.append(UNREADABLE.finding(display_path(root), "no such file or directory"))
        return discovery
    found = _dataset_file(root)
    if found is not None:
        kind, path = found
        (discover_data_yaml if kind == "yaml" else discover_darknet)(path, options, discovery)
        return discovery
    names, source = _names_beside([root, os.path.dirname(os.path.abspath(root))], discovery)
    discovery.spec = class_list_spec(names or (), source)
    collector = _Collector(discovery, None)
    _add_tree(collector, root)
    collector.finish()
    return discovery


def _detect_yolo(root: str, options: AuditOptions) -> bool:
    if os.path.isfile(root):
        lower = root.lower()
        if lower.endswith(".data"):
            return True
        if lower.endswith((".yaml", ".yml")):
            try:
                declared = read_data_yaml(root)
            except ReadError:
                return False
            return bool(declared.names or declared.nc or declared.splits)
        return False
    if not os.path.isdir(root):
        return False
    if _dataset_file(root) is not None:
        return True
    if any(os.path.isfile(os.path.join(root, name)) for name in NAMES_FILES[:3]):
        return True
    if _label_dir(root) is not None or _is_label_folder(root):
        return True
    folders = [root] + [os.path.join(root, d) for d in sorted(os.listdir(root))
                        if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")]
    return any(_paired_txt(folder) for folder in folders)


discover_yolo.detect = _detect_yolo
register_layout("yolo", 45, "YOLO (data.yaml, obj.data/obj.names, images/ + labels/ .txt rows)")(discover_yolo)
