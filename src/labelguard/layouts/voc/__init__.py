"""Pascal VOC detection: ``Annotations/*.xml`` with ``JPEGImages/`` and ``ImageSets/Main`` lists.

Also read: the relaxed layouts (an ``annotations/`` folder beside ``images/``, or XML files
beside their images). When the folder also holds ``SegmentationClass``, its masks are
audited in the same run by the VOC segmentation layout.

The spec comes from the dataset when it declares one: a Datumaro/CVAT ``labelmap.txt``, or
a ``labels.txt`` / ``classes.txt`` beside the annotations.
"""

from __future__ import annotations

import itertools
import os
from typing import Iterator

from labelguard.core import storage
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileTask
from labelguard.core.text import plural
from labelguard.layouts.base import (
    CONTENT, IMAGES, LISTS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.core.paths import DisplayNames, display_path, inside_root
from labelguard.layouts.folders import walk_files
from labelguard.layouts.lists import ListRule, Role, image_sets_rule, select_from_lists
from labelguard.layouts.metadata import read_metadata
from labelguard.layouts.pairing import labels_by_image, pair_files, unpaired_findings
from labelguard.layouts.voc_segmentation import discover_voc_segmentation, voc_segmentation_files
from labelguard.readers.base import (
    IMAGE_EXTENSIONS, LABEL_MAP_FILE, PLAIN_NAME_FILES, ReadError, read_class_names, read_head,
)
from labelguard.layouts.formats import AnnotationFormat, register_format
from labelguard.layouts.voc import editor
from labelguard.layouts.voc.record import is_voc_file, process_voc, process_voc_batch, voc_record

__all__ = ["discover_voc", "process_voc", "process_voc_batch", "voc_record"]

ANNOTATION_DIRS = ("Annotations", "annotations", "Annotation", "annotation", "xml", "xmls")
IMAGE_DIRS = ("JPEGImages", "images", "Images", "image", "img", "imgs")
SPEC_FILES = (LABEL_MAP_FILE, *PLAIN_NAME_FILES)


# ---- discovery --------------------------------------------------------------------------

# Split folders of an annotation folder looked into for XML annotations.
SPLIT_PROBES = 8


def _child_dir(root: str, names) -> str | None:
    for name in names:
        path = os.path.join(root, name)
        if storage.isdir(path):
            return path
    return None


def _has_xml(folder: str) -> bool:
    try:
        return bool(storage.names_with_suffix(folder, (".xml",), files_only=True))
    except OSError:
        return False


def _annotation_root(root: str) -> str | None:
    """The folder holding the XML annotations of ``root``, or None when it is not VOC. They
    may lie in split folders of it (DIOR's ``Annotations/trainval/*.xml``)."""
    folder = _child_dir(root, ANNOTATION_DIRS)
    if folder is not None and _has_xml(folder):
        return folder
    if folder is not None:
        try:
            splits = storage.folder_paths(folder, hidden=False)
        except OSError:
            splits = []
        if any(_has_xml(split) and _looks_like_voc(split) for split in splits[:SPLIT_PROBES]):
            return folder
    if storage.isdir(root) and _has_xml(root) and _looks_like_voc(root):
        return root
    return None


def _looks_like_voc(folder: str) -> bool:
    """True when the first XML file of ``folder`` has an ``<annotation>`` root."""
    names = storage.names_with_suffix(folder, (".xml",))
    for name in names[:3]:
        try:
            head = read_head(os.path.join(folder, name), 2048)
        except ReadError:
            continue
        if b"<annotation" in head:
            return True
    return False


def _detect_voc(root: str, options: AuditOptions) -> Evidence:
    if storage.isfile(root):
        return evidence(0.77, Seen("an XML annotation file", NAMES)) if root.lower().endswith(".xml") else no()
    folder = _annotation_root(root)
    if folder is None:
        return no()
    if folder == storage.abspath(root) or folder == root:
        return evidence(0.77, Seen("XML files with an <annotation> root", CONTENT))
    seen = [Seen(f"{os.path.basename(folder)}/ holds XML files", NAMES)]
    if _looks_like_voc(folder):
        seen.append(Seen("with an <annotation> root", CONTENT))
    return evidence(0.77, *seen)


def _spec_from_files(directories: list[str], discovery: Discovery) -> LabelSpec:
    """The spec of the first class list in ``directories``: the dataset's root first, then
    its annotation folder and the folder above it."""
    for directory in directories:
        for name in SPEC_FILES:
            path = os.path.join(directory, name)
            if not storage.isfile(path):
                continue
            names, findings = read_metadata(path, read_class_names, directories[0], "class list")
            discovery.findings.extend(findings)
            if names is None:
                continue
            spec = class_list_spec(names, display_path(path))
            if spec.is_known:
                return spec
    return LabelSpec()


def _split_lists(root: str) -> list[str]:
    """``ImageSets/Main`` split lists (train.txt, val.txt...), without the per-class lists
    (``cat_train.txt``) derived from them."""
    main = os.path.join(root, "ImageSets", "Main")
    if not storage.isdir(main):
        return []
    names = sorted(n for n in storage.listdir(main) if n.endswith(".txt"))
    splits = {n[:-4] for n in names}
    return [os.path.join(main, n) for n in names
            if not any(n[:-4].endswith("_" + split) for split in splits if split != n[:-4])]


def _list_rule(voc_root: str):
    """The naming rule of each list: ImageSets lists name image ids, whose annotation
    (``Annotations/<id>.xml``) they require, or for ``ImageSets/Segmentation`` their mask;
    other lists name annotations by path or stem."""
    segmentation = os.path.join(voc_root, "ImageSets", "Segmentation")

    def rule(list_path: str) -> ListRule:
        required = "mask" if inside_root(list_path, segmentation) else "annotation"
        return image_sets_rule(list_path, voc_root, required, (".xml",))

    return rule


def discover_voc(root: str, options: AuditOptions) -> Discovery:
    """VOC annotations (and SegmentationClass masks when present) under ``root``.

    Roles: annotations (``Annotations/<id>.xml``), images (``JPEGImages/<id>.jpg``), split
    lists (``ImageSets/Main/<split>.txt``, image ids), masks (``SegmentationClass/<id>.png``)
    and class lists (``labelmap.txt``, ``labels.txt``). The pairing engine pairs annotations
    and masks with their images and reads the lists once for both."""
    discovery = Discovery("voc", root)
    if storage.isfile(root):
        folder = os.path.dirname(storage.abspath(root))
        discovery.tasks = [FileTask(process_voc, root, display_path(root))]
        discovery.spec = _spec_from_files([folder, os.path.dirname(folder)], discovery)
        return discovery
    annotation_dir = _annotation_root(root)
    if annotation_dir is None:
        discovery.notes.append(f"no Annotations/*.xml under {display_path(root)}")
        return discovery
    voc_root, split = _voc_root_of(root) if annotation_dir == root else (root, "")
    xmls = [path for path in walk_files(annotation_dir) if path[-4:].lower() == ".xml"]
    if options.images:
        image_dir: str | None = options.images
    elif annotation_dir != voc_root:
        image_dir = _child_dir(voc_root, IMAGE_DIRS)
        if split and image_dir is not None:
            image_dir = _child_dir(image_dir, (split,))
    else:
        image_dir = root
    images = [path for path in walk_files(image_dir) if path[path.rfind("."):].lower() in IMAGE_EXTENSIONS] \
        if image_dir else []
    if image_dir is None:
        discovery.notes.append(
            f"no image folder beside {os.path.basename(annotation_dir)}/ in {display_path(voc_root)} "
            f"({'/, '.join(IMAGE_DIRS)}/): the images the annotations' <filename> names were not looked for "
            "(pass --images DIR)")
    pairing = pair_files(images, xmls, image_dir or annotation_dir, annotation_dir)
    discovery.notes.extend(pairing.notes("annotation"))
    roles = [Role("annotation", xmls, annotation_dir, ".xml")]
    pairs = dict(pairing.pairs)
    segmentation = voc_root == root and storage.isdir(os.path.join(root, "SegmentationClass"))
    if segmentation:
        masks, mask_images = voc_segmentation_files(root)
        mask_dir = os.path.join(root, "SegmentationClass")
        pairs.update(pair_files(mask_images, masks, os.path.join(root, "JPEGImages"), mask_dir).pairs)
        roles.append(Role("mask", masks, mask_dir, ".png"))
    # The split lists are read (LG003/LG004/LG005) with or without --list; --list selects.
    labels_of = labels_by_image(pairs)
    selection = select_from_lists(
        options.lists or _split_lists(voc_root), voc_root, roles, rule=_list_rule(voc_root),
        images=Role("image", images, image_dir) if image_dir else None,
        label_of=lambda image: labels_of.get(image, ()),
    )
    discovery.add_lists(selection)
    if options.lists:
        chosen = set(selection.paths)
        xmls = [path for path in xmls if path in chosen]
    # The image folder as shown goes with each task: a display path per file costs a tenth of its audit.
    image_option: tuple[tuple[str, str], ...] = (
        (("image_dir", image_dir), ("image_folder", display_path(image_dir))) if image_dir else ())
    image_option += (("check_images", options.check_images),)
    # Of several images of one id (x.jpg and x.png) the first by name stands for it: the
    # annotation has an image, and <filename> says which.
    # The tasks are made as the engine takes them: a task and its display paths are some
    # 500 bytes, more than the annotation's and its image's paths held until then.
    discovery.tasks = _voc_tasks(xmls, pairing, image_option)
    if image_dir is not None and image_dir != root and not options.lists:
        # Images named by a split that may come without annotations (a test split) are no orphans.
        unlabelled = set(selection.unlabelled)
        orphans = [path for path in pairing.orphan_images if path not in unlabelled]
        discovery.findings.extend(unpaired_findings(orphans, [], what="annotation", errors=discovery.errors))
    spec_dirs = [voc_root, annotation_dir, os.path.dirname(storage.abspath(voc_root))]
    discovery.spec = _spec_from_files(spec_dirs, discovery)
    if segmentation:
        mask_set = set(roles[1].files)
        masks_selected = [path for path in selection.paths if path in mask_set] if options.lists else None
        found = discover_voc_segmentation(root, options, selected=masks_selected)
        found.tasks = list(found.tasks)
        discovery.tasks = itertools.chain(discovery.tasks, found.tasks)
        discovery.findings.extend(found.findings)
        discovery.notes.extend(found.notes)
        discovery.color_map = found.color_map
        if not discovery.spec.is_known:
            discovery.spec = found.spec
        discovery.notes.append(f"SegmentationClass masks audited too ({plural(len(found.tasks), 'file')})")
    return discovery


def _voc_root_of(folder: str) -> tuple[str, str]:
    """(VOC folder, split) of ``folder``, a folder of XML annotations given as PATH: its
    images, lists and class list sit in the VOC folder above it, beside ``Annotations/``
    (VOC's ``Annotations/`` itself; DIOR's ``Annotations/trainval/``, whose images are in
    ``Images/trainval/``). ``(folder, "")`` when it is the VOC folder itself."""
    here = storage.abspath(folder)
    parent = os.path.dirname(here)
    if os.path.basename(here) in ANNOTATION_DIRS and (
            _child_dir(parent, IMAGE_DIRS) or storage.isdir(os.path.join(parent, "ImageSets"))):
        return parent, ""
    grandparent = os.path.dirname(parent)
    images = _child_dir(grandparent, IMAGE_DIRS) if os.path.basename(parent) in ANNOTATION_DIRS else None
    if images is not None and storage.isdir(os.path.join(images, os.path.basename(here))):
        return grandparent, os.path.basename(here)
    return folder, ""


def _voc_tasks(xmls: list[str], pairing, image_option: tuple) -> Iterator[FileTask]:
    """The task of each annotation, with its image. Of several images of one id (x.jpg and
    x.png) the first by name stands for it: the annotation has an image, and <filename>
    says which."""
    shown = DisplayNames()
    for path in xmls:
        image = pairing.pairs.get(path) or next(iter(pairing.ambiguous.get(path, ())), None)
        yield FileTask(process_voc, path, shown(path), image=image, image_display=shown(image) if image else None,
                       options=image_option)


discover_voc.detect = _detect_voc  # type: ignore[attr-defined]  # read by register_layout
register_layout("voc", "Pascal VOC detection (Annotations/*.xml, JPEGImages, ImageSets/Main)", 0.77,
                (LISTS, IMAGES))(discover_voc)
register_format(AnnotationFormat("voc", (".xml",), process_voc, sniff=is_voc_file, rename=editor.rename))
