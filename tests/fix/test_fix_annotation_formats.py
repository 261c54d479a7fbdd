"""The annotation editors on files the audit reads: encodings, numbers and elements as the
readers take them, and loose files that are none of the fix's business."""

from fix_data import digests
from labelguard.fix import remap_ids, rename

LATIN1_VOC = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n<annotation><filename>a.jpg</filename>'
              '<object><name>caf\xe9</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax>'
              '</bndbox></object></annotation>\n').encode("latin-1")


def test_a_voc_file_in_latin_1_is_renamed_in_its_own_encoding(tmp_path):
    path = tmp_path / "Annotations" / "a.xml"
    path.parent.mkdir()
    path.write_bytes(LATIN1_VOC)
    result = rename(str(tmp_path), {"caf\xe9": "br\xfbl\xe9"}, apply=True)
    assert [c.status for c in result.changes] == ["written"], result.changes
    assert path.read_bytes() == LATIN1_VOC.replace("caf\xe9".encode("latin-1"), "br\xfbl\xe9".encode("latin-1"))
    # a new name the file's encoding cannot hold is a skip naming why, not a crash
    result = rename(str(tmp_path), {"br\xfbl\xe9": "\u20ac"}, apply=True)
    assert [c.status for c in result.changes] == ["skipped"] and "iso-8859-1" in result.changes[0].summary


def test_part_and_attribute_names_are_not_classes_and_stay(tmp_path):
    voc = (b"<annotation><object><name>person</name><part><name>head</name></part>"
           b"<attributes><attribute><name>head</name><value>x</value></attribute></attributes>"
           b"<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object>"
           b"<object><name>head</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax>"
           b"</bndbox></object></annotation>")
    path = tmp_path / "Annotations" / "a.xml"
    path.parent.mkdir()
    path.write_bytes(voc)
    result = rename(str(tmp_path), {"head": "face"}, apply=True)
    assert result.changes[0].details["renamed"] == {"head": 1}
    assert path.read_bytes() == voc.replace(b"<object><name>head</name>", b"<object><name>face</name>")


def test_yolo_numbers_written_as_the_reader_reads_them_are_remapped(tmp_path):
    path = tmp_path / "labels" / "a.txt"
    path.parent.mkdir()
    data = b"3 .5 .5 .1 .1\n+1 0.2 0.2 1e-1 0.1\n3.0 0.7 0.7 0.1 0.1\n"
    path.write_bytes(data)
    result = remap_ids(str(tmp_path / "labels"), "3:2,1:0", apply=True)
    assert [c.status for c in result.changes] == ["written"], result.changes
    assert path.read_bytes() == b"2 .5 .5 .1 .1\n0 0.2 0.2 1e-1 0.1\n2 0.7 0.7 0.1 0.1\n"


def test_a_text_file_that_is_neither_yolo_nor_a_table_is_skipped_with_both_reasons(tmp_path):
    path = tmp_path / "labels" / "a.txt"
    path.parent.mkdir()
    path.write_bytes(b"0 0.5 0.5 0.1\n")  # a row of four values
    result = remap_ids(str(path), "0:1")
    [change] = result.changes
    assert change.status == "skipped" and "line 1 is not a YOLO row" in change.summary and "nor a label table" in \
        change.summary


def test_loose_json_and_xml_files_of_other_tools_are_left_out_of_a_fix(tmp_path):
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    (tmp_path / "pom.xml").write_text("<project><name>x</name></project>")
    (tmp_path / "instances.json").write_text('{"images": [], "annotations": [], "categories": [{"id": 1, '
                                             '"name": "x"}]}')
    before = digests([tmp_path / "config.json", tmp_path / "pom.xml"])
    result = rename(str(tmp_path), {"x": "y"}, apply=True)
    assert [c.path.rsplit("/", 1)[-1] for c in result.changes] == ["instances.json"]
    assert digests([tmp_path / "config.json", tmp_path / "pom.xml"]) == before
