"""Pascal VOC XML: every code the VOC audit raises, on real files in the real layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import write_png
from detection_builders import BILLION_LAUGHS, EXTERNAL_ENTITY, voc_xml, write_image, write_voc
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.layouts import AuditOptions
from labelguard.layouts.voc import discover_voc, process_voc, process_voc_batch
from labelguard.readers.base import ReadError
from labelguard.layouts.voc.reader import read_voc, read_voc_tree
from audit_helpers import codes, found, run

CLASSES = ("cat", "dog", "person")
BOX = (10, 20, 110, 120)


def clean(root: Path, **kwargs) -> Path:
    annotations = {
        "000001": [("cat", BOX), ("dog", (200, 50, 300, 150))],
        "000002": [("person", (5, 5, 50, 200))],
        "000003": [("dog", BOX), ("person", (100, 100, 400, 300)), ("cat", (1, 1, 20, 20))],
    }
    return write_voc(root, annotations, splits={"train": ["000001", "000002"], "val": ["000003"]},
                     labels=CLASSES, **kwargs)


def write_xml(root: Path, name: str, text: str | bytes) -> Path:
    path = root / "Annotations" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


# ---- a clean dataset ------------------------------------------------------------------------

@pytest.mark.code("LG001", "pass")
@pytest.mark.code("LG002", "pass")
@pytest.mark.code("LG003", "pass")
@pytest.mark.code("LG004", "pass")
@pytest.mark.code("LG101", "pass")
@pytest.mark.code("LG104", "pass")
@pytest.mark.code("LG105", "pass")
@pytest.mark.code("LG301", "pass")
@pytest.mark.code("LG303", "pass")
def test_clean_dataset_has_no_findings_and_counts_every_class(tmp_path):
    clean(tmp_path)
    report = run(tmp_path)
    assert report.layouts == ["voc"]
    assert report.findings == [], [f.message for f in report.findings]
    assert report.spec.classes == CLASSES
    assert report.summary.samples == 3
    classes = report.to_dict()["summary"]["classes"]
    assert classes == {"cat": {"objects": 2, "images": 2}, "dog": {"objects": 2, "images": 2},
                       "person": {"objects": 2, "images": 2}}


def test_two_workers_give_the_same_report(tmp_path):
    clean(tmp_path)
    write_xml(tmp_path, "000009.xml", voc_xml("000009.jpg", [("dgo", BOX)]))
    one = run(tmp_path, workers=1).to_dict()
    two = run(tmp_path, workers=2).to_dict()
    assert one == two


def test_spec_from_a_datumaro_labelmap(tmp_path):
    write_voc(tmp_path, {"a": [("cat", BOX)], "b": [("horse", BOX)]}, images=False,
              labelmap=["background", "cat", "dog"])
    report = run(tmp_path)
    assert report.spec.classes == ("background", "cat", "dog")
    [unknown] = found(report, "LG101")
    assert unknown.data["class"] == "horse"


@pytest.mark.code("LG104", "fail")
def test_class_of_the_spec_never_seen(tmp_path):
    write_voc(tmp_path, {"a": [("cat", BOX)], "b": [("cat", BOX)]}, images=False,
              labels=["cat", "dog"])
    [unused] = found(run(tmp_path), "LG104")
    assert unused.data["missing"] == ["dog"]


def test_background_of_a_labelmap_is_not_reported_unused(tmp_path):
    write_voc(tmp_path, {"a": [("cat", BOX)], "b": [("dog", BOX)]}, images=False,
              labelmap=["background", "cat", "dog"])
    assert found(run(tmp_path), "LG104") == []


# ---- class names --------------------------------------------------------------------------

@pytest.mark.code("LG101", "fail")
def test_stray_xml_from_another_dataset_is_the_only_finding(tmp_path):
    """Scenario 1 (seed 000): labels 0..3, one XML from another dataset holds 'dog'."""
    labels = ["0", "1", "2", "3"]
    annotations = {f"{i:04d}": [(str(i % 4), BOX), (str((i + 1) % 4), (5, 5, 60, 60))] for i in range(20)}
    write_voc(tmp_path, annotations, labels=labels)
    stray = write_xml(tmp_path, "other_0001.xml", voc_xml("other_0001.jpg", [("1", BOX), ("dog", BOX)]))
    write_image(tmp_path / "JPEGImages" / "other_0001.jpg")
    report = run(tmp_path)
    [finding] = report.findings
    assert finding.code == "LG101" and Path(finding.path).resolve() == stray.resolve()
    assert finding.data["class"] == "dog" and finding.data["places"] == [2]
    assert "'dog'" in finding.message and "object 2" in finding.message
    assert report.summary.class_objects["dog"] == 1


def test_numeric_names_checked_as_ids_when_the_spec_has_only_a_count(tmp_path):
    write_voc(tmp_path, {"a": [("0", BOX), ("3", BOX)], "b": [("4", BOX), ("dog", BOX)]}, images=False)
    report = run(tmp_path, LabelSpec(num_classes=4))
    [large] = found(report, "LG102")
    assert large.data["ids"] == [4] and large.data["num_classes"] == 4
    [unknown] = found(report, "LG101")
    assert unknown.data["class"] == "dog"


def test_did_you_mean_the_closest_allowed_name(tmp_path):
    write_voc(tmp_path, {"a": [("dgo", BOX)]}, images=False, labels=CLASSES)
    [unknown] = found(run(tmp_path), "LG101")
    assert unknown.data["suggestions"][0] == "dog"
    assert "did you mean 'dog'?" in unknown.message


@pytest.mark.code("LG105", "fail")
def test_names_differing_by_case_or_space_are_variants(tmp_path):
    write_voc(tmp_path, {"a": [("dog", BOX)], "b": [("Dog ", BOX)], "c": [("dog", (1, 1, 9, 9))]},
              images=False)
    [variants] = found(run(tmp_path), "LG105")
    assert variants.data["names"] == ["dog", "Dog "]


def test_part_names_are_not_object_classes(tmp_path):
    write_voc(tmp_path, {"a": [("person", BOX), ("cat", (1, 1, 9, 9))]}, images=False, parts=True,
              labels=["cat", "person"])
    report = run(tmp_path)
    assert report.findings == []
    assert set(report.summary.class_objects) == {"person", "cat"}


def test_file_without_objects_is_not_a_finding(tmp_path):
    write_voc(tmp_path, {"a": [], "b": [("cat", BOX)]}, images=False, labels=["cat"])
    report = run(tmp_path)
    assert report.findings == [] and report.summary.samples == 2


# ---- unreadable files and objects -------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_truncated_xml_is_lg001_for_that_file_only(tmp_path):
    clean(tmp_path)
    text = voc_xml("000004.jpg", [("dgo", BOX)])
    write_xml(tmp_path, "000004.xml", text[: len(text) // 2])
    write_xml(tmp_path, "000005.xml", voc_xml("000005.jpg", [("dgo", BOX)]))
    write_image(tmp_path / "JPEGImages" / "000004.jpg")
    write_image(tmp_path / "JPEGImages" / "000005.jpg")
    report = run(tmp_path)
    [broken] = found(report, "LG001")
    assert broken.path.endswith("000004.xml") and "malformed XML" in broken.message
    assert "line" in broken.message
    [unknown] = found(report, "LG101")
    assert unknown.path.endswith("000005.xml")
    assert report.summary.unreadable == 1


@pytest.mark.parametrize("document, words", [
    (BILLION_LAUGHS, "declares the entity 'lol'"),
    (EXTERNAL_ENTITY, "external entity 'secret' 'file:///etc/passwd'"),
], ids=["billion-laughs", "external-entity"])
def test_entity_attacks_are_refused_before_expansion(tmp_path, document, words):
    # The refusal names the declaration: the document was refused before any entity was
    # expanded (an expanded billion-laughs would hold 10^9 "lol"s, not a finding).
    write_xml(tmp_path, "evil.xml", document)
    write_xml(tmp_path, "good.xml", voc_xml("good.jpg", [("cat", BOX)]))
    report = run(tmp_path, LabelSpec(classes=CLASSES))
    [refused] = found(report, "LG001")
    assert refused.path.endswith("evil.xml") and words in refused.message
    assert found(report, "LG101") == []


def test_utf16_documents_go_through_the_safe_parser(tmp_path):
    write_xml(tmp_path, "evil.xml", BILLION_LAUGHS.replace('<?xml version="1.0"?>', "").encode("utf-16"))
    [refused] = found(run(tmp_path), "LG001")
    assert "declares the entity" in refused.message


@pytest.mark.parametrize("text, words", [
    (b"", "empty file"),
    (b"   \n", "only whitespace"),
    (b"<annotations><object/></annotations>", "not <annotation>"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "malformed XML"),
    ("<annotation><filename>é</filename></annotation>".encode("latin-1"), "malformed XML"),
])
def test_files_that_are_not_voc_annotations(tmp_path, text, words):
    write_xml(tmp_path, "a.xml", text)
    [finding] = found(run(tmp_path, options=AuditOptions(format="voc")), "LG001")
    assert words in finding.message


def test_broken_objects_are_lg001_with_their_index_and_the_rest_is_checked(tmp_path):
    text = (
        "<annotation><filename>a.jpg</filename><size><width>500</width><height>400</height></size>"
        "<object><name>cat</name></object>"
        "<object><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        "<object><name>dog</name><bndbox><xmin>a</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        "<object><name> </name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        "<object><name>dgo</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
        "</annotation>")
    write_xml(tmp_path, "a.xml", text)
    report = run(tmp_path, LabelSpec(classes=CLASSES))
    messages = [f.message for f in found(report, "LG001")]
    assert messages == [
        "object 1 ('cat') has no <bndbox>",
        "object 2 has no <name>",
        "object 3 ('dog') has a <bndbox> that is not four numbers: xmin 'a', ymin '1', xmax '5', ymax '5'",
        "object 4 has an empty <name>",
    ]
    [unknown] = found(report, "LG101")
    assert unknown.data["places"] == [5]
    assert report.summary.class_objects == {"cat": 1, "dog": 1, "dgo": 1}


def test_size_that_is_not_numeric(tmp_path):
    write_xml(tmp_path, "a.xml", "<annotation><size><width>big</width><height>1</height></size></annotation>")
    [finding] = found(run(tmp_path), "LG001")
    assert finding.message == "<size> is not numeric: width 'big', height '1'"


# ---- boxes -----------------------------------------------------------------------------------

@pytest.mark.code("LG301", "fail")
def test_flipped_and_outside_boxes(tmp_path):
    objects = [("cat", (120, 20, 80, 60)), ("dog", (10, 10, 600, 60)), ("cat", (10, 50, 20, 50)),
               ("person", (-3, 5, 20, 30)), ("dog", BOX)]
    write_voc(tmp_path, {"a": objects}, images=False, labels=CLASSES)
    [boxes] = found(run(tmp_path), "LG301")
    assert [(b["object"], b["problem"]) for b in boxes.data["boxes"]] == [
        (1, "degenerate"), (2, "outside"), (3, "degenerate"), (4, "outside")]
    assert "xmin 120 >= xmax 80" in boxes.message and "xmax 600 > width 500" in boxes.message
    assert "are degenerate (width or height <= 0) or outside the 500x375 image: " in boxes.message


def test_boxes_without_size_are_only_checked_for_degeneracy(tmp_path):
    write_xml(tmp_path, "a.xml", voc_xml("a.jpg", [("cat", (10, 10, 9000, 9000)), ("cat", (5, 5, 5, 9))], size=None))
    [boxes] = found(run(tmp_path), "LG301")
    assert [b["object"] for b in boxes.data["boxes"]] == [2]


@pytest.mark.code("LG303", "fail")
def test_duplicate_objects(tmp_path):
    write_voc(tmp_path, {"a": [("cat", BOX), ("dog", BOX), ("cat", BOX)]}, images=False, labels=CLASSES)
    [duplicate] = found(run(tmp_path), "LG303")
    assert duplicate.data["pairs"] == [[1, 3]]
    assert "object 3 repeats object 1" in duplicate.message


# ---- images and lists ------------------------------------------------------------------------

@pytest.mark.code("LG003", "fail")
def test_filename_naming_a_missing_image(tmp_path):
    clean(tmp_path)
    (tmp_path / "JPEGImages" / "000002.jpg").unlink()
    write_xml(tmp_path, "000001.xml", voc_xml("renamed.jpg", [("cat", BOX)]))
    report = run(tmp_path)
    by_path = {Path(f.path).name: f for f in found(report, "LG003")}
    assert set(by_path) == {"000001.xml", "000002.xml"}
    assert "names 'renamed.jpg'" in by_path["000001.xml"].message
    assert "000001.jpg" in by_path["000001.xml"].message
    assert "no image named 000002.*" in by_path["000002.xml"].message


def test_filename_without_extension_matches_its_image(tmp_path):
    clean(tmp_path)
    write_xml(tmp_path, "000001.xml", voc_xml("000001", [("cat", BOX)]))
    assert run(tmp_path).findings == []


@pytest.mark.code("LG005", "fail")
def test_filename_escaping_the_image_folder(tmp_path):
    clean(tmp_path)
    write_xml(tmp_path, "000001.xml", voc_xml("../../etc/000001.jpg", [("cat", BOX)]))
    [escape] = found(run(tmp_path), "LG005")
    assert escape.data["filename"] == "../../etc/000001.jpg"


@pytest.mark.code("LG002", "fail")
def test_images_without_annotation_and_annotation_without_image(tmp_path):
    clean(tmp_path)
    write_image(tmp_path / "JPEGImages" / "000777.jpg")
    write_xml(tmp_path, "000888.xml", "<annotation><object><name>cat</name><bndbox><xmin>1</xmin>"
                                      "<ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>")
    report = run(tmp_path)
    sides = sorted((Path(f.path).name, f.data["side"]) for f in found(report, "LG002"))
    assert sides == [("000777.jpg", "image"), ("000888.xml", "annotation")]


def test_split_lists_name_missing_annotations_and_unclean_lines(tmp_path):
    clean(tmp_path)
    main_dir = tmp_path / "ImageSets" / "Main"
    (main_dir / "val.txt").write_bytes(b"000003 \r\n000404\r\n")
    (main_dir / "cat_val.txt").write_text("000003  1\n999999 -1\n")
    (main_dir / "test.txt").write_text("000555\n000556\n")
    write_image(tmp_path / "JPEGImages" / "000555.jpg")
    report = run(tmp_path)
    missing = sorted((Path(f.path).name, f.data["entry"]) for f in found(report, "LG003"))
    assert missing == [("test.txt", "000556"), ("val.txt", "000404")]
    problems = {f.data["problem"] for f in found(report, "LG004")}
    assert problems == {"crlf", "whitespace"}
    assert found(report, "LG002") == []  # 000555 belongs to the test split: no annotation needed


def test_list_option_audits_only_the_listed_annotations(tmp_path):
    clean(tmp_path)
    write_xml(tmp_path, "000009.xml", voc_xml("000009.jpg", [("dgo", BOX)]))
    report = run(tmp_path, options=AuditOptions(lists=(str(tmp_path / "ImageSets" / "Main" / "train.txt"),)))
    assert report.summary.samples == 2 and report.findings == []


def test_segmentation_masks_of_a_voc_folder_are_audited_too(tmp_path):
    clean(tmp_path)
    mask = np.zeros((12, 16), dtype=np.uint8)
    mask[2:6, 2:6] = 7
    write_png(tmp_path / "SegmentationClass" / "000001.png", mask)
    report = run(tmp_path, LabelSpec(classes=CLASSES))
    assert report.layouts == ["voc"]
    assert report.summary.kinds == {"voc": 3, "mask": 1}
    assert [f.code for f in report.findings if f.path and f.path.endswith(".png")] == ["LG201"]


def test_batch_processor_equals_the_per_file_results_merged(tmp_path):
    clean(tmp_path)
    write_xml(tmp_path, "000004.xml", voc_xml("000004.jpg", [("dgo", BOX), ("cat", BOX), ("cat", BOX)]))
    write_xml(tmp_path, "000005.xml", "<annotation><object><name>cat</name></object>")
    write_xml(tmp_path, "000006.xml", "<annotation><object><name>dog</name></object></annotation>")
    tasks = list(discover_voc(str(tmp_path), AuditOptions()).tasks)
    spec = LabelSpec(classes=CLASSES)
    merged = FileResult(tasks[0].display, files=0)
    for task in tasks:
        one = process_voc(task, spec)
        merged.findings.extend(one.findings)
        merged.summary.update(one.summary)
        merged.files += one.files
    batch = process_voc_batch(tasks, spec)
    assert batch.findings == merged.findings
    assert batch.summary == merged.summary
    assert batch.files == merged.files == 6


# ---- single files, forced format, the CLI -------------------------------------------------------

def test_single_xml_file_as_the_path(tmp_path):
    path = write_xml(tmp_path, "a.xml", voc_xml("a.jpg", [("dgo", BOX)]))
    (tmp_path / "labels.txt").write_text("cat\ndog\n")
    report = run(path)
    assert report.layouts == ["voc"] and report.spec.classes == ("cat", "dog")
    assert [f.code for f in report.findings] == ["LG101"]


def test_relaxed_layouts_xml_beside_images_and_an_annotations_folder(tmp_path):
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "1.xml").write_text(voc_xml("1.jpg", [("cat", BOX)]))
    write_image(beside / "1.jpg")
    other = tmp_path / "other"
    (other / "annotations").mkdir(parents=True)
    (other / "annotations" / "1.xml").write_text(voc_xml("1.jpg", [("cat", BOX)]))
    write_image(other / "images" / "1.jpg")
    for root in (beside, other):
        report = run(root)
        assert report.layouts == ["voc"] and codes(report) == {"LG006"} and report.summary.samples == 1


def test_cli_audit_and_write_classes(tmp_path):
    clean(tmp_path)
    write_xml(tmp_path, "000009.xml", voc_xml("000009.jpg", [("zebra", BOX)]))
    write_image(tmp_path / "JPEGImages" / "000009.jpg")
    classes = tmp_path / "found.txt"
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "voc", "--no-config", "--no-progress",
                                       "--write-classes", str(classes)])
    assert result.exit_code == 1, result.output
    assert "LG101" in result.output and "zebra" in result.output
    assert classes.read_text().split() == ["cat", "dog", "person", "zebra"]


# ---- the plain reader equals ElementTree ---------------------------------------------------------

PLAIN_LEAF = st.sampled_from(["<pose>Unspecified</pose>", "<truncated>0</truncated>", "<difficult>1</difficult>",
                              "<note>a > b</note>", "text"])
ODD_LEAF = st.sampled_from(["<occluded/>", "<x:y>1</x:y>", "<pose lang='en'>x</pose>", "&amp;",
                            "<!-- <object><name>ghost</name></object> -->", "<![CDATA[<name>x</name>]]>",
                            "<?pi data?>", "<is-crowd>0</is-crowd>"])
PLAIN_NAME = st.sampled_from(["cat", "dog", "Dog ", "ça", "p\r\nq", "", " "])
ODD_NAME = st.sampled_from(["a&amp;b", "<b>x</b>", "&#100;og"])
PLAIN_NUMBER = st.sampled_from(["1", "2.5", " 7 ", "1e2", "-3", "nan", "", "x"])
ODD_NUMBER = st.sampled_from(["&#49;", "<v>1</v>"])


@st.composite
def voc_documents(draw) -> bytes:
    """VOC-like documents, well-formed or not; most are plain (what annotation tools write),
    some carry one of the XML features the plain reader leaves to ElementTree."""
    odd = draw(st.integers(0, 3)) == 0

    def pick(plain, other):
        return draw(other) if odd and draw(st.integers(0, 3)) == 0 else draw(plain)

    def bndbox() -> str:
        tags = ["xmin", "ymin", "xmax", "ymax"]
        if odd and draw(st.booleans()):
            tags = draw(st.permutations(tags))
        return "<bndbox>" + "".join(f"<{t}>{pick(PLAIN_NUMBER, ODD_NUMBER)}</{t}>" for t in tags) + "</bndbox>"

    def obj() -> str:
        parts = []
        if draw(st.integers(0, 9)):
            parts.append(f"<name>{pick(PLAIN_NAME, ODD_NAME)}</name>")
        parts.extend(pick(PLAIN_LEAF, ODD_LEAF) for _ in range(draw(st.integers(0, 2))))
        if draw(st.integers(0, 9)):
            parts.append(bndbox())
        if draw(st.booleans()):
            parts.append(f"<part><name>head</name>{bndbox()}</part>")
        if odd and draw(st.booleans()):
            parts = draw(st.permutations(parts))
        sep = draw(st.sampled_from(["", "\n  ", "\r\n\t"]))
        open_tag = pick(st.just("<object>"), st.sampled_from(["<object >", "<object id='1'>"]))
        return open_tag + sep + sep.join(parts) + sep + pick(st.just("</object>"), st.just("</object >"))

    children = []
    if draw(st.integers(0, 4)):
        children.append(f"<filename>{pick(PLAIN_NAME, ODD_NAME)}.jpg</filename>")
    if draw(st.integers(0, 4)):
        children.append(f"<size><width>{pick(PLAIN_NUMBER, ODD_NUMBER)}</width>"
                        f"<height>{pick(PLAIN_NUMBER, ODD_NUMBER)}</height></size>")
    children.extend(obj() for _ in range(draw(st.integers(0, 3))))
    children.extend(pick(PLAIN_LEAF, ODD_LEAF) for _ in range(draw(st.integers(0, 2))))
    if odd and draw(st.booleans()):
        children.append("<source>" + obj() + "<size><width>1</width><height>1</height></size></source>")
    if draw(st.booleans()):
        children = draw(st.permutations(children))
    sep = draw(st.sampled_from(["", "\n", "\r\n  "]))
    head = draw(st.sampled_from(["", '<?xml version="1.0"?>\n', '<?xml version="1.0" encoding="utf-8"?>',
                                 "\ufeff", '<?xml version="1.0" encoding="latin-1"?>']))
    text = head + "<annotation>" + sep + sep.join(children) + sep + "</annotation>\n"
    data = text.encode("latin-1" if "latin-1" in head else "utf-8", "replace")
    cut = draw(st.integers(0, 60))
    return data[: len(data) - cut] if cut > 50 else data


def _outcome(reader, data: bytes) -> str:
    """The record or the error, as text (NaN coordinates compare equal that way)."""
    try:
        return repr(reader(data))
    except ReadError as exc:
        return f"ReadError: {exc}"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(voc_documents())
def test_plain_reader_gives_what_elementtree_gives(data):
    assert _outcome(read_voc, data) == _outcome(read_voc_tree, data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400) | voc_documents().map(lambda d: d[: len(d) // 2]))
def test_any_bytes_give_findings_never_a_traceback(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("voc") / "a.xml"
    path.write_bytes(data)
    task = FileTask(process_voc, str(path), "a.xml")
    result = process_voc(task, LabelSpec(classes=CLASSES))
    assert result.errors == []
    assert all(f.code in {"LG001", "LG101", "LG301", "LG303"} for f in result.findings)


def _dior(root: Path) -> Path:
    """DIOR's shape: ``Annotations/<split>/<id>.xml`` and ``Images/<split>/<id>.jpg``, with a
    test split published without annotations."""
    for split, ids in (("trainval", ("000000", "000001")), ("test", ("000002",))):
        for image_id in ids:
            write_image(root / "Images" / split / f"{image_id}.jpg", (32, 24))
            if split == "trainval":
                xml = root / "Annotations" / split / f"{image_id}.xml"
                xml.parent.mkdir(parents=True, exist_ok=True)
                xml.write_text(voc_xml(f"{image_id}.jpg", [("airplane", (2, 2, 20, 40 if image_id == "000001" else 20))],
                                       (32, 24)), encoding="utf-8")
    return root


def test_annotations_in_split_folders_are_read_as_voc_each_with_its_image(tmp_path):
    """DIOR was taken for image/mask folders (8 false LG002, its XMLs never read): its
    annotation folder holds split folders of XMLs."""
    root = _dior(tmp_path / "dior")
    report = run(str(root), LabelSpec(classes=("airplane",)), cache=False)
    assert report.layouts == ["voc"]
    assert sorted(Path(f).name for f in report.files) == ["000000.xml", "000001.xml"]
    assert [(f.code, Path(f.path).name) for f in report.findings if str(f.severity) == "error"] == [("LG301", "000001.xml")]


def test_a_voc_folder_without_an_image_folder_says_its_images_were_not_looked_for(tmp_path):
    """Datumaro's voc_dataset2: Annotations/ and ImageSets/, no JPEGImages/. Nothing was
    said; the audit now says the images were not looked for, and --images looks for them."""
    (tmp_path / "Annotations").mkdir()
    (tmp_path / "Annotations" / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 8, 8))], (16, 16)),
                                                  encoding="utf-8")
    report = run(str(tmp_path), LabelSpec(classes=("cat",)), cache=False)
    assert any("no image folder beside Annotations/" in note and "--images" in note for note in report.notes)
    assert not [f for f in report.findings if f.code == "LG003"]
    (tmp_path / "photos").mkdir()
    given = run(str(tmp_path), LabelSpec(classes=("cat",)), cache=False,
                options=AuditOptions(images=str(tmp_path / "photos")))
    assert [f.code for f in given.findings if f.code == "LG003"] == ["LG003"]
    assert not any("no image folder" in note for note in given.notes)


@pytest.mark.parametrize("start", ["Annotations", "Annotations/trainval"])
def test_a_split_folder_of_annotations_as_path_finds_its_images_in_the_image_folder_of_that_split(tmp_path, start):
    """DIOR's ``Annotations/trainval`` audited alone got 6 false LG003: its images were
    looked for beside the XMLs, not in ``Images/trainval``. The audit matches the
    dataset's: the same findings, and a missing image is still LG003."""
    root = _dior(tmp_path / "dior")
    whole = run(str(root), LabelSpec(classes=("airplane",)), cache=False)
    alone = run(str(root / start), LabelSpec(classes=("airplane",)), cache=False)
    assert [(f.code, Path(f.path).name) for f in alone.findings if str(f.severity) == "error"] == \
        [(f.code, Path(f.path).name) for f in whole.findings if str(f.severity) == "error"] == [("LG301", "000001.xml")]
    (root / "Images" / "trainval" / "000000.jpg").unlink()
    missing = run(str(root / start), LabelSpec(classes=("airplane",)), cache=False)
    assert sorted((f.code, Path(f.path).name) for f in missing.findings if str(f.severity) == "error") == \
        [("LG003", "000000.xml"), ("LG301", "000001.xml")]


@pytest.mark.skipif(not (Path(__file__).resolve().parents[1].parent / "shared" / "realworld2").is_dir(),
                    reason="../shared/realworld2 is absent")
def test_the_real_dior_copy_is_voc_without_errors():
    root = Path(__file__).resolve().parents[1].parent / "shared" / "realworld2" / "torchgeo" / "tests" / "data" / "dior"
    report = run(str(root), cache=False)
    assert report.layouts == ["voc"] and len(report.files) == 6
    assert not [f for f in report.findings if str(f.severity) == "error"]
