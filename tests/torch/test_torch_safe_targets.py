"""safe_targets / TargetMonitor / checked(on_device="mask"): bad class indices masked on the
device, reported a step later with the batch's samples; on the CPU here, the code path a GPU
takes (benchmarks/gpu_check.py runs it on CUDA)."""

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from builders import swin_unet_dataset  # noqa: E402
from labelguard import LabelError, UsageError  # noqa: E402
from labelguard.torch import TargetMonitor, checked, guard, record, safe_targets  # noqa: E402
from torch_datasets import SynapseDataset, synapse_to_tensors  # noqa: E402
from torch_models import SwinUnetDiceLoss  # noqa: E402


def synapse_loader(tmp_path, bad, n=8):
    data, listing = swin_unet_dataset(tmp_path, n=n, num_classes=9, bad=bad)
    dataset = SynapseDataset(data, listing.parent, transform=synapse_to_tensors)
    return DataLoader(dataset, batch_size=4, shuffle=False)


def segmentation_head():
    torch.manual_seed(0)
    return nn.Conv2d(1, 9, 3, padding=1)


@pytest.mark.code("LG201", "fail")
def test_a_bad_label_is_masked_in_its_step_and_reported_at_the_next_naming_the_recorded_sample(tmp_path):
    loader = record(synapse_loader(tmp_path, bad={6: 9}, n=12), tmp_path / "flight.json")
    model = segmentation_head()
    monitor = TargetMonitor(num_classes=9, ignore_index=255)
    seen = []
    with pytest.raises(LabelError) as caught:
        for batch in loader:
            target = monitor(batch["label"].long(), samples=loader)
            seen.append(target)
            loss = F.cross_entropy(model(batch["image"]), target, ignore_index=255)
            assert torch.isfinite(loss)
    assert len(seen) == 2  # batch 2 (samples 4-7) trained, masked; the report came at the next call
    assert loader.batch_indices == [8, 9, 10, 11]
    masked = seen[1]
    assert int((masked == 255).sum()) == 100 and int(masked.max()) == 255
    assert int(masked[masked != 255].max()) < 9
    error = caught.value
    assert (error.code, error.index, error.values) == ("LG201", 6, [9])
    assert error.source.endswith("case0003_slice000.npz")
    message = str(error)
    assert message.startswith("LG201 target of call 2: 100 elements of 4,096 were no class of [0, 9)")
    assert "the first label value 9 at element 2048 (batch item 2: sample 6 (" in message
    assert "samples 4 (" in message and "safe_targets replaced them with 255 on the device" in message
    assert monitor.pending == 0


@pytest.mark.code("LG201", "pass")
def test_clean_targets_pass_unchanged_and_the_report_is_empty(tmp_path):
    monitor = TargetMonitor(num_classes=9, ignore_index=255)
    for batch in synapse_loader(tmp_path, bad=None):
        target = batch["label"].long()
        assert torch.equal(monitor(target), target)
    assert monitor.report() == [] and monitor.calls == 2


def test_masked_loss_equals_the_loss_with_those_elements_ignored():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 4, 4)
    target = torch.randint(0, 3, (2, 4, 4))
    bad = target.clone()
    bad[1, 2, 2] = 7
    expected = target.clone()
    expected[1, 2, 2] = -100
    monitor = TargetMonitor(on_error="warn")
    masked_loss = F.cross_entropy(logits, monitor(bad, 3))
    assert torch.equal(masked_loss, F.cross_entropy(logits, expected))
    (error,) = monitor.report()
    assert (error.code, error.values) == ("LG201", [7])


def test_warn_mode_logs_nan_and_cast_nan_and_keeps_training(caplog):
    monitor = TargetMonitor(num_classes=3, on_error="warn")
    labels = torch.zeros(2, 4)
    labels[0, 1] = float("nan")
    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        assert int(monitor(labels)[0, 1]) == -100
        monitor(labels.long())  # the same NaN after .long(): int64's lowest value
        monitor(torch.zeros(3, dtype=torch.long), samples=[(10, "a.npz"), (11, "b.npz"), (12, "c.npz")])
    assert [e.code for e in monitor.errors] == ["LG204", "LG204"]
    assert "the first value nan at element 1" in str(monitor.errors[0])
    assert "-9223372036854775808 (what NaN becomes when cast to an integer)" in str(monitor.errors[1])
    assert "LG204 target of call 1" in caplog.text
    assert monitor.report() == monitor.errors


def test_indices_name_their_files_through_the_guarded_dataset(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=4, num_classes=9, bad={3: 12})
    guarded = guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), num_classes=9,
                    on_error="warn")
    monitor = TargetMonitor(num_classes=9, ignore_index=255, dataset=guarded)
    labels = torch.stack([guarded[i]["label"] for i in (2, 3)]).long()
    monitor(labels, samples=[2, 3])
    with pytest.raises(LabelError) as caught:
        monitor.report()
    assert (caught.value.index, caught.value.values) == (3, [12])
    assert caught.value.source.endswith("case0002_slice000.npz")


