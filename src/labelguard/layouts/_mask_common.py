"""What the mask layouts share: a mask's per-file task, the mask files of a folder, the
pairing of masks with their images, and the spec and colour map a dataset declares beside its
masks. No layout is registered here; each mask layout is a module of its own.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Mapping, Sequence

from labelguard.rules._unread import unreadable
from labelguard.core import storage
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.tasks import FileTask
from labelguard.core.paths import display_path
from labelguard.layouts.base import AuditOptions, Discovery
from labelguard.layouts.conventions import CLASS_TABLE_FILES, SEGNET_LABEL_SUFFIX
from labelguard.layouts.lists import Role, select_from_lists
from labelguard.layouts.metadata import linked_outside, read_metadata
from labelguard.layouts.pairing import labels_by_image, pair_files
from labelguard.readers.base import PLAIN_NAME_FILES, ReadError, parse_json, read_class_names, read_text
from labelguard.readers.class_tables import read_class_table
from labelguard.readers.colormap import ColorMap, find_color_map, load_color_map
from labelguard.readers.masks import JPEG_EXTENSIONS, MASK_EXTENSIONS, mask_extension
from labelguard.rules._masks import process_mask

LIST_EXTENSIONS = tuple(MASK_EXTENSIONS)


def _task(path: str, options: AuditOptions, color_map: ColorMap | None, image: str | None = None,
          encoding: str | None = None, shown: str | None = None, channels: Sequence[str] = ()) -> FileTask:
    # The paired image is checked to be whole as the audit says (LG008).
    extra: list[tuple[str, Any]] = [("check_images", options.check_images)]
    if options.key:
        extra.append(("key", options.key))
    if options.image_key:
        extra.append(("image_key", options.image_key))
    if color_map is not None:
        extra.append(("color_map", color_map))
    if encoding is not None:
        extra.append(("encoding", encoding))
    if channels:
        extra.append(("channels", tuple((channel, display_path(channel)) for channel in channels)))
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
        for name in PLAIN_NAME_FILES:
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
        return LabelSpec.from_source(display_path(path), classes=tuple(names[v] for v in values))
    return LabelSpec.from_source(display_path(path), values=tuple(values))


def _finish(discovery: Discovery, options: AuditOptions, masks: list[str], pairs: dict[str, str],
            color_map: ColorMap | None, extra_dirs: list[str], images: Sequence[str] = (),
            channels: Mapping[str, Sequence[str]] | None = None) -> Discovery:
    """The tasks of the masks (those ``--list`` selects), the dataset's spec and colour map.

    ``images`` are the image files the layout found besides those ``pairs`` names: a list
    entry naming an image selects its mask, never the image as a mask. ``channels``: mask ->
    the other channel images of its case (nnU-Net), whose geometry its task compares too."""
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
    channels = channels or {}
    discovery.tasks = [_task(m, options, color_map, pairs.get(m), channels=channels.get(m, ())) for m in masks]
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
        discovery.spec = LabelSpec.from_source(_source_name(color_map), classes=color_map.names)
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
            discovery.findings.append(unreadable(display_path(options.color_map), f"colour map: {exc}"))
            return default
    outside: list[Finding] = []
    color_map, problem = find_color_map(directories, lambda path: not _linked_out(path, discovery.root, outside))
    discovery.findings.extend(outside)
    if problem:
        discovery.findings.append(unreadable(None, f"colour map {problem}"))
    return color_map or default


def _camvid_splits(root: str) -> list[tuple[str, str]]:
    """(image folder, mask folder) of each CamVid split in ``root``: ``train/`` beside
    ``trainannot/``. The catch-all layout asks it too, of a mask folder given as PATH."""
    if not storage.isdir(root):
        return []
    cut = len(SEGNET_LABEL_SUFFIX)
    annotated = [name for name in storage.folder_names(root) if name.endswith(SEGNET_LABEL_SUFFIX)]
    return [(os.path.join(root, n[:-cut]), os.path.join(root, n)) for n in annotated
            if storage.lexists(os.path.join(root, n[:-cut]))]
