"""GitHub Actions workflow commands: each finding an annotation on its file and line.

``::error file=masks/a.png,title=LG201 mask-value-outside-spec::label value 9 ...`` (``warning``
and ``notice`` by severity). Findings a baseline holds are not annotated again; one notice
counts them. Values are escaped as the runner reads them (``%``, CR and LF in the message;
also ``:`` and ``,`` in the properties).
"""

from __future__ import annotations

from labelguard.core.findings import Severity
from labelguard.core.registry import REGISTRY
from labelguard.core.text import plural
from labelguard.output import Formatter, register
from labelguard.output.places import finding_place

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@register
class GithubFormatter(Formatter):
    name = "github"

    def stop(self, report) -> None:
        known = report.baseline.is_known if report.baseline is not None else (lambda finding: False)
        lines = []
        for finding in report.findings:
            if known(finding):
                continue
            check = REGISTRY.get(finding.code)
            properties = []
            place = finding_place(finding.data)
            if finding.path is not None:
                properties.append(f"file={escape_property(finding.path)}")
                if place.line is not None:
                    properties.append(f"line={place.line}")
            title = f"{finding.code} {check.name}" if check else finding.code
            properties.append(f"title={escape_property(title)}")
            where = f"{place.element}: " if place.element else ""
            text = f"{where}{finding.message}" + (f"\nhint: {finding.hint}" if finding.hint else "")
            lines.append(f"::{COMMANDS[finding.severity]} {','.join(properties)}::{escape_data(text)}")
        for text in [*report.errors, *([report.audited_nothing] if report.audited_nothing else [])]:
            lines.append(f"::error title=labelguard::{escape_data(text)}")
        if report.baseline is not None:
            count = len(report.baseline.known)
            text = (f"{plural(count, 'known finding')} of {report.baseline.source} not annotated again; "
                    f"{plural(len(report.findings) - count, 'new finding')}")
            lines.append(f"::notice title=labelguard baseline::{escape_data(text)}")
        self.stream.write("".join(line + "\n" for line in lines))
