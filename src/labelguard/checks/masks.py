"""LG2xx: segmentation masks (2D images, 3D volumes, arrays): definitions and per-file checks."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun
from labelguard.core.values import histogram, violations
from labelguard.errors import UnsupportedError

VALUE_OUTSIDE_SPEC = define(
    "LG201", "mask-value-outside-spec", "error",
    summary="a mask value is outside the spec (>= num_classes and not the ignore index)",
    why="""
cross_entropy indexes the logits with every pixel's value. One pixel with value 3 when
num_classes=3 (or a 255 border not declared as ignore_index) is the "t >= 0 && t < n_classes"
device-side assert on a GPU, raised late and without naming the file: the #1 cause.""",
    bad="mask values {0, 1, 2} with num_classes=2 (two classes + background need 3)",
    good="mask values {0, 1, 2} with num_classes=3; or 255 borders with --ignore-index 255",
    fix="Set num_classes to include background, declare border values as ignore_index (and pass "
    "it to the loss), or remap the values (`labelguard fix remap`).",
)

LOSSY = define(
    "LG202", "mask-stored-lossily", "error",
    summary="a mask is stored lossily (JPEG) or shows compression artifacts along edges",
    why="""
JPEG smears the values at every class edge: a mask of {0, 1} comes back holding 2, 3, 254...
in thin fringes, so a few hundred pixels per file are out of range or of the wrong class.
Resizing a mask with bilinear interpolation leaves the same fringes.""",
    bad="masks/0001.jpg, or a JPEG renamed masks/0001.png; values {0, 1, 2, 3, 252, 253, 254, 255}",
    good="masks/0001.png written losslessly from the label array; resized with nearest neighbour",
    fix="Re-export the masks losslessly (PNG, TIFF, NPY) from the source labels; resize masks "
    "with nearest-neighbour interpolation only.",
)

COLOR_MASK = define(
    "LG203", "color-mask", "error",
    summary="a colour mask where class-index masks are expected",
    why="""
Loading an RGB mask gives (H, W, 3) values up to 255: the loss sees colours, not classes,
and every colour channel value above num_classes is out of range.""",
    bad="masks/0001.png  RGB, colours (0,0,0), (128,0,0), (0,128,0)",
    good="masks/0001.png  mode L or P, values {0, 1, 2}; or a declared colour map",
    fix="Declare the colour map (dataset_meta.json, labelmap.txt, --color-map) so labelguard "
    "decodes it, or convert the masks to index masks (`labelguard fix colors`).",
)

NON_INTEGER = define(
    "LG204", "mask-values-not-integer", "error",
    summary="non-integer or non-finite mask values (2.5, NaN)",
    why="""
Targets are cast with .long(): 0.5 becomes 0 and NaN becomes a huge negative number, which is
the out-of-range assert or a silently wrong class.""",
    bad="a float32 .npy mask holding 0.0, 0.25, 0.5, 1.0 after bilinear resizing",
    good="a uint8 mask holding 0 and 1",
    fix="Resize masks with nearest-neighbour interpolation and store them as integers.",
)

EMPTY_MASK = define(
    "LG205", "mask-empty", "info",
    summary="a mask contains only background or ignore values",
    why="""
Not an error in itself (empty slices are common in volumes), but many of them shift the class
balance and Dice-style losses divide by zero on them.""",
    bad="case0007_slice000.npz: all 262144 pixels are 0",
    good="a foreground class present, or empty slices sampled on purpose",
    fix="Nothing if expected; otherwise drop empty samples or sample them less often.",
)

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

LAYOUT = define(
    "LG207", "mask-layout-unexpected", "warning",
    summary="unexpected mask layout: several channels, or a wider dtype than needed",
    why="""
A (H, W, 3) grey mask or a one-hot (H, W, C) mask gives the wrong target shape for
cross_entropy; 16-bit or int64 masks for a few classes waste memory and need conversion
(torch has no uint16 ops on older versions).""",
    bad="mask 512x512x3 with three identical channels; or a uint16 mask with values 0..2",
    good="mask 512x512 uint8",
    fix="Save a single channel with the smallest integer dtype that holds the classes.",
)

ONE_BASED = define(
    "LG208", "labels-one-based", "warning",
    summary="labels look 1-based: no value 0 anywhere while the spec expects background 0",
    why="""
Annotation tools such as ITK-SNAP number structures from 1. Then the largest label equals
num_classes and is out of range, and class 0 is never trained.""",
    bad="spec 0..2, values found in all masks: {1, 2, 3}",
    good="values found {0, 1, 2}, or the remap {1: 0, 2: 1, 3: 2} applied",
    fix="Apply the suggested remap (`labelguard fix remap`), or make the spec say what the data means.",
    scope="dataset",
)

