"""Segmentation mask layouts and the per-file mask processor.

Layouts found, in this order: explicit ``--images/--masks`` folders, nnU-Net
(``imagesTr``/``labelsTr``), Pascal VOC segmentation (``SegmentationClass``), CamVid
(``train``/``trainannot``), Cityscapes (``gtFine``), sibling image/mask folders, and any
folder or file of masks.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import Sequence

import numpy as np

from labelguard.checks.files import UNREADABLE
from labelguard.checks.masks import (
    COLOR_MASK, GEOMETRY, LAYOUT, LOSSY, VALUE_OUTSIDE_SPEC, value_findings,
)
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec, class_list_spec
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts.base import (
    AuditOptions, Discovery, display_path, pair_key, register_layout, select_from_lists, strip_extension,
    unpaired_findings, walk_files,
)
from labelguard.readers.base import CLASS_NAME_FILES, ReadError, read_class_names
from labelguard.readers.colormap import (
    ColorMap, camvid_color_map, decode, find_color_map, load_color_map, pack, unpack, voc_color_map,
)
from labelguard.readers.masks import (
    IMAGE_FORMATS, MASK_EXTENSIONS, MaskRecord, image_shape, is_mask_candidate, mask_extension,
    read_mask,
)

IMAGE_DIRS = frozenset({"images", "image", "imgs", "img", "JPEGImages", "leftImg8bit", "imagesTr",
                        "imagesTs", "inputs", "input", "rgb", "photos"})
MASK_DIRS = ("masks", "mask", "labels", "label", "annotations", "annotation", "gt", "gts",
             "groundtruth", "ground_truth", "segmentations", "segmentation", "SegmentationClass",
             "labelsTr", "targets", "annot", "annots")
LIST_EXTENSIONS = tuple(MASK_EXTENSIONS)
JPEG_EXTENSIONS = (".jpg", ".jpeg")

# Values holding less than this share of a mask's pixels are "rare" for the artifact check.
RARE_SHARE = 0.01
# Rare pixels that lie on class edges this often are compression or interpolation fringes.
FRINGE_EDGE_SHARE = 0.9


# ---- per-file processor -----------------------------------------------------------------

def process_mask(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one mask (and its paired image's geometry) and run the per-file mask checks."""
    result = FileResult(task.display)
    check_mask(task, spec, result.findings, result.summary)
    return result


def process_mask_batch(tasks: Sequence[FileTask], spec: LabelSpec) -> FileResult:
    """:func:`process_mask` of several files, merged into one result as the engine merges
    per-file results (equal findings, equal summary), without a summary per file.

    Exposed as ``process_mask.batch`` for an engine that hands it a whole batch of tasks:
    a summary per file and its merge cost about 15 microseconds of a 600 microsecond mask."""
    result = FileResult(tasks[0].display if tasks else "", files=len(tasks))
    for task in tasks:
        check_mask(task, spec, result.findings, result.summary)
    return result


process_mask.batch = process_mask_batch  # type: ignore[attr-defined]


def check_mask(task: FileTask, spec: LabelSpec, findings: list[Finding], summary: Summary) -> None:
    """Read one mask, append its findings and add it to ``summary``."""
    summary.kinds["mask"] += 1
    try:
        record = read_mask(task.path, task.option("key"))
    except ReadError as exc:
        summary.unreadable += 1
        findings.append(UNREADABLE.finding(task.display, str(exc)))
        return
    summary.samples += 1
    summary.dtypes[record.mode] += 1
    if record.renamed and not record.lossy and not (
            record.container in IMAGE_FORMATS and record.declared in IMAGE_FORMATS):
        findings.append(_renamed_finding(task, record))
    array = _label_plane(task, record, findings, summary)
    if array is None:
        if record.lossy:
            findings.append(_jpeg_finding(task.display, record))
        return
    stored = record.array
    if record.container in ("png", "tiff") and stored.ndim == 2 and stored.dtype.itemsize > 1 \
            and stored.dtype.kind in "iu":
        if stored.size and int(stored.max(initial=0)) < 256 and int(stored.min(initial=0)) >= 0:
            findings.append(LAYOUT.finding(
                task.display,
                f"{stored.dtype} mask ({record.mode}) holds only values below 256: a wider dtype than needed",
                hint="Save masks as 8-bit (mode L or P); older torch versions cannot convert uint16 arrays.",
                dtype=str(stored.dtype),
            ))
    try:
        value_list, values, counts = value_findings(task.display, array, spec)
    except TypeError as exc:
        findings.append(UNREADABLE.finding(task.display, f"not a label array: {exc}"))
        return
    findings.extend(value_list)
    if record.lossy:
        findings.append(_jpeg_finding(task.display, record, values, counts))
    if any(f.code == "LG205" for f in value_list):
        summary.empty += 1
    summary.add_values(task.display, values, counts)
    if not record.lossy and array.dtype.kind in "iu":
        fringe = _fringe_finding(task.display, array, values, counts)
        if fringe is not None:
            findings.append(fringe)
    findings.extend(_geometry_findings(task, record, array))


