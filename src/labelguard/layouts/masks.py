"""Segmentation mask layouts; their files go to the per-file mask processor of the rules.

Layouts found, in this order: explicit ``--images/--masks`` folders, nnU-Net
(``imagesTr``/``labelsTr``), Pascal VOC segmentation (``SegmentationClass``), CamVid
(``train``/``trainannot``), Cityscapes (``gtFine``), sibling image/mask folders, and any
folder or file of masks.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Sequence

from labelguard.core import storage
from labelguard.checks.files import UNREADABLE
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.text import shorten
from labelguard.core.tasks import FileTask
from labelguard.layouts.base import (
    CATCH_ALL, IMAGES, LISTS, MASKS, AuditOptions, Discovery, Evidence, display_path, evidence, no, register_layout,
    select_from_lists, unpaired_findings, walk_files,
)
from labelguard.layouts.conventions import (
    CLASS_TABLE_FILES, HERE, IMAGE_DIRS, MASK_DIRS, SEGNET_LABEL_SUFFIX, FolderPair, folder_pairs, is_mask_dir,
)
from labelguard.layouts.pairing import (
    DisplayNames, Pairing, PairingStream, Role, image_sets_rule, inside_root, labels_by_image, linked_outside,
    may_pair, missing_reason, name_key, pair_files, pair_in_folder, read_metadata, strip_extension,
)
from labelguard.readers.base import CLASS_NAME_FILES, ReadError, parse_json, read_class_names, read_text
from labelguard.readers.class_tables import read_class_table
from labelguard.readers.colormap import (
    ColorMap, camvid_color_map, find_color_map, load_color_map, voc_color_map,
)
from labelguard.readers.masks import MASK_EXTENSIONS, is_mask_candidate, mask_extension
from labelguard.rules._masks import process_mask, process_mask_batch  # noqa: F401  (the per-file processor)
from labelguard.rules.lg206 import same_geometry  # noqa: F401  (imported from here by callers)

LIST_EXTENSIONS = tuple(MASK_EXTENSIONS)
JPEG_EXTENSIONS = (".jpg", ".jpeg")

# ---- discovery --------------------------------------------------------------------------

def _task(path: str, options: AuditOptions, color_map: ColorMap | None, image: str | None = None,
          encoding: str | None = None, shown: str | None = None) -> FileTask:
    extra = []
    if options.key:
        extra.append(("key", options.key))
    if options.image_key:
        extra.append(("image_key", options.image_key))
    if color_map is not None:
        extra.append(("color_map", color_map))
    if encoding is not None:
        extra.append(("encoding", encoding))
    return FileTask(
        processor=process_mask, path=path, display=shown or display_path(path), image=image,
        image_display=display_path(image) if image else None, options=tuple(extra),
    )


def _mask_files(folder: str, include_jpeg: bool) -> list[str]:
    return list(_iter_mask_files(folder, include_jpeg))


def _iter_mask_files(folder: str, include_jpeg: bool) -> Iterator[str]:
    return (p for p in storage.iter_files(folder) if _is_mask_file(p, include_jpeg))


def _is_mask_file(name: str, include_jpeg: bool) -> bool:
    """True when a file of this name (or path) is a mask by its extension; a JPEG only with
    ``include_jpeg`` (JPEGs are photos outside a label folder)."""
    extension = mask_extension(name)
    return extension in MASK_EXTENSIONS and (include_jpeg or extension not in JPEG_EXTENSIONS)


def _paired_tasks(discovery: Discovery, options: AuditOptions, color_map: ColorMap | None, masks: Iterable[str],
                  pairing: PairingStream | None, orphans: bool, all_masks: bool = True) -> Iterator[FileTask]:
    """The task of each of ``masks`` as the walk finds it, with the image it pairs with; once
    they are all paired, the note on ambiguous names and (with ``orphans``) LG002 for the
    masks left alone and, when ``masks`` are ``all_masks`` of the images (not one mask file
    given as PATH), for the images left alone. Only the images' keys are kept, never the masks."""
    alone: list[str] = []
    for mask in masks:
        image = pairing.image_of(mask) if pairing is not None else None
        if pairing is None and orphans:
            alone.append(mask)
        yield _task(mask, options, color_map, image)
    result = pairing.finish() if pairing is not None else Pairing(orphan_labels=alone)
    discovery.notes.extend(result.notes("mask"))
    if orphans:
        discovery.findings.extend(unpaired_findings(result.orphan_images if all_masks else [], result.orphan_labels))


def _folder_tasks(discovery: Discovery, options: AuditOptions, color_map: ColorMap | None, root: str,
                  jpeg_in: Callable[[str], bool]) -> Iterator[FileTask]:
    """The task of each mask under ``root`` (a file of a mask extension; a JPEG only in a
    folder that ``jpeg_in(folder)``), folder by folder as the walk finds them, its image
    found beside it by a role word (:func:`pair_in_folder` pairs within one folder, a JPEG
    photo with the mask named after it: Roboflow's ``x.jpg`` and ``x_mask.png``); files
    that are some mask's image are no masks. One folder's names are held at a time."""
    ambiguous = Pairing()
    shown = DisplayNames()
    for prefix, names in storage.iter_folders(root, skip_dirs=IMAGE_DIRS):
        names = names if storage.url_scheme(prefix) is None else list(names)  # a listing is read once
        jpeg = jpeg_in(prefix)
        kept = bytearray()  # whether each name is a mask's, in the names' order
        # The names are walked twice, never held as paths: a local folder's come packed (SortedNames).
        if not may_pair(_kept_names(names, jpeg, kept)):
            # Most folders: masks named without a role word (or all labels by theirs).
            for name, keep in zip(names, kept):
                if keep:
                    yield _task(prefix + name, options, color_map, shown=shown(prefix + name))
            continue
        files = [prefix + name for name in _kept_names(names, jpeg)]
        pairing = pair_in_folder(files)
        ambiguous.ambiguous.update(pairing.ambiguous)
        images = set(pairing.pairs.values()) | {i for found in pairing.ambiguous.values() for i in found}
        masks = [path for path in files if _is_mask_file(path, jpeg)]
        for path in masks:
            if path not in images:
                yield _task(path, options, color_map, pairing.pairs.get(path))
        discovery.findings.extend(unpaired_findings(*_alone_in_folder(pairing, masks, set(files) - set(masks))))
    discovery.notes.extend(ambiguous.notes("mask"))


