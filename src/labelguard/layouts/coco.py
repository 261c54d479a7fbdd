"""COCO JSON datasets: the layouts that hold them and the per-file processor.

Layouts found: ``annotations/<flavour>_<split>.json`` beside ``images/<split>/`` (Datumaro,
the official ``train2017/`` folders, mmdet's ``<split>/``), Roboflow's
``<split>/_annotations.coco.json`` with the images beside it, a COCO file in the dataset's
root (Kaggle "relaxed" COCO), or a COCO file given as the path.

One file is one task: it is streamed once into columns (:mod:`labelguard.readers.coco`) and
every check runs vectorised over them.

Code choices:

* An annotation whose ``image_id`` is not in ``images`` is LG002 (an annotation without its
  image: the pairing inside the file is broken); LG003 is kept for files named in the JSON
  (``file_name``, panoptic PNGs) that do not exist on disk.
* A ``category_id`` missing from ``categories`` is LG101 (a class the dataset does not
  declare). Category ids are not class indices: they are checked against ``num_classes``
  (LG102) only when a number of classes is given, and the finding then carries the
  contiguous ``category_index_map`` (id -> index, ids sorted as torchvision, detectron2 and
  mmdet build it).
* Wrong JSON types are LG001 naming the element; the rest of the file is still checked.
"""

from __future__ import annotations

import os
import re
from collections import Counter

import numpy as np

from labelguard.checks.boxes import BAD_BOX, DUPLICATE_BOX
from labelguard.checks.classes import ID_TOO_LARGE, UNKNOWN_CLASS
from labelguard.checks.files import ESCAPES_ROOT, MISSING, UNPAIRED, UNREADABLE
from labelguard.checks.labels import PLACES_KEPT, id_findings, name_findings
from labelguard.checks.masks import GEOMETRY
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import LISTED, SHOWN, noun, plural, shorten, verb
from labelguard.layouts.base import AuditOptions, Discovery, display_path, register_layout
from labelguard.layouts.pairing import inside_root
from labelguard.layouts.classification import FileLookup, escapes
from labelguard.readers.base import ReadError
from labelguard.readers.coco import CAPTION, NO_ID, CocoRecord, looks_like_coco, peek_categories, read_coco

# Boxes may pass the image border by this many pixels (float rounding in exporters).
BORDER_TOLERANCE = 1.0
ANNOTATION_DIRS = ("annotations", "annotation", "Annotations")
COCO_NAME = re.compile(r"^(instances|person_keypoints|captions|panoptic|stuff|image_info)_.+\.json$"
                       r"|^_annotations\.coco\.json$")


# ---- per-file processor ---------------------------------------------------------------------

