"""LG008 on annotation records: an image or volume the dataset references is truncated or
cannot be decoded.

The layouts check the images their records reference before the rules run
(:func:`labelguard.readers.integrity.image_problem`, as ``--check-images`` says: the
container's structure by default, a full decode on request) and put the damaged ones in
``record.damaged_images``: a YOLO label file's image (and a background image without a label
file), a VOC file's image, the images a COCO file names, the images of an ImageFolder class
folder. The finding names the image file; its data names the annotation that references it
(each file once per annotation file, with the places that name it). An image that cannot be
read at all (a folder, a named pipe, no permission) is LG001's, not this code's.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.records import AnnotationRecord, MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.rules._examples import coco_box, coco_json, image, image_bytes, voc_xml, yolo_rows

DAMAGED_IMAGE = define(
    "LG008", "image-truncated", "error",
    summary="an image or volume the dataset references is truncated or cannot be decoded",
    why="""
The DataLoader worker that opens the file raises ("image file is truncated", "broken data
stream") in the middle of an epoch, after the epochs before it ran; a loader set to accept
truncated images trains on a partly grey picture instead. Labels are audited clean while
their image is not whole.""",
    bad="images/train/0042.jpg  (ends after 12,345 bytes without the JPEG end marker (FF D9))",
    good="images/train/0042.jpg  (a complete JPEG: every segment inside the file, its end marker after the image data)",
    fix="Copy the file again from the dataset's source (the archive, the export, the bucket), or remove it and "
        "its labels from the dataset.",
)

# What to do about a damaged image: the cause is never seen, only what the bytes lack.
HINT = ("An interrupted download or copy (or damage in storage) can leave a file so: copy it again from where the "
        "dataset came from (its archive, export or bucket; the provider's checksums, or `sha256sum` of both copies, "
        "tell whether they match), or remove it and its labels from the dataset.")

EXAMPLES = (
    Example(True, "a YOLO image that ends before the JPEG end marker",
            lambda: {"images/a.jpg": image_bytes("jpeg", cut=40), "labels/a.txt": yolo_rows([(0, .5, .5, .2, .2)])}),
    Example(False, "a YOLO image that is a whole JPEG",
            lambda: {"images/a.jpg": image(), "labels/a.txt": yolo_rows([(0, .5, .5, .2, .2)])}),
    Example(True, "a YOLO background image (no label file) that is cut short",
            lambda: {"images/a.jpg": image(), "images/b.png": image_bytes("png", cut=30),
                     "labels/a.txt": yolo_rows([(0, .5, .5, .2, .2)])}),
    Example(True, "a VOC image whose PNG chunk has a wrong checksum",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 5, 5))], size=(10, 8), filename="a.png"),
                     "JPEGImages/a.png": image_bytes("png", bad_crc=True)}),
    Example(False, "a VOC image that is a whole PNG",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 5, 5))], size=(10, 8), filename="a.png"),
                     "JPEGImages/a.png": image_bytes("png")}),
    Example(True, "a COCO image that is cut short",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1)]),
                     "images/a.jpg": image_bytes("jpeg", cut=300)}),
    Example(False, "a COCO image that is whole",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1)]), "images/a.jpg": image()}),
    Example(True, "an ImageFolder image that is cut short",
            lambda: {"train/cat/a.jpg": image(), "train/cat/b.jpg": image_bytes("jpeg", cut=100),
                     "train/dog/c.jpg": image()}),
    Example(False, "a JPEG whose scan data is damaged but that ends with FF D9, checked by structure (the default)",
            lambda: {"train/cat/a.jpg": image(), "train/cat/b.jpg": image_bytes("jpeg", corrupt_scan=True),
                     "train/dog/c.jpg": image()}),
    Example(True, "the same JPEG with --check-images full (a complete decode)",
            lambda: {"train/cat/a.jpg": image(), "train/cat/b.jpg": image_bytes("jpeg", corrupt_scan=True),
                     "train/dog/c.jpg": image()}, options={"check_images": "full"}),
    Example(False, "a truncated JPEG with --check-images off",
            lambda: {"images/a.jpg": image_bytes("jpeg", cut=40), "labels/a.txt": yolo_rows([(0, .5, .5, .2, .2)])},
            options={"check_images": "off"}),
)


@rule(DAMAGED_IMAGE, "annotation", EXAMPLES, reads="damaged_images", files_only=True)
def damaged_images(record: AnnotationRecord, spec):
    """One finding per damaged image, on the image's path, naming the annotation that
    references it (none for a background image or an ImageFolder image)."""
    findings = []
    for damaged in record.damaged_images or ():
        if damaged.unread:
            continue  # not read at all: LG001's (rules/_annotations.py)
        data = {"problem": damaged.problem}
        if not damaged.unnamed and record.display is not None:
            data["label"] = record.display
            if damaged.place:
                data["place"] = damaged.place
        named = f" ({data['label']} names it{' at ' + damaged.place if damaged.place else ''})" \
            if "label" in data else ""
        findings.append(DAMAGED_IMAGE.finding(
            damaged.display, f"image file {damaged.problem}{named}", hint=HINT, **data))
    return findings


MASK_EXAMPLES = (
    Example(True, "a mask whose paired image (a JPEG) is cut short",
            lambda: {"images/a.jpg": image_bytes("jpeg", cut=40), "masks/a.png": np.zeros((8, 10), np.uint8)}),
    Example(False, "a mask whose paired image is a whole JPEG",
            lambda: {"images/a.jpg": image_bytes("jpeg"), "masks/a.png": np.zeros((8, 10), np.uint8)}),
)


@rule(DAMAGED_IMAGE, "pair", MASK_EXAMPLES, files_only=True)
def damaged_paired_image(sample: MaskSample, spec):
    """The image a mask is paired with, checked once as the mask's pair is read (its
    ``paired_problem``), and the other channels of its case (``damaged_channels``): each
    finding names the image file, its data the mask."""
    damaged = list(sample.damaged_channels)
    if sample.paired_problem and sample.paired_display is not None:
        damaged.insert(0, (sample.paired_display, sample.paired_problem))
    return tuple(DAMAGED_IMAGE.finding(
        shown, f"image file {problem} ({sample.display} pairs with it)", hint=HINT, problem=problem,
        label=sample.display) for shown, problem in damaged)
