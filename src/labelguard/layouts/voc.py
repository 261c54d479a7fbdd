"""Pascal VOC detection: ``Annotations/*.xml`` with ``JPEGImages/`` and ``ImageSets/Main`` lists.

Also read: the relaxed layouts (an ``annotations/`` folder beside ``images/``, or XML files
beside their images). When the folder also holds ``SegmentationClass``, its masks are
audited in the same run by the VOC segmentation layout.

The spec comes from the dataset when it declares one: a Datumaro/CVAT ``labelmap.txt``, or
a ``labels.txt`` / ``classes.txt`` beside the annotations.
"""

from __future__ import annotations

import os
from typing import Sequence

from labelguard.checks.boxes import BAD_BOX, DUPLICATE_BOX
from labelguard.checks.files import ESCAPES_ROOT, MISSING, UNPAIRED, UNREADABLE
from labelguard.checks.labels import name_findings
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.summary import EXAMPLES_KEPT
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import SHOWN, plural, shorten
from labelguard.layouts.base import (
    AuditOptions, Discovery, display_path, inside_root, read_list, register_layout, select_from_lists,
    strip_extension, unpaired_findings, walk_files,
)
from labelguard.layouts.masks import discover_voc_segmentation
from labelguard.readers.base import CLASS_NAME_FILES, ReadError, read_class_names
from labelguard.readers.voc import VocAnnotation, read_voc_file

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".gif",
                              ".dng", ".mpo", ".pfm", ".heic"})
ANNOTATION_DIRS = ("Annotations", "annotations", "Annotation", "annotation", "xml", "xmls")
IMAGE_DIRS = ("JPEGImages", "images", "Images", "image", "img", "imgs")
SPEC_FILES = ("labelmap.txt", *CLASS_NAME_FILES)
BOXES_LISTED = 20


# ---- per-file processor -----------------------------------------------------------------

