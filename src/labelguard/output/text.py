"""The readable "label audit report": summary first, findings grouped by code, values, next steps.

A report of several datasets (one PATH holding several, or several PATHs) has a section per
dataset, each with its root, layout, spec, tables and findings as an audit of that dataset alone
gives them, then the totals.

The text is short but hides no distinct problem: each code group shows one example for every
distinct class, value and hint it holds (then counts the rest), a group whose findings give
different hints prints each example's own hint, a sentence that ends every finding of a group
is said once on its summary line, and every list is capped with a count
(:data:`labelguard.core.text.LISTED`). The JSON report keeps everything.

Options: ``color`` (severities, codes and headings in colour), ``width`` (lines wrapped to it,
for a terminal; without it each line stays one line, for grep and diff) and ``quiet`` (the
findings and one result line, no header, tables or next steps).
"""

from __future__ import annotations

import re
from collections import defaultdict

from labelguard.core.findings import CONSEQUENCE
from labelguard.core.registry import REGISTRY
from labelguard.core.summary import VALUES_KEPT
from labelguard.core.text import (
    LISTED, cut, plural, printable, severity_counts_text, shorten, show_name, shown_color, verb,
)
from labelguard.output import Formatter, register
from labelguard.output._style import Style, wrapped

EXAMPLES = 5
# A message longer than this is cut in the text report (a list that a check failed to cap).
MESSAGE_CHARS = 2000
# Class table rows before the rest are counted.
CLASS_ROWS = 60