def test_the_default_safe_targets_and_checked_in_mask_mode():
    logits = torch.randn(2, 3, 4, 4)
    target = torch.zeros(2, 4, 4, dtype=torch.long)
    target[0, 0, 0] = 3
    masked = safe_targets(target, 3, ignore_index=255)
    assert int(masked[0, 0, 0]) == 255
    with pytest.raises(LabelError, match="class of \\[0, 3\\)"):
        safe_targets.report()

    loss = checked(nn.CrossEntropyLoss(ignore_index=255), on_device="mask")
    assert torch.isfinite(loss(logits, target, samples=[40, 41]))
    with pytest.raises(LabelError) as caught:
        loss(logits, torch.zeros_like(target))
    assert (caught.value.index, caught.value.values) == (40, [3])
    assert "on_device='mask'" in repr(loss)

    dice = checked(SwinUnetDiceLoss(3), num_classes=3, ignore_index=255, on_device="mask", on_error="warn")
    assert torch.isfinite(dice(torch.softmax(logits, 1), target.float()))
    assert [e.values for e in dice.report()] == [[3.0]]


def test_mask_mode_mistakes_are_usage_errors():
    with pytest.raises(UsageError, match="on_device must be one of check, mask"):
        checked(nn.CrossEntropyLoss(), on_device="later")
    with pytest.raises(UsageError, match="BCELoss takes no class indices"):
        checked(nn.BCELoss(), on_device="mask")
    with pytest.raises(UsageError, match="was given no ignore_index"):
        checked(SwinUnetDiceLoss(3), num_classes=3, on_device="mask")
    with pytest.raises(UsageError, match="ignore_index -100 does not fit the target's dtype uint8"):
        TargetMonitor(num_classes=3)(torch.zeros(4, dtype=torch.uint8))
    with pytest.raises(UsageError, match="needs num_classes"):
        TargetMonitor()(torch.zeros(4, dtype=torch.long))
    with pytest.raises(UsageError, match="on_error must be one of raise, warn"):
        TargetMonitor(on_error="skip")


@pytest.mark.code("LG201", "fail")
def test_checked_in_check_mode_names_the_recorded_sample_of_the_bad_item(tmp_path):
    loader = record(synapse_loader(tmp_path, bad={5: 9}), tmp_path / "flight.json")
    model = segmentation_head()
    loss = checked(nn.CrossEntropyLoss(ignore_index=255))
    with pytest.raises(LabelError) as caught:
        for batch in loader:
            loss(model(batch["image"]), batch["label"].long(), samples=loader)
    assert (caught.value.code, caught.value.index) == ("LG201", 5)
    assert int(np.load(caught.value.source)["label"].max()) == 9  # the file that holds the bad label
    assert str(caught.value).startswith("LG201 CrossEntropyLoss call 2, sample 5 (")


def test_a_check_mode_error_about_the_input_names_the_batch():
    loss = checked(nn.BCELoss())
    with pytest.raises(LabelError) as caught:
        loss(torch.tensor([0.5, 2.0]), torch.tensor([0.0, 1.0]), samples=[(7, "x.png"), (8, "y.png")])
    assert "BCELoss call 1, batch of samples 7 (x.png), 8 (y.png)" in str(caught.value)
    assert caught.value.index is None


def test_a_long_batch_is_named_by_its_first_samples_and_a_count(caplog):
    monitor = TargetMonitor(num_classes=2, on_error="warn")
    target = torch.zeros(20, dtype=torch.long)
    target[13] = 2
    monitor(target, samples=range(100, 120))
    (error,) = monitor.report()
    assert error.index == 113 and error.values == [2]
    assert "(batch item 13: sample 113; the batch: samples 100, 101, 102, 103, 104, 105, 106, 107 and 12 more)" \
        in str(error)
    assert "1 element of 20 was no class of [0, 2)" in str(error)
    assert "replaced it with -100 on the device, so the loss ignored it" in str(error)


def test_float_targets_keep_their_dtype_and_empty_targets_pass():
    monitor = TargetMonitor(num_classes=4, ignore_index=255, on_error="warn")
    target = torch.tensor([[0.0, 1.5], [3.0, 4.0]])
    masked = monitor(target)
    assert masked.dtype == torch.float32 and masked.tolist() == [[0.0, 255.0], [3.0, 255.0]]
    empty = torch.zeros(0, 8, dtype=torch.long)
    assert monitor(empty) is empty
    (error,) = monitor.report()
    assert (error.code, error.values) == ("LG204", [1.5])
    assert "2 elements of 4 were no class of [0, 4) (num_classes=4, ignore_index=255), the first value 1.5 " \
        "at element 1 (batch item 0)" in str(error)
    assert "Hint: class indices are whole numbers: resize masks with nearest-neighbour" in str(error)


def test_samples_must_say_who_the_batch_is(tmp_path):
    loader = synapse_loader(tmp_path, bad=None, n=4)
    with pytest.raises(UsageError, match="labelguard.torch.record"):
        TargetMonitor(num_classes=9)(torch.zeros(4, dtype=torch.long), samples=loader)
    with pytest.raises(UsageError, match="the batch's dataset indices"):
        TargetMonitor(num_classes=9)(torch.zeros(4, dtype=torch.long), samples=7)
    with pytest.raises(UsageError, match="on_error='warn' is for on_device='mask'"):
        checked(nn.CrossEntropyLoss(), on_error="warn")


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int64])
def test_legal_values_past_the_targets_dtype_are_not_masked(dtype):
    """A head of 300 classes takes every uint8 value: the bound 300, which the dtype cannot
    hold, is cut to its range before comparing, never wrapped (uint8 300 is 44)."""
    target = torch.tensor([0, 50, 100], dtype=dtype)
    masked = safe_targets(target, num_classes=300, ignore_index=-1 if dtype != torch.uint8 else 255)
    assert torch.equal(masked, target)
