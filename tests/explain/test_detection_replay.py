"""replay collates as the crashed run's loader did: a detector's list collate.

A detection dataset returns an image and a dict of boxes and labels, one to four objects per
image, so its DataLoader collates with ``lambda b: tuple(zip(*b))``: torch's default_collate
cannot stack boxes of unequal counts. Image 11 has a box labelled 7 in a 3-class detector. The
run is recorded in the test's process, with the loss raising its real CPU error at the bad
batch.
"""

from __future__ import annotations

import sys
import textwrap

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from labelguard.cli import main  # noqa: E402
from labelguard.explain import replay  # noqa: E402
from labelguard.torch import record  # noqa: E402

BAD_INDEX = 11
BAD_ERROR = "loss: IndexError: Target 7 is out of bounds."

DETECTION_MODULE = '''
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 3


class Shapes(Dataset):
    """Twenty 16x16 images with one to four boxes each; image 11 has a box labelled 7."""

    def __init__(self):
        self.files = [f"images/{i:03d}.png" for i in range(20)]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        count = index % 4 + 1
        corners = torch.rand(count, 2, generator=generator) * 8
        boxes = torch.cat([corners, corners + 4 + torch.rand(count, 2, generator=generator) * 4], dim=1)
        labels = torch.arange(count) % NUM_CLASSES
        if index == 11:
            labels[-1] = 7
        return torch.rand(3, 16, 16, generator=generator), {"boxes": boxes, "labels": labels}


def collate(batch):
    return tuple(zip(*batch))


def make_dataset():
    return Shapes()


def make_loader():
    return DataLoader(Shapes(), batch_size=4, shuffle=True, collate_fn=lambda b: tuple(zip(*b)),
                      generator=torch.Generator().manual_seed(1))


class TinyDetector(nn.Module):
    """A convolution backbone and, for each of four anchors, class logits and a box."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.classes = nn.Linear(32, 4 * NUM_CLASSES)
        self.boxes = nn.Linear(32, 4 * 4)

    def forward(self, images):
        features = self.backbone(torch.stack(images))
        return self.classes(features).view(-1, 4, NUM_CLASSES), self.boxes(features).view(-1, 4, 4)


def cpu_loss(batch):
    images, targets = batch
    torch.manual_seed(0)
    logits, boxes = TinyDetector()(list(images))
    loss = 0.0
    for image_logits, image_boxes, target in zip(logits, boxes, targets):
        count = len(target["labels"])
        loss = loss + F.cross_entropy(image_logits[:count], target["labels"])
        loss = loss + F.smooth_l1_loss(image_boxes[:count], target["boxes"] / 16)
    return loss
'''


