"""LG201 mask-value-outside-spec: mask values the loss cannot index, colours a declared map
lacks, and photographs saved where a label should be."""

from __future__ import annotations


import numpy as np

from labelguard.core.findings import CONSEQUENCE, Finding
from labelguard.core import storage
from labelguard.core.paths import display_path
from labelguard.core.records import MaskSample
from labelguard.core.registry import FixExample, define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun, plural, shorten, verb
from labelguard.core.values import violations
from labelguard.rules._analysis import IMAGE_TOP_VALUES
from labelguard.rules._instances import reads_as_instances

# Out-of-spec values a finding's data lists (an image saved as a label has millions); its
# ``distinct`` and ``pixels`` count them all.
VALUES_KEPT = 1000

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
    fix_safety="unsafe", fix_command="labelguard fix remap",
    fix_examples=(FixExample(
        "a mask holding 3 with num_classes=3, where 3 was a stray background value -> `--map 3:0`",
        lambda: {"a.png": _with(3)}, "remap", {"mapping": {3: 0}}, lambda: {"a.png": _with(0)},
        spec={"num_classes": 3}),),
)

# The key of ``Finding.data`` that marks a file as a photograph rather than a label map;
# fixers refuse to rewrite such files.
LOOKS_LIKE_IMAGE = "looks_like_image"
# What a value outside the spec does on a GPU: the last sentence of each such finding.
ON_A_GPU = 'On a GPU this is the "device-side assert triggered" in cross_entropy'


