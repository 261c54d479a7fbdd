"""Boxes in the guard: the audit's box rules (LG301, LG302) on detection targets at run time,
torchvision dicts, COCO annotation lists, Ultralytics samples and YOLO rows, naming the
sample, its file, the box and its values."""

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from detection_builders import write_voc  # noqa: E402
from labelguard.torch import SampleError, guard  # noqa: E402
from torch_datasets import TorchvisionVOCDetection, detection_collate, drain_loader  # noqa: E402

CLASSES = ("cat", "dog", "bird")  # with torchvision's background: num_classes=4
IMAGE = torch.zeros(3, 12, 16)  # the builders' JPEGs are 16x12


def voc_detection(root, objects_by_id):
    write_voc(root, objects_by_id, size=(16, 12), splits={"trainval": list(objects_by_id)})
    return TorchvisionVOCDetection(root, CLASSES)


def first_error(dataset, workers=0, **kwargs):
    loader = DataLoader(guard(dataset, **kwargs), batch_size=2, num_workers=workers, collate_fn=detection_collate)
    with pytest.raises(SampleError) as caught:
        drain_loader(loader)
    return caught.value


@pytest.mark.code("LG301", "fail")
@pytest.mark.parametrize("workers", [0, 2])
def test_a_flipped_voc_box_is_named_with_its_sample_file_and_values(tmp_path, workers):
    # Seed 000's detector: guard(num_classes=4) let a box with xmin > xmax through, and the
    # loss went NaN from step 3.
    objects = {f"{i:06d}": [("cat", (2, 2, 10, 9))] for i in range(5)}
    objects["000003"] = [("dog", (1, 1, 6, 6)), ("bird", (12, 3, 4, 9))]
    error = first_error(voc_detection(tmp_path, objects), workers=workers, num_classes=4)
    assert (error.code, error.index) == ("LG301", 3)
    assert error.source.endswith("000003.xml")
    assert "box 2 'class 3': xmin 12 >= xmax 4" in str(error)
    assert "16x12 image" in str(error)


@pytest.mark.code("LG301", "pass")
def test_sound_voc_boxes_and_one_a_rounding_past_the_border_train_through(tmp_path):
    objects = {f"{i:06d}": [("cat", (0, 0, 16, 12)), ("dog", (3, 3, 8, 8))] for i in range(4)}
    dataset = guard(voc_detection(tmp_path, objects), num_classes=4)
    batches = drain_loader(DataLoader(dataset, batch_size=2, collate_fn=detection_collate))
    assert len(batches) == 2 and dataset.records == []
    rounded = guard([(IMAGE, {"boxes": torch.tensor([[0.0, 0.0, 16.4, 12.0]]), "labels": torch.tensor([1])})],
                    num_classes=4)
    assert rounded[0][1]["labels"].tolist() == [1]


@pytest.mark.code("LG301", "fail")
def test_a_box_past_the_input_and_a_coco_bbox_of_width_zero():
    outside = [(IMAGE, {"boxes": torch.tensor([[2.0, 2.0, 30.0, 9.0]]), "labels": torch.tensor([2])})]
    with pytest.raises(SampleError) as caught:
        guard(outside, num_classes=4)[0]
    assert "box 1 'class 2': xmax 30 > width 16" in str(caught.value)

    # torchvision's CocoDetection: COCO's own annotation dicts, bbox as [x, y, width, height].
    coco = [(IMAGE, [{"bbox": [1, 1, 5, 4], "category_id": 1}, {"bbox": [3, 2, 0, 4], "category_id": 2}])]
    with pytest.raises(SampleError) as caught:
        guard(coco, num_classes=4)[0]
    assert caught.value.code == "LG301" and "box 2 'class 2'" in str(caught.value)


@pytest.mark.code("LG301", "fail")
@pytest.mark.code("LG302", "fail")
def test_ultralytics_samples_and_yolo_rows():
    # An Ultralytics sample (YOLODataset after its Format transform): cls (n, 1), bboxes as
    # centre and size in fractions of the image, and its own keys.
    sound = {"im_file": "images/a.jpg", "ori_shape": (12, 16), "img": IMAGE, "cls": torch.tensor([[0.0], [2.0]]),
             "bboxes": torch.tensor([[.5, .5, .2, .2]] * 2), "batch_idx": torch.zeros(2)}
    assert guard([sound], num_classes=3)[0] is sound
    flat = dict(sound, bboxes=torch.tensor([[.5, .5, .2, .2], [.4, .5, 0.0, .2]]))
    with pytest.raises(SampleError) as caught:
        guard([flat], num_classes=3)[0]
    assert caught.value.code == "LG301" and "box 2 (width 0, height 0.2)" in str(caught.value)
    pixels = dict(sound, bboxes=torch.tensor([[8.0, 6.0, 4.0, 4.0], [.5, .5, .2, .2]]))
    with pytest.raises(SampleError) as caught:
        guard([pixels], num_classes=3)[0]
    assert caught.value.code == "LG302" and "box 1 (8 6 4 4)" in str(caught.value)
    wrong_class = dict(sound, cls=torch.tensor([[0.0], [3.0]]))
    with pytest.raises(SampleError) as caught:
        guard([wrong_class], num_classes=3)[0]
    assert caught.value.code == "LG102"  # the class id first: it is the device assert

    # YOLO rows (class, cx, cy, w, h) as a target tensor: declared, the class is column 0.
    rows = torch.tensor([[0, .5, .5, .2, .2], [2, .3, .3, .1, .1]])
    assert guard([(IMAGE, rows)], num_classes=3, boxes="yolo")[0][1] is rows
    with pytest.raises(SampleError) as caught:
        guard([(IMAGE, torch.tensor([[0, .5, .5, .2, .2], [1, 1.5, .5, .2, .2]]))], num_classes=3, boxes="yolo")[0]
    assert caught.value.code == "LG302" and "box 2 (1.5 0.5 0.2 0.2)" in str(caught.value)


