"""SARIF 2.1.0 output, as GitHub code scanning and other CI dashboards read it.

One run of the ``labelguard`` tool. Its rules are the codes the report holds, each with its
name, summary, documentation (why it breaks training, an example, the fix) and default level.
Each finding is a result: its code, level, message (with the hint), its file as an artifact
location relative to the current folder (as the report shows paths), the line where the data
names one (a list entry, a YOLO row, a table line) or else the element (``object 3``), and the
finding's stable fingerprint (:mod:`labelguard.baseline`) as a partial fingerprint, so code
scanning follows a finding across runs. Code scanning shows a result only with a region's start
line: a finding about a whole file (a mask has no lines) is placed on line 1 and its location's
message says it is about the whole file; a dataset-level finding points at its dataset's folder.
Each result names its dataset's root in its ``properties`` (``dataset``).
With ``--baseline``, each result has its ``baselineState`` (``unchanged`` for a known
finding, ``new`` otherwise) and the baseline's entries no longer found are results of state
``absent``.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from labelguard._version import __version__
from labelguard.baseline import report_identities
from labelguard.core.findings import Severity
from labelguard.core.registry import REGISTRY
from labelguard.core.text import printable_data
from labelguard.output import Formatter, register
from labelguard.output.places import finding_place

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
FINGERPRINT_KEY = "labelguard/v1"


def artifact_uri(path: str) -> str:
    """A SARIF artifact URI: a relative path as a relative reference (``/`` separators,
    percent-encoded), an absolute one as a ``file://`` URI. The name's bytes are encoded, so
    that a name that is no UTF-8 (``bad%FFname.png``) names the very file."""
    if os.path.isabs(path):
        return "file://" + quote(os.fsencode(os.path.abspath(path).replace(os.sep, "/")))
    return quote(os.fsencode(os.path.normpath(path).replace(os.sep, "/")))


def _rule(code: str) -> dict:
    check = REGISTRY.get(code)
    if check is None:
        return {"id": code}
    return {
        "id": code,
        "name": check.name,
        "shortDescription": {"text": check.summary},
        "fullDescription": {"text": " ".join(check.why.split())},
        "help": {"text": check.help_text(), "markdown": "\n".join(check.help_markdown())},
        "defaultConfiguration": {"level": LEVELS[check.severity]},
        "properties": {"tags": ["labelguard", check.family], "scope": check.scope},
    }


def _location(path: str | None, data, report, dataset: str | None = None) -> dict:
    place = finding_place(data)
    target = path if path is not None else dataset or (report.paths[0] if report.paths else ".")
    # Code scanning shows a result only with a region's start line: a finding about a whole
    # file (a mask has no lines) or a whole dataset is placed on line 1 and says so.
    physical: dict = {"artifactLocation": {"uri": artifact_uri(target)}, "region": {"startLine": place.line or 1}}
    location: dict = {"physicalLocation": physical}
    if place.element is not None:
        location["logicalLocations"] = [{"name": place.element, "kind": "element"}]
    if path is None:
        location["message"] = {"text": "the dataset as a whole"}
    elif place.line is None:
        location["message"] = {"text": f"the file as a whole{f' ({place.element})' if place.element else ''}"}
    return location


@register
class SarifFormatter(Formatter):
    name = "sarif"

    def stop(self, report) -> None:
        baseline = report.baseline
        codes = sorted({f.code for f in report.findings}
                       | {entry["code"] for entry in (baseline.absent if baseline else [])})
        index = {code: i for i, code in enumerate(codes)}
        results = []
        for finding, (_, _, digest) in zip(report.findings, report_identities(report)):
            text = finding.with_hint()
            result = {
                "ruleId": finding.code,
                "ruleIndex": index[finding.code],
                "level": LEVELS[finding.severity],
                "message": {"text": text},
                "locations": [_location(finding.path, finding.data, report, finding.dataset)],
                "partialFingerprints": {FINGERPRINT_KEY: digest},
            }
            if finding.dataset is not None:
                result["properties"] = {"dataset": finding.dataset}
            if baseline is not None:
                result["baselineState"] = "unchanged" if baseline.is_known(finding) else "new"
            results.append(result)
        for entry in baseline.absent if baseline else []:
            results.append({
                "ruleId": entry["code"],
                "ruleIndex": index[entry["code"]],
                "level": "none",
                "message": {"text": f"in the baseline, no longer found: {entry.get('message') or entry['code']}"},
                "locations": [_location(entry["path"], {}, report)],
                "partialFingerprints": {FINGERPRINT_KEY: entry["fingerprint"]},
                "baselineState": "absent",
            })
        run = {
            "tool": {"driver": {
                "name": "labelguard",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule(code) for code in codes],
            }},
            "invocations": [{
                "executionSuccessful": not report.errors and not report.audited_nothing,
                "toolExecutionNotifications": [
                    {"level": "error", "message": {"text": text}}
                    for text in [*report.errors, *([report.audited_nothing] if report.audited_nothing else [])]
                ] + [{"level": "warning", "message": {"text": text}}
                     for use in report.configs for text in use.warnings()],
            }],
            "results": results,
            "columnKind": "unicodeCodePoints",
            # the config files read, what each set and what it was refused (the JSON summary's)
            "properties": {"configs": [use.to_dict() for use in report.configs]},
        }
        # All but the rules' own texts comes from the data: shown as every format shows it.
        run = {key: value if key == "tool" else printable_data(value) for key, value in run.items()}
        json.dump({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}, self.stream, indent=2)
        self.stream.write("\n")