@register
class TextFormatter(Formatter):
    name = "text"
    options = ("color", "width", "quiet")
    examples = EXAMPLES

    def start(self, report) -> None:
        self.groups: dict[str, list] = defaultdict(list)
        self.baseline = report.baseline
        self.style = Style(bool(self.settings.get("color")))

    def handle(self, finding) -> None:
        # Findings a baseline holds are counted in its line, not listed again.
        if self.baseline is None or not self.baseline.is_known(finding):
            self.groups[finding.code].append(finding)

    def stop(self, report) -> None:
        lines: list[str] = []

        def out(line: str, paint=None) -> None:
            # Each line is escaped whole: no name, message or note from the data can break it
            # (a workflow command at the start of a line) or act on the terminal. Colour comes
            # after, from ``paint``, around the words the report chose.
            shown = printable(line)
            lines.append(paint(shown) if paint and self.style.enabled else shown)

        if self.settings.get("quiet"):
            self._quiet(report, out)
            while lines and not lines[0]:
                lines.pop(0)
        else:
            self._whole(report, out)
        width = self.settings.get("width")
        if width:
            lines = [part for line in lines for part in wrapped(line, width)]
        self.stream.write("\n".join(lines) + "\n")

    def _whole(self, report, out) -> None:
        """The whole report: header, tables, findings, notes and next steps."""
        out("labelguard label audit report", self.style.heading)
        out("=" * 29)
        layouts = ", ".join(sorted(set(report.layouts)))
        out(f"data:      {', '.join(report.paths)}  (layout: {layouts})")
        for use in report.configs:
            out(f"config:    {use.describe()}")
        several = len(report.datasets) > 1
        if several:
            out(f"datasets:  {len(report.datasets)}, each below with its own spec, tables and findings; "
                "then the totals")
            for dataset in report.datasets:
                self._dataset(dataset, out)
            out("")
            out("Totals", self.style.heading)
            out("-" * 6)
        else:
            for where, spec in report.dataset_specs():
                _spec_lines(spec, f"spec:      {where + ': ' if where else ''}", out)
        samples = _samples(report.summary)
        if report.sampled:
            samples += (f"  (a random sample of {report.sampled['size']:,} out of {report.sampled['of']:,}, "
                        f"seed {report.sampled['seed']}: rerun without --sample for the full audit)")
        out(f"audited:   {samples}")
        if not several and report.datasets and report.datasets[0].inventory is not None:
            out(f"coverage:  {report.datasets[0].inventory.coverage()}")
        if report.from_cache:
            out(f"cache:     {report.from_cache:,} of {plural(len(report.files), 'file')} unchanged since an earlier "
                "audit: their results came from the cache")
        counts = self._counts(report)
        new = " (new)" if self.baseline is not None else ""
        out(f"result:    {severity_counts_text(counts)}{new}", self._paint_counts)
        if self.baseline is not None:
            absent = len(self.baseline.absent)
            out(f"baseline:  {plural(len(self.baseline.known), 'known finding')} of {self.baseline.source} "
                f"not listed; {absent} of its findings no longer found")
        _empty_and_unreadable(report.summary, out)
        if several:
            # The datasets' sections listed every finding; one outside them is listed here.
            grouped = {id(f) for dataset in report.datasets for f in dataset.findings}
            self._findings(self._grouped(f for f in report.findings if id(f) not in grouped), out, None)
        else:
            self._values(report, out, mixed=bool(report.specs))
            self._classes(report, out, mixed=bool(report.specs))
            # An audit of nothing checked nothing: never the words of a clean dataset.
            self._findings(self.groups, out, "Nothing was checked: no file was audited." if report.audited_nothing
                           else "No findings.")
        for note in report.notes:
            out(f"note: {_capped(note)}")
        for error in report.errors:
            out(f"internal error: {error}", self._paint_error)
        self._next_steps(report, out)

    def _quiet(self, report, out) -> None:
        """The findings, grouped as in the whole report, then one line: what was audited and
        what was found (a clean audit says it was one, never nothing)."""
        if len(report.datasets) > 1:
            for dataset in report.datasets:
                groups = self._grouped(dataset.findings)
                if groups:
                    out("")
                    out(f"Dataset {dataset.root}", self.style.heading)
                    self._findings(groups, out, None)
            grouped = {id(f) for dataset in report.datasets for f in dataset.findings}
            self._findings(self._grouped(f for f in report.findings if id(f) not in grouped), out, None)
        else:
            self._findings(self.groups, out, None)
        for error in report.errors:
            out(f"internal error: {error}", self._paint_error)
        out("")
        # ``data/voc: 6 files audited: 7 errors, 0 warnings, 0 info``; a clean audit says it was one.
        where = f"{', '.join(report.paths)}: "
        if report.audited_nothing:
            out(f"{where}nothing was checked: no file was audited")
            return
        counted = f"{_samples(report.summary)} audited: {severity_counts_text(self._counts(report))}"
        after = ""
        if report.sampled:
            after += f" (a random sample of {report.sampled['size']:,} out of {report.sampled['of']:,})"
        if self.baseline is not None:
            after += f" (new); {plural(len(self.baseline.known), 'known finding')} of {self.baseline.source} not listed"
        # Only the counts are painted, never a word of the paths around them.
        start = len(printable(where))
        end = start + len(counted)
        out(where + counted + after, lambda line: line[:start] + self._paint_counts(line[start:end]) + line[end:])

    def _counts(self, report) -> dict[str, int]:
        """The report's findings by severity, those a baseline holds left out."""
        counts = report.counts()
        if self.baseline is not None:
            counts = {level: sum(1 for group in self.groups.values() for f in group if str(f.severity) == level)
                      for level in counts}
        return counts

    def _paint_counts(self, line: str) -> str:
        """The counts of a result line that are not 0 in their severity's colour."""
        return re.sub(r"\b[1-9][0-9,]* (error|warning|info)s?\b",
                      lambda match: self.style.severity(match.group(), match.group(1)), line)

    def _paint_error(self, line: str) -> str:
        head, sep, rest = line.partition(":")
        return self.style.severity(head, "error") + sep + rest

    def _grouped(self, findings) -> dict[str, list]:
        """``findings`` by code, without those a baseline holds (counted in its line)."""
        groups: dict[str, list] = defaultdict(list)
        for finding in findings:
            if self.baseline is None or not self.baseline.is_known(finding):
                groups[finding.code].append(finding)
        return groups

    def _dataset(self, dataset, out) -> None:
        """One dataset's section: its root, layout and spec, what it audited, its tables and
        its findings."""
        out("")
        title = f"Dataset {dataset.root}  (layout: {dataset.layout})"
        out(title, self.style.heading)
        out("-" * min(len(title), 79))
        _spec_lines(dataset.spec, "spec:      ", out)
        out(f"audited:   {_samples(dataset.summary)}")
        if dataset.inventory is not None:
            out(f"coverage:  {dataset.inventory.coverage()}")
        groups = self._grouped(dataset.findings)
        counts = {level: sum(1 for group in groups.values() for f in group if str(f.severity) == level)
                  for level in ("error", "warning", "info")}
        new = " (new)" if self.baseline is not None else ""
        out(f"result:    {severity_counts_text(counts)}{new}", self._paint_counts)
        _empty_and_unreadable(dataset.summary, out)
        self._values(dataset, out, mixed=False)
        self._classes(dataset, out, mixed=False)
        # A dataset that gave nothing to audit checked nothing: never the words of a clean one.
        self._findings(groups, out, "No findings." if dataset.summary.samples
                       else "Nothing was checked: no file of this dataset was audited.")

    def _values(self, report, out, mixed: bool) -> None:
        """The value table of ``report`` (a Report, or one of its datasets); ``mixed``: its
        datasets have specs of their own."""
        summary = report.summary
        if not summary.value_files and not report.suggested_color_map:
            return
        out("")
        out("Found values", self.style.heading)
        if summary.value_files:
            self._value_table(report, out, mixed)
        if report.suggested_color_map:
            colours = report.suggested_color_map.items()
            mapping = shorten(colours, LISTED, lambda item: f"{shown_color(item[0])} -> {item[1]}", what="colour")
            out(f"  proposed colour -> index map: {mapping}")

    def _value_table(self, report, out, mixed: bool) -> None:
        summary = report.summary
        out(f"  {'value':>7}  {'class':<16} {'files':>7} {'pixels':>12}  in spec")
        found = summary.found_values()
        # A table of every value of an image saved as a label would run to thousands of rows:
        # the values holding the most pixels stay, the rest are counted.
        kept = set(sorted(found, key=lambda v: (-summary.value_pixels[v], v))[:LISTED])
        for value in found:
            if value not in kept:
                continue
            verdict = {True: "yes", False: "NO", None: "-"}[report.value_in_spec(value)]
            if report.spec.is_ignored(value):
                verdict = "ignored"
            name = report.spec.class_name(value)
            name = _cell(name, 16) if name else ""
            out(f"  {value:>7}  {name:<16} {summary.value_files[value]:>7,} "
                f"{summary.value_pixels[value]:>12,}  {verdict}", self._paint_verdict)
        rest = [v for v in found if v not in kept]
        if rest:
            files = max(summary.value_files[v] for v in rest)
            pixels = max(summary.value_pixels[v] for v in rest)
            listed = "every value counted" if summary.values_capped else "every value"
            out(f"  ... {plural(len(rest), 'more value')}, each in at most {plural(files, 'file')} and "
                f"{plural(pixels, 'pixel')} (--output-format json lists {listed})")
        if summary.values_capped:
            out(f"  ... and more values: over {len(found):,} distinct values were found; the {VALUES_KEPT:,} "
                f"nearest 0 and the {VALUES_KEPT:,} farthest are counted, the others hold "
                f"{plural(summary.capped_pixels, 'pixel')} in all")
        outside = report.outside_spec()
        if outside:
            ranked = sorted(outside.items(), key=lambda item: (-item[1][0], item[0]))
            listing = shorten(ranked, LISTED, lambda item: f"{item[0]} in {plural(item[1][0], 'file')} "
                              f"({plural(item[1][1], 'pixel')})", sep="; ", what="value")
            counted = f" (of the {len(found):,} values counted)" if summary.values_capped else ""
            whose = "a dataset's" if mixed else "the"
            out(f"  outside {whose} spec{counted}: {listing}")
        if report.suggested_remap:
            mapping = ", ".join(f"{k}: {v}" for k, v in report.suggested_remap.items())
            out(f"  suggested remap: {{{mapping}}}")

    def _classes(self, report, out, mixed: bool) -> None:
        summary = report.summary
        if not summary.class_objects:
            return
        out("")
        out("Classes", self.style.heading)
        out(f"  {'class':<24} {'objects':>9} {'images':>8}  in spec")
        # datasets with different specs: each file's findings say which names are unknown
        names = set() if mixed else set(report.spec.legal_class_names())
        ranked = sorted(summary.class_objects, key=lambda n: (-summary.class_objects[n], n))
        for name in ranked[:CLASS_ROWS]:
            verdict = "-" if not names else ("yes" if name in names else "NO")
            out(f"  {_cell(name, 24):<24} {summary.class_objects[name]:>9,} {summary.class_images[name]:>8,}  "
                f"{verdict}", self._paint_verdict)
        if len(ranked) > CLASS_ROWS:
            out(f"  ... {plural(len(ranked) - CLASS_ROWS, 'more class')} (--output-format json lists every class)")
        unknown = [name for name in ranked if names and name not in names]
        if unknown:
            listing = shorten(unknown, LISTED, lambda n: f"{n!r} ({plural(summary.class_objects[n], 'object')})",
                              what="class")
            out(f"  not in the spec: {listing}")

    def _findings(self, groups: dict[str, list], out, empty: str | None) -> None:
        """``groups`` of findings by code; with none, the line ``empty`` (if any) says so."""
        if not groups:
            if empty:
                out("")
                out(empty)
            return
        order = sorted(groups, key=lambda code: (-max(f.severity for f in groups[code]), code))
        for code in order:
            group = groups[code]
            check = REGISTRY.get(code)
            files = len({f.path for f in group if f.path})
            out("")
            where = f", {plural(files, 'file')}" if files > 1 else ""
            title = check.summary if check else ""
            severity = str(group[0].severity)
            out(f"{code} {severity} {check.name if check else ''}: {plural(len(group), 'finding')}{where}",
                lambda line, code=code, severity=severity: self.style.code(code) + " "
                + self.style.severity(severity, severity) + line[len(code) + len(severity) + 1:])
            # A sentence that ends every message of the group (LG201's word on the GPU's error)
            # is said once, here, not once per file.
            ending = said_once(group)
            if title or ending:
                out(f"  {'. '.join(part for part in (title, ending) if part)}")
            overview = _overview(group)
            if overview:
                out(f"  {overview}")
            hints = list(dict.fromkeys(f.hint for f in group if f.hint))
            shown = representatives(group, self.examples)
            for finding in shown:
                place = f"{finding.path}: " if finding.path else ""
                message = without(finding.message, ending)
                out(f"  - {place}{_capped(message)}")
                if len(hints) > 1 and finding.hint:
                    out(f"    hint: {finding.hint}")
            if len(group) > len(shown):
                out(f"  ... and {plural(len(group) - len(shown), 'more finding')} "
                    "(--output-format json lists every finding)")
            if len(hints) == 1:
                out(f"  hint: {hints[0]}")

    def _next_steps(self, report, out) -> None:
        if report.audited_nothing:
            return  # its error says what to pass
        steps = []
        codes = sorted(self.groups)
        if codes:
            steps.append(f"labelguard rule {codes[0]}   explains a check (why it breaks training, how to fix)")
        if len(report.datasets) > 1:
            steps.extend(_dataset_steps(report.datasets))
        else:
            if report.suggested_remap:
                mapping = ",".join(f"{k}:{v}" for k, v in report.suggested_remap.items())
                steps.append(f"labelguard fix remap --map {mapping} {' '.join(report.paths)}   (dry run first)")
            if not report.spec.is_known and (report.summary.value_files or report.summary.class_objects):
                steps.append(f"labelguard init {report.paths[0]}   writes a label spec from the values found; "
                             "later audits check new data against it")
        if report.sampled:
            steps.append("rerun without --sample to audit every file")
        steps.append("wrap the training dataset with labelguard.torch.guard(...) to name the sample at load time")
        out("")
        out("What to run next", self.style.heading)
        for step in steps:
            out(f"  {step}")


    def _paint_verdict(self, row: str) -> str:
        """A table row whose last column says NO (a value or class outside the spec) with it in red."""
        return row[:-2] + self.style.severity("NO", "error") if row.endswith("  NO") else row