def _photo(seed: int = 0) -> np.ndarray:
    """A grey photograph: smooth shading with sensor noise, as a camera gives."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:64, 0:64]
    shade = 60 + 2 * xx + yy + rng.normal(0, 6, (64, 64))
    return np.clip(shade, 0, 255).astype(np.uint8)


EXAMPLES = (
    Example(True, "value 3 with num_classes=3",
            lambda: {"masks/a.png": np.array([[0, 1], [2, 3]], np.uint8)}, spec={"num_classes": 3}),
    Example(False, "values 0..2 with num_classes=3",
            lambda: {"masks/a.png": np.array([[0, 1], [2, 2]], np.uint8)}, spec={"num_classes": 3}),
)

PHOTO_EXAMPLES = (
    Example(True, "a grey photograph in the mask folder, no spec", lambda: {"masks/a.png": _photo()}),
    Example(False, "a mask of three classes, no spec", lambda: {"masks/a.png": np.eye(8, dtype=np.uint8) * 2}),
)


@rule(VALUE_OUTSIDE_SPEC, "mask", EXAMPLES, only_bad_values=True)
def values_outside_spec(sample: MaskSample, spec: LabelSpec):
    values, counts = sample.values, sample.counts
    if values is None:
        return ()
    assert counts is not None  # not a user mistake: label_sample sets the counts with the values
    if reads_as_instances(sample, spec):
        # Object ids read as such (recognised, or declared): LG212 judges them. Where class ids
        # are expected, ids outside the spec still crash a loss: LG201 stays, LG212 says why.
        return ()
    bad = violations(values, counts, spec)
    if bad is None:
        return ()  # a photograph of legal values is photo_of_legal_values'
    if _a_grey_photo(sample):
        return (image_finding(sample, spec),)
    return (outside_spec(sample.display, bad, spec),)


@rule(VALUE_OUTSIDE_SPEC, "mask", PHOTO_EXAMPLES, files_only=True)
def photo_of_legal_values(sample: MaskSample, spec: LabelSpec):
    """A grey photograph stored where a mask should be, whose values the spec all allows (no
    spec, or 256 classes): what it is, not a value, is wrong. The guard's targets are judged
    on their values (values_outside_spec names a photograph holding illegal ones)."""
    if sample.values is None or not _a_grey_photo(sample):
        return ()
    assert sample.counts is not None  # not a user mistake: label_sample sets the counts with the values
    if violations(sample.values, sample.counts, spec) is not None:
        return ()  # values_outside_spec names it
    return (image_finding(sample, spec),)


def _a_grey_photo(sample: MaskSample) -> bool:
    # Colour photographs are named by LG203 (no map) or by the colours a map lacks.
    return sample.looks_like_image and sample.colors is None and not sample.unmapped


@rule(VALUE_OUTSIDE_SPEC, "mask", files_only=True)
def colors_not_in_map(sample: MaskSample, spec: LabelSpec):
    """Colours a declared (or standard) colour map does not list decode to no class."""
    if not sample.unmapped:
        return ()
    unmapped, color_map = sample.unmapped, sample.color_map
    source = color_map.source
    if storage.exists(source):
        source = display_path(source)
    listing = shorten(sorted(unmapped.items(), key=lambda i: -i[1]), 6,
                      lambda item: f"{item[0]} in {plural(item[1], 'pixel')}")
    message = (f"{noun(len(unmapped), 'colour')} {listing} not in the colour map "
               f"({source}, {len(color_map.colors)} colours)")
    extra = {}
    if sample.looks_like_image:
        message = f"this looks like a photograph, not a label ({_evidence(sample)}): " + message
        extra = {LOOKS_LIKE_IMAGE: True, **sample.image_evidence}
    shown = dict(sorted(unmapped.items(), key=lambda i: -i[1])[:32])
    return (VALUE_OUTSIDE_SPEC.finding(
        sample.display, message,
        hint="Add the colour to the map if it is a class, or repaint those pixels; "
        "JPEG-saved colour masks show many near-colours along edges.",
        colors={"%d,%d,%d" % c: n for c, n in shown.items()}, values=[], counts=[], **extra,
    ),)


def covered_share(share: float) -> str:
    """How much of a mask its commonest values cover, for the image evidence: "only 12%", or
    "under 1%" where the share rounds to 0% (a photograph's commonest values cover almost nothing)."""
    return "under 1%" if round(share * 100) < 1 else f"only {share:.0%}"


def _evidence(sample: MaskSample) -> str:
    evidence = sample.image_evidence
    what = "colour" if sample.color_container else "distinct value"
    return (f"{plural(evidence['distinct'], what)}, the {IMAGE_TOP_VALUES} commonest cover "
            f"{covered_share(evidence['top_share'])} of the pixels and {evidence['neighbour_change']:.0%} "
            "of neighbouring pixels differ")


def image_finding(sample: MaskSample, spec: LabelSpec):
    values, counts = sample.values, sample.counts
    # not a user mistake: callers pass a sample with its histogram (label_sample)
    assert values is not None and counts is not None
    evidence = sample.image_evidence
    return VALUE_OUTSIDE_SPEC.finding(
        sample.display,
        f"this looks like an image, not a label: {_evidence(sample)} "
        f"(values {evidence['low']:g} to {evidence['high']:g}"
        f"{'; expected ' + spec.describe() if spec.is_known else ''})",
        hint="The image was saved where the label should be: check the export step that "
        "writes labels (and the image/label folders of the pairing).",
        values=values[:20].tolist(), counts=counts[:20].tolist(), **{LOOKS_LIKE_IMAGE: True},
        **evidence,
    )


def outside_spec(display: str | None, bad, spec: LabelSpec, value_name: str = "label value"):
    # bad.values are what the loss sees; the finding names the stored value as the summary
    # and the report do.
    stored = bad.stored
    pairs = shorten(zip(stored, bad.values, bad.counts), 8, lambda item: (
        f"{item[0]}{f' ({item[1]} after reduce_zero_label)' if item[0] != item[1] else ''} in "
        f"{plural(item[2], 'pixel')}"), total=len(bad.values), what="value")
    distinct = len(bad.values)
    n = spec.effective_num_classes
    highest = max(bad.values)
    hints = []
    if spec.is_contiguous() and highest >= 0 and highest < 256 and highest == n:
        hints.append(f"if {highest} is a real class, num_classes must be {highest + 1} "
                     "(count the background too)")
    ignore_like = [v for v in stored if v in (255, -1, -100)]
    if ignore_like:
        # The same finding comes from the audit and from guard(): both ways to declare it.
        hints.append(f"if {ignore_like[0]} marks borders/unlabelled pixels, declare it as the ignore index "
                     f"(--ignore-index {ignore_like[0]}; guard(..., ignore_index={ignore_like[0]})) and pass "
                     f"ignore_index={ignore_like[0]} to the loss")
    # The remap hint stands alone when no other applies: it then opens the sentence.
    hints.append(f"{'or r' if hints else 'R'}emap the values (`labelguard fix remap`)")
    message = f"{noun(distinct, value_name)} {pairs} {verb(distinct, 'is')} outside {spec.describe()}. {ON_A_GPU}"
    return VALUE_OUTSIDE_SPEC.finding(
        display, message, hint=_sentence("; ".join(hints)), **{CONSEQUENCE: ON_A_GPU},
        values=list(stored[:VALUES_KEPT]), counts=list(bad.counts[:VALUES_KEPT]), distinct=distinct,
        pixels=int(sum(bad.counts)),
    )


def _sentence(text: str) -> str:
    # Not str.capitalize(): it would lower the rest (a path, a class name in the hint).
    return text[:1].upper() + text[1:] + "."


def _with(value: int) -> np.ndarray:
    """A 4x4 mask of classes 0, 1 and 2 whose first pixel holds ``value``."""
    mask = np.diag(np.array([value, 1, 2, 0], np.uint8))
    return mask


def negative_not_ignored_by_the_loss(negative: list[int], ignore_index: int | None) -> Finding:
    """LG201 (preflight, no spec given) for negative target values the loss does not ignore."""
    return VALUE_OUTSIDE_SPEC.finding(
        None,
        f"the targets hold negative values {', '.join(map(str, negative))} that the loss "
        f"does not ignore (ignore_index={ignore_index})",
        hint=f"Build the loss with ignore_index={negative[0]}, or drop those pixels.",
        values=negative,
    )


def ignore_value_not_the_losses(value: int, seen: int, loss: str, ignore_index: int | None) -> Finding:
    """LG201 (preflight) for the spec's ignore value that the loss does not ignore: it reaches
    the loss as a class index."""
    return VALUE_OUTSIDE_SPEC.finding(
        None,
        f"the data marks ignored pixels with {value} ({seen} seen) but "
        f"{loss} ignores {ignore_index}: {value} reaches the loss as a class index",
        hint=f"Build the loss with ignore_index={value}.", values=[value],
        loss_ignore_index=ignore_index,
    )