def _alone_in_folder(pairing: Pairing, masks: Iterable[str], photos: Iterable[str]) -> tuple[list[str], list[str]]:
    """(photos, masks) left alone in the folders where masks pair with images by a naming
    convention (Roboflow's ``x.jpg`` beside ``x_mask.png``): there a photo without its mask,
    and a mask named as a label without its image, are orphans (LG002). Elsewhere a lone
    file is a mask of a folder without the convention, never an orphan."""
    if not pairing.pairs:
        return [], []
    folders = {os.path.dirname(mask) for mask in pairing.pairs}
    images = set(pairing.pairs.values()) | {i for found in pairing.ambiguous.values() for i in found}
    alone_photos = sorted(p for p in photos if os.path.dirname(p) in folders and p not in images)
    alone_masks = sorted(m for m in masks if os.path.dirname(m) in folders and m not in images
                         and m not in pairing.pairs and m not in pairing.ambiguous
                         and name_key(strip_extension(os.path.basename(m)))[1] == "label")
    return alone_photos, alone_masks


def _kept_names(names: Iterable[str], jpeg: bool, kept: bytearray | None = None) -> Iterator[str]:
    """The names of ``names`` that may pair in one folder: the masks' by their extension
    (JPEGs when ``jpeg``) and, where JPEGs are no masks, the JPEGs, which may be a mask's
    image. Whether each name is a mask's is appended to ``kept``."""
    for name in names:
        extension = mask_extension(name)
        photo = not jpeg and extension in JPEG_EXTENSIONS
        keep = not photo and extension in MASK_EXTENSIONS
        if kept is not None:
            kept.append(keep)
        if keep or photo:
            yield name


def _pair(images: list[str], masks: list[str], image_root: str, mask_root: str,
          discovery: Discovery) -> tuple[dict[str, str], list[str], list[str]]:
    """(pairs mask->image, orphan images, orphan masks) from the pairing engine; masks that
    match several images are noted on ``discovery``."""
    pairing = pair_files(images, masks, image_root, mask_root)
    discovery.notes.extend(pairing.notes("mask"))
    return pairing.pairs, pairing.orphan_images, pairing.orphan_labels


def _metadata_spec(directories: list[str], root: str) -> tuple[LabelSpec, list[str], list[Finding]]:
    """The spec a dataset declares beside its data: nnU-Net dataset.json, a class table
    (Roboflow's ``_classes.csv``: value -> class) or a class-name file; the problems of the
    files that could not be read; the findings about them: LG001 for a class table that
    cannot be read (:func:`read_metadata`), LG005 for a file that is a link out of the
    dataset ``root`` (not read: :func:`linked_outside`).

    ``directories`` go nearest first, the dataset's own folders before the ones above its
    root: a converter's output folder holds the class list of that output, while the folder
    above may hold the input it was run with (labelme's labels.txt, whose ``__ignore__``
    first line is not a class of the output).
    """
    problems: list[str] = []
    findings: list[Finding] = []
    for directory in directories:
        path = os.path.join(directory, "dataset.json")
        if storage.isfile(path) and not _linked_out(path, root, findings):
            try:
                meta = parse_json(read_text(path), "dataset.json")
                labels = meta.get("labels") if isinstance(meta, dict) else None
                if isinstance(labels, dict) and labels:
                    return _spec_from_nnunet(labels, path), problems, findings
            except (ReadError, ValueError) as exc:
                problems.append(f"{display_path(path)}: {exc}")
        for name in CLASS_TABLE_FILES:
            path = os.path.join(directory, name)
            if storage.isfile(path):
                rows, found = read_metadata(path, read_class_table, root, "class table")
                findings.extend(found)
                if rows is not None:
                    return _value_classes_spec(rows, path), problems, findings
        for name in CLASS_NAME_FILES:
            path = os.path.join(directory, name)
            if storage.isfile(path) and not _linked_out(path, root, findings):
                try:
                    names = read_class_names(path)
                except ReadError as exc:
                    problems.append(f"{display_path(path)}: {exc}")
                    continue
                spec = class_list_spec(names, display_path(path))
                if spec.is_known:
                    return spec, problems, findings
    return LabelSpec(), problems, findings


def _linked_out(path: str, root: str, findings: list[Finding]) -> bool:
    """True (and its LG005 added to ``findings``) when ``path`` is a link out of the dataset
    ``root`` (:func:`linked_outside`)."""
    found = linked_outside(path, root)
    findings.extend(found)
    return bool(found)


def _spec_from_nnunet(labels: dict, path: str) -> LabelSpec:
    pairs = []
    for key, value in labels.items():
        if str(key).lstrip("-").isdigit():  # v1: {"0": "background"}
            pairs.append((int(key), str(value)))
        elif isinstance(value, int):  # v2: {"background": 0}
            pairs.append((value, str(key)))
        elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            pairs.extend((v, f"{key}") for v in value)  # region-based: the regions' member labels
    return _value_classes_spec(pairs, path)


