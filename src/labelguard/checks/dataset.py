"""LG4xx and the dataset-level checks that run once on the merged summary.

Each check here is a function ``(summary, spec) -> list[Finding]`` registered in
``DATASET_CHECKS``; the runner calls every one and reports a crash of one as an error
without losing the others.
"""

from __future__ import annotations

from typing import Callable

from labelguard.checks.classes import CLASS_UNUSED, CLASS_VARIANTS
from labelguard.checks.masks import ONE_BASED, SCALED_BINARY
from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.spec import LabelSpec, normalise_name
from labelguard.core.summary import Summary
from labelguard.core.text import LISTED, noun, plural, shorten, verb
from labelguard.core.values import suggest_remap

IMBALANCE = define(
    "LG401", "class-imbalance-extreme", "info",
    summary="class frequency is extremely imbalanced",
    why="""
With a class holding a thousandth of the pixels of another, an unweighted loss learns to
ignore it; it also often reveals a labelling error (a few stray pixels of a class).""",
    bad="pixels: background 98.9%, liver 1.09%, tumour 0.01%",
    good="class weights or a sampler chosen knowing these counts",
    fix="Use class weights or a Dice/focal loss, oversample the rare class, or check the rare "
    "class's pixels for labelling errors.",
    scope="dataset",
)

# The rarest class holding less than this fraction of the most frequent one is flagged.
IMBALANCE_RATIO = 1e-3
# Values under this share of all pixels, found in few files, are stray values (JPEG or
# interpolation fringes: LG202 names them) rather than the dataset's classes.
STRAY_SHARE = 0.005

DatasetCheck = Callable[[Summary, LabelSpec], list[Finding]]
DATASET_CHECKS: list[DatasetCheck] = []


def dataset_check(func: DatasetCheck) -> DatasetCheck:
    DATASET_CHECKS.append(func)
    return func


def main_values(summary: Summary) -> list[int]:
    """The found values that are classes of the data, without stray fringe values."""
    total = sum(summary.value_pixels.values()) or 1
    half = max(1, summary.samples) / 2
    return [v for v in summary.found_values()
            if summary.value_pixels[v] >= STRAY_SHARE * total or summary.value_files[v] >= half]


def _class_label(value: int, spec: LabelSpec) -> str:
    name = spec.class_name(value)
    return f"{value} ({name})" if name else str(value)


@dataset_check
def one_based_labels(summary: Summary, spec: LabelSpec) -> list[Finding]:
    found = summary.found_values()
    allowed = spec.allowed_values()
    if not found or allowed is None or spec.background is None or spec.reduce_zero_label:
        return []
    classes = [v for v in found if v not in spec.ignore]
    if not classes or spec.background in classes or spec.background not in allowed:
        return []
    # 1-based: the values run 1..m and the shift lands exactly on the spec's values.
    if classes != list(range(spec.background + 1, classes[-1] + 1)) or classes[-1] != max(allowed) + 1:
        return []
    remap = {v: v - 1 for v in classes}
    return [ONE_BASED.finding(
        None,
        f"no mask holds the background value {spec.background}: values found "
        f"{classes} look 1-based for {spec.describe()}",
        hint="Apply the remap " + _fmt_map(remap) + " (`labelguard fix remap --map "
        + ",".join(f"{a}:{b}" for a, b in remap.items()) + "`), or set the spec to these values.",
        remap={str(k): v for k, v in remap.items()},
    )]


@dataset_check
def scaled_binary(summary: Summary, spec: LabelSpec) -> list[Finding]:
    allowed = spec.allowed_values()
    if allowed is None or len(allowed) != 2:
        return []
    low, high = sorted(allowed)
    classes = [v for v in main_values(summary) if v not in spec.ignore]
    scaled = [v for v in classes if v not in allowed]
    if not scaled or len(scaled) != 1 or not set(classes) <= {low, scaled[0]} or scaled[0] <= high:
        return []
    value = scaled[0]
    files = summary.value_files[value]
    return [SCALED_BINARY.finding(
        None,
        f"binary masks are stored as {low}/{value} in {plural(files, 'file')} "
        f"while the spec is {{{low}, {high}}}",
        hint=f"Apply the remap {{{value}: {high}}} (`labelguard fix remap --map {value}:{high}`), "
        f"or divide by {value // high if high else value} in the dataset.",
        remap={str(value): high},
        files=files,
    )]


