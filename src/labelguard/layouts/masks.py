"""The catch-all layout: any file or folder of masks (PNG, TIFF, NPY, NPZ, HDF5, NIfTI), asked
only where no other layout applies. In a folder, JPEGs are photos unless a label folder holds
them; the image folders a convention names beside the label folders, and the files a role
word names as a mask's image, are images, never masks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.tasks import FileTask
from labelguard.layouts._mask_common import (
    JPEG_EXTENSIONS, _camvid_splits, _declare, _declared_color_map, _finish, _is_mask_file, _mask_files,
    _metadata_spec, _task,
)
from labelguard.core.paths import DisplayNames, display_path
from labelguard.layouts.base import (
    CATCH_ALL, IMAGES, LISTS, MASKS, SHAPE, AuditOptions, Discovery, Seen, evidence, register_layout,
)
from labelguard.layouts.conventions import HERE, IMAGE_DIRS, FolderPair, folder_pairs, is_mask_dir
from labelguard.layouts.folders import missing_reason, walk_files
from labelguard.layouts.pairing import (
    Pairing, may_pair, name_key, pair_files, pair_in_folder, strip_extension, unpaired_findings,
)
from labelguard.layouts.paired import discover_paired
from labelguard.readers.colormap import ColorMap, camvid_color_map
from labelguard.readers.masks import MASK_EXTENSIONS, mask_extension


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
        discovery.findings.extend(unpaired_findings(*_alone_in_folder(pairing, masks, set(files) - set(masks)),
                                                    errors=discovery.errors))
    discovery.notes.extend(ambiguous.notes("mask"))


def _alone_in_folder(pairing: Pairing, masks: Iterable[str], photos: Iterable[str]) -> tuple[list[str], list[str]]:
    """(photos, masks) left alone in the folders where masks pair with images by a naming
    convention (Roboflow's ``x.jpg`` beside ``x_mask.png``): there a photo without its mask,
    and a mask named as a label without its image, are orphans (LG002). Elsewhere a lone
    file is a mask of a folder without the convention, never an orphan."""
    masks = set(masks)
    # Only a mask pairing by name makes a folder one of the convention: a photo named like a
    # label (x_m.jpg, a medium-size copy, beside x.jpg) is a photo still.
    folders = {os.path.dirname(mask) for mask in pairing.pairs if mask in masks}
    if not folders:
        return [], []
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
        discovery.findings.append(unreadable(display_path(root), missing_reason(root)))
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
        discovery.findings.extend(unpaired_findings(*_alone_in_folder(pairing, files, photos), errors=discovery.errors))
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
            discovery.findings.extend(unpaired_findings(pairing.orphan_images, [], errors=discovery.errors))
    if not options.lists:
        for label_dir, alone in orphan_masks.items():
            discovery.findings.extend(unpaired_findings([], [m for m in alone if m not in paired[label_dir]],
                                                        errors=discovery.errors))
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


discover_masks.detect = lambda root, options: (  # type: ignore[attr-defined]  # read by register_layout
    evidence(0.10, Seen("any folder or file may hold masks", SHAPE)))
register_layout("masks", "any folder or file of masks (PNG, TIFF, NPY, NPZ, HDF5, NIfTI)", 0.10,
                (LISTS, CATCH_ALL, IMAGES, MASKS))(discover_masks)