SCALED_BINARY = define(
    "LG209", "binary-mask-scaled", "error",
    summary="binary masks stored as 0/255 (or another scale) where the spec is {0, 1}",
    why="""
Image editors save binary masks as black/white: 255 instead of 1. With num_classes=2 every
foreground pixel is out of range.""",
    bad="masks holding {0, 255} with num_classes=2",
    good="masks holding {0, 1}; or `mask = mask // 255` in the dataset",
    fix="Apply the remap {255: 1} (`labelguard fix remap --map 255:1`).",
    scope="dataset",
)

# Above this many distinct values a "mask" is almost certainly an image saved in its place.
IMAGE_LIKE_DISTINCT = 1024


def value_findings(
    display: str,
    array: np.ndarray,
    spec: LabelSpec,
    *,
    value_name: str = "label value",
) -> tuple[list, np.ndarray, np.ndarray]:
    """LG201/LG204/LG205 on an array of labels; also returns its histogram.

    Float arrays holding only whole numbers are checked as integers; otherwise LG204 names
    the non-integer and non-finite pixel counts and the histogram is of the whole numbers.
    """
    findings = []
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        non_finite = int(array.size - np.count_nonzero(finite))
        whole = finite & (np.floor(array) == array)
        fractional = int(np.count_nonzero(finite) - np.count_nonzero(whole))
        if non_finite or fractional:
            sample = np.unique(array[finite & ~whole])[:5].tolist() if fractional else []
            findings.append(NON_INTEGER.finding(
                display,
                f"{fractional} pixels hold non-integer values"
                + (f" (e.g. {', '.join(f'{v:g}' for v in sample)})" if sample else "")
                + (f" and {non_finite} pixels are NaN/Inf" if non_finite else "")
                + f"; a label array must hold whole class numbers (dtype {array.dtype})",
                non_integer_pixels=fractional,
                non_finite_pixels=non_finite,
                examples=sample,
            ))
        array = array[whole].astype(np.int64) if (non_finite or fractional) else array.astype(np.int64)
    elif array.dtype.kind not in "iub":
        raise UnsupportedError(f"unsupported label dtype {array.dtype}")
    values, counts = histogram(array)
    bad = violations(values, counts, spec)
    if bad is not None:
        findings.append(_outside_spec(display, values, bad, spec, value_name))
    if len(values) and _only_background(values, spec):
        findings.append(EMPTY_MASK.finding(
            display,
            f"all {int(counts.sum())} pixels are background/ignore "
            f"(values {', '.join(str(v) for v in values.tolist())})",
            hint="Nothing to do if empty samples are expected; otherwise drop or down-sample them.",
        ))
    return findings, values, counts


def _outside_spec(display, values, bad, spec: LabelSpec, value_name: str):
    # bad.values are what the loss sees; under reduce_zero_label the file holds each plus one,
    # and the finding names the stored value as the summary and the report do.
    stored = tuple(v + 1 for v in bad.values) if spec.reduce_zero_label else bad.values
    pairs = ", ".join(
        f"{s}{f' ({v} after reduce_zero_label)' if s != v else ''} in {c} pixel{'s' if c != 1 else ''}"
        for s, v, c in zip(stored[:8], bad.values[:8], bad.counts[:8]))
    more = f" and {len(bad.values) - 8} more {noun(len(bad.values) - 8, 'value')}" if len(bad.values) > 8 else ""
    plural = "s" if len(bad.values) > 1 else ""
    if len(values) > IMAGE_LIKE_DISTINCT:
        return VALUE_OUTSIDE_SPEC.finding(
            display,
            f"this looks like an image, not a label: {len(values)} distinct values from "
            f"{int(values.min())} to {int(values.max())}; expected {spec.describe()}",
            hint="The image was saved where the label should be: check the export step that "
            "writes labels (and the image/label folders of the pairing).",
            values=list(stored[:20]), counts=list(bad.counts[:20]), distinct=len(values),
            looks_like_image=True,
        )
    n = spec.effective_num_classes
    highest = max(bad.values)
    hints = []
    if spec.is_contiguous() and highest >= 0 and highest < 256 and highest == n:
        hints.append(f"if {highest} is a real class, num_classes must be {highest + 1} "
                     "(count the background too)")
    ignore_like = [v for v in stored if v in (255, -1, -100)]
    if ignore_like:
        hints.append(f"if {ignore_like[0]} marks borders/unlabelled pixels, declare it with "
                     f"--ignore-index {ignore_like[0]} and pass ignore_index={ignore_like[0]} to the loss")
    hints.append("or remap the values (`labelguard fix remap`)")
    message = (
        f"{value_name}{plural} {pairs}{more} {'are' if plural else 'is'} outside {spec.describe()}. "
        "On a GPU this is the "
        "\"device-side assert triggered\" in cross_entropy"
    )
    return VALUE_OUTSIDE_SPEC.finding(
        display, message, hint="; ".join(hints).capitalize() + ".",
        values=list(stored), counts=list(bad.counts),
    )


def _only_background(values: np.ndarray, spec: LabelSpec) -> bool:
    quiet = set(spec.ignore)
    if spec.background is not None:
        quiet.add(spec.background)
    if spec.reduce_zero_label:
        quiet.add(0)
    return set(values.tolist()) <= quiet
