"""The benchmark scripts run as a user runs them (at a tiny size) and write only to temporary
folders: nothing in the folder they run from, nothing left in the temporary folder. Every
figure of docs/performance.md sits in a block its script wrote (``--write-docs``), unedited."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labelguard._optional import available

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PERFORMANCE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"


def docs_module():
    """``benchmarks/_docs.py``, the writer every script calls (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("_bench_docs", BENCHMARKS / "_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


_docs = docs_module()
SECTIONS = _docs.sections(PERFORMANCE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("script", "args", "result_line"), [
    ("bench_masks.py", ["-n", "12", "--scale-count", "16", "--repeat", "1", "--startup-rounds", "1",
                        "--scale-rounds", "1", "--no-memory"],
     "CLI --workers 2 / --workers 1 >= 1.8x"),
    ("bench_pool.py", ["-n", "40", "--repeat", "1"], "one worker / two:"),
    ("bench_voc.py", ["-n", "30", "--repeat", "1"], "one worker vs the seed loop:"),
    ("bench_pairing.py", ["-n", "200", "--repeat", "1"], "ratio labelguard / baseline"),
    ("bench_lists.py", ["-n", "300", "--repeat", "1"], "labelguard select_from_lists:"),
    ("bench_spec.py", [], "ratio"),
    ("bench_instances.py", ["--side", "256", "--repeat", "1"], "ratio count / histogram"),
    ("bench_trust.py", ["-n", "50", "--repeat", "1"], "ratio config decision / parse alone:"),
    ("bench_scale.py", ["-n", "10", "--repeat", "1"], "core-hours of the per-file work"),
    pytest.param("bench_memory.py", ["--small", "20", "--large", "40", "--workers", "1"], "large / small peak",
                 marks=pytest.mark.skipif(not available("psutil"), reason="psutil not installed")),
    pytest.param("bench_s3.py", ["-n", "12"], "takes",
                 marks=pytest.mark.skipif(not (available("s3fs") and available("moto.server")),
                                          reason="the s3 extra or moto[server] not installed")),
    pytest.param("bench_record.py", ["--batches", "10", "--repeat", "1"], "target: < 200 us per batch",
                 marks=pytest.mark.skipif(not available("torch"), reason="torch not installed")),
    pytest.param("bench_tokens.py", ["-n", "3000", "--repeat", "1"], "ratio audit / scan:",
                 marks=pytest.mark.skipif(not available("pyarrow"), reason="pyarrow not installed")),
    ("explain_corpus.py", [], "first cause right:"),
    # The peers (Ultralytics, nnU-Net) need their own environment: only the datasets and labelguard's side run.
    pytest.param("bench_peers.py", ["-n", "40", "--cases", "9", "--repeat", "1", "--no-peers"],
                 "targets: not judged without the peers",
                 marks=pytest.mark.skipif(not available("nibabel"), reason="nibabel not installed")),
])
def test_benchmark_runs_and_leaves_no_file_behind(tmp_path, script, args, result_line):
    folder, temporary = tmp_path / "cwd", tmp_path / "tmp"
    folder.mkdir()
    temporary.mkdir()
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=folder,
                          env={**os.environ, "TMPDIR": str(temporary)},
                          capture_output=True, text=True, timeout=300)
    # Tiny runs miss the speed targets (exit 1); the smoke test asks only that they ran through.
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert result_line in done.stdout
    assert list(folder.iterdir()) == []
    assert list(temporary.iterdir()) == []


@pytest.mark.skipif(not available("nibabel"), reason="nibabel not installed")
def test_bench_peers_attributes_findings_to_the_planted_faults(tmp_path):
    out = tmp_path / "peers.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_peers.py"), "-n", "30", "--cases", "9", "--repeat",
                           "1", "--no-peers", "--dir", str(tmp_path / "data"), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    datasets = {dataset["dataset"]: dataset for dataset in json.loads(out.read_text())["datasets"]}
    codes = {fault["fault"]: fault["labelguard"]["labelguard default -j 1"] for fault in datasets["yolo"]["faults"]}
    assert (codes["class-id-too-large"], codes["negative-class-id"], codes["coords-outside"]) == (
        ["LG102"], ["LG103"], ["LG302"])
    assert codes["too-few-values"] == ["LG001"] and codes["label-without-image"] == ["LG002"]
    nnunet = {fault["fault"]: fault["labelguard"]["labelguard default"] for fault in datasets["nnunet"]["faults"]}
    assert "LG201" in nnunet["label-value-undeclared"] and "LG002" in nnunet["missing-label"]
    assert {fault["peer"] for fault in datasets["yolo"]["faults"]} == {""}


