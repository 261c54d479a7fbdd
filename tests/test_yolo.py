"""YOLO: every code the YOLO audit raises, on real label files in Ultralytics and darknet layouts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from detection_builders import write_darknet, write_image, write_yolo, yolo_rows
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.layouts import AuditOptions
from labelguard.layouts.yolo import label_path, process_yolo
from labelguard.layouts.yolo.reader import read_labels
from audit_helpers import codes, found, run

NAMES = ["person", "car", "dog"]
ROW = (0, 0.5, 0.5, 0.2, 0.3)


def clean(root: Path, **kwargs) -> Path:
    splits = {
        "train": {"a": [ROW, (1, 0.25, 0.25, 0.1, 0.1)], "b": [(2, 0.7, 0.7, 0.2, 0.2)], "empty": ""},
        "val": {"c": [(0, 0.1, 0.1, 0.05, 0.05), (1, 0.9, 0.9, 0.1, 0.1)]},
    }
    return write_yolo(root, splits, **{"names": NAMES, **kwargs})


def problems(report) -> list:
    """The findings, without LG104 (small fixtures do not use every class of the spec)."""
    return [f for f in report.findings if f.code != "LG104"]


def label_file(root: Path, split: str, name: str) -> Path:
    return root / "labels" / split / f"{name}.txt"


# ---- clean datasets and their spec -----------------------------------------------------------

@pytest.mark.code("LG001", "pass")
@pytest.mark.code("LG002", "pass")
@pytest.mark.code("LG102", "pass")
@pytest.mark.code("LG103", "pass")
@pytest.mark.code("LG301", "pass")
@pytest.mark.code("LG302", "pass")
@pytest.mark.code("LG303", "pass")
def test_clean_dataset_has_no_findings(tmp_path):
    clean(tmp_path)
    report = run(tmp_path)
    assert report.layouts == ["yolo"]
    assert report.findings == [], [f.message for f in report.findings]
    assert report.spec.classes == tuple(NAMES)
    assert report.summary.samples == 4  # the empty label file is a background image
    classes = report.to_dict()["summary"]["classes"]
    assert classes == {"person": {"objects": 2, "images": 2}, "car": {"objects": 2, "images": 2},
                       "dog": {"objects": 1, "images": 1}}


@pytest.mark.code("LG001", "pass")
def test_readme_and_class_lists_among_label_files_are_not_label_files(tmp_path):
    clean(tmp_path)
    (tmp_path / "labels" / "README.txt").write_text("These labels were exported by a tool.\n")
    (tmp_path / "labels" / "train" / "classes.txt").write_text("\n".join(NAMES) + "\n")
    report = run(tmp_path)
    assert report.findings == [], [f.message for f in report.findings]
    assert report.summary.samples == 4


def test_data_yaml_as_the_path_audits_the_splits_it_names(tmp_path):
    clean(tmp_path)
    write_yolo(tmp_path, {"test": {"t": [(7, 0.5, 0.5, 0.1, 0.1)]}}, yaml_name=None)
    report = run(tmp_path / "data.yaml")
    assert report.layouts == ["yolo"]
    assert report.summary.samples == 4  # train and val; test is not named by data.yaml
    assert report.findings == []


def test_names_as_an_id_mapping_and_nc_without_names(tmp_path):
    clean(tmp_path / "a", names={0: "person", 1: "car", 2: "dog"})
    assert run(tmp_path / "a").spec.classes == tuple(NAMES)
    clean(tmp_path / "b", names=None, nc=3)
    spec = run(tmp_path / "b").spec
    assert spec.classes is None and spec.num_classes == 3


def test_nc_differing_from_names_follows_the_names(tmp_path):
    clean(tmp_path, nc=2)
    report = run(tmp_path)
    assert report.spec.classes == tuple(NAMES)
    assert any("nc: 2 but 3 names" in note for note in report.notes)


def test_images_without_label_files_are_background(tmp_path):
    clean(tmp_path)
    write_image(tmp_path / "images" / "train" / "no_label.jpg")
    report = run(tmp_path)
    assert report.findings == []
    assert any("1 image without a label file" in note for note in report.notes)


def test_segment_and_pose_rows(tmp_path):
    polygon = (1, 0.1, 0.1, 0.9, 0.1, 0.5, 0.8)
    write_yolo(tmp_path / "seg", {"train": {"a": [polygon, ROW]}}, names=NAMES)
    assert problems(run(tmp_path / "seg")) == []
    keypoints = (0, 0.5, 0.5, 0.2, 0.2, 0.4, 0.4, 2, 0.6, 0.6, 0)
    write_yolo(tmp_path / "pose", {"train": {"a": [keypoints]}}, names=["person"],
               extra_yaml="kpt_shape: [2, 3]\n")
    assert run(tmp_path / "pose").findings == []


# ---- class ids --------------------------------------------------------------------------------

@pytest.mark.code("LG102", "fail")
def test_every_label_at_or_above_nc_gives_consistent_data_for_one_summary_line(tmp_path):
    """Scenario 9 (ultralytics#1256): nc: 2 but the labels use 2..4 everywhere."""
    files = {f"img{i}": [(2 + i % 3, 0.5, 0.5, 0.1, 0.1), (2, 0.2, 0.2, 0.1, 0.1)] for i in range(12)}
    write_yolo(tmp_path, {"train": files}, names=None, nc=2)
    report = run(tmp_path)
    large = found(report, "LG102")
    assert len(large) == 12
    assert {f.data["num_classes"] for f in large} == {2}
    assert sorted({i for f in large for i in f.data["ids"]}) == [2, 3, 4]
    assert all(f.data["unit"] == "row" for f in large)
    first = next(f for f in large if f.path.endswith("img0.txt"))
    assert first.data["places"] == [1, 2] and first.data["ids"] == [2]
    assert "num_classes=2" in first.message and "ids must be 0..1" in first.message


def test_ids_are_checked_against_the_number_of_names(tmp_path):
    write_yolo(tmp_path, {"train": {"a": [ROW, (3, 0.5, 0.5, 0.1, 0.1)]}}, names=NAMES)
    [large] = found(run(tmp_path), "LG102")
    assert large.data["ids"] == [3] and large.data["num_classes"] == 3 and large.data["places"] == [2]


@pytest.mark.code("LG103", "fail")
def test_negative_class_id(tmp_path):
    write_yolo(tmp_path, {"train": {"a": "-1 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.2 0.2\n"}}, names=NAMES)
    [negative] = found(run(tmp_path), "LG103")
    assert negative.data["ids"] == [-1] and negative.data["places"] == [1]


def test_negative_id_declared_as_ignore_is_allowed(tmp_path):
    write_yolo(tmp_path, {"train": {"a": "-1 0.5 0.5 0.1 0.1\n"}}, names=NAMES)
    assert found(run(tmp_path, LabelSpec(ignore=(-1,))), "LG103") == []


def test_float_class_ids_are_read_as_loaders_read_them(tmp_path):
    write_yolo(tmp_path, {"train": {"a": "1.0 0.5 0.5 0.1 0.1\n"}}, names=NAMES)
    report = run(tmp_path)
    assert problems(report) == [] and report.summary.class_objects == {"car": 1}


# ---- rows and coordinates --------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_malformed_rows_are_lg001_with_the_row_and_the_rest_is_checked(tmp_path):
    text = "0 0.5 0.5 0.2 0.2\n1 0.5 0.5\nx 0.1 0.1 0.1 0.1\n0 0.5 abc 0.1 0.1\n1.5 0.5 0.5 0.1 0.1\n" \
           "0 0.5 0.5 0.1 0.1 0.9\n0 nan 0.5 0.1 0.1\n\n9 0.5 0.5 0.1 0.1\n"
    write_yolo(tmp_path, {"train": {"a": text}}, names=NAMES)
    report = run(tmp_path)
    rows = [f.data["row"] for f in found(report, "LG001")]
    assert rows == [2, 3, 4, 5, 6, 7]
    messages = {f.data["row"]: f.message for f in found(report, "LG001")}
    assert messages[2].startswith("row 2 has 3 values; a detection row has 5")
    assert messages[3] == "row 3 the class id 'x' is not an integer"
    assert messages[4] == "row 4 'abc' is not a number"
    [large] = found(report, "LG102")
    assert large.data["places"] == [9]


@pytest.mark.code("LG001", "fail")
def test_concise_output_points_an_unreadable_row_at_its_line_as_for_other_codes(tmp_path):
    write_yolo(tmp_path, {"train": {"a": "0 0.5 0.5 0.2 0.2\n\n1 0.5 0.5 0.2\n7 0.1 0.1 0.1 0.1\n"}}, names=NAMES)
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "-f", "concise", "--no-progress", "--no-config"])
    lines = result.output.splitlines()
    assert any(line.endswith("a.txt:3: LG001 [error] row 3 has 4 values; a detection row has 5 "
                             "(class x_center y_center width height), a segmentation row 1 + an even number "
                             ">= 6 (class x1 y1 x2 y2 x3 y3 ...)") for line in lines), result.output
    assert any("a.txt:4: LG102 [error] class id 7" in line for line in lines), result.output


