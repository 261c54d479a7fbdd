"""A flight record may come from anywhere (a colleague's crashed run, a bug report): `explain
--record` and `replay` read it as every JSON input is read, a regular file of bounded nesting,
and a hostile one is a usage error naming the file, never an internal error or a hang."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from explain_fixtures import LOGS

from labelguard.cli import main
from labelguard.explain import FlightRecordError, read_record
from labelguard.readers.base import MAX_NESTING

HANG_GUARD = 120
DEPTH = 200_000


def deep_record(path, depth=DEPTH):
    """A flight record whose loader settings nest ``depth`` arrays, written as text."""
    path.write_text('{"format": "labelguard-flight-record", "version": 1, "batches": [], "loader": {"x": '
                    + "[" * depth + "]" * depth + "}}", encoding="utf-8")
    return path


def assert_clean_usage_error(result, path):
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, RecursionError)
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert f"cannot read flight record {path}" in result.output
    assert f"more than {MAX_NESTING} levels deep" in result.output


def test_explain_with_a_record_nested_200000_deep_is_a_usage_error(tmp_path):
    record = deep_record(tmp_path / "flight.json")
    result = CliRunner().invoke(main, ["explain", str(LOGS / "cuda_nll2d_torch113.log"), "--record", str(record)])
    assert_clean_usage_error(result, record)
    assert "--record" in result.output


def test_replay_of_a_record_nested_200000_deep_is_a_usage_error(tmp_path):
    record = deep_record(tmp_path / "flight.json")
    result = CliRunner().invoke(main, ["replay", str(record), "--dataset-factory", "nowhere:make"])
    assert_clean_usage_error(result, record)


def test_read_record_refuses_one_level_past_the_bound_and_reads_the_bound(tmp_path):
    # The record's own object and the loader's are two levels: MAX_NESTING - 2 arrays in it reach the bound.
    assert read_record(deep_record(tmp_path / "at.json", MAX_NESTING - 2)).loader
    with pytest.raises(FlightRecordError, match=f"more than {MAX_NESTING} levels deep"):
        read_record(deep_record(tmp_path / "past.json", MAX_NESTING - 1))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_given_as_the_record_is_refused_at_once(tmp_path):
    fifo = tmp_path / "flight.json"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "labelguard", "explain", str(LOGS / "cuda_nll2d_torch113.log"),
                           "--record", str(fifo)], capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
