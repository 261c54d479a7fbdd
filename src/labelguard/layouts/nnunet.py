"""nnU-Net raw datasets: the masks of ``labelsTr``/``labelsTs`` paired with ``imagesTr``/
``imagesTs``, the classes in ``dataset.json``.
"""

from __future__ import annotations

import os

from labelguard.core import storage
from labelguard.layouts._mask_common import _declared_color_map, _finish, _mask_files, _pair
from labelguard.layouts.base import (
    DECLARED, LISTS, MASKS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.layouts.pairing import channel_case, unpaired_findings


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
            discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks, errors=discovery.errors))
        masks.extend(split_masks)
        all_images.extend(images)
        pairs.update(found)
    color_map = _declared_color_map(options, [root], discovery)
    return _finish(discovery, options, masks, pairs, color_map, [], all_images, _other_channels(pairs, all_images))


def _other_channels(pairs: dict[str, str], images: list[str]) -> dict[str, list[str]]:
    """Label -> the channels of its case besides the one it is paired with (``case_0001``...
    beside ``case_0000``): their geometry must match the label's too."""
    cases: dict[tuple[str, str], list[str]] = {}
    for image in images:
        case = channel_case(image)
        if case is not None:
            cases.setdefault(case, []).append(image)
    others = {}
    for label, image in pairs.items():
        case = channel_case(image)
        channels = cases.get(case, []) if case is not None else []
        if len(channels) > 1:
            others[label] = sorted(c for c in channels if c != image)
    return others


def _detect_nnunet(root: str, options: AuditOptions) -> Evidence:
    if not storage.isdir(os.path.join(root, "labelsTr")):
        return no()
    described = storage.isfile(os.path.join(root, "dataset.json"))
    return evidence(0.83, Seen("labelsTr/ folder", NAMES),
                    *([Seen("dataset.json beside it", DECLARED)] if described else []))


discover_nnunet.detect = _detect_nnunet  # type: ignore[attr-defined]  # read by register_layout
register_layout("nnunet", "nnU-Net raw dataset (imagesTr/labelsTr, dataset.json)", 0.83, (LISTS, MASKS))(
    discover_nnunet)
