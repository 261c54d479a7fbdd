"""Pascal VOC detection: ``Annotations/*.xml`` with ``JPEGImages/`` and ``ImageSets/Main`` lists.

Also read: the relaxed layouts (an ``annotations/`` folder beside ``images/``, or XML files
beside their images). When the folder also holds ``SegmentationClass``, its masks are
audited in the same run by the VOC segmentation layout.

The spec comes from the dataset when it declares one: a Datumaro/CVAT ``labelmap.txt``, or
a ``labels.txt`` / ``classes.txt`` beside the annotations.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Sequence

from labelguard.checks.files import MISSING, UNREADABLE
from labelguard.core.records import AnnotationRecord, ImageReference
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts.base import (
    AuditOptions, Discovery, display_path, inside_root, read_list, register_layout, select_from_lists,
    strip_extension, unpaired_findings, walk_files,
)
from labelguard.layouts.masks import discover_voc_segmentation
from labelguard.readers.base import CLASS_NAME_FILES, ReadError, read_class_names, read_head
from labelguard.readers.voc import read_voc_file
from labelguard.rules._annotations import process_annotation, process_annotation_batch

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".gif",
                              ".dng", ".mpo", ".pfm", ".heic"})
ANNOTATION_DIRS = ("Annotations", "annotations", "Annotation", "annotation", "xml", "xmls")
IMAGE_DIRS = ("JPEGImages", "images", "Images", "image", "img", "imgs")
SPEC_FILES = ("labelmap.txt", *CLASS_NAME_FILES)


# ---- per-file processor -----------------------------------------------------------------

OBJECT_HINT = ("Fix or remove the object: a VOC loader reads <name> and the four <bndbox> numbers "
               "of every object and fails on this one.")


def voc_record(task: FileTask) -> AnnotationRecord:
    """One VOC XML as an annotation record: its named objects, their boxes inside ``<size>``,
    and its ``<filename>`` resolved in the image folder."""
    annotation = read_voc_file(task.path)
    names, boxes = annotation.names, annotation.boxes
    places = None
    if annotation.problems:
        kept = [i for i, name in enumerate(names) if name is not None]
        places = [i + 1 for i in kept]
        names = [names[i] for i in kept]
        boxes = [boxes[i] for i in kept]
    sized = annotation.width > 0 and annotation.height > 0
    image_dir = task.option("image_dir")
    return AnnotationRecord(
        task.display, "voc", "object", names, places, boxes,  # type: ignore[arg-type]
        image_size=(annotation.width, annotation.height) if sized else None,
        problems=annotation.problems, problem_hint=OBJECT_HINT,
        image=_image_reference(task, annotation.filename, image_dir) if image_dir is not None else None,
    )


def process_voc(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one VOC XML and run the annotation rules on it."""
    return process_annotation(task, spec, voc_record, "voc")


def process_voc_batch(tasks: Sequence[FileTask], spec: LabelSpec) -> FileResult:
    """:func:`process_voc` of a batch of files, merged (see :func:`process_annotation_batch`)."""
    return process_annotation_batch(tasks, spec, voc_record, "voc")


process_voc.batch = process_voc_batch  # type: ignore[attr-defined]


def _image_reference(task: FileTask, filename: str | None, image_dir: str) -> ImageReference:
    """``<filename>`` resolved in ``image_dir``; the image paired by name is accepted for a
    ``<filename>`` that names it (with or without its extension)."""
    image = task.image
    filename = filename.strip() if filename else None
    reference = partial(ImageReference, "<filename>", filename, display_path(image_dir),
                        paired=task.image_display if image else None,
                        expected=f"{os.path.basename(strip_extension(task.path))}.*")
    if not filename:
        return reference()
    if image is not None and (image.endswith(os.sep + filename) or image == filename
                              or strip_extension(image).endswith(os.sep + filename)):
        return reference(found=True)
    target = os.path.join(image_dir, filename)
    if os.path.isabs(filename) or not inside_root(target, image_dir):
        return reference(escapes=True)
    return reference(found=os.path.isfile(target))


# ---- discovery --------------------------------------------------------------------------