def consequence_of(finding) -> str:
    """The last sentence of ``finding``'s message when its rule names it as what the fault does
    in training (:data:`CONSEQUENCE` of its data); "" when it names none or the message does not
    end with it (a message is never left empty)."""
    sentence = finding.data.get(CONSEQUENCE)
    if not isinstance(sentence, str) or not sentence:
        return ""
    tail = ". " + sentence
    return sentence if len(finding.message) > len(tail) and finding.message.endswith(tail) else ""


def said_once(findings: list) -> str:
    """The sentence that ends the message of every one of ``findings`` (two or more) and says
    what the fault does in training (:func:`consequence_of`), for a report to say once; "" when
    they do not all end with the same one."""
    if len(findings) < 2:
        return ""
    sentence = consequence_of(findings[0])
    return sentence if sentence and all(consequence_of(f) == sentence for f in findings) else ""


def without(message: str, sentence: str) -> str:
    """``message`` without its last ``sentence`` (one :func:`said_once` found in it)."""
    return message[:len(message) - len(sentence) - 2] if sentence else message


def _spec_lines(spec, head: str, out) -> None:
    """The spec line (and token spec line) of one spec, each starting with ``head``."""
    origins = spec.describe_origins()
    if spec.is_known or spec.tokens is None:
        out(f"{head}{spec.describe()}{'  ' + origins if origins else ''}")
    if spec.tokens is not None:  # token columns are checked against it, label spec or not
        out(f"{head}tokens: {spec.tokens.describe()}")


