"""Reports (JSON schema v1, text) and the command line: exit codes, rules, sampling, workers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import (
    colorize, organic_mask, paired_dataset, with_border, write_jpeg, write_label_colors, write_npy, write_npz,
    write_png,
)
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.core.registry import REGISTRY
from labelguard.core.spec import LabelSpec
from labelguard.output import write_report

SUMMARY_KEYS = {
    "paths", "layouts", "spec", "spec_sources", "spec_origins", "specs", "samples", "sampled", "findings", "codes", "values",
    "values_capped", "outside_spec", "classes", "empty_masks", "unreadable", "suggested_remap", "suggested_color_map",
    "notes", "errors", "audited_nothing", "files", "from_cache", "configs",
}
DATASET_KEYS = {
    "root", "layout", "spec", "spec_sources", "spec_origins", "samples", "counts", "codes", "values", "values_capped",
    "outside_spec", "classes", "empty_masks", "unreadable", "suggested_remap", "suggested_color_map", "findings",
    "inventory",
}


def faulty_dataset(root: Path) -> Path:
    """Masks for num_classes=2: one with 255 borders, one empty, one unreadable, two clean."""
    write_png(root / "masks" / "border.png", with_border(organic_mask((32, 32), (0, 1))))
    write_png(root / "masks" / "empty.png", np.zeros((32, 32), np.uint8))
    (root / "masks" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    write_png(root / "masks" / "clean1.png", organic_mask((32, 32), (0, 1), seed=1))
    write_png(root / "masks" / "clean2.png", organic_mask((32, 32), (0, 1), seed=2))
    return root


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config"] if args[0] == "audit" else list(args),
                              **kwargs)


# ---- JSON ---------------------------------------------------------------------------------

def test_json_report_follows_schema_v1(tmp_path, monkeypatch):
    faulty_dataset(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    result = invoke("audit", "data", "--num-classes", "2", "-f", "json")
    report = json.loads(result.output)
    assert report["version"] == 1
    assert report["tool"]["name"] == "labelguard"
    assert list(report) == ["version", "tool", "summary", "datasets", "findings"]
    assert set(report["summary"]) == SUMMARY_KEYS
    summary = report["summary"]
    assert summary["paths"] == ["data"] and summary["samples"] == 4 and summary["unreadable"] == 1
    assert summary["spec"]["num_classes"] == 2
    assert summary["findings"] == {
        "error": sum(f["severity"] == "error" for f in report["findings"]),
        "warning": sum(f["severity"] == "warning" for f in report["findings"]),
        "info": sum(f["severity"] == "info" for f in report["findings"])}
    assert summary["codes"] == {"LG001": 1, "LG201": 1, "LG205": 1}
    assert summary["values"]["255"]["in_spec"] is False and summary["values"]["0"]["in_spec"] is True
    assert summary["outside_spec"] == {"255": {"files": 1, "pixels": summary["values"]["255"]["pixels"]}}
    for finding in report["findings"]:
        assert set(finding) == {"code", "severity", "path", "message", "hint", "data", "dataset"}
        assert finding["code"] in REGISTRY and finding["message"] and finding["dataset"] == "data"
    (dataset,) = report["datasets"]
    assert set(dataset) == DATASET_KEYS
    assert dataset["root"] == "data" and dataset["layout"] == "masks" and dataset["spec"] == summary["spec"]
    assert dataset["findings"] == list(range(len(report["findings"])))
    assert {key: dataset[key] for key in ("samples", "values", "outside_spec", "unreadable")} == {
        key: summary[key] for key in ("samples", "values", "outside_spec", "unreadable")}
    # paths are relative to the current directory when the data is inside it
    assert {f["path"] for f in report["findings"]} == {
        "data/masks/border.png", "data/masks/empty.png", "data/masks/broken.png"}


def test_json_paths_outside_the_current_directory_are_absolute(tmp_path):
    faulty_dataset(tmp_path / "data")
    report = json.loads(invoke("audit", str(tmp_path / "data"), "--num-classes", "2", "-f", "json").output)
    assert all(Path(f["path"]).is_absolute() for f in report["findings"])
    assert report["summary"]["paths"] == [str(tmp_path / "data")]


def test_json_dataset_level_findings_have_no_path(tmp_path):
    for i in range(2):
        write_png(tmp_path / "masks" / f"{i}.png", organic_mask((16, 16), (0, 255), seed=i))
    report = json.loads(invoke("audit", str(tmp_path), "--num-classes", "2", "-f", "json").output)
    [lg209] = [f for f in report["findings"] if f["code"] == "LG209"]
    assert lg209["path"] is None and lg209["data"]["remap"] == {"255": 1}
    assert report["summary"]["suggested_remap"] == {"255": 1}


def test_output_file(tmp_path):
    faulty_dataset(tmp_path / "data")
    out = tmp_path / "report.json"
    result = invoke("audit", str(tmp_path / "data"), "--num-classes", "2", "-f", "json", "-o", str(out))
    assert result.exit_code == 1
    assert json.loads(out.read_text())["summary"]["codes"]["LG201"] == 1


# ---- text ---------------------------------------------------------------------------------

def test_text_report_sections(tmp_path):
    faulty_dataset(tmp_path / "data")
    text = invoke("audit", str(tmp_path / "data"), "--num-classes", "2").output
    lines = text.splitlines()
    assert lines[0] == "labelguard label audit report"
    for head in ("data:", "spec:", "audited:", "result:"):
        assert any(line.startswith(head) for line in lines), head
    assert "result:    2 errors, 0 warnings, 1 info" in text
    assert "Found values" in text and "outside the spec: 255 in 1 file" in text
    # findings grouped by code, errors first, each with its explanation and hint
    order = [line.split()[0] for line in lines if line[:2] == "LG"]
    assert order == ["LG001", "LG201", "LG205"]
    assert "  hint: " in text
    assert lines.index("What to run next") > lines.index("Found values")
    assert "labelguard rule LG001" in text


def test_text_report_without_findings(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((16, 16), (0, 1)))
    result = invoke("audit", str(tmp_path), "--num-classes", "2")
    assert result.exit_code == 0 and "No findings." in result.output


def test_formatters_write_to_any_stream(tmp_path):
    faulty_dataset(tmp_path)
    report = audit(tmp_path, LabelSpec(num_classes=2), use_project_config=False)
    for name in ("text", "json"):
        stream = io.StringIO()
        write_report(report, name, stream)
        assert "LG201" in stream.getvalue()


# ---- exit codes ---------------------------------------------------------------------------

@pytest.mark.parametrize("data, fail_on, code", [
    ("clean", None, 0), ("errors", None, 1), ("errors", "error", 1), ("errors", "never", 0),
    ("warnings", None, 0), ("warnings", "warning", 1), ("warnings", "error", 0),
    ("info", None, 0), ("info", "warning", 0), ("info", "info", 1),
])
def test_exit_codes(tmp_path, data, fail_on, code):
    mask = {"clean": organic_mask((16, 16), (0, 1)), "errors": organic_mask((16, 16), (0, 5)),
            "warnings": organic_mask((16, 16), (0, 1)).astype(np.uint16),
            "info": np.zeros((16, 16), np.uint8)}[data]
    write_png(tmp_path / "masks" / "a.png", mask, mode="I;16" if data == "warnings" else None)
    write_png(tmp_path / "masks" / "b.png", organic_mask((16, 16), (0, 1), seed=3), mode="I;16" if data == "warnings" else None)
    args = ["audit", str(tmp_path), "--num-classes", "2"] + (["--fail-on", fail_on] if fail_on else [])
    assert invoke(*args).exit_code == code


@pytest.mark.parametrize("args", [
    ["audit", "no/such/dir"],
    ["audit"],
    ["audit", ".", "--fail-on", "sometimes"],
    ["audit", ".", "-f", "xml"],
    ["audit", ".", "--num-classes", "0"],
    ["audit", ".", "--values", "0,x"],
    ["rule", "LG999"],
])
def test_usage_errors_exit_2(args):
    result = invoke(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_broken_files_never_give_a_traceback(tmp_path):
    faulty_dataset(tmp_path)
    (tmp_path / "masks" / "zero.npy").write_bytes(b"")
    (tmp_path / "masks" / "text.nii.gz").write_text("not a volume")
    result = invoke("audit", str(tmp_path), "--num-classes", "2")
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert "LG001 error file-unreadable: 3 findings, 3 files" in result.output


# ---- rules --------------------------------------------------------------------------------

def test_rules_lists_every_code():
    result = invoke("rules")
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.splitlines() if line.strip()]
    assert listed == sorted(REGISTRY)
    assert "mask-value-outside-spec" in result.output


def test_rule_explains_one_code():
    check = REGISTRY["LG201"]
    result = invoke("rule", "lg201")
    assert result.exit_code == 0
    for part in ("What it means:", "Why it breaks training:", "Bad:", "Good:", "Fix:", check.name):
        assert part in result.output
    assert check.bad.splitlines()[0] in result.output


def test_formats_lists_layouts_and_report_formats():
    result = invoke("formats")
    assert result.exit_code == 0
    for name in ("nnunet", "voc-segmentation", "camvid", "cityscapes", "paired", "masks", "json", "text"):
        assert name in result.output


# ---- sampling and workers -----------------------------------------------------------------

def _many(root: Path, n: int = 12) -> Path:
    for i in range(n):
        values = (0, 1, 7) if i % 3 == 0 else (0, 1)
        write_png(root / "masks" / f"{i:02d}.png", organic_mask((24, 24), values, seed=i))
    write_npy(root / "masks" / "float.npy", np.full((8, 8), 0.5, np.float32))
    write_jpeg(root / "masks" / "lossy.jpg", organic_mask((24, 24), (0, 1)) * 100)
    (root / "masks" / "broken.png").write_bytes(b"")
    return root


def test_sample_is_reported_as_a_sample(tmp_path):
    data = _many(tmp_path)
    result = invoke("audit", str(data), "--num-classes", "2", "--sample", "4", "-f", "json")
    summary = json.loads(result.output)["summary"]
    assert summary["sampled"] == {"size": 4, "of": 15, "seed": 0}
    assert summary["samples"] + summary["unreadable"] == 4
    text = invoke("audit", str(data), "--num-classes", "2", "--sample", "4").output
    assert "a random sample of 4 out of 15, seed 0" in text and "rerun without --sample" in text


def test_sample_is_seeded(tmp_path):
    data = _many(tmp_path)
    first = audit(data, LabelSpec(num_classes=2), sample=5, seed=3, use_project_config=False)
    again = audit(data, LabelSpec(num_classes=2), sample=5, seed=3, use_project_config=False)
    assert [f.to_dict() for f in first.findings] == [f.to_dict() for f in again.findings]
    assert audit(data, LabelSpec(num_classes=2), sample=100, use_project_config=False).sampled is None


def test_two_workers_give_the_same_findings_as_one(tmp_path):
    data = _many(tmp_path)
    one = audit(data, LabelSpec(num_classes=2), workers=1, use_project_config=False)
    two = audit(data, LabelSpec(num_classes=2), workers=2, use_project_config=False)
    assert [f.to_dict() for f in one.findings] == [f.to_dict() for f in two.findings]
    assert one.summary.to_dict() == two.summary.to_dict()
    assert {"LG001", "LG201", "LG202", "LG204"} <= set(one.code_counts())


def test_cli_workers_flag(tmp_path):
    data = _many(tmp_path)
    one = json.loads(invoke("audit", str(data), "--num-classes", "2", "-f", "json", "--workers", "1").output)
    two = json.loads(invoke("audit", str(data), "--num-classes", "2", "-f", "json", "--workers", "2").output)
    assert one == two


# ---- python -m labelguard ------------------------------------------------------------------

def test_python_m_labelguard(tmp_path):
    faulty_dataset(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "labelguard", "audit", str(tmp_path), "--num-classes", "2", "-f", "json",
         "--no-config", "--no-progress", "--workers", "1"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["summary"]["codes"]["LG201"] == 1


# ---- layout and spec flags reach the audit --------------------------------------------------

@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG201", "pass")
def test_ignore_index_flag_on_a_dataset_with_255_borders(tmp_path):
    for i in range(3):
        write_png(tmp_path / "masks" / f"{i}.png", with_border(organic_mask((32, 32), (0, 1), seed=i)))
    without = invoke("audit", str(tmp_path), "--num-classes", "2", "-f", "json")
    assert without.exit_code == 1
    assert json.loads(without.output)["summary"]["codes"] == {"LG201": 3}
    with_ignore = invoke("audit", str(tmp_path), "--num-classes", "2", "--ignore-index", "255", "-f", "json")
    assert with_ignore.exit_code == 0
    assert "LG201" not in json.loads(with_ignore.output)["summary"]["codes"]


def test_images_masks_key_and_color_map_flags(tmp_path):
    images, masks = paired_dataset(tmp_path / "pairs", ["a", "b"], mask_suffix="_gt", image_size=(16, 16))
    result = invoke("audit", "--images", str(images), "--masks", str(masks), "--num-classes", "3", "-f", "json")
    summary = json.loads(result.output)["summary"]
    assert summary["layouts"] == ["paired"] and summary["codes"] == {"LG206": 2}

    write_npz(tmp_path / "npz" / "s.npz", volume=np.zeros((8, 8)), annotation=np.ones((8, 8), np.uint8))
    keyed = json.loads(invoke("audit", str(tmp_path / "npz"), "--key", "annotation", "-f", "json").output)
    assert keyed["summary"]["values"] == {"1": {"files": 1, "pixels": 64, "in_spec": None}}

    colors = [(0, 0, 0), (10, 20, 30)]
    write_png(tmp_path / "colour" / "masks" / "a.png", colorize(organic_mask((16, 16), (0, 1)), colors))
    colour_map = write_label_colors(tmp_path / "colours.txt", ["bg", "thing"], colors)
    decoded = json.loads(invoke("audit", str(tmp_path / "colour"), "--color-map", str(colour_map), "-f", "json").output)
    assert set(decoded["summary"]["values"]) == {"0", "1"} and decoded["summary"]["codes"] == {}
