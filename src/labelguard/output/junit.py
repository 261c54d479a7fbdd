"""JUnit XML output, as CI systems (GitLab, Jenkins, Azure) show test results.

One test suite per audit, one test case per audited file (and per other file a finding names:
a list, an orphan image, a metadata file), and one ``dataset`` case for dataset-level
findings. A finding at or above ``--fail-on`` that a baseline does not hold is a ``failure``
of its file's case (type: its code); the others are listed in the case's ``system-out``, so
that the suite fails exactly when the audit's exit code does.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from labelguard.core.findings import Severity
from labelguard.core.text import plural
from labelguard.output import Formatter, register
from labelguard.output.places import finding_place

DATASET_CASE = "(dataset)"


def _text(finding) -> str:
    place = finding_place(finding.data).describe()
    lines = [f"{finding.code} {finding.severity}: {finding.path or DATASET_CASE}"
             + (f" ({place})" if place else ""), finding.message]
    if finding.hint:
        lines.append(f"hint: {finding.hint}")
    return "\n".join(lines)


@register
class JUnitFormatter(Formatter):
    name = "junit"
    options = ("fail_on",)

    def stop(self, report) -> None:
        fail_on = self.settings.get("fail_on") or "error"
        threshold = None if fail_on == "never" else Severity.parse(fail_on)
        known = report.baseline.is_known if report.baseline is not None else (lambda finding: False)
        cases: dict[str, list] = {path: [] for path in report.files}
        for finding in report.findings:
            cases.setdefault(finding.path or DATASET_CASE, []).append(finding)
        failures = 0
        suite = ElementTree.Element("testsuite", name=f"labelguard audit {' '.join(report.paths)}")
        properties = ElementTree.SubElement(suite, "properties")
        for where, spec in report.dataset_specs():
            origins = spec.describe_origins()
            ElementTree.SubElement(properties, "property", name=f"spec{' ' + where if where else ''}",
                                   value=spec.describe() + (f"  {origins}" if origins else ""))
        if report.baseline is not None:
            ElementTree.SubElement(properties, "property", name="baseline", value=report.baseline.source)
        for path, findings in cases.items():
            case = ElementTree.SubElement(suite, "testcase", name=path, classname="labelguard")
            others = []
            for finding in findings:
                if threshold is not None and finding.severity >= threshold and not known(finding):
                    failure = ElementTree.SubElement(case, "failure", type=finding.code, message=finding.message)
                    failure.text = _text(finding)
                    failures += 1
                else:
                    others.append(("known (baseline) " if known(finding) else "") + _text(finding))
            if others:
                ElementTree.SubElement(case, "system-out").text = "\n\n".join(others)
        errors = len(report.errors) + bool(report.audited_nothing)
        for text in [*report.errors, *([report.audited_nothing] if report.audited_nothing else [])]:
            case = ElementTree.SubElement(suite, "testcase", name="labelguard", classname="labelguard")
            ElementTree.SubElement(case, "error", message=text).text = text
        tests = len(cases) + errors
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", "0")
        root = ElementTree.Element("testsuites", name="labelguard", tests=str(tests), failures=str(failures),
                                   errors=str(errors))
        root.append(suite)
        ElementTree.indent(root)
        self.stream.write('<?xml version="1.0" encoding="utf-8"?>\n')
        self.stream.write(ElementTree.tostring(root, encoding="unicode"))
        self.stream.write(f"\n<!-- {plural(tests, 'test case')}, {plural(failures, 'failure')} -->\n")