def _value_classes_spec(pairs: list[tuple[int, str]], path: str) -> LabelSpec:
    """The spec of (value, class name) pairs a file declares: the classes in value order when
    the values are 0..N-1, else the values."""
    values = sorted({v for v, _ in pairs})
    names = dict(pairs)
    if values == list(range(len(values))):
        return LabelSpec(classes=tuple(names[v] for v in values), sources=(display_path(path),))
    return LabelSpec(values=tuple(values), sources=(display_path(path),))


def _finish(discovery: Discovery, options: AuditOptions, masks: list[str], pairs: dict[str, str],
            color_map: ColorMap | None, extra_dirs: list[str], images: Sequence[str] = ()) -> Discovery:
    """The tasks of the masks (those ``--list`` selects), the dataset's spec and colour map.

    ``images`` are the image files the layout found besides those ``pairs`` names: a list
    entry naming an image selects its mask, never the image as a mask."""
    root = discovery.root
    if options.lists:
        known_images = sorted(set(images) | set(pairs.values()))
        masks_of = labels_by_image(pairs)
        selection = select_from_lists(options.lists, root, [Role("mask", masks)], LIST_EXTENSIONS,
                                      images=Role("image", known_images) if known_images else None,
                                      label_of=lambda image: masks_of.get(image, ()))
        discovery.add_lists(selection)
        masks = selection.paths
        pairs = {**pairs, **selection.pairs}
    discovery.tasks = [_task(m, options, color_map, pairs.get(m)) for m in masks]
    return _declare(discovery, color_map, extra_dirs)


def _declare(discovery: Discovery, color_map: ColorMap | None, extra_dirs: list[str]) -> Discovery:
    """The dataset's spec (its metadata beside it, else its declared colour map) and colour map."""
    root = discovery.root
    spec, problems, outside = _metadata_spec([root, *extra_dirs, os.path.dirname(storage.abspath(root))], root)
    discovery.notes.extend(f"dataset metadata ignored: {p}" for p in problems)
    discovery.findings.extend(outside)
    if spec.is_known:
        discovery.spec = spec
    elif color_map is not None and storage.exists(color_map.source):
        # A map the dataset declares is its spec; a built-in palette only decodes colours.
        discovery.spec = LabelSpec(classes=color_map.names, sources=(_source_name(color_map),))
    discovery.color_map = color_map
    return discovery


def _source_name(color_map: ColorMap) -> str:
    return display_path(color_map.source) if storage.exists(color_map.source) else color_map.source


def _declared_color_map(options: AuditOptions, directories: list[str], discovery: Discovery,
                        default: ColorMap | None = None) -> ColorMap | None:
    if options.color_map:
        try:
            return load_color_map(options.color_map)
        except ReadError as exc:
            discovery.findings.append(UNREADABLE.finding(display_path(options.color_map), f"colour map: {exc}"))
            return default
    outside: list[Finding] = []
    color_map, problem = find_color_map(directories, lambda path: not _linked_out(path, discovery.root, outside))
    discovery.findings.extend(outside)
    if problem:
        discovery.findings.append(UNREADABLE.finding(None, f"colour map {problem}"))
    return color_map or default


def _parents(path: str, root: str) -> list[str]:
    """``path``'s folder and its parents up to ``root`` (nearest first)."""
    folders = []
    current = storage.abspath(path if storage.isdir(path) else os.path.dirname(path))
    root = storage.abspath(root)
    while True:
        folders.append(current)
        if current == root or len(current) <= len(root):
            break
        current = os.path.dirname(current)
    if root not in folders:
        folders.append(root)
    return folders


def discover_paired(root: str, options: AuditOptions) -> Discovery:
    """Explicit ``--images DIR --masks DIR``, or sibling image/mask folders under ``root``.

    The masks are those of ``--masks``, else of a mask folder under ``root`` (masks/,
    labels/...), else, when ``--images`` says where the images are, ``root``'s own: the mask
    file ``root``, or the masks of the folder ``root`` outside the image folder (JPEGs there
    are photos, as in any folder not named for labels). Where none of these is, there is
    nothing to audit, and a note says what was looked for."""
    discovery = Discovery("paired", root)
    image_root = flag_folder(root, options.images) or _child(root, sorted(IMAGE_DIRS))
    mask_root = flag_folder(root, options.masks) or _child(root, MASK_DIRS)
    if mask_root is None and not (options.images and storage.exists(root)):
        discovery.notes.append(
            f"no masks to pair: --masks was not given and {display_path(root)} holds no mask folder "
            f"({shorten((f'{name}/' for name in MASK_DIRS), 4, what='name')}); give --masks DIR (with "
            "--images DIR), or PATH and --images DIR to pair the masks of PATH")
        return discovery
    if image_root is None:
        discovery.notes.append(f"no image folder was given (--images) or found beside the masks "
                               f"({shorten((f'{name}/' for name in sorted(IMAGE_DIRS)), 4, what='name')}): "
                               "the masks were audited without their images (no LG002, no LG206)")
    masks: Iterable[str]
    one_file = mask_root is None and storage.isfile(root)
    if mask_root is not None:
        masks = _iter_mask_files(mask_root, True)
    elif one_file:
        mask_root, masks = os.path.dirname(storage.abspath(root)), [root]
    else:
        mask_root, masks = root, _masks_outside(root, image_root)
    images = [p for p in walk_files(image_root) if is_mask_candidate(p)] if image_root else []
    color_map = _declared_color_map(options, _parents(mask_root, root), discovery)
    if not options.lists:
        # The masks are paired as the walk finds them, each task handed on at once.
        pairing = PairingStream(images, image_root or root, mask_root) if images else None
        discovery.tasks = _paired_tasks(discovery, options, color_map, masks, pairing, orphans=bool(image_root),
                                        all_masks=not one_file)
        return _declare(discovery, color_map, [mask_root])
    masks = list(masks)
    pairs, _, _ = _pair(images, masks, image_root or root, mask_root, discovery)
    return _finish(discovery, options, masks, pairs, color_map, [mask_root], images)


