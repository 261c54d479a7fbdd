"""ADE20K's full format: ``x_seg.png`` and ``x_parts_N.png`` beside ``x.jpg`` and ``x.json``,
the class stored in the colour.
"""

from __future__ import annotations

import os
import re

from labelguard.core import storage
from labelguard.layouts._mask_common import _finish, _task
from labelguard.core.paths import display_path
from labelguard.layouts.base import MASKS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout
from labelguard.layouts.folders import walk_files


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
            seen = Seen(f"{display_path(os.path.join(prefix, seg))} beside its .json", NAMES)
            return evidence(0.47, seen, below=below)
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
        assert stem is not None  # not a user mistake: masks are the files that have an ADE20K stem
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


discover_ade20k.detect = _detect_ade20k  # type: ignore[attr-defined]  # read by register_layout
register_layout("ade20k", "ADE20K full format (x_seg.png, x_parts_N.png and x.json beside x.jpg)", 0.47, (MASKS,))(
    discover_ade20k)
