"""`fix rename` on class names with surrounding whitespace ('dog '): a quoted --map key (or a
--map-file) names it exactly, and the new name is written exactly as the map spells it."""

import json

import pytest
from click.testing import CliRunner

from annotation_builders import classification_csv, coco_categories, coco_dataset
from detection_builders import write_voc
from fix_data import digests
from labelguard.cli import main
from labelguard.fix import FixError, rename, undo
from labelguard.fix._base import parse_name_map
from labelguard.layouts.voc.reader import read_voc


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_quoted_names_keep_their_spaces_and_unquoted_ones_are_stripped():
    assert parse_name_map("'dog '=dog, Cat = cat") == {"dog ": "dog", "Cat": "cat"}
    assert parse_name_map('" big cat"=big cat,\'a,b\'=\'a=b\'') == {" big cat": "big cat", "a,b": "a=b"}
    with pytest.raises(FixError, match="not closed"):
        parse_name_map("'dog =dog")
    with pytest.raises(FixError, match="OLD=NEW"):
        parse_name_map("dog")


def test_csv_cell_with_a_trailing_space(tmp_path):
    table = classification_csv(tmp_path, {"0.jpg": "dog ", "1.jpg": "cat", "2.jpg": "dog", "3.jpg": "dog "})
    original = digests([table])
    result = invoke("fix", "rename", tmp_path, "--map", "'dog '=dog", "--apply")
    assert result.exit_code == 0, result.output
    lines = table.read_text().splitlines()
    assert lines[1:] == ["0.jpg,dog", "1.jpg,cat", "2.jpg,dog", "3.jpg,dog"]
    undo(str(tmp_path))
    assert digests([table]) == original


def test_voc_name_with_a_trailing_space(tmp_path):
    write_voc(tmp_path, {"000001": [("dog ", (2, 2, 10, 10)), ("dog", (3, 3, 9, 9))]})
    path = tmp_path / "Annotations" / "000001.xml"
    original = path.read_bytes()
    assert b"<name>dog </name>" in original
    map_file = tmp_path / "names.json"
    map_file.write_text(json.dumps({"dog ": "dog"}))
    result = invoke("fix", "rename", tmp_path / "Annotations", "--map-file", map_file, "--apply")
    assert result.exit_code == 0, result.output
    written = path.read_bytes()
    assert written == original.replace(b"<name>dog </name>", b"<name>dog</name>")
    assert read_voc(written).names == ["dog", "dog"]
    undo(str(tmp_path / "Annotations"))
    assert path.read_bytes() == original


def test_coco_category_with_a_trailing_space(tmp_path):
    path = coco_dataset(tmp_path, categories=coco_categories(["cat", "dog "]), indent=2)
    original = digests([path])
    result = rename(str(tmp_path), "'dog '=Dog", apply=True)
    assert [c.status for c in result.changes] == ["written"], result.changes
    assert [c["name"] for c in json.loads(path.read_text())["categories"]] == ["cat", "Dog"]
    undo(str(tmp_path))
    assert digests([path]) == original


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00binary", b'["dog"]'], ids=["broken", "binary", "list"])
def test_a_name_map_file_that_is_not_a_json_object_is_a_usage_error(tmp_path, content):
    write_voc(tmp_path, {"a": [("dog", (1, 1, 5, 5))]})
    map_file = tmp_path / "names.json"
    map_file.write_bytes(content)
    result = invoke("fix", "rename", tmp_path / "Annotations", "--map-file", map_file)
    assert result.exit_code == 2 and "--map-file" in result.output and "Traceback" not in result.output