@pytest.mark.parametrize("data, words", [
    (b"\x00\x01binary", "binary content"),
    ("0 0.5 0.5 0.1 0.1\n".encode("utf-16"), "binary content"),
    (b"\xff\xfe\xfa 0.5", "not UTF-8"),
])
def test_files_that_are_not_label_text(tmp_path, data, words):
    write_yolo(tmp_path, {"train": {"a": [ROW]}}, names=NAMES)
    label_file(tmp_path, "train", "a").write_bytes(data)
    [unreadable] = found(run(tmp_path), "LG001")
    assert words in unreadable.message


@pytest.mark.code("LG302", "fail")
def test_pixel_coordinates(tmp_path):
    write_yolo(tmp_path, {"train": {"a": "0 320 240 64 48\n1 0.5 0.5 0.1 0.1\n0 0.5 -0.01 0.1 0.1\n"}},
               names=NAMES)
    [pixels] = found(run(tmp_path), "LG302")
    assert pixels.data["rows"] == [1, 3] and pixels.data["max"] == 320
    assert "pixel coordinates" in pixels.message


@pytest.mark.code("LG301", "fail")
def test_zero_size_box(tmp_path):
    write_yolo(tmp_path, {"train": {"a": [ROW, (1, 0.5, 0.5, 0.0, 0.2)]}}, names=NAMES)
    [degenerate] = found(run(tmp_path), "LG301")
    assert degenerate.data["rows"] == [2]


