"""LG604 label-outside-head: a label of a sequence (or token) classification dataset outside
the model's labels, the dataset's own ClassLabel, or the label spec; -100 is ignored."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.tokens import LABEL_COLUMNS, TokenBatch
from labelguard.core.spec import HF_IGNORE_INDEX, TokenSpec, class_label_spec
from labelguard.rules._examples import token_lines
from labelguard.rules._tokens import offending_values

LABEL_OUTSIDE_HEAD = define(
    "LG604", "label-outside-head", "error",
    summary="a sequence label id is outside the model's labels (num_labels, the dataset's ClassLabel) other "
    "than the ignore index (-100)",
    why="""
A classification head has num_labels outputs and the cross-entropy loss takes a label as an
index into them: label 3 with num_labels=3, or -1 (the datasets library's "no label"), fails
the "t >= 0 && t < n_classes" device-side assert on a GPU. Only -100, the loss's
ignore_index, may stand for "no label" (padding and sub-word pieces of token labels).""",
    bad="""AutoModelForSequenceClassification.from_pretrained(name, num_labels=2)
dataset["label"]   # 0, 1, 2: three classes""",
    good="""AutoModelForSequenceClassification.from_pretrained(name, num_labels=3,
    id2label=dict(enumerate(dataset.features["label"].names)))""",
    fix="Build the head with num_labels equal to the classes of the label column (its ClassLabel), or remap "
    "the labels; mark what has no label with -100, never -1 (the datasets library's 'no label', which test "
    "splits such as GLUE's carry: keep those away from the loss).",
)

SPEC = {"tokens": TokenSpec(num_labels=3, origins=(("num_labels", "config.json"),))}
EXAMPLES = (
    Example(True, "a label 3 for a head of 3 labels",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2], "label": 0},
                                                 {"input_ids": [1, 6, 2], "label": 3}])}, spec=SPEC),
    Example(False, "labels 0..2 and token labels with -100",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2], "labels": [-100, 2, -100]},
                                                 {"input_ids": [1, 6, 2], "labels": [-100, 0, -100]}])}, spec=SPEC),
)


@rule(LABEL_OUTSIDE_HEAD, "tokens", EXAMPLES)
def labels_outside_head(batch: TokenBatch, spec: LabelSpec):
    found = []
    for name, column in batch.columns.items():
        for legal, expected in _limits(column.classes, name in LABEL_COLUMNS, spec, spec.origins):
            found += offending_values(LABEL_OUTSIDE_HEAD, batch, column, legal, phrase="holds labels outside",
                                      noun="labels", expected=expected, hint=LABEL_OUTSIDE_HEAD.fix)
    return found


@lru_cache(maxsize=256)
def _limits(classes: int | None, is_label: bool, spec: LabelSpec,
            origins: tuple) -> tuple[tuple[LabelSpec, str], ...]:
    """(legal labels, what they are) of each source that constrains a column: its ClassLabel's
    ``classes``, and for a label column the model's head and the label spec. Worked out once
    per spec (``origins`` in the key: equal specs from other files are worded apart), not per
    batch."""
    tokens = spec.tokens
    ignore = tokens.label_ignore if tokens is not None else (HF_IGNORE_INDEX,)
    ignored = ", ".join(str(v) for v in ignore) + " ignored"
    limits = []
    if classes is not None:
        limits.append((class_label_spec(classes, ignore),
                       f"the dataset's {classes} classes (its ClassLabel feature; {ignored})"))
    if not is_label:
        return tuple(limits)
    if tokens is not None and tokens.num_labels is not None and tokens.num_labels > 1 and not tokens.labels_are_tokens:
        head = tokens.described("num_labels", f"num_labels {tokens.num_labels}")
        limits.append((tokens.class_labels(tokens.num_labels),
                       f"the model's {tokens.num_labels} labels ({head}; {ignored})"))
    if spec.is_known:
        described = spec.describe_origins()
        label_spec = replace(spec, ignore=tuple(dict.fromkeys(spec.ignore + ignore)), reduce_zero_label=False,
                             tokens=None)
        limits.append((label_spec,
                       f"the label spec {spec.describe()}{' ' + described if described else ''} ({ignored})"))
    return tuple(limits)
