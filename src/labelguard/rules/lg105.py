"""LG105 on the merged summary: class names of the annotations that differ only by case,
whitespace or punctuation.

The code (``class-name-variants``) is defined with the class codes in
:mod:`labelguard.checks.classes`; this rule is its dataset-level logic.
"""

from __future__ import annotations

from labelguard.checks.classes import CLASS_VARIANTS
from labelguard.core.rules import rule
from labelguard.core.spec import LabelSpec, normalise_name
from labelguard.core.summary import Summary


@rule(CLASS_VARIANTS, "dataset")
def class_name_variants(summary: Summary, spec: LabelSpec):
    groups: dict[str, list[str]] = {}
    for name in summary.class_objects:
        groups.setdefault(normalise_name(name), []).append(name)
    findings = []
    for names in groups.values():
        if len(names) < 2:
            continue
        names.sort(key=lambda n: -summary.class_objects[n])
        listing = ", ".join(f"{n!r} ({summary.class_objects[n]} objects)" for n in names)
        canonical = next((n for n in names if spec.classes and n in spec.classes), names[0])
        findings.append(CLASS_VARIANTS.finding(
            None,
            f"class names differ only by case, whitespace or punctuation: {listing}",
            hint="Rename them to one spelling: `labelguard fix rename --map \""
            + ",".join(f"{n}={canonical}" for n in names if n != canonical) + "\"`.",
            names=names,
            canonical=canonical,
        ))
    return findings