def _jpeg_finding(display: str, record: MaskRecord, values: np.ndarray | None = None,
                  counts: np.ndarray | None = None):
    if record.renamed:
        message = f"this mask is a JPEG file named .{record.declared}: JPEG compression smears the label values along every edge"
    else:
        message = "this mask is stored as JPEG: lossy compression smears the label values along every edge"
    stray: dict = {}
    if values is not None and counts is not None and len(values):
        rare = counts < RARE_SHARE * int(counts.sum())
        if rare.any():
            stray = {"stray_values": values[rare].tolist()[:50], "stray_pixels": int(counts[rare].sum())}
            shown = ", ".join(str(v) for v in stray["stray_values"][:8])
            message += (f"; {stray['stray_pixels']} pixels hold {int(rare.sum())} stray values "
                        f"({shown}{'...' if rare.sum() > 8 else ''}), each under {RARE_SHARE:.0%} of the mask")
    return LOSSY.finding(
        display, message,
        hint="Re-export the mask losslessly (PNG, TIFF, NPY) from the source labels; "
        "a renamed JPEG stays a JPEG.",
        container="jpeg", renamed=record.renamed, **stray,
    )


_FORMAT_NAMES = {"zip": "NPZ (zip)", "nifti": "NIfTI", "riff": "WebP", "gzip": "gzip"}


def _renamed_finding(task: FileTask, record: MaskRecord):
    """LG001 for a file whose bytes are of another format than its name says, where readers
    that go by the name (np.load, nibabel, PIL) cannot open it."""
    real = _FORMAT_NAMES.get(record.container, record.container.upper())
    return UNREADABLE.finding(
        task.display,
        f"{real} data in a file named {mask_extension(task.path)}: loaders that pick the reader by the "
        "extension fail on it (labelguard read it by its content and checked its values)",
        hint="Rename the file to the extension of its real format, or re-export it in the format "
        "its name says.",
        container=record.container, declared=record.declared,
    )


