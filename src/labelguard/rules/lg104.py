"""LG104 on the merged summary: a class of the spec that no mask value or object carries;
and, at discovery, an ImageFolder split that lacks class folders of the training split.

:func:`classes_never_seen` is its dataset-level rule:
``data["missing"]`` lists the never-seen class values, the first :data:`MISSING_KEPT` of them;
when there are more (a spec of 100,000,000 classes), ``data["missing_count"]`` has their number.
:func:`class_folders_missing_from_a_split` is the same code on the folders of the splits,
which the ImageFolder layout lists before any file is read (they are what makes the
dataset, as list entries are): it calls it with those lists.
"""

from __future__ import annotations

import itertools

import numpy as np

from labelguard.core.spec import IGNORE_REDUCED
from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec, normalise_name
from labelguard.core.summary import Summary
from labelguard.core.text import LISTED, SHOWN, noun, plural, shorten, verb
from labelguard.rules._dataset import class_label, suggested_remap
from labelguard.rules.lg208 import one_based_labels
from labelguard.rules.lg209 import scaled_binary

CLASS_UNUSED = define(
    "LG104", "class-never-seen", "warning",
    summary="a class of the spec never occurs in the data",
    why="""
Either the spec is wrong (one class too many: the head is larger than the data needs) or
data is missing (a split lacks a class, or a value was merged into another).""",
    bad="spec 0..4, found values [0, 2, 3, 4]  (1 never used)",
    good="spec 0..4, found values [0, 1, 2, 3, 4]",
    fix="Check the spec against the annotation protocol; remap the values if a class was renumbered.",
    scope="dataset",
    fix_safety="display-only",
)

# Entries of label maps that no annotated object carries: VOC/Datumaro labelmap.txt starts
# with "background" and may end with "ignored" (the void colour).
PLACEHOLDER_CLASSES = frozenset({"background", "__background__", "bg", "void", "ignored", "ignore"})
MISSING_KEPT = 1000

EXAMPLES = (
    Example(True, "values 0, 1 for a spec of 0..2",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)}, spec={"num_classes": 3}),
    Example(False, "values 0..2 for a spec of 0..2",
            lambda: {"masks/a.png": np.array([[0, 1], [2, 0]], np.uint8)}, spec={"num_classes": 3}),
)


@rule(CLASS_UNUSED, "dataset", EXAMPLES)
def classes_never_seen(summary: Summary, spec: LabelSpec):
    allowed = spec.allowed_values()
    findings = []
    if summary.value_files and allowed is not None:
        # The class values the loss sees (after reduce_zero_label), what it ignores apart.
        found = {spec.loss_value(v) for v in summary.value_files if not spec.is_ignored(v)}
        # A gap that LG208 (1-based) or LG209 (0/255) explains is not reported twice; any
        # other gap (labels [0, 2, 3, 4, 5] for 0..4) is worth its own finding.
        explained = one_based_labels(summary, spec) or scaled_binary(summary, spec)
        remap = (suggested_remap(summary, spec) or {}) if explained else {}
        seen = {v for v in found | set(remap.values()) if v in allowed}
        # Counted, then listed from the front: never a walk over all the classes of the spec.
        count = allowed.size - len(seen)
        missing = list(itertools.islice((v for v in allowed if v not in seen), MISSING_KEPT))
        if count and any(v in allowed for v in found):
            labels = [class_label(v, spec) for v in missing]
            extra = {"missing_count": count} if count > len(missing) else {}
            findings.append(CLASS_UNUSED.finding(
                None,
                f"{noun(count, 'class value')} {shorten(labels, LISTED, total=count)} of the spec "
                f"never {verb(count, 'occurs')} in {plural(summary.samples, 'sample')} "
                f"(values found: {shorten(sorted(summary.value_files), LISTED)})",
                hint="Check the spec against the data: a class too many in the spec, data "
                "missing from this split, or a renumbered value.",
                missing=missing, **extra,
            ))
    if summary.class_objects and spec.classes:
        seen = set(summary.class_objects)
        missing_names = [c for i, c in enumerate(spec.classes) if c not in seen and str(i) not in seen
                         and not _placeholder_class(c, i, spec)]
        if missing_names and len(missing_names) < len(spec.classes):
            findings.append(CLASS_UNUSED.finding(
                None,
                f"{noun(len(missing_names), 'class')} {shorten(missing_names, LISTED, repr)} "
                f"of the spec never {verb(len(missing_names), 'occurs')} in {plural(summary.samples, 'sample')}",
                hint="Check the class list against the annotations; a split may lack a class.",
                missing=missing_names,
            ))
    return findings


def _placeholder_class(name: str, index: int, spec: LabelSpec) -> bool:
    """True for a label-map entry that is not an object class (the background, the void)."""
    key = normalise_name(name)
    if key in ("background", "bg"):
        return index == spec.background
    return key in {normalise_name(c) for c in PLACEHOLDER_CLASSES}


def class_folders_missing_from_a_split(shown: str, split: str, reference: str,
                                       classes_of: dict[str, list[str]]) -> list:
    """LG104 for the class folders of the ``reference`` split (train) that ``split`` lacks:
    ImageFolder numbers each split's sorted folders on its own, so the indices shift.

    Args:
        shown: the split's folder, as shown.
        split / reference: the split checked and the split it is checked against.
        classes_of: split -> its class folders, sorted.
    """
    present = set(classes_of[split])
    missing = [c for c in classes_of[reference] if c not in present]
    if not missing:
        return []
    ours, theirs = classes_of[split], classes_of[reference]
    shifted = [c for c in ours if ours.index(c) != theirs.index(c)] if all(c in theirs for c in ours) else ours
    shift = (f"; ImageFolder numbers each split on its own, so {plural(len(shifted), 'class')} "
             f"({shorten(shifted, SHOWN, repr)}) {verb(len(shifted), 'gets')} other "
             f"indices in {split}/ than in {reference}/") if shifted else ""
    return [CLASS_UNUSED.finding(
        shown,
        f"{split}/ lacks the {noun(len(missing), 'class folder')} "
        f"{shorten(missing, LISTED, repr)} of {reference}/{shift}",
        hint=f"Add the missing class folders to {split}/ (empty folders do not help: ImageFolder rejects "
        "them), or build every split with the class list of the training split (class_to_idx).",
        missing=missing, split=split, reference=reference, shifted=shifted,
    )]


def one_class_reaches_the_loss(value: int, batches: int, classes: int) -> Finding:
    """LG104 (preflight) for targets that reach the loss with one class besides the ignore
    value (reduce_zero_label on binary masks), while the model has ``classes``."""
    return CLASS_UNUSED.finding(
        None,
        f"the targets reaching the loss hold one class ({value}) besides the "
        f"ignore value {IGNORE_REDUCED} in {plural(batches, 'batch')}, while the model has "
        f"{plural(classes, 'class')}",
        hint="With reduce_zero_label=True a binary {0, 1} mask becomes {255, 0}: the "
        "background is ignored and one class is left; set reduce_zero_label=False for "
        "binary data.",
        values=[value],
    )
