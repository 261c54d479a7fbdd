"""audit_optimizer: which parameters an optimizer should and should not hold (LG504)."""

import copy

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from labelguard import Severity  # noqa: E402
from labelguard.torch import audit_optimizer  # noqa: E402


class MeanShift(nn.Conv2d):
    """RCAN's MeanShift: a fixed 1x1 conv that subtracts or adds the RGB mean."""

    def __init__(self, rgb_range=255, sign=-1):
        super().__init__(3, 3, kernel_size=1)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.bias.data = sign * rgb_range * torch.tensor([0.4488, 0.4371, 0.4040])
        for p in self.parameters():
            p.requires_grad = False


class RCANLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub_mean = MeanShift(sign=-1)
        self.body = nn.Conv2d(3, 3, 3, padding=1)
        self.add_mean = MeanShift(sign=1)

    def forward(self, x):
        return self.add_mean(self.body(self.sub_mean(x)))


@pytest.mark.code("LG504", "fail")
def test_adam_over_model_parameters_with_frozen_mean_shift():
    model = RCANLike()
    findings = audit_optimizer(model, torch.optim.Adam(model.parameters()))
    assert [f.code for f in findings] == ["LG504"]
    finding = findings[0]
    assert finding.severity == Severity.WARNING
    assert finding.data["parameters"] == ["sub_mean.weight", "sub_mean.bias", "add_mean.weight", "add_mean.bias"]
    assert finding.message.startswith("4 frozen parameters (requires_grad=False) are in the optimizer: "
                                      "sub_mean.weight (MeanShift), sub_mean.bias (MeanShift)")
    assert "p.requires_grad" in finding.hint


@pytest.mark.code("LG504", "pass")
def test_trainable_parameters_only_is_clean():
    model = RCANLike()
    optimizer = torch.optim.Adam(p for p in model.parameters() if p.requires_grad)
    assert audit_optimizer(model, optimizer) == []


def test_trainable_parameters_missing_after_a_new_head():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.append(nn.Linear(2, 3))
    (finding,) = audit_optimizer(model, optimizer)
    assert finding.data["kind"] == "trainable-missing"
    assert "2 trainable parameters are in no param group" in finding.message
    assert "2.weight (Linear), 2.bias (Linear)" in finding.message


def test_parameter_in_two_groups_and_optimizer_over_another_copy():
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD([{"params": [model.weight, model.bias]}], lr=0.1)
    optimizer.param_groups.append({**optimizer.param_groups[0], "params": [model.bias]})
    kinds = {f.data["kind"]: f for f in audit_optimizer(model, optimizer)}
    assert "bias (groups 0, 1)" in kinds["in-two-groups"].message

    other = copy.deepcopy(model)
    kinds = {f.data["kind"]: f for f in audit_optimizer(other, torch.optim.SGD(model.parameters(), lr=0.1))}
    assert set(kinds) == {"trainable-missing", "foreign-tensors"}
    assert "another copy of the model" in kinds["foreign-tensors"].message
