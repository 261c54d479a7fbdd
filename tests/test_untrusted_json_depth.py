"""JSON and TOML that nest past the stack, wherever labelguard reads them: a saved report
(`fix --from-report`), a baseline, `--storage-options`, a fix journal shipped inside a dataset,
a dataset's labelguard.toml or pyproject.toml. Each is a clear error or finding naming the file
and the bound (:data:`MAX_NESTING` levels for JSON), never "internal error: RecursionError".
Every document is built as text: json.dumps would recurse as deep as the parser."""

from __future__ import annotations

import json

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import organic_mask, write_png
from labelguard.cli import main
from labelguard.readers.base import MAX_NESTING, nesting_depth

DEPTH = 200_000
TOO_DEEP = f"more than {MAX_NESTING} levels deep"


def deep_array(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


def invoke(*args):
    return CliRunner().invoke(main, [*args])


def assert_no_internal_error(result):
    assert not isinstance(result.exception, RecursionError), result.exception
    assert "internal error" not in result.output and "Traceback" not in result.output


def masks_with_a_border(root):
    mask = organic_mask((16, 16), (0, 1))
    mask[0, :3] = 255
    write_png(root / "masks" / "a.png", mask)
    return root


def test_a_report_nested_200000_deep_given_to_fix_from_report_is_a_usage_error(tmp_path):
    data = masks_with_a_border(tmp_path / "data")
    report = tmp_path / "report.json"
    report.write_text('{"version": 1, "summary": {"paths": ["data"]}, "findings": ' + deep_array() + "}")
    result = invoke("fix", "remap", "--map", "255:0", "--from-report", str(report), str(data))
    assert result.exit_code == 2, result.output
    assert_no_internal_error(result)
    assert str(report) in result.output and TOO_DEEP in result.output


def test_a_baseline_nested_200000_deep_is_a_usage_error(tmp_path):
    data = masks_with_a_border(tmp_path / "data")
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"kind": "labelguard-baseline", "findings": ' + deep_array() + "}")
    result = invoke("audit", str(data), "--baseline", str(baseline), "--no-progress", "--workers", "1")
    assert result.exit_code == 2, result.output
    assert_no_internal_error(result)
    assert f"--baseline {baseline}" in result.output and TOO_DEEP in result.output


def test_storage_options_nested_200000_deep_are_a_usage_error(tmp_path):
    data = masks_with_a_border(tmp_path / "data")
    result = invoke("audit", str(data), "--storage-options", deep_array(), "--no-progress")
    assert result.exit_code == 2, result.output
    assert_no_internal_error(result)
    assert "--storage-options" in result.output and TOO_DEEP in result.output


def test_a_journal_line_nested_200000_deep_is_a_conflict_and_the_other_lines_are_undone(tmp_path):
    data = masks_with_a_border(tmp_path / "data")
    before = (data / "masks" / "a.png").read_bytes()
    applied = invoke("fix", "remap", "--map", "255:0", str(data), "--apply")
    assert applied.exit_code == 0, applied.output
    [journal] = (data / ".labelguard" / "backups").glob("*/journal.jsonl")
    with open(journal, "a", encoding="utf-8") as handle:  # what a dataset can ship inside .labelguard
        handle.write(deep_array() + "\n")
    deep_line = len(journal.read_text().splitlines())
    result = invoke("fix", "undo", str(data))
    assert_no_internal_error(result)
    assert result.exit_code == 1, result.output
    assert (f"journal.jsonl:{deep_line}: the journal line is not JSON labelguard reads (JSON nests arrays and "
            f"objects {TOO_DEEP}") in result.output
    assert (data / "masks" / "a.png").read_bytes() == before


def test_a_dataset_labelguard_toml_nested_past_the_stack_is_named_not_an_internal_error(tmp_path):
    data = masks_with_a_border(tmp_path / "data")
    config = data / "labelguard.toml"
    config.write_text("[labels]\nclasses = " + deep_array(100_000) + "\n", encoding="utf-8")
    result = invoke("audit", str(data), "--no-progress", "--workers", "1")
    assert result.exit_code == 2, result.output
    assert_no_internal_error(result)
    assert f"invalid TOML in {config}: arrays or inline tables nest too deep to parse" in result.output


def test_a_pyproject_toml_nested_past_the_stack_is_not_taken_for_a_config(tmp_path):
    data = masks_with_a_border(tmp_path / "data")
    (data / "pyproject.toml").write_text("[tool.labelguard.labels]\nclasses = " + deep_array(100_000) + "\n",
                                         encoding="utf-8")
    result = invoke("audit", str(data), "--num-classes", "2", "--no-progress", "--workers", "1", "-f", "json")
    assert_no_internal_error(result)
    assert result.exit_code == 1, result.output
    assert "LG201" in {finding["code"] for finding in json.loads(result.output)["findings"]}


def _depth(value) -> int:
    """How deep lists and dicts nest, by its definition (recursive: for shallow values)."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
    if children is None:
        return 0
    return 1 + max((_depth(child) for child in children), default=0)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=40)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.integers(0, 8))
def test_nesting_depth_counts_as_the_definition_up_to_its_limit(value, limit):
    assert nesting_depth(value, limit) == min(_depth(value), limit + 1)

