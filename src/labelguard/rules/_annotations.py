"""The processor of annotation files: the task's reader makes the record, the rules judge it.

:func:`process_annotation` is the per-file work of every annotation format, given the
format's reader (a module-level function ``FileTask -> AnnotationRecord`` that raises
:class:`ReadError` when the file cannot be read at all): the reader makes the record and the
``annotation`` rules of :mod:`labelguard.core.rules` run on it, each on its own. A layout's
processor (``process_voc``, ``process_yolo``) is a two-line binding of its reader to these
functions, so that tasks stay picklable by name and editors find their format by processor.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from labelguard.checks.files import UNREADABLE
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
    if record is not None and record.labels:
        result.summary.add_classes(task.display, Counter(class_key(label, spec) for label in record.labels))
    return result


def process_annotation_batch(tasks: Sequence[FileTask], spec: LabelSpec, reader: Reader,
                             kind: str) -> FileResult:
    """:func:`process_annotation` of several files, merged into one result as the engine
    merges per-file results (equal findings, equal summary), without a summary per file.

    A layout exposes it as its processor's ``batch`` for an engine that hands a whole batch
    of tasks to it: at some 40 microseconds a VOC file, a per-file summary and its merge
    would be a third of the work."""
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
        findings.append(UNREADABLE.finding(task.display, str(exc)))
        return None
    summary.samples += 1
    run_rules("annotation", record, spec, task.display, findings, errors)
    return record


def class_key(label: str | int, spec: LabelSpec) -> str:
    """The summary's key of a class: the name as written, or for an id the spec's name of it
    (the id as text when the spec names none)."""
    if isinstance(label, str):
        return label
    return spec.class_name(label) or str(label)