def _child_dir(root: str, names) -> str | None:
    for name in names:
        path = os.path.join(root, name)
        if os.path.isdir(path):
            return path
    return None


def _has_xml(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(e.name.lower().endswith(".xml") and e.is_file() for e in entries)
    except OSError:
        return False


def _annotation_root(root: str) -> str | None:
    """The folder holding the XML annotations of ``root``, or None when it is not VOC."""
    folder = _child_dir(root, ANNOTATION_DIRS)
    if folder is not None and _has_xml(folder):
        return folder
    if os.path.isdir(root) and _has_xml(root) and _looks_like_voc(root):
        return root
    return None


def _looks_like_voc(folder: str) -> bool:
    """True when the first XML file of ``folder`` has an ``<annotation>`` root."""
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".xml"))
    for name in names[:3]:
        try:
            head = read_head(os.path.join(folder, name), 2048)
        except ReadError:
            continue
        if b"<annotation" in head:
            return True
    return False


def _detect_voc(root: str, options: AuditOptions) -> bool:
    if os.path.isfile(root):
        return root.lower().endswith(".xml")
    return _annotation_root(root) is not None


def _spec_from_files(directories: list[str], discovery: Discovery) -> LabelSpec:
    for directory in directories:
        for name in SPEC_FILES:
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                continue
            try:
                names = read_class_names(path)
            except ReadError as exc:
                discovery.findings.append(UNREADABLE.finding(display_path(path), f"class list: {exc}"))
                continue
            spec = class_list_spec(names, display_path(path))
            if spec.is_known:
                return spec
    return LabelSpec()


def _split_lists(root: str) -> list[str]:
    """``ImageSets/Main`` split lists (train.txt, val.txt...), without the per-class lists
    (``cat_train.txt``) derived from them."""
    main = os.path.join(root, "ImageSets", "Main")
    if not os.path.isdir(main):
        return []
    names = sorted(n for n in os.listdir(main) if n.endswith(".txt"))
    splits = {n[:-4] for n in names}
    return [os.path.join(main, n) for n in names
            if not any(n[:-4].endswith("_" + split) for split in splits if split != n[:-4])]


def _check_split_lists(lists: list[str], by_stem: dict[str, str], images: dict,
                       discovery: Discovery) -> tuple[set[str], set[str]]:
    """LG003/LG004 on the split lists; returns the image stems named by test splits and
    those named by any list (its first field: per-class lists add 1 / -1 after the id)."""
    test_ids: set[str] = set()
    named: set[str] = set()
    for list_path in lists:
        shown = display_path(list_path)
        listing, findings = read_list(list_path)
        discovery.findings.extend(findings)
        if listing is None:
            continue
        # Test splits may come without annotations (VOC2012 test): their images are enough.
        is_test = "test" in os.path.basename(list_path).lower()
        missing = []
        for entry in listing.entries:
            stem = entry.fields[0]
            named.add(stem)
            if is_test:
                test_ids.add(stem)
            if stem in by_stem or (is_test and stem in images):
                continue
            missing.append(entry)
        for entry in missing[:200]:
            what = "an annotation or image" if is_test else "an annotation"
            discovery.findings.append(MISSING.finding(
                shown, f"line {entry.line}: {entry.fields[0]!r} has no {what} ({entry.fields[0]}.xml)",
                hint="Regenerate the list from the annotations on disk, or restore the file.",
                line=entry.line, entry=entry.fields[0],
            ))
        if len(missing) > 200:
            discovery.notes.append(f"{shown}: {len(missing) - 200} more missing entries not listed")
    return test_ids, named


def relative_files(folder: str) -> list[tuple[str, str]]:
    """(path relative to ``folder``, path) of every file under ``folder``, sorted."""
    start = len(folder.rstrip(os.sep)) + 1
    return [(path[start:], path) for path in walk_files(folder)]