def _samples(summary) -> str:
    """What a summary audited: masks are files, other records samples."""
    return plural(summary.samples, "file" if set(summary.kinds) <= {"mask"} else "sample")


def _empty_and_unreadable(summary, out) -> None:
    """The lines of masks holding only background or ignore values and of unreadable files."""
    if summary.empty:
        out(f"empty:     {plural(summary.empty, 'mask')} {verb(summary.empty, 'holds')} only background/ignore values")
    if summary.unreadable:
        out(f"unreadable: {plural(summary.unreadable, 'file')}")


def _dataset_steps(datasets) -> list[str]:
    """The next steps of a report of several datasets: each one's remap, and a spec for those
    that have none."""
    steps = []
    for dataset in datasets:
        if dataset.suggested_remap:
            mapping = ",".join(f"{k}:{v}" for k, v in dataset.suggested_remap.items())
            steps.append(f"labelguard fix remap --map {mapping} {dataset.root}   (dry run first)")
    unspecified = [dataset.root for dataset in datasets if not dataset.spec.is_known
                   and (dataset.summary.value_files or dataset.summary.class_objects)]
    if unspecified:
        steps.append(f"labelguard init DATASET   writes a label spec from the values found, for each dataset "
                     f"without one ({shorten(unspecified, LISTED)}); later audits check new data against it")
    return steps


