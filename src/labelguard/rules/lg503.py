"""LG503: the definition of the code, and the findings labelguard.torch reports with it from
what it measured of the model's head, a loss call and the targets."""

from __future__ import annotations

from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.text import LISTED, SHOWN, noun, plural, shorten, verb

HEAD_MISMATCH = define(
    "LG503", "head-size-mismatch", "error",
    summary="the model's number of output classes differs from the spec or the targets",
    why="""
A head with 2 outputs trained on labels {0, 1, 2} indexes past the logits: the cross-entropy
device-side assert.""",
    bad="SwinUnet(num_classes=2) trained on masks holding 0, 1 and 2",
    good="SwinUnet(num_classes=3)",
    fix="Make the head's out_features/out_channels equal to num_classes (background included).",
    scope="runtime",
    fix_safety="display-only",
)


def head_mismatch_of_loss(where: str | None, loss: str, classes: int, num_classes: int,
                          input_shape: tuple[int, ...], target_shape: tuple[int, ...] | None = None) -> Finding:
    """LG503 for a loss input whose class axis holds ``classes`` where ``num_classes`` was given;
    ``target_shape`` when the class axis was found by comparing the input's shape with the target's."""
    shapes = f"shape {input_shape}" if target_shape is None else f"shape {input_shape}, target {target_shape}"
    return HEAD_MISMATCH.finding(
        where,
        f"{loss} input has {classes} classes ({shapes}) but num_classes={num_classes}",
        hint=f"Make the head's out_features/out_channels {num_classes}, or fix num_classes.",
        outputs=classes, num_classes=num_classes,
    )


def head_differs_from_num_classes(classes: int, head: str, output_shape: list[int] | None,
                                  num_classes: int) -> Finding:
    """LG503 for a model whose output has ``classes`` classes where the spec says ``num_classes``;
    ``head`` names the layer that gives them (or the model output), ``output_shape`` is the
    output's shape."""
    return HEAD_MISMATCH.finding(
        None,
        f"{head} gives {classes} classes (output shape {output_shape}) but num_classes={num_classes}",
        hint=f"Build the head with {num_classes} outputs (background included), or fix num_classes.",
        outputs=classes, num_classes=num_classes,
    )


def targets_past_the_head(classes: int, head: str, seen: list[int], too_large: list[int], zero_seen: bool) -> Finding:
    """LG503 for target values ``too_large`` for a head of ``classes`` outputs (``head`` names it);
    ``seen``: the values the targets hold besides the ignored ones, ``zero_seen``: whether 0 is
    among the values of the targets, ignored or not."""
    hint = f"num_classes must be {max(too_large) + 1} (build the head with that many outputs), or remap the values"
    if zero_seen and max(too_large) == classes:
        hint += "; if 0 means 'unlabelled' (ADE20K style), set reduce_zero_label=True"
    held = shorten(seen, LISTED, what="value")
    if too_large == seen:
        past = f"{held}, {'all' if len(seen) > 1 else 'which indexes'} past the logits"
    else:
        past = (f"{held}: {noun(len(too_large), 'value')} {shorten(too_large, SHOWN, what='value')} "
                f"{verb(len(too_large), 'indexes')} past the logits")
    return HEAD_MISMATCH.finding(
        None,
        f"{head} gives {plural(classes, 'class')} but the targets hold {past} "
        "(on a GPU: the \"device-side assert triggered\" in the loss)",
        hint=hint + ".", outputs=classes, values=too_large,
    )


def class_weights_differ_from_head(loss: str, weights: int, head: str, classes: int) -> Finding:
    """LG503 for a class-weight vector of ``weights`` entries given to ``loss`` for a head (``head``
    names it) of ``classes`` outputs."""
    return HEAD_MISMATCH.finding(
        None,
        f"{loss}(weight=...) has {plural(weights, 'entry')} but {head} gives {plural(classes, 'class')}",
        hint=f"Give one weight per class ({classes}, background included); the ignore value needs no weight.",
        weight_length=weights, outputs=classes,
    )
