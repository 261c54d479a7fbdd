"""Names of image files inside COCO files and tables: one resolution policy for both."""

from __future__ import annotations

import pytest

from annotation_builders import coco_box, coco_dataset, coco_image, write_image, write_table
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.layouts.references import resolve_names
from audit_helpers import codes, found, run


def test_names_are_found_missing_or_outside(tmp_path):
    images = tmp_path / "images"
    write_image(images / "a.jpg")
    write_image(images / "sub" / "b.png")
    write_image(tmp_path / "beside.jpg")
    names = ["a.jpg", "", "sub/b", "c.jpg", "../beside.jpg", "../../x.jpg", "/etc/passwd", str(images / "a.jpg")]
    missing, escaping = resolve_names(names, (str(images), str(tmp_path)), str(tmp_path))
    # "sub/b" has no extension: any image extension is tried, as loaders that add one do.
    assert missing == [3]
    assert escaping == [5, 6]


@pytest.mark.code("LG005", "pass")
def test_a_table_path_climbing_out_of_the_image_folder_but_not_the_dataset_is_no_escape(tmp_path):
    write_table(tmp_path / "train.csv", [("a.jpg", "cat"), ("../extra/b.jpg", "dog")], header=("image", "label"))
    write_image(tmp_path / "images" / "a.jpg")
    write_image(tmp_path / "extra" / "b.jpg")
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    assert report.layouts == ["csv"]
    assert not codes(report) & {"LG003", "LG005"}


@pytest.mark.code("LG005", "fail")
def test_a_table_path_leaving_the_dataset_is_an_escape_with_its_line(tmp_path):
    write_table(tmp_path / "ds" / "train.csv", [("a.jpg", "cat"), ("../../b.jpg", "dog")], header=("image", "label"))
    write_image(tmp_path / "ds" / "images" / "a.jpg")
    write_image(tmp_path / "b.jpg")
    [finding] = found(run(tmp_path / "ds", LabelSpec(classes=("cat", "dog"))), "LG005")
    assert "1 path points outside the dataset root" in finding.message and "line 3 '../../b.jpg'" in finding.message


@pytest.mark.code("LG005", "pass")
def test_parent_parts_inside_an_image_folder_given_elsewhere_are_no_escape(tmp_path):
    images = [coco_image(1, "000001.jpg"), coco_image(2, "sub/../000002.jpg")]
    coco_dataset(tmp_path / "ds", images=images, annotations=[coco_box(1, 1, 1)], layout="flat", write_images=False)
    pictures = tmp_path / "pictures"
    write_image(pictures / "000001.jpg")
    write_image(pictures / "000002.jpg")
    report = run(tmp_path / "ds", options=AuditOptions(images=str(pictures)))
    assert not codes(report) & {"LG003", "LG005"}
