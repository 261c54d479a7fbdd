"""checked(loss_fn): a LabelError naming the values instead of a device-side assert."""

import functools

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from labelguard import LabelError  # noqa: E402
from labelguard.errors import SpecError  # noqa: E402
from labelguard.torch import CheckedLoss, checked  # noqa: E402
from torch_models import SwinUnetDiceLoss  # noqa: E402


def logits(n=2, classes=3, size=4):
    return torch.randn(n, classes, size, size, generator=torch.Generator().manual_seed(0))


def masks(n=2, size=4, fill=0):
    return torch.full((n, size, size), fill, dtype=torch.long)


@pytest.mark.code("LG201", "pass")
@pytest.mark.code("LG503", "pass")
@pytest.mark.code("LG505", "pass")
def test_clean_call_returns_the_loss_value():
    x, y = logits(), masks()
    y[0, 0, 0] = 2
    assert torch.equal(checked(nn.CrossEntropyLoss())(x, y), nn.CrossEntropyLoss()(x, y))


def test_cross_entropy_mask_value_out_of_range_names_value_and_count():
    y = masks()
    y[1, :2, :] = 3
    with pytest.raises(LabelError) as caught:
        checked(nn.CrossEntropyLoss())(logits(), y)
    assert caught.value.code == "LG201"
    assert caught.value.values == [3]
    assert caught.value.expected == "[0, 3) (num_classes=3, ignore_index=-100)"
    assert str(caught.value).startswith("LG201 CrossEntropyLoss call 1: label value 3 in 8 pixels")


def test_ignore_index_is_read_from_the_loss_object():
    y = masks()
    y[0, 0, :] = 255
    assert checked(nn.CrossEntropyLoss(ignore_index=255))(logits(), y).isfinite()
    with pytest.raises(LabelError, match="255"):
        checked(nn.CrossEntropyLoss())(logits(), y)
    with pytest.raises(SpecError, match=r"CrossEntropyLoss\(ignore_index=255\)"):
        checked(nn.CrossEntropyLoss(), ignore_index=255)


def test_functional_losses_and_partials():
    y = torch.tensor([0, 2, -1])
    x = torch.randn(3, 3)
    assert checked(F.cross_entropy)(x, y, ignore_index=-1).isfinite()
    assert checked(functools.partial(F.cross_entropy, ignore_index=-1))(x, y).isfinite()
    with pytest.raises(LabelError) as caught:
        checked(F.nll_loss)(F.log_softmax(x, 1), y)
    assert caught.value.code == "LG103"


@pytest.mark.code("LG503", "fail")
def test_head_size_against_num_classes():
    with pytest.raises(LabelError) as caught:
        checked(nn.CrossEntropyLoss(), num_classes=4)(logits(), masks())
    assert caught.value.code == "LG503"
    assert "3 classes" in str(caught.value) and "num_classes=4" in str(caught.value)


@pytest.mark.parametrize("target, needle", [
    (torch.zeros(2, 4, 4), "target.long()"),
    (torch.zeros(2, 1, 4, 4, dtype=torch.long), "squeeze(1)"),
    (torch.zeros(2, 4, 4, dtype=torch.int32), "int64"),
])
@pytest.mark.code("LG505", "fail")
def test_target_dtype_and_shape(target, needle):
    with pytest.raises(LabelError) as caught:
        checked(nn.CrossEntropyLoss())(logits(), target)
    assert caught.value.code == "LG505"
    assert needle in str(caught.value)


@pytest.mark.code("LG505", "pass")
def test_class_probability_targets_are_legal():
    probabilities = torch.softmax(logits(), 1)
    assert checked(nn.CrossEntropyLoss())(logits(), probabilities).isfinite()


@pytest.mark.code("LG501", "fail")
def test_bce_on_logits_names_bce_with_logits():
    with pytest.raises(LabelError) as caught:
        checked(nn.BCELoss())(torch.tensor([[-2.0, 3.5]]), torch.tensor([[0.0, 1.0]]))
    assert caught.value.code == "LG501"
    assert "BCEWithLogitsLoss" in str(caught.value)
    assert "input_val >= zero && input_val <= one" in str(caught.value)


@pytest.mark.code("LG502", "fail")
def test_bce_nan_input_is_non_finite_with_the_way_to_find_it():
    with pytest.raises(LabelError) as caught:
        checked(nn.BCELoss())(torch.tensor([[0.5, float("nan")]]), torch.tensor([[0.0, 1.0]]))
    assert caught.value.code == "LG502"
    assert "1 NaN" in str(caught.value)
    assert "trace_nonfinite" in str(caught.value) and "BCEWithLogitsLoss" in str(caught.value)


