"""Config and flag values are checked for their type and meaning: a clear usage error naming
the key, never an internal error, a silently truthy string or a silently dropped class name."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from builders import write_png
from labelguard.cli import main
from labelguard.config import load_config
from labelguard.errors import SpecError


def write_config(tmp_path, text: str):
    path = tmp_path / "labelguard.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("line, words", [
    ("num_classes = inf", "num_classes must be an integer, got inf"),
    ("num_classes = nan", "num_classes must be an integer, got nan"),
    ("num_classes = 3.9", "num_classes must be an integer, got 3.9"),
    ('num_classes = "many"', "num_classes must be an integer, got 'many'"),
    ('reduce_zero_label = "false"', "reduce_zero_label must be true or false, got 'false'"),
    ('classes = ",,,"', "4 of the 4 names are empty"),
    ('classes = ["dog", ""]', "1 of the 2 names is empty (position 1)"),
])
def test_bad_label_values_are_errors_naming_the_key(tmp_path, line, words):
    with pytest.raises(SpecError, match=None) as caught:
        load_config(str(write_config(tmp_path, f"[labels]\n{line}\n")))
    assert words in str(caught.value)


def test_a_whole_float_count_is_accepted(tmp_path):
    config = load_config(str(write_config(tmp_path, "[labels]\nnum_classes = 3.0\nreduce_zero_label = false\n")))
    assert config.spec.num_classes == 3 and config.spec.reduce_zero_label is False


@pytest.mark.parametrize("line, words", [
    ('workers = "many"', "audit.workers"),
    ("workers = 0", "audit.workers"),
    ("workers = true", "audit.workers"),
    ("sample = -3", "audit.sample"),
    ('fail_on = "sometimes"', "audit.fail_on"),
    ("format = 3", "audit.format"),
])
def test_bad_audit_values_are_errors_naming_the_key(tmp_path, line, words):
    with pytest.raises(SpecError) as caught:
        load_config(str(write_config(tmp_path, f"[audit]\n{line}\n")))
    assert words in str(caught.value) and "labelguard.toml" in str(caught.value)


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config"], catch_exceptions=False)


def masks(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.array([[0, 1], [1, 0]], np.uint8))
    return str(tmp_path)


@pytest.mark.parametrize("classes", [",,,", "cat,,dog", ""])
def test_empty_class_names_on_the_command_line_are_refused(tmp_path, classes):
    result = cli("audit", masks(tmp_path), "--classes", classes)
    assert result.exit_code == 2
    assert "empty class name" in result.output


def test_a_trailing_comma_in_classes_is_no_class(tmp_path):
    result = cli("audit", masks(tmp_path), "--classes", "background,cat,", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"]["spec"]["classes"] == ["background", "cat"]


def test_more_workers_than_cores_are_capped_with_a_note(tmp_path):
    result = cli("audit", masks(tmp_path), "--num-classes", "2", "-j", "4096", "-f", "json")
    assert result.exit_code == 0, result.output
    assert any(n.startswith("4,096 workers asked for") for n in json.loads(result.output)["summary"]["notes"])