def _masks_outside(root: str, image_root: str | None) -> Iterator[str]:
    """The masks under ``root`` that are not in its image folder ``image_root``, JPEGs left
    out (photos, in a folder not named for labels)."""
    skipped = os.path.join(storage.abspath(image_root), "") if image_root else None
    for prefix, names in storage.iter_folders(root):
        if skipped is not None and os.path.join(storage.abspath(prefix), "").startswith(skipped):
            continue
        yield from (prefix + name for name in names if _is_mask_file(name, False))


def flag_folder(root: str, folder: str | None) -> str | None:
    """An ``--images``/``--masks`` folder: a relative one names a folder inside the dataset
    ``root`` when there is one of that name, else a folder from the current directory."""
    if not folder:
        return None
    if not storage.isabs(folder) and storage.isdir(root):
        inside = os.path.join(root, folder)
        if storage.isdir(inside) and inside_root(inside, root):
            return inside
    return folder


def _child(root: str, names: Sequence[str]) -> str | None:
    """The folder of ``root`` named by the first of ``names`` that one is named (in any case);
    ``names`` in order, so that the same folder is chosen on every run."""
    if not storage.isdir(root):
        return None
    entries = {e.lower(): e for e in storage.folder_names(root)}
    for name in names:
        if name.lower() in entries:
            return os.path.join(root, entries[name.lower()])
    return None


def _detect_paired(root: str, options: AuditOptions) -> Evidence:
    if options.masks:
        return evidence(1.0, f"--masks {options.masks} names the label folder")
    if not storage.isdir(root):
        return no()
    masks, images = _child(root, MASK_DIRS), _child(root, sorted(IMAGE_DIRS))
    if masks is None or images is None:
        return no()
    return evidence(0.35, f"{os.path.basename(images)}/ and {os.path.basename(masks)}/ side by side")


discover_paired.detect = _detect_paired
register_layout("paired", "image and mask folders paired by name", 1.0, (LISTS, IMAGES, MASKS))(discover_paired)


def discover_nnunet(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("nnunet", root)
    masks, pairs, all_images = [], {}, []
    for split in ("Tr", "Ts"):
        label_dir = os.path.join(root, f"labels{split}")
        image_dir = os.path.join(root, f"images{split}")
        if not storage.isdir(label_dir):
            continue
        split_masks = _mask_files(label_dir, include_jpeg=True)
        images = _mask_files(image_dir, include_jpeg=True) if storage.isdir(image_dir) else []
        found, orphan_images, orphan_masks = _pair(images, split_masks, image_dir, label_dir, discovery)
        if not options.lists and split == "Tr":
            discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks))
        masks.extend(split_masks)
        all_images.extend(images)
        pairs.update(found)
    color_map = _declared_color_map(options, [root], discovery)
    return _finish(discovery, options, masks, pairs, color_map, [], all_images)


def _detect_nnunet(root: str, options: AuditOptions) -> Evidence:
    if not storage.isdir(os.path.join(root, "labelsTr")):
        return no()
    described = storage.isfile(os.path.join(root, "dataset.json"))
    return evidence(0.83, "labelsTr/ folder", *(["dataset.json beside it"] if described else []))


discover_nnunet.detect = _detect_nnunet
register_layout("nnunet", "nnU-Net raw dataset (imagesTr/labelsTr, dataset.json)", 0.83, (LISTS, MASKS))(discover_nnunet)


def voc_segmentation_files(root: str) -> tuple[list[str], list[str]]:
    """The masks (``SegmentationClass``) and images (``JPEGImages``) of a VOC folder."""
    image_dir = os.path.join(root, "JPEGImages")
    images = _mask_files(image_dir, include_jpeg=True) if storage.isdir(image_dir) else []
    return _mask_files(os.path.join(root, "SegmentationClass"), include_jpeg=True), images


def discover_voc_segmentation(root: str, options: AuditOptions, selected: list[str] | None = None) -> Discovery:
    """VOC segmentation masks, paired with their JPEGImages by the pairing engine.

    ``--list`` files under ``ImageSets`` name image ids (a test split may come without
    masks). ``selected``: the masks the VOC detection layout's reading of the lists chose
    (it reads each list once, for annotations and masks alike)."""
    discovery = Discovery("voc-segmentation", root)
    mask_dir = os.path.join(root, "SegmentationClass")
    image_dir = os.path.join(root, "JPEGImages")
    masks, images = voc_segmentation_files(root)
    pairs, _, orphan_masks = _pair(images, masks, image_dir, mask_dir, discovery)
    if selected is None and options.lists:
        masks_of = labels_by_image(pairs)
        selection = select_from_lists(
            options.lists, root, [Role("mask", masks, mask_dir, ".png")],
            rule=lambda list_path: image_sets_rule(list_path, root, "mask", LIST_EXTENSIONS),
            images=Role("image", images, image_dir), label_of=lambda image: masks_of.get(image, ()))
        discovery.add_lists(selection)
        selected = selection.paths
        pairs = {**pairs, **selection.pairs}
    if selected is not None:
        masks = selected
    elif images:
        discovery.findings.extend(unpaired_findings([], orphan_masks))
    color_map = _declared_color_map(options, [root], discovery, default=voc_color_map())
    return _finish(discovery, replace(options, lists=()), masks, pairs, color_map, [])


