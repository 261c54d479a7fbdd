"""LG203 color-mask: colours where class indices are expected."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import FixExample, define
from labelguard.core.rules import Example, rule
from labelguard.core.summary import Summary
from labelguard.core.text import plural, shorten, shown_color
from labelguard.rules.lg201 import LOOKS_LIKE_IMAGE, covered_share

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
    fix_safety="unsafe", fix_command="labelguard fix colors",
    fix_examples=(FixExample(
        "an RGB mask of black, (128,0,0) and (0,128,0) -> class indices 0, 1, 2 with that colour map",
        lambda: {"a.png": _three_colors()}, "colors", {"color_map": {"0,0,0": 0, "128,0,0": 1, "0,128,0": 2}},
        lambda: {"a.png": _three_classes()}, spec={"num_classes": 3}),),
)

# Colours of a colour mask kept in a finding's data.
COLORS_SHOWN = 32


def _colored() -> np.ndarray:
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[:4, :, 0] = 128
    mask[4:, :, 1] = 128
    return mask


EXAMPLES = (
    Example(True, "an RGB mask and no colour map", lambda: {"masks/a.png": _colored()}),
    Example(False, "the same RGB mask with its colour map declared",
            lambda: {"masks/a.png": _colored(),
                     "label_colors.txt": "0 0 0 background\n128 0 0 road\n0 128 0 tree\n"}),
)


@rule(COLOR_MASK, "mask", EXAMPLES, files_only=True)
def colors_without_map(sample: MaskSample, spec):
    if sample.colors is None:
        return ()
    colors = list(sample.colors.items())
    shown = shorten(colors, 6, lambda item: f"{shown_color(item[0])} in {plural(item[1], 'pixel')}",
                    total=sample.color_count)
    extra: dict = {}
    message = (f"colour mask (mode {sample.record.mode}, {plural(sample.color_count, 'colour')}: {shown}) "
               "where class-index masks are expected")
    hint = ("Declare the colour map (dataset_meta.json, labelmap.txt, --color-map FILE) or convert the masks "
            "(`labelguard fix colors`); the report proposes a colour -> index map.")
    if sample.looks_like_image:
        evidence = sample.image_evidence
        message = (f"this looks like a photograph, not a label: {plural(sample.color_count, 'colour')}, the "
                   f"commonest few cover {covered_share(evidence['top_share'])} of the pixels and "
                   f"{evidence['neighbour_change']:.0%} of neighbouring pixels differ")
        hint = ("The image was saved where the label should be: check the export step that writes labels "
                "(and the image/label folders of the pairing).")
        extra = {LOOKS_LIKE_IMAGE: True, **evidence}
    return (COLOR_MASK.finding(
        sample.display, message, hint=hint,
        colors=dict(colors[:COLORS_SHOWN]), **extra,
    ),)


def _voc_masks(rgb: bool) -> dict:
    indices = np.zeros((8, 8), np.uint8)
    indices[2:6, 2:6] = 1
    files: dict[str, tuple[str, np.ndarray] | np.ndarray] = {
        "SegmentationClass/a.png": ("P", indices), "SegmentationClass/b.png": ("P", indices)}
    if rgb:
        files["SegmentationClass/c.png"] = np.where(indices[..., None] == 1, np.array([128, 0, 0], np.uint8),
                                                    np.zeros(3, np.uint8))
    return files


PALETTE_EXAMPLES = (
    Example(True, "an RGB mask among VOC palette PNGs", lambda: _voc_masks(True), spec={"num_classes": 21}),
    Example(False, "VOC palette PNGs only", lambda: _voc_masks(False), spec={"num_classes": 21}),
)


@rule(COLOR_MASK, "dataset", PALETTE_EXAMPLES)
def rgb_among_palette_masks(summary: Summary, spec):
    """In a VOC layout whose masks are palette PNGs (read as class indices), an RGB mask is
    read as (H, W, 3) by every VOC loader, even though its colours decode here. A dataset
    stored wholly as VOC colours (as Datumaro exports it) is decoded, not flagged."""
    rgb = summary.palette_decoded["voc"]
    palette = summary.dtypes["P"]
    if not rgb or not palette:
        return []
    examples = summary.palette_examples.get("voc", [])
    return [COLOR_MASK.finding(
        examples[0] if rgb == 1 else None,  # about one file: the finding is that file's
        f"{plural(rgb, 'RGB mask')} ({shorten(examples, len(examples), total=rgb)}) "
        f"among {plural(palette, 'palette PNG')} in a VOC layout: a VOC loader reads "
        "such a mask as (H, W, 3), not as class indices (labelguard decoded the colours "
        "through the VOC palette)",
        hint="Save them as palette (mode P) PNGs with the VOC palette (`labelguard fix colors`).",
        files=examples, rgb_masks=rgb, palette_masks=palette,
    )]


def _three_classes() -> np.ndarray:
    mask = np.zeros((4, 4), np.uint8)
    mask[0], mask[1] = 1, 2
    return mask


def _three_colors() -> np.ndarray:
    return np.array([(0, 0, 0), (128, 0, 0), (0, 128, 0)], np.uint8)[_three_classes()]
