"""LG006 no-label-spec: the audit had no label spec, so values and classes were listed, not
checked; or tokenized data was read without a token spec (no model config, no tokenizer), so
its ids were counted, not checked."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import plural, shorten, verb
from labelguard.core.spec import TokenSpec
from labelguard.rules._examples import token_lines

NO_SPEC = define(
    "LG006", "no-label-spec", "warning",
    summary="no label spec at all: values and classes were listed, not checked",
    why="""
Without the number of classes, the legal values or the class names, no value can be out of
range and no name unknown: an audit of data holding value 3 for a 3-class model, or a stray
class name, finds nothing to report. The values and classes found are listed so that a
person can judge them, but nothing was checked against what the model expects.""",
    bad="labelguard audit masks/   (no --num-classes, no config, no dataset metadata)",
    good="labelguard audit masks/ --num-classes 3 --ignore-index 255; or a [labels] table in labelguard.toml",
    fix="Give the spec: --num-classes/--classes/--values (and --ignore-index), a [labels] table in "
    "labelguard.toml, or the dataset's own metadata (dataset.json, labels.txt, a colour map).",
    scope="dataset",
    fix_safety="display-only",
)

# Values and classes named in the finding.
SHOWN = 10

EXAMPLES = (
    Example(True, "masks audited without any spec",
            lambda: {"masks/a.png": np.array([[0, 1], [2, 3]], np.uint8)}),
    Example(False, "the same masks with num_classes",
            lambda: {"masks/a.png": np.array([[0, 1], [2, 3]], np.uint8)}, spec={"num_classes": 4}),
)


TOKEN_EXAMPLES = (
    Example(True, "token ids audited without a model config or tokenizer",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2], "label": 0}])}),
    Example(False, "the same token ids with the model's vocab_size",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2], "label": 0}])},
            spec={"tokens": TokenSpec(vocab_size=100)}),
)


@rule(NO_SPEC, "dataset", TOKEN_EXAMPLES)
def no_token_spec(summary: Summary, spec: LabelSpec):
    if not summary.token_rows or (spec.tokens is not None and spec.tokens.is_known):
        return []
    columns = sorted(summary.token_rows)
    listed = shorten(columns, SHOWN, lambda name: f"{name!r}" + (
        f" (highest {summary.token_highest[name]})" if name in summary.token_highest else ""))
    rows = max(summary.token_rows.values())
    return [NO_SPEC.finding(
        None,
        f"no token spec was given: {plural(rows, 'row')} of tokenized data ({listed}) were read, not checked "
        "against the model's embedding, positions, token types and labels",
        hint="Give the model and its tokenizer: --model-config config.json (or the model folder) and "
        "--tokenizer tokenizer.json, or model_config/tokenizer under [tokens] in labelguard.toml.",
        columns=columns, rows=rows,
    )]


@rule(NO_SPEC, "dataset", EXAMPLES)
def no_label_spec(summary: Summary, spec: LabelSpec):
    values = summary.found_values()
    classes = sorted(summary.class_objects)
    if spec.is_known or not (values or classes):
        return []
    listed = []
    if values:
        listed.append(f"{plural(len(values), 'mask value')} ({shorten(values, SHOWN)})")
    if classes:
        listed.append(f"{plural(len(classes), 'class')} ({shorten(classes, SHOWN, repr)})")
    found = " and ".join(listed)
    # The subject is the values, the classes, or both: "1 class ... was", "2 classes ... were".
    subjects = 2 if len(listed) == 2 else len(values) or len(classes)
    return [NO_SPEC.finding(
        None,
        f"no label spec was given or found: {found} in {plural(summary.samples, 'sample')} "
        f"{verb(subjects, 'was')} listed, not checked against the classes the model expects",
        values=values[:SHOWN], classes=classes[:SHOWN], samples=summary.samples,
    )]