def process_coco(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one COCO file and run every COCO check on it."""
    result = FileResult(task.display)
    result.summary.kinds["coco"] += 1
    try:
        record = read_coco(task.path)
    except ReadError as exc:
        result.summary.unreadable += 1
        result.findings.append(UNREADABLE.finding(task.display, str(exc)))
        return result
    display = task.display
    findings = result.findings
    findings.extend(_type_findings(display, record))
    image_rows, known_image = _image_rows(record)
    findings.extend(_duplicate_image_findings(display, record))
    findings.extend(_dangling_findings(display, record, known_image))
    findings.extend(_category_findings(task, record, spec))
    findings.extend(_box_findings(display, record, image_rows, known_image))
    findings.extend(_duplicate_findings(display, record))
    findings.extend(_rle_findings(display, record, image_rows, known_image))
    bases = task.option("image_dirs") or ()
    if bases:
        findings.extend(_file_findings(display, record, bases, task.option("root")))
    panoptic = task.option("panoptic_dir")
    if panoptic:
        findings.extend(_panoptic_findings(display, record, panoptic))
    _count_classes(result, record)
    return result


def _sample(items: list[str], count: int) -> str:
    return shorten(items, SHOWN, total=count, sep="; ")


def _type_findings(display: str, record: CocoRecord) -> list[Finding]:
    findings = []
    for problem in record.problems.values():
        findings.append(UNREADABLE.finding(
            display,
            f"{problem.what} in {plural(problem.count, 'place')}: {_sample(problem.details, problem.count)}; "
            "the rest of the file is still checked",
            hint="Fix the types: ids and category_id are integers, bbox is [x, y, width, height] "
            "numbers, segmentation is polygons (lists of x, y numbers) or RLE {size, counts}. "
            "Training code that meets these elements raises (KeyError, TypeError) or drops them.",
            problem=problem.what, places=problem.places, count=problem.count,
        ))
    return findings


def _image_rows(record: CocoRecord) -> tuple[np.ndarray, np.ndarray]:
    """For every annotation, its row in ``images`` (-1 when its image id is unknown)."""
    ids = record.image_ids
    n = len(record.image_of)
    if not len(ids) or not n:
        return np.full(n, -1, np.int64), np.zeros(n, bool)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    at = np.searchsorted(sorted_ids, record.image_of)
    at_clipped = np.minimum(at, len(ids) - 1)
    known = (sorted_ids[at_clipped] == record.image_of) & (record.image_of != NO_ID)
    rows = np.where(known, order[at_clipped], -1)
    return rows, known


def _duplicate_image_findings(display: str, record: CocoRecord) -> list[Finding]:
    ids = record.image_ids
    valid = np.flatnonzero(ids != NO_ID)
    if len(valid) < 2:
        return []
    values, first, counts = np.unique(ids[valid], return_index=True, return_counts=True)
    repeated = np.flatnonzero(counts > 1)
    if not len(repeated):
        return []
    examples = []
    for k in repeated[:SHOWN]:
        rows = valid[np.flatnonzero(ids[valid] == values[k])]
        examples.append(f"id {record.image_name(int(values[k]))} in "
                        + ", ".join(f"images[{int(r)}] ({record.file_names[int(r)] or 'no file_name'})"
                                    for r in rows[:3]))
    return [UNREADABLE.finding(
        display,
        f"{plural(len(repeated), 'image id')} {verb(len(repeated), 'is')} used by more than one image: "
        f"{_sample(examples, len(repeated))}; annotations of such an id attach to one image only",
        hint="Give every image a unique id (pycocotools keeps the last image of a repeated id).",
        ids=[record.image_name(int(values[k])) for k in repeated[:PLACES_KEPT]], count=int(len(repeated)),
    )]


def _dangling_findings(display: str, record: CocoRecord, known: np.ndarray) -> list[Finding]:
    rows = np.flatnonzero(~known & (record.image_of != NO_ID))
    if not len(rows):
        return []
    missing_ids = sorted({record.image_name(int(v)) for v in np.unique(record.image_of[rows])[:PLACES_KEPT]})
    examples = [f"{record.place(int(r))} has image_id {record.image_name(int(record.image_of[r]))}"
                for r in rows[:SHOWN]]
    return [UNPAIRED.finding(
        display,
        f"{plural(len(rows), 'annotation')} {verb(len(rows), 'refers')} to image ids that are not in "
        f"'images' ({plural(len(record.image_ids), 'image')}): "
        f"{_sample(examples, len(rows))}",
        hint="Add the missing images to 'images' or remove these annotations; pycocotools raises "
        "KeyError when it meets them.",
        side="annotation", image_ids=missing_ids, places=[record.place(int(r)) for r in rows[:PLACES_KEPT]],
        count=int(len(rows)),
    )]


def category_index_map(categories: dict[int, str]) -> dict[int, int]:
    """The contiguous id -> index map training code builds from COCO category ids (sorted)."""
    return {cat_id: index for index, cat_id in enumerate(sorted(categories))}


def _short_map(mapping: dict[int, int], limit: int = 6) -> str:
    items = list(mapping.items())
    if len(items) <= limit:
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    head = ", ".join(f"{k}: {v}" for k, v in items[: limit - 2])
    tail = ", ".join(f"{k}: {v}" for k, v in items[-2:])
    return "{" + head + ", ..., " + tail + "}"


def _category_findings(task: FileTask, record: CocoRecord, spec: LabelSpec) -> list[Finding]:
    display = task.display
    cats = record.category_of
    labelled = np.flatnonzero((cats != NO_ID) & (cats != CAPTION))
    if not len(labelled):
        return []
    findings = []
    declared = np.fromiter(record.categories, dtype=np.int64, count=len(record.categories))
    in_file = np.isin(cats[labelled], declared)
    unknown_rows = labelled[~in_file]
    if len(unknown_rows):
        findings.extend(_undeclared_findings(display, record, unknown_rows))
    known_rows = labelled[in_file]
    if not len(known_rows):
        return findings
    names_by_id = record.categories
    # Names: against the user's classes, else against the reference file of this flavour.
    discovered = task.option("discovered_classes")
    user_classes = spec.classes if spec.classes is not None and tuple(spec.classes) != discovered else None
    reference = task.option("reference")
    if user_classes is not None:
        allowed = frozenset(user_classes)
        bad_ids = [c for c in np.unique(cats[known_rows]).tolist() if names_by_id[c] not in allowed]
        if bad_ids:
            rows = known_rows[np.isin(cats[known_rows], bad_ids)]
            findings.extend(name_findings(
                display, [names_by_id[int(c)] for c in cats[rows]], spec,
                unit="annotation", places=(record.ann_index[rows] + 1).tolist()))
    elif reference is not None and reference[0] != task.path:
        findings.extend(_reference_findings(display, record, known_rows, reference))
    # Ids: against num_classes or explicit values, only when given (COCO ids are not indices).
    if spec.num_classes is not None or spec.values is not None:
        findings.extend(_id_range_findings(display, record, known_rows, spec))
    return findings


def _undeclared_findings(display: str, record: CocoRecord, rows: np.ndarray) -> list[Finding]:
    findings = []
    declared = sorted(record.categories)
    n = len(declared)
    if n:
        among = f"the {plural(n, 'category')} of this file (ids {_id_span(declared)})"
    else:
        among = "the categories of this file: it declares none"
    values, counts = np.unique(record.category_of[rows], return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist()):
        where = rows[record.category_of[rows] == value]
        places = [record.place(int(r)) for r in where[:PLACES_KEPT]]
        findings.append(UNKNOWN_CLASS.finding(
            display,
            f"category id {value} is not among {among}: {plural(count, 'annotation')} "
            f"({_sample(places, count)})",
            hint=f"Add category {value} to 'categories', or fix or remove these annotations; code that "
            "maps category ids through 'categories' raises KeyError on them.",
            **{"class": str(value)}, category_id=value, suggestions=[], unit="annotation",
            places=(record.ann_index[where[:PLACES_KEPT]] + 1).tolist(), annotations=places,
            count=count, declared_ids=declared[:PLACES_KEPT],
        ))
    return findings


def _id_span(ids: list[int]) -> str:
    """Sorted ids as runs ("80..82, 84..90"), or a range less its gaps ("1..90 except 12, 26")."""
    runs: list[list[int]] = []
    for value in ids:
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    parts = [f"{a}..{b}" if b > a + 1 else (f"{a}, {b}" if b > a else str(a)) for a, b in runs]
    if len(runs) <= 4:
        return ", ".join(parts)
    gaps = [v for v in range(ids[0], ids[-1] + 1) if v not in set(ids)] if ids[-1] - ids[0] < 100000 else []
    if gaps and len(gaps) <= 12:
        return f"{ids[0]}..{ids[-1]} except {', '.join(str(g) for g in gaps)}"
    return ", ".join(parts[:4]) + f", ... {ids[-1]}"


def _reference_findings(display: str, record: CocoRecord, rows: np.ndarray,
                        reference: tuple) -> list[Finding]:
    source, pairs, shown_source = reference
    ref_names = [name for _, name in pairs]
    allowed = frozenset(ref_names)
    ref_spec = LabelSpec(classes=tuple(ref_names))
    findings = []
    values, counts = np.unique(record.category_of[rows], return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist()):
        name = record.categories[value]
        if name in allowed:
            continue
        where = rows[record.category_of[rows] == value]
        places = [record.place(int(r)) for r in where[:PLACES_KEPT]]
        suggestions = ref_spec.closest_classes(name)
        guess = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        findings.append(UNKNOWN_CLASS.finding(
            display,
            f"category {name!r} (id {value}) is not among the {len(ref_names)} categories of "
            f"{shown_source}: {plural(count, 'annotation')} ({_sample(places, count)}){guess}",
            hint="Use the same categories in every split (training code builds its class list from "
            "one file), or rename the category.",
            **{"class": name}, category_id=value, suggestions=suggestions, unit="annotation",
            places=(record.ann_index[where[:PLACES_KEPT]] + 1).tolist(), annotations=places, count=count,
            reference=shown_source,
        ))
    return findings


def _id_range_findings(display: str, record: CocoRecord, rows: np.ndarray, spec: LabelSpec) -> list[Finding]:
    cats = record.category_of[rows]
    negative = rows[cats < 0]
    findings = []
    if len(negative):
        findings.extend(f for f in id_findings(
            display, record.category_of[negative].tolist(), spec, unit="annotation",
            places=(record.ann_index[negative] + 1).tolist()) if f.code == "LG103")
    allowed = spec.allowed_values()
    if allowed is None:
        return findings
    legal = np.fromiter(sorted(allowed | set(spec.ignore)), dtype=np.int64)
    over = rows[(cats >= 0) & ~np.isin(cats, legal)]
    if not len(over):
        return findings
    mapping = category_index_map(record.categories)
    ids = np.unique(record.category_of[over]).tolist()
    n_cats = len(record.categories)
    n = spec.effective_num_classes
    listing = _id_span(ids)
    where = [record.place(int(r)) for r in over[:PLACES_KEPT]]
    if spec.is_contiguous():
        head = (f"{noun(len(ids), 'category id')} {listing} {verb(len(ids), 'is')} "
                f">= num_classes={n} in {plural(len(over), 'annotation')}")
        if n_cats <= n:
            tail = (f": the {n_cats} category ids ({_id_span(sorted(record.categories))}) are not "
                    f"contiguous; map them to indices with {_short_map(mapping)} "
                    "(category_index_map)")
            hint = ("Build the contiguous map in the dataset (as torchvision/detectron2 do: "
                    "{id: i for i, id in enumerate(sorted(ids))}), shifted by one if index 0 is "
                    f"background; or set num_classes to {max(record.categories) + 1}.")
        else:
            tail = (f": this file declares {n_cats} categories, more than num_classes={n} even after "
                    f"mapping them to contiguous indices {_short_map(mapping)} (category_index_map)")
            hint = f"Set num_classes to {n_cats} (or {n_cats + 1} with a background class), or drop categories."
    else:
        head = f"{noun(len(ids), 'category id')} {listing} not among the allowed values"
        tail = f" {shorten(sorted(allowed), LISTED)} in {plural(len(over), 'annotation')}"
        hint = "Remap the category ids to the spec's values (category_index_map gives contiguous indices)."
    findings.append(ID_TOO_LARGE.finding(
        display, f"{head}{tail} ({_sample(where, len(over))})", hint=hint,
        ids=ids, num_classes=n if spec.is_contiguous() else None,
        allowed=None if spec.is_contiguous() else sorted(allowed),
        unit="annotation", places=(record.ann_index[over[:PLACES_KEPT]] + 1).tolist(),
        annotations=where, count=int(len(over)),
        category_index_map={str(k): v for k, v in mapping.items()},
        category_names={str(k): v for k, v in record.categories.items()},
    ))
    return findings


def _box_findings(display: str, record: CocoRecord, image_rows: np.ndarray, known: np.ndarray) -> list[Finding]:
    boxes = record.boxes
    if not len(boxes):
        return []
    has_box = ~np.isnan(boxes).any(axis=1)
    x, y, w, h = boxes.T
    findings: list[Finding] = []
    with np.errstate(invalid="ignore"):
        degenerate = np.flatnonzero(has_box & ((w <= 0) | (h <= 0)))
    if len(degenerate):
        items = [f"{record.place(int(r))} bbox {_box_text(boxes[r])} on image "
                 f"{_image_text(record, image_rows[r])}" for r in degenerate[:PLACES_KEPT]]
        findings.append(BAD_BOX.finding(
            display,
            f"{len(degenerate)} box{'es have' if len(degenerate) > 1 else ' has'} a width or height <= 0: "
            f"{_sample(items, len(degenerate))}",
            hint="Fix or drop zero-size boxes: IoU and box-regression losses divide by the box size "
            "(log of 0 gives -inf).",
            problem="degenerate", annotations=items, count=int(len(degenerate)),
        ))
    small = record.small_polygons
    if small.count:
        findings.append(BAD_BOX.finding(
            display,
            f"{small.count} segmentation polygon{'s have' if small.count > 1 else ' has'} fewer than 3 points: "
            f"{_sample(small.details, small.count)}",
            hint="Drop these polygons or redraw them: pycocotools takes a 4-value polygon for a box, and a "
            "polygon of fewer than 3 points has no area.",
            problem="polygon", annotations=small.details, count=small.count,
        ))
    rows = image_rows.clip(min=0)
    width = np.where(known, record.widths[rows] if len(record.widths) else np.nan, np.nan)
    height = np.where(known, record.heights[rows] if len(record.heights) else np.nan, np.nan)
    tol = BORDER_TOLERANCE
    with np.errstate(invalid="ignore"):
        outside = has_box & (w > 0) & (h > 0) & (
            (x < -tol) | (y < -tol) | (x + w > width + tol) | (y + h > height + tol))
    outside_rows = np.flatnonzero(outside)
    if len(outside_rows):
        items = [f"{record.place(int(r))} bbox {_box_text(boxes[r])} ends at "
                 f"({_num(x[r] + w[r])}, {_num(y[r] + h[r])}) on image {_image_text(record, image_rows[r])} "
                 f"of {_num(width[r])}x{_num(height[r])}" for r in outside_rows[:PLACES_KEPT]]
        findings.append(BAD_BOX.finding(
            display,
            f"{len(outside_rows)} box{'es lie' if len(outside_rows) > 1 else ' lies'} outside "
            f"{'their images' if len(outside_rows) > 1 else 'its image'}: {_sample(items, len(outside_rows))}",
            hint="Clip the boxes to the image, or fix the image width/height in 'images'; "
            "bbox is [x, y, width, height] in pixels (not corners, not normalised).",
            problem="outside", annotations=items, count=int(len(outside_rows)),
            tolerance=BORDER_TOLERANCE,
        ))
    return findings


def _num(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.4g}"


def _box_text(box: np.ndarray) -> str:
    return "[" + ", ".join(_num(v) for v in box) + "]"


def _image_text(record: CocoRecord, row: int) -> str:
    row = int(row)
    if row < 0:
        return "(unknown)"
    name = record.file_names[row]
    return f"{record.image_name(int(record.image_ids[row]))}" + (f" ({name})" if name else "")


def _duplicate_findings(display: str, record: CocoRecord) -> list[Finding]:
    boxes = record.boxes
    if len(boxes) < 2:
        return []
    rows = np.flatnonzero(~np.isnan(boxes).any(axis=1) & (record.category_of != NO_ID))
    if len(rows) < 2:
        return []
    columns = [record.image_of[rows], record.category_of[rows]]
    columns += [np.ascontiguousarray(boxes[rows, k]).view(np.int64) for k in range(4)]
    # One sort on a hash of the six columns, then an exact comparison of neighbours.
    mixed = np.zeros(len(rows), np.uint64)
    with np.errstate(over="ignore"):
        for column in columns:
            mixed = (mixed ^ column.view(np.uint64)) * np.uint64(0x100000001B3)
            mixed ^= mixed >> np.uint64(29)
    order = np.argsort(mixed, kind="stable")
    same = mixed[order[1:]] == mixed[order[:-1]]
    for column in columns:
        ordered = column[order]
        same &= ordered[1:] == ordered[:-1]
    repeats = rows[order[1:][same]]
    firsts = rows[order[:-1][same]]
    if not len(repeats):
        return []
    pairs = sorted(zip(repeats.tolist(), firsts.tolist()))
    items = [f"{record.place(r)} repeats {record.place(f)} (category {int(record.category_of[r])}, "
             f"bbox {_box_text(boxes[r])})" for r, f in pairs[:PLACES_KEPT]]
    return [DUPLICATE_BOX.finding(
        display,
        f"{len(repeats)} annotation{'s repeat' if len(repeats) > 1 else ' repeats'} another one of the same "
        f"image, category and bbox: {_sample(items, len(repeats))}",
        hint="Remove the repeated annotations (a double export); they double the object's weight in the loss.",
        annotations=items, count=int(len(repeats)),
    )]


def _rle_findings(display: str, record: CocoRecord, image_rows: np.ndarray, known: np.ndarray) -> list[Finding]:
    if not len(record.rle_sizes) or not len(record.widths):
        return []
    rows, rle_h, rle_w = record.rle_sizes.T
    ok = known[rows]
    images = image_rows[rows].clip(min=0)
    height, width = record.heights[images], record.widths[images]
    with np.errstate(invalid="ignore"):
        wrong = np.flatnonzero(ok & ~np.isnan(width) & ((rle_h != height) | (rle_w != width)))
    if not len(wrong):
        return []
    items = [f"{record.place(int(rows[k]))} RLE size [{int(rle_h[k])}, {int(rle_w[k])}] on image "
             f"{_image_text(record, image_rows[rows[k]])} of height {_num(height[k])}, width {_num(width[k])}"
             for k in wrong[:PLACES_KEPT]]
    return [GEOMETRY.finding(
        display,
        f"{len(wrong)} RLE segmentation{'s differ' if len(wrong) > 1 else ' differs'} in size from "
        f"{'their images' if len(wrong) > 1 else 'its image'} (size is [height, width]): "
        f"{_sample(items, len(wrong))}",
        hint="Re-encode the masks at the image size; a transposed size means [width, height] was written.",
        annotations=items, count=int(len(wrong)),
    )]


def _file_findings(display: str, record: CocoRecord, bases: tuple[str, ...], root: str | None) -> list[Finding]:
    missing: list[str] = []
    escaping: list[str] = []
    root_abs = os.path.abspath(root) if root else None
    lookup = FileLookup(bases)
    for index, name in enumerate(record.file_names):
        if not name:
            continue
        if escapes(name):
            target = os.path.normpath(name if os.path.isabs(name) else os.path.join(bases[0], name))
            if root_abs is None or not inside_root(target, root_abs):
                escaping.append(f"images[{index}] {name!r}")
                continue
            if not os.path.isfile(target):
                missing.append(f"images[{index}] {name!r}")
        elif not lookup.exists(name):
            missing.append(f"images[{index}] {name!r}")
    findings = []
    shown_bases = ", ".join(display_path(b) for b in bases)
    if missing:
        total = len(record.file_names)
        every = " (none of them: is the image folder elsewhere? pass --images DIR)" if len(missing) == total else ""
        findings.append(MISSING.finding(
            display,
            f"{len(missing)} of {total} image files named in this file do not exist under {shown_bases}"
            f"{every}: {_sample(missing, len(missing))}",
            hint="Restore the images, point --images at the image folder, or remove these images "
            "and their annotations.",
            missing=missing[:PLACES_KEPT], count=len(missing), image_dirs=[display_path(b) for b in bases],
        ))
    if escaping:
        findings.append(ESCAPES_ROOT.finding(
            display,
            f"{len(escaping)} image file_name{'s point' if len(escaping) > 1 else ' points'} outside the "
            f"dataset root {display_path(root or bases[0])}: {_sample(escaping, len(escaping))}",
            hint="Write file_name relative to the image folder.",
            entries=escaping[:PLACES_KEPT], count=len(escaping),
        ))
    return findings


def _panoptic_findings(display: str, record: CocoRecord, folder: str) -> list[Finding]:
    missing = [f"annotations[{index}] {name!r}" for index, name in record.panoptic_files
               if not os.path.isfile(os.path.join(folder, name))]
    if not missing:
        return []
    return [MISSING.finding(
        display,
        f"{len(missing)} of {len(record.panoptic_files)} panoptic PNGs named in this file do not exist "
        f"under {display_path(folder)}: {_sample(missing, len(missing))}",
        hint="Restore the panoptic PNGs, or remove their annotations.",
        missing=missing[:PLACES_KEPT], count=len(missing),
    )]


def _count_classes(result: FileResult, record: CocoRecord) -> None:
    """Objects and images per category name (undeclared ids are reported, not counted)."""
    summary = result.summary
    summary.samples += len(record.image_ids)
    cats = record.category_of
    if not len(cats) or not record.categories:
        return
    declared = np.fromiter(record.categories, dtype=np.int64, count=len(record.categories))
    rows = np.flatnonzero(np.isin(cats, declared))
    if not len(rows):
        return
    values, objects = np.unique(cats[rows], return_counts=True)
    pairs = np.unique(np.stack([cats[rows], record.image_of[rows]]), axis=1)
    image_values, images = np.unique(pairs[0], return_counts=True)
    per_image = dict(zip(image_values.tolist(), images.tolist()))
    objects_by_name: Counter = Counter()
    images_by_name: Counter = Counter()
    for value, count in zip(values.tolist(), objects.tolist()):
        name = record.categories[value]
        objects_by_name[name] += count
        images_by_name[name] += per_image[value]
    summary.class_objects.update(objects_by_name)
    summary.class_images.update(images_by_name)
    for name in objects_by_name:
        summary.class_examples.setdefault(name, []).append(result.path)


# ---- discovery ---------------------------------------------------------------------------

def _json_files(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names
            if n.lower().endswith(".json") and not n.startswith(".") and os.path.isfile(os.path.join(folder, n))]


def coco_files(root: str) -> list[str]:
    """The COCO files of a dataset: the root itself, ``annotations/*.json``, ``*.json`` in the
    root, and Roboflow's ``<split>/_annotations.coco.json``."""
    if os.path.isfile(root):
        return [os.path.abspath(root)] if looks_like_coco(root) else []
    if not os.path.isdir(root):
        return []
    found: list[str] = []
    for name in ANNOTATION_DIRS:
        folder = os.path.join(root, name)
        if os.path.isdir(folder):
            found.extend(_json_files(folder))
            break
    found.extend(_json_files(root))
    for entry in sorted(os.listdir(root)):
        candidate = os.path.join(root, entry, "_annotations.coco.json")
        if os.path.isfile(candidate):
            found.append(candidate)
    unique = list(dict.fromkeys(os.path.abspath(p) for p in found))
    # A file named as COCO files are is kept even when broken: the audit reports why.
    return [p for p in unique if looks_like_coco(p) or COCO_NAME.match(os.path.basename(p))]


def flavour_and_split(path: str) -> tuple[str, str]:
    """('instances', 'train2017') for instances_train2017.json; Roboflow files split by folder."""
    stem = os.path.basename(path)[: -len(".json")]
    if stem.startswith("_annotations"):
        return stem, os.path.basename(os.path.dirname(path))
    match = re.match(r"^(.+?)_([^_]+)$", stem)
    if match and not stem.startswith("_"):
        return match.group(1), match.group(2)
    return stem, ""


def dataset_root(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(folder).lower() in {d.lower() for d in ANNOTATION_DIRS}:
        return os.path.dirname(folder)
    if os.path.basename(path) == "_annotations.coco.json":
        return os.path.dirname(folder)
    return folder


def image_dirs(path: str, options: AuditOptions) -> tuple[str, ...]:
    """Where the images of one COCO file are looked for: ``--images``, else the folders its
    layout puts them in (only those that exist)."""
    root = dataset_root(path)
    if options.images:
        return (os.path.abspath(options.images), root)
    _, split = flavour_and_split(path)
    here = os.path.dirname(os.path.abspath(path))
    candidates = []
    if split:
        candidates += [os.path.join(root, "images", split), os.path.join(root, split),
                       os.path.join(root, split, "images")]
    candidates += [os.path.join(root, "images"), here]
    if os.path.basename(here).lower() in {d.lower() for d in ANNOTATION_DIRS}:
        candidates.remove(here)
    found = [c for c in dict.fromkeys(candidates) if os.path.isdir(c) and _holds_files(c)]
    if found and root not in found:
        found.append(root)
    return tuple(found)


def _holds_files(folder: str) -> bool:
    """True when ``folder`` can hold the images: a file other than JSON, or a subfolder
    (labelme2coco writes ``file_name`` as ``JPEGImages/x.jpg`` beside annotations.json)."""
    try:
        with os.scandir(folder) as entries:
            return any((e.is_file() and not e.name.lower().endswith(".json"))
                       or (e.is_dir() and not e.name.startswith(".")) for e in entries)
    except OSError:
        return False


def discover_coco(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("coco", root)
    files = [os.path.abspath(root)] if os.path.isfile(root) else coco_files(root)
    if not files:
        shown = display_path(root)
        message = "no COCO JSON file found (annotations/*.json, *.json, <split>/_annotations.coco.json)"
        discovery.findings.append(UNREADABLE.finding(shown, message))
        return discovery
    peeked = {path: peek_categories(path) for path in files}
    references: dict[str, tuple] = {}
    for flavour in dict.fromkeys(flavour_and_split(p)[0] for p in files):
        members = [p for p in files if flavour_and_split(p)[0] == flavour and peeked[p]]
        members.sort(key=lambda p: (flavour_and_split(p)[1].lower() not in ("train", "train2017"),
                                    "train" not in p.lower(), p))
        if members:
            references[flavour] = (members[0], tuple(peeked[members[0]]), display_path(members[0]))
    primary = _primary(references)
    discovered = None
    if primary is not None:
        names = [name for _, name in sorted(peeked[primary])]
        discovered = tuple(names)
        discovery.spec = LabelSpec(classes=discovered, sources=(display_path(primary),))
        ids = sorted(cat_id for cat_id, _ in peeked[primary])
        if ids != list(range(len(ids))):
            discovery.notes.append(
                f"{display_path(primary)}: category ids {_id_span(ids)} are not class indices; training code "
                f"maps them to 0..{len(ids) - 1} with {_short_map(category_index_map(dict(peeked[primary])))}")
    for path in files:
        flavour, _ = flavour_and_split(path)
        dirs = image_dirs(path, options)
        if not dirs:
            discovery.notes.append(f"{display_path(path)}: no image folder found beside it; image files "
                                   "are not checked (pass --images DIR)")
        panoptic = os.path.join(os.path.dirname(path), os.path.basename(path)[: -len(".json")])
        extra: list[tuple[str, object]] = [
            ("image_dirs", dirs), ("root", dataset_root(path)),
            ("reference", references.get(flavour)), ("discovered_classes", discovered),
        ]
        if flavour.startswith("panoptic") and os.path.isdir(panoptic):
            extra.append(("panoptic_dir", panoptic))
        discovery.tasks.append(FileTask(
            processor=process_coco, path=path, display=display_path(path), options=tuple(extra)))
    return discovery


def _primary(references: dict) -> str | None:
    """The file whose categories are the dataset's spec: instances first, then any file
    with categories (captions and image_info files have none)."""
    order = ("instances", "_annotations.coco", "annotations", "person_keypoints", "panoptic", "stuff", "labels")
    for flavour in order:
        if flavour in references:
            return references[flavour][0]
    for reference in references.values():
        return reference[0]
    return None


def _detect_coco(root: str, options: AuditOptions) -> bool:
    return bool(coco_files(root))


discover_coco.detect = _detect_coco
register_layout("coco", 8, "COCO JSON (annotations/instances_*.json, Roboflow _annotations.coco.json)")(
    discover_coco)
