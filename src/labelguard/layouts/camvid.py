"""CamVid as SegNet ships it: each ``<split>/`` image folder beside its ``<split>annot/``
mask folder (``train/`` and ``trainannot/``); colour masks decoded through the CamVid colours.
"""

from __future__ import annotations

import os

from labelguard.layouts._mask_common import _camvid_splits, _declared_color_map, _finish, _mask_files, _pair
from labelguard.layouts.base import (
    LISTS, MASKS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.layouts.pairing import unpaired_findings
from labelguard.readers.colormap import camvid_color_map


def discover_camvid(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("camvid", root)
    masks, pairs = [], {}
    for image_dir, mask_dir in _camvid_splits(root):
        split_masks = _mask_files(mask_dir, include_jpeg=True)
        found, orphan_images, orphan_masks = _pair(_mask_files(image_dir, True), split_masks, image_dir, mask_dir,
                                                   discovery)
        if not options.lists:
            discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks, errors=discovery.errors))
        masks.extend(split_masks)
        pairs.update(found)
    color_map = _declared_color_map(options, [root], discovery, default=camvid_color_map())
    return _finish(discovery, options, masks, pairs, color_map, [])


def _detect_camvid(root: str, options: AuditOptions) -> Evidence:
    splits = _camvid_splits(root)
    if not splits:
        return no()
    folders = ", ".join(f"{os.path.basename(i)}/ beside {os.path.basename(m)}/" for i, m in splits)
    return evidence(0.59, Seen(folders, NAMES))


discover_camvid.detect = _detect_camvid  # type: ignore[attr-defined]  # read by register_layout
register_layout("camvid", "CamVid (train/trainannot, val/valannot...)", 0.59, (LISTS, MASKS))(discover_camvid)
