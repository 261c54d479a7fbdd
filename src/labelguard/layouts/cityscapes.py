"""Cityscapes: ``gtFine`` class masks (``*_labelTrainIds.png``, else ``*_labelIds.png``, else
``*_instanceIds.png``) paired with ``leftImg8bit``'s images; the other encodings of the same
labels are left out.
"""

from __future__ import annotations

import os

from labelguard.core import storage
from labelguard.layouts._mask_common import _declared_color_map, _finish, _pair, _task
from labelguard.layouts.base import LISTS, MASKS, NAMES, AuditOptions, Discovery, Seen, evidence, no, register_layout
from labelguard.layouts.folders import walk_files
from labelguard.layouts.pairing import unpaired_findings


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
        discovery.findings.extend(unpaired_findings([], orphan_masks, errors=discovery.errors))
    color_map = _declared_color_map(options, [root], discovery)
    _finish(discovery, options, masks, pairs, color_map, [])
    if encoding is not None:
        discovery.tasks = [_task(t.path, options, color_map, t.image, encoding) for t in discovery.tasks]
    return discovery


discover_cityscapes.detect = lambda root, options: (  # type: ignore[attr-defined]  # read by register_layout
    evidence(0.65, Seen("gtFine/ folder", NAMES))
    if storage.isdir(os.path.join(root, "gtFine")) else no())
register_layout("cityscapes", "Cityscapes (gtFine/*_labelIds.png, leftImg8bit)", 0.65, (LISTS, MASKS))(
    discover_cityscapes)
