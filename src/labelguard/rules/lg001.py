"""LG001 on records: a mask whose bytes are of another format than its name says, and the
objects or rows of an annotation that a loader cannot read.

The code itself (``file-unreadable``) is defined with the other file codes in
:mod:`labelguard.checks.files`; these rules are the mask and annotation sides of it (a file that cannot be read at all is
reported by the processor that tried to read it).
"""

from __future__ import annotations

import numpy as np

from labelguard.checks.files import UNREADABLE
from labelguard.checks.labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord, MaskSample
from labelguard.core.rules import Example, rule
from labelguard.core.text import plural, shorten
from labelguard.readers.masks import IMAGE_FORMATS, mask_extension
from labelguard.rules._examples import voc_xml

# Unreadable objects or rows listed one by one; the rest in one finding.
OBJECT_PROBLEMS_SHOWN = 20
_FORMAT_NAMES = {"zip": "NPZ (zip)", "nifti": "NIfTI", "riff": "WebP", "gzip": "gzip"}

EXAMPLES = (
    Example(True, "an NPY array saved under a .png name",
            lambda: {"masks/a.png": ("npy", np.zeros((4, 4), np.uint8))}),
    Example(False, "a PNG named .png", lambda: {"masks/a.png": np.zeros((4, 4), np.uint8)}),
)


@rule(UNREADABLE, "mask", EXAMPLES)
def renamed_container(sample: MaskSample, spec):
    """LG001 for a file whose bytes are of another format than its name says, where readers
    that go by the name (np.load, nibabel, PIL) cannot open it. A JPEG under an image name is
    LG202's; image formats under each other's names open in PIL."""
    record = sample.record
    if not record.renamed or record.lossy or (
            record.container in IMAGE_FORMATS and record.declared in IMAGE_FORMATS):
        return ()
    real = _FORMAT_NAMES.get(record.container, record.container.upper())
    return (UNREADABLE.finding(
        sample.display,
        f"{real} data in a file named {mask_extension(sample.display)}: loaders that pick the reader by the "
        "extension fail on it (labelguard read it by its content and checked its values)",
        hint="Rename the file to the extension of its real format, or re-export it in the format "
        "its name says.",
        container=record.container, declared=record.declared,
    ),)


ANNOTATION_EXAMPLES = (
    Example(True, "a VOC object whose <bndbox> holds text",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))]).replace(
                "<xmin>1</xmin>", "<xmin>one</xmin>")}),
    Example(False, "a VOC object with four numbers", lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))])}),
)


@rule(UNREADABLE, "annotation", ANNOTATION_EXAMPLES)
def unreadable_objects(record: AnnotationRecord, spec):
    """LG001 for each object or row of an annotation that a loader cannot read (the file's
    other objects were read and checked)."""
    findings = []
    shown = record.problems[:OBJECT_PROBLEMS_SHOWN]
    for place, problem in shown:
        findings.append(UNREADABLE.finding(
            record.display, f"{record.unit} {place} {problem}" if place else problem,
            hint=record.problem_hint, **{record.unit: place or None},
        ))
    extra = record.problems[OBJECT_PROBLEMS_SHOWN:]
    if extra:
        places = [p for p, _ in extra]
        findings.append(UNREADABLE.finding(
            record.display, f"{plural(len(extra), f'more unreadable {record.unit}')} "
            f"({record.unit}s {shorten(places, 10)})",
            hint=record.problem_hint, **{f"{record.unit}s": places[:PLACES_KEPT]}, count=len(extra),
        ))
    return findings