discover_voc_segmentation.detect = lambda root, options: (
    evidence(0.71, "SegmentationClass/ folder") if storage.isdir(os.path.join(root, "SegmentationClass")) else no())
register_layout("voc-segmentation", "Pascal VOC segmentation (SegmentationClass, JPEGImages)", 0.71, (LISTS, MASKS))(
    discover_voc_segmentation)


def _camvid_splits(root: str) -> list[tuple[str, str]]:
    if not storage.isdir(root):
        return []
    cut = len(SEGNET_LABEL_SUFFIX)
    annotated = [name for name in storage.folder_names(root) if name.endswith(SEGNET_LABEL_SUFFIX)]
    return [(os.path.join(root, n[:-cut]), os.path.join(root, n)) for n in annotated
            if storage.lexists(os.path.join(root, n[:-cut]))]


def discover_camvid(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("camvid", root)
    masks, pairs = [], {}
    for image_dir, mask_dir in _camvid_splits(root):
        split_masks = _mask_files(mask_dir, include_jpeg=True)
        found, orphan_images, orphan_masks = _pair(_mask_files(image_dir, True), split_masks, image_dir, mask_dir,
                                                   discovery)
        if not options.lists:
            discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks))
        masks.extend(split_masks)
        pairs.update(found)
    color_map = _declared_color_map(options, [root], discovery, default=camvid_color_map())
    return _finish(discovery, options, masks, pairs, color_map, [])


def _detect_camvid(root: str, options: AuditOptions) -> Evidence:
    splits = _camvid_splits(root)
    if not splits:
        return no()
    return evidence(0.59, ", ".join(f"{os.path.basename(i)}/ beside {os.path.basename(m)}/" for i, m in splits))


discover_camvid.detect = _detect_camvid
register_layout("camvid", "CamVid (train/trainannot, val/valannot...)", 0.59, (LISTS, MASKS))(discover_camvid)