def _label_plane(task: FileTask, record: MaskRecord, findings: list, summary: Summary):
    """The (H, W) / volume of labels to check, decoding colours; None when nothing can be checked."""
    array = record.array
    # A multi-page TIFF gives (pages, H, W): a volume, not an image with colour channels.
    if record.container not in IMAGE_FORMATS or array.ndim != 3 or array.shape[-1] not in (2, 3, 4):
        if array.ndim == 0:
            findings.append(UNREADABLE.finding(task.display, "holds a single number, not a label array"))
            return None
        if array.size == 0:
            findings.append(UNREADABLE.finding(task.display, f"holds no label values (an empty array of shape {array.shape})"))
            return None
        return array
    channels = array.shape[-1]
    if record.mode in ("LA", "PA") or channels == 2:
        findings.append(LAYOUT.finding(
            task.display, f"mask has an alpha channel (mode {record.mode}); only the first channel is used",
            hint="Save masks as a single channel (mode L or P).", channels=channels,
        ))
        return array[..., 0]
    if channels == 4:
        alpha = array[..., 3]
        if alpha.min() == alpha.max():
            array = array[..., :3]
    if channels in (3, 4) and np.array_equal(array[..., 0], array[..., 1]) and np.array_equal(array[..., 0], array[..., 2]):
        findings.append(LAYOUT.finding(
            task.display, f"grey mask stored with {channels} identical channels (mode {record.mode})",
            hint="Save masks as a single channel (mode L); loaders that keep 3 channels give (H, W, 3) targets.",
            channels=channels,
        ))
        return array[..., 0]
    color_map: ColorMap | None = task.option("color_map")
    if color_map is None:
        codes, counts = np.unique(pack(array[..., :3]).reshape(-1), return_counts=True)
        order = np.argsort(-counts)[:256]
        colors = {unpack(int(codes[i])): int(counts[i]) for i in order}
        summary.colors.update({"%d,%d,%d" % c: n for c, n in colors.items()})
        shown = ", ".join(f"{c} {n} px" for c, n in list(colors.items())[:6])
        more = f" and {len(codes) - 6} more" if len(codes) > 6 else ""
        findings.append(COLOR_MASK.finding(
            task.display,
            f"colour mask (mode {record.mode}, {len(codes)} colours: {shown}{more}) where class-index masks are expected",
            hint="Declare the colour map (dataset_meta.json, labelmap.txt, --color-map FILE) or convert the masks "
            "(`labelguard fix colors`); the report proposes a colour -> index map.",
            colors={"%d,%d,%d" % c: n for c, n in list(colors.items())[:32]},
        ))
        return None
    indices, unmapped = decode(array, color_map)
    if unmapped:
        listing = ", ".join(f"{c} in {n} pixels" for c, n in sorted(unmapped.items(), key=lambda i: -i[1])[:6])
        more = f" and {len(unmapped) - 6} more" if len(unmapped) > 6 else ""
        findings.append(VALUE_OUTSIDE_SPEC.finding(
            task.display,
            f"colour{'s' if len(unmapped) > 1 else ''} {listing}{more} not in the colour map "
            f"({display_path(color_map.source) if os.path.exists(color_map.source) else color_map.source}, "
            f"{len(color_map.colors)} colours)",
            hint="Add the colour to the map if it is a class, or repaint those pixels; "
            "JPEG-saved colour masks show many near-colours along edges.",
            colors={"%d,%d,%d" % c: n for c, n in unmapped.items()},
            values=[], counts=[],
        ))
    return indices[indices >= 0]


def _fringe_finding(display: str, array: np.ndarray, values: np.ndarray, counts: np.ndarray):
    """LG202 for lossless masks that carry JPEG or interpolation fringes along class edges."""
    if array.ndim < 2 or len(values) < 3:
        return None
    # This gate runs on every mask: plain Python on a handful of values, no numpy calls.
    pairs = list(zip(values.tolist(), counts.tolist()))
    threshold = RARE_SHARE * sum(c for _, c in pairs)
    rare_values = [v for v, c in pairs if c < threshold]
    common_values = [v for v, c in pairs if c >= threshold]
    if len(rare_values) < 2 or len(common_values) < 2:
        return None
    low, high = min(common_values), max(common_values)
    if sum(low < v < high for v in rare_values) < 2:
        return None
    rare, common = np.array(rare_values, dtype=values.dtype), np.array(common_values, dtype=values.dtype)
    is_rare = np.isin(array, rare)
    rare_pixels = int(is_rare.sum())
    edge = np.zeros(array.shape, dtype=bool)
    for axis in (-1, -2):
        differs = np.diff(array, axis=axis) != 0
        lead = [slice(None)] * array.ndim
        trail = [slice(None)] * array.ndim
        lead[axis] = slice(0, -1)
        trail[axis] = slice(1, None)
        edge[tuple(lead)] |= differs
        edge[tuple(trail)] |= differs
    on_edge = int((is_rare & edge).sum())
    thin = _thin(is_rare)
    if on_edge < FRINGE_EDGE_SHARE * rare_pixels or not thin:
        return None
    return LOSSY.finding(
        display,
        f"{rare_pixels} pixels along class edges hold {len(rare)} stray values "
        f"({', '.join(str(v) for v in rare[:8].tolist())}{'...' if len(rare) > 8 else ''}) between the main "
        f"values {common.tolist()[:6]}: the mask went through JPEG or was resized with interpolation",
        hint="Re-export the mask losslessly from the source labels, and resize masks with nearest-neighbour "
        "interpolation only.",
        stray_values=rare.tolist()[:50], stray_pixels=rare_pixels, main_values=common.tolist(),
    )


def _thin(is_rare: np.ndarray) -> bool:
    """True when rare pixels form thin lines (few have a rare pixel on every side)."""
    core = is_rare.copy()
    for axis in (-1, -2):
        core[tuple(_shift(is_rare.ndim, axis, 1))] &= is_rare[tuple(_shift(is_rare.ndim, axis, -1))]
        core[tuple(_shift(is_rare.ndim, axis, -1))] &= is_rare[tuple(_shift(is_rare.ndim, axis, 1))]
    return int(core.sum()) <= 0.5 * int(is_rare.sum())


