"""``labelguard init``: infer a label spec from the data and write it as a config file."""

from __future__ import annotations

from labelguard._audit import audit
from labelguard.rules._unread import refuse_unread_for_extras
from labelguard.config import format_config
from labelguard.core.findings import Severity
from labelguard.core.spec import CLASS_PARTS, LabelSpec
from labelguard.core.text import clipped, plural
from labelguard.errors import UsageError
from labelguard.layouts.base import AuditOptions

# A value this high next to small class values is taken for an ignore/border value.
IGNORE_CANDIDATES = (255, -1, -100)
# A class value is flagged as rare (a stray value, or a class to confirm) when it is in one file
# or at most this share of the files, and in at most RARE_AGAINST of the files of the most common class;
# judged only with RARE_FEWEST files or more.
RARE_SHARE = 0.02
RARE_AGAINST = 0.05
RARE_FEWEST = 10


def infer_spec(report, given: LabelSpec) -> LabelSpec:
    """The spec the data implies: the values (or class names) found, ignore values apart."""
    summary = report.summary
    spec = report.spec
    if summary.value_files:
        found = summary.found_values()
        ignore = tuple(v for v in found if v in IGNORE_CANDIDATES and len(found) > 1) or spec.ignore
        classes = [v for v in found if v not in ignore]
        inferred = LabelSpec(values=tuple(classes), ignore=ignore)
        if classes and inferred.is_contiguous():
            inferred = LabelSpec(num_classes=len(classes), ignore=ignore)
        return inferred.merged(given)
    if summary.class_objects:
        if spec.classes:
            return LabelSpec(classes=spec.classes).merged(given)
        names = sorted(summary.class_objects)
        if all(name.lstrip("-").isdigit() for name in names):
            # Integer class ids (YOLO rows, MNIST/ImageNet label columns): the ids are indices.
            ids = sorted(int(name) for name in names)
            ignore = tuple(i for i in ids if i < 0)
            return LabelSpec(num_classes=max(ids) + 1, ignore=ignore).merged(given)
        return LabelSpec(classes=tuple(names)).merged(given)
    return given


def data_faults(report, spec: LabelSpec, given: LabelSpec) -> list[str]:
    """What in the data a spec inferred from it would take for the truth: the audit's findings
    of label values and names (:data:`FAULT_CODES`: fractional or non-finite values, JPEG
    damage, colour masks, unreadable files, 1-based or 0/255 labels, names or ids the given
    spec lacks), and, when the user gave no classes, class values so rare next to the others
    that they may be strays (a value 3 in one mask of forty, which would make num_classes one
    larger). Findings that do not change the values or names inferred (missing images, list
    lines, storage dtypes, boxes) are the audit's to report, not init's."""
    faults = [f"{f.code} {f.path + ': ' if f.path else ''}{f.message}" for f in report.findings
              if f.severity >= Severity.WARNING and f.code in FAULT_CODES]
    summary = report.summary
    classes = {v: n for v, n in summary.value_files.items() if not spec.is_ignored(v)}
    said = any(part in given.set_parts() for part in CLASS_PARTS)
    if not said and summary.samples >= RARE_FEWEST and len(classes) > 1:
        common = max(classes.values())
        for value, files in sorted(classes.items()):
            if files <= max(1.0, RARE_SHARE * summary.samples) and files <= RARE_AGAINST * common:
                examples = ", ".join(summary.value_examples.get(value, [])[:3])
                pixels = plural(summary.value_pixels[value], "pixel") + (f"; {examples}" if examples else "")
                faults.append(f"value {value} is in {files:,} of {plural(summary.samples, 'mask')} ({pixels}), "
                              f"while the most common class is in {common:,}: a stray value, or a rare class "
                              "to confirm")
    return faults


# The findings that change what init infers: values or names that are not what they seem.
FAULT_CODES = frozenset({"LG001", "LG101", "LG102", "LG103", "LG201", "LG202", "LG203", "LG204", "LG208",
                         "LG209", "LG214"})


def infer_spec_file(path: str, given: LabelSpec, *, options: AuditOptions | None = None, workers=None,
                    config_file: str | None = None, use_project_config: bool = False,
                    max_pixels: int | None = None, max_file_bytes: int | None = None
                    ) -> tuple[str, LabelSpec, list[str]]:
    """(config text, inferred spec, the data's faults it would bake in: :func:`data_faults`)
    for the data at ``path``; the read limits as :func:`audit` takes them. The faults are
    written into the text as comments too."""
    report = audit(path, given, options=options, workers=workers, config_file=config_file,
                   use_project_config=False, max_pixels=max_pixels, max_file_bytes=max_file_bytes)
    refuse_unread_for_extras(report.findings, "label spec")
    spec = infer_spec(report, given)
    if not spec.is_known:
        what = ("tokenized data is checked against its model, not a label spec: give --model-config and/or "
                "--tokenizer to `labelguard audit`, or a [tokens] table in labelguard.toml"
                if "tokens" in report.layouts else "give the spec with --num-classes, --values or --classes")
        raise UsageError(f"found no label values or class names under {report.paths[0]} "
                         f"(layout: {', '.join(report.layouts) or 'none'}, {plural(report.summary.samples, 'sample')}) "
                         f"to infer a label spec from; nothing written: {what}")
    comments = [f"inferred from {plural(report.summary.samples, 'sample')} under {report.paths[0]} "
                f"(layout: {', '.join(report.layouts)})"]
    for value in report.summary.found_values():
        comments.append(f"value {value}: {plural(report.summary.value_files[value], 'file')}, "
                        f"{plural(report.summary.value_pixels[value], 'pixel')}")
    for name in sorted(report.summary.class_objects):
        comments.append(f"class {name!r}: {plural(report.summary.class_objects[name], 'object')} in "
                        f"{plural(report.summary.class_images[name], 'image')}")
    if any(v in IGNORE_CANDIDATES for v in report.summary.value_files):
        comments.append("values 255/-1/-100 next to class values were taken for ignore values: check it")
    if spec.sizes is not None:
        comments.append("sizes applies only where this file is given with --config: a config found with the data "
                        "may not loosen the size checks")
    faults = data_faults(report, spec, given)
    if faults:
        comments.append(f"FLAGGED: the data holds {len(faults)} fault{'s' if len(faults) > 1 else ''} this spec "
                        "was inferred over; check each before trusting the spec:")
        comments.extend(f"  {clipped(fault, 300)}" for fault in faults[:FAULTS_WRITTEN])
        if len(faults) > FAULTS_WRITTEN:
            comments.append(f"  ... and {len(faults) - FAULTS_WRITTEN} more: labelguard audit lists them")
    return format_config(spec, comments), spec, faults


FAULTS_WRITTEN = 20
