"""Wording of findings on files, read from the CLI's JSON report on real datasets: counts by
plural() with thousands grouped, one thing said in the singular, lists without Python's
brackets. Label values, class indices and ids are never grouped."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from annotation_builders import (coco_box, coco_dataset, coco_document, coco_image, imagefolder, write_image,
                                 write_json)
from builders import organic_mask, paired_dataset, rgb_image, write_jpeg, write_npz, write_png, write_tiff
from detection_builders import write_voc, write_yolo
from labelguard.cli import main
from labelguard.output.places import names_element

# A count of four digits or more written without its thousands separator.
UNGROUPED = re.compile(r"(?<![\d,.])\d{4,} (pixel|colour|distinct value|image file|file|value)")


def messages(*args: str, code: str) -> list[str]:
    result = CliRunner().invoke(main, ["audit", *args, "-f", "json", "--no-progress", "--no-config"],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    found = [f["message"] for f in json.loads(result.output)["findings"] if f["code"] == code]
    assert found, f"no {code} in {result.output}"
    for message in found:
        assert not UNGROUPED.search(message), message
    return found


def one(*args: str, code: str) -> str:
    found = messages(*args, code=code)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.code("LG205", "fail")
def test_an_empty_mask_of_one_pixel_is_said_in_the_singular_and_a_large_one_grouped(tmp_path):
    root = tmp_path / "d"
    paired_dataset(root, ["a", "b", "c"],
                   [organic_mask((64, 64), seed=0), np.zeros((64, 64), np.uint8), np.zeros((1, 1), np.uint8)])
    found = sorted(messages(str(root), "--num-classes", "3", "--sizes", "any", code="LG205"))
    assert found == ["all 1 pixel is background/ignore (value 0)",
                     "all 4,096 pixels are background/ignore (value 0)"], found


@pytest.mark.code("LG205", "fail")
def test_an_empty_mask_of_background_and_ignore_names_both_values(tmp_path):
    empty = np.zeros((8, 8), np.uint8)
    empty[0] = 255
    root = tmp_path / "d"
    paired_dataset(root, ["a", "b"], [organic_mask((8, 8), seed=0), empty])
    assert "all 64 pixels are background/ignore (values 0, 255)" in \
        one(str(root), "--num-classes", "3", "--ignore-index", "255", code="LG205")


@pytest.mark.code("LG202", "fail")
def test_a_jpeg_mask_groups_its_count_of_stray_pixels(tmp_path):
    root = tmp_path / "d"
    write_jpeg(root / "masks" / "a.jpg", organic_mask((256, 256), classes=(0, 1, 2), seed=0) * 60, quality=60)
    write_png(root / "images" / "a.png", rgb_image((256, 256), seed=0))
    text = one(str(root), code="LG202")
    assert re.search(r"; \d{1,3}(,\d{3})+ pixels hold \d+ stray values \(", text), text


@pytest.mark.code("LG202", "fail")
def test_an_interpolated_mask_lists_its_main_values_without_brackets(tmp_path):
    root = tmp_path / "d"
    mask = organic_mask((32, 32), classes=(0, 1, 2), seed=0) * 100
    write_png(root / "masks" / "a.png", np.array(Image.fromarray(mask).resize((64, 64), Image.BILINEAR)))
    write_png(root / "images" / "a.png", rgb_image((64, 64), seed=0))
    text = one(str(root), code="LG202")
    assert re.search(r"between the main values 0, (\d+, )*200: the mask went through JPEG", text), text
    assert "[" not in text


@pytest.mark.code("LG203", "fail")
def test_a_photograph_as_colour_mask_groups_its_colours_and_says_under_one_percent(tmp_path):
    root = tmp_path / "d"
    photo = (np.random.default_rng(0).random((128, 128, 3)) * 255).astype(np.uint8)
    write_png(root / "masks" / "a.png", photo)
    write_png(root / "images" / "a.png", rgb_image((128, 128), seed=1))
    text = one(str(root), code="LG203")
    assert re.search(r"this looks like a photograph, not a label: \d{1,3}(,\d{3})+ colours, the commonest few "
                     r"cover under 1% of the pixels and \d+% of neighbouring pixels differ", text), text


@pytest.mark.code("LG201", "fail")
def test_a_photograph_as_grey_mask_groups_its_count_but_not_its_values(tmp_path):
    root = tmp_path / "d"
    photo = (np.random.default_rng(0).random((128, 128)) * 60000).astype(np.uint16)
    write_png(root / "masks" / "a.png", photo)
    write_png(root / "images" / "a.png", rgb_image((128, 128), seed=1))
    text = one(str(root), code="LG201")
    assert re.search(r"this looks like an image, not a label: \d{1,3}(,\d{3})+ distinct values, the 8 commonest "
                     r"cover under 1% of the pixels", text), text
    low, high = int(photo.min()), int(photo.max())
    assert f"(values {low} to {high})" in text, text


@pytest.mark.code("LG206", "fail")
def test_image_and_label_of_one_file_give_their_shapes_as_width_x_height(tmp_path):
    root = tmp_path / "d"
    write_npz(root / "a.npz", image=np.zeros((16, 20), np.float32), label=organic_mask((8, 10), seed=0))
    write_npz(root / "b.npz", image=np.zeros((16, 16), np.float32), label=organic_mask((16, 16), seed=1))
    assert one(str(root), code="LG206").endswith(
        "image 'image' 20x16 and label 'label' 10x8 in the same file differ in shape")


@pytest.mark.code("LG003", "fail")
def test_one_missing_image_of_several_is_said_in_the_singular(tmp_path):
    root = tmp_path / "d"
    coco_dataset(root, n_images=3)
    os.remove(root / "images" / "train" / "000002.jpg")
    assert "1 of 3 image files named in this file does not exist under " in one(str(root), code="LG003")


@pytest.mark.code("LG003", "fail")
def test_the_only_image_of_a_file_missing_is_the_only_one(tmp_path):
    root = tmp_path / "d"
    coco_dataset(root, n_images=1, write_images=False)
    write_image(root / "images" / "train" / "other.jpg")
    text = one(str(root), code="LG003")
    assert "the only image file named in this file does not exist under " in text, text
    assert "none of them" not in text and " of 1 " not in text


@pytest.mark.code("LG003", "fail")
def test_thousands_of_missing_images_are_grouped(tmp_path):
    root = tmp_path / "d"
    coco_dataset(root, images=[coco_image(i + 1, f"{i + 1:06d}.jpg") for i in range(1200)], write_images=False)
    write_image(root / "images" / "train" / "000001.jpg")
    text = one(str(root), code="LG003")
    assert "1,199 of 1,200 image files named in this file do not exist under " in text, text
    assert "and 1,194 more" in text


@pytest.mark.code("LG003", "fail")
def test_the_only_panoptic_png_missing_is_the_only_one(tmp_path):
    root = tmp_path / "d"
    write_json(root / "annotations" / "panoptic_train.json", coco_document(
        [coco_image(1, "a.jpg")],
        [{"id": 1, "image_id": 1, "file_name": "a.png",
          "segments_info": [{"id": 3, "category_id": 1, "bbox": [1, 1, 4, 4], "iscrowd": 0, "area": 16}]}],
        [{"id": 1, "name": "cat"}]))
    write_image(root / "images" / "train" / "a.jpg")
    write_png(root / "annotations" / "panoptic_train" / "b.png", rgb_image((48, 64)))
    text = one(str(root), code="LG003")
    assert "the only panoptic PNG named in this file does not exist under " in text, text


@pytest.mark.code("LG001", "fail")
def test_a_coco_bbox_of_one_number_is_one_value(tmp_path):
    root = tmp_path / "d"
    coco_dataset(root, n_images=3, annotations=[coco_box(1, 1, 1, bbox=[4]), coco_box(2, 2, 2),
                                                coco_box(3, 3, 3, bbox=[1, 2, 3, 4, 5])])
    text = one(str(root), code="LG001")
    assert "annotations[0] (id 1) has bbox [4] (1 value);" in text, text
    assert "annotations[2] (id 3) has bbox [1, 2, 3, 4, 5] (5 values)" in text


@pytest.mark.code("LG001", "fail")
def test_yolo_rows_count_their_values_and_names_list_ids_without_brackets(tmp_path):
    root = tmp_path / "d"
    write_yolo(root, {"train": {"a": "0\n", "b": "0 0.5\n", "c": [(0, .5, .5, .2, .2)]}},
               names={0: "x", 2: "y", 5: "z"})
    found = messages(str(root), code="LG001")
    assert "names: the ids 0, 2, 5 are not 0..2" in found, found
    assert any(m.startswith("row 1 has 1 value; a detection row has 5") for m in found), found
    assert any(m.startswith("row 1 has 2 values; a detection row has 5") for m in found), found


@pytest.mark.code("LG102", "fail")
def test_a_class_folder_past_num_classes_says_the_range_and_the_count(tmp_path):
    root = tmp_path / "d"
    imagefolder(root, {"a": 1, "b": 1, "c": 1, "d": 1})
    text = one(str(root), "--num-classes", "3", code="LG102")
    assert text.endswith("which ImageFolder numbers 0..3 in sorted order, but the spec allows 0..2 (num_classes=3)")


@pytest.mark.code("LG102", "fail")
def test_a_class_folder_outside_the_values_lists_them_without_brackets(tmp_path):
    root = tmp_path / "d"
    imagefolder(root, {"a": 1, "b": 1, "c": 1, "d": 1})
    found = messages(str(root), "--values", "0,2,5", "--num-classes", "3", code="LG102")
    assert all(m.endswith("but the spec allows 0, 2, 5") for m in found), found


@pytest.mark.code("LG212", "fail")
def test_an_id_on_thousands_of_regions_groups_the_count(tmp_path):
    root = tmp_path / "d"
    mask = np.zeros((128, 128), np.uint16)
    mask[::2, ::2] = 1  # 4,096 single pixels, no two touching even at a corner
    mask[1, 1:3] = 2
    write_tiff(root / "masks" / "a.tif", mask)
    write_png(root / "images" / "a.png", rgb_image((128, 128)))
    text = one(str(root), "--instances", code="LG212")
    assert "id 1 on 4,096 separate regions" in text, text


def concise(*args: str) -> list[str]:
    result = CliRunner().invoke(main, ["audit", *args, "-f", "concise", "--no-progress", "--no-config"],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.output.splitlines()


@pytest.mark.code("LG301", "fail")
def test_concise_names_the_objects_of_a_message_once_and_all_of_them(tmp_path):
    root = write_voc(tmp_path / "voc", {
        "a": [("cat", (1, 1, 5, 5)), ("G-man", (2, 2, 600, 6)), ("cat", (3, 3, 700, 8))], "b": [("cat", (1, 1, 5, 5))]})
    lines = concise(str(root), "--classes", "cat,dog")
    [outside] = [line for line in lines if " LG301 " in line]
    assert outside == (f"{root}/Annotations/a.xml: LG301 [error] 2 boxes lie outside the 500x375 image: "
                       "object 2 'G-man': xmax 600 > width 500; object 3 'cat': xmax 700 > width 500")
    [unknown] = [line for line in lines if " LG101 " in line]
    assert unknown.endswith(": LG101 [error] class 'G-man' is not one of the 2 classes of the spec (object 2)")


def test_github_annotations_name_an_object_once_as_concise_does(tmp_path):
    """The element before a message comes from one place (output/places.py) for both formats."""
    root = write_voc(tmp_path / "voc", {
        "a": [("cat", (1, 1, 5, 5)), ("G-man", (2, 2, 600, 6)), ("cat", (3, 3, 700, 8))], "b": [("cat", (1, 1, 5, 5))]})
    result = CliRunner().invoke(main, ["audit", str(root), "--classes", "cat,dog", "-f", "github", "--no-config",
                                       "--no-cache", "--workers", "1"])
    [outside] = [line for line in result.output.splitlines() if "LG301" in line]
    assert "::2 boxes lie outside the 500x375 image: object 2 'G-man'" in outside, outside
    [unknown] = [line for line in result.output.splitlines() if "LG101" in line]
    assert "::class 'G-man' is not one of the 2 classes of the spec (object 2)" in unknown, unknown


def test_concise_puts_the_element_before_a_message_that_names_none():
    assert not names_element("class 'x' is not in the spec", "object 2")
    assert names_element("2 boxes: object 2 'a'; object 3 'b'", "object 2")
    assert names_element("class 'x' (objects 1, 4)", "object 1")
    assert not names_element("an object 12 away", "annotations[3] (id 4)")
    assert names_element("annotations[3] (id 4) has bbox [4]", "annotations[3] (id 4)")


@pytest.mark.code("LG301", "fail")
def test_a_box_of_one_image_is_degenerate_or_lies_outside_it_in_a_sentence(tmp_path):
    root = write_voc(tmp_path / "voc", {"a": [("cat", (5, 5, 3, 8))], "b": [("cat", (2, 2, 600, 6))],
                                        "c": [("cat", (8, 3, 7, 8)), ("cat", (1, 1, 900, 5))]})
    found = sorted(messages(str(root), code="LG301"))
    assert found == [
        "1 box is degenerate (width or height <= 0) in the 500x375 image: object 1 'cat': xmin 5 >= xmax 3",
        "1 box lies outside the 500x375 image: object 1 'cat': xmax 600 > width 500",
        "2 boxes are degenerate (width or height <= 0) or outside the 500x375 image: object 1 'cat': "
        "xmin 8 >= xmax 7; object 2 'cat': xmax 900 > width 500",
    ], found


@pytest.mark.code("LG101", "fail")
def test_a_category_id_of_a_file_without_categories_is_one_sentence_without_nested_brackets(tmp_path):
    root = tmp_path / "d"
    coco_dataset(root, categories=[], annotations=[coco_box(i + 1, 1, 1) for i in range(3)], n_images=1)
    assert one(str(root), code="LG101") == ("this file declares no categories, yet 3 annotations use category "
                                            "id 1: annotations[0] (id 1); annotations[1] (id 2); annotations[2] (id 3)")


@pytest.mark.code("LG001", "fail")
def test_a_polygon_of_odd_length_gets_a_hint_about_its_coordinates_not_its_types(tmp_path):
    root = tmp_path / "d"
    polygon = {**coco_box(1, 1, 1), "segmentation": [[1, 1, 9, 1, 9, 9, 1]]}
    coco_dataset(root, annotations=[polygon], n_images=1)
    result = CliRunner().invoke(main, ["audit", str(root), "-f", "json", "--no-progress", "--no-config"],
                                catch_exceptions=False)
    [finding] = [f for f in json.loads(result.output)["findings"] if f["code"] == "LG001"]
    assert "a segmentation polygon has an odd number of coordinates in 1 place" in finding["message"]
    assert finding["hint"].startswith("Re-export or redraw these polygons: a polygon is a flat list of x, y pairs")
    assert "Fix the types" not in finding["hint"]