def test_bce_targets():
    with pytest.raises(LabelError) as caught:
        checked(nn.BCEWithLogitsLoss())(torch.zeros(1, 2), torch.tensor([[0.0, 255.0]]))
    assert caught.value.code == "LG501"
    assert "divide by 255" in str(caught.value)
    with pytest.raises(LabelError) as caught:
        checked(F.binary_cross_entropy_with_logits)(torch.zeros(1, 2), torch.tensor([[0, 1]]))
    assert caught.value.code == "LG505"
    assert checked(nn.BCEWithLogitsLoss())(torch.tensor([[-9.0, 9.0]]), torch.tensor([[0.2, 1.0]])).isfinite()


def test_switched_off_the_real_loss_runs_unchecked():
    loss = checked(nn.CrossEntropyLoss(), enabled=False)
    with pytest.raises(IndexError, match="out of bounds"):
        loss(torch.randn(2, 3), torch.tensor([0, 3]))
    loss.enabled = True
    with pytest.raises(LabelError):
        loss(torch.randn(2, 3), torch.tensor([0, 3]))


def test_checked_loss_is_a_module_holding_the_loss():
    weight = torch.tensor([1.0, 2.0, 3.0])
    loss = checked(nn.CrossEntropyLoss(weight=weight))
    assert isinstance(loss, CheckedLoss) and isinstance(loss, nn.Module)
    assert torch.equal(loss.state_dict()["loss_fn.weight"], weight)
    assert loss.calls == 0
    loss(logits(), masks())
    assert loss.calls == 1


def test_unknown_loss_is_a_type_error():
    with pytest.raises(TypeError, match="CrossEntropyLoss, NLLLoss, BCELoss.*checked\\(loss, num_classes=N\\)"):
        checked(nn.MSELoss())


@pytest.mark.code("LG201", "fail")
def test_swin_unet_dice_loss_is_checked_when_told_num_classes():
    dice = checked(SwinUnetDiceLoss(9), num_classes=9)
    label = torch.zeros(2, 8, 8)  # Swin-Unet hands the dice loss the float label batch
    label[1, :2, :2] = 9
    with pytest.raises(LabelError) as caught:
        dice(torch.randn(2, 9, 8, 8), label, softmax=True)
    assert caught.value.code == "LG201"
    assert caught.value.values == [9]
    assert str(caught.value).startswith("LG201 SwinUnetDiceLoss call 1: label value 9 in 4 pixels is outside")
    clean = torch.randint(0, 9, (2, 8, 8)).float()
    assert dice(torch.randn(2, 9, 8, 8), clean, softmax=True).isfinite()


@pytest.mark.code("LG503", "fail")
def test_told_loss_checks_the_class_axis_the_shapes_show():
    with pytest.raises(LabelError, match="SwinUnetDiceLoss input has 2 classes") as caught:
        checked(SwinUnetDiceLoss(2), num_classes=3)(torch.randn(2, 2, 8, 8), torch.zeros(2, 8, 8))
    assert caught.value.code == "LG503"


def test_told_function_loss_with_its_ignore_value_and_soft_targets():
    def weighted_mean(inputs, target):
        return inputs.mean() * target.float().mean()

    loss = checked(weighted_mean, num_classes=3, ignore_index=255)
    target = torch.full((2, 4, 4), 255, dtype=torch.long)
    target[0] = 2
    assert loss(torch.randn(2, 3, 4, 4), target).isfinite()  # 255 is the told ignore value
    assert loss(torch.randn(2, 3, 4, 4), torch.rand(2, 3, 4, 4)).isfinite()  # soft labels
    with pytest.raises(LabelError) as caught:
        loss(torch.randn(2, 3, 4, 4), torch.full((2, 3, 4, 4), float("nan")))
    assert caught.value.code == "LG502"


@pytest.mark.code("LG204", "fail")
def test_nan_label_cast_to_long_is_named_as_a_cast_nan():
    label = torch.zeros(2, 8, 8)
    label[0, 3, 3] = float("nan")  # a failed lookup in the dataset
    with pytest.raises(LabelError) as caught:
        checked(nn.CrossEntropyLoss())(torch.randn(2, 3, 8, 8), label.long())
    error = caught.value
    assert error.code == "LG204"
    assert "1 target value is -9223372036854775808, what NaN and +-Inf become when cast to int64" in str(error)
    assert "the target was NaN before the cast" in str(error)
    assert "remap" not in str(error)
