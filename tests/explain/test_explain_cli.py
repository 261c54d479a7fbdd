"""labelguard explain on the command line: file, stdin, pasted text, JSON, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from explain_fixtures import LOGS, read_log

from labelguard.cli import main
from labelguard.explain import explain
from labelguard.flight import FlightRecordWriter

CORPUS = LOGS.parent / "corpus"


def run(*args, input=None):
    return CliRunner().invoke(main, ["explain", *args], input=input)


def test_explains_a_log_file_with_ranked_causes_and_the_generic_steps():
    result = run("-v", str(LOGS / "cuda_nll2d_torch113.log"))
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("labelguard explain: a class target outside [0, n_classes)")
    kernel = "aten/src/ATen/native/cuda/NLLLoss2d.cu:103 (nll_loss2d_forward_kernel)"
    assert f"kernel:      {kernel}" in out
    assert "condition:   t >= 0 && t < n_classes" in out
    assert "5 assertion lines from 2 CUDA blocks (first: block [5,0,0], thread [996,0,0])" in out
    assert "your code:   /home/user/Pytorch-UNet/train.py:118 in train_model" in out
    assert "1. [likely]" in out and "confirm: labelguard audit DATA" in out
    assert out.index("Causes to check") < out.index("What the log cannot tell") < out.index(
        "Steps that help whatever the cause")
    assert "CUDA_LAUNCH_BLOCKING=1" in out


def test_the_default_explanation_is_short_and_says_how_to_get_the_rest():
    short = run(str(LOGS / "cuda_nll2d_torch113.log")).output
    full = run("--verbose", str(LOGS / "cuda_nll2d_torch113.log")).output
    assert len(short.splitlines()) <= 40 < len(full.splitlines())
    assert short.startswith("labelguard explain: a class target outside [0, n_classes)")
    assert "condition:   t >= 0 && t < n_classes" in short
    # The top causes, each with one line of reason; the checks; the first fix; the way to the rest.
    assert "1. [likely]" in short and "3. [" in short and "4. [" not in short
    assert short.count("     why:  ") + short.count("     seen: ") == 3
    assert "To confirm\n  - labelguard audit DATA --num-classes N" in short
    assert "Fix, if it is cause 1\n  Pass ignore_index=255" in short
    assert "more causes" in short and "labelguard explain -v adds" in short
    assert "What the log cannot tell" not in short and "CUDA_LAUNCH_BLOCKING" not in short
    assert "What the log cannot tell" in full and "4. [" in full


BARE_ASSERT = ("RuntimeError: CUDA error: device-side assert triggered\n"
               "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
               "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def test_a_log_that_points_at_no_cause_shows_how_to_get_more_of_it_without_v():
    """The bare "device-side assert triggered" (the most common paste) names no kernel and no
    value: every cause is only possible, so what to paste and how to rerun come in the short form."""
    short = run(BARE_ASSERT).output
    assert "[likely]" not in short and "1. [possible]" in short
    narrow = short[short.index("To narrow it down"):]
    assert "paste them too" in narrow and "1. Rerun with CUDA_LAUNCH_BLOCKING=1" in narrow
    assert "2. Run the failing step on the CPU" in narrow and "3. " not in narrow.split("labelguard explain -v")[0]
    assert "what else the log cannot tell and the other steps" in " ".join(short.split())
    # a log that names its cause keeps the short form short
    assert "To narrow it down" not in run(str(LOGS / "cuda_nll2d_torch113.log")).output


def test_reads_standard_input():
    result = run("-", input=read_log("cuda_bce_input_torch21.log"))
    assert result.exit_code == 0
    assert "binary_cross_entropy got an input" in result.output


@pytest.mark.parametrize("how", ["file", "stdin", "text", "argument"])
def test_an_empty_log_is_a_usage_error_not_an_explanation(tmp_path, how):
    log = tmp_path / "train.log"
    log.write_text("\n  \n")
    args, given, named = {"file": ([str(log)], None, str(log)), "stdin": (["-"], "\n", "standard input"),
                          "text": (["--text", " "], None, "--text"),
                          "argument": (["  "], None, "the text given")}[how]
    result = run(*args, input=given)
    assert result.exit_code == 2
    assert f"the log ({named}) is empty: nothing to explain" in " ".join(result.output.split())
    assert "Not recognised" not in result.output


def test_reads_piped_input_without_an_argument():
    result = run(input="IndexError: Target 3 is out of bounds.\n")
    assert result.exit_code == 0
    assert "values:      target=3" in result.output


@pytest.mark.parametrize("args", [
    ["Assertion `srcIndex < srcSelectDimSize` failed."],
    ["--text", "Assertion `srcIndex < srcSelectDimSize` failed."],
])
def test_a_pasted_string_is_explained(args):
    result = run(*args)
    assert result.exit_code == 0
    assert "index_select / embedding" in result.output


def test_json_output_is_the_library_result():
    result = run(str(LOGS / "cpu_gather.log"), "--output-format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output) == explain(read_log("cpu_gather.log")).to_dict()


def test_unknown_log_says_not_recognised_and_gives_the_steps():
    result = run(str(LOGS / "unknown_value_error.log"))
    assert result.exit_code == 0
    assert "labelguard explain: Not recognised" in result.output
    assert "Causes to check" not in result.output
    assert "Steps that help whatever the cause" in result.output


def test_the_record_names_the_samples_in_flight(tmp_path):
    path = tmp_path / "flight.json"
    writer = FlightRecordWriter(path)
    writer.handed(0, 3, [13, 2], ["masks/case_013.png", "masks/case_002.png"])
    writer.flush()
    result = run(str(LOGS / "cuda_nll2d_torch113.log"), "--record", str(path))
    assert result.exit_code == 0
    assert "batch in flight: epoch 0, batch 3 of the epoch (step 0), 2 samples" in result.output
    assert "index 13       masks/case_013.png" in result.output


def test_the_short_explanation_says_that_v_shows_the_record_it_hides(tmp_path):
    path = tmp_path / "flight.json"
    writer = FlightRecordWriter(path)
    for step, first in enumerate((0, 2, 4)):
        writer.handed(0, step, [first, first + 1], [f"masks/case_{first:03d}.png", f"masks/case_{first + 1:03d}.png"])
    writer.flush()
    short = " ".join(run(str(LOGS / "cuda_nll2d_torch113.log"), "--record", str(path)).output.split())
    assert "batch before it: epoch" not in short and "note:" not in short
    assert "the flight record's 1 earlier batch and 1 note." in short.split("labelguard explain -v adds")[1]
    full = run("-v", str(LOGS / "cuda_nll2d_torch113.log"), "--record", str(path)).output
    assert full.count("batch before it: epoch") == 1 and full.count("note:") == 1


def test_the_short_explanation_lists_a_confirming_command_once_with_all_its_codes():
    short = run(str(CORPUS / "bce_target_binary_masks_0_255.log")).output
    confirm = short.split("To confirm\n")[1].split("\n\n")[0]
    assert confirm == "  - labelguard audit DATA --num-classes N  [LG209, LG201, LG505, LG204]"


@pytest.mark.parametrize("args, message", [
    (["missing.log"], "missing.log: no such file"),
    (["logs/missing"], "no such file"),
    ([str(LOGS / "cpu_gather.log"), "--record", "nowhere.json"], "no flight record"),
    ([str(LOGS / "cpu_gather.log"), "--text", "x"], "not both"),
])
def test_usage_errors_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_python_dash_m_labelguard_explain_in_a_real_process():
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "labelguard", "explain",
         str(LOGS / "cuda_nll2d_windows_chinese.log"), "--output-format", "json"],
        capture_output=True, text=True, encoding="utf-8", env=env, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["matches"][0]["entry"] == "nll-target-out-of-range"
    assert data["facts"]["user_frame"]["path"] == "D:\\深度学习\\语义分割\\train.py"
    assert data["facts"]["windows"] is True
