"""One VOC XML as the annotation record the rules judge, and the audit's processor of it."""

from __future__ import annotations

import os
from functools import partial
from typing import Sequence

from labelguard.core import storage
from labelguard.core.paths import display_path, inside_root
from labelguard.core.records import AnnotationRecord, ImageReference
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts.pairing import strip_extension
from labelguard.readers.base import ReadError, read_head
from labelguard.readers.integrity import DEFAULT_CHECK_MODE, damaged_images
from labelguard.rules._annotations import process_annotation, process_annotation_batch

OBJECT_HINT = ("Fix or remove the object: a VOC loader reads <name> and the four <bndbox> numbers "
               "of every object and fails on this one.")


def voc_record(task: FileTask) -> AnnotationRecord:
    """One VOC XML as an annotation record: its named objects, their boxes inside ``<size>``,
    and its ``<filename>`` resolved in the image folder."""
    # Imported here: the XML parsers are some 3 ms of the start-up of audits that read no VOC file.
    from labelguard.layouts.voc.reader import read_voc_file

    annotation = read_voc_file(task.path)
    names, boxes = annotation.names, annotation.boxes
    places = None
    if annotation.problems:
        kept = [i for i, name in enumerate(names) if name is not None]
        places = [i + 1 for i in kept]
        names = [names[i] for i in kept]
        boxes = [boxes[i] for i in kept]
    sized = annotation.width > 0 and annotation.height > 0
    image_dir = task.option("image_dir")
    return AnnotationRecord(
        task.display, "voc", "object", names, places, boxes,  # type: ignore[arg-type]
        image_size=(annotation.width, annotation.height) if sized else None,
        problems=annotation.problems, problem_hint=OBJECT_HINT,
        image=_image_reference(task, annotation.filename, image_dir) if image_dir is not None else None,
        damaged_images=damaged_images([(task.image, task.image_display or task.image, None)],
                                      task.option("check_images", DEFAULT_CHECK_MODE)) if task.image else None,
    )


def process_voc(task: FileTask, spec: LabelSpec) -> FileResult:
    """Read one VOC XML and run the annotation rules on it."""
    return process_annotation(task, spec, voc_record, "voc")


def process_voc_batch(tasks: Sequence[FileTask], spec: LabelSpec) -> FileResult:
    """:func:`process_voc` of a batch of files, merged (see :func:`process_annotation_batch`)."""
    return process_annotation_batch(tasks, spec, voc_record, "voc")


process_voc.batch = process_voc_batch  # type: ignore[attr-defined]


def _image_reference(task: FileTask, filename: str | None, image_dir: str) -> ImageReference:
    """``<filename>`` resolved in ``image_dir``; the image paired by name is accepted for a
    ``<filename>`` that names it (with or without its extension)."""
    image = task.image
    filename = filename.strip() if filename else None
    shown = task.option("image_folder") or display_path(image_dir)
    reference = partial(ImageReference, "<filename>", filename, shown,
                        paired=task.image_display if image else None,
                        expected=f"{os.path.basename(strip_extension(task.path))}.*")
    if not filename:
        return reference()
    if image is not None and (image.endswith(os.sep + filename) or image == filename
                              or strip_extension(image).endswith(os.sep + filename)):
        return reference(found=True)
    target = os.path.join(image_dir, filename)
    if storage.isabs(filename) or not inside_root(target, image_dir):
        return reference(escapes=True)
    return reference(found=storage.isfile(target))


def is_voc_file(path: str, options: object = None) -> bool:
    """True when the file ``path`` begins as a VOC annotation does (an ``<annotation>`` element
    in its first 4 KiB), as the inventory tells VOC files apart."""
    try:
        return b"<annotation" in read_head(path, 4096)
    except (OSError, ReadError):
        return False
