"""One YOLO label file as the annotation record the rules judge, and the audit's processor of it."""

from __future__ import annotations

from typing import cast

from labelguard.core.records import AnnotationRecord, DamagedImage
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts.yolo.reader import read_label_file
from labelguard.readers.integrity import DEFAULT_CHECK_MODE, damaged_images
from labelguard.rules._annotations import process_annotation

ROW_HINT = ("Fix or delete the row: Ultralytics drops the whole image as corrupt, darknet reads "
            "garbage; the other rows of the file were checked.")


def yolo_record(task: FileTask) -> AnnotationRecord:
    """One YOLO label file as an annotation record: class ids by line, the values that must be
    fractions of the image (LG302), box sizes (LG301) and rows as duplicates compare them."""
    shape = task.option("keypoint_shape")
    labels = read_label_file(task.path, shape[0] * shape[1] if shape else None)
    keypoint_dims = shape[1] if shape else 2
    normalised = [_checked_values(values, kind, keypoint_dims) for values, kind in zip(labels.values, labels.kinds)]
    # A row outside [0, 1] is LG302's; its size is not judged again.
    extents = [None if kind == "polygon" or min(checked) < 0.0 or max(checked) > 1.0 else values[2:4]
               for values, kind, checked in zip(labels.values, labels.kinds, normalised)]
    return AnnotationRecord(
        task.display, "yolo", "row", list(labels.ids), list(labels.lines),
        # A box or pose row starts with 4 box values: values[2:4] is its (width, height).
        keys=list(zip(labels.ids, labels.values)), normalised=normalised,
        extents=cast("list[tuple[float, float] | None]", extents),
        problems=list(labels.problems), problem_hint=ROW_HINT,
        damaged_images=_damaged(task),
    )


def _damaged(task: FileTask) -> list[DamagedImage] | None:
    """The label file's image and the background images (without a label file) its task
    checks, those that are damaged; None when images are not checked."""
    mode = task.option("check_images", DEFAULT_CHECK_MODE)
    image = task.option("image_file")
    found = damaged_images([(image[0], image[1], None)] if image else [], mode)
    backgrounds = damaged_images([(path, shown, None) for path, shown in task.option("backgrounds", ())], mode,
                                 unnamed=True)
    return None if found is None or backgrounds is None else found + backgrounds


def process_yolo(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one label file and run the annotation rules on it."""
    return process_annotation(task, spec, yolo_record, "yolo")


def _checked_values(values: tuple[float, ...], kind: str, keypoint_dims: int) -> tuple[float, ...]:
    """The values that must lie in [0, 1]: all of them, except pose visibility flags."""
    if kind != "pose" or keypoint_dims != 3:
        return values
    keypoints = values[4:]
    return values[:4] + tuple(v for i, v in enumerate(keypoints) if i % 3 != 2)
