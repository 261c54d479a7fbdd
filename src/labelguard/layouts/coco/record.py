"""One COCO file as the annotation record the rules judge, and the audit's processor of it."""

from __future__ import annotations


import numpy as np

from labelguard.core import storage
from labelguard.core.paths import display_path
from labelguard.core.records import AnnotationRecord, ClassTable, DamagedImage, ImageTable, NamedFiles
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts.coco.reader import CAPTION, NO_ID, CocoRecord, looks_like_coco, read_coco
from labelguard.layouts.references import resolve_names
from labelguard.readers.integrity import DEFAULT_CHECK_MODE, damaged_images
from labelguard.rules._annotations import process_annotation

# Boxes may pass the image border by this many pixels (float rounding in exporters).
BORDER_TOLERANCE = 1.0

TYPE_HINT = ("Fix the types: ids and category_id are integers, bbox is [x, y, width, height] numbers, "
             "segmentation is polygons (lists of x, y numbers) or RLE {size, counts}. Training code that "
             "meets these elements raises (KeyError, TypeError) or drops them.")

def coco_record(task: FileTask) -> AnnotationRecord:
    """One COCO file as an annotation record: its annotations (panoptic segments) by column,
    their category ids in the file's own class table, their boxes as corners, each one's row
    in the file's image table, and the image files and panoptic PNGs looked up on disk."""
    coco = read_coco(task.path)
    found: list[tuple[int, str]] = []
    images = _image_table(task, coco, found)
    categories = coco.category_of
    has_box = ~np.isnan(coco.boxes).any(axis=1)
    corners = coco.boxes.copy()
    corners[:, 2:] += corners[:, :2]
    # Duplicates: same image, category and bbox (bit for bit); columns viewed, not copied.
    box_bits = coco.boxes.view(np.int64)
    keys = (coco.image_of, categories, *(box_bits[:, k] for k in range(4)))
    return AnnotationRecord(
        task.display, "coco", "annotation", labels=categories, places=coco.ann_index + 1,
        describe_place=coco.place, labelled=(categories != NO_ID) & (categories != CAPTION),
        boxes=corners, box_style="xywh", border_tolerance=BORDER_TOLERANCE,
        keys=keys, compared=has_box & (categories != NO_ID),
        problem_groups=list(coco.problems.values()), problem_hint=TYPE_HINT,
        images=images, image_of=_image_rows(coco), image_written=coco.image_of,
        classes=_class_table(task, coco), mask_sizes=coco.rle_sizes, small_polygons=coco.small_polygons,
        named_files=_panoptic_files(task, coco), damaged_images=_damaged(task, found),
    )


def process_coco(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one COCO file and run the annotation rules on it."""
    return process_annotation(task, spec, coco_record, "coco")


# Its result is a function of the task, the spec, the file's bytes and the image folders'
# listings and paths it notes (labelguard.core.cache).
process_coco.cacheable = True  # type: ignore[attr-defined]


def _image_table(task: FileTask, coco: CocoRecord, found: list[tuple[int, str]]) -> ImageTable:
    """``images`` with their files looked up in the image folders of the task (when it has
    any), ``file_name``s that lead outside the dataset root told apart; ``found`` gets the
    (row, path) of each file found."""
    bases: tuple[str, ...] = task.option("image_dirs") or ()
    table = ImageTable(
        "image file_name", "image file", "image", "images[{}]", coco.file_names, ids=coco.image_ids,
        id_names={code: repr(text) for text, code in coco.string_ids.items()},
        widths=coco.widths, heights=coco.heights, looked_for=len(coco.file_names),
    )
    if bases:
        root = task.option("root") or bases[0]
        table.missing, table.escaping = resolve_names(coco.file_names, bases, storage.abspath(root), found)
        table.folders = tuple(display_path(b) for b in bases)
        table.root = display_path(root)
    return table


def _damaged(task: FileTask, found: list[tuple[int, str]]) -> list[DamagedImage] | None:
    """The images of the file's table found on disk that are truncated or cannot be decoded,
    each with its place in ``images``; None when images are not checked (or not looked for)."""
    if not task.option("image_dirs"):
        return None
    return damaged_images([(path, display_path(path), f"images[{row}]") for row, path in found],
                          task.option("check_images", DEFAULT_CHECK_MODE))


def _image_rows(coco: CocoRecord) -> np.ndarray:
    """For every annotation, its row in ``images``: -1 when its image id is not there, -2
    when it has none."""
    ids = coco.image_ids
    written = coco.image_of
    n = len(written)
    unknown = np.where(written == NO_ID, -2, -1)
    if not len(ids) or not n:
        return unknown
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    at = np.minimum(np.searchsorted(sorted_ids, written), len(ids) - 1)
    known = (sorted_ids[at] == written) & (written != NO_ID)
    return np.where(known, order[at], unknown)


def _class_table(task: FileTask, coco: CocoRecord) -> ClassTable:
    """The file's categories, with the reference file's names of the same flavour (unless
    this file is it) and the classes discovery took from the dataset."""
    reference = task.option("reference")
    if reference is None or reference[0] == task.path:
        return ClassTable(coco.categories, discovered=task.option("discovered_classes"))
    source, pairs, shown = reference
    return ClassTable(coco.categories, tuple(name for _, name in pairs), shown, task.option("discovered_classes"))


def _panoptic_files(task: FileTask, coco: CocoRecord) -> NamedFiles | None:
    """The panoptic PNGs the file names, looked up in the panoptic folder as image names are
    (one listing per folder; a name that leads outside the dataset is never looked at)."""
    folder = task.option("panoptic_dir")
    if not folder:
        return None
    names = [name for _, name in coco.panoptic_files]
    root = task.option("root") or folder
    missing, escaping = resolve_names(names, (folder,), storage.abspath(root))

    def shown(row: int) -> str:
        index, name = coco.panoptic_files[row]
        return f"annotations[{index}] {name!r}"

    return NamedFiles("panoptic PNG", display_path(folder), len(names), [shown(row) for row in missing],
                      [shown(row) for row in escaping], display_path(root))


def is_coco_file(path: str, options: object = None) -> bool:
    """True when the JSON file ``path`` holds COCO's top-level keys in its head."""
    try:
        return looks_like_coco(path)
    except OSError:
        return False
