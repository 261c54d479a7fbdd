"""The processor of annotation files: the task's reader makes the record, the rules judge it.

:func:`process_annotation` is the per-file work of every annotation format, given the
format's reader (a module-level function ``FileTask -> AnnotationRecord`` that raises
:class:`ReadError` when the file cannot be read at all): the reader makes the record and the
``annotation`` rules of :mod:`labelguard.core.rules` run on it, each on its own. A layout's
processor (``process_voc``, ``process_yolo``, ``process_coco``, ``process_table``,
``process_class_folder``) is a two-line binding of its reader to these functions, so that
tasks stay picklable by name and editors find their format by processor.

The processor also counts the record into the summary: a file of one image is one sample;
a file of many (a COCO file, a table) counts its images and, per class, the images holding
it; a class folder its images.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

import numpy as np

from labelguard.rules._unread import not_read
from labelguard.core.findings import Finding
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import run_rules
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import EXAMPLES_KEPT, Summary
from labelguard.core.tasks import FileResult, FileTask
from labelguard.readers.base import ReadError


Reader = Callable[[FileTask], AnnotationRecord]


def process_annotation(task: FileTask, spec: LabelSpec, reader: Reader, kind: str) -> FileResult:
    """Read one annotation file into its record and run the annotation rules on it."""
    result = FileResult(task.display)
    record = check_annotation(task, spec, reader, kind, result.findings, result.summary, result.errors)
    if record is None:
        return result
    if record.folder is not None:
        _count_folder(result.summary, task.display, record)
    elif record.images is not None:
        _count_images(result.summary, task.display, record, spec)
    elif len(record.labels):
        result.summary.add_classes(task.display, Counter(class_key(label, spec) for label in record.labels))
    return result


def process_annotation_batch(tasks: Sequence[FileTask], spec: LabelSpec, reader: Reader,
                             kind: str) -> FileResult:
    """:func:`process_annotation` of several files, merged into one result as the engine
    merges per-file results (equal findings, equal summary), without a summary per file.

    A layout exposes it as its processor's ``batch`` for an engine that hands a whole batch
    of tasks to it: at some 40 microseconds a VOC file, a per-file summary and its merge
    would be a third of the work. It serves formats of one image per file (records without
    ``images`` or ``folder``); files of many images are large and go one by one."""
    result = FileResult(tasks[0].display if tasks else "", files=len(tasks))
    summary = result.summary
    objects: dict[str, int] = {}
    images: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for task in tasks:
        record = check_annotation(task, spec, reader, kind, result.findings, summary, result.errors)
        if record is None:
            continue
        keys = [label if type(label) is str else class_key(label, spec) for label in record.labels]
        for key in keys:
            objects[key] = objects.get(key, 0) + 1
        for key in dict.fromkeys(keys):
            images[key] = images.get(key, 0) + 1
            examples.setdefault(key, []).append(task.display)
    summary.class_objects.update(objects)
    summary.class_images.update(images)
    summary.class_examples.update((key, sorted(paths)[:EXAMPLES_KEPT]) for key, paths in examples.items())
    return result


def check_annotation(task: FileTask, spec: LabelSpec, reader: Reader, kind: str, findings: list[Finding],
                     summary: Summary, errors: list[str]) -> AnnotationRecord | None:
    """Read one annotation file, run the rules on it and count it in ``summary`` as ``kind``;
    the record, or None when the file cannot be read at all (LG001)."""
    summary.kinds[kind] += 1
    try:
        record = reader(task)
    except ReadError as exc:
        summary.unreadable += 1
        findings.append(not_read(task.display, exc))
        return None
    summary.samples += 1 if record.images is None and record.folder is None else 0
    run_rules("annotation", record, spec, task.display, findings, errors)
    for image in record.damaged_images or ():
        if image.unread:
            # An image that the check of its bytes could not read at all (a folder, a named
            # pipe, no permission): LG001, as for a mask's paired image.
            findings.append(not_read(image.display, ReadError(image.problem)))
    return record


def _count_folder(summary: Summary, display: str, record: AnnotationRecord) -> None:
    """A class folder: each image is a sample and an object of the folder's class."""
    folder = record.folder
    assert folder is not None  # not a user mistake: called only for a class folder's record
    summary.unreadable += len(folder.unreadable)
    if not folder.images:
        return
    summary.samples += folder.images
    summary.class_objects[folder.name] += folder.images
    summary.class_images[folder.name] += folder.images
    summary.class_examples.setdefault(folder.name, []).append(display)


def _count_images(summary: Summary, display: str, record: AnnotationRecord, spec: LabelSpec) -> None:
    """A file of many images: its images are the samples; per class, its objects and the
    images holding them (the categories of a file's own class table by name, undeclared
    ids left out: they are reported, not counted)."""
    assert record.images is not None  # not a user mistake: called only for a file of many images
    summary.samples += len(record.images)
    images_of = record.image_written if record.image_written is not None else record.image_of
    if record.classes is not None:
        objects, images = _count_categories(record, np.asarray(images_of))
    else:
        objects, images = _count_labels(record, images_of, spec)
    summary.class_objects.update(objects)
    summary.class_images.update(images)
    for name in objects:
        summary.class_examples.setdefault(name, []).append(display)


def _count_categories(record: AnnotationRecord, images_of: np.ndarray) -> tuple[Counter, Counter]:
    assert record.classes is not None  # not a user mistake: called only for a file with its own class table
    names = record.classes.names
    labels = np.asarray(record.labels)
    objects: Counter = Counter()
    images: Counter = Counter()
    if not len(labels) or not names:
        return objects, images
    declared = np.isin(labels, np.fromiter(names, dtype=np.int64, count=len(names)))
    if record.labelled is not None:
        declared &= record.labelled
    rows = np.flatnonzero(declared)
    if not len(rows):
        return objects, images
    # One sort by (category, image): a category's objects are a run, its images the changes
    # of image within the run.
    order = np.lexsort((images_of[rows], labels[rows]))
    ordered, ordered_images = labels[rows][order], images_of[rows][order]
    first_of_pair = np.ones(len(order), bool)
    first_of_pair[1:] = (ordered[1:] != ordered[:-1]) | (ordered_images[1:] != ordered_images[:-1])
    values, starts = np.unique(ordered, return_index=True)
    counts = np.diff(np.append(starts, len(ordered)))
    image_counts = np.add.reduceat(first_of_pair.astype(np.int64), starts)
    for value, count, image_count in zip(values.tolist(), counts.tolist(), image_counts.tolist()):
        objects[names[value]] += count
        images[names[value]] += image_count
    return objects, images


def _count_labels(record: AnnotationRecord, images_of, spec: LabelSpec) -> tuple[Counter, Counter]:
    """Per class (:func:`class_key`: an id by the spec's name of it), its objects and the
    images holding them."""
    objects: Counter = Counter()
    holding: dict = {}
    for label, image in zip(record.labels, images_of):
        for name in label if isinstance(label, tuple) else (label,):
            key = class_key(name, spec)
            objects[key] += 1
            holding.setdefault(key, set()).add(image)
    return objects, Counter({key: len(rows) for key, rows in holding.items()})


def class_key(label: str | int, spec: LabelSpec) -> str:
    """The summary's key of a class: the name as written, or for an id the spec's name of it
    (the id as text when the spec names none)."""
    if isinstance(label, str):
        return label
    return spec.class_name(label) or str(label)
