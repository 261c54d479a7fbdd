"""LG002 on annotation records: an annotation without its image: one that names no image and
has no image of its name (VOC), objects whose image id is not among the file's images
(COCO), a class folder without images (ImageFolder).

The layout resolves the references (:class:`~labelguard.core.records.ImageReference`, each
object's row in the :class:`~labelguard.core.records.ImageTable`); these rules judge them.
Images without an annotation are found by the pairing engine at discovery.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.paths import display_path
from labelguard.core.records import AnnotationRecord, FileFacts, MaskSample
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, plural, verb
from labelguard.rules._examples import coco_box, coco_json, image, voc_xml
from labelguard.rules._objects import sample

UNPAIRED = define(
    "LG002", "image-without-label", "error",
    summary="an image has no annotation/mask, or an annotation/mask has no image",
    why="""
Datasets that pair images and labels by name fail with FileNotFoundError on the missing
side, or silently train on fewer samples than intended.""",
    bad="images/0042.png exists, masks/0042.png does not",
    good="images/0042.png and masks/0042.png (or masks/0042_mask.png) both exist",
    fix="Restore the missing file, or remove the orphan from the dataset and its lists.",
)

EXAMPLES = (
    Example(True, "a VOC annotation without <filename> and without a JPEG of its name",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename=None),
                     "JPEGImages/b.jpg": image()}),
    Example(False, "a VOC annotation without <filename>, its JPEG beside",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))], filename=None),
                     "JPEGImages/a.jpg": image()}),
)

IMAGE_ID_EXAMPLES = (
    Example(True, "a COCO annotation of image 7 in a file whose only image is 1",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1), coco_box(2, 1, image_id=7)])}),
    Example(False, "COCO annotations of the file's image; an image without annotations is background",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1)], images=((1, "a.jpg"), (2, "b.jpg")))}),
)

FOLDER_EXAMPLES = (
    Example(True, "an ImageFolder class folder holding only a text file",
            lambda: {"train/cat/a.jpg": image(), "train/dog/a.jpg": image(), "train/fox/notes.txt": "todo"},
            options={"format": "imagefolder"}),
    Example(False, "every ImageFolder class folder holds images",
            lambda: {"train/cat/a.jpg": image(), "train/dog/a.jpg": image()}, options={"format": "imagefolder"}),
)


PAIRS_EXAMPLES = (
    Example(True, "a mask without an image where the spec sets require_pairs",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)}, spec={"num_classes": 2, "require_pairs": True}),
    Example(False, "a mask and its image where the spec sets require_pairs",
            lambda: {"images/a.png": np.zeros((4, 4, 3), np.uint8), "masks/a.png": np.eye(4, dtype=np.uint8)},
            spec={"num_classes": 2, "require_pairs": True}),
    Example(False, "an NPZ holding its image beside the label where the spec sets require_pairs",
            lambda: {"data/a.npz": {"image": np.zeros((4, 4), np.float32), "label": np.eye(4, dtype=np.uint8)}},
            spec={"num_classes": 2, "require_pairs": True}),
)


@rule(UNPAIRED, "mask", PAIRS_EXAMPLES, files_only=True)
def mask_without_required_image(sample: MaskSample, spec):
    """Strict admission (``require_pairs = true``): a mask with no image paired by name and
    none stored in its own file. The layouts report orphans among paired folders
    themselves; this names the masks of datasets that pair nothing."""
    if not spec.require_pairs or sample.paired_display is not None or sample.record.image_shape is not None:
        return ()
    return (UNPAIRED.finding(
        sample.display,
        f"mask has no image (none paired by name, none stored in the file) and the spec"
        f"{spec.origin_note('require_pairs')} requires pairs",
        hint="Add the image beside its mask (images/ + masks/, or the image in the same file), or remove the mask.",
        side="mask",
    ),)


@rule(UNPAIRED, "annotation", EXAMPLES, files_only=True)
def annotation_without_image(record: AnnotationRecord, spec):
    image = record.image
    if image is None or image.written or image.paired is not None:
        return ()
    return (UNPAIRED.finding(
        record.display,
        f"annotation has no image: no {image.field}, and no image of the same name in {image.folder}",
        hint="Restore the image, or remove the annotation from the dataset and its lists.",
        side="annotation",
    ),)


@rule(UNPAIRED, "annotation", IMAGE_ID_EXAMPLES, reads="images", files_only=True)
def objects_of_unknown_images(record: AnnotationRecord, spec):
    """LG002 for objects whose image id is not among the file's images: the pairing inside
    the file is broken (pycocotools raises KeyError on them)."""
    if record.images is None or record.image_of is None or record.image_written is None:
        return ()
    rows = np.flatnonzero(np.asarray(record.image_of) == -1)
    if not len(rows):
        return ()
    images = record.images
    written = record.image_written
    missing_ids = sorted({images.id_text(int(v)) for v in np.unique(written[rows])[:PLACES_KEPT]})
    examples = [f"{record.where(int(r))} has image_id {images.id_text(int(written[r]))}" for r in rows[:SHOWN]]
    return [UNPAIRED.finding(
        record.display,
        f"{plural(len(rows), record.unit)} {verb(len(rows), 'refers')} to image ids that are not in "
        f"'images' ({plural(len(images), 'image')}): {sample(examples, len(rows))}",
        hint="Add the missing images to 'images' or remove these annotations; pycocotools raises "
        "KeyError when it meets them.",
        side="annotation", image_ids=missing_ids, places=[record.where(int(r)) for r in rows[:PLACES_KEPT]],
        count=int(len(rows)),
    )]


@rule(UNPAIRED, "annotation", FOLDER_EXAMPLES, reads="folder", files_only=True)
def class_folder_without_images(record: AnnotationRecord, spec):
    """LG002 for an ImageFolder class folder without image files: torchvision refuses the
    whole dataset."""
    folder = record.folder
    if folder is None or folder.images:
        return ()
    return (UNPAIRED.finding(
        record.display,
        f"class folder {folder.name!r} holds no image files ({', '.join(folder.extensions)}): "
        f"torchvision's ImageFolder raises \"Found no valid file for the classes {folder.name}\"",
        hint="Add the class's images, or remove the empty folder (and the class from the spec).",
        side="label", **{"class": folder.name},
    ),)


ORPHAN_EXAMPLES = (
    Example(True, "images/a.png and masks/a.png, and images/b.png without its mask",
            lambda: {"images/a.png": image(), "images/b.png": image(), "masks/a.png": np.eye(8, 10, dtype=np.uint8)},
            spec={"num_classes": 2}),
    Example(False, "images/a.png and masks/a.png",
            lambda: {"images/a.png": image(), "masks/a.png": np.eye(8, 10, dtype=np.uint8)}, spec={"num_classes": 2}),
)


@rule(UNPAIRED, "files", ORPHAN_EXAMPLES)
def orphans_of_the_pairing(facts: FileFacts, spec):
    """Images left without their label and labels without their image, one finding each."""
    what = facts.label_kind
    return [*(UNPAIRED.finding(
        display_path(path), f"image has no {what} (no {what} file with a matching name)",
        hint="Restore the missing file, or remove the image from the dataset and its lists.", side="image",
    ) for path in facts.orphan_images), *(UNPAIRED.finding(
        display_path(path), f"{what} has no image (no image file with a matching name)",
        hint="Restore the image, or remove the orphan from the dataset and its lists.", side=what,
    ) for path in facts.orphan_labels)]
