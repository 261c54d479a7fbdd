"""Reports of several datasets: each dataset on its own, every finding with its dataset.

A PATH may hold several datasets, of different layouts and specs. Each one's spec, value and
class tables, counts and dataset-level findings (LG104 a class never seen, LG203 an RGB mask
among palette PNGs, LG006 no spec...) come from its own files only, and equal what an audit of
that dataset alone reports. Every finding names its dataset's root; a finding about one file
names that file. The text report has a section per dataset, then the totals; the JSON report a
``datasets`` list; SARIF, GitHub, JUnit and HTML place a dataset-level finding on its dataset.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import colorize, organic_mask, rgb_image, voc_palette, voc_segmentation_dataset, write_jpeg, write_png
from detection_builders import write_voc
from labelguard._audit import audit
from labelguard.baseline import Baseline, match_baseline, read_baseline
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.output import write_report

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
RGB_MASK = "tree/seg/SegmentationClass/2007009.png"


def two_voc_datasets(root: Path, classes=("cat", "dog", "bird")) -> None:
    """``a`` (3 images: dogs and a cat) and ``b`` (2 images: dogs), each with the same labels.txt:
    alone, a never has 'bird' in 3 samples and b never has 'cat' or 'bird' in 2."""
    write_voc(root / "a", {"000001": [("dog", (1, 1, 9, 9))], "000002": [("cat", (1, 1, 9, 9))],
                           "000003": [("dog", (2, 2, 9, 9))]}, labels=list(classes))
    write_voc(root / "b", {"000001": [("dog", (1, 1, 9, 9))], "000002": [("dog", (3, 3, 9, 9))]},
              labels=list(classes))


def three_datasets(root: Path) -> Path:
    """Two VOC detection sets of one spec and a VOC segmentation set of palette PNGs with one
    RGB mask (VOC colours) among them."""
    two_voc_datasets(root)
    voc_segmentation_dataset(root / "seg", n=3, num_classes=3)
    palette = voc_palette()
    colours = [tuple(palette[3 * i:3 * i + 3]) for i in range(3)]
    write_png(root / "seg" / "SegmentationClass" / "2007009.png",
              colorize(organic_mask((32, 32), classes=(0, 1, 2), seed=9), colours))
    write_jpeg(root / "seg" / "JPEGImages" / "2007009.jpg", rgb_image((32, 32), seed=9))
    return root


def run(path, **kwargs):
    return audit(str(path), use_project_config=False, cache=False, workers=1, **kwargs)


def invoke(*args: str):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config", "--no-cache"])


def described(findings) -> list[tuple]:
    return [(f.code, str(f.severity), f.path, f.message, f.dataset) for f in findings]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """``tree/`` with three datasets, audited from ``tmp_path`` (relative report paths)."""
    monkeypatch.chdir(tmp_path)
    return three_datasets(Path("tree"))


def test_each_dataset_of_a_parent_has_the_findings_and_tables_of_its_audit_alone(tree):
    parent = run(tree)
    assert [(d.root, d.layout) for d in parent.datasets] == [
        ("tree/a", "voc"), ("tree/b", "voc"), ("tree/seg", "voc-segmentation")]
    for dataset in parent.datasets:
        alone = run(dataset.root)
        assert [(d.root, d.layout) for d in alone.datasets] == [(dataset.root, dataset.layout)]
        assert described(dataset.findings) == described(alone.findings)
        assert dataset.summary.to_dict() == alone.summary.to_dict()
        assert dataset.spec == alone.spec and dataset.spec.origins == alone.spec.origins
    # each finding belongs to exactly one dataset, the one it names
    assert sorted(map(id, parent.findings)) == sorted(id(f) for d in parent.datasets for f in d.findings)
    assert all(f.dataset == d.root for d in parent.datasets for f in d.findings)
    assert parent.summary.samples == sum(d.summary.samples for d in parent.datasets) == 9


def test_a_class_never_seen_is_counted_in_its_own_dataset_s_samples(tree):
    never = {f.dataset: f.message for f in run(tree).findings if f.code == "LG104"}
    assert never == {"tree/a": "class 'bird' of the spec never occurs in 3 samples",
                     "tree/b": "classes 'cat', 'bird' of the spec never occur in 2 samples"}


def test_datasets_given_one_spec_by_the_flags_are_still_checked_each_on_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    two_voc_datasets(Path("tree"))
    result = invoke("audit", "tree", "--classes", "cat,dog,bird", "-f", "json")
    report = json.loads(result.output)
    assert [(d["root"], d["samples"], d["spec"]["classes"]) for d in report["datasets"]] == [
        ("tree/a", 3, ["cat", "dog", "bird"]), ("tree/b", 2, ["cat", "dog", "bird"])]
    assert [(f["dataset"], f["path"], f["message"]) for f in report["findings"] if f["code"] == "LG104"] == [
        ("tree/a", None, "class 'bird' of the spec never occurs in 3 samples"),
        ("tree/b", None, "classes 'cat', 'bird' of the spec never occur in 2 samples")]


def test_a_finding_about_one_file_names_it_in_a_parent_and_alone(tree):
    for path in (tree, tree / "seg"):
        (rgb,) = [f for f in run(path).findings if f.code == "LG203"]
        assert (rgb.path, rgb.dataset) == (RGB_MASK, "tree/seg")
        assert rgb.message.startswith(f"1 RGB mask ({RGB_MASK}) among 3 palette PNGs")


def test_binary_masks_scaled_in_one_file_name_that_file_and_in_several_the_dataset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_png(Path("one/masks/a.png"), np.eye(8, dtype=np.uint8) * 255)
    for name in ("a", "b"):
        write_png(Path("two/masks") / f"{name}.png", np.eye(8, dtype=np.uint8) * 255)
    paths = {root: [(f.path, f.dataset) for f in run(root, spec=LabelSpec(num_classes=2)).findings
                    if f.code == "LG209"] for root in ("one", "two")}
    assert paths == {"one": [("one/masks/a.png", "one")], "two": [(None, "two")]}


def test_every_finding_names_its_dataset_and_a_file_finding_lies_in_it(tree):
    report = run(tree)
    roots = [d.root for d in report.datasets]
    assert all(f.dataset in roots for f in report.findings)
    assert all(f.path.startswith(f.dataset + "/") for f in report.findings if f.path is not None)


def test_the_json_report_lists_each_dataset_with_its_own_tables_and_findings(tree):
    report = json.loads(invoke("audit", "tree", "-f", "json").output)
    datasets = report["datasets"]
    assert [(d["root"], d["layout"], d["samples"]) for d in datasets] == [
        ("tree/a", "voc", 3), ("tree/b", "voc", 2), ("tree/seg", "voc-segmentation", 4)]
    assert datasets[0]["classes"] == {"cat": {"objects": 1, "images": 1}, "dog": {"objects": 2, "images": 2}}
    assert datasets[1]["classes"] == {"dog": {"objects": 2, "images": 2}}
    assert datasets[2]["classes"] == {} and set(datasets[2]["values"]) == {"0", "1", "2", "255"}
    assert datasets[0]["spec"]["classes"] == ["cat", "dog", "bird"] and datasets[2]["spec"] is None
    for dataset in datasets:
        mine = [report["findings"][i] for i in dataset["findings"]]
        assert all(f["dataset"] == dataset["root"] for f in mine)
        assert dataset["counts"] == {level: sum(f["severity"] == level for f in mine)
                                     for level in ("error", "warning", "info")}
    assert sorted(i for d in datasets for i in d["findings"]) == list(range(len(report["findings"])))
    assert report["summary"]["samples"] == 9


def test_the_text_report_has_a_section_per_dataset_then_the_totals(tree):
    text = invoke("audit", "tree").output
    headers = [line for line in text.splitlines() if line.startswith(("Dataset ", "Totals"))]
    assert headers == ["Dataset tree/a  (layout: voc)", "Dataset tree/b  (layout: voc)",
                       "Dataset tree/seg  (layout: voc-segmentation)", "Totals"]
    sections = dict(zip(("a", "b", "seg", "totals"), re.split(r"\nDataset |\nTotals\n", text)[1:]))
    assert "spec:      [0, 3) (num_classes=3" in sections["a"] and "audited:   3 samples" in sections["a"]
    assert "never occurs in 3 samples" in sections["a"] and "never occur in 2 samples" in sections["b"]
    # each class table is judged against its own dataset's class list
    assert re.search(r"\n  dog +2 +2  yes\n", sections["a"]) and re.search(r"\n  dog +2 +2  yes\n", sections["b"])
    assert "spec:      no label spec given" in sections["seg"] and RGB_MASK in sections["seg"]
    assert "audited:   9 samples" in sections["totals"] and "never occur" not in sections["totals"]


def test_a_report_of_one_dataset_has_no_sections(tree):
    text = invoke("audit", "tree/a").output
    assert not re.search(r"^(Dataset |Totals)", text, re.M)
    report = json.loads(invoke("audit", "tree/a", "-f", "json").output)
    assert [d["root"] for d in report["datasets"]] == ["tree/a"]
    assert {f["dataset"] for f in report["findings"]} == {"tree/a"}


def test_the_ci_formats_place_a_dataset_level_finding_on_its_dataset(tree):
    report = run(tree)

    def written(name: str) -> str:
        stream = io.StringIO()
        write_report(report, name, stream)
        return stream.getvalue()

    sarif = json.loads(written("sarif"))["runs"][0]["results"]
    never = [r for r in sarif if r["ruleId"] == "LG104"]
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in never] == ["tree/a", "tree/b"]
    assert [r["properties"]["dataset"] for r in never] == ["tree/a", "tree/b"]
    github = [line for line in written("github").splitlines() if "LG104" in line]
    assert [line.split("::", 2)[2].split(":")[0] for line in github] == ["dataset tree/a", "dataset tree/b"]
    cases = {case.get("name") for case in ElementTree.fromstring(written("junit")).iter("testcase")}
    assert {"(dataset tree/a)", "(dataset tree/b)", "(dataset tree/seg)", RGB_MASK} <= cases


def test_the_html_report_lists_the_datasets_and_the_dataset_of_each_finding(tree):
    pytest.importorskip("matplotlib", reason="the HTML report draws charts (labelguard[html])")
    stream = io.StringIO()
    write_report(run(tree), "html", stream)
    page = stream.getvalue()
    assert "<h2>Datasets</h2>" in page
    assert all(f"<code>(dataset tree/{name})</code>" in page for name in ("a", "b"))


# ---- baselines ----------------------------------------------------------------------------

def test_a_baseline_tells_apart_one_dataset_level_finding_in_two_datasets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_voc(Path("tree/a"), {"000001": [("dog", (1, 1, 9, 9))]}, labels=["cat", "dog"])
    write_voc(Path("tree/b"), {"000001": [("dog", (1, 1, 9, 9))], "000002": [("cat", (1, 1, 9, 9))]},
              labels=["cat", "dog"])
    assert invoke("baseline", "write", "tree", "-o", "baseline.json").exit_code == 0
    assert json.loads(Path("baseline.json").read_text())["version"] == 2
    # 'cat' now occurs in a and no longer in b: a's finding is gone and b's is new
    write_voc(Path("tree/a"), {"000002": [("cat", (1, 1, 9, 9))]})
    shutil.rmtree("tree/b")
    write_voc(Path("tree/b"), {"000001": [("dog", (1, 1, 9, 9))]}, labels=["cat", "dog"])
    result = invoke("audit", "tree", "--baseline", "baseline.json", "-f", "json")
    assert result.exit_code == 0, result.output  # LG104 is a warning
    report = json.loads(result.output)
    assert [(f["dataset"], f["baseline"]) for f in report["findings"] if f["code"] == "LG104"] == [("tree/b", "new")]
    assert [entry["code"] for entry in report["summary"]["baseline"]["absent"]] == ["LG104"]
    assert invoke("audit", "tree", "--baseline", "baseline.json", "--fail-on", "warning").exit_code == 1


def _unscoped_fingerprint(code: str, path: str | None) -> str:
    """A fingerprint as baselines of version 1 hash it: code, path and identifying data only
    (the findings these tests match have no identifying data)."""
    text = json.dumps({"code": code, "path": path, "data": {}}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def test_a_version_1_baseline_still_holds_the_dataset_level_findings_of_datasets_below(tree, tmp_path):
    report = run(tree)
    never = [f for f in report.findings if f.code == "LG104"]
    assert len(never) == 2
    document = {"version": 1, "kind": "labelguard-baseline",
                "findings": [{"code": "LG104", "path": None, "fingerprint": _unscoped_fingerprint("LG104", None)}
                             for _ in never]}
    (tmp_path / "old.json").write_text(json.dumps(document), encoding="utf-8")
    match = match_baseline(report, read_baseline(str(tmp_path / "old.json")))
    assert all(match.is_known(f) for f in never) and match.absent == []


def test_a_json_report_serves_as_a_baseline_with_the_datasets_of_its_findings(tree, tmp_path):
    (tmp_path / "report.json").write_text(invoke("audit", "tree", "-f", "json").output, encoding="utf-8")
    baseline = read_baseline(str(tmp_path / "report.json"))
    assert isinstance(baseline, Baseline) and not baseline.unscoped
    report = run(tree)
    match = match_baseline(report, baseline)
    assert len(match.known) == len(report.findings) and match.absent == []


# ---- real data ----------------------------------------------------------------------------

SETS = [name for name in ("realworld", "realworld2", "corpus") if (SHARED / name).is_dir()]


@pytest.mark.skipif(not SETS, reason="../shared/realworld, realworld2 and corpus are absent")
@pytest.mark.parametrize("name", SETS)
def test_each_real_dataset_under_a_set_reports_what_its_audit_alone_reports(name, monkeypatch):
    """Where discovery from the set's folder and from the dataset's own root find the same
    dataset (that they do is discovery's property), its findings and tables are the same."""
    monkeypatch.chdir(SHARED)
    parent = run(name)
    assert len(parent.datasets) > 1
    compared = 0
    for dataset in parent.datasets:
        alone = run(dataset.root)
        if [(d.root, d.layout) for d in alone.datasets] != [(dataset.root, dataset.layout)]:
            continue
        assert described(dataset.findings) == described(alone.findings), dataset.root
        assert dataset.summary.to_dict() == alone.summary.to_dict(), dataset.root
        assert dataset.spec == alone.spec, dataset.root
        compared += 1
    assert compared > len(parent.datasets) // 2
    assert not [f for f in parent.findings if f.dataset is None]
