"""OpenMMLab annotation files (mmengine's data_list of img_path and gt_label), as mmpretrain's
CustomDataset reads them: read by the classification-table layout, each sample's image looked
for (LG003), each class id checked against the spec (LG102), unreadable samples LG001 with
their data_list index, the parser never failing but with a ReadError."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labelguard import LabelSpec, audit
from labelguard.readers.base import ReadError
from labelguard.layouts.tables.data_list import is_data_list_head, read_data_list
from tests.builders import write_jpeg


def _dataset(root: Path, samples: list[dict], name: str = "ann.json", metainfo: dict | None = None) -> Path:
    """mmpretrain's shape: images in class folders, an annotation file beside them."""
    for folder in ("a", "b"):
        write_jpeg(root / folder / "1.jpg", np.full((8, 8, 3), 90, np.uint8))
    body = {"metainfo": metainfo or {"classes": ["cat", "dog"]}, "data_list": samples}
    (root / name).write_text(json.dumps(body, indent=2))
    return root


def _codes(report) -> list[tuple[str, str]]:
    return sorted((f.code, Path(f.path).name) for f in report.findings if str(f.severity) == "error")


def _audit(root: Path, spec: LabelSpec | None = None):
    return audit(str(root), spec or LabelSpec(num_classes=2), use_project_config=False, cache=False)


@pytest.mark.code("LG003", "fail")
def test_a_sample_whose_image_does_not_exist_is_lg003_naming_its_data_list_index(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": 0}, {"img_path": "b/2.jpg", "gt_label": 1}])
    report = _audit(root)
    assert report.layouts == ["csv"]
    [finding] = [f for f in report.findings if f.code == "LG003"]
    assert "data_list[1] 'b/2.jpg'" in finding.message


@pytest.mark.code("LG003", "pass")
def test_every_image_present_and_every_id_in_the_spec_is_clean(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": 0}, {"img_path": "b/1.jpg", "gt_label": [0, 1]}])
    report = _audit(root)
    assert _codes(report) == [] and report.summary.samples == 2
    assert not [f for f in report.findings if f.code == "LG007"]


@pytest.mark.code("LG102", "fail")
def test_a_multi_label_id_past_the_classes_is_lg102(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": [0, 5]}, {"img_path": "b/1.jpg", "gt_label": 1}])
    report = _audit(root)
    assert _codes(report) == [("LG102", "ann.json")]
    [finding] = [f for f in report.findings if f.code == "LG102"]
    assert "class id 5" in finding.message and "(sample 1)" in finding.message


@pytest.mark.code("LG001", "fail")
def test_samples_that_cannot_be_read_are_lg001_and_the_others_are_still_checked(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": "cat"}, {"gt_label": 1},
                               {"img_path": "b/3.jpg", "gt_label": 0}])
    report = _audit(root)
    assert _codes(report) == [("LG001", "ann.json"), ("LG003", "ann.json")]
    [finding] = [f for f in report.findings if f.code == "LG001"]
    assert "(data_list[0]) has a gt_label 'cat'" in finding.message
    assert "(data_list[1]) has no img_path" in finding.message


def test_multi_task_labels_are_said_to_be_unchecked_and_their_images_are_looked_for(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": {"gender": 0, "wear": [1, 0]}},
                               {"img_path": "b/9.jpg", "gt_label": {"gender": 7}}],
                    metainfo={"tasks": ["gender", "wear"]})
    report = _audit(root)
    assert _codes(report) == [("LG003", "ann.json")]
    assert any("multi-task labels" in note and "not checked" in note for note in report.notes)


def test_a_json_of_another_kind_beside_a_table_is_not_read_as_one(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": 0}])
    (root / "config.json").write_text(json.dumps({"lr": 0.1, "data_list": "train"}))
    report = _audit(root)
    assert sorted(Path(f).name for f in report.files) == ["ann.json"]


def test_the_class_table_names_ids_by_the_spec(tmp_path):
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": 0}, {"img_path": "b/1.jpg", "gt_label": 1}])
    report = _audit(root, LabelSpec(classes=("cat", "dog")))
    assert dict(report.summary.class_objects) == {"cat": 1, "dog": 1}


# ---- the parser -----------------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                         st.sampled_from(["img_path", "gt_label", "data_list", "metainfo", "x"]), inner, max_size=4),
                     max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(value=_JSON)
def test_any_json_is_read_or_refused_with_a_read_error(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("j") / "ann.json"
    path.write_text(json.dumps(value))
    try:
        found = read_data_list(str(path))
    except ReadError:
        return
    assert len(found.paths) == len(found.samples) == len(found.labels)
    assert found.problem_count + len(found.paths) == len(value["data_list"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text("abc/", min_size=1, max_size=8).filter(str.strip),
                          st.integers(0, 9) | st.lists(st.integers(0, 9), max_size=3)), max_size=10))
def test_a_generated_data_list_reads_back_as_written(tmp_path_factory, samples):
    path = tmp_path_factory.mktemp("j") / "ann.json"
    text = json.dumps({"data_list": [{"img_path": p, "gt_label": label} for p, label in samples]})
    path.write_text(text)
    assert is_data_list_head(text.encode()[:4096]) or not samples
    found = read_data_list(str(path))
    assert found.paths == [p for p, _ in samples]  # as written: mmengine joins them so
    assert found.labels == [tuple(label) if isinstance(label, list) else (label,) for _, label in samples]
    assert found.problem_count == 0


def test_column_flags_name_a_csv_column_and_never_make_a_json_list_be_read_by_them(tmp_path):
    """--label-column names a CSV's column: an annotation file beside the CSV is then not
    read by it, and says so (LG007), instead of the flag being silently ignored for it."""
    root = _dataset(tmp_path, [{"img_path": "a/1.jpg", "gt_label": 0}])
    (root / "train.csv").write_text("path,kind\na/1.jpg,cat\n")
    from labelguard.layouts.base import AuditOptions

    report = audit(str(root), LabelSpec(classes=("cat", "dog")), options=AuditOptions(label_column="kind"),
                   use_project_config=False, cache=False)
    assert sorted(Path(f).name for f in report.files) == ["train.csv"]
    assert [(f.code, Path(f.path).name) for f in report.findings if f.code == "LG007"] == [("LG007", "ann.json")]
