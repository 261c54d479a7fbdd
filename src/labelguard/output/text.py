"""The readable "label audit report": summary first, findings grouped by code, values, next steps."""

from __future__ import annotations

from collections import defaultdict

from labelguard.core.registry import REGISTRY
from labelguard.output import Formatter, register

EXAMPLES = 5


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@register
class TextFormatter(Formatter):
    name = "text"
    examples = EXAMPLES

    def start(self, report) -> None:
        self.groups = defaultdict(list)

    def handle(self, finding) -> None:
        self.groups[finding.code].append(finding)

    def stop(self, report) -> None:
        lines: list[str] = []
        out = lines.append
        out("labelguard label audit report")
        out("=" * 29)
        layouts = ", ".join(sorted(set(report.layouts)))
        out(f"data:      {', '.join(report.paths)}  (layout: {layouts})")
        for where, spec in report.dataset_specs():
            origins = spec.describe_origins()
            out(f"spec:      {where + ': ' if where else ''}{spec.describe()}{'  ' + origins if origins else ''}")
        unit = "file" if set(report.summary.kinds) <= {"mask"} else "sample"
        samples = _plural(report.summary.samples, unit)
        if report.sampled:
            samples += (f"  (a random sample of {report.sampled['size']} out of {report.sampled['of']}, "
                        f"seed {report.sampled['seed']}: rerun without --sample for the full audit)")
        out(f"audited:   {samples}")
        counts = report.counts()
        out(f"result:    {_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, "
            f"{counts['info']} info")
        if report.summary.empty:
            out(f"empty:     {_plural(report.summary.empty, 'mask')} hold only background/ignore values")
        if report.summary.unreadable:
            out(f"unreadable: {_plural(report.summary.unreadable, 'file')}")
        self._values(report, out)
        self._classes(report, out)
        self._findings(report, out)
        for note in report.notes:
            out(f"note: {note}")
        for error in report.errors:
            out(f"internal error: {error}")
        self._next_steps(report, out)
        self.stream.write("\n".join(lines) + "\n")

    def _values(self, report, out) -> None:
        summary = report.summary
        if not summary.value_files:
            return
        out("")
        out("Found values")
        out(f"  {'value':>7}  {'class':<16} {'files':>7} {'pixels':>12}  in spec")
        for value in summary.found_values()[:40]:
            verdict = {True: "yes", False: "NO", None: "-"}[report.value_in_spec(value)]
            if value in report.spec.ignore:
                verdict = "ignored"
            name = report.spec.class_name(value) or ""
            out(f"  {value:>7}  {name[:16]:<16} {summary.value_files[value]:>7} "
                f"{summary.value_pixels[value]:>12}  {verdict}")
        if len(summary.value_files) > 40:
            out(f"  ... {len(summary.value_files) - 40} more values (see --output-format json)")
        outside = report.outside_spec()
        if outside:
            listing = "; ".join(f"{v} in {_plural(f, 'file')} ({p} pixels)" for v, (f, p) in outside.items())
            out(f"  outside the spec: {listing}")
        if report.suggested_remap:
            mapping = ", ".join(f"{k}: {v}" for k, v in report.suggested_remap.items())
            out(f"  suggested remap: {{{mapping}}}")
        if report.suggested_color_map:
            mapping = ", ".join(f"({k}) -> {v}" for k, v in list(report.suggested_color_map.items())[:12])
            more = " ..." if len(report.suggested_color_map) > 12 else ""
            out(f"  proposed colour -> index map: {mapping}{more}")

    def _classes(self, report, out) -> None:
        summary = report.summary
        if not summary.class_objects:
            return
        out("")
        out("Classes")
        out(f"  {'class':<24} {'objects':>9} {'images':>8}  in spec")
        names = set(report.spec.classes or ())
        for name in sorted(summary.class_objects, key=lambda n: (-summary.class_objects[n], n))[:60]:
            verdict = "-" if not names else ("yes" if name in names else "NO")
            out(f"  {name[:24]:<24} {summary.class_objects[name]:>9} {summary.class_images[name]:>8}  {verdict}")
        if len(summary.class_objects) > 60:
            out(f"  ... {len(summary.class_objects) - 60} more classes (see --output-format json)")

    def _findings(self, report, out) -> None:
        if not self.groups:
            out("")
            out("No findings.")
            return
        order = sorted(self.groups, key=lambda code: (-max(f.severity for f in self.groups[code]), code))
        for code in order:
            group = self.groups[code]
            check = REGISTRY.get(code)
            files = len({f.path for f in group if f.path})
            out("")
            where = f", {_plural(files, 'file')}" if files > 1 else ""
            title = check.summary if check else ""
            out(f"{code} {group[0].severity} {check.name if check else ''}: {_plural(len(group), 'finding')}{where}")
            if title:
                out(f"  {title}")
            overview = _id_overview(group)
            if overview:
                out(f"  {overview}")
            for finding in group[: self.examples]:
                place = f"{finding.path}: " if finding.path else ""
                out(f"  - {place}{finding.message}")
            if len(group) > self.examples:
                out(f"  ... and {len(group) - self.examples} more (--output-format json lists every finding)")
            hints = list(dict.fromkeys(f.hint for f in group if f.hint))
            if hints:
                out(f"  hint: {hints[0]}")

    def _next_steps(self, report, out) -> None:
        steps = []
        codes = sorted(self.groups)
        if codes:
            steps.append(f"labelguard rule {codes[0]}   explains a check (why it breaks training, how to fix)")
        if report.suggested_remap:
            mapping = ",".join(f"{k}:{v}" for k, v in report.suggested_remap.items())
            steps.append(f"labelguard fix remap --map {mapping} {' '.join(report.paths)}   (dry run first)")
        if not report.spec.is_known:
            steps.append(f"labelguard init {report.paths[0]}   writes a label spec from the values found; "
                         "later audits check new data against it")
        if report.sampled:
            steps.append("rerun without --sample to audit every file")
        steps.append("wrap the training dataset with labelguard.torch.guard(...) to name the sample at load time")
        out("")
        out("What to run next")
        for step in steps:
            out(f"  {step}")


def _id_overview(group) -> str:
    """One line over many id findings: every id found against each num_classes."""
    by_limit: dict = {}
    for finding in group:
        ids, limit = finding.data.get("ids"), finding.data.get("num_classes")
        if ids is None or limit is None:
            return ""
        by_limit.setdefault(limit, set()).update(ids)
    if len(group) < 2:
        return ""
    parts = [f"ids {sorted(ids)[:20]} with num_classes={limit}" for limit, ids in sorted(by_limit.items())]
    return "in all: " + "; ".join(parts) + f" across {_plural(len(group), 'finding')}"
