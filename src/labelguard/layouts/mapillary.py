"""Mapillary Vistas: one version of one split, ``<split>/<version>/labels`` paired with
``<split>/images``, the classes in ``config_<version>.json``.
"""

from __future__ import annotations

import os
import re

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.spec import LabelSpec
from labelguard.layouts._mask_common import JPEG_EXTENSIONS, _finish, _linked_out, _mask_files, _pair
from labelguard.core.paths import display_path
from labelguard.layouts.base import MASKS, NAMES, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout
from labelguard.layouts.folders import walk_files
from labelguard.layouts.pairing import unpaired_findings
from labelguard.readers.base import ReadError, parse_json, read_text
from labelguard.readers.masks import mask_extension

MAPILLARY_VERSION = re.compile(r"^v\d+(\.\d+)*$")
MAPILLARY_OTHER = {"instances": "instance masks (class * 256 + instance)",
                   "panoptic": "panoptic masks and their COCO panoptic JSON (the same labels)",
                   "polygons": "polygon JSON files (the same labels)"}


def _detect_mapillary(root: str, options: AuditOptions) -> Evidence:
    """A Mapillary Vistas version folder: ``<split>/v1.2/labels`` beside ``<split>/images``."""
    root = storage.abspath(root)
    if (MAPILLARY_VERSION.match(os.path.basename(root)) and storage.isdir(os.path.join(root, "labels"))
            and storage.isdir(os.path.join(os.path.dirname(root), "images"))):
        return evidence(0.53, Seen(f"version folder {os.path.basename(root)}/ with labels/, beside ../images/", NAMES))
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
        discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks, errors=discovery.errors))
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
        discovery.findings.append(unreadable(shown, f"Mapillary config: {exc!r} (no labels[].name list)"))
        return LabelSpec()
    if not names:
        return LabelSpec()
    return LabelSpec(classes=names).with_origins([("classes", shown)])


discover_mapillary.detect = _detect_mapillary  # type: ignore[attr-defined]  # read by register_layout
register_layout("mapillary", "Mapillary Vistas (<split>/images, <split>/<version>/labels, config_<version>.json)",
                0.53, (MASKS,))(discover_mapillary)