@pytest.mark.code("LG303", "fail")
def test_duplicate_rows(tmp_path):
    write_yolo(tmp_path, {"train": {"a": "0 0.5 0.5 0.2 0.3\n1 0.1 0.1 0.1 0.1\n0 0.50 0.5 0.2 0.30\n"}},
               names=NAMES)
    [duplicate] = found(run(tmp_path), "LG303")
    assert duplicate.data["pairs"] == [[1, 3]]


# ---- files, splits and lists -------------------------------------------------------------------

@pytest.mark.code("LG002", "fail")
def test_label_file_without_image(tmp_path):
    clean(tmp_path)
    orphan = label_file(tmp_path, "train", "orphan")
    orphan.write_text(yolo_rows([ROW]))
    [unpaired] = found(run(tmp_path), "LG002")
    assert unpaired.path.endswith("orphan.txt") and unpaired.data["side"] == "label"


@pytest.mark.code("LG003", "fail")
def test_split_named_by_data_yaml_is_missing(tmp_path):
    clean(tmp_path)
    with open(tmp_path / "data.yaml", "a", encoding="utf-8") as handle:
        handle.write("test: images/test\n")
    [missing] = found(run(tmp_path), "LG003")
    assert missing.path.endswith("data.yaml") and "test: 'images/test' does not exist" in missing.message