def discover_cityscapes(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("cityscapes", root)
    gt = os.path.join(root, "gtFine")
    files = walk_files(gt)
    masks = [p for p in files if p.endswith("_labelTrainIds.png")] or [
        p for p in files if p.endswith("_labelIds.png")]
    for suffix in ("_labelTrainIds.png", "_labelIds.png", "_instanceIds.png", "_color.png", "_polygons.json"):
        discovery.left_out.append((f"gtFine/*{suffix}", "another encoding of the labels of the Cityscapes "
                                   "masks audited (or, without them, of none labelguard reads)"))
    encoding = None
    if not masks:
        masks = [p for p in files if p.endswith("_instanceIds.png")]
        if masks:
            # Exports (Datumaro's among them) may write instanceIds only: they hold the labelIds,
            # times 1000 plus the instance number for objects.
            encoding = "cityscapes_instances"
            discovery.notes.append("gtFine holds no *_labelIds.png / *_labelTrainIds.png: the class ids "
                                   "(labelIds) are read from *_instanceIds.png (id, or id * 1000 + instance)")
        else:
            discovery.notes.append("gtFine holds no *_labelIds.png / *_labelTrainIds.png / *_instanceIds.png "
                                   "class masks (colour masks are not class masks)")
    image_dir = os.path.join(root, "leftImg8bit")
    images = [p for p in walk_files(image_dir) if p.endswith("_leftImg8bit.png")]
    pairs, _, orphan_masks = _pair(images, masks, image_dir, gt, discovery)
    if images and not options.lists:
        discovery.findings.extend(unpaired_findings([], orphan_masks))
    color_map = _declared_color_map(options, [root], discovery)
    _finish(discovery, options, masks, pairs, color_map, [])
    if encoding is not None:
        discovery.tasks = [_task(t.path, options, color_map, t.image, encoding) for t in discovery.tasks]
    return discovery


discover_cityscapes.detect = lambda root, options: (
    evidence(0.65, "gtFine/ folder") if storage.isdir(os.path.join(root, "gtFine")) else no())
register_layout("cityscapes", "Cityscapes (gtFine/*_labelIds.png, leftImg8bit)", 0.65, (LISTS, MASKS))(discover_cityscapes)


ADE20K_SEG = "_seg.png"
ADE20K_PARTS = re.compile(r"_parts_\d+\.png$")
# Folders looked at to tell an ADE20K tree from other masks before giving up.
ADE20K_PROBE_DIRS = 200


def _ade20k_stem(path: str) -> str | None:
    """The image stem of an ADE20K class or part mask (``x_seg.png``, ``x_parts_1.png``)."""
    if path.endswith(ADE20K_SEG):
        return path[:-len(ADE20K_SEG)]
    match = ADE20K_PARTS.search(path)
    return path[:match.start()] if match else None


def _detect_ade20k(root: str, options: AuditOptions) -> Evidence:
    """An ``x_seg.png`` beside its ``x.json`` in a folder under ``root``."""
    if not storage.isdir(root):
        return no()
    for count, (prefix, names) in enumerate(storage.iter_folders(root, suffixes=(".json",))):
        described = {n[:-len(".json")] for n in names if n.endswith(".json")}
        seg = next((n for n in _names_ending(prefix, (ADE20K_SEG,))
                    if n.endswith(ADE20K_SEG) and n[:-len(ADE20K_SEG)] in described), None) if described else None
        if seg is not None:
            below = None if storage.abspath(prefix) == storage.abspath(root) else prefix
            return evidence(0.47, f"{display_path(os.path.join(prefix, seg))} beside its .json", below=below)
        if count >= ADE20K_PROBE_DIRS:
            return no(f"no x_seg.png beside its x.json in the first {ADE20K_PROBE_DIRS} folders")
    return no()


def _names_ending(folder: str, suffixes: tuple[str, ...]) -> list[str]:
    """:func:`storage.names_with_suffix`; none for a folder that cannot be listed."""
    try:
        return storage.names_with_suffix(folder, suffixes)
    except OSError:
        return []


def discover_ade20k(root: str, options: AuditOptions) -> Discovery:
    """ADE20K's full format: ``x.jpg``, ``x.json``, ``x_seg.png`` and ``x_parts_N.png`` side by
    side, ``x/instance_*.png`` below. Class and part masks store the class index in the colour
    (R / 10 * 256 + G; B numbers the instances) and are decoded so; the instance masks are
    binary masks of single objects, not class masks, and are left out."""
    discovery = Discovery("ade20k", root)
    files = walk_files(root)
    masks = [p for p in files if _ade20k_stem(p) is not None]
    present = set(files)
    pairs = {}
    for mask in masks:
        stem = _ade20k_stem(mask)
        image = next((stem + ext for ext in (".jpg", ".png", ".jpeg") if stem + ext in present), None)
        if image is not None:
            pairs[mask] = image
    instance = [p for p in files if os.path.basename(p).startswith("instance_") and p.endswith(".png")]
    if instance:
        discovery.notes.append(f"{len(instance)} ADE20K instance masks (x/instance_*.png) left out: each is "
                               "one object's binary mask, not a class mask")
        discovery.left_out.append(("*instance_*.png", "an ADE20K instance mask: one object's binary mask"))
    discovery.notes.append("ADE20K class and part masks decoded as the format stores them: class = R / 10 * 256 "
                           "+ G (B numbers the instances)")
    _finish(discovery, options, masks, pairs, None, [])
    discovery.tasks = [_task(t.path, options, None, t.image, encoding="ade20k") for t in discovery.tasks]
    return discovery


discover_ade20k.detect = _detect_ade20k
register_layout("ade20k", "ADE20K full format (x_seg.png, x_parts_N.png and x.json beside x.jpg)", 0.47, (MASKS,))(
    discover_ade20k)


MAPILLARY_VERSION = re.compile(r"^v\d+(\.\d+)*$")
MAPILLARY_OTHER = {"instances": "instance masks (class * 256 + instance)",
                   "panoptic": "panoptic masks and their COCO panoptic JSON (the same labels)",
                   "polygons": "polygon JSON files (the same labels)"}


def _detect_mapillary(root: str, options: AuditOptions) -> Evidence:
    """A Mapillary Vistas version folder: ``<split>/v1.2/labels`` beside ``<split>/images``."""
    root = storage.abspath(root)
    if (MAPILLARY_VERSION.match(os.path.basename(root)) and storage.isdir(os.path.join(root, "labels"))
            and storage.isdir(os.path.join(os.path.dirname(root), "images"))):
        return evidence(0.53, f"version folder {os.path.basename(root)}/ with labels/, beside ../images/")
    return no()


def discover_mapillary(root: str, options: AuditOptions) -> Discovery:
    """Mapillary Vistas: one version of one split (``train/v2.0``). Its class masks are
    ``labels/*.png`` (the index of a class in the version's ``config_<version>.json``), paired
    with ``../images/*.jpg``; the other encodings of the same labels are left out with a note."""
    discovery = Discovery("mapillary", root)
    root = storage.abspath(root)
    label_dir = os.path.join(root, "labels")
    image_dir = os.path.join(os.path.dirname(root), "images")
    masks = _mask_files(label_dir, include_jpeg=False)
    images = [p for p in walk_files(image_dir) if mask_extension(p) in JPEG_EXTENSIONS + (".png",)]
    pairs, orphan_images, orphan_masks = _pair(images, masks, image_dir, label_dir, discovery)
    if not options.lists:
        discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks))
    others = [f"{folder}/ ({what})" for folder, what in MAPILLARY_OTHER.items()
              if storage.isdir(os.path.join(root, folder))]
    if others:
        discovery.notes.append(f"labels/ holds the class masks; left out as other encodings of them: "
                               f"{', '.join(others)}")
    discovery.left_out.extend((f"{folder}/*", f"Mapillary {what}") for folder, what in MAPILLARY_OTHER.items())
    _finish(discovery, options, masks, pairs, None, [])
    config = os.path.join(os.path.dirname(os.path.dirname(root)), f"config_{os.path.basename(root)}.json")
    if not discovery.spec.is_known and storage.isfile(config) and not _linked_out(config, root, discovery.findings):
        discovery.spec = _mapillary_spec(config, discovery)
    return discovery


def _mapillary_spec(path: str, discovery: Discovery) -> LabelSpec:
    """The classes of a Mapillary ``config_<version>.json``: ``labels[i].name`` is class ``i``."""
    shown = display_path(path)
    try:
        labels = parse_json(read_text(path), "Mapillary config").get("labels")
        names = tuple(str(label["name"]) for label in labels)
    except (ReadError, ValueError, AttributeError, KeyError, TypeError) as exc:
        discovery.findings.append(UNREADABLE.finding(shown, f"Mapillary config: {exc!r} (no labels[].name list)"))
        return LabelSpec()
    if not names:
        return LabelSpec()
    return LabelSpec(classes=names, sources=(shown,), origins=(("classes", shown),))


