"""``labelguard init``: infer a label spec from the data and write it as a config file."""

from __future__ import annotations

from labelguard._audit import audit
from labelguard.rules._unread import refuse_unread_for_extras
from labelguard.config import format_config
from labelguard.core.spec import LabelSpec
from labelguard.errors import UsageError
from labelguard.layouts.base import AuditOptions

# A value this high next to small class values is taken for an ignore/border value.
IGNORE_CANDIDATES = (255, -1, -100)


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


def infer_spec_file(path: str, given: LabelSpec, *, options: AuditOptions | None = None, workers=None,
                    config_file: str | None = None, use_project_config: bool = False,
                    max_pixels: int | None = None, max_file_bytes: int | None = None) -> tuple[str, LabelSpec]:
    """(config text, inferred spec) for the data at ``path``; the read limits as :func:`audit` takes them."""
    report = audit(path, LabelSpec(), options=options, workers=workers, config_file=config_file,
                   use_project_config=False, max_pixels=max_pixels, max_file_bytes=max_file_bytes)
    refuse_unread_for_extras(report.findings, "label spec")
    spec = infer_spec(report, given)
    if not spec.is_known:
        what = ("tokenized data is checked against its model, not a label spec: give --model-config and/or "
                "--tokenizer to `labelguard audit`, or a [tokens] table in labelguard.toml"
                if "tokens" in report.layouts else "give the spec with --num-classes, --values or --classes")
        raise UsageError(f"found no label values or class names under {report.paths[0]} "
                         f"(layout: {', '.join(report.layouts) or 'none'}, {report.summary.samples} samples) "
                         f"to infer a label spec from; nothing written: {what}")
    comments = [f"inferred from {report.summary.samples} samples under {report.paths[0]} "
                f"(layout: {', '.join(report.layouts)})"]
    for value in report.summary.found_values():
        comments.append(f"value {value}: {report.summary.value_files[value]} files, "
                        f"{report.summary.value_pixels[value]} pixels")
    for name in sorted(report.summary.class_objects):
        comments.append(f"class {name!r}: {report.summary.class_objects[name]} objects in "
                        f"{report.summary.class_images[name]} images")
    if any(v in IGNORE_CANDIDATES for v in report.summary.value_files):
        comments.append("values 255/-1/-100 next to class values were taken for ignore values: check it")
    return format_config(spec, comments), spec
