"""The HTML report: one self-contained file a person opens to see what the audit found.

``--output-format html --output-file report.html``. The file holds everything it shows: its
style inline, its charts (matplotlib, the ``html`` extra) and pictures as ``data:`` URIs, no
script, no font, no link that loads anything: it opens offline, attached to a CI run or
mailed. It has the summary, the spec of each dataset and where each part came from (and, when
the audit found several datasets, a table of them: layout, spec, files and findings of each), the
value and class distributions as charts, and the findings grouped by code with the code's
documentation; for mask findings, pictures of the flagged files with the offending pixels
marked, at most ``--html-thumbnails N`` per code (:mod:`labelguard.output.pictures` reads
those files again, and only those).
"""

from __future__ import annotations

import html
from collections import defaultdict

from labelguard.core.limits import ReadLimits, applied_limits
from labelguard.core.paths import applied_roots
from labelguard.core.registry import REGISTRY
from labelguard.core.text import plural, printable, severity_counts_text
from labelguard.output import Formatter, register

DEFAULT_THUMBNAILS = 6
# Findings of one code listed in its table; the JSON report lists every one.
ROWS = 200

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1100px;
       padding: 0 24px 48px; color: #1f2328; }
h1 { font-size: 22px; margin: 24px 0 8px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } tr:nth-child(even) td { background: #fafbfc; }
.summary td:first-child { color: #59636e; } .num { text-align: right; font-variant-numeric: tabular-nums; }
.error { color: #b42318; font-weight: 600; } .warning { color: #9a6700; font-weight: 600; } .info { color: #0969da; }
.known { color: #59636e; font-size: 12px; border: 1px solid #d0d7de; border-radius: 8px; padding: 0 6px; }
details { border: 1px solid #d0d7de; border-radius: 6px; margin: 12px 0; padding: 0 12px; }
summary { cursor: pointer; padding: 10px 0; font-size: 15px; } code { font-size: 13px; }
.docs { color: #3d444d; margin: 0 0 8px; } .docs dt { font-weight: 600; margin-top: 6px; }
.docs dd { margin: 0 0 0 16px; }
.pictures { display: flex; flex-wrap: wrap; gap: 14px; margin: 10px 0; }
figure { margin: 0; max-width: 480px; } figure img { image-rendering: pixelated; border: 1px solid #d0d7de; }
figcaption { font-size: 12px; color: #3d444d; max-width: 460px; word-break: break-word; }
.panels { display: flex; gap: 8px; align-items: flex-start; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #888; vertical-align: middle;
          margin-right: 4px; }
.note { color: #59636e; } .chart { max-width: 100%; }
"""


def _e(text: object) -> str:
    """Text as the page shows it: escaped as every report shows text from the data (a name's
    control characters and bidi overrides visible, never acting), then for HTML."""
    return html.escape(printable(str(text)), quote=True)


def _doc(text: str) -> str:
    """A check's own documentation, whose code examples keep their line breaks."""
    return html.escape(text, quote=True)


@register
class HtmlFormatter(Formatter):
    name = "html"
    options = ("thumbnails",)

    @classmethod
    def check_available(cls) -> None:
        from labelguard._optional import require

        require("matplotlib", "draw the charts of the HTML report")

    def start(self, report) -> None:
        self.groups: dict[str, list] = defaultdict(list)

    def handle(self, finding) -> None:
        self.groups[finding.code].append(finding)

    def stop(self, report) -> None:
        from labelguard.output.charts import class_chart, value_chart

        thumbnails = self.settings.get("thumbnails")
        self.thumbnails = DEFAULT_THUMBNAILS if thumbnails is None else thumbnails
        parts = [
            "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # No script runs and nothing is loaded from anywhere: the page holds all it shows.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "img-src data:; style-src 'unsafe-inline'\">",
            f"<title>labelguard report: {_e(', '.join(report.paths))}</title>",
            f"<style>{STYLE}</style>", "</head>", "<body>",
            "<h1>labelguard label audit report</h1>",
        ]
        parts += self._summary(report)
        parts += self._specs(report)
        parts += self._datasets(report)
        charts = [(title, uri) for title, uri in (("Values", value_chart(report)), ("Classes", class_chart(report)))
                  if uri]
        for title, uri in charts:
            parts += [f"<h2>{title}</h2>",
                      f'<img class="chart" alt="{_e(title)} of the audited data" src="{uri}">']
        parts += self._findings(report)
        if report.notes or report.errors:
            parts.append("<h2>Notes</h2><ul>")
            parts += [f"<li>{_e(note)}</li>" for note in report.notes]
            parts += [f'<li class="error">internal error: {_e(error)}</li>' for error in report.errors]
            parts.append("</ul>")
        parts += ["</body>", "</html>"]
        self.stream.write("\n".join(parts) + "\n")

    def _summary(self, report) -> list[str]:
        counts = report.counts()
        rows = [
            ("data", ", ".join(report.paths)),
            ("layout", ", ".join(sorted(set(report.layouts)))),
            *(("config", use.describe()) for use in report.configs),
            ("audited", plural(report.summary.samples, "file" if set(report.summary.kinds) <= {"mask"} else "sample")
             + (f" (a random sample of {report.sampled['size']:,} out of {report.sampled['of']:,}, seed "
                f"{report.sampled['seed']})" if report.sampled else "")),
            ("result", severity_counts_text(counts)),
        ]
        if report.summary.unreadable:
            rows.append(("unreadable", plural(report.summary.unreadable, "file")))
        if report.baseline is not None:
            known = len(report.baseline.known)
            rows.append(("baseline", f"{plural(known, 'known finding')} of {report.baseline.source}, "
                                     f"{plural(len(report.findings) - known, 'new finding')}, "
                                     f"{len(report.baseline.absent):,} no longer found"))
        if report.audited_nothing:
            rows.append(("nothing audited", report.audited_nothing))
        return ['<table class="summary">'] + [f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows] + \
            ["</table>"]

    def _specs(self, report) -> list[str]:
        parts = ["<h2>Label spec</h2>"]
        for where, spec in report.dataset_specs():
            head = f"<b>{_e(where)}</b>: " if where else ""
            parts.append(f"<p>{head}<code>{_e(spec.describe())}</code></p>")
            set_parts = spec.set_parts()
            if set_parts:
                data = spec.to_dict()
                parts.append("<table><tr><th>part</th><th>value</th><th>from</th></tr>")
                for part in set_parts:
                    value = data.get(part, data.get("ignore_index") if part == "ignore_index" else None)
                    parts.append(f"<tr><td>{_e(part)}</td><td><code>{_e(value)}</code></td>"
                                 f"<td>{_e(spec.origin(part) or '')}</td></tr>")
                parts.append("</table>")
            elif spec.tokens is None:
                parts.append('<p class="note">No label spec was given: values and classes were listed, not '
                             "checked.</p>")
            if spec.tokens is not None:  # token columns are checked against it, label spec or not
                parts.append(f"<p>{head}token spec: <code>{_e(spec.tokens.describe())}</code></p>")
        return parts

    def _datasets(self, report) -> list[str]:
        """A row per dataset, when the audit found several: each one's own spec, files and findings."""
        if len(report.datasets) < 2:
            return []
        parts = ["<h2>Datasets</h2>",
                 '<table><tr><th>dataset</th><th>layout</th><th>spec</th><th class="num">audited</th>'
                 "<th>findings</th></tr>"]
        for dataset in report.datasets:
            counts = dataset.counts()
            parts.append(f"<tr><td><code>{_e(dataset.root)}</code></td><td>{_e(dataset.layout)}</td>"
                         f"<td><code>{_e(dataset.spec.describe())}</code></td>"
                         f'<td class="num">{dataset.summary.samples}</td>'
                         f"<td>{severity_counts_text(counts)}</td></tr>")
        parts.append("</table>")
        return parts

    def _findings(self, report) -> list[str]:
        parts = ["<h2>Findings</h2>"]
        if not self.groups:
            return parts + ["<p>Nothing was checked: no file was audited.</p>" if report.audited_nothing
                            else "<p>No findings.</p>"]
        limits = report.read_limits or ReadLimits()
        known = report.baseline.is_known if report.baseline is not None else (lambda finding: False)
        several = len(report.datasets) > 1
        order = sorted(self.groups, key=lambda code: (-max(f.severity for f in self.groups[code]), code))
        for code in order:
            group = self.groups[code]
            check = REGISTRY.get(code)
            severity = str(group[0].severity)
            files = len({f.path for f in group if f.path})
            title = f"{code} {check.name}" if check else code
            parts.append(f'<details open id="{_e(code)}"><summary><span class="{_e(severity)}">{_e(severity)}</span> '
                         f"<b>{_e(title)}</b>: {plural(len(group), 'finding')}"
                         f"{', ' + plural(files, 'file') if files > 1 else ''}</summary>")
            if check is not None:
                parts.append('<dl class="docs">'
                             f"<dt>What it means</dt><dd>{_doc(check.summary)}</dd>"
                             f"<dt>Why it breaks training</dt><dd>{_doc(' '.join(check.why.split()))}</dd>"
                             f"<dt>Bad / good</dt><dd><code>{_doc(check.bad)}</code><br>"
                             f"<code>{_doc(check.good)}</code></dd>"
                             f"<dt>Fix</dt><dd>{_doc(check.fix)}</dd></dl>")
            with applied_limits(limits), applied_roots(report.read_roots):
                parts += self._pictures(report, group)
            parts.append("<table><tr><th>file</th><th>finding</th><th>hint</th></tr>")
            for finding in group[:ROWS]:
                badge = ' <span class="known">known</span>' if known(finding) else ""
                where = finding.path or (f"(dataset {finding.dataset})" if several and finding.dataset
                                         else "(dataset)")
                parts.append(f"<tr><td><code>{_e(where)}</code>{badge}</td>"
                             f"<td>{_e(finding.message)}</td><td>{_e(finding.hint)}</td></tr>")
            parts.append("</table>")
            if len(group) > ROWS:
                parts.append(f'<p class="note">... and {plural(len(group) - ROWS, "more finding")} '
                             "(--output-format json lists every finding)</p>")
            parts.append("</details>")
        return parts

    def _pictures(self, report, group: list) -> list[str]:
        from labelguard.output.pictures import can_picture, picture

        from labelguard.output.text import representatives

        drawable = [f for f in group if can_picture(f, report.flagged_tasks.get(f.path))]
        # A picture for each distinct value, class and hint first (as the text report picks
        # its examples), then the first others.
        chosen = representatives(drawable, self.thumbnails, most=self.thumbnails)
        if not chosen:
            return []
        parts = ['<div class="pictures">']
        for finding in chosen:
            drawn = picture(finding, report.flagged_tasks[finding.path])
            parts.append("<figure>")
            if drawn.problem:
                parts.append(f'<figcaption class="note">{_e(drawn.problem)}</figcaption></figure>')
                continue
            parts.append('<div class="panels">')
            for panel in drawn.panels:
                parts.append(f'<img alt="{_e(panel.caption)}" src="{panel.data_uri()}">')
            parts.append("</div>")
            captions = "; ".join(_e(panel.caption) for panel in drawn.panels)
            swatches = "".join(f'<br><span class="swatch" style="background:{_e(css)}"></span>{_e(label)}'
                               for panel in drawn.panels for css, label in panel.swatches)
            parts.append(f"<figcaption><code>{_e(finding.path)}</code>: {captions}{swatches}</figcaption></figure>")
        rest = len(drawable) - len(chosen)
        parts.append("</div>")
        if rest > 0:
            parts.append(f'<p class="note">{plural(rest, "more file")} of this code not pictured '
                         f"(--html-thumbnails {self.thumbnails}).</p>")
        return parts
