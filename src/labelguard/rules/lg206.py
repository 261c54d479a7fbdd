"""LG206 image-label-geometry-mismatch: image and label differ in size, shape or slices,
inside one file (NPZ/HDF5 image beside the label), between a mask and its paired image, or
between an annotation's mask stored with its size (COCO RLE) and the image it belongs to."""

from __future__ import annotations

import math

import numpy as np

from labelguard.core.findings import Finding
from labelguard.rules._labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord, MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.rules._examples import coco_box, coco_json
from labelguard.rules._objects import number, sample

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


RLE_EXAMPLES = (
    Example(True, "a COCO RLE of size [10, 8] (transposed) on a 10x8 image",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1, segmentation={"size": [10, 8], "counts": [0, 80]}, iscrowd=1)], size=(10, 8))}),
    Example(False, "a COCO RLE of size [8, 10] ([height, width]) on a 10x8 image",
            lambda: {"annotations/instances_train.json": coco_json(
                [coco_box(1, 1, segmentation={"size": [8, 10], "counts": [0, 80]}, iscrowd=1)], size=(10, 8))}),
)


@rule(GEOMETRY, "mask", EXAMPLES, files_only=True)
def stored_image_geometry(sample: MaskSample, spec):
    record = sample.record
    mask_shape = sample.stored_shape
    if record.image_shape is None or spec.sizes_vary or fits(mask_shape, record.image_shape, spec):
        return ()
    image = f" {record.image_key!r}" if record.image_key else ""
    label = f" {record.key!r}" if record.key else ""
    return (GEOMETRY.finding(
        sample.display,
        f"image{image} {describe_shape(record.image_shape)} and label{label} {describe_shape(mask_shape)} "
        "in the same file differ in shape",
        hint="Re-create the sample so that image and label have the same size (resize labels with nearest neighbour).",
        image_shape=list(record.image_shape), label_shape=list(mask_shape),
        image_key=record.image_key, label_key=record.key,
    ),)


@rule(GEOMETRY, "pair")
def paired_image_geometry(sample: MaskSample, spec):
    mask_shape, shape = sample.stored_shape, sample.paired_shape
    if shape is None or spec.sizes_vary or fits(mask_shape, shape, spec):
        return ()
    relation = f"is not {spec.scale:g} times the size of" if spec.scale is not None else "and"
    ending = f" (sizes={spec.scale:g})" if spec.scale is not None else " differ"
    return (GEOMETRY.finding(
        sample.display,
        f"mask {describe_shape(mask_shape)} {relation} image {sample.paired_display} {describe_shape(shape)}{ending}",
        hint="Resize the mask to the image with nearest-neighbour interpolation (or re-export both); "
        "batching them fails with 'stack expects each tensor to be equal size'.",
        image=sample.paired_display, image_shape=list(shape), mask_shape=list(mask_shape),
    ),)


@rule(GEOMETRY, "annotation", RLE_EXAMPLES, reads="mask_sizes", files_only=True)
def mask_sizes_differ_from_images(record: AnnotationRecord, spec):
    """LG206 for annotation masks whose stored size (COCO RLE ``size``, [height, width])
    differs from their image's size."""
    sizes, images = record.mask_sizes, record.images
    if sizes is None or not len(sizes) or images is None or images.widths is None or not len(images.widths):
        return ()
    assert images.heights is not None  # not a user mistake: an image table gives heights with its widths
    objects, mask_height, mask_width = sizes.T
    rows = np.asarray(record.image_of)[objects]
    height, width = images.heights[rows.clip(min=0)], images.widths[rows.clip(min=0)]
    with np.errstate(invalid="ignore"):
        wrong = np.flatnonzero((rows >= 0) & ~np.isnan(width) & ((mask_height != height) | (mask_width != width)))
    if not len(wrong):
        return ()
    items = [f"{record.where(int(objects[k]))} RLE size [{int(mask_height[k])}, {int(mask_width[k])}] on image "
             f"{images.describe(int(rows[k]))} of height {number(height[k])}, width {number(width[k])}"
             for k in wrong[:PLACES_KEPT]]
    return [GEOMETRY.finding(
        record.display,
        f"{len(wrong)} RLE segmentation{'s differ' if len(wrong) > 1 else ' differs'} in size from "
        f"{'their images' if len(wrong) > 1 else 'its image'} (size is [height, width]): "
        f"{sample(items, len(wrong))}",
        hint="Re-encode the masks at the image size; a transposed size means [width, height] was written.",
        annotations=items, count=int(len(wrong)),
    )]


