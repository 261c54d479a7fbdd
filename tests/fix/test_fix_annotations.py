import json

from click.testing import CliRunner

from fix_data import digests
from labelguard.cli import main
from labelguard.fix import remap_ids, rename, undo

VOC = b"""<?xml version="1.0"?>\r
<annotation>\r
\t<filename>000001.jpg</filename>\r
\t<!-- a comment kept as is -->\r
\t<object><name> Dog </name><pose>Left</pose>\r
\t\t<part><name>head</name></part>\r
\t\t<bndbox><xmin>1</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40</ymax></bndbox></object>\r
\t<object><name>dgo</name><bndbox><xmin>5</xmin><ymin>5</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object>\r
</annotation>\r
"""


def test_voc_rename_changes_only_the_name_text(tmp_path):
    path = tmp_path / "Annotations" / "000001.xml"
    path.parent.mkdir()
    path.write_bytes(VOC)
    original = digests([path])
    dry = rename(str(tmp_path), "Dog=dog,dgo=dog")
    assert dry.changes[0].status == "planned" and digests([path]) == original
    result = rename(str(tmp_path), {"Dog": "dog", "dgo": "dog"}, apply=True)
    assert result.changes[0].details["renamed"] == {"Dog": 1, "dgo": 1}
    # The reader takes the whole text ' Dog ' as the name, so the whole text is renamed.
    assert path.read_bytes() == VOC.replace(b"<name> Dog </name>", b"<name>dog</name>").replace(
        b"<name>dgo</name>", b"<name>dog</name>")
    undo(str(tmp_path))
    assert digests([path]) == original


def test_yolo_remap_changes_only_the_class_column(tmp_path):
    path = tmp_path / "labels" / "a.txt"
    path.parent.mkdir()
    data = b"3 0.5 0.5 0.2 0.2\r\n0  0.1 0.1 0.05 0.05\r\n3 0.7 0.7 0.1 0.1"
    path.write_bytes(data)
    (tmp_path / "labels" / "classes.txt").write_text("cat\ndog\n")
    result = remap_ids(str(tmp_path / "labels"), "3:2", apply=True)
    statuses = {c.path.rsplit("/", 1)[-1]: c.status for c in result.changes}
    assert statuses == {"a.txt": "written"}  # classes.txt is the folder's class list, not a label file
    assert path.read_bytes() == data.replace(b"3 0.", b"2 0.")
    undo(str(tmp_path / "labels"))
    assert path.read_bytes() == data


def test_coco_rename_and_remap(tmp_path):
    doc = {"images": [{"id": 1, "file_name": "a.jpg"}],
           "annotations": [{"id": 1, "image_id": 1, "category_id": 7, "bbox": [0, 0, 1, 1]}],
           "categories": [{"id": 7, "name": "Dog"}]}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(doc, indent=2))
    original = digests([path])
    rename(str(path), "Dog=dog", apply=True)
    remap_ids(str(path), "7:1", apply=True)
    written = json.loads(path.read_text())
    assert written["categories"] == [{"id": 1, "name": "dog"}]
    assert written["annotations"][0]["category_id"] == 1
    undo(str(tmp_path))
    undo(str(tmp_path))
    assert digests([path]) == original


def test_cli_rename_and_ids(tmp_path):
    path = tmp_path / "a.xml"
    path.write_bytes(VOC)
    runner = CliRunner()
    result = runner.invoke(main, ["fix", "rename", str(tmp_path), "--map", "Dog=dog", "--apply"])
    assert result.exit_code == 0 and b"<name>dog</name>" in path.read_bytes()
    bad = runner.invoke(main, ["fix", "rename", str(tmp_path), "--map", "Dog"])
    assert bad.exit_code == 2 and "OLD=NEW" in bad.output


def test_rewrites_are_re_audited_and_refused_when_worse(tmp_path):
    from detection_builders import write_voc, write_yolo
    from labelguard import LabelSpec

    voc = write_voc(tmp_path / "voc", {"1": [("dog", (1, 1, 9, 9))]}, labels=["cat", "dog"])
    xml = voc / "Annotations" / "1.xml"
    before = xml.read_bytes()
    result = rename(str(voc), "dog=hound", apply=True)
    assert result.changes[0].status == "refused" and "hound" in result.changes[0].summary
    assert xml.read_bytes() == before and not result.ok

    yolo = write_yolo(tmp_path / "yolo", {"train": {"a": [(0, .5, .5, .2, .2)]}}, names=["cat", "dog"])
    label = yolo / "labels" / "train" / "a.txt"
    before = label.read_bytes()
    result = remap_ids(str(yolo), "0:5", apply=True)
    assert [c.status for c in result.changes] == ["refused"] and label.read_bytes() == before
    ok = remap_ids(str(yolo), "0:1", spec=LabelSpec(classes=("cat", "dog")), apply=True)
    assert [c.status for c in ok.changes] == ["written"]