def _shift(ndim: int, axis: int, direction: int) -> list:
    index = [slice(None)] * ndim
    index[axis] = slice(1, None) if direction > 0 else slice(0, -1)
    return index


def _geometry_findings(task: FileTask, record: MaskRecord, labels: np.ndarray) -> list:
    mask_shape = tuple(record.array.shape)
    if record.container in IMAGE_FORMATS and record.array.ndim == 3 and mask_shape[-1] in (2, 3, 4):
        mask_shape = mask_shape[:2]
    findings = []
    if record.image_shape is not None and not same_geometry(mask_shape, record.image_shape):
        findings.append(GEOMETRY.finding(
            task.display,
            f"image {record.image_shape} and label {mask_shape} in the same file differ in shape",
            hint="Re-create the sample so that image and label have the same size (resize labels with nearest neighbour).",
            image_shape=list(record.image_shape), label_shape=list(mask_shape),
        ))
    if task.image is not None:
        try:
            shape = image_shape(task.image)
        except ReadError as exc:
            findings.append(UNREADABLE.finding(task.image_display or task.image, str(exc)))
            return findings
        if not same_geometry(mask_shape, shape):
            findings.append(GEOMETRY.finding(
                task.display,
                f"mask {_describe_shape(mask_shape)} and image {task.image_display} {_describe_shape(shape)} differ",
                hint="Resize the mask to the image with nearest-neighbour interpolation (or re-export both); "
                "batching them fails with 'stack expects each tensor to be equal size'.",
                image=task.image_display, image_shape=list(shape), mask_shape=list(mask_shape),
            ))
    return findings


def _describe_shape(shape: tuple[int, ...]) -> str:
    """Width x height for 2D images (channels named apart), the full shape for volumes."""
    if len(shape) == 2:
        return f"{shape[1]}x{shape[0]}"
    if len(shape) == 3 and shape[-1] <= 4:
        return f"{shape[1]}x{shape[0]} ({shape[-1]} channels)"
    return "x".join(str(s) for s in shape)


def same_geometry(mask: tuple[int, ...], image: tuple[int, ...]) -> bool:
    """True when a mask fits an image: equal shapes, or the image has one extra channel axis
    (channels last, first, or after a batch axis as in BraTS numpy volumes)."""
    mask, image = tuple(mask), tuple(image)
    if mask == image:
        return True
    if len(image) == len(mask) + 1:
        return any(image[:i] + image[i + 1:] == mask for i in range(len(image)))
    if len(mask) == len(image) + 1 and 1 in (mask[0], mask[-1]):
        return tuple(m for m in mask if m != 1) == tuple(i for i in image if i != 1)
    return False


# ---- discovery --------------------------------------------------------------------------

def _task(path: str, options: AuditOptions, color_map: ColorMap | None, image: str | None = None) -> FileTask:
    extra = []
    if options.key:
        extra.append(("key", options.key))
    if color_map is not None:
        extra.append(("color_map", color_map))
    return FileTask(
        processor=process_mask, path=path, display=display_path(path), image=image,
        image_display=display_path(image) if image else None, options=tuple(extra),
    )


def _mask_files(folder: str, include_jpeg: bool) -> list[str]:
    return [p for p in walk_files(folder) if is_mask_candidate(p)
            and (include_jpeg or mask_extension(p) not in JPEG_EXTENSIONS)]


def _pair(images: list[str], masks: list[str], image_root: str, mask_root: str):
    """(pairs mask->image, orphan images, orphan masks) matched by folder + stem.

    Keys are tried from the most to the least specific: folder + stem, then folder + stem
    without an nnU-Net channel suffix on the image, then the stem alone.
    """
    indexes: list[dict[str, list[str]]] = [{}, {}, {}]
    for path in sorted(images):
        relative = os.path.relpath(path, image_root)
        indexes[0].setdefault(pair_key(relative), []).append(path)
        indexes[1].setdefault(pair_key(relative, channel=True), []).append(path)
        indexes[2].setdefault(pair_key(os.path.basename(path), channel=True), []).append(path)
    pairs: dict[str, str] = {}
    used: set[str] = set()
    for mask in masks:
        relative = os.path.relpath(mask, mask_root)
        keys = (pair_key(relative), pair_key(relative), pair_key(os.path.basename(mask)))
        for index, key in zip(indexes, keys):
            candidates = index.get(key)
            if candidates:
                pairs[mask] = candidates[0]
                used.update(candidates)  # every channel file of an nnU-Net case
                break
    orphan_images = [p for p in images if p not in used]
    orphan_masks = [m for m in masks if m not in pairs]
    return pairs, orphan_images, orphan_masks


