"""The reader of class tables (value -> class name), as Roboflow's PNG-mask export writes them
(``_classes.csv``: ``Pixel Value, Class``), on real files."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, strategies as st

from labelguard.readers.base import ReadError
from labelguard.readers.class_tables import is_class_table_text, read_class_table

NAMES = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12).map(
    str.strip).filter(bool)


def test_a_roboflow_class_table_reads_as_written(tmp_path):
    path = tmp_path / "_classes.csv"
    path.write_text("Pixel Value, Class\n0, background\n1, cabinet\n10, wall")
    assert read_class_table(str(path)) == [(0, "background"), (1, "cabinet"), (10, "wall")]
    assert is_class_table_text(path.read_text())


@pytest.mark.parametrize("text, says", [
    ("image,label\na.jpg,cat\n", "no 'Pixel Value, Class' header"),
    ("Pixel Value, Class\nzero, background\n", "row 2 of _classes.csv is not an integer value and a class name"),
    ("Pixel Value, Class\n+-5, background\n", "row 2 of _classes.csv is not an integer value and a class name"),
    ("Pixel Value, Class\n0, a, b\n", "row 2 of _classes.csv has 3 cells"),
    ("Pixel Value, Class\n", "holds no classes"),
])
def test_a_file_that_is_no_class_table_is_a_read_error_naming_the_row(tmp_path, text, says):
    path = tmp_path / "_classes.csv"
    path.write_text(text)
    with pytest.raises(ReadError, match=says):
        read_class_table(str(path))


@given(st.lists(st.tuples(st.integers(-10 ** 18 + 1, 10 ** 18 - 1), NAMES), min_size=1, max_size=20))
def test_any_written_class_table_reads_back(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("table") / "_classes.csv"
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["Pixel Value", " Class"])
    writer.writerows([value, f" {name}"] for value, name in rows)
    path.write_text(text.getvalue(), encoding="utf-8")
    assert read_class_table(str(path)) == rows


@given(st.binary(max_size=300))
def test_any_bytes_read_as_classes_or_a_read_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("table") / "_classes.csv"
    path.write_bytes(b"Pixel Value, Class\n" + data)
    try:
        rows = read_class_table(str(path))
    except ReadError:
        return
    assert rows and all(isinstance(value, int) and name for value, name in rows)


@given(st.text(max_size=200))
def test_telling_a_class_table_by_its_head_never_fails(text):
    assert is_class_table_text(text) in (True, False)
