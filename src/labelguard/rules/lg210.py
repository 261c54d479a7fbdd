"""LG210 ignore-only-by-convention: a value the user's spec does not declare is accepted as
ignored only because a tool's convention says so (labelme2voc's ``__ignore__``: 255 in the
palette PNGs, -1 in the ``.npy`` arrays).

The spec knows which ignore values a convention gave and which parts the user declared
(:meth:`~labelguard.core.spec.LabelSpec.unsaid_ignore`); this rule looks for those values
in the merged summary, so no file is read again."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import CLASS_PARTS, LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import SHOWN, plural, shorten

UNSAID_IGNORE = define(
    "LG210", "ignore-only-by-convention", "warning",
    summary="a value is accepted as ignored only because of a tool's convention, not because the user "
    "declared it",
    why="""
labelme2voc writes the pixels of its __ignore__ label as 255 in the palette PNGs and -1 in the
.npy arrays, and says so only by the class file it writes beside them. An audit that takes
that convention accepts those values; a training run does not know it: a spec of 21 classes
with PyTorch's default CrossEntropyLoss(ignore_index=-100) takes 255 for a class index and
fails with the device-side assert. When the spec came from you and named no ignore index,
the values accepted only by the convention are named, with the flag and the loss argument
that declare them.""",
    bad="labelguard audit data_dataset_voc --num-classes 21   (class_names.txt of labelme2voc beside "
    "masks holding 255)",
    good="labelguard audit data_dataset_voc --num-classes 21 --ignore-index 255, and "
    "CrossEntropyLoss(ignore_index=255) in training",
    fix="Declare the value the loss ignores: --ignore-index V (or ignore_index = [V] under [labels] in "
    "labelguard.toml) and pass ignore_index=V to the loss; or remap it (`labelguard fix remap`).",
    scope="dataset",
)


def _labelme_masks() -> dict:
    mask = np.array([[0, 1, 255], [2, 255, 0]], np.uint8)
    return {"class_names.txt": "_background_\ncat\ndog\n",
            "JPEGImages/a.jpg": np.zeros((2, 3, 3), np.uint8),
            "SegmentationClass/a.png": ("P", mask)}


EXAMPLES = (
    Example(True, "labelme2voc's 255 with --num-classes 3 and no ignore index",
            _labelme_masks, spec={"num_classes": 3}),
    Example(False, "the same masks with --num-classes 3 --ignore-index 255",
            _labelme_masks, spec={"num_classes": 3, "ignore": (255,)}),
    Example(False, "the same masks with no spec given: the class file is the spec",
            _labelme_masks),
)


@rule(UNSAID_IGNORE, "dataset", EXAMPLES)
def ignore_only_by_convention(summary: Summary, spec: LabelSpec):
    unsaid = [v for v in spec.unsaid_ignore() if summary.value_files.get(v)]
    if not unsaid:
        return []
    convention = spec.origin("ignore_index") or "a convention of the dataset's layout"
    given = ", ".join(part + (f" from {spec.origin(part)}" if spec.origin(part) else "")
                      for part in CLASS_PARTS if part in spec.declared)
    findings = []
    for value in unsaid:
        files = summary.value_files[value]
        examples = summary.value_examples.get(value, [])
        pixels = summary.value_pixels[value]
        findings.append(UNSAID_IGNORE.finding(
            None,
            f"value {value} in {plural(files, 'file')} ({plural(pixels, 'pixel')}: "
            f"{shorten(examples, SHOWN, total=files)}) is ignored only by a convention: {convention}. "
            f"The spec you gave ({given}) declares no ignore index, and a loss left at PyTorch's "
            f"default ignore_index=-100 takes {value} for a class",
            hint=f"If {value} is to be ignored, declare it: --ignore-index {value} (ignore_index = [{value}] "
            f"under [labels]) and CrossEntropyLoss(ignore_index={value}); if not, remap it "
            "(`labelguard fix remap`).",
            value=value, files=files, pixels=pixels, examples=examples, convention=convention,
        ))
    return findings
