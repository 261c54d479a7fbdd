"""Pascal VOC segmentation: the masks of ``SegmentationClass`` paired with ``JPEGImages``,
chosen by the ``ImageSets`` lists; colour masks decoded through the VOC palette. The VOC
detection layout (:mod:`labelguard.layouts.voc`) reads its folders' masks through here.
"""

from __future__ import annotations

import os
from dataclasses import replace

from labelguard.core import storage
from labelguard.layouts._mask_common import LIST_EXTENSIONS, _declared_color_map, _finish, _mask_files, _pair
from labelguard.layouts.base import LISTS, MASKS, NAMES, AuditOptions, Discovery, Seen, evidence, no, register_layout
from labelguard.layouts.lists import Role, image_sets_rule, select_from_lists
from labelguard.layouts.pairing import labels_by_image, unpaired_findings
from labelguard.readers.colormap import voc_color_map


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
        discovery.findings.extend(unpaired_findings([], orphan_masks, errors=discovery.errors))
    color_map = _declared_color_map(options, [root], discovery, default=voc_color_map())
    return _finish(discovery, replace(options, lists=()), masks, pairs, color_map, [])


discover_voc_segmentation.detect = lambda root, options: (  # type: ignore[attr-defined]  # read by register_layout
    evidence(0.71, Seen("SegmentationClass/ folder", NAMES))
    if storage.isdir(os.path.join(root, "SegmentationClass")) else no())
register_layout("voc-segmentation", "Pascal VOC segmentation (SegmentationClass, JPEGImages)", 0.71, (LISTS, MASKS))(
    discover_voc_segmentation)
