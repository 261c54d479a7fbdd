"""Text formats bounded by the file, not by what it expands to: YAML aliases and nesting, JSON
and XML nesting, ids and numbers past what int64 (or Python's int()) holds, CSV fields past
the csv module's limit, list lines longer than any path. Each is LG001 (or a row problem)
with the reason, never a RecursionError, OverflowError or an audit that runs for minutes."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation_builders import classification_csv, coco_dataset, write_image
from audit_helpers import codes, found, peak_of, run
from builders import organic_mask, write_dataset_meta, write_npy, write_png
from detection_builders import voc_xml, write_voc, write_yolo
from hostile_builders import billion_laughs_yaml, coco_with_huge_ids
from labelguard.core.spec import LabelSpec
from labelguard.readers.base import MAX_NESTING, ReadError, parse_json
from labelguard.layouts.coco.reader import read_coco
from labelguard.readers.lists import MAX_LINE, parse_list
from labelguard.layouts.tables.reader import FIELD_LIMIT, MAX_ROW
from labelguard.layouts.voc.reader import read_voc, read_voc_tree
from labelguard.layouts.yolo.reader import ALIAS_EXPANSION, load_yaml, read_data_yaml


def lg001_messages(report) -> list[str]:
    return [f.message for f in found(report, "LG001")]


# ---- YAML ---------------------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_a_billion_laughs_data_yaml_is_lg001_before_anything_expands(tmp_path):
    write_yolo(tmp_path, {"train": {"a": [(0, 0.5, 0.5, 0.2, 0.2)]}}, yaml_name=None)
    (tmp_path / "data.yaml").write_text(billion_laughs_yaml(), encoding="utf-8")
    report = run(tmp_path / "data.yaml", workers=1)
    [message] = lg001_messages(report)
    assert "aliases expand" in message and "billion laughs" in message
    assert not report.errors


@pytest.mark.parametrize("text, expected", [
    ("names: &a [*a]\n", "contains it"),
    ("a: &a {b: *a}\nnames: [x]\n", "contains it"),
    ("names: " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "\n", "nests more than"),
    ("names: " + "[" * 5000 + "]" * 5000 + "\n", "nest"),
])
def test_recursive_or_deep_yaml_is_a_read_error(tmp_path, text, expected):
    path = tmp_path / "data.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReadError, match=expected):
        read_data_yaml(str(path))


def test_aliases_chained_deeper_than_the_bound_are_refused_though_each_anchor_is_shallow():
    # each anchor nests 30 levels and holds the previous one: 4 x 30 levels once expanded
    lines = ["a0: &a0 " + "[" * 30 + "x" + "]" * 30]
    for level in range(1, 4):
        lines.append(f"a{level}: &a{level} " + "[" * 30 + f"*a{level - 1}" + "]" * 30)
    with pytest.raises(ReadError, match="once its aliases are expanded"):
        load_yaml("\n".join(lines) + "\n")


def test_aliases_that_expand_a_little_are_read():
    text = "base: &b {nc: 2, names: [cat, dog]}\ntrain: images/train\n<<: *b\nval: *b\n"
    assert load_yaml(text) == yaml.safe_load(text)
    budget = "\n".join([f"k{i}: &k{i} [" + ", ".join(["x"] * 100) + "]" for i in range(10)]
                       + [f"use{i}: *k{i}" for i in range(10)])
    assert load_yaml(budget) == yaml.safe_load(budget)
    assert ALIAS_EXPANSION > 1000


YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text("abc :-_/.0123", max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text("abcxyz", min_size=1, max_size=4),
                                                                 inner, max_size=4),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(YAML_VALUES, st.booleans())
def test_load_yaml_reads_what_safe_load_reads(value, flow):
    text = yaml.safe_dump(value, default_flow_style=flow)
    assert load_yaml(text) == yaml.safe_load(text)


# ---- JSON ---------------------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_a_dataset_meta_json_nested_100000_deep_is_lg001_not_a_recursion_error(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.zeros((8, 8, 3), np.uint8))
    (tmp_path / "dataset_meta.json").write_text('{"segmentation_colors": ' + "[" * 100_000 + "]" * 100_000 + "}")
    report = run(tmp_path, workers=1)
    [message] = lg001_messages(report)
    assert f"more than {MAX_NESTING} levels deep" in message and "dataset_meta.json" in message
    assert not report.errors


def test_an_nnunet_dataset_json_nested_100000_deep_is_named_not_a_recursion_error(tmp_path):
    write_png(tmp_path / "labelsTr" / "case_0.png", organic_mask((16, 16), (0, 1)))
    (tmp_path / "dataset.json").write_text('{"labels": ' + "[" * 100_000 + "]" * 100_000 + "}")
    report = run(tmp_path, workers=1)
    assert not report.errors
    assert any("dataset.json" in note and f"more than {MAX_NESTING} levels deep" in note for note in report.notes), \
        report.notes
    assert report.summary.samples == 1


def test_a_fix_map_file_nested_100000_deep_is_a_usage_error(tmp_path):
    from click.testing import CliRunner

    from labelguard.cli import main

    write_png(tmp_path / "masks" / "a.png", organic_mask((16, 16), (0, 1)))
    (tmp_path / "map.json").write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(main, ["fix", "rename", str(tmp_path / "masks"), "--map-file", str(tmp_path / "map.json")])
    assert result.exit_code == 2, result.output
    assert f"more than {MAX_NESTING} levels deep" in result.output
    assert not isinstance(result.exception, RecursionError)


@pytest.mark.code("LG001", "pass")
def test_a_dataset_meta_json_as_written_is_a_colour_map(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.zeros((8, 8, 3), np.uint8))
    write_dataset_meta(tmp_path / "dataset_meta.json", ["background", "cat"], [(0, 0, 0), (128, 0, 0)])
    assert "LG001" not in codes(run(tmp_path, workers=1))


@pytest.mark.parametrize("text", ["[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1),
                                  '{"a": ' * 3000 + "1" + "}" * 3000, "[" * 200_000])
def test_parse_json_refuses_deep_documents(text):
    with pytest.raises(ReadError, match="levels deep|invalid"):
        parse_json(text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_parse_json_reads_what_json_loads_reads(value):
    text = json.dumps(value)
    assert parse_json(text) == json.loads(text)


def test_parse_json_reads_exactly_the_bound():
    text = "[" * MAX_NESTING + "]" * MAX_NESTING
    assert parse_json(text) == json.loads(text)


# ---- XML ----------------------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("document", [
    "<annotation><filename>a.jpg</filename>" + "<a>" * 200_000 + "</a>" * 200_000 + "</annotation>",
    "<annotation><object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax>"
    "</bndbox>" + "<a>" * 5000 + "</a>" * 5000 + "</object></annotation>",
    '<annotation verified="yes">' + "<a>" * 5000 + "</a>" * 5000 + "</annotation>",
])
def test_xml_nested_deeper_than_the_bound_is_lg001(tmp_path, document):
    write_voc(tmp_path, {"good": [("cat", (1, 1, 9, 9))]}, labels=["cat"])
    (tmp_path / "Annotations" / "deep.xml").write_text(document)
    write_image(tmp_path / "JPEGImages" / "deep.jpg")
    report = run(tmp_path, workers=1)
    [message] = lg001_messages(report)
    assert f"more than {MAX_NESTING} levels deep" in message
    assert report.summary.samples == 1 and not report.errors


@pytest.mark.code("LG001", "pass")
def test_a_voc_file_with_many_objects_is_not_taken_for_a_deep_one(tmp_path):
    objects = [("cat", (1, 1, 9 + i, 9)) for i in range(60)]  # 600 start tags, 4 levels deep
    write_voc(tmp_path, {"crowd": objects}, labels=["cat"])
    report = run(tmp_path, workers=1)
    assert "LG001" not in codes(report) and report.summary.class_objects["cat"] == 60


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 * MAX_NESTING), st.integers(0, 30), st.booleans())
def test_plain_and_tree_readers_agree_on_nesting(depth, objects, attribute):
    nested = "<a>" * depth + "x" + "</a>" * depth
    document = voc_xml("a.jpg", [("cat", (1, 1, 5, 5))] * objects).replace("</annotation>", nested + "</annotation>")
    if attribute:
        document = document.replace("<annotation>", '<annotation verified="yes">', 1)
    data = document.encode()
    outcomes = []
    for reader in (read_voc, read_voc_tree):
        try:
            outcomes.append(len(reader(data).names))
        except ReadError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]
    assert (depth + 1 > MAX_NESTING) == isinstance(outcomes[0], str)


# ---- COCO ---------------------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_coco_ids_of_ten_to_the_thirty_are_problems_and_the_rest_is_audited(tmp_path):
    path = tmp_path / "annotations" / "instances_train.json"
    path.parent.mkdir(parents=True)
    path.write_text(coco_with_huge_ids())
    write_image(tmp_path / "images" / "train" / "a.jpg")
    report = run(tmp_path, workers=1)
    messages = " ".join(lg001_messages(report))
    for what in ("an image id", "a category id", "a category_id", "an annotation id"):
        assert f"{what} is beyond the 64-bit integer range" in messages
    assert report.summary.class_objects["cat"] == 1 and not report.errors


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("value, expected", [
    ("9" * 5000, "more than 4300 digits"),
    ("1" + "0" * 400, "bbox is not 4 numbers"),
])
def test_coco_numbers_python_cannot_hold_are_lg001(tmp_path, value, expected):
    path = coco_dataset(tmp_path, n_images=2)
    document = json.loads(path.read_text())
    document["annotations"][0]["bbox"] = [1, 1, "PLACE", 4]
    path.write_text(json.dumps(document).replace('"PLACE"', value))
    report = run(tmp_path, workers=1)
    assert any(expected in message for message in lg001_messages(report))
    assert not report.errors


def test_coco_categories_with_huge_ids_are_not_taken_for_the_spec(tmp_path):
    from labelguard.layouts.coco.reader import peek_categories

    path = tmp_path / "instances.json"
    path.write_text(coco_with_huge_ids())
    assert peek_categories(str(path)) is None
    record = read_coco(str(path))
    assert list(record.categories) == [1]


@pytest.mark.code("LG001", "fail")
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")
def test_a_named_pipe_as_a_coco_file_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "instances.json")
    with pytest.raises(ReadError, match="not a regular file"):
        read_coco(str(tmp_path / "instances.json"))


# ---- CSV, YOLO rows and lists -------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("separator, name", [(",", "train.csv"), (" ", "train.txt")])
def test_a_field_past_the_csv_limit_is_lg001(tmp_path, separator, name):
    table = classification_csv(tmp_path, {"a.jpg": "cat", "b.jpg": "dog"}, name=name, separator=separator)
    with open(table, "a", encoding="utf-8") as handle:
        handle.write(f"c.jpg{separator}{'x' * (FIELD_LIMIT + 1)}\n")
    report = run(table, workers=1)
    [message] = lg001_messages(report)
    assert f"more than {FIELD_LIMIT:,} characters, the csv module's limit" in message
    assert not report.errors


@pytest.mark.code("LG001", "fail")
def test_a_table_row_of_millions_of_cells_is_lg001(tmp_path):
    table = classification_csv(tmp_path, {"a.jpg": "cat", "b.jpg": "dog"})
    with open(table, "a", encoding="utf-8") as handle:
        handle.write("c.jpg" + "," * (MAX_ROW + 1) + "\n")
    report, peak = peak_of(lambda: run(table, workers=1))
    [message] = lg001_messages(report)
    assert "line 4 holds 4,194,310 characters: no row of paths and labels is that long" in message
    assert peak < 8 * MAX_ROW  # the text and its lines; split into cells it would be 8 bytes per cell more


@pytest.mark.code("LG001", "fail")
def test_integer_labels_past_int64_are_row_problems(tmp_path):
    table = classification_csv(tmp_path, {"a.jpg": "1", "b.jpg": "9" * 5000, "c.jpg": "9" * 19,
                                          "d.jpg": "-9223372036854775808"}, header=("image_name", "label"))
    report = run(table, LabelSpec(num_classes=3), workers=1)
    [message] = lg001_messages(report)
    assert "2 lines cannot be read" in message and "(5,000 characters) is an integer beyond the 64-bit range" in message
    assert "line 4" in message and "line 5" not in message
    assert not report.errors


@pytest.mark.code("LG001", "fail")
def test_yolo_class_ids_past_int64_are_row_problems(tmp_path):
    rows = f"{10**30} 0.5 0.5 0.1 0.1\n{'9' * 5000} 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.1 0.1\n"
    write_yolo(tmp_path, {"train": {"a": rows}}, names=["cat"])
    report = run(tmp_path / "data.yaml", workers=1)
    messages = lg001_messages(report)
    assert len(messages) == 2 and all("beyond the 64-bit integer range" in m for m in messages)
    assert all(len(m) < 400 for m in messages)
    assert report.summary.class_objects == {"cat": 1}


@pytest.mark.code("LG001", "fail")
def test_a_list_line_longer_than_any_path_makes_the_list_lg001(tmp_path):
    for name in ("a", "b"):
        write_npy(tmp_path / "masks" / f"{name}.npy", organic_mask((8, 8)))
    listing = tmp_path / "train.txt"
    listing.write_text("a\n" + "b" * (MAX_LINE + 1) + "\n")
    with pytest.raises(ReadError, match="line 2 holds 65,537 characters"):
        parse_list(str(listing))
    report = run(tmp_path, LabelSpec(num_classes=3), workers=1, options=_lists(listing))
    assert any("65,537 characters" in m for m in lg001_messages(report)) and not report.errors


@pytest.mark.code("LG001", "pass")
def test_a_list_of_long_but_possible_paths_is_read(tmp_path):
    listing = tmp_path / "train.txt"
    entry = "/".join(["d" * 200] * 20)  # 4,019 characters: a path Linux could hold
    listing.write_text(f"a\n{entry}\n")
    assert [e.text for e in parse_list(str(listing)).entries] == ["a", entry]


def _lists(path):
    from labelguard.layouts.base import AuditOptions

    return AuditOptions(format="masks", lists=(str(path),))