@pytest.fixture
def detection(tmp_path, monkeypatch):
    """(the flight record of a run that raised at the bad batch, the run's module)."""
    (tmp_path / "detection_data.py").write_text(textwrap.dedent(DETECTION_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "detection_data", raising=False)
    import detection_data

    path = tmp_path / "flight.json"
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        for images, targets in record(detection_data.make_loader(), path, sync=True):
            detection_data.cpu_loss((images, targets))
    yield path, detection_data
    sys.modules.pop("detection_data", None)


def assert_only_the_bad_sample_fails(report):
    assert report.summary == f"1 sample fails on the CPU: index {BAD_INDEX}"
    (failing,) = report.failing_samples
    assert (failing.index, failing.source, failing.problems) == (BAD_INDEX, "images/011.png", (BAD_ERROR,))
    in_flight, *before = report.batches
    assert BAD_INDEX in in_flight.batch.indices and in_flight.batch_error == BAD_ERROR
    assert before and not any(batch.failed for batch in before)


def test_a_loader_with_a_list_collate_replays_without_false_failures(detection):
    path, data = detection
    assert_only_the_bad_sample_fails(replay(path, data.make_loader, loss=data.cpu_loss))
    assert_only_the_bad_sample_fails(replay(path, data.make_loader(), loss=data.cpu_loss))


@pytest.mark.parametrize("collate", ["function", "module:function"])
def test_a_dataset_factory_replays_with_the_collate_fn_given(detection, collate):
    path, data = detection
    collate_fn = data.collate if collate == "function" else "detection_data:collate"
    assert_only_the_bad_sample_fails(replay(path, data.make_dataset, loss=data.cpu_loss, collate_fn=collate_fn))


def test_without_the_loaders_collate_no_sample_is_blamed_and_the_fix_is_named(detection):
    """The dataset factory of docs/explain.md alone: torch's default_collate stands in for the loader's
    collate and cannot stack the boxes of these batches, which the run's loader collated."""
    path, data = detection
    report = replay(path, data.make_dataset, loss=data.cpu_loss)
    assert report.failing_samples == []
    assert not report.failed and not report.replayed  # nothing was checked: neither passed nor failed
    assert not any("nothing failed on the CPU" in note for note in report.notes)
    assert all(batch.batch_error.startswith("not replayed: torch's default_collate (no collate_fn given) cannot "
                                            "collate it (RuntimeError: stack expects each tensor to be equal size")
               for batch in report.batches)
    assert report.summary == (f"{len(report.batches)} recorded batches not replayed: torch's default_collate "
                              "cannot collate what the crashed run's loader did, and no collate_fn was given")
    assert any("return the DataLoader from the dataset factory, or pass collate_fn=" in note for note in report.notes)
    checked = replay(path, data.make_dataset, loss=data.cpu_loss, num_classes=3)  # the guard needs no collate
    assert [(s.index, s.problems[0][:12]) for s in checked.failing_samples] == [(BAD_INDEX, "guard: LG102")]


def test_a_loss_every_sample_fails_alike_after_default_collate_blames_the_batch(detection):
    """Images 1, 5, 9 and 13 hold two boxes each, so default_collate stacks them; the loss,
    written for the loader's tuples, then fails on the batch and on each image alike."""
    path, data = detection
    from labelguard.flight import FlightRecordWriter

    FlightRecordWriter(path, sync=True).handed(0, 0, [1, 5, 9, 13], None)
    (batch,) = replay(path, data.make_dataset, loss=data.cpu_loss).batches
    assert [s.problems for s in batch.samples] == [()] * 4
    assert batch.batch_error == (
        "loss: TypeError: string indices must be integers, not 'str'; every sample alone fails it alike, so the "
        "form torch's default_collate (no collate_fn given) made of the batch is more likely at fault than any "
        "sample")
    assert not replay(path, data.make_dataset, loss=data.cpu_loss, collate_fn=data.collate).failed


def test_the_cli_replays_through_the_loader_the_factory_returns(detection):
    path, _ = detection
    result = CliRunner().invoke(main, [
        "replay", str(path), "--dataset-factory", "detection_data:make_loader", "--loss", "detection_data:cpu_loss",
    ])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"labelguard replay: 1 sample fails on the CPU: index {BAD_INDEX}")
    assert f"index {BAD_INDEX} (images/011.png): {BAD_ERROR}" in result.output


def test_the_cli_takes_the_loaders_collate_fn_for_a_dataset_factory(detection):
    path, _ = detection
    result = CliRunner().invoke(main, [
        "replay", str(path), "--dataset-factory", "detection_data:make_dataset", "--loss", "detection_data:cpu_loss",
        "--collate-fn", "detection_data:collate",
    ])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"labelguard replay: 1 sample fails on the CPU: index {BAD_INDEX}")


def test_the_cli_exits_2_when_no_batch_could_be_replayed(detection):
    path, _ = detection
    result = CliRunner().invoke(main, [
        "replay", str(path), "--dataset-factory", "detection_data:make_dataset", "--loss", "detection_data:cpu_loss",
    ])
    assert result.exit_code == 2, result.output
    assert "samples not checked" in result.output and "passed" not in result.output


SEGMENTATION_MODULE = '''
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset


class Borders(Dataset):
    """VOC-style masks: every one outlined with 255, which the loss below does not ignore."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        mask = torch.zeros(8, 8, dtype=torch.int64)
        mask[2:6, 2:6] = 1
        mask[0] = 255
        return torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(index)), mask


def make_dataset():
    return Borders()


def cpu_loss(batch):
    images, masks = batch
    torch.manual_seed(0)
    return F.cross_entropy(torch.nn.Conv2d(3, 2, 1)(images), masks)
'''


def test_a_value_every_sample_holds_is_blamed_on_every_sample_not_on_the_batch(tmp_path, monkeypatch):
    """Every mask holds 255 and default_collate is the run's own collate: the loss fails on the
    batch and on each sample alike with a value error, which is each sample's, not the form's."""
    (tmp_path / "seg_data.py").write_text(textwrap.dedent(SEGMENTATION_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "seg_data", raising=False)
    import seg_data
    from torch.utils.data import DataLoader

    path = tmp_path / "flight.json"
    with pytest.raises(IndexError, match="Target 255 is out of bounds"):
        for batch in record(DataLoader(seg_data.make_dataset(), batch_size=4), path, sync=True):
            seg_data.cpu_loss(batch)
    report = replay(path, seg_data.make_dataset, loss=seg_data.cpu_loss)
    assert report.summary == "4 samples fail on the CPU: index 0, 1, 2, 3"
    assert all(s.problems == ("loss: IndexError: Target 255 is out of bounds.",) for s in report.failing_samples)
    sys.modules.pop("seg_data", None)