def test_roboflow_relative_splits(tmp_path):
    for split in ("train", "valid"):
        write_image(tmp_path / split / "images" / "a.jpg")
        (tmp_path / split / "labels").mkdir(parents=True)
        (tmp_path / split / "labels" / "a.txt").write_text(yolo_rows([ROW]))
    (tmp_path / "data.yaml").write_text("train: ../train/images\nval: ../valid/images\nnc: 1\nnames: ['a']\n")
    report = run(tmp_path)
    assert report.findings == [] and report.summary.samples == 2


def test_invalid_data_yaml(tmp_path):
    clean(tmp_path)
    (tmp_path / "data.yaml").write_text("names: [a, b\ntrain: x\n")
    [broken] = found(run(tmp_path, options=AuditOptions(format="yolo")), "LG001")
    assert broken.path.endswith("data.yaml") and "invalid YAML at line" in broken.message


def test_darknet_obj_data_and_its_image_list(tmp_path):
    write_darknet(tmp_path, {"1": [ROW], "2": [(5, 0.5, 0.5, 0.1, 0.1)]}, NAMES, listed=["1", "2", "3"])
    report = run(tmp_path)
    assert report.layouts == ["yolo"] and report.spec.classes == tuple(NAMES)
    assert sorted(f.code for f in problems(report)) == ["LG003", "LG102"]
    [missing] = found(report, "LG003")
    assert missing.path.endswith("train.txt") and missing.data["line"] == 3


def test_labels_beside_images_without_any_dataset_file(tmp_path):
    (tmp_path / "1.txt").write_text(yolo_rows([ROW]))
    write_image(tmp_path / "1.jpg")
    (tmp_path / "notes.txt").write_text("not a label file\n")
    report = run(tmp_path)
    assert report.layouts == ["yolo"] and codes(report) == {"LG006"} and report.summary.samples == 1


def test_mask_folder_named_labels_is_not_taken_for_yolo(tmp_path):
    import numpy as np
    from builders import write_png

    for name in ("a", "b"):
        write_image(tmp_path / "images" / f"{name}.png")
        write_png(tmp_path / "labels" / f"{name}.png", np.zeros((24, 32), dtype=np.uint8))
    (tmp_path / "labels" / "README.txt").write_text("masks, 0 = background\n")
    assert run(tmp_path).layouts == ["paired"]


def test_label_path_follows_ultralytics():
    assert label_path("/d/images/train/a.b.jpg") == "/d/labels/train/a.b.txt"
    assert label_path("/images/x/images/a.png") == "/images/x/labels/a.txt"
    assert label_path("/d/pics/a.jpg") == "/d/pics/a.txt"


def test_cli_on_a_data_yaml(tmp_path):
    clean(tmp_path)
    label_file(tmp_path, "val", "c").write_text("3 0.5 0.5 0.1 0.1\n")
    result = CliRunner().invoke(main, ["audit", str(tmp_path / "data.yaml"), "--no-config", "--no-progress",
                                       "-f", "json"])
    assert result.exit_code == 1, result.output
    assert '"LG102"' in result.output


# ---- hypothesis: rows never crash the audit ------------------------------------------------------

TOKEN = st.sampled_from(["0", "1", "2", "7", "-1", "0.5", "1.0", "1e-3", "nan", "inf", "x", "", "3.5", "999"])
ROWS = st.lists(st.lists(TOKEN, max_size=9).map(" ".join), max_size=8).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_any_rows_give_findings_never_a_traceback(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("yolo") / "a.txt"
    path.write_text(text)
    result = process_yolo(FileTask(process_yolo, str(path), "a.txt"), LabelSpec(classes=tuple(NAMES)))
    assert result.errors == []
    labels = read_labels(text.encode())
    malformed = [f for f in result.findings if f.code == "LG001"]
    assert len(malformed) == min(len(labels.problems), 20) + (len(labels.problems) > 20)
    assert len(labels.ids) + len(labels.problems) == sum(1 for line in text.splitlines() if line.split())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_findings_never_a_traceback(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("yolo") / "a.txt"
    path.write_bytes(data)
    result = process_yolo(FileTask(process_yolo, str(path), "a.txt"), LabelSpec(num_classes=3))
    assert result.errors == []