def _images_by_stem(folder: str | None) -> dict[str, tuple[str, str]]:
    """Relative stem -> (path, display path) of the images under ``folder``."""
    if folder is None:
        return {}
    shown = display_path(folder)
    found: dict[str, tuple[str, str]] = {}
    for relative, path in relative_files(folder):
        stem, ext = os.path.splitext(relative)
        if ext.lower() in IMAGE_EXTENSIONS and stem not in found:
            found[stem] = (path, relative if shown == "." else os.path.join(shown, relative))
    return found


def discover_voc(root: str, options: AuditOptions) -> Discovery:
    """VOC annotations (and SegmentationClass masks when present) under ``root``."""
    discovery = Discovery("voc", root)
    if os.path.isfile(root):
        folder = os.path.dirname(os.path.abspath(root))
        discovery.tasks = [FileTask(process_voc, root, display_path(root))]
        discovery.spec = _spec_from_files([folder, os.path.dirname(folder)], discovery)
        return discovery
    annotation_dir = _annotation_root(root)
    if annotation_dir is None:
        discovery.notes.append(f"no Annotations/*.xml under {display_path(root)}")
        return discovery
    # PATH may be the Annotations folder itself: its images, lists and class list sit in
    # the VOC folder above it.
    voc_root = root
    parent = os.path.dirname(os.path.abspath(root))
    if annotation_dir == root and os.path.basename(os.path.abspath(root)) in ANNOTATION_DIRS and (
            _child_dir(parent, IMAGE_DIRS) or os.path.isdir(os.path.join(parent, "ImageSets"))):
        voc_root = parent
    xmls = {relative[:-4]: path for relative, path in relative_files(annotation_dir)
            if relative[-4:].lower() == ".xml"}
    if options.images:
        image_dir: str | None = options.images
    elif annotation_dir != voc_root:
        image_dir = _child_dir(voc_root, IMAGE_DIRS)
    else:
        image_dir = root
    images = _images_by_stem(image_dir)
    selected = list(xmls)
    image_sets = os.path.join(voc_root, "ImageSets")
    if options.lists and not all(inside_root(p, image_sets) for p in options.lists):
        selection = select_from_lists(options.lists, voc_root, list(xmls.values()), (".xml",))
        discovery.findings.extend(selection.findings)
        chosen = set(selection.paths)
        selected = [stem for stem, path in xmls.items() if path in chosen]
        test_ids: set[str] = set()
    else:
        # VOC's own split lists name image ids (test splits may lack annotations).
        test_ids, named = _check_split_lists(list(options.lists) or _split_lists(voc_root), xmls, images,
                                             discovery)
        if options.lists:
            selected = [stem for stem in xmls if stem in named]
    shown_dir = display_path(annotation_dir)
    image_option = (("image_dir", image_dir),) if image_dir is not None else ()
    tasks = []
    for stem in selected:
        path = xmls[stem]
        relative = path[len(path) - len(stem) - 4:]
        image, image_display = images.get(stem, (None, None))
        tasks.append(FileTask(
            process_voc, path, relative if shown_dir == "." else os.path.join(shown_dir, relative),
            image=image, image_display=image_display, options=image_option,
        ))
    discovery.tasks = tasks
    if image_dir is not None and image_dir != root and not options.lists:
        orphans = [path for stem, (path, _) in images.items() if stem not in xmls and stem not in test_ids]
        discovery.findings.extend(unpaired_findings(orphans, [], what="annotation"))
    spec_dirs = [voc_root, annotation_dir, os.path.dirname(os.path.abspath(voc_root))]
    discovery.spec = _spec_from_files(spec_dirs, discovery)
    if voc_root == root and os.path.isdir(os.path.join(root, "SegmentationClass")):
        segmentation = discover_voc_segmentation(root, options)
        discovery.tasks.extend(segmentation.tasks)
        discovery.findings.extend(segmentation.findings)
        discovery.notes.extend(segmentation.notes)
        discovery.color_map = segmentation.color_map
        if not discovery.spec.is_known:
            discovery.spec = segmentation.spec
        discovery.notes.append(f"SegmentationClass masks audited too ({len(segmentation.tasks)} files)")
    return discovery


discover_voc.detect = _detect_voc
register_layout("voc", 25, "Pascal VOC detection (Annotations/*.xml, JPEGImages, ImageSets/Main)")(discover_voc)
