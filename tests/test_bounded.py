"""Memory is bounded by a file's real size, never by a value it holds or a size it claims.

Peaks are measured with tracemalloc (numpy reports its buffers to it), in the test process:
a check that built ``range(max_value)`` for one large value would allocate gigabytes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from audit_helpers import codes, peak_of, run
from builders import write_npy
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import VALUES_KEPT
from labelguard.output import write_report

PEAK_LIMIT = 64 * 1024 * 1024


@pytest.mark.code("LG201", "fail")
def test_one_huge_value_costs_what_the_file_costs(tmp_path):
    # 136 bytes on disk: a 1x1 mask holding 50,000,000, beside masks of values 1 and 2
    write_npy(tmp_path / "masks" / "huge.npy", np.array([[50_000_000]], np.int64))
    write_npy(tmp_path / "masks" / "a.npy", np.array([[1, 2], [2, 1]], np.int64))
    report, peak = peak_of(lambda: run(tmp_path, LabelSpec(num_classes=3), workers=1))
    assert "LG201" in codes(report)
    assert any("50000000" in f.message for f in report.findings if f.code == "LG201")
    assert peak < PEAK_LIMIT, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.code("LG208", "fail")
def test_one_based_labels_are_still_found_among_consecutive_values(tmp_path):
    write_npy(tmp_path / "masks" / "a.npy", np.array([[1, 2], [3, 1]], np.uint8))
    assert "LG208" in codes(run(tmp_path, LabelSpec(num_classes=3), workers=1))


@pytest.mark.code("LG208", "pass")
def test_a_gap_in_the_values_is_not_one_based(tmp_path):
    write_npy(tmp_path / "masks" / "a.npy", np.array([[1, 2], [4, 1]], np.uint8))
    assert "LG208" not in codes(run(tmp_path, LabelSpec(num_classes=4), workers=1))


@pytest.mark.code("LG201", "fail")
def test_a_uint64_value_past_int64_is_reported_exactly(tmp_path):
    top = np.iinfo(np.uint64).max
    write_npy(tmp_path / "masks" / "a.npy", np.array([[0, 1], [top, 1]], np.uint64))
    report = run(tmp_path, LabelSpec(num_classes=2), workers=1)
    [outside] = [f for f in report.findings if f.code == "LG201"]
    assert str(int(top)) in outside.message and "-1" not in outside.message
    assert int(top) in report.summary.value_files


@pytest.mark.code("LG204", "fail")
def test_a_float_value_past_any_integer_is_lg204_not_a_wrapped_value(tmp_path):
    write_npy(tmp_path / "masks" / "a.npy", np.array([[0, 1], [1e300, 1]], np.float64))
    report = run(tmp_path, LabelSpec(num_classes=2), workers=1)
    [huge] = [f for f in report.findings if f.code == "LG204"]
    assert "1e+300" in huge.message and "too large" in huge.message
    assert "LG201" not in codes(report)
    assert set(report.summary.value_files) == {0, 1}


@pytest.mark.code("LG204", "pass")
def test_large_whole_float_labels_inside_int64_are_labels(tmp_path):
    write_npy(tmp_path / "masks" / "a.npy", np.array([[0, 1], [2.0 ** 40, 1]], np.float64))
    report = run(tmp_path, LabelSpec(num_classes=2), workers=1)
    assert "LG204" not in codes(report)
    assert 2 ** 40 in report.summary.value_files


HUNDRED_MILLION = 100_000_000
# The address space of the audit process: what Python, numpy and the readers need, and far
# less than frozenset(range(100_000_000)) (some 6 GiB).
ADDRESS_SPACE = 1024 * 1024 * 1024


def hundred_million_class_data(root):
    write_npy(root / "masks" / "a.npy", np.array([[0, 1], [2, 1]], np.int64))
    write_npy(root / "masks" / "b.npy", np.array([[0, HUNDRED_MILLION]], np.int64))
    return root


@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG104", "fail")
def test_a_hundred_million_class_spec_audits_in_a_small_address_space(tmp_path):
    """``--num-classes 100000000`` through the real CLI, in a process that cannot map more
    than 1 GiB: a spec is an interval, never the set of its members."""
    resource = pytest.importorskip("resource")
    data = hundred_million_class_data(tmp_path / "data")
    output = tmp_path / "report.json"
    command = [sys.executable, "-m", "labelguard", "audit", str(data), "--num-classes", str(HUNDRED_MILLION),
               "--no-config", "--workers", "1", "--no-progress", "-f", "json", "--output-file", str(output)]
    # Thread pools and malloc arenas reserve address space per thread: one each.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE)))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "error" not in done.stderr, done.stderr
    report = json.loads(output.read_text())
    [outside] = [f for f in report["findings"] if f["code"] == "LG201"]
    assert outside["data"]["values"] == [HUNDRED_MILLION]
    assert report["summary"]["values"]["0"]["in_spec"] is True
    assert report["summary"]["values"][str(HUNDRED_MILLION)]["in_spec"] is False
    [unused] = [f for f in report["findings"] if f["code"] == "LG104"]
    assert unused["data"]["missing_count"] == HUNDRED_MILLION - 3
    assert unused["data"]["missing"][:3] == [3, 4, 5] and len(unused["data"]["missing"]) == 1000
    assert unused["message"].startswith("class values 3, 4, 5")
    assert f"and {HUNDRED_MILLION - 3 - 20:,} more of the spec never occur in 2 samples" in unused["message"]


@pytest.mark.code("LG201", "fail")
def test_a_hundred_million_class_spec_costs_what_the_data_costs(tmp_path):
    report, peak = peak_of(lambda: run(hundred_million_class_data(tmp_path), LabelSpec(num_classes=HUNDRED_MILLION),
                                       workers=1))
    assert [f.data["values"] for f in report.findings if f.code == "LG201"] == [[HUNDRED_MILLION]]
    assert report.value_in_spec(HUNDRED_MILLION - 1) is True and report.value_in_spec(-1) is False
    assert peak < PEAK_LIMIT, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.code("LG201", "fail")
def test_an_image_saved_as_a_label_is_counted_with_a_bounded_summary(tmp_path):
    # 250,000 distinct values in runs of 4 (not noisy enough to be taken for a photograph)
    write_npy(tmp_path / "masks" / "ramp.npy", (np.arange(1_000_000) // 4).astype(np.int32).reshape(1000, 1000))
    write_npy(tmp_path / "masks" / "a.npy", np.array([[0, 1], [2, 1]], np.int32))
    report, peak = peak_of(lambda: run(tmp_path, LabelSpec(num_classes=3), workers=1))
    summary = report.summary
    assert summary.values_capped and len(summary.value_files) == 2 * VALUES_KEPT
    assert summary.value_files[0] == 2 and summary.value_pixels[1] == 4 + 2  # kept values stay exact
    assert 249_999 in summary.value_files  # the farthest values are kept too
    assert summary.capped_pixels == 1_000_004 - sum(summary.value_pixels.values())
    assert report.suggested_remap is None
    assert report.to_dict()["summary"]["values_capped"] == {"kept": 2048, "other_pixels": summary.capped_pixels}
    [outside] = [f for f in report.findings if f.code == "LG201"]
    assert "and 249,989 more values are outside [0, 3)" in outside.message  # the file's own finding is exact
    # Its data lists the first values and counts them all: a report stays small.
    assert len(outside.data["values"]) == len(outside.data["counts"]) == 1000
    assert outside.data["distinct"] == 249_997 and outside.data["pixels"] == 1_000_000 - 12
    assert peak < PEAK_LIMIT, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.code("LG201", "fail")
def test_the_text_report_says_values_were_left_uncounted(tmp_path):
    write_npy(tmp_path / "masks" / "ramp.npy", (np.arange(40_000) // 4).astype(np.int32).reshape(200, 200))
    stream = io.StringIO()
    write_report(run(tmp_path, LabelSpec(num_classes=3), workers=1), "text", stream)
    text = stream.getvalue()
    assert "over 2,048 distinct values were found; the 1,024 nearest 0 and the 1,024 farthest are counted" in text
    assert "(of the 2,048 values counted)" in text and "json lists every value counted" in text


@pytest.mark.code("LG201", "pass")
def test_a_dataset_within_the_cap_reports_every_value(tmp_path):
    ids = np.arange(2048, dtype=np.int32).reshape(32, 64)
    write_npy(tmp_path / "masks" / "ids.npy", np.kron(ids, np.ones((8, 8), np.int32)))  # 8x8 blocks
    summary = run(tmp_path, LabelSpec(num_classes=2048), workers=1).summary
    assert not summary.values_capped and len(summary.value_files) == 2048 and summary.capped_pixels == 0
