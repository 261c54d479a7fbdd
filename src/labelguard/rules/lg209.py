"""LG209 binary-mask-scaled: binary masks stored as 0/255 for a {0, 1} spec."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import FixExample, define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import plural
from labelguard.rules._dataset import main_values

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
    fix_safety="unsafe", fix_command="labelguard fix remap",
    fix_examples=(FixExample(
        "binary masks stored as 0/255 with num_classes=2 -> `--map 255:1` (the report's suggested remap)",
        lambda: {"a.png": np.eye(4, dtype=np.uint8) * 255, "b.png": (1 - np.eye(4, dtype=np.uint8)) * 255},
        "remap", {"mapping": {255: 1}},
        lambda: {"a.png": np.eye(4, dtype=np.uint8), "b.png": 1 - np.eye(4, dtype=np.uint8)},
        spec={"num_classes": 2}),),
)

EXAMPLES = (
    Example(True, "a 0/255 mask for num_classes=2",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8) * 255}, spec={"num_classes": 2}),
    Example(False, "a 0/1 mask for num_classes=2",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)}, spec={"num_classes": 2}),
)


@rule(SCALED_BINARY, "dataset", EXAMPLES)
def scaled_binary(summary: Summary, spec: LabelSpec):
    allowed = spec.allowed_values()
    if allowed is None or allowed.size != 2:
        return []
    low, high = allowed
    classes = [v for v in main_values(summary) if not spec.is_ignored(v)]
    scaled = [v for v in classes if v not in allowed]
    if not scaled or len(scaled) != 1 or not set(classes) <= {low, scaled[0]} or scaled[0] <= high:
        return []
    value = scaled[0]
    files = summary.value_files[value]
    return [SCALED_BINARY.finding(
        summary.value_examples[value][0] if files == 1 else None,  # about one file: the finding is that file's
        f"binary masks are stored as {low}/{value} in {plural(files, 'file')} "
        f"while the spec is {{{low}, {high}}}",
        hint=f"Apply the remap {{{value}: {high}}} (`labelguard fix remap --map {value}:{high}`), "
        f"or divide by {value // high if high else value} in the dataset.",
        remap={str(value): high},
        files=files,
    )]