discover_mapillary.detect = _detect_mapillary
register_layout("mapillary", "Mapillary Vistas (<split>/images, <split>/<version>/labels, config_<version>.json)",
                0.53, (MASKS,))(discover_mapillary)


def discover_masks(root: str, options: AuditOptions) -> Discovery:
    """Any file or folder of masks; in a folder, JPEGs are taken for images unless forced.
    With ``--images`` or ``--masks``, the masks are paired with their images
    (:func:`discover_paired`): the folders named for pairing are never dropped. Without
    them, the image folders that the conventions of :mod:`labelguard.layouts.conventions`
    name beside or above a label folder, and the files a role word names as a mask's image
    in its folder, are the images of those masks, never masks; so is ``root`` itself when it
    is such an image folder (:func:`_image_folder_reason`)."""
    if options.images or options.masks:
        paired = discover_paired(root, options)
        if options.format == "masks":
            given = " and ".join(flag for flag, value in (("--images", options.images), ("--masks", options.masks))
                                 if value)
            paired.notes.append(f"--format masks with {given}: the masks were paired with their images by name, "
                                "as the paired layout pairs them")
        return paired
    discovery = Discovery("masks", root)
    if storage.isfile(root):
        color_map = _declared_color_map(options, [os.path.dirname(storage.abspath(root))], discovery)
        discovery.tasks = [_task(root, options, color_map)]
        folder = os.path.dirname(storage.abspath(root))
        spec, problems, outside = _metadata_spec([folder, os.path.dirname(folder)], folder)
        discovery.notes.extend(f"dataset metadata ignored: {p}" for p in problems)
        discovery.findings.extend(outside)
        if spec.is_known:
            discovery.spec = spec
        discovery.color_map = color_map
        return discovery
    if not storage.isdir(root):
        discovery.findings.append(UNREADABLE.finding(display_path(root), missing_reason(root)))
        return discovery
    forced = options.format == "masks"
    why = None if forced or options.lists else _image_folder_reason(root)
    if why is not None:
        discovery.notes.append(f"{display_path(root)} is an image folder ({why}): "
                               "its files are taken for images, not labels; give the dataset folder or its "
                               "label folder (or --format masks to audit these files as masks)")
        return discovery
    candidates = [] if forced else _image_folder_candidates(root)

    def jpeg_in(folder: str) -> bool:
        """Whether JPEGs in ``folder`` are masks (a label folder's)."""
        return forced or _in_mask_dir(folder, root)

    jpeg_folders: dict[str, bool] = {}  # of the files listed below: worked out once a folder

    def is_mask(path: str) -> bool:
        folder = os.path.dirname(path)
        if folder not in jpeg_folders:
            jpeg_folders[folder] = jpeg_in(folder)
        return _is_mask_file(path, jpeg_folders[folder])

    color_map = _masks_color_map(root, options, discovery)
    if not candidates and not options.lists:
        # Each folder's masks are handed on as the walk leaves the folder.
        discovery.tasks = _folder_tasks(discovery, options, color_map, root, jpeg_in)
        return _declare(discovery, color_map, [])
    walked = walk_files(root, skip_dirs=IMAGE_DIRS)
    folders = _image_folders(candidates, [p for p in walked if is_mask(p)], discovery, options)
    inside_image_folders = tuple(os.path.join(found.image_dir, "") for found in folders)
    walked = [p for p in walked if not p.startswith(inside_image_folders)]
    files = [p for p in walked if is_mask(p)]
    photos = [p for p in walked if mask_extension(p) in JPEG_EXTENSIONS and not is_mask(p)]
    pairing = pair_in_folder(files + photos)
    discovery.notes.extend(pairing.notes("mask"))
    if not options.lists:
        discovery.findings.extend(unpaired_findings(*_alone_in_folder(pairing, files, photos)))
    # A file that is some label's image is never audited as a label itself.
    images = set(pairing.pairs.values()) | {i for found in pairing.ambiguous.values() for i in found}
    masks = [p for p in files if p not in images]
    pairs = dict(pairing.pairs)
    for found in folders:
        for mask, image in found.pairs.items():
            pairs.setdefault(mask, image)  # change detection: the photo before, of the two
        images.update(found.images)
    return _finish(discovery, options, masks, pairs, color_map, [], sorted(images))


def _image_folder_reason(folder: str) -> str | None:
    """Why ``folder`` holds images, not labels, or None: its name (:data:`IMAGE_DIRS`), or a
    convention that makes it the image folder of a label folder beside it, whose masks its
    files pair with (LEVIR-CD's ``A/``, Kaggle CamVid's ``train/`` beside ``train_labels/``)."""
    folder = storage.abspath(folder)
    name = os.path.basename(folder)
    if name in IMAGE_DIRS:
        return f"named {name}/"
    parent = os.path.dirname(folder)
    try:
        by_name = {os.path.basename(child): child for child in storage.folder_paths(parent, hidden=False)}
    except OSError:
        return None
    for pair in folder_pairs(by_name):
        if pair.images != name:
            continue
        label_dir = parent if pair.labels == HERE else by_name[pair.labels]
        masks = [path for path in storage.iter_files(label_dir) if _is_mask_file(path, pair.labels != HERE)
                 and (pair.labels != HERE or os.path.dirname(path) == label_dir)]
        if pair_files(_mask_files(folder, include_jpeg=True), masks, folder, label_dir).pairs:
            shown = "the folder above it" if pair.labels == HERE else f"{pair.labels}/ beside it"
            return f"images of the labels in {shown}; {pair.kind}"
    return None


