"""The paired layout: masks paired by name with their images, from
``--images DIR --masks DIR`` or from an image folder and a mask folder side by side
(``images/`` and ``masks/``).
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator, Sequence

from labelguard.core import storage
from labelguard.core.text import shorten
from labelguard.core.tasks import FileTask
from labelguard.layouts._mask_common import (
    _declare, _declared_color_map, _finish, _is_mask_file, _iter_mask_files, _pair, _task,
)
from labelguard.core.paths import display_path, inside_root
from labelguard.layouts.base import (
    GIVEN, IMAGES, LISTS, MASKS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.layouts.conventions import IMAGE_DIRS, MASK_DIRS
from labelguard.layouts.folders import walk_files
from labelguard.layouts.pairing import Pairing, PairingStream, unpaired_findings
from labelguard.readers.colormap import ColorMap
from labelguard.readers.masks import is_mask_candidate


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
        discovery.findings.extend(unpaired_findings(result.orphan_images if all_masks else [], result.orphan_labels,
                                                    errors=discovery.errors))


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
        if mask_root != root:
            discovery.walked = [folder for folder in (mask_root, image_root) if folder]
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
        return evidence(1.0, Seen(f"--masks {options.masks} names the label folder", GIVEN))
    if not storage.isdir(root):
        return no()
    masks, images = _child(root, MASK_DIRS), _child(root, sorted(IMAGE_DIRS))
    if masks is None or images is None:
        return no()
    return evidence(0.35, Seen(f"{os.path.basename(images)}/ and {os.path.basename(masks)}/ side by side", NAMES))


discover_paired.detect = _detect_paired  # type: ignore[attr-defined]  # read by register_layout
register_layout("paired", "image and mask folders paired by name", 1.0, (LISTS, IMAGES, MASKS))(discover_paired)