def _metadata_spec(directories: list[str]) -> tuple[LabelSpec, list[str]]:
    """The spec a dataset declares beside its data: nnU-Net dataset.json or a class-name file.

    ``directories`` go nearest first, the dataset's own folders before the ones above its
    root: a converter's output folder holds the class list of that output, while the folder
    above may hold the input it was run with (labelme's labels.txt, whose ``__ignore__``
    first line is not a class of the output).
    """
    problems = []
    for directory in directories:
        path = os.path.join(directory, "dataset.json")
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8-sig") as handle:
                    meta = json.load(handle)
                labels = meta.get("labels") if isinstance(meta, dict) else None
                if isinstance(labels, dict) and labels:
                    return _spec_from_nnunet(labels, path), problems
            except (OSError, ValueError) as exc:
                problems.append(f"{display_path(path)}: {exc}")
        for name in CLASS_NAME_FILES:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                try:
                    names = read_class_names(path)
                except ReadError as exc:
                    problems.append(f"{display_path(path)}: {exc}")
                    continue
                spec = class_list_spec(names, display_path(path))
                if spec.is_known:
                    return spec, problems
    return LabelSpec(), problems


def _spec_from_nnunet(labels: dict, path: str) -> LabelSpec:
    pairs = []
    for key, value in labels.items():
        if str(key).lstrip("-").isdigit():  # v1: {"0": "background"}
            pairs.append((int(key), str(value)))
        elif isinstance(value, int):  # v2: {"background": 0}
            pairs.append((value, str(key)))
        elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            pairs.extend((v, f"{key}") for v in value)  # region-based: the regions' member labels
    values = sorted({v for v, _ in pairs})
    names = dict(pairs)
    if values == list(range(len(values))):
        return LabelSpec(classes=tuple(names[v] for v in values), sources=(display_path(path),))
    return LabelSpec(values=tuple(values), sources=(display_path(path),))


def _finish(discovery: Discovery, options: AuditOptions, masks: list[str], pairs: dict[str, str],
            color_map: ColorMap | None, extra_dirs: list[str]) -> Discovery:
    root = discovery.root
    if options.lists:
        selection = select_from_lists(options.lists, root, masks, LIST_EXTENSIONS)
        discovery.findings.extend(selection.findings)
        masks = selection.paths
        pairs = {**pairs, **selection.pairs}
    discovery.tasks = [_task(m, options, color_map, pairs.get(m)) for m in masks]
    spec, problems = _metadata_spec([root, *extra_dirs, os.path.dirname(os.path.abspath(root))])
    discovery.notes.extend(f"dataset metadata ignored: {p}" for p in problems)
    if spec.is_known:
        discovery.spec = spec
    elif color_map is not None and os.path.exists(color_map.source):
        # A map the dataset declares is its spec; a built-in palette only decodes colours.
        discovery.spec = LabelSpec(classes=color_map.names, sources=(_source_name(color_map),))
    discovery.color_map = color_map
    return discovery


def _source_name(color_map: ColorMap) -> str:
    return display_path(color_map.source) if os.path.exists(color_map.source) else color_map.source


def _declared_color_map(options: AuditOptions, directories: list[str], discovery: Discovery,
                        default: ColorMap | None = None) -> ColorMap | None:
    if options.color_map:
        try:
            return load_color_map(options.color_map)
        except ReadError as exc:
            discovery.findings.append(UNREADABLE.finding(display_path(options.color_map), f"colour map: {exc}"))
            return default
    color_map, problem = find_color_map(directories)
    if problem:
        discovery.findings.append(UNREADABLE.finding(None, f"colour map {problem}"))
    return color_map or default


def _parents(path: str, root: str) -> list[str]:
    """``path``'s folder and its parents up to ``root`` (nearest first)."""
    folders = []
    current = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    root = os.path.abspath(root)
    while True:
        folders.append(current)
        if current == root or len(current) <= len(root):
            break
        current = os.path.dirname(current)
    if root not in folders:
        folders.append(root)
    return folders


