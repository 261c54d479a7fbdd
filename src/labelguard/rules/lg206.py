"""LG206 image-label-geometry-mismatch: image and label differ in size, shape or slices,
inside one file (NPZ/HDF5 image beside the label) or between a mask and its paired image."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule

GEOMETRY = define(
    "LG206", "image-label-geometry-mismatch", "error",
    summary="image and mask/label geometry differ (size, shape, number of slices)",
    why="""
Random crops pick different places in image and mask, the loss compares misaligned pixels,
and default_collate fails with "stack expects each tensor to be equal size".""",
    bad="images/0001.png 512x512, masks/0001.png 256x256",
    good="both 512x512",
    fix="Resize the mask to the image size with nearest-neighbour interpolation (or re-export both).",
)

EXAMPLES = (
    Example(True, "an NPZ whose image is 8x8 and label 4x4",
            lambda: {"data/a.npz": {"image": np.zeros((8, 8), np.float32), "label": np.zeros((4, 4), np.uint8)}}),
    Example(False, "an NPZ with image and label of one size",
            lambda: {"data/a.npz": {"image": np.zeros((8, 8), np.float32), "label": np.zeros((8, 8), np.uint8)}}),
    Example(True, "a 4x4 mask paired with an 8x8 image",
            lambda: {"images/a.png": np.zeros((8, 8, 3), np.uint8), "masks/a.png": np.zeros((4, 4), np.uint8)}),
    Example(False, "mask and paired image of one size",
            lambda: {"images/a.png": np.zeros((8, 8, 3), np.uint8), "masks/a.png": np.zeros((8, 8), np.uint8)}),
)


@rule(GEOMETRY, "mask", EXAMPLES)
def stored_image_geometry(sample: MaskSample, spec):
    record = sample.record
    mask_shape = sample.stored_shape
    if record.image_shape is None or same_geometry(mask_shape, record.image_shape):
        return ()
    image = f" {record.image_key!r}" if record.image_key else ""
    label = f" {record.key!r}" if record.key else ""
    return (GEOMETRY.finding(
        sample.display,
        f"image{image} {record.image_shape} and label{label} {mask_shape} in the same file differ in shape",
        hint="Re-create the sample so that image and label have the same size (resize labels with nearest neighbour).",
        image_shape=list(record.image_shape), label_shape=list(mask_shape),
        image_key=record.image_key, label_key=record.key,
    ),)


@rule(GEOMETRY, "pair")
def paired_image_geometry(sample: MaskSample, spec):
    mask_shape, shape = sample.stored_shape, sample.paired_shape
    if shape is None or same_geometry(mask_shape, shape):
        return ()
    return (GEOMETRY.finding(
        sample.display,
        f"mask {describe_shape(mask_shape)} and image {sample.paired_display} {describe_shape(shape)} differ",
        hint="Resize the mask to the image with nearest-neighbour interpolation (or re-export both); "
        "batching them fails with 'stack expects each tensor to be equal size'.",
        image=sample.paired_display, image_shape=list(shape), mask_shape=list(mask_shape),
    ),)


def describe_shape(shape: tuple[int, ...]) -> str:
    """Width x height for 2D images (channels named apart), the full shape for volumes."""
    if len(shape) == 2:
        return f"{shape[1]}x{shape[0]}"
    if len(shape) == 3 and shape[-1] <= 4:
        return f"{shape[1]}x{shape[0]} ({shape[-1]} channels)"
    return "x".join(str(s) for s in shape)


def same_geometry(mask: tuple[int, ...], image: tuple[int, ...]) -> bool:
    """True when a mask fits an image: equal shapes, or the image has one extra channel axis
    (channels last, first, or after a batch axis as in BraTS numpy volumes)."""
    mask, image = tuple(mask), tuple(image)
    if mask == image:
        return True
    if len(image) == len(mask) + 1:
        return any(image[:i] + image[i + 1:] == mask for i in range(len(image)))
    if len(mask) == len(image) + 1 and 1 in (mask[0], mask[-1]):
        return tuple(m for m in mask if m != 1) == tuple(i for i in image if i != 1)
    return False