@pytest.mark.code("LG301", "pass")
@pytest.mark.code("LG302", "pass")
def test_declared_layouts_and_empty_targets():
    xywh = [(IMAGE, {"boxes": torch.tensor([[10.0, 2.0, 4.0, 4.0]]), "labels": torch.tensor([1])})]
    assert guard(xywh, num_classes=4, boxes="xywh")[0] is xywh[0]  # corners would be flipped
    with pytest.raises(SampleError):
        guard(xywh, num_classes=4)[0]
    empty = [(IMAGE, {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)})]
    assert guard(empty, num_classes=4)[0] is empty[0]


def test_boxes_that_are_not_numbers_are_an_error_and_other_widths_are_left_unchecked(caplog):
    bad = [(IMAGE, {"boxes": [["a", "b", "c", "d"]], "labels": torch.tensor([1])})]
    with pytest.raises(SampleError) as caught:
        guard(bad, num_classes=4)[0]
    assert caught.value.code == "LG505" and "boxes (layout unknown) are not numbers" in str(caught.value)
    # Rotated boxes (torchvision's XYWHR, Ultralytics' OBB) are not judged as corners.
    rotated = [(IMAGE, {"boxes": torch.tensor([[8.0, 6.0, 4.0, 2.0, 30.0]]), "labels": torch.tensor([1])})]
    assert guard(rotated, num_classes=4)[0] is rotated[0]
    assert "detection boxes of 5 values (rotated or other boxes) are not checked" in caplog.text
    batched_rows = torch.tensor([[0, 1, .5, .5, .2, .2]])  # a batch index in front of YOLO rows
    with pytest.raises(SampleError, match=r"expected \(n, 5\) \(a batch index in front"):
        guard([(IMAGE, batched_rows)], num_classes=3, boxes="yolo")[0]
    with pytest.raises(Exception, match="boxes must be one of xyxy, xywh, cxcywh, xyxyn, xywhn, cxcywhn, yolo or False"):
        guard(bad, num_classes=4, boxes="corners")


class BoundingBoxes(torch.Tensor):
    """The two attributes of torchvision's tv_tensors.BoundingBoxes the guard reads (torchvision
    is not a test dependency): the format, as an enum member with a name, and the canvas."""

    class Format:
        def __init__(self, name):
            self.name = name

    @staticmethod
    def __new__(cls, data, format, canvas_size):
        boxes = torch.as_tensor(data, dtype=torch.float32).as_subclass(cls)
        boxes.format, boxes.canvas_size = cls.Format(format), canvas_size
        return boxes


@pytest.mark.code("LG301", "pass")
def test_detr_targets_tv_boxes_albumentations_and_class_names_are_read_as_written(caplog):
    # DETR's dict: normalised centre and size, recognised by its orig_size/size keys.
    detr = {"boxes": torch.tensor([[.5, .5, .2, .3], [.7, .4, .1, .1]]), "labels": torch.tensor([1, 2]),
            "orig_size": torch.tensor([480, 640]), "size": torch.tensor([480, 640])}
    assert guard([(torch.zeros(3, 480, 640), detr)], num_classes=4)[0][1] is detr
    # Normalised boxes with nothing saying how: only NaN/Inf can be judged.
    unsaid = {"boxes": torch.tensor([[.5, .5, .2, .3]]), "labels": torch.tensor([1])}
    assert guard([(torch.zeros(3, 480, 640), unsaid)], num_classes=4)[0][1] is unsaid
    broken = {"boxes": torch.tensor([[.5, float("nan"), .2, .3]]), "labels": torch.tensor([1])}
    with pytest.raises(SampleError, match="LG301"):
        guard([(torch.zeros(3, 480, 640), broken)], num_classes=4)[0]
    # A tv_tensors box says its format and canvas: XYWH (500, 40, 100, 80) on a 640x480 canvas.
    tv = {"boxes": BoundingBoxes([[500, 40, 100, 80]], "XYWH", (480, 640)), "labels": torch.tensor([1])}
    assert guard([(torch.zeros(3, 480, 640), tv)], num_classes=4)[0][1] is tv
    past = {"boxes": BoundingBoxes([[600, 40, 100, 80]], "XYWH", (480, 640)), "labels": torch.tensor([1])}
    with pytest.raises(SampleError, match="xmax 700 > width 640"):
        guard([(torch.zeros(3, 480, 640), past)], num_classes=4)[0]
    # Albumentations keeps its bboxes (pascal_voc pixels here) beside the mask the selector picks:
    # not checked unless declared.
    album = {"image": IMAGE, "mask": torch.zeros(12, 16, dtype=torch.int64),
             "bboxes": [(2, 2, 10, 9, "cat")], "class_labels": ["cat"]}
    assert guard([album], num_classes=4, target="mask")[0] is album
    declared = {"image": IMAGE, "labels": torch.tensor([1]), "bboxes": torch.tensor([[12.0, 2, 4, 9]])}
    with pytest.raises(SampleError, match="xmin 12 >= xmax 4"):
        guard([declared], num_classes=4, boxes="xyxy")[0]
    assert guard([declared], num_classes=4, boxes=False)[0] is declared
    # Class names in a target dict, with a spec of names.
    named = (IMAGE, {"boxes": torch.tensor([[2.0, 2, 10, 9]]), "labels": ["cat"]})
    assert guard([named], spec={"classes": ["background", "cat"]})[0] is named