def describe_shape(shape: tuple[int, ...]) -> str:
    """Width x height for 2D images (channels named apart), the full shape for volumes."""
    if len(shape) == 2:
        return f"{shape[1]}x{shape[0]}"
    if len(shape) == 3 and shape[-1] <= 4:
        return f"{shape[1]}x{shape[0]} ({shape[-1]} channels)"
    return "x".join(str(s) for s in shape)


def fits(mask: tuple[int, ...], image: tuple[int, ...], spec) -> bool:
    """True when a stored mask fits its image under the spec's size relation: the same
    geometry (:func:`same_geometry`), or with a declared scale factor, :func:`scaled_geometry`.
    The caller has excluded ``sizes = "any"``."""
    if spec.scale is None:
        return same_geometry(mask, image)
    return scaled_geometry(mask, image, spec.scale)


def tensor_geometry_fits(image: tuple[int, ...], target: tuple[int, ...], spec) -> bool:
    """True when a target tensor of shape ``target`` (a leading axis of 1 already dropped) fits
    an input of shape ``image`` under the spec's size relation: the input's trailing (or
    leading) axes equal the target's; with a scale factor, :func:`scaled_geometry`, as the
    audit judges a stored mask. ``sizes = "any"``: always."""
    if spec.sizes_vary:
        return True
    if spec.scale is not None:
        return scaled_geometry(target, image, spec.scale)
    k = len(target)
    return image[-k:] == target or image[:k] == target


def scaled_geometry(mask: tuple[int, ...], image: tuple[int, ...], factor: float) -> bool:
    """True when ``mask`` is ``image`` scaled by ``factor`` (super-resolution targets, masks
    at a fraction of their image): the image's axes as :func:`same_geometry` pairs them with
    the mask's (an extra channel axis of the image left out, an axis of 1 of the mask), each
    either equal (a channel axis) or scaled, rounded down or up (a resize floors, a strided
    convolution ceils), and at least two of them scaled (the height and the width)."""
    mask, image = tuple(mask), tuple(image)
    candidates = [image] if len(image) == len(mask) else []
    if len(image) == len(mask) + 1:
        candidates = [image[:i] + image[i + 1:] for i in range(len(image))]
    elif len(mask) == len(image) + 1 and 1 in (mask[0], mask[-1]):
        mask = tuple(m for m in mask if m != 1)
        image = tuple(i for i in image if i != 1)
        candidates = [image] if len(image) == len(mask) else []
    for candidate in candidates:
        scaled = [m in (math.floor(i * factor), math.ceil(i * factor)) for m, i in zip(mask, candidate)]
        if all(s or m == i for s, m, i in zip(scaled, mask, candidate)) and \
                sum(s and m != i for s, m, i in zip(scaled, mask, candidate)) >= min(2, len(mask)):
            return True
    return False


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


def tensor_sizes_differ(display: str | None, image_shape: tuple[int, ...], target_shape: tuple[int, ...],
                        spec=None) -> Finding:
    """LG206 for a sample whose input tensor and mask target differ in spatial size (the
    guard's check, before a DataLoader stacks them), or break the spec's declared scale."""
    factor = spec.scale if spec is not None else None
    relation = (f"the target is not {factor:g} times the input's size (sizes={factor:g})" if factor
                else "differ in size")
    return GEOMETRY.finding(
        display,
        f"image shape {image_shape} and mask shape {target_shape} {relation}" if not factor
        else f"image shape {image_shape} and target shape {target_shape}: {relation}",
        hint="Resize the mask with the image (nearest-neighbour for the mask), or crop both "
        "with the same parameters; when sizes differ on purpose (super-resolution, multi-scale "
        "targets), declare it: sizes=<scale factor> or sizes=\"any\".",
        image_shape=list(image_shape), mask_shape=list(target_shape),
    )


def batch_sizes_differ(source: str | None, field: str, first: tuple[tuple, str], other: tuple[tuple, str]) -> Finding:
    """LG206 for two samples of one batch whose ``field`` ("field 'image'", "element 0")
    differs in shape: ``(shape, the sample described)`` of each; default_collate cannot stack them."""
    (shape_a, described_a), (shape_b, described_b) = first, other
    return GEOMETRY.finding(
        source,
        f"{field} has shape {shape_a} in {described_a} but {shape_b} in {described_b}; default_collate "
        "cannot stack them (\"stack expects each tensor to be equal size\")",
        hint="Resize or crop every sample to one size in the dataset's transform (masks with "
        "nearest-neighbour), or collate with padding.",
        values=[list(shape_a), list(shape_b)],
    )