@dataclass(frozen=True)
class _ImageFolder:
    """An image folder and what pairing it with its label folder found."""

    image_dir: str
    label_dir: str
    images: list[str]
    pairs: dict[str, str]  # mask -> image


def _image_folder_candidates(root: str, depth: int = 3) -> list[tuple[str, str, FolderPair]]:
    """(image folder, label folder, convention) for each pair of folders that a convention
    names (:func:`~labelguard.layouts.conventions.folder_pairs`) in ``root`` and its folders,
    ``depth`` levels down (LoveDA's ``Train/Rural/images_png``), at most
    :data:`IMAGE_FOLDER_PROBES` folders looked into; a label folder of
    :data:`~labelguard.layouts.conventions.HERE` is the folder holding the image folder."""
    found: list[tuple[str, str, FolderPair]] = []
    pending = [(root, depth)]
    looked = 0
    while pending and looked < IMAGE_FOLDER_PROBES:
        folder, left = pending.pop(0)
        looked += 1
        try:
            children = storage.folder_paths(folder, hidden=False)
        except OSError:
            continue
        by_name = {os.path.basename(child): child for child in children}
        named = folder_pairs(by_name)
        for pair in named:
            found.append((by_name[pair.images], folder if pair.labels == HERE else by_name[pair.labels], pair))
        taken = {pair.images for pair in named} | {pair.labels for pair in named}
        if left > 1:
            pending.extend((child, left - 1) for name, child in by_name.items() if name not in taken)
    return found


# Folders looked into for image folders beside label folders (a per-dataset cost).
IMAGE_FOLDER_PROBES = 200


def _image_folders(candidates: list[tuple[str, str, FolderPair]], masks: list[str], discovery: Discovery,
                   options: AuditOptions) -> list[_ImageFolder]:
    """The candidates whose image folder holds the images of its label folder's ``masks``
    (by name, the pairing engine's keys): those a convention names by their name alone
    (``images/``, ``img_dir/``) and those whose files pair with the masks (``A/`` and ``B/``
    beside ``label/``, ``top/`` above its labels). LG002 for the masks of a label folder that
    no image folder pairs and for the images without a mask, unless ``--list`` chooses."""
    accepted: list[_ImageFolder] = []
    paired: dict[str, set[str]] = {}  # label folder -> its masks that some image folder pairs
    orphan_masks: dict[str, list[str]] = {}
    for image_dir, label_dir, pair in candidates:
        inside = os.path.join(label_dir, "")
        below = [m for m in masks if os.path.join(os.path.dirname(m), "") == inside] if pair.labels == HERE else \
            [m for m in masks if m.startswith(inside)]
        images = _mask_files(image_dir, include_jpeg=True)
        pairing = pair_files(images, below, image_dir, label_dir)
        if not pairing.pairs and not pair.by_name:
            continue  # a folder named like an image folder, whose files are the images of nothing
        discovery.notes.extend(pairing.notes("mask"))
        accepted.append(_ImageFolder(image_dir, label_dir, images, pairing.pairs))
        paired.setdefault(label_dir, set()).update(pairing.pairs)
        orphan_masks.setdefault(label_dir, pairing.orphan_labels)
        if not options.lists:
            discovery.findings.extend(unpaired_findings(pairing.orphan_images, []))
    if not options.lists:
        for label_dir, alone in orphan_masks.items():
            discovery.findings.extend(unpaired_findings([], [m for m in alone if m not in paired[label_dir]]))
    return accepted


def _masks_color_map(root: str, options: AuditOptions, discovery: Discovery) -> ColorMap | None:
    """The colour map of a folder of masks; a label folder given as PATH has it in the
    dataset folder above it."""
    parent = os.path.dirname(storage.abspath(root))
    camvid_split = storage.abspath(root) in {m for _, m in _camvid_splits(parent)}
    map_dirs = [root, parent] if camvid_split or _in_mask_dir(root, root) else [root]
    color_map = _declared_color_map(options, map_dirs, discovery,
                                    default=camvid_color_map() if camvid_split else None)
    if camvid_split and color_map is not None and not storage.exists(color_map.source):
        discovery.notes.append(f"{display_path(root)} is a CamVid label split: its colours are decoded "
                               "through the CamVid colours, as for the whole dataset")
    return color_map


def _in_mask_dir(folder: str, root: str) -> bool:
    """True when a folder from ``root`` to ``folder`` (both included) is a label folder."""
    parts = [os.path.basename(storage.abspath(root)), *storage.relpath(folder, root).split(os.sep)]
    return any(is_mask_dir(p) for p in parts)


discover_masks.detect = lambda root, options: evidence(0.10, "any folder or file may hold masks")
register_layout("masks", "any folder or file of masks (PNG, TIFF, NPY, NPZ, HDF5, NIfTI)", 0.10,
                (LISTS, CATCH_ALL, IMAGES, MASKS))(discover_masks)


def color_proposal(colors: Counter) -> dict[str, int]:
    """A colour -> index map proposed for colour masks found without a map.

    Standard VOC palette colours keep their VOC index; otherwise black is 0 and the other
    colours follow by decreasing pixel count.
    """
    voc = {c: i for i, c in enumerate(voc_color_map().colors)}
    parsed = {tuple(int(v) for v in key.split(",")): n for key, n in colors.items()}
    if parsed and all(c in voc for c in parsed):
        return {"%d,%d,%d" % c: voc[c] for c in sorted(parsed, key=lambda c: voc[c])}
    ordered = sorted(parsed, key=lambda c: (c != (0, 0, 0), -parsed[c], c))
    return {"%d,%d,%d" % c: i for i, c in enumerate(ordered)}