def test_the_performance_page_has_a_section_per_script():
    names = [section.name for section in SECTIONS]
    assert len(names) == len(set(names)), names
    assert {"bench_masks", "bench_cache", "bench_voc", "bench_coco", "bench_memory", "bench_pool"} <= set(names)


@pytest.mark.parametrize("section", SECTIONS, ids=lambda section: section.name)
def test_a_machine_written_section_is_as_its_script_wrote_it(section):
    assert section.recorded is not None, f"{section.name}: no stamp; run benchmarks/{section.name}.py --write-docs"
    assert section.intact, (f"{section.name}: the block differs from what its script wrote (its stamp no longer "
                            f"matches): run benchmarks/{section.name}.py --write-docs instead of editing it")


@pytest.mark.parametrize("name", sorted({section.name for section in SECTIONS}))
def test_a_section_names_a_script_that_writes_it(name):
    script = BENCHMARKS / f"{name}.py"
    assert script.is_file(), f"docs/performance.md has a section of {script.name}, which is not in benchmarks/"
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--write-docs" in done.stdout


def test_the_hand_written_text_of_the_performance_page_holds_no_figure():
    text = re.sub(r"^<!-- bench:([\w-]+) begin -->$.*?^<!-- bench:\1 end -->$", "",
                  PERFORMANCE.read_text(encoding="utf-8"), flags=re.M | re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    # A digit after a letter, a digit or a hyphen is part of a name (SHA-256, S3, nnU-Net v2).
    figures = re.findall(r".{0,30}(?<![\w-])\d.{0,30}", text)
    assert figures == [], figures


def test_the_writer_replaces_one_section_and_nothing_else(tmp_path):
    page = tmp_path / "performance.md"
    shutil.copyfile(PERFORMANCE, page)
    before = page.read_text(encoding="utf-8")
    name = SECTIONS[0].name
    _docs.replace_section(page, name, "| measured | figure | ratio |\n| --- | ---: | ---: |\n| a | 1.0 s | 2.00x |\n")
    after = page.read_text(encoding="utf-8")
    pattern = re.compile(rf"^<!-- bench:{name} begin -->\n.*?^<!-- bench:{name} end -->$", re.M | re.S)
    assert pattern.sub("", before) == pattern.sub("", after)
    rewritten = {section.name: section for section in _docs.sections(after)}
    assert rewritten[name].intact and "| a | 1.0 s | 2.00x |" in rewritten[name].body
    assert [(s.name, s.body, s.recorded) for s in _docs.sections(after) if s.name != name] == [
        (s.name, s.body, s.recorded) for s in _docs.sections(before) if s.name != name]
    assert [path.name for path in tmp_path.iterdir()] == ["performance.md"]


def test_a_figure_edited_by_hand_breaks_the_stamp(tmp_path):
    page = tmp_path / "performance.md"
    page.write_text("# Head\n", encoding="utf-8")
    _docs.replace_section(page, "bench_x", "| a | 1.0 s | 2.00x |\n")
    assert [section.intact for section in _docs.sections(page.read_text(encoding="utf-8"))] == [True]
    page.write_text(page.read_text(encoding="utf-8").replace("2.00x", "3.00x"), encoding="utf-8")
    assert [section.intact for section in _docs.sections(page.read_text(encoding="utf-8"))] == [False]
    assert page.read_text(encoding="utf-8").startswith("# Head\n\n<!-- bench:bench_x begin -->\n")


def test_a_script_run_with_write_docs_rewrites_its_own_section(tmp_path):
    page = tmp_path / "performance.md"
    shutil.copyfile(PERFORMANCE, page)
    before = {section.name: section.body for section in _docs.sections(page.read_text(encoding="utf-8"))}
    folder = tmp_path / "cwd"
    folder.mkdir()
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_spec.py"), "-n", "5", "--repeat", "1",
                           "--write-docs", str(page)], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = {section.name: section for section in _docs.sections(page.read_text(encoding="utf-8"))}
    assert {name: section.body for name, section in after.items() if name != "bench_spec"} == {
        name: body for name, body in before.items() if name != "bench_spec"}
    written = after["bench_spec"]
    assert written.intact
    assert written.body.startswith("`python benchmarks/bench_spec.py -n 5 --repeat 1 --write-docs ")
    assert "| audit, num_classes 100,000,000 |" in written.body and "load average" in written.body
    assert str(tmp_path) not in written.body and list(folder.iterdir()) == []
