"""LG003 on annotation records: a file an annotation names does not exist: the image of a
VOC ``<filename>``, the images of a COCO file's ``file_name``s or a table's path column,
COCO panoptic PNGs.

The layout resolves the references (:class:`~labelguard.core.records.ImageReference`,
:class:`~labelguard.core.records.ImageTable`, :class:`~labelguard.core.records.NamedFiles`);
these rules judge them. Missing list entries are the list resolution's
(the ``entries`` rule below).
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import FixExample, define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord, EntriesRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import plural, verb
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml
from labelguard.rules._entries import LIST_HINT, entry_problem_findings
from labelguard.rules._objects import sample

MISSING = define(
    "LG003", "listed-file-missing", "error",
    summary="a file named by a list or annotation does not exist",
    why="""
The dataset opens the file named in the list, XML <filename>, COCO file_name or CSV row and
fails with FileNotFoundError, often only when that sample is drawn, hours into training.""",
    bad="train.txt names case0031_slice007 but train_npz/case0031_slice007.npz does not exist",
    good="every entry of train.txt resolves to a file under the data root",
    fix="Regenerate the list from the files on disk, or restore the missing files.",
    fix_safety="unsafe", fix_command="labelguard fix list",
    fix_examples=(FixExample(
        "train.txt naming c.png, which does not exist -> the entry removed (listed in the fix's result)",
        lambda: {"a.png": np.eye(4, dtype=np.uint8), "train.txt": "a.png\nc.png\n"},
        "clean_list", {"lists": ["train.txt"]}, lambda: {"train.txt": "a.png\n"},
        spec={"num_classes": 2}, options={"lists": ["train.txt"]}),),
)

EXAMPLES = (
    Example(True, "<filename> names b.jpg; only c.jpg exists",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="b.jpg"),
                     "JPEGImages/c.jpg": image()}),
    Example(False, "<filename> names the JPEG beside",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="a.jpg"),
                     "JPEGImages/a.jpg": image()}),
)

TABLE_EXAMPLES = (
    Example(True, "a COCO file_name whose image is not in images/train",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1)], images=((1, "a.jpg"), (2, "b.jpg"))), "images/train/a.jpg": image()}),
    Example(False, "every COCO file_name in images/train",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1)], images=((1, "a.jpg"), (2, "b.jpg"))),
                "images/train/a.jpg": image(), "images/train/b.jpg": image()}),
    Example(True, "a CSV row naming a missing image",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]), "a.jpg": image()}),
    Example(False, "every CSV row names an image beside the table",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]), "a.jpg": image(), "b.jpg": image()}),
)

PANOPTIC_EXAMPLES = (
    Example(True, "a COCO panoptic annotation whose PNG is not in annotations/panoptic_train",
            lambda: {"annotations/panoptic_train.json": coco_json([
                {"id": 1, "image_id": 1, "file_name": "a.png",
                 "segments_info": [{"id": 3, "category_id": 1, "bbox": [1, 1, 4, 4], "iscrowd": 0, "area": 16}]}]),
                "annotations/panoptic_train/b.png": image()}),
    Example(False, "a COCO panoptic annotation with its PNG",
            lambda: {"annotations/panoptic_train.json": coco_json([
                {"id": 1, "image_id": 1, "file_name": "a.png",
                 "segments_info": [{"id": 3, "category_id": 1, "bbox": [1, 1, 4, 4], "iscrowd": 0, "area": 16}]}]),
                "annotations/panoptic_train/a.png": image()}),
)


@rule(MISSING, "annotation", EXAMPLES, files_only=True)
def named_image_missing(record: AnnotationRecord, spec):
    image = record.image
    if image is None or not image.written or image.found or image.escapes:
        return ()
    paired = (f"; the image by this file's name is {image.paired}" if image.paired
              else f", and no image named {image.expected} exists either" if image.expected else "")
    return (MISSING.finding(
        record.display,
        f"{image.field} names {image.written!r}, which does not exist in {image.folder}{paired}",
        hint=f"Correct {image.field} (loaders that read it fail), or restore the image.",
        filename=image.written, image=image.paired,
    ),)


def _missing_of(count: int, total: int, what: str) -> str:
    """"1,200 of 1,500 image files named in this file do not exist", "the only file named in
    this file does not exist"."""
    if total == 1:
        return f"the only {what} named in this file does not exist"
    return f"{count:,} of {plural(total, what)} named in this file {verb(count, 'does')} not exist"


@rule(MISSING, "annotation", TABLE_EXAMPLES, reads="images", files_only=True)
def image_files_missing(record: AnnotationRecord, spec):
    """LG003 for the image files a file of many images names (COCO ``file_name``, a table's
    paths) that do not exist under the folders they were looked for in."""
    images = record.images
    if images is None or not images.missing:
        return ()
    missing = [f"{images.where(row)} {images.names[row]!r}" for row in images.missing]
    shown_folders = ", ".join(images.folders)
    every = "" if len(missing) < images.looked_for else \
        " (is the image folder elsewhere? pass --images DIR)" if images.looked_for == 1 else \
        " (none of them: is the image folder elsewhere? pass --images DIR)"
    return (MISSING.finding(
        record.display,
        f"{_missing_of(len(missing), images.looked_for, images.noun)} under "
        f"{shown_folders}{every}: {sample(missing, len(missing))}",
        hint="Restore the files, point --images at the image folder, or remove the entries that name them.",
        missing=missing[:PLACES_KEPT], count=len(missing), image_dirs=list(images.folders),
        **{f"{images.unit}s": [images.place(row) for row in images.missing[:PLACES_KEPT]]},
    ),)


@rule(MISSING, "annotation", PANOPTIC_EXAMPLES, reads="named_files", files_only=True)
def named_files_missing(record: AnnotationRecord, spec):
    """LG003 for other files an annotation file names (COCO panoptic PNGs) that do not exist."""
    named = record.named_files
    if named is None or not named.missing:
        return ()
    count = len(named.missing)
    return (MISSING.finding(
        record.display,
        f"{_missing_of(count, named.total, named.noun)} under {named.folder}: "
        f"{sample(named.missing, count)}",
        hint=f"Restore the {named.noun}s, or remove their annotations.",
        missing=named.missing[:PLACES_KEPT], count=count,
    ),)


ENTRIES_EXAMPLES = (
    Example(True, "a list naming c.png, which does not exist",
            lambda: {"a.png": np.eye(4, dtype=np.uint8), "train.txt": "a.png\nc.png\n"},
            spec={"num_classes": 2}, options={"lists": ("train.txt",)}),
    Example(False, "a list naming a.png, which exists",
            lambda: {"a.png": np.eye(4, dtype=np.uint8), "train.txt": "a.png\n"},
            spec={"num_classes": 2}, options={"lists": ("train.txt",)}),
)


@rule(MISSING, "entries", ENTRIES_EXAMPLES)
def entries_naming_no_file(record: EntriesRecord, spec):
    """An entry of a list (or a dataset file's field) that names no file under the root."""
    return entry_problem_findings(MISSING, record, record.missing, f"does not exist under {record.root}",
                                  f"name no file under {record.root}", record.hint or LIST_HINT)