def discover_paired(root: str, options: AuditOptions) -> Discovery:
    """Explicit ``--images DIR --masks DIR``, or sibling image/mask folders under ``root``."""
    discovery = Discovery("paired", root)
    image_root = options.images or _child(root, IMAGE_DIRS)
    mask_root = options.masks or _child(root, MASK_DIRS)
    assert mask_root is not None
    masks = _mask_files(mask_root, include_jpeg=True)
    images = [p for p in walk_files(image_root) if is_mask_candidate(p)] if image_root else []
    pairs, orphan_images, orphan_masks = _pair(images, masks, image_root or root, mask_root)
    if image_root and not options.lists:
        discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks))
    color_map = _declared_color_map(options, _parents(mask_root, root), discovery)
    return _finish(discovery, options, masks, pairs, color_map, [mask_root])


def _child(root: str, names) -> str | None:
    if not os.path.isdir(root):
        return None
    entries = {e.lower(): e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e))}
    for name in names:
        if name.lower() in entries:
            return os.path.join(root, entries[name.lower()])
    return None


def _detect_paired(root: str, options: AuditOptions) -> bool:
    if options.masks:
        return True
    return os.path.isdir(root) and _child(root, MASK_DIRS) is not None and _child(root, IMAGE_DIRS) is not None


discover_paired.detect = _detect_paired
register_layout("paired", 50, "image and mask folders paired by name")(discover_paired)


def discover_nnunet(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("nnunet", root)
    masks, pairs = [], {}
    for split in ("Tr", "Ts"):
        label_dir = os.path.join(root, f"labels{split}")
        image_dir = os.path.join(root, f"images{split}")
        if not os.path.isdir(label_dir):
            continue
        split_masks = _mask_files(label_dir, include_jpeg=True)
        images = _mask_files(image_dir, include_jpeg=True) if os.path.isdir(image_dir) else []
        found, orphan_images, orphan_masks = _pair(images, split_masks, image_dir, label_dir)
        if not options.lists and split == "Tr":
            discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks))
        masks.extend(split_masks)
        pairs.update(found)
    color_map = _declared_color_map(options, [root], discovery)
    return _finish(discovery, options, masks, pairs, color_map, [])


discover_nnunet.detect = lambda root, options: os.path.isdir(os.path.join(root, "labelsTr"))
register_layout("nnunet", 20, "nnU-Net raw dataset (imagesTr/labelsTr, dataset.json)")(discover_nnunet)


