"""LG001 on records: a mask whose bytes are of another format than its name says, the
objects or rows of an annotation that a loader cannot read, elements of wrong JSON types
(COCO), image ids that more than one image uses (COCO), and columns of a tokenized dataset
that hold no ids (text, missing values).

These rules are the mask and annotation sides of the code; a file that cannot be read at all
is reported by the processor that tried to read it (:mod:`labelguard.rules._unread`).
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import NO_ID, AnnotationRecord, MaskSample
from labelguard.core.rules import Example, rule
from labelguard.core.summary import Summary
from labelguard.core.text import SHOWN, noun, plural, shorten, verb
from labelguard.readers.masks import IMAGE_FORMATS, mask_extension
from labelguard.core.tokens import TokenBatch
from labelguard.rules._examples import coco_box, coco_json, csv_table, image, token_lines, voc_xml
from labelguard.rules._objects import sample
from labelguard.rules._tokens import tally_finding

UNREADABLE = define(
    "LG001", "file-unreadable", "error",
    summary="a file cannot be read, decoded or parsed",
    why="""
A DataLoader worker that meets this file raises mid-epoch (or, worse, a dataset class
swallows the error and feeds an empty or partial target). Interrupted copies, zero-byte files
and files written by the wrong tool are the usual causes.""",
    bad="masks/case_017.png  (0 bytes: the copy was interrupted)",
    good="masks/case_017.png  (a complete PNG that decodes to a 512x512 label map)",
    fix="Re-export or re-copy the file from its source; remove it from the lists if it cannot be recovered.",
)

# Unreadable objects or rows listed one by one; the rest in one finding.
OBJECT_PROBLEMS_SHOWN = 20
_FORMAT_NAMES = {"zip": "NPZ (zip)", "nifti": "NIfTI", "riff": "WebP", "gzip": "gzip"}

EXAMPLES = (
    Example(True, "an NPY array saved under a .png name",
            lambda: {"masks/a.png": ("npy", np.zeros((4, 4), np.uint8))}),
    Example(False, "a PNG named .png", lambda: {"masks/a.png": np.zeros((4, 4), np.uint8)}),
)


@rule(UNREADABLE, "mask", EXAMPLES, files_only=True)
def renamed_container(sample: MaskSample, spec):
    """LG001 for a file whose bytes are of another format than its name says, where readers
    that go by the name (np.load, nibabel, PIL) cannot open it. A JPEG under an image name is
    LG202's; image formats under each other's names open in PIL."""
    record = sample.record
    if sample.display is None or not record.renamed or record.lossy or (
            record.container in IMAGE_FORMATS and record.declared in IMAGE_FORMATS):
        return ()  # (an array from no file has no name to disagree with its content)
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
    Example(True, "a CSV row with a field too many",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog", "extra")]),
                     "a.jpg": image(), "b.jpg": image()}),
    Example(False, "CSV rows of a path and a label",
            lambda: {"train.csv": csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]), "a.jpg": image(), "b.jpg": image()}),
)

TYPE_EXAMPLES = (
    Example(True, "a COCO bbox of three values",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1, (1, 1, 4))])}),
    Example(False, "a COCO bbox of four numbers",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1, (1, 1, 4, 4))])}),
)

FOLDER_EXAMPLES = (
    Example(True, "an ImageFolder image file that is empty",
            lambda: {"train/cat/a.jpg": image(), "train/cat/b.jpg": b"", "train/dog/c.jpg": image()}),
    Example(False, "ImageFolder images that decode",
            lambda: {"train/cat/a.jpg": image(), "train/dog/c.jpg": image()}),
)

IMAGE_ID_EXAMPLES = (
    Example(True, "two COCO images with id 1",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1)], images=((1, "a.jpg"), (1, "b.jpg")))}),
    Example(False, "COCO images with ids 1 and 2",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1)], images=((1, "a.jpg"), (2, "b.jpg")))}),
)


@rule(UNREADABLE, "annotation", ANNOTATION_EXAMPLES, files_only=True)
def unreadable_objects(record: AnnotationRecord, spec):
    """LG001 for the objects, rows or lines of an annotation that a loader cannot read (the
    file's other objects were read and checked): one finding each in a file of one image,
    one finding listing them in a file of many images (a table)."""
    if not record.problems:
        return []
    total = record.problem_count if record.problem_count is not None else len(record.problems)
    unit = record.unit
    if record.images is not None:
        items = [f"{unit} {place} {problem}" if place else problem for place, problem in record.problems]
        return [UNREADABLE.finding(
            record.display,
            f"{plural(total, unit)} cannot be read: {sample(items, total)}; the other {noun(2, unit)} "
            "are still checked",
            hint=record.problem_hint or "", **{f"{unit}s": [p for p, _ in record.problems[:PLACES_KEPT]]}, count=total,
        )]
    findings = []
    shown = record.problems[:OBJECT_PROBLEMS_SHOWN]
    for place, problem in shown:
        # unit and places as the other codes' findings carry them: a YOLO row or a list line
        # is a line of the file, which concise, SARIF and GitHub output point at.
        where = {"unit": unit, "places": [place]} if place else {}
        findings.append(UNREADABLE.finding(
            record.display, f"{unit} {place} {problem}" if place else problem,
            hint=record.problem_hint or "", **{unit: place or None}, **where,
        ))
    extra = record.problems[OBJECT_PROBLEMS_SHOWN:]
    more = total - len(shown)
    if more > 0:
        places = [p for p, _ in extra]
        findings.append(UNREADABLE.finding(
            record.display, f"{plural(more, f'more unreadable {unit}')} "
            f"({unit}s {shorten(places, 10, total=more)})",
            hint=record.problem_hint or "", **{f"{unit}s": places[:PLACES_KEPT]}, count=more,
        ))
    return findings


@rule(UNREADABLE, "annotation", TYPE_EXAMPLES, reads="problem_groups", files_only=True)
def mistyped_elements(record: AnnotationRecord, spec):
    """LG001 for each kind of element of a wrong JSON type (COCO), naming its places; the
    element is still used for every check its other fields allow."""
    if not record.problem_groups:
        return []
    return [UNREADABLE.finding(
        record.display,
        f"{group.what} in {plural(group.count, 'place')}: {sample(group.details, group.count)}; "
        "the rest of the file is still checked",
        hint=group.hint or record.problem_hint or "", problem=group.what, places=group.places, count=group.count,
    ) for group in record.problem_groups]


@rule(UNREADABLE, "annotation", IMAGE_ID_EXAMPLES, reads="images", files_only=True)
def repeated_image_ids(record: AnnotationRecord, spec):
    """LG001 for an image id that more than one image of the file uses: annotations of such
    an id attach to one of them only."""
    images = record.images
    if images is None or images.ids is None:
        return ()
    ids = images.ids
    # A mistyped id is LG001 of its own kind, not a repeat.
    valid = np.flatnonzero(ids != NO_ID)
    if len(valid) < 2:
        return ()
    values, counts = np.unique(ids[valid], return_counts=True)
    repeated = np.flatnonzero(counts > 1)
    if not len(repeated):
        return ()
    examples = []
    for k in repeated[:SHOWN]:
        rows = valid[np.flatnonzero(ids[valid] == values[k])]
        examples.append(f"id {images.id_text(int(values[k]))} in "
                        + ", ".join(f"{images.where(int(r))} ({images.names[int(r)] or 'no file_name'})"
                                    for r in rows[:3]))
    return [UNREADABLE.finding(
        record.display,
        f"{plural(len(repeated), 'image id')} {verb(len(repeated), 'is')} used by more than one image: "
        f"{sample(examples, len(repeated))}; annotations of such an id attach to one image only",
        hint="Give every image a unique id (pycocotools keeps the last image of a repeated id).",
        ids=[images.id_text(int(values[k])) for k in repeated[:PLACES_KEPT]], count=int(len(repeated)),
    )]


@rule(UNREADABLE, "annotation", FOLDER_EXAMPLES, reads="folder", files_only=True)
def undecodable_images(record: AnnotationRecord, spec):
    """LG001 for the image files of an ImageFolder class folder that are empty or not images:
    the DataLoader worker that opens one raises mid-epoch."""
    folder = record.folder
    if folder is None or not folder.unreadable:
        return ()
    unreadable = folder.unreadable
    return (UNREADABLE.finding(
        record.display,
        f"{plural(len(unreadable), 'image file')} of class {folder.name!r} cannot be decoded: "
        f"{sample(list(unreadable), len(unreadable))}",
        hint="Re-copy these images or delete them; the DataLoader worker that opens one raises mid-epoch.",
        files=[u.split(" ", 1)[0] for u in unreadable[:PLACES_KEPT]], count=len(unreadable),
    ),)


TOKEN_EXAMPLES = (
    Example(True, "a JSON-lines label of text",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2], "label": "positive"}])}),
    Example(True, "input_ids with a null inside",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, None, 2], "label": 0}])}),
    Example(False, "ids and a label that are numbers",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2], "label": 0}])}),
)


@rule(UNREADABLE, "tokens", TOKEN_EXAMPLES)
def columns_without_ids(batch: TokenBatch, spec):
    """LG001 for a column of a tokenized dataset that holds no ids (text labels, nested
    objects), and for missing values inside one: a collator or the model fails on them."""
    findings = [UNREADABLE.finding(
        batch.display, f"column {name!r} {problem}: the model takes integer ids there",
        hint="Encode the column as ids before training (a ClassLabel, label2id, the tokenizer), or drop it.",
        column=name,
    ) for name, problem in batch.problems]
    for column in batch.columns.values():
        if column.missing is None:
            continue
        positions = np.flatnonzero(column.missing)
        rows = np.unique(column.rows_of_values(positions)) + batch.start
        kinds = " or ".join(column.missing_kinds)
        findings.append(tally_finding(
            UNREADABLE, batch, column.name, rows, np.zeros(0), len(positions),
            phrase=f"holds {kinds} values where ids belong", noun="values", expected="",
            hint="Fill, encode or drop these values before training: a tensor of ids cannot hold them."))
    return findings


BOUND_EXAMPLES = (
    Example(True, "one empty mask file where the spec allows no unreadable file",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8), "masks/b.png": b""},
            spec={"num_classes": 2, "max_files_unreadable": 0}),
    Example(False, "every mask decodes where the spec allows no unreadable file",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)}, spec={"num_classes": 2, "max_files_unreadable": 0}),
)


@rule(UNREADABLE, "dataset", BOUND_EXAMPLES)
def unreadable_over_bound(summary: Summary, spec):
    """Strict admission: more unreadable files than the spec's ``max_files_unreadable``
    allows. Each file is its own LG001 finding; this one says the dataset broke its bound."""
    bound = spec.max_files_unreadable
    if bound is None or summary.unreadable <= bound:
        return []
    return [UNREADABLE.finding(
        None,
        f"{plural(summary.unreadable, 'file')} cannot be read and the spec{spec.origin_note('max_files_unreadable')} "
        f"allows at most {bound:,} (max_files_unreadable)",
        hint="Re-export or remove the unreadable files (each is an LG001 finding of its own).",
        unreadable=summary.unreadable, bound=bound,
    )]
