"""Scenario 2 end to end: BCELoss asserting after NaNs from optimised frozen layers."""

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from labelguard import LabelError  # noqa: E402
from labelguard.torch import audit_optimizer, checked, trace_nonfinite  # noqa: E402


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
def test_frozen_layers_optimised_into_nan_before_bce():
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