def discover_voc_segmentation(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("voc-segmentation", root)
    mask_dir = os.path.join(root, "SegmentationClass")
    image_dir = os.path.join(root, "JPEGImages")
    masks = _mask_files(mask_dir, include_jpeg=True)
    images = _mask_files(image_dir, include_jpeg=True) if os.path.isdir(image_dir) else []
    pairs, _, orphan_masks = _pair(images, masks, image_dir, mask_dir)
    if images and not options.lists:
        discovery.findings.extend(unpaired_findings([], orphan_masks))
    color_map = _declared_color_map(options, [root], discovery, default=voc_color_map())
    return _finish(discovery, options, masks, pairs, color_map, [])


discover_voc_segmentation.detect = lambda root, options: os.path.isdir(os.path.join(root, "SegmentationClass"))
register_layout("voc-segmentation", 30, "Pascal VOC segmentation (SegmentationClass, JPEGImages)")(
    discover_voc_segmentation)


def _camvid_splits(root: str) -> list[tuple[str, str]]:
    if not os.path.isdir(root):
        return []
    names = set(os.listdir(root))
    return [(os.path.join(root, n[:-5]), os.path.join(root, n)) for n in sorted(names)
            if n.endswith("annot") and n[:-5] in names and os.path.isdir(os.path.join(root, n))]


def discover_camvid(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("camvid", root)
    masks, pairs = [], {}
    for image_dir, mask_dir in _camvid_splits(root):
        split_masks = _mask_files(mask_dir, include_jpeg=True)
        found, orphan_images, orphan_masks = _pair(_mask_files(image_dir, True), split_masks, image_dir, mask_dir)
        if not options.lists:
            discovery.findings.extend(unpaired_findings(orphan_images, orphan_masks))
        masks.extend(split_masks)
        pairs.update(found)
    color_map = _declared_color_map(options, [root], discovery, default=camvid_color_map())
    return _finish(discovery, options, masks, pairs, color_map, [])


discover_camvid.detect = lambda root, options: bool(_camvid_splits(root))
register_layout("camvid", 40, "CamVid (train/trainannot, val/valannot...)")(discover_camvid)


def discover_cityscapes(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("cityscapes", root)
    gt = os.path.join(root, "gtFine")
    files = walk_files(gt)
    masks = [p for p in files if p.endswith("_labelTrainIds.png")] or [
        p for p in files if p.endswith("_labelIds.png")]
    if not masks:
        discovery.notes.append("gtFine holds no *_labelIds.png / *_labelTrainIds.png class masks "
                               "(instance and colour masks are not class masks)")
    image_dir = os.path.join(root, "leftImg8bit")
    images = [p for p in walk_files(image_dir) if p.endswith("_leftImg8bit.png")]
    pairs, _, orphan_masks = _pair(images, masks, image_dir, gt)
    if images and not options.lists:
        discovery.findings.extend(unpaired_findings([], orphan_masks))
    color_map = _declared_color_map(options, [root], discovery)
    return _finish(discovery, options, masks, pairs, color_map, [])


discover_cityscapes.detect = lambda root, options: os.path.isdir(os.path.join(root, "gtFine"))
register_layout("cityscapes", 35, "Cityscapes (gtFine/*_labelIds.png, leftImg8bit)")(discover_cityscapes)


def discover_masks(root: str, options: AuditOptions) -> Discovery:
    """Any file or folder of masks; in a folder, JPEGs are taken for images unless forced."""
    discovery = Discovery("masks", root)
    if os.path.isfile(root):
        color_map = _declared_color_map(options, [os.path.dirname(os.path.abspath(root))], discovery)
        discovery.tasks = [_task(root, options, color_map)]
        folder = os.path.dirname(os.path.abspath(root))
        spec, problems = _metadata_spec([folder, os.path.dirname(folder)])
        discovery.notes.extend(f"dataset metadata ignored: {p}" for p in problems)
        if spec.is_known:
            discovery.spec = spec
        discovery.color_map = color_map
        return discovery
    if not os.path.isdir(root):
        discovery.findings.append(UNREADABLE.finding(display_path(root), "no such file or directory"))
        return discovery
    forced = options.format == "masks"
    files = [p for p in walk_files(root, skip_dirs=IMAGE_DIRS) if is_mask_candidate(p)
             and (forced or mask_extension(p) not in JPEG_EXTENSIONS or _in_mask_dir(p, root))]
    pairs = _pair_by_role(files)
    images = set(pairs.values())
    masks = [p for p in files if p not in images]
    color_map = _declared_color_map(options, [root], discovery)
    return _finish(discovery, options, masks, pairs, color_map, [])


_ROLE_SPLIT = re.compile(r"([_\-.])")
IMAGE_TOKENS = frozenset({"data", "image", "images", "img", "volume", "vol", "input", "raw", "ct", "mri"})
LABEL_TOKENS = frozenset({"label", "labels", "mask", "masks", "seg", "gt", "annotation", "target"})


def _pair_by_role(files: list[str]) -> dict[str, str]:
    """Pairs (mask -> image) of files in one folder whose names differ only by a role word:
    ``HGG_val0_data_cropped.npy`` / ``HGG_val0_label_cropped.npy``, ``x_img.png`` / ``x_mask.png``."""
    slots: dict[tuple[str, str], dict[str, str]] = {}
    for path in files:
        parts = _ROLE_SPLIT.split(strip_extension(os.path.basename(path)))
        for i, part in enumerate(parts):
            role = "image" if part.lower() in IMAGE_TOKENS else "mask" if part.lower() in LABEL_TOKENS else None
            if role:
                key = "".join(parts[:i] + ["*"] + parts[i + 1:])
                slots.setdefault((os.path.dirname(path), key), {}).setdefault(role, path)
    return {slot["mask"]: slot["image"] for slot in slots.values() if "mask" in slot and "image" in slot}


def _in_mask_dir(path: str, root: str) -> bool:
    parts = os.path.relpath(path, root).split(os.sep)[:-1]
    names = {n.lower() for n in MASK_DIRS}
    return any(p.lower() in names for p in parts)


discover_masks.detect = lambda root, options: True
register_layout("masks", 100, "any folder or file of masks (PNG, TIFF, NPY, NPZ, HDF5, NIfTI)")(discover_masks)


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
