"""ADE20K's full format: class masks store the class index in their colour (R / 10 * 256 + G),
so they are decoded, never reported as colour masks; instance masks are left out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotation_builders import classes_map, write_ade20k
from audit_helpers import CORPUS, codes, found, needs_corpus, run, run_corpus
from builders import write_jpeg
from labelguard.core.spec import LabelSpec


@pytest.mark.code("LG203", "pass")
def test_class_masks_are_decoded_by_the_ade20k_formula(tmp_path):
    write_ade20k(tmp_path, "1", classes_map([401, 1831, 2977]), parts=classes_map([774]))
    report = run(tmp_path)
    assert report.layouts == ["ade20k"]
    assert "LG203" not in codes(report)
    assert set(report.summary.value_pixels) == {0, 401, 1831, 2977, 774}
    assert report.summary.samples == 2  # x_seg.png and x_parts_1.png; the instance masks left out
    assert any("instance masks" in n and "left out" in n for n in report.notes)


@pytest.mark.code("LG201", "fail")
def test_a_decoded_class_outside_the_spec_is_reported(tmp_path):
    write_ade20k(tmp_path, "1", classes_map([401, 1831]))
    write_ade20k(tmp_path, "2", classes_map([401, 3700]))
    report = run(tmp_path, LabelSpec(num_classes=3689))
    [outside] = found(report, "LG201")
    assert outside.path.endswith("2_seg.png") and "3700" in outside.message


@pytest.mark.code("LG206", "fail")
def test_class_masks_are_paired_with_their_images(tmp_path):
    write_ade20k(tmp_path, "1", classes_map([401]))
    write_jpeg(tmp_path / "training" / "street" / "1.jpg", np.full((10, 16, 3), 128, np.uint8))
    report = run(tmp_path)
    [mismatch] = found(report, "LG206")
    assert mismatch.path.endswith("1_seg.png")


@needs_corpus
@pytest.mark.code("LG203", "pass")
@pytest.mark.parametrize("relative", ["ade20k2020_dataset/dataset", "ade20k2020_dataset/dataset_with_meta_file"])
def test_datumaro_ade20k_exports_decode_to_the_json_class_indices(relative):
    report = run_corpus(relative)
    assert report.layouts == ["ade20k"]
    assert not codes(report) & {"LG001", "LG201", "LG203"}
    declared = {0}
    for path in (CORPUS / relative).rglob("*.json"):
        if path.name != "dataset_meta.json":
            declared |= {o["name_ndx"] for o in json.loads(path.read_text())["annotation"]["object"]}
    assert set(report.summary.value_pixels) <= declared
