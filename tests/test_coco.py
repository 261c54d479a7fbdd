"""COCO JSON: every code the COCO audit raises on real files, the streaming reader, layouts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation_builders import (
    COCO_IDS, COCO_NAMES, coco_box, coco_categories, coco_dataset, coco_document, coco_image, write_image,
    write_json,
)
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.layouts import AuditOptions
from labelguard.layouts.coco import category_index_map, coco_files, flavour_and_split, process_coco
from labelguard.readers.base import ReadError
from labelguard.layouts.coco.reader import peek_categories, read_coco
from audit_helpers import codes, found, run

CATS = coco_categories(["cat", "dog", "bird"])


def process(path: Path, spec: LabelSpec | None = None, **options):
    task = FileTask(processor=process_coco, path=str(path), display=str(path), options=tuple(options.items()))
    return process_coco(task, spec or LabelSpec())


# ---- clean datasets, layouts and the spec the file declares ---------------------------------------

@pytest.mark.code("LG101", "pass")
@pytest.mark.code("LG003", "pass")
@pytest.mark.code("LG301", "pass")
@pytest.mark.parametrize("layout", ["datumaro", "official", "mmdet", "roboflow", "flat"])
def test_clean_dataset_in_every_layout_has_no_findings(tmp_path, layout):
    coco_dataset(tmp_path, "train", 3, layout=layout)
    report = run(tmp_path)
    assert report.layouts == ["coco"]
    assert report.findings == [], [f.message for f in report.findings]
    assert report.spec.classes == ("cat", "dog", "bird")
    assert report.summary.samples == 3
    assert dict(report.summary.class_objects) == {"cat": 1, "dog": 1, "bird": 1}


def test_file_given_as_the_path_is_audited_with_its_images(tmp_path):
    json_path = coco_dataset(tmp_path, "val", 2, layout="datumaro")
    os.remove(tmp_path / "images" / "val" / "000002.jpg")
    report = run(json_path)
    assert report.layouts == ["coco"]
    [missing] = found(report, "LG003")
    assert "'000002.jpg'" in missing.message and "images[1]" in missing.message


def test_per_class_counts_of_objects_and_images(tmp_path):
    anns = [coco_box(1, 1, 1), coco_box(2, 1, 1, (20, 20, 5, 5)), coco_box(3, 2, 1), coco_box(4, 2, 2)]
    coco_dataset(tmp_path, annotations=anns, categories=CATS[:2], n_images=2)
    report = run(tmp_path)
    classes = report.to_dict()["summary"]["classes"]
    assert classes == {"cat": {"objects": 3, "images": 2}, "dog": {"objects": 1, "images": 1}}


def test_categories_are_the_spec_wherever_they_sit_in_the_file(tmp_path):
    for order in (("categories", "images", "annotations"), ("images", "annotations", "categories")):
        folder = tmp_path / "_".join(order)
        path = coco_dataset(folder, order=order, indent=2)
        assert peek_categories(str(path)) == [(1, "cat"), (2, "dog"), (3, "bird")]
        assert run(folder).spec.classes == ("cat", "dog", "bird")


def test_non_contiguous_ids_are_explained_in_a_note(tmp_path):
    images = [coco_image(i + 1, f"{i + 1}.jpg") for i in range(80)]
    anns = [coco_box(i + 1, i + 1, cat) for i, cat in enumerate(COCO_IDS)]
    coco_dataset(tmp_path, images=images, annotations=anns, categories=coco_categories(), write_images=False)
    report = run(tmp_path)
    assert report.spec.classes == COCO_NAMES
    assert any("not class indices" in n and "{1: 0, 2: 1" in n and "90: 79}" in n for n in report.notes)


@pytest.mark.parametrize("ids, said", [
    ((1,), "category id 1 is not a class index; training code maps it to 0 with {1: 0}"),
    ((1, 2), "category ids 1, 2 are not class indices; training code maps them to 0..1 with {1: 0, 2: 1}"),
])
def test_the_note_on_category_ids_agrees_with_their_number(tmp_path, ids, said):
    images = [coco_image(1, "1.jpg")]
    anns = [coco_box(n, 1, cat) for n, cat in enumerate(ids, 1)]
    categories = coco_categories(["person", "dog"][:len(ids)], ids)
    coco_dataset(tmp_path, images=images, annotations=anns, categories=categories, write_images=False)
    [note] = [n for n in run(tmp_path).notes if "class ind" in n]
    assert note.endswith(said)


def test_captions_and_image_info_files_carry_no_class_labels(tmp_path):
    images = [coco_image(5, "a.jpg")]
    caption = {"id": 1, "image_id": 5, "category_id": 0, "caption": "a cat"}
    write_json(tmp_path / "annotations" / "captions_train.json", coco_document(images, [caption], []))
    write_json(tmp_path / "annotations" / "image_info_train.json", coco_document(images, [], []))
    write_image(tmp_path / "images" / "train" / "a.jpg")
    report = run(tmp_path)
    assert report.findings == []
    assert report.summary.class_objects == {}


def test_panoptic_segments_are_the_objects(tmp_path):
    images = [coco_image(1, "a.jpg")]
    panoptic = {"image_id": 1, "file_name": "a.png", "segments_info": [
        {"id": 7, "category_id": 1, "bbox": [0, 0, 4, 4], "iscrowd": 0, "area": 16},
        {"id": 8, "category_id": 9, "bbox": [0, 0, 4, 4], "iscrowd": 0, "area": 16}]}
    write_json(tmp_path / "annotations" / "panoptic_train.json", coco_document(images, [panoptic], CATS))
    write_image(tmp_path / "images" / "train" / "a.jpg")
    (tmp_path / "annotations" / "panoptic_train").mkdir()
    report = run(tmp_path)
    [unknown] = found(report, "LG101")
    assert "category id 9" in unknown.message and "annotations[0].segments_info[1] (id 8)" in unknown.message
    [png] = found(report, "LG003")
    assert "the only panoptic PNG named in this file does not exist" in png.message and "'a.png'" in png.message


# ---- LG101 / LG102: categories ------------------------------------------------------------------

@pytest.mark.code("LG101", "fail")
def test_category_id_not_in_categories(tmp_path):
    images = [coco_image(i + 1, f"{i + 1}.jpg") for i in range(80)]
    anns = [coco_box(i + 1, i + 1, cat) for i, cat in enumerate(COCO_IDS)]
    anns.append(coco_box(81, 3, 91))
    anns.append(coco_box(82, 4, 91))
    coco_dataset(tmp_path, images=images, annotations=anns, categories=coco_categories(), write_images=False)
    report = run(tmp_path)
    [finding] = found(report, "LG101")
    assert "category id 91 is not among the 80 categories of this file" in finding.message
    assert "; 2 annotations use it: annotations[80] (id 81); annotations[81] (id 82)" in finding.message
    assert finding.data["category_id"] == 91 and finding.data["count"] == 2
    assert finding.path.endswith("instances_train.json")


def test_category_ids_of_a_file_without_categories(tmp_path):
    coco_dataset(tmp_path, categories=[], annotations=[coco_box(1, 1, 3)], n_images=1)
    [finding] = found(run(tmp_path), "LG101")
    assert finding.message == "this file declares no categories, yet 1 annotation uses category id 3: " \
        "annotations[0] (id 1)"


@pytest.mark.code("LG101", "fail")
def test_category_name_not_in_the_given_classes_suggests_the_closest(tmp_path):
    cats = coco_categories(["cat", "dgo"])
    coco_dataset(tmp_path, categories=cats, n_images=2)
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    [finding] = found(report, "LG101")
    assert "'dgo'" in finding.message and "did you mean 'dog'" in finding.message
    assert finding.data["suggestions"][0] == "dog"


def test_validation_split_with_a_category_the_training_split_lacks(tmp_path):
    coco_dataset(tmp_path, "train", 3)
    val_cats = CATS + [{"id": 4, "name": "birds", "supercategory": ""}]
    anns = [coco_box(1, 1, 1), coco_box(2, 2, 4)]
    coco_dataset(tmp_path, "val", 2, categories=val_cats, annotations=anns)
    report = run(tmp_path)
    [finding] = found(report, "LG101")
    assert finding.path.endswith("instances_val.json")
    assert "'birds'" in finding.message and "instances_train.json" in finding.message
    assert "did you mean 'bird'" in finding.message


def test_other_flavours_are_not_checked_against_the_instances_categories(tmp_path):
    coco_dataset(tmp_path, "train", 3)
    stuff = coco_categories(["sky", "grass"], [92, 93])
    coco_dataset(tmp_path, "train", 2, categories=stuff, flavour="stuff", write_images=False)
    report = run(tmp_path)
    assert "LG101" not in codes(report)


@pytest.mark.code("LG102", "fail")
def test_coco_ids_beyond_num_classes_carry_the_contiguous_map(tmp_path):
    images = [coco_image(i + 1, f"{i + 1}.jpg") for i in range(80)]
    anns = [coco_box(i + 1, i + 1, cat) for i, cat in enumerate(COCO_IDS)]
    coco_dataset(tmp_path, images=images, annotations=anns, categories=coco_categories(), write_images=False)
    report = run(tmp_path, LabelSpec(num_classes=80))
    [finding] = found(report, "LG102")
    assert ">= num_classes=80" in finding.message
    assert "{1: 0, 2: 1, 3: 2, 4: 3, ..., 89: 78, 90: 79}" in finding.message
    mapping = finding.data["category_index_map"]
    assert len(mapping) == 80 and mapping["1"] == 0 and mapping["90"] == 79 and mapping["13"] == 11
    assert finding.data["ids"] == [80, 81, 82, 84, 85, 86, 87, 88, 89, 90]
    assert finding.data["count"] == 10
    assert "set num_classes to 91" in finding.hint
    assert category_index_map({4: "c", 1: "a", 2: "b"}) == {1: 0, 2: 1, 4: 2}


@pytest.mark.code("LG102", "pass")
def test_num_classes_covering_the_largest_id_passes(tmp_path):
    images = [coco_image(i + 1, f"{i + 1}.jpg") for i in range(80)]
    anns = [coco_box(i + 1, i + 1, cat) for i, cat in enumerate(COCO_IDS)]
    coco_dataset(tmp_path, images=images, annotations=anns, categories=coco_categories(), write_images=False)
    assert "LG102" not in codes(run(tmp_path, LabelSpec(num_classes=91)))
    assert "LG102" not in codes(run(tmp_path))  # no num_classes given: ids are not indices


def test_more_categories_than_num_classes(tmp_path):
    coco_dataset(tmp_path, n_images=3)
    [finding] = found(run(tmp_path, LabelSpec(num_classes=2)), "LG102")
    assert "declares 3 categories, more than num_classes=2" in finding.message
    assert finding.data["category_index_map"] == {"1": 0, "2": 1, "3": 2}


@pytest.mark.code("LG103", "fail")
def test_negative_category_id_with_num_classes(tmp_path):
    cats = coco_categories(["unknown", "cat"], [-1, 0])
    coco_dataset(tmp_path, categories=cats, annotations=[coco_box(1, 1, -1), coco_box(2, 2, 0)], n_images=2)
    [finding] = found(run(tmp_path, LabelSpec(num_classes=2)), "LG103")
    assert finding.data["ids"] == [-1]


# ---- LG002 / LG003 / LG005: images ---------------------------------------------------------------

@pytest.mark.code("LG002", "fail")
def test_annotation_of_an_image_id_not_in_images(tmp_path):
    anns = [coco_box(1, 1, 1), coco_box(2, 2, 2), coco_box(3, 77, 1)]
    coco_dataset(tmp_path, annotations=anns, n_images=2, categories=CATS[:2])
    [finding] = found(run(tmp_path), "LG002")
    assert "1 annotation refers to image ids that are not in 'images'" in finding.message
    assert "annotations[2] (id 3) has image_id 77" in finding.message


@pytest.mark.code("LG002", "pass")
def test_images_without_annotations_are_background_not_errors(tmp_path):
    coco_dataset(tmp_path, n_images=4, annotations=[coco_box(1, 1, 1), coco_box(2, 2, 2), coco_box(3, 3, 3)])
    assert "LG002" not in codes(run(tmp_path))


@pytest.mark.code("LG003", "fail")
def test_image_files_missing_on_disk(tmp_path):
    coco_dataset(tmp_path, n_images=3)
    os.remove(tmp_path / "images" / "train" / "000002.jpg")
    [finding] = found(run(tmp_path), "LG003")
    assert "1 of 3 image files" in finding.message and "images[1] '000002.jpg'" in finding.message


def test_images_option_points_at_the_image_folder(tmp_path):
    coco_dataset(tmp_path / "ds", n_images=2, layout="flat", write_images=False)
    elsewhere = tmp_path / "pictures"
    write_image(elsewhere / "000001.jpg")
    report = run(tmp_path / "ds", options=AuditOptions(images=str(elsewhere)))
    [finding] = found(report, "LG003")
    assert "1 of 2" in finding.message and "'000002.jpg'" in finding.message


def test_no_image_folder_means_files_are_not_checked(tmp_path):
    coco_dataset(tmp_path, n_images=2, write_images=False)
    report = run(tmp_path)
    assert "LG003" not in codes(report)
    assert any("image files are not checked" in n for n in report.notes)


@pytest.mark.code("LG005", "fail")
def test_absolute_file_names_escape_the_dataset(tmp_path):
    images = [coco_image(1, "000001.jpg"), coco_image(2, "/data/other/000002.jpg"), coco_image(3, "../../../x/3.jpg")]
    coco_dataset(tmp_path, images=images, annotations=[coco_box(1, 1, 1)], categories=CATS[:1])
    [finding] = found(run(tmp_path), "LG005")
    assert "2 image file_names point outside" in finding.message and "/data/other/000002.jpg" in finding.message


# ---- LG301 / LG303 / LG206: geometry --------------------------------------------------------------

@pytest.mark.code("LG301", "fail")
def test_boxes_outside_the_image_and_degenerate_boxes(tmp_path):
    anns = [coco_box(1, 1, 1, (50, 10, 20, 8)),   # ends at x=70 in a 64-wide image
            coco_box(2, 1, 2, (5, 5, 0, 8)),      # zero width
            coco_box(3, 1, 3, (0, 0, 64, 48)),    # the whole image: fine
            coco_box(4, 1, 1, (-0.5, 0, 64.5, 48.5))]  # within the rounding tolerance
    anns.append(coco_box(5, 1, 2, segmentation=[[1, 1, 5, 5]]))   # a polygon of 2 points
    coco_dataset(tmp_path, annotations=anns, n_images=1)
    findings = found(run(tmp_path), "LG301")
    by_problem = {f.data["problem"]: f for f in findings}
    assert set(by_problem) == {"outside", "degenerate", "polygon"}
    assert "annotations[4] (id 5) has segmentation[0] with 2 points" in by_problem["polygon"].message
    assert "annotations[0] (id 1) bbox [50, 10, 20, 8] ends at (70, 18)" in by_problem["outside"].message
    assert "of 64x48" in by_problem["outside"].message and by_problem["outside"].data["count"] == 1
    assert "annotations[1] (id 2) bbox [5, 5, 0, 8]" in by_problem["degenerate"].message


@pytest.mark.code("LG303", "fail")
def test_duplicate_annotations(tmp_path):
    anns = [coco_box(1, 1, 1), coco_box(2, 1, 1), coco_box(3, 1, 2), coco_box(4, 2, 1)]
    coco_dataset(tmp_path, annotations=anns, n_images=2)
    [finding] = found(run(tmp_path), "LG303")
    assert finding.data["count"] == 1
    assert "annotations[1] (id 2) repeats annotations[0] (id 1)" in finding.message


@pytest.mark.code("LG303", "pass")
def test_same_box_of_another_category_or_image_is_no_duplicate(tmp_path):
    anns = [coco_box(1, 1, 1), coco_box(2, 1, 2), coco_box(3, 2, 1)]
    coco_dataset(tmp_path, annotations=anns, n_images=2)
    assert "LG303" not in codes(run(tmp_path))


@pytest.mark.code("LG206", "fail")
def test_rle_size_differs_from_its_image(tmp_path):
    rle_ok = {"size": [48, 64], "counts": [0, 3072]}
    rle_transposed = {"size": [64, 48], "counts": [0, 3072]}
    anns = [coco_box(1, 1, 1, segmentation=rle_ok, iscrowd=1), coco_box(2, 1, 2, segmentation=rle_transposed, iscrowd=1)]
    coco_dataset(tmp_path, annotations=anns, n_images=1)
    [finding] = found(run(tmp_path), "LG206")
    assert "annotations[1] (id 2) RLE size [64, 48]" in finding.message and finding.data["count"] == 1


# ---- LG001: wrong types and broken JSON --------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
def test_wrong_types_name_the_annotation_and_the_rest_is_still_checked(tmp_path):
    anns = [coco_box(1, 1, 1, (1, 2, 3)),            # bbox of 3 values
            coco_box(2, 1, "dog"),                     # category_id a string
            coco_box(3, 1, 2, segmentation=[[1, 2, "x", 4, 5, 6]]),
            coco_box(4, 1, 99),                        # still found: unknown category
            "not an object"]
    coco_dataset(tmp_path, annotations=anns, n_images=1)
    report = run(tmp_path)
    messages = {f.data["problem"]: f.message for f in found(report, "LG001")}
    assert "annotations[0] (id 1) has bbox [1, 2, 3] (3 values)" in messages["a bbox is not 4 numbers [x, y, width, height]"]
    assert 'annotations[1] (id 2) has category_id "dog" (a string)' in messages["a category_id is not an integer"]
    assert "segmentation[0]" in messages["a segmentation polygon is not a list of numbers"]
    assert "annotations[4] is a string" in messages["an annotation is not an object"]
    assert "category id 99" in found(report, "LG101")[0].message


@pytest.mark.parametrize("text, expected", [
    ("", "empty file"),
    ('[{"id": 1}]', "top level is a list"),
    ('{"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [{"id": 1, "image_id": 1,', "truncated"),
    ('{"images": [{"id": 1 "file_name": "a.jpg"}]}', "malformed JSON in images[0]"),
    ('{"images": [], "annotations": []} trailing', "unexpected data after the top-level object"),
    ('{"annotations": [], "categories": []}', "no 'images' list"),
])
def test_broken_json_is_one_unreadable_finding(tmp_path, text, expected):
    path = tmp_path / "annotations" / "instances_train.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    report = run(path, options=AuditOptions(format="coco"))
    [finding] = found(report, "LG001")
    assert expected in finding.message
    assert report.errors == []


def test_truncated_file_names_the_line(tmp_path):
    path = coco_dataset(tmp_path, n_images=20, indent=2)
    text = path.read_text()
    path.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(ReadError, match=r"the file ends inside annotations\[\d+\]: it is truncated \(line \d+"):
        read_coco(str(path))


def test_not_utf8_is_unreadable(tmp_path):
    path = tmp_path / "instances_train.json"
    path.write_bytes(b'{"images": [{"file_name": "\xff\xfe"}]}')
    [finding] = found(run(path, options=AuditOptions(format="coco")), "LG001")
    assert "not UTF-8" in finding.message


@pytest.mark.code("LG001", "fail")
def test_repeated_image_ids(tmp_path):
    images = [coco_image(1, "000001.jpg"), coco_image(1, "000002.jpg")]
    coco_dataset(tmp_path, images=images, annotations=[coco_box(1, 1, 1)], categories=CATS[:1])
    [finding] = found(run(tmp_path), "LG001")
    assert "id 1 in images[0] (000001.jpg), images[1] (000002.jpg)" in finding.message


def test_string_image_ids_match_the_same_strings(tmp_path):
    images = [coco_image("a", "000001.jpg")]
    anns = [coco_box(1, "a", 1), coco_box(2, "b", 1)]
    coco_dataset(tmp_path, images=images, annotations=anns, categories=CATS[:1])
    report = run(tmp_path)
    assert "LG001" not in codes(report)
    [dangling] = found(report, "LG002")
    assert "image_id 'b'" in dangling.message


# ---- the streaming reader ----------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


@st.composite
def coco_documents(draw):
    n_images = draw(st.integers(0, 4))
    images = [coco_image(i + 1, f"{i}.jpg", draw(st.integers(1, 100)), draw(st.integers(1, 100)))
              for i in range(n_images)]
    anns = []
    for k in range(draw(st.integers(0, 6))):
        box = draw(st.lists(st.floats(-50, 150, allow_nan=False), min_size=4, max_size=4))
        anns.append(coco_box(k + 1, draw(st.integers(0, 5)), draw(st.integers(-1, 5)), box,
                             extra=draw(json_values)))
    cats = coco_categories([f"c{i}" for i in range(draw(st.integers(0, 4)))])
    order = draw(st.permutations(["info", "licenses", "categories", "images", "annotations"]))
    return coco_document(images, anns, cats, order=order)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=coco_documents(), indent=st.sampled_from([None, 0, 2]), chunk=st.sampled_from([1, 3, 7, 64]))
def test_streamed_columns_match_the_document_whatever_the_chunk_size(tmp_path, document, indent, chunk):
    path = write_json(tmp_path / "doc.json", document, indent)
    record = read_coco(str(path), chunk=chunk)
    reference = read_coco(str(path))
    assert record.categories == {c["id"]: c["name"] for c in document["categories"]}
    assert record.image_ids.tolist() == [i["id"] for i in document["images"]]
    assert record.category_of.tolist() == reference.category_of.tolist() == \
        [a["category_id"] for a in document["annotations"]]
    assert record.boxes.tolist() == [a["bbox"] for a in document["annotations"]]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=coco_documents(), cut=st.floats(0, 1), junk=st.sampled_from(["", "}", "]", ",", "x", '"', "\x00"]),
       value=json_values, field=st.sampled_from(["bbox", "category_id", "image_id", "segmentation", "iscrowd",
                                                   "keypoints", "id"]))
def test_malformed_json_never_raises(tmp_path, document, cut, junk, value, field):
    if document["annotations"]:
        document["annotations"][0][field] = value
    text = json.dumps(document)
    text = text[: int(len(text) * cut)] + junk
    path = tmp_path / "instances_train.json"
    path.write_text(text, encoding="utf-8")
    result = process(path, LabelSpec(num_classes=3, classes=("a", "b", "c")))
    assert result.errors == []
    for finding in result.findings:
        assert finding.message and finding.code.startswith("LG")


def test_layout_detection_and_flavours(tmp_path):
    coco_dataset(tmp_path / "a", layout="roboflow")
    coco_dataset(tmp_path / "a", "valid", layout="roboflow")
    assert [Path(p).parent.name for p in coco_files(str(tmp_path / "a"))] == ["train", "valid"]
    assert flavour_and_split("x/annotations/person_keypoints_val2017.json") == ("person_keypoints", "val2017")
    assert flavour_and_split("x/train/_annotations.coco.json") == ("_annotations.coco", "train")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "dataset_meta.json").write_text('{"label_map": {"0": "background"}}')
    assert coco_files(str(tmp_path / "b")) == []


def test_each_file_is_one_task_and_workers_agree(tmp_path):
    for split in ("train", "val", "test", "extra"):
        coco_dataset(tmp_path, split, 3)
    one = run(tmp_path, workers=1)
    two = run(tmp_path, workers=2)
    assert one.summary.class_objects == two.summary.class_objects
    assert [f.message for f in one.findings] == [f.message for f in two.findings]


@pytest.mark.slow
def test_peak_memory_of_a_large_file_stays_far_below_json_load(tmp_path):
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_coco.py"
    out = subprocess.run([sys.executable, str(bench), "--mb", "40"], capture_output=True, text=True, check=True)
    lines = {line.split(":")[0].strip(): line for line in out.stdout.splitlines() if "peak RSS" in line}
    peak = {k: float(v.split("peak RSS")[1].split("MiB")[0]) for k, v in lines.items()}
    assert peak["labelguard COCO audit"] < 0.5 * peak["json.load"], out.stdout


def labelme2coco_dataset(root: Path, names: Sequence[str]) -> Path:
    """annotations.json with ``file_name`` 'JPEGImages/<name>' and the images in that subfolder,
    as labelme2coco writes them."""
    images = [coco_image(i + 1, f"JPEGImages/{name}") for i, name in enumerate(names)]
    json_path = write_json(root / "annotations.json", coco_document(
        images, [coco_box(i + 1, i + 1, 1) for i in range(len(images))], CATS[:1]))
    for name in names:
        write_image(root / "JPEGImages" / name)
    return json_path


@pytest.mark.code("LG003", "pass")
def test_file_names_with_a_folder_resolve_beside_the_json(tmp_path):
    json_path = labelme2coco_dataset(tmp_path, ["2011_000003.jpg", "2011_000006.jpg"])
    report = run(json_path)
    assert "LG003" not in codes(report)
    assert not any("image files are not checked" in n for n in report.notes)


def test_a_missing_image_in_a_subfolder_is_found(tmp_path):
    json_path = labelme2coco_dataset(tmp_path, ["2011_000003.jpg", "2011_000006.jpg"])
    os.remove(tmp_path / "JPEGImages" / "2011_000006.jpg")
    [finding] = found(run(json_path), "LG003")
    assert "1 of 2" in finding.message and "'JPEGImages/2011_000006.jpg'" in finding.message


def _vhr10(root: Path, folders: Sequence[str]) -> Path:
    """NWPU VHR-10's shape: annotations.json at the root naming its images without a folder,
    the images two levels below it."""
    images = [coco_image(1, "001.jpg", 64, 48), coco_image(2, "002.jpg", 64, 48)]
    document = coco_document(images, [coco_box(1, 1, 1), coco_box(2, 2, 2, bbox=(4, 4, 100, 8))], CATS)
    write_json(root / "annotations.json", document)
    for folder in folders:
        for k, image in enumerate(images):
            write_image(root / "NWPU VHR-10 dataset" / folder / image["file_name"], (64, 48), seed=k)
    return root


def test_images_named_without_a_folder_are_found_in_the_one_folder_below_that_holds_them(tmp_path):
    report = run(str(_vhr10(tmp_path / "vhr10", ["positive image set"])), LabelSpec(classes=("cat", "dog", "bird")),
                 cache=False)
    assert "LG003" not in codes(report)
    assert not any("folders below it" in note for note in report.notes)


def test_images_in_several_folders_below_are_not_guessed_and_the_report_says_so(tmp_path):
    report = run(str(_vhr10(tmp_path / "vhr10", ["positive image set", "negative image set"])),
                 LabelSpec(classes=("cat", "dog", "bird")), cache=False)
    assert "LG003" not in codes(report)
    assert any("lie in 2 folders below it" in note and "--images" in note for note in report.notes)
