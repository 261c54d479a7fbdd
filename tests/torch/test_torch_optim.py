"""audit_optimizer: which parameters an optimizer should and should not hold (LG504)."""

import copy

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from labelguard import Severity  # noqa: E402
from labelguard.torch import audit_optimizer  # noqa: E402
from torch_models import RCANLike  # noqa: E402


class MeanShift(nn.Conv2d):
    """RCAN's MeanShift: a fixed 1x1 conv that subtracts or adds the RGB mean."""

    def __init__(self, rgb_range=255, sign=-1):
        super().__init__(3, 3, kernel_size=1)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.bias.data = sign * rgb_range * torch.tensor([0.4488, 0.4371, 0.4040])
        for p in self.parameters():
            p.requires_grad = False


@pytest.mark.code("LG504", "fail")
def test_adam_over_model_parameters_with_frozen_mean_shift():
    model = RCANLike(MeanShift)
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
    model = RCANLike(MeanShift)
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


@pytest.mark.code("LG507", "fail")
def test_rcan_mean_shift_attribute_freeze_is_found_and_its_weights_do_move():
    model = RCANLike()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    before = model.sub_mean.weight.detach().clone()
    model(torch.rand(2, 3, 8, 8) * 255).square().mean().backward()
    optimizer.step()
    assert not torch.equal(model.sub_mean.weight, before)  # the "frozen" layer was trained

    findings = audit_optimizer(model, optimizer)
    assert [f.code for f in findings] == ["LG507"]
    (finding,) = findings
    assert finding.severity == Severity.ERROR
    assert finding.data["modules"] == ["sub_mean", "add_mean"]
    assert finding.data["parameters"] == ["sub_mean.weight", "sub_mean.bias", "add_mean.weight", "add_mean.bias"]
    assert finding.message.startswith(
        "'sub_mean' (RCANMeanShift), 'add_mean' (RCANMeanShift) set requires_grad = False as a plain "
        "attribute, which freezes nothing: 4 parameters still have requires_grad=True and are trained")
    assert "requires_grad_(False)" in finding.hint


@pytest.mark.code("LG507", "pass")
def test_mean_shift_frozen_through_its_parameters_is_no_lg507():
    model = RCANLike()
    model.sub_mean.requires_grad_(False)
    model.add_mean.requires_grad_(False)
    optimizer = torch.optim.Adam(p for p in model.parameters() if p.requires_grad)
    assert audit_optimizer(model, optimizer, frozen=["sub_mean", model.add_mean]) == []


def test_attribute_freeze_of_parameters_no_optimizer_holds_is_not_reported():
    model = RCANLike()
    optimizer = torch.optim.Adam(model.body.parameters())
    # Trainable but in no param group: never changed (LG504 says so), so the freeze is not broken.
    assert [f.data["kind"] for f in audit_optimizer(model, optimizer)] == ["trainable-missing"]


@pytest.mark.code("LG507", "fail")
@pytest.mark.parametrize("freeze", [
    pytest.param(lambda m: copy.deepcopy(m.body).requires_grad_(False), id="requires_grad_-on-a-deepcopy"),
    pytest.param(lambda m: [p.data.requires_grad_(False) for p in m.body.parameters()], id="on-p.data"),
    pytest.param(lambda m: [setattr(t, "requires_grad", False) for k, t in m.state_dict().items()
                            if k.startswith("body.")], id="on-state_dict-tensors"),
])
def test_declared_freeze_that_reached_a_copy_is_found(freeze):
    model = RCANLike()
    model.sub_mean.requires_grad_(False)
    model.add_mean.requires_grad_(False)
    freeze(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    findings = [f for f in audit_optimizer(model, optimizer, frozen=["body"]) if f.code == "LG507"]
    assert [f.data["kind"] for f in findings] == ["declared"]
    assert findings[0].data["parameters"] == ["body.weight", "body.bias"]
    assert "2 parameters declared frozen still have requires_grad=True" in findings[0].message


def test_frozen_names_an_unknown_module():
    from labelguard import UsageError

    model = RCANLike()
    with pytest.raises(UsageError, match="'sub_means', which is neither a module nor a parameter.*did you mean 'sub_mean'"):
        audit_optimizer(model, torch.optim.SGD(model.parameters(), lr=0.1), frozen=["sub_means"])
    with pytest.raises(UsageError, match="not a parameter of the model"):
        audit_optimizer(model, torch.optim.SGD(model.parameters(), lr=0.1), frozen=[model.body.weight.detach()])
