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

import itertools
import os
from typing import Iterator, Sequence

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileTask
from labelguard.core.text import clipped, plural
from labelguard.layouts.base import (
    CONTENT, DECLARED, LISTS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.core.paths import DisplayNames, display_path
from labelguard.layouts.folders import holds_yolo_rows, walk_files
from labelguard.core.records import EntriesRecord, EntryProblem
from labelguard.layouts.lists import ListRule, ListSelection, judged, resolve_declared, select_from_lists
from labelguard.layouts.metadata import metadata_findings, read_metadata
from labelguard.layouts.pairing import Pairing, derived_label, pair_derived, pair_files, unpaired_findings
from labelguard.readers.base import DARKNET_NAME_FILES, IMAGE_EXTENSIONS, PLAIN_NAME_FILES, ReadError
from labelguard.layouts.yolo import editor
from labelguard.layouts.yolo.reader import DatasetFile, read_darknet_data, read_data_yaml, read_names
from labelguard.layouts.yolo.record import process_yolo, yolo_record
from labelguard.layouts.formats import AnnotationFormat, register_format

__all__ = ["discover_yolo", "label_files", "label_path", "process_yolo", "yolo_record"]

YAML_NAMES = ("data.yaml", "data.yml", "dataset.yaml", "dataset.yml")
NAMES_FILES = (*DARKNET_NAME_FILES, *PLAIN_NAME_FILES)  # darknet's first
LABEL_DIRS = ("labels", "Labels", "Annotations", "annotations")


# ---- discovery --------------------------------------------------------------------------

# The naming rules of YOLO's lists and dataset files. Image lists (a data.yaml split, obj.data's
# train=, --list) name images, whose labels follow from them; a trainer reads their paths
# relative to the list or the directory it runs in, darknet with the dataset's folder as
# ``data/``: leading folders are dropped until the image is found inside the dataset, and an
# image without a label file is a background image.
IMAGE_LIST = ListRule(images=True, loose=True, stems=False, images_suffice=True)
# The paths a data.yaml or obj.data declares (split folders, lists, the names file).
DECLARED_PATH = ListRule(loose=True, folders=True, stems=False)
# data.yaml's `path`: the dataset's folder, below the data.yaml's (taken as written, never loosely).
DATASET_ROOT = ListRule(folders=True, stems=False)
SPLIT_HINT = "Correct the path in the dataset file (relative to its 'path', or to the file's folder)."
ROOT_HINT = ("labelguard reads only inside the dataset: keep the data.yaml in the dataset's folder (or in the "
             "folder above it, with `path` naming the dataset's folder), and audit it there.")
OUTSIDE_HINT = ("labelguard reads only inside the dataset: write the path relative to the dataset's folder, and "
                "keep what it names inside it.")


def label_path(image: str) -> str:
    """Where Ultralytics looks for an image's labels: the last ``/images/`` becomes
    ``/labels/`` and the extension ``.txt``."""
    marker = f"{os.sep}images{os.sep}"
    if marker in image:
        head, tail = image.rsplit(marker, 1)
        image = f"{head}{os.sep}labels{os.sep}{tail}"
    return os.path.splitext(image)[0] + ".txt"


def label_files(image: str) -> tuple[str, ...]:
    """The label files a loader tries for ``image``, in order: Ultralytics' (:func:`label_path`),
    then the one beside the image (darknet)."""
    mirrored, beside = label_path(image), os.path.splitext(image)[0] + ".txt"
    return (mirrored,) if beside == mirrored else (mirrored, beside)


def _beside(image: str) -> tuple[str, ...]:
    return (os.path.splitext(image)[0] + ".txt",)


def _labels_of(image: str) -> list[str]:
    label = derived_label(image, label_files)
    return [label] if label is not None else []


def _is_image(path: str) -> bool:
    return path[path.rfind("."):].lower() in IMAGE_EXTENSIONS


def _not_labels(name: str) -> bool:
    """Text files that sit among label files but hold no rows: class lists, READMEs, licences."""
    lower = name.lower()
    return lower in NAMES_FILES or lower.startswith(("readme", "license", "licence"))


def _label_files_in(folder: str) -> list[str]:
    """The label files under a label folder (the .txt files but class lists and READMEs)."""
    return [path for path in walk_files(folder) if path.endswith(".txt") and not _not_labels(os.path.basename(path))]


class _Collector:
    """Label tasks and findings gathered from the splits of one dataset."""

    def __init__(self, discovery: Discovery, keypoint_shape: tuple[int, int] | None, check_images: str):
        self.discovery = discovery
        self.check_images = check_images
        self.options: tuple = (("keypoint_shape", keypoint_shape),) if keypoint_shape else ()
        self.options += (("check_images", check_images),)
        self.labels: dict[str, str | None] = {}  # label files, in order, without repeats -> their image
        self.orphans: list[str] = []  # label files without an image
        self.backgrounds: list[str] = []  # images without a label file

    def add(self, pairing: Pairing, labels: Sequence[str] = ()) -> None:
        """The label files found (``labels``) and those ``pairing`` found for images; the
        labels it left without an image are LG002, its images without a label backgrounds."""
        for label in labels:
            self.labels.setdefault(label, None)
        self.labels.update(pairing.pairs)
        self.backgrounds.extend(pairing.orphan_images)
        self.orphans.extend(pairing.orphan_labels)

    def add_selection(self, selection: ListSelection) -> None:
        self.discovery.add_lists(selection)
        for label in selection.paths:
            self.labels.setdefault(label, None)
        self.labels.update((label, image) for label, image in selection.pairs.items() if label in self.labels)
        self.backgrounds.extend(selection.unlabelled)

    def _tasks(self, labels: dict[str, str | None], backgrounds: list[str]) -> Iterator[FileTask]:
        """A task per label file, with its image; the background images are shared out among
        the tasks (a trainer reads them too), so that they are checked in parallel as the
        labels are, with no task of their own."""
        shown = DisplayNames()
        share = -(-len(backgrounds) // len(labels)) if labels and self.check_images != "off" else 0
        for index, (path, image) in enumerate(labels.items()):
            options = self.options
            if image is not None:
                options += (("image_file", (image, shown(image))),)
            if share and index * share < len(backgrounds):
                shared = backgrounds[index * share:(index + 1) * share]
                options += (("backgrounds", tuple((b, shown(b)) for b in shared)),)
            yield FileTask(process_yolo, path, shown(path), options=options)

    def finish(self) -> None:
        self.discovery.findings.extend(unpaired_findings([], self.orphans, what="label", errors=self.discovery.errors))
        # The tasks are made as the engine takes them (a task and its display path cost more
        # than the label's path kept until then).
        self.discovery.tasks = itertools.chain(self.discovery.tasks, self._tasks(self.labels, self.backgrounds))
        count, labelled = len(self.backgrounds), bool(self.labels)
        self.labels = {}
        self.backgrounds = []
        if count:
            self.discovery.notes.append(
                f"{plural(count, 'image')} without a label file (background images, as an empty label file)"
                + (": not checked to be whole, as no label file is audited with them"
                   if self.check_images != "off" and not labelled else ""))


def _spec(names: list[str] | None, nc: int | None, source: str, discovery: Discovery) -> LabelSpec:
    """The dataset's spec: the names (Ultralytics sets nc from them), else nc."""
    if names:
        if nc is not None and nc != len(names):
            discovery.notes.append(
                f"{source}: nc: {nc} but {len(names)} names; Ultralytics uses the {len(names)} names "
                f"(YOLOv5 stops on the mismatch): ids are checked against {len(names)}")
        return LabelSpec.from_source(source, classes=tuple(names))
    if nc is not None:
        return LabelSpec.from_source(source, num_classes=nc)
    return LabelSpec()


def _declared(discovery: Discovery, key: str, entry: str, root: str, folder: str, source: str,
              hint: str = SPLIT_HINT, split: bool = True) -> str | None:
    """A path a dataset file declares under ``key`` (a split, or obj.data's ``names``),
    resolved as trainers resolve it; LG003 when it names nothing, LG005 when it leaves the
    dataset ``root`` (then it is never read: :func:`resolve_declared`)."""
    path, leaves, why = resolve_declared(entry.strip(), root, folder, DECLARED_PATH)
    if path is None:
        problem = EntryProblem(key, entry, detail=why, data=(("split", key),) if split else ())
        missing, escaping = ([], [problem]) if leaves else ([problem], [])
        discovery.findings.extend(judged(EntriesRecord(source, display_path(root), missing, escaping, hint=hint,
                                                       escape_hint=OUTSIDE_HINT), discovery.errors))
    return path


def _add_split(collector: _Collector, split: str, entry: str, root: str, folder: str, source: str) -> None:
    """One path a split names: a folder of images, an image, or a list of images."""
    path = _declared(collector.discovery, split, entry, root, folder, source)
    if path is None:
        return
    if storage.isdir(path):
        _add_image_folder(collector, path)
    elif _is_image(path):
        collector.add(pair_derived([path], label_files))
    else:
        _add_lists(collector, [path], root)


def _add_lists(collector: _Collector, lists: Sequence[str], root: str) -> None:
    """The label files of the images that lists of images name (a split's .txt, --list)."""
    collector.add_selection(select_from_lists(lists, root, [], rule=IMAGE_LIST, label_of=_labels_of))


def _add_image_folder(collector: _Collector, folder: str) -> None:
    """The images under ``folder`` and their label files, as Ultralytics finds them; the
    label folder it mirrors is read whole, and its files without an image are LG002."""
    images = [path for path in walk_files(folder) if _is_image(path)]
    label_dir = os.path.dirname(label_path(os.path.join(folder, "x.jpg")))
    labels = _label_files_in(label_dir) if label_dir != folder and storage.isdir(label_dir) else []
    collector.add(pair_derived(images, label_files, labels), labels)


def discover_data_yaml(yaml_path: str, options: AuditOptions, discovery: Discovery) -> None:
    """The splits of an Ultralytics data.yaml (or the --list files, which select instead)."""
    source = display_path(yaml_path)
    declared = _read_declaration(read_data_yaml, yaml_path, discovery)
    if declared is None:
        return
    folder = os.path.dirname(storage.abspath(yaml_path))
    root = folder
    if declared.root:
        # The dataset is the data.yaml's folder, or the folder below it that `path` names.
        declared_root, leaves, why = resolve_declared(declared.root, folder, folder, DATASET_ROOT)
        if leaves:
            discovery.findings.extend(judged(EntriesRecord(
                source, display_path(folder), escaping=[EntryProblem("path", declared.root, detail=why)],
                escape_hint=ROOT_HINT), discovery.errors))
        if declared_root is not None and storage.isdir(declared_root):
            root = storage.normpath(declared_root)
        else:
            said = "leaves the dataset" if leaves else "is no folder" if declared_root else "does not exist here"
            discovery.notes.append(f"{source}: path: {clipped(declared.root)!r} {said}; "
                                   f"the splits are looked for under {display_path(folder)}")
    discovery.spec = _spec(declared.names, declared.nc, source, discovery)
    collector = _Collector(discovery, declared.keypoint_shape, options.check_images)
    if options.lists:
        _add_lists(collector, options.lists, root)
    elif not declared.splits:
        discovery.notes.append(f"{source} names no train/val/test split; label folders under "
                               f"{display_path(root)} are audited")
        _add_tree(collector, root)
    else:
        for split, entries in declared.splits.items():
            for entry in entries:
                _add_split(collector, split, entry, root, folder, source)
    collector.finish()


def _read_declaration(reader, path: str, discovery: Discovery) -> DatasetFile | None:
    """A data.yaml / obj.data read by ``reader``, its problems as LG001; None when unreadable.
    Its folder is the dataset it declares."""
    declared, findings = read_metadata(path, reader, os.path.dirname(storage.abspath(path)))
    discovery.findings.extend(findings)
    if declared is not None:
        discovery.findings.extend(metadata_findings(
            path, declared.problems, hint="Correct the dataset file; trainers stop on it or misread it."))
    return declared


def discover_darknet(data_path: str, options: AuditOptions, discovery: Discovery) -> None:
    """A darknet ``obj.data``: its names file and image lists (or the --list files)."""
    source = display_path(data_path)
    declared = _read_declaration(read_darknet_data, data_path, discovery)
    if declared is None:
        return
    root = os.path.dirname(storage.abspath(data_path))
    collector = _Collector(discovery, None, options.check_images)
    names = None
    names_source = source
    if declared.names_file:
        names_path = _declared(discovery, "names", declared.names_file, root, root, source,
                               hint="Correct the names path in obj.data.", split=False)
        if names_path is not None:
            names, names_source = _read_names(names_path, root, discovery)
    if names is None:
        names, names_source = _names_beside([root], discovery, default=(None, source))
    discovery.spec = _spec(names, declared.nc, names_source if names else source, discovery)
    if options.lists:
        _add_lists(collector, options.lists, root)
    elif not declared.splits:
        _add_tree(collector, root)
    else:
        for split, entries in declared.splits.items():
            for entry in entries:
                _add_split(collector, split, entry, root, root, source)
    collector.finish()


def _read_names(path: str, root: str, discovery: Discovery) -> tuple[list[str] | None, str]:
    names, findings = read_metadata(path, read_names, root, "class names")
    discovery.findings.extend(findings)
    return names or None, display_path(path)


def _names_beside(folders: list[str], discovery: Discovery, default=(None, "")):
    """Names from the first class-name file in ``folders`` (nearest first: the dataset's own
    folder, its root, before the one above it); the spec they give is marked as found beside
    the data."""
    for folder in folders:
        for name in NAMES_FILES:
            path = os.path.join(folder, name)
            if storage.isfile(path):
                return _read_names(path, folders[0], discovery)
    return default


def _label_dir(root: str) -> str | None:
    for name in LABEL_DIRS:
        path = os.path.join(root, name)
        if storage.isdir(path) and _holds_txt(path):
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
    folder = storage.abspath(folder)
    if not ({os.path.basename(folder), os.path.basename(os.path.dirname(folder))} & set(LABEL_DIRS)) \
            or not _holds_txt(folder):
        return False
    first = next((path for path in walk_files(folder) if path.endswith(".txt")
                  and not _not_labels(os.path.basename(path))), None)
    return first is not None and holds_yolo_rows(first)


def _holds_txt(folder: str, limit: int = 2000) -> bool:
    """True when ``folder`` holds more .txt files than mask files (among its first files)."""
    texts = masks = 0
    for _, _, files in storage.walk(folder):
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
    return sorted(_paired_beside(folder))


def _paired_beside(folder: str) -> dict[str, str]:
    """The .txt files of ``folder`` that have an image of the same name beside them -> that image."""
    try:
        texts = [os.path.join(folder, name) for name in storage.names_with_suffix(folder, (".txt",))
                 if name.endswith(".txt")]
        if not texts:
            return {}  # (a folder of 100,000 masks: no list of their names)
        paths = [os.path.join(folder, name) for name in sorted(storage.listdir(folder))]
    except OSError:
        return {}
    return pair_derived([path for path in paths if _is_image(path)], _beside, texts).pairs


def _pair_trees(images_dir: str | None, label_dir: str, labels: list[str]) -> Pairing:
    """Labels of a label tree with the images of the image tree beside it: as Ultralytics
    mirrors ``images/`` by ``labels/``, or by name when the folders are named otherwise
    (Datumaro's ``Images/`` + ``Annotations/``)."""
    if images_dir is None or not storage.isdir(images_dir):
        return Pairing()
    images = [path for path in walk_files(images_dir) if _is_image(path)]
    if os.path.dirname(label_path(os.path.join(images_dir, "x.jpg"))) == label_dir.rstrip(os.sep):
        return pair_derived(images, label_files, labels)
    return pair_files(images, labels, images_dir, label_dir)


def _add_tree(collector: _Collector, root: str) -> None:
    """Label files of a folder without a dataset file: a ``labels`` tree mirrored by
    ``images``, or .txt files beside their images (also in image folders below ``root``)."""
    label_dir = _label_dir(root)
    if label_dir is None and _is_label_folder(root):
        # PATH is a label folder itself: its images are where Ultralytics looks for them.
        label_dir = storage.abspath(root)
        images_dir: str | None = _mirrored_images(label_dir)
    elif label_dir is not None:
        images_dir = os.path.join(root, "images" if os.path.basename(label_dir).lower() == "labels" else "Images")
        if not storage.isdir(images_dir):
            images_dir = next((os.path.join(root, d) for d in ("images", "Images", "JPEGImages")
                               if storage.isdir(os.path.join(root, d))), None)
    else:
        for directory, dirs, _ in storage.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            collector.labels.update(sorted(_paired_beside(directory).items()))
        return
    labels = _label_files_in(label_dir)
    collector.add(_pair_trees(images_dir, label_dir, labels), labels)


def _dataset_file(root: str) -> tuple[str, str] | None:
    """("yaml" | "darknet", path) of the dataset file of ``root``, if any."""
    for name in YAML_NAMES:
        path = os.path.join(root, name)
        if storage.isfile(path):
            return "yaml", path
    path = os.path.join(root, "obj.data")
    if storage.isfile(path):
        return "darknet", path
    return None


def discover_yolo(root: str, options: AuditOptions) -> Discovery:
    """A YOLO dataset: a data.yaml or obj.data (as the path or in the folder), or a folder
    of label files.

    Roles: images, label files (found from each image as the trainer finds them, see
    :func:`label_files`), lists of images (the splits of the dataset file, or --list) and
    metadata (data.yaml, obj.data, obj.names / classes.txt)."""
    discovery = Discovery("yolo", root)
    if storage.isfile(root):
        lower = root.lower()
        if lower.endswith((".yaml", ".yml")):
            discover_data_yaml(root, options, discovery)
        elif lower.endswith(".data"):
            discover_darknet(root, options, discovery)
        else:
            folder = os.path.dirname(storage.abspath(root))
            names, source = _names_beside([folder, os.path.dirname(folder)], discovery)
            discovery.spec = class_list_spec(names or (), source)
            discovery.tasks.append(FileTask(process_yolo, root, display_path(root)))
        return discovery
    if not storage.isdir(root):
        discovery.findings.append(unreadable(display_path(root), "no such file or directory"))
        return discovery
    found = _dataset_file(root)
    if found is not None:
        kind, path = found
        (discover_data_yaml if kind == "yaml" else discover_darknet)(path, options, discovery)
        return discovery
    names, source = _names_beside([root, os.path.dirname(storage.abspath(root))], discovery)
    discovery.spec = class_list_spec(names or (), source)
    collector = _Collector(discovery, None, options.check_images)
    if options.lists:
        _add_lists(collector, options.lists, root)
    else:
        _add_tree(collector, root)
    collector.finish()
    return discovery


def _detect_yolo(root: str, options: AuditOptions) -> Evidence:
    if storage.isfile(root):
        lower = root.lower()
        if lower.endswith(".data"):
            return evidence(0.41, Seen("a darknet .data file", DECLARED))
        if lower.endswith((".yaml", ".yml")):
            try:
                declared = read_data_yaml(root)
            except ReadError:
                return no("a YAML file that cannot be read")
            if declared.names or declared.nc or declared.splits:
                return evidence(0.41, Seen("a data.yaml naming classes or splits", DECLARED))
            return no("a YAML file naming no classes, nc or splits")
        return no()
    if not storage.isdir(root):
        return no()
    seen = []
    dataset_file = _dataset_file(root)
    if dataset_file is not None:
        seen.append(Seen(os.path.basename(dataset_file[1]), DECLARED))
    names = next((name for name in DARKNET_NAME_FILES if storage.isfile(os.path.join(root, name))), None)
    if names is not None:
        seen.append(Seen(names, DECLARED))
    label_dir = _label_dir(root)
    if label_dir is not None:
        seen.append(Seen(f"{os.path.basename(label_dir)}/ holds .txt label files", NAMES))
    if seen:
        return evidence(0.41, *seen)
    if _is_label_folder(root):
        return evidence(0.41, Seen("a labels folder of YOLO rows", CONTENT))
    folders = [root] + [os.path.join(root, d) for d in storage.folder_names(root, hidden=False)]
    paired = next((found for found in map(_paired_txt, folders) if found), None)
    if paired:
        folder = os.path.dirname(paired[0])
        return evidence(0.41, Seen(f"{display_path(paired[0])} beside an image of its name", NAMES),
                        below=None if folder == root else folder)
    return no()


discover_yolo.detect = _detect_yolo  # type: ignore[attr-defined]  # read by register_layout
register_layout("yolo", "YOLO (data.yaml, obj.data/obj.names, images/ + labels/ .txt rows)", 0.41, (LISTS,))(
    discover_yolo)
register_format(AnnotationFormat("yolo", (".txt",), process_yolo, remap=editor.remap))