def _capped(text: str) -> str:
    if len(text) <= MESSAGE_CHARS:
        return text
    return f"{text[:MESSAGE_CHARS]}... ({plural(len(text), 'character')}: --output-format json has all of it)"


def _cell(name: str, width: int) -> str:
    """A name for a table column: quoted when its blanks would not show, cut to ``width``."""
    return cut(show_name(name), width)


def _problems(finding) -> set:
    """The distinct problems one finding is about: its class, its values or ids, its hint."""
    data = finding.data
    keys = {("hint", finding.hint)}
    if isinstance(data.get("class"), str):
        keys.add(("class", data["class"]))
    for field in ("values", "ids"):
        items = data.get(field)
        if isinstance(items, (list, tuple)):
            keys.update((field, item) for item in items if isinstance(item, (int, float, str)))
    return keys


def representatives(group: list, least: int, most: int = LISTED) -> list:
    """The findings a group shows: one for every distinct class, value and hint (up to
    ``most``), then the first others up to ``least``, in report order."""
    chosen: list[int] = []
    covered: set = set()
    for index, finding in enumerate(group):
        if len(chosen) >= most:
            break
        new = _problems(finding) - covered
        if new:
            chosen.append(index)
            covered |= new
    taken = set(chosen)
    others = [i for i in range(len(group)) if i not in taken][: max(0, least - len(chosen))]
    return [group[i] for i in sorted(chosen + others)]


def _overview(group: list) -> str:
    """One line over a group of many findings: every class, or every id against each num_classes."""
    if len(group) < 2:
        return ""
    classes: dict[str, set] = {}
    for finding in group:
        if isinstance(finding.data.get("class"), str):
            classes.setdefault(finding.data["class"], set()).add(finding.path)
    if classes and len(classes) > 1:
        ranked = sorted(classes, key=lambda name: (-len(classes[name]), name))
        listing = shorten(ranked, LISTED, lambda name: f"{name!r} ({plural(len(classes[name]), 'file')})",
                          what="class")
        return f"in all: {plural(len(classes), 'class')}: {listing}"
    return _id_overview(group)


def _id_overview(group) -> str:
    """One line over many id findings: every id found against each num_classes."""
    by_limit: dict = {}
    for finding in group:
        ids, limit = finding.data.get("ids"), finding.data.get("num_classes")
        if ids is None or limit is None:
            return ""
        by_limit.setdefault(limit, set()).update(ids)
    parts = [f"ids {shorten(sorted(ids), LISTED)} with num_classes={limit}" for limit, ids in sorted(by_limit.items())]
    return "in all: " + "; ".join(parts) + f" across {plural(len(group), 'finding')}"
