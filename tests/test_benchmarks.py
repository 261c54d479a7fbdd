"""The benchmark scripts run as a user runs them (at a tiny size) and write only to temporary
folders: nothing in the folder they run from, nothing left in the temporary folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labelguard._optional import available

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(("script", "args", "result_line"), [
    ("bench_masks.py", ["-n", "12", "--scale-count", "16", "--repeat", "1", "--startup-rounds", "1", "--scale-rounds", "1",
                      "--no-memory"],
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
