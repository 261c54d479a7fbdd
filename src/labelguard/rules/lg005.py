"""LG005 on annotation records: a file an annotation names lies outside its folder: the
image of a VOC ``<filename>``, the images of a COCO file or a table that lead outside the
dataset root (``../``, an absolute path).

The layout resolves the references with the one inside-root test
(:func:`labelguard.core.paths.inside_root`); these rules judge them.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord, EntriesRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import noun, verb
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, voc_xml
from labelguard.rules._entries import entry_problem_findings
from labelguard.rules._objects import sample

ESCAPES_ROOT = define(
    "LG005", "path-escapes-root", "error",
    summary="a path in a list or annotation escapes the dataset root",
    why="""
'../' or absolute paths make a dataset depend on one machine's layout (it breaks when the
data moves) and can read files that are not part of the dataset at all.""",
    bad="train.txt: ../../other_project/masks/0001.png  or  /home/someone/data/0001.png",
    good="train.txt: masks/0001.png (relative to the dataset root)",
    fix="Rewrite the entries relative to the dataset root, or copy the files into the dataset.",
)

EXAMPLES = (
    Example(True, "<filename> climbs out of JPEGImages",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="../../a.jpg"),
                     "JPEGImages/a.jpg": image()}),
    Example(False, "<filename> names a file inside JPEGImages",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="a.jpg"),
                     "JPEGImages/a.jpg": image()}),
)

TABLE_EXAMPLES = (
    Example(True, "an absolute COCO file_name outside the dataset",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1)], images=((1, "a.jpg"), (2, "/data/other/b.jpg"))), "images/train/a.jpg": image()}),
    Example(False, "COCO file_names inside the image folder",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1)]), "images/train/a.jpg": image()}),
    Example(True, "a CSV path that climbs out of the dataset",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("../b.jpg", "dog")]), "a.jpg": image()}),
    Example(False, "CSV paths in a subfolder of the dataset",
            lambda: {"train.csv": csv_table([("cats/a.jpg", "cat"), ("dogs/b.jpg", "dog")]),
                     "cats/a.jpg": image(), "dogs/b.jpg": image()}),
)


@rule(ESCAPES_ROOT, "annotation", EXAMPLES, files_only=True)
def named_image_outside(record: AnnotationRecord, spec):
    image = record.image
    if image is None or not image.escapes:
        return ()
    return (ESCAPES_ROOT.finding(
        record.display, f"{image.field} {image.written!r} points outside the image folder {image.folder}",
        hint=f"Write the image's path inside its folder in {image.field}.", filename=image.written,
    ),)


@rule(ESCAPES_ROOT, "annotation", TABLE_EXAMPLES, reads="images", files_only=True)
def image_files_outside(record: AnnotationRecord, spec):
    """LG005 for the image files a file of many images names outside the dataset root."""
    images = record.images
    if images is None or not images.escaping:
        return ()
    count = len(images.escaping)
    entries = [f"{images.where(row)} {images.names[row]!r}" for row in images.escaping]
    return (ESCAPES_ROOT.finding(
        record.display,
        f"{count} {noun(count, images.field)} {verb(count, 'points')} outside the dataset root "
        f"{images.root}: {sample(entries, count)}",
        hint=f"Write each {images.field} relative to the image folder, so that the dataset works where "
        "it is copied.",
        entries=entries[:PLACES_KEPT], count=count,
    ),)


def _panoptic(file_name: str) -> dict:
    return {"annotations/panoptic_train.json": coco_json([
        {"id": 1, "image_id": 1, "file_name": file_name,
         "segments_info": [{"id": 3, "category_id": 1, "bbox": [1, 1, 4, 4], "iscrowd": 0, "area": 16}]}]),
        "annotations/panoptic_train/a.png": image()}


PANOPTIC_EXAMPLES = (
    Example(True, "a COCO panoptic annotation whose file_name leads out of the dataset ('../../../a.png')",
            lambda: _panoptic("../../../a.png")),
    Example(False, "a COCO panoptic annotation whose PNG is in annotations/panoptic_train",
            lambda: _panoptic("a.png")),
)


@rule(ESCAPES_ROOT, "annotation", PANOPTIC_EXAMPLES, reads="named_files", files_only=True)
def named_files_outside(record: AnnotationRecord, spec):
    """LG005 for other files an annotation file names (COCO panoptic PNGs) outside the dataset
    root: never looked at."""
    named = record.named_files
    if named is None or not named.escaping:
        return ()
    count = len(named.escaping)
    return (ESCAPES_ROOT.finding(
        record.display,
        f"{count} {noun(count, named.noun)} named in this file {verb(count, 'points')} outside the dataset root "
        f"{named.root}: {sample(named.escaping, count)}",
        hint=f"Write each {named.noun}'s file_name relative to {named.folder}.",
        entries=named.escaping[:PLACES_KEPT], count=count,
    ),)


ENTRIES_EXAMPLES = (
    Example(True, "a list entry ../other/a.png, outside the dataset",
            lambda: {"data/a.png": np.eye(4, dtype=np.uint8), "other/a.png": np.eye(4, dtype=np.uint8),
                     "data/train.txt": "a.png\n../other/a.png\n"},
            spec={"num_classes": 2}, options={"lists": ("data/train.txt",)}, path="data"),
    Example(False, "list entries inside the dataset",
            lambda: {"data/a.png": np.eye(4, dtype=np.uint8), "data/train.txt": "a.png\n"},
            spec={"num_classes": 2}, options={"lists": ("data/train.txt",)}, path="data"),
)


@rule(ESCAPES_ROOT, "entries", ENTRIES_EXAMPLES)
def entries_outside_the_root(record: EntriesRecord, spec):
    """An entry that leads outside the dataset root: never opened."""
    return entry_problem_findings(ESCAPES_ROOT, record, record.escaping,
                                  f"points outside the dataset root {record.root}",
                                  f"point outside the dataset root {record.root}", record.escape_hint)
