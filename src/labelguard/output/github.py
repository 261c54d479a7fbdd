"""GitHub Actions workflow commands: each finding an annotation on its file and line.

``::error file=masks/a.png,title=LG201 mask-value-outside-spec::label value 9 ...`` (``warning``
and ``notice`` by severity). Findings a baseline holds are not annotated again; one notice
counts them. A finding about a whole dataset has no file; in a report of several datasets its
message starts with the dataset's root. Text from the data is shown as every report shows it
(:func:`labelguard.core.text.printable`), then escaped as the runner reads it (``%``, CR and LF
in the message; also ``:`` and ``,`` in the properties).
"""

from __future__ import annotations

from labelguard.core.findings import Severity
from labelguard.core.registry import REGISTRY
from labelguard.core.text import plural, printable
from labelguard.output import Formatter, register
from labelguard.output.places import finding_place

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _shown(text: str) -> str:
    """Text from the data as an annotation shows it: escaped as every report shows it (a name's
    line break is ``\\n``, never a line of the log), then for the runner."""
    return escape_data(printable(text))


@register
class GithubFormatter(Formatter):
    name = "github"

    def stop(self, report) -> None:
        known = report.baseline.is_known if report.baseline is not None else (lambda finding: False)
        several = len(report.datasets) > 1
        lines = []
        for finding in report.findings:
            if known(finding):
                continue
            check = REGISTRY.get(finding.code)
            properties = []
            place = finding_place(finding.data)
            if finding.path is not None:
                properties.append(f"file={escape_property(printable(finding.path))}")
                if place.line is not None:
                    properties.append(f"line={place.line}")
            title = f"{finding.code} {check.name}" if check else finding.code
            properties.append(f"title={escape_property(title)}")
            where = place.prefix(finding.message)
            if finding.path is None and several and finding.dataset is not None:
                where = f"dataset {finding.dataset}: {where}"
            text = _shown(f"{where}{finding.message}") + (escape_data("\n") + _shown(f"hint: {finding.hint}")
                                                          if finding.hint else "")
            lines.append(f"::{COMMANDS[finding.severity]} {','.join(properties)}::{text}")
        for text in [*report.errors, *([report.audited_nothing] if report.audited_nothing else [])]:
            lines.append(f"::error title=labelguard::{_shown(text)}")
        for use in report.configs:
            lines += [f"::warning title=labelguard config::{_shown(text)}" for text in use.warnings()]
        if report.baseline is not None:
            count = len(report.baseline.known)
            text = (f"{plural(count, 'known finding')} of {report.baseline.source} not annotated again; "
                    f"{plural(len(report.findings) - count, 'new finding')}")
            lines.append(f"::notice title=labelguard baseline::{_shown(text)}")
        self.stream.write("".join(line + "\n" for line in lines))