def process_voc(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one VOC XML and check its class names, boxes, duplicates and image."""
    result = FileResult(task.display)
    summary = result.summary
    summary.kinds["voc"] = 1
    names = check_voc_file(task, spec, result.findings)
    if names is None:
        summary.unreadable += 1
    else:
        summary.samples += 1
        if names:
            summary.add_classes(task.display, _counts(names))
    return result


def _counts(names: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def process_voc_batch(tasks: Sequence[FileTask], spec: LabelSpec) -> FileResult:
    """:func:`process_voc` of several files, merged into one result as the engine merges
    per-file results (equal findings, equal summary), without a summary per file.

    Exposed as ``process_voc.batch`` for an engine that hands a whole batch of tasks of one
    processor to it: at about 40 microseconds a file, a per-file summary and its merge are a
    third of the work."""
    result = FileResult(tasks[0].display if tasks else "", files=len(tasks))
    summary = result.summary
    objects: dict[str, int] = {}
    images: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for task in tasks:
        names = check_voc_file(task, spec, result.findings)
        if names is None:
            summary.unreadable += 1
            continue
        summary.samples += 1
        for name in names:
            objects[name] = objects.get(name, 0) + 1
        for name in dict.fromkeys(names):
            images[name] = images.get(name, 0) + 1
            examples.setdefault(name, []).append(task.display)
    if tasks:
        summary.kinds["voc"] = len(tasks)
    summary.class_objects.update(objects)
    summary.class_images.update(images)
    summary.class_examples.update((name, sorted(paths)[:EXAMPLES_KEPT]) for name, paths in examples.items())
    return result


process_voc.batch = process_voc_batch  # type: ignore[attr-defined]


def check_voc_file(task: FileTask, spec: LabelSpec, findings: list[Finding]) -> list[str] | None:
    """Read one VOC XML, append its findings; the class names of its objects, or None when
    the file cannot be read at all."""
    display = task.display
    try:
        annotation = read_voc_file(task.path)
    except ReadError as exc:
        findings.append(UNREADABLE.finding(display, str(exc)))
        return None
    names = annotation.names
    if annotation.problems:
        for index, problem in annotation.problems:
            findings.append(UNREADABLE.finding(
                display, f"object {index} {problem}" if index else problem,
                hint="Fix or remove the object: a VOC loader reads <name> and the four <bndbox> "
                "numbers of every object and fails on this one.",
                object=index or None,
            ))
        places = [i for i, name in enumerate(names, 1) if name is not None]
        names = [name for name in names if name is not None]
    else:
        places = None
    if names:
        findings.extend(name_findings(display, names, spec, unit="object", places=places))  # type: ignore[arg-type]
    if annotation.boxes:
        findings.extend(_box_findings(display, annotation))
    image_dir = task.option("image_dir")
    if image_dir is not None:
        finding = _image_finding(task, annotation.filename, image_dir)
        if finding is not None:
            findings.append(finding)
    return names  # type: ignore[return-value]


def _box_findings(display: str, annotation: VocAnnotation) -> list:
    width, height = annotation.width, annotation.height
    sized = width > 0 and height > 0
    boxes = annotation.boxes
    # The common case, all boxes sound and distinct, costs one comparison chain per box.
    if None not in boxes and len(set(zip(annotation.names, boxes))) == len(boxes):
        if sized:
            if all(0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height for x0, y0, x1, y1 in boxes):  # type: ignore[misc]
                return []
        elif all(x0 < x1 and y0 < y1 for x0, y0, x1, y1 in boxes):  # type: ignore[misc]
            return []
    bad = []
    seen: dict[tuple, int] = {}
    repeats = []
    for index, (name, box) in enumerate(zip(annotation.names, boxes), 1):
        if box is None:
            continue
        xmin, ymin, xmax, ymax = box
        # Written as "not (a < b)" so that NaN coordinates count as degenerate too.
        if not (xmin < xmax and ymin < ymax):
            problem = (f"xmin {xmin:g} >= xmax {xmax:g}" if not (xmin < xmax)
                       else f"ymin {ymin:g} >= ymax {ymax:g}")
            bad.append((index, name, box, "degenerate", problem))
        elif sized and not (xmin >= 0 and ymin >= 0 and xmax <= width and ymax <= height):
            problem = ", ".join(text for text, out in (
                (f"xmin {xmin:g} < 0", not xmin >= 0), (f"ymin {ymin:g} < 0", not ymin >= 0),
                (f"xmax {xmax:g} > width {width:g}", not xmax <= width),
                (f"ymax {ymax:g} > height {height:g}", not ymax <= height)) if out)
            bad.append((index, name, box, "outside", problem))
        key = (name, box)
        first = seen.setdefault(key, index)
        if first != index:
            repeats.append((index, name, box, first))
    findings = []
    if bad:
        size = f" of the {width:g}x{height:g} image" if sized else ""
        listing = shorten(bad, SHOWN, lambda item: f"object {item[0]} {item[1]!r}: {item[4]}", sep="; ")
        kinds = {kind for _, _, _, kind, _ in bad}
        what = " or ".join(k for k in ("degenerate", "outside") if k in kinds)
        findings.append(BAD_BOX.finding(
            display,
            f"{plural(len(bad), 'box')} {what}{size}: {listing}",
            hint="Swap flipped corners, clip boxes to the image size, drop zero-area boxes; "
            "check <size> when every box of a file lies outside.",
            width=width or None, height=height or None,
            boxes=[{"object": i, "class": n, "box": list(b), "problem": k}
                   for i, n, b, k, _ in bad[:BOXES_LISTED]],
            count=len(bad),
        ))
    if repeats:
        listing = shorten(repeats, SHOWN, lambda item: f"object {item[0]} repeats object {item[3]} "
                          f"({item[1]!r}, box {', '.join(f'{v:g}' for v in item[2])})", sep="; ")
        findings.append(DUPLICATE_BOX.finding(
            display,
            f"{plural(len(repeats), 'duplicate object')}: {listing}",
            hint="Remove the repeated <object> elements.",
            pairs=[[first, i] for i, _, _, first in repeats[:BOXES_LISTED]],
            count=len(repeats),
        ))
    return findings


def _image_finding(task: FileTask, filename: str | None, image_dir: str):
    """LG003/LG005 for a ``<filename>`` that names no file, LG002 for an annotation without image."""
    image = task.image
    if filename:
        filename = filename.strip()
    if filename and image is not None and (
            image.endswith(os.sep + filename) or image == filename
            or strip_extension(image).endswith(os.sep + filename)):  # <filename> without extension
        return None
    shown_dir = display_path(image_dir)
    if filename:
        if os.path.isabs(filename) or ".." in filename.replace("\\", "/").split("/"):
            return ESCAPES_ROOT.finding(
                task.display, f"<filename> {filename!r} points outside the image folder {shown_dir}",
                hint="Write the bare image file name in <filename>.", filename=filename,
            )
        if os.path.isfile(os.path.join(image_dir, filename)):
            return None
        paired = f"; the image by this file's name is {task.image_display}" if image else \
            f", and no image named {os.path.basename(strip_extension(task.path))}.* exists either"
        return MISSING.finding(
            task.display, f"<filename> names {filename!r}, which does not exist in {shown_dir}{paired}",
            hint="Correct <filename> (loaders that read it fail), or restore the image.",
            filename=filename, image=task.image_display,
        )
    if image is None:
        return UNPAIRED.finding(
            task.display, f"annotation has no image: no <filename>, and no image of the same name in {shown_dir}",
            hint="Restore the image, or remove the annotation from the dataset and its lists.",
            side="annotation",
        )
    return None


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
            with open(os.path.join(folder, name), "rb") as handle:
                head = handle.read(2048)
        except OSError:
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