@dataset_check
def classes_never_seen(summary: Summary, spec: LabelSpec) -> list[Finding]:
    allowed = spec.allowed_values()
    findings = []
    if summary.value_files and allowed is not None:
        found = set(summary.value_files)
        if spec.reduce_zero_label:
            found = {v - 1 for v in found if v not in (0, 255)}
        # A gap that LG208 (1-based) or LG209 (0/255) explains is not reported twice; any
        # other gap (labels [0, 2, 3, 4, 5] for 0..4) is worth its own finding.
        explained = one_based_labels(summary, spec) or scaled_binary(summary, spec)
        remap = (suggested_remap(summary, spec) or {}) if explained else {}
        missing = sorted(allowed - found - set(remap.values()))
        if missing and found & allowed:
            labels = [_class_label(v, spec) for v in missing]
            findings.append(CLASS_UNUSED.finding(
                None,
                f"{noun(len(missing), 'class value')} {shorten(labels, LISTED)} of the spec "
                f"never {verb(len(missing), 'occurs')} in {summary.samples} samples "
                f"(found [{shorten(sorted(summary.value_files), LISTED)}])",
                hint="Check the spec against the data: a class too many in the spec, data "
                "missing from this split, or a renumbered value.",
                missing=missing,
            ))
    if summary.class_objects and spec.classes:
        seen = set(summary.class_objects)
        missing_names = [c for i, c in enumerate(spec.classes) if c not in seen and str(i) not in seen
                         and not _placeholder_class(c, i, spec)]
        if missing_names and len(missing_names) < len(spec.classes):
            findings.append(CLASS_UNUSED.finding(
                None,
                f"{noun(len(missing_names), 'class')} {shorten(missing_names, LISTED, repr)} "
                f"of the spec never {verb(len(missing_names), 'occurs')} in {summary.samples} samples",
                hint="Check the class list against the annotations; a split may lack a class.",
                missing=missing_names,
            ))
    return findings


# Entries of label maps that no annotated object carries: VOC/Datumaro labelmap.txt starts
# with "background" and may end with "ignored" (the void colour).
PLACEHOLDER_CLASSES = frozenset({"background", "__background__", "bg", "void", "ignored", "ignore"})


def _placeholder_class(name: str, index: int, spec: LabelSpec) -> bool:
    """True for a label-map entry that is not an object class (the background, the void)."""
    key = normalise_name(name)
    if key in ("background", "bg"):
        return index == spec.background
    return key in {normalise_name(c) for c in PLACEHOLDER_CLASSES}


@dataset_check
def class_name_variants(summary: Summary, spec: LabelSpec) -> list[Finding]:
    groups: dict[str, list[str]] = {}
    for name in summary.class_objects:
        groups.setdefault(normalise_name(name), []).append(name)
    findings = []
    for key, names in groups.items():
        if len(names) < 2:
            continue
        names.sort(key=lambda n: -summary.class_objects[n])
        listing = ", ".join(f"{n!r} ({plural(summary.class_objects[n], 'object')})" for n in names)
        canonical = _spelling(key, names, spec)
        findings.append(CLASS_VARIANTS.finding(
            None,
            f"class names differ only by case, whitespace or punctuation: {listing}",
            hint="Rename them to one spelling: `labelguard fix rename --map \""
            + ",".join(f"{n}={canonical}" for n in names if n != canonical) + "\"`.",
            names=names,
            canonical=canonical,
        ))
    return findings


def _spelling(key: str, names: list[str], spec: LabelSpec) -> str:
    """The name variants should become: the spec's spelling when it has one, else the
    commonest variant without blanks at its ends (``names`` are sorted commonest first)."""
    declared = [c for c in spec.classes or () if normalise_name(c) == key]
    if declared:
        return next((n for n in names if n in declared), declared[0])
    return min(names, key=lambda n: n != n.strip())


@dataset_check
def class_imbalance(summary: Summary, spec: LabelSpec) -> list[Finding]:
    counts = {v: c for v, c in summary.value_pixels.items() if v not in spec.ignore}
    kind = "pixels"
    if not counts:
        counts = dict(summary.class_objects)
        kind = "objects"
    if len(counts) < 2:
        return []
    allowed = spec.allowed_values()
    if allowed is not None and kind == "pixels":
        counts = {v: c for v, c in counts.items() if v in allowed}
    if len(counts) < 2:
        return []
    rarest = min(counts, key=counts.get)
    commonest = max(counts, key=counts.get)
    if counts[rarest] >= IMBALANCE_RATIO * counts[commonest]:
        return []
    total = sum(counts.values())
    listing = ", ".join(
        f"{_class_label(v, spec) if kind == 'pixels' else v}: {100 * c / total:.3g}%"
        for v, c in sorted(counts.items(), key=lambda item: -item[1])
    )
    return [IMBALANCE.finding(
        None,
        f"class frequencies ({kind}) are extremely imbalanced: {listing}; the rarest class "
        f"has {counts[rarest] / counts[commonest]:.2g}x the {kind} of the commonest",
        counts={str(k): v for k, v in counts.items()},
    )]


def suggested_remap(summary: Summary, spec: LabelSpec) -> dict[int, int] | None:
    """The remap that would bring every found mask value into the spec, when one is evident."""
    if spec.reduce_zero_label:
        return None
    return suggest_remap(main_values(summary), spec)


def _fmt_map(mapping: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in mapping.items()) + "}"
