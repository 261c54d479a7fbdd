"""JUnit XML output, as CI systems (GitLab, Jenkins, Azure) show test results.

One test suite per audit, one test case per audited file (and per other file a finding names:
a list, an orphan image, a metadata file), and one ``(dataset)`` case for dataset-level
findings (one per dataset, ``(dataset ROOT)``, when the report holds several). A finding at
or above ``--fail-on`` that a baseline does not hold is a ``failure`` of its file's case
(type: its code); the others are listed in the case's ``system-out``, so
that the suite fails exactly when the audit's exit code does. Text from the data is shown as
every report shows it (:func:`labelguard.core.text.printable`), so the XML is well-formed for
any name: XML 1.0 has no way to write most control characters, even as references.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from labelguard.core.findings import Severity
from labelguard.core.text import plural, printable
from labelguard.output import Formatter, register
from labelguard.output.places import finding_place

DATASET_CASE = "(dataset)"


def _case_name(finding, several: bool) -> str:
    """The test case a finding belongs to: its file's, else its dataset's."""
    if finding.path:
        return finding.path
    return f"(dataset {finding.dataset})" if several and finding.dataset is not None else DATASET_CASE


def _text(finding, several: bool) -> str:
    place = finding_place(finding.data).describe()
    lines = [f"{finding.code} {finding.severity}: {_case_name(finding, several)}"
             + (f" ({place})" if place else ""), finding.message]
    if finding.hint:
        lines.append(f"hint: {finding.hint}")
    return "\n".join(printable(line) for line in lines)


@register
class JUnitFormatter(Formatter):
    name = "junit"
    options = ("fail_on",)

    def stop(self, report) -> None:
        """The suite as ``ElementTree.indent`` and ``tostring`` write the whole tree, byte for
        byte, with its test cases written one at a time: a case per audited file, read from
        the report's list of files as it streams (millions of files cost the memory of one
        case, not of a tree of them all)."""
        fail_on = self.settings.get("fail_on") or "error"
        threshold = None if fail_on == "never" else Severity.parse(fail_on)
        known = report.baseline.is_known if report.baseline is not None else (lambda finding: False)
        several = len(report.datasets) > 1
        by_path: dict[str, list] = {}
        for finding in report.findings:
            by_path.setdefault(_case_name(finding, several), []).append(finding)
        failures = sum(1 for finding in report.findings
                       if threshold is not None and finding.severity >= threshold and not known(finding))
        # The files' cases first, in the report's order, then those of the other paths findings
        # name, in their order. (A file listed twice has a second case, with no findings.)
        listed = {path for path in report.files if path in by_path}
        others = [path for path in by_path if path not in listed]
        errors_text = [*report.errors, *([report.audited_nothing] if report.audited_nothing else [])]
        errors = len(errors_text)
        tests = len(report.files) + len(others) + errors

        suite = ElementTree.Element("testsuite", name=printable(f"labelguard audit {' '.join(report.paths)}"))
        properties = ElementTree.SubElement(suite, "properties")
        for where, spec in report.dataset_specs():
            origins = spec.describe_origins()
            ElementTree.SubElement(properties, "property", name=f"spec{' ' + where if where else ''}",
                                   value=printable(spec.describe() + (f"  {origins}" if origins else "")))
        for use in report.configs:
            ElementTree.SubElement(properties, "property", name=printable(f"config {use.path}"),
                                   value=printable(use.describe()))
        if report.baseline is not None:
            ElementTree.SubElement(properties, "property", name="baseline", value=printable(report.baseline.source))
        ElementTree.SubElement(suite, "testcase", name=CASES_MARK)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", "0")
        root = ElementTree.Element("testsuites", name="labelguard", tests=str(tests), failures=str(failures),
                                   errors=str(errors))
        root.append(suite)
        ElementTree.indent(root)
        before, after = ElementTree.tostring(root, encoding="unicode").split(
            ElementTree.tostring(ElementTree.Element("testcase", name=CASES_MARK), encoding="unicode"), 1)
        self.stream.write('<?xml version="1.0" encoding="utf-8"?>\n')
        self.stream.write(before[:-len(CASE_INDENT)])  # each case comes with the indent before it

        def write_case(case) -> None:
            ElementTree.indent(case, level=CASE_LEVEL)
            case.tail = None
            self.stream.write(CASE_INDENT + ElementTree.tostring(case, encoding="unicode"))

        for path in report.files:
            write_case(_case(path, by_path.pop(path, ()), threshold, known, several))
        for path in others:
            write_case(_case(path, by_path[path], threshold, known, several))
        for text in errors_text:
            case = ElementTree.Element("testcase", name="labelguard", classname="labelguard")
            ElementTree.SubElement(case, "error", message=printable(text)).text = printable(text)
            write_case(case)
        self.stream.write(after)
        self.stream.write(f"\n<!-- {plural(tests, 'test case')}, {plural(failures, 'failure')} -->\n")


# Stands for the test cases while the rest of the suite is encoded (no path is this string).
CASES_MARK = "\x01labelguard cases\x01"
# Test cases are the suite's children: two levels of two spaces deep.
CASE_LEVEL = 2
CASE_INDENT = "\n" + "  " * CASE_LEVEL


def _case(path: str, findings, threshold, known, several: bool):
    """The test case of one file (or other path) with its findings: a failure for each one at
    or above ``threshold`` that the baseline does not know, the others in ``system-out``."""
    case = ElementTree.Element("testcase", name=printable(path), classname="labelguard")
    others = []
    for finding in findings:
        if threshold is not None and finding.severity >= threshold and not known(finding):
            failure = ElementTree.SubElement(case, "failure", type=finding.code, message=printable(finding.message))
            failure.text = _text(finding, several)
        else:
            others.append(("known (baseline) " if known(finding) else "") + _text(finding, several))
    if others:
        ElementTree.SubElement(case, "system-out").text = "\n\n".join(others)
    return case

