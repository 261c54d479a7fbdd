"""Scenario 2 (seed 002) end to end: BCELoss asserting at epoch 41 after NaN outputs.

The write-up blamed frozen layers in the optimizer; its fix also changed the learning rate
and Adam's hyperparameters. Rebuilt step by step, RCAN's MeanShift freezes nothing
(LG507), and what makes the NaN is a divergence the steps before it show (LG508)."""

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from labelguard import LabelError  # noqa: E402
from labelguard.torch import NonFiniteError, audit_optimizer, checked, trace_nonfinite, watch  # noqa: E402
from torch_models import RCANLikeGenerator  # noqa: E402


class FrozenBackboneNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.backbone.requires_grad_(False)
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        return torch.sigmoid(self.head(self.backbone(x)))


@pytest.mark.code("LG502", "fail")
@pytest.mark.code("LG504", "fail")
def test_nan_in_a_frozen_layers_weights_is_named_with_the_frozen_parameters_in_the_optimizer():
    torch.manual_seed(0)
    model = FrozenBackboneNet()
    optimizer = torch.optim.Adam(model.parameters(), weight_decay=1e-4)
    with torch.no_grad():  # what many epochs of drift left in a frozen layer
        model.backbone[2].weight[3, 1, 1, 1] = float("nan")
    x, y = torch.randn(2, 3, 8, 8), torch.randint(0, 2, (2, 1, 8, 8)).float()

    (frozen,) = audit_optimizer(model, optimizer)
    assert frozen.code == "LG504"
    assert frozen.data["parameters"] == ["backbone.0.weight", "backbone.0.bias", "backbone.2.weight", "backbone.2.bias"]

    with pytest.raises(LabelError) as caught:
        checked(nn.BCELoss())(model(x), y)
    assert caught.value.code == "LG502"
    assert "BCEWithLogitsLoss" in str(caught.value)
    assert "input_val >= zero && input_val <= one" in str(caught.value)

    with trace_nonfinite(model), pytest.raises(LabelError) as caught:
        model(x)
    assert caught.value.module == "backbone.2"
    assert "module 'backbone.2' (Conv2d)" in str(caught.value)
    assert "weight holds 1 NaN" in str(caught.value)


def rcan_setup(lr):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    low = torch.rand(2, 3, 12, 12, generator=generator) * 255
    high = torch.rand(2, 3, 12, 12, generator=generator) * 255
    net_g = RCANLikeGenerator()
    net_d = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 1), nn.Sigmoid())
    return low, high, net_g, net_d, torch.optim.SGD(net_g.parameters(), lr=lr)


@pytest.mark.code("LG507", "fail")
@pytest.mark.code("LG508", "fail")
def test_seed_002_rebuilt_divergence_is_seen_before_the_nan_that_bce_would_assert_on():
    low, high, net_g, net_d, optimizer = rcan_setup(lr=0.02)
    (freeze,) = audit_optimizer(net_g, optimizer)  # optimizerG = optim.Adam(netG.parameters())
    assert freeze.code == "LG507" and freeze.data["modules"] == ["sub_mean", "add_mean"]

    bce = checked(nn.BCELoss())
    with watch(net_g, optimizer, every=4) as watcher:
        with pytest.raises(LabelError) as caught:
            for _ in range(200):
                fake = net_g(low)
                content = (fake - high).abs().mean()
                watcher.observe(content)
                bce(net_d(fake.detach()), torch.ones(2, 1))  # the discriminator's loss
                optimizer.zero_grad()
                content.backward()
                optimizer.step()
        warned_before = list(watcher.findings)
    error = caught.value
    assert error.code == "LG502"
    calls = bce.calls
    assert f"{calls - 1} earlier calls had finite input, so the output became non-finite during training" in str(error)
    assert "watch(model, optimizer)" in str(error)
    assert "frozen layers optimised" not in str(error)

    (diverging,) = [f for f in warned_before if f.code == "LG508"]  # warned while still finite
    assert diverging.data["step"] < calls
    assert "Optimizer SGD: lr=0.02" in diverging.message
    assert "lr=0.002 instead of 0.02" in diverging.hint


@pytest.mark.code("LG502", "fail")
def test_seed_002_rebuilt_trace_names_where_magnitudes_exploded_and_the_freeze_as_evidence():
    low, high, net_g, _, optimizer = rcan_setup(lr=0.02)
    with trace_nonfinite(net_g, optimizer=optimizer) as tracer, pytest.raises(NonFiniteError) as caught:
        for _ in range(200):
            loss = (net_g(low) - high).abs().mean()
            tracer.check(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    error = caught.value
    message = str(error)
    exploded = error.stats["exploded"]
    assert exploded["module"] == "sub_mean" and exploded["module"] != error.module
    assert "magnitudes had exploded: the output of 'sub_mean' (RCANMeanShift) was already" in message
    assert "over 1e+06 times the model input's largest magnitude (255" in message
    assert "clamp the input" not in message
    assert "training diverges over many steps: lower the learning rate" in message
    assert "The setup also shows: LG507 'sub_mean' (RCANMeanShift), 'add_mean' (RCANMeanShift) set " \
           "requires_grad = False as a plain attribute" in message
