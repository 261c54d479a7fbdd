"""How the tools that write datasets name and place images and labels: the pairing
conventions, as data, in one place.

The pairing engine (:mod:`labelguard.layouts.pairing`) and the layouts read these tables and
never spell a convention themselves. A new tool's convention is a row here and a test on
files of that tool's shape (``tests/test_conventions.py``).

A convention is evidence, not a verdict: a file is the image of a label because a convention
pairs the two (the same name but for a role word; the same name in the image folder of a
label folder), and a folder named like an image folder whose files pair with no label is
not taken for one by its name alone (:data:`FOLDER_PAIRINGS`). Only the folder names of
:data:`IMAGE_DIRS`, which the tools that use them reserve for images, make their files
images without a partner (a test split published without its labels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# ---- file names ---------------------------------------------------------------------------
# The role word a tool writes at the end of a stem, separated by "_" or "-", with the tool
# that writes it: a label's (x_mask.png) and an image's (x_sat.jpg). Pairing drops them, so
# that x_mask.png and x_sat.jpg meet under "x".
LABEL_SUFFIXES = (
    # Cityscapes (gtFine/gtCoarse, with the encoding after it)
    "gtFine_labelTrainIds", "gtFine_labelIds", "gtFine_instanceIds", "gtFine_color",
    "gtCoarse_labelTrainIds", "gtCoarse_labelIds", "gtCoarse_instanceIds", "gtCoarse_color",
    "labelTrainIds", "labelIds",
    "mask", "masks",  # Roboflow's PNG-mask export (x.jpg beside x_mask.png), DeepGlobe (x_mask.png)
    "label", "labels",  # MONAI (x_label.nii.gz), ISPRS Potsdam (top_potsdam_2_10_label.tif)
    "15label",  # GID-15 as mmsegmentation and torchgeo write it (x_15label.png)
    "gt",  # mmsegmentation's custom datasets (x_gt.png)
    "seg", "segmentation", "annotation", "anno", "target",
    "m",  # LandCover.ai's tiles (output/x.jpg beside output/x_m.png); JPEGs stay photos whatever their name
)
IMAGE_SUFFIXES = (
    "leftImg8bit",  # Cityscapes
    "img", "image",  # mmsegmentation's custom datasets (x_img.jpg)
    "sat",  # DeepGlobe Land Cover (x_sat.jpg)
    "RGBIR", "RGB", "IRRG",  # ISPRS Potsdam tiles (top_potsdam_2_10_RGBIR.tif)
)
# The role word at the start of a stem (gt_x.png, image_x.png).
LABEL_PREFIXES = ("gt", "mask", "label")
IMAGE_PREFIXES = ("image", "img")
# Role words anywhere in a name, for files side by side in one folder: MONAI's
# anatomical.nii + anatomical_label.nii.gz, StarDist's img2d.tif + mask2d.tif,
# x_data.npy + x_label.npy.
IMAGE_TOKENS = frozenset({"data", "image", "images", "img", "volume", "vol", "input", "raw", "ct", "mri"})
LABEL_TOKENS = frozenset({"label", "labels", "mask", "masks", "seg", "gt", "annotation", "target"})

# Files beside the masks that map label values to class names, never samples themselves:
# Roboflow's PNG-mask export writes one per split ("Pixel Value, Class").
CLASS_TABLE_FILES = ("_classes.csv",)

# ---- folders ------------------------------------------------------------------------------
# Folders whose files are images by the convention of the tools that name them so; discovery
# never reads them for labels (``--format masks`` does, on the user's word).
IMAGE_DIRS = frozenset({
    "images", "image", "imgs", "img", "inputs", "input", "rgb", "photos",
    "JPEGImages",  # Pascal VOC
    "leftImg8bit",  # Cityscapes
    "imagesTr", "imagesTs",  # nnU-Net
    "img_dir",  # mmsegmentation's converted datasets (GID-15, iSAID, Potsdam...: img_dir/ann_dir)
    "images_png",  # LoveDA
    "2_Ortho_RGB", "3_Ortho_IRRG", "4_Ortho_RGBIR",  # ISPRS Potsdam
})
# Folders of labels, in the order a dataset folder's label folder is looked for.
MASK_DIRS = ("masks", "mask", "labels", "label", "annotations", "annotation", "gt", "gts",
             "groundtruth", "ground_truth", "segmentations", "segmentation",
             "SegmentationClass",  # Pascal VOC
             "labelsTr",  # nnU-Net
             "targets", "annot", "annots",
             "ann_dir",  # mmsegmentation's converted datasets
             "masks_png",  # LoveDA
             "gts_for_participants", "gts_eroded_for_participants",  # ISPRS Vaihingen
             "5_Labels_all", "5_Labels_for_participants", "5_Labels_all_noBoundary")  # ISPRS Potsdam
# SegNet's CamVid: each split's labels beside it, in <split>annot/ (train/ beside trainannot/).
SEGNET_LABEL_SUFFIX = "annot"
# A label folder named after its image folder: train/ beside train_labels/ (Kaggle's CamVid),
# beside trainannot/ (SegNet's CamVid), beside train_masks/ (Carvana).
FOLDER_LABEL_SUFFIXES = ("_labels", "_label", "labels", "_annot", SEGNET_LABEL_SUFFIX, "_annotations", "_masks",
                         "_mask", "masks", "_gt", "_groundtruth", "_seg", "_segmentation")
# The label folder: the folder that holds the image folders (ISPRS tiles as torchgeo keeps them).
HERE = ""


@dataclass(frozen=True)
class FolderPairing:
    """Image folders and the label folder whose files they are the images of, as one kind of
    dataset lays them out side by side.

    Attributes:
        kind: who writes the layout, in notes ("change detection: LEVIR-CD").
        images: the image folders' names; several when each label has several images
            (change detection: the photos before and after, which share one label).
        labels: the names the label folder may have, in the order they are looked for;
            :data:`HERE` for the folder that holds the image folders.
    """

    kind: str
    images: tuple[str, ...]
    labels: tuple[str, ...]


# Layouts whose image folders have names that other datasets give to anything (A/, top/):
# such a folder is an image folder only where its files pair with the label folder's.
FOLDER_PAIRINGS = (
    FolderPairing("change detection: LEVIR-CD, WHU-CD", ("A", "B"), ("label", "OUT", "gt")),
    FolderPairing("change detection: SYSU-CD", ("time1", "time2"), ("label",)),
    FolderPairing("change detection", ("T1", "T2"), ("GT", "label")),
    FolderPairing("ISPRS Vaihingen", ("top",), ("gts_for_participants", "gts_eroded_for_participants", HERE)),
    FolderPairing("ISPRS Potsdam", ("2_Ortho_RGB", "3_Ortho_IRRG", "4_Ortho_RGBIR"),
                  ("5_Labels_all", "5_Labels_for_participants", "5_Labels_all_noBoundary", HERE)),
)

_IMAGE_DIRS = {name.lower() for name in IMAGE_DIRS}
_MASK_DIRS = {name.lower(): rank for rank, name in reversed(list(enumerate(MASK_DIRS)))}


@dataclass(frozen=True)
class FolderPair:
    """One image folder and its label folder, named as one folder's sub-folders
    (:func:`folder_pairs`)."""

    images: str  # the image folder's name
    labels: str  # the label folder's name, or HERE
    kind: str  # the convention, in notes
    # The folders' names alone make the files images: an IMAGE_DIRS name, or a label folder
    # named after the image folder (train/ beside trainannot/).
    by_name: bool


def folder_pairs(names: Iterable[str]) -> list[FolderPair]:
    """The image folders and their label folders among ``names``, the sub-folders of one
    folder, by the conventions above (case ignored), sorted by image folder: ``train`` beside
    ``trainannot``, an :data:`IMAGE_DIRS` folder beside a :data:`MASK_DIRS` folder (the first
    of them), the folders of a :data:`FOLDER_PAIRINGS` row."""
    by_lower = {name.lower(): name for name in names}
    found: dict[str, FolderPair] = {}
    labels = sorted((rank, name) for lower, name in by_lower.items() if (rank := _MASK_DIRS.get(lower)) is not None)
    for lower, name in by_lower.items():
        suffixed = next((by_lower[lower + suffix] for suffix in FOLDER_LABEL_SUFFIXES if lower + suffix in by_lower),
                        None)
        if suffixed is not None:
            found[name] = FolderPair(name, suffixed, "a label folder named after its image folder", True)
        elif lower in _IMAGE_DIRS and labels:
            found[name] = FolderPair(name, labels[0][1], "image and label folder names", True)
    for row in FOLDER_PAIRINGS:
        present = [by_lower[image.lower()] for image in row.images if image.lower() in by_lower]
        label = next((by_lower.get(label.lower(), label) for label in row.labels
                      if label == HERE or label.lower() in by_lower), None)
        if present and label is not None:
            for image in present:
                found.setdefault(image, FolderPair(image, label, row.kind, image.lower() in _IMAGE_DIRS))
    return [found[name] for name in sorted(found)]


def is_image_dir(name: str) -> bool:
    """True when a folder of this name holds images by its tools' convention (:data:`IMAGE_DIRS`)."""
    return name.lower() in _IMAGE_DIRS


def is_mask_dir(name: str) -> bool:
    """True when a folder of this name holds labels by its tools' convention (:data:`MASK_DIRS`)."""
    return name.lower() in _MASK_DIRS
