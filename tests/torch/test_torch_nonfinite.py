"""trace_nonfinite: the first module that produced a NaN/Inf, by name."""

import copy
import logging
import pickle

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from labelguard import LabelError  # noqa: E402
from labelguard.torch import NonFiniteError, trace_nonfinite  # noqa: E402


def conv_net():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Dropout(0.2),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4),
    )


def batch():
    return torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(1))


@pytest.mark.code("LG502", "fail")
def test_nan_planted_in_one_layers_weights_is_reported_with_that_layer():
    model = conv_net()
    with torch.no_grad():
        model[4].weight[0, 0, 0, 0] = float("nan")
    twin = copy.deepcopy(model)
    twin(batch())  # the same step without the tracer: what BatchNorm's statistics must be

    with trace_nonfinite(model) as tracer:
        with pytest.raises(LabelError) as caught:
            model(batch())

    error = caught.value
    assert isinstance(error, NonFiniteError)
    assert (error.code, error.module, error.module_type, error.step) == ("LG502", "4", "Conv2d", 1)
    message = str(error)
    assert message.startswith("LG502 step 1: the first non-finite value was produced by module '4' (Conv2d)")
    assert "its parameter weight holds 1 NaN" in message
    assert "its input (4, 8, 8, 8) float32 was finite" in message
    assert "audit_optimizer" in message
    assert error.stats["parameters"]["weight"]["nan"] == 1
    assert torch.equal(model[1].running_mean, twin[1].running_mean)  # the replay left no trace
    assert int(model[1].num_batches_tracked) == 1
    assert tracer.step == 1
    rebuilt = pickle.loads(pickle.dumps(error))
    assert (rebuilt.module, rebuilt.step, str(rebuilt)) == ("4", 1, message)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return torch.log(self.conv(x) * 0 - 1)  # log of a negative number


class Net(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        features = self.encoder(x).mean((2, 3))
        return self.head(features / features.abs().min().mul(0))  # divides by zero


def test_value_made_by_an_operation_inside_a_containers_forward():
    model = Net(Encoder())
    with trace_nonfinite(model), pytest.raises(NonFiniteError) as caught:
        model(batch())
    assert caught.value.module == "encoder"
    assert "the forward of 'encoder' (Encoder) outside its submodules" in str(caught.value)


def test_value_made_in_the_parents_forward_before_a_child():
    model = Net(nn.Conv2d(3, 4, 1))
    with trace_nonfinite(model), pytest.raises(NonFiniteError) as caught:
        model(batch())
    assert caught.value.module == ""
    assert "inside the forward of the model (Net) before it called 'head' (Linear)" in str(caught.value)


def test_non_finite_input_batch_is_named_as_the_data():
    x = batch()
    x[0, 0, 0, 0] = float("inf")
    model = conv_net()
    with trace_nonfinite(model), pytest.raises(NonFiniteError) as caught:
        model(x)
    assert caught.value.module is None
    assert "the model input is already non-finite" in str(caught.value)


@pytest.mark.code("LG502", "pass")
def test_clean_steps_are_untouched_and_hooks_go_away():
    model = conv_net().eval()
    expected = model(batch())
    with trace_nonfinite(model) as tracer:
        for _ in range(3):
            assert torch.equal(model(batch()), expected)
    assert tracer.step == 3
    assert not model._forward_hooks and not model._forward_pre_hooks


def test_dropout_replay_uses_the_steps_random_state():
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5), nn.Linear(16, 2))
    with torch.no_grad():
        model[2].weight[1, 3] = float("inf")
    with trace_nonfinite(model), pytest.raises(NonFiniteError) as caught:
        for _ in range(20):
            model(torch.ones(2, 16))
    assert caught.value.module == "2"


def test_loss_check_names_the_loss():
    model = nn.Linear(3, 1)
    with trace_nonfinite(model) as tracer:
        out = model(torch.ones(2, 3))
        with pytest.raises(NonFiniteError, match="the loss .* while the model output was finite"):
            tracer.check(torch.log(out - out.detach() - 1).sum())


def test_backward_opt_in_names_the_first_parameter_with_a_non_finite_gradient():
    class Root(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(3, 3)
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(self.body(x)).abs().sqrt()

    model = Root()
    with torch.no_grad():
        model.fc.weight.zero_()
        model.fc.bias.zero_()
    with trace_nonfinite(model, backward=True):
        out = model(torch.ones(2, 3))
        with pytest.raises(NonFiniteError) as caught:
            out.sum().backward()
    assert caught.value.module == "fc"
    assert "(backward)" in str(caught.value) and "fc.weight.grad" in str(caught.value)


def test_backward_from_the_loss_is_named_as_the_loss():
    model = nn.Linear(3, 2)
    with trace_nonfinite(model, backward=True):
        out = model(torch.ones(2, 3))
        with pytest.raises(NonFiniteError, match="the loss's backward produced it"):
            (out - out.detach()).sqrt().sum().backward()


class SRMGate(nn.Module):
    """Style-based recalibration (SRM): each channel's mean and standard deviation (the
    variance summed by hand, as IMDN's contrast layer does), a channel-wise linear layer and a
    sigmoid gate."""

    def __init__(self, channels):
        super().__init__()
        self.cfc = nn.Conv1d(channels, channels, kernel_size=2, groups=channels)

    def forward(self, x):
        flat = x.reshape(*x.shape[:2], -1)
        mean = flat.mean(-1, keepdim=True)
        std = (flat - mean).pow(2).mean(-1, keepdim=True).sqrt()
        return x * torch.sigmoid(self.cfc(torch.cat([mean, std], dim=-1))).unsqueeze(-1)


class GatedSR(nn.Module):
    """A small super-resolution body: head and body convolutions, the gate, a long skip and a
    reconstruction tail."""

    def __init__(self, channels=8):
        super().__init__()
        self.head = nn.Conv2d(3, channels, 3, padding=1)
        self.body = nn.Conv2d(channels, channels, 3, padding=1)
        self.gate = SRMGate(channels)
        self.tail = nn.Conv2d(channels, 3, 3, padding=1)

    def forward(self, x):
        features = self.head(x)
        return self.tail(self.gate(self.body(features)) + features)


@pytest.mark.code("LG502", "fail")
def test_an_inf_that_a_later_sigmoid_absorbs_is_recorded_and_named_when_the_output_overflows(caplog):
    """Fine-tuning the feature convolutions under L1 at lr=0.03 (gate and tail frozen)
    diverges. At step 12 a channel's variance overflows inside the gate, whose sigmoid turns
    +Inf into 1: the output stays finite, so nothing is raised, but the value is logged once and
    recorded; at step 23 'body' overflows and the output turns non-finite: the error raised then
    says the first non-finite value began at step 12 in 'gate'."""
    torch.manual_seed(0)
    model = GatedSR()
    model.gate.requires_grad_(False)
    model.tail.requires_grad_(False)
    generator = torch.Generator().manual_seed(1)
    images, targets = (torch.rand(2, 3, 8, 8, generator=generator) * 255 for _ in range(2))
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.03)

    def step():
        loss = nn.functional.l1_loss(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        with trace_nonfinite(model) as tracer, pytest.raises(NonFiniteError) as caught:
            for _ in range(30):
                tracer.check(step())
    first = tracer.first_nonfinite
    assert (first["step"], first["module"], first["module_type"]) == (12, "gate", "SRMGate")
    assert first["message"].startswith(
        "LG502 step 12: the first non-finite value was produced inside the forward of 'gate' (SRMGate) before "
        "it called 'gate.cfc' (Conv1d): the value passed to it (2, 8, 2) float32 holds 2 +Inf of 32 values")
    assert "the model output was still finite: an operation after it absorbed the value (sigmoid(+Inf) is 1" \
        in first["message"]
    assert first["stats"]["absorbed"] is True and first["stats"]["exploded"]["module"] == "head"
    assert caplog.text.count("LG502 step 12") == 1 and caplog.text.count("LG502") == 1  # logged once
    error = caught.value
    assert error.step == 23
    assert ("it began earlier: the first non-finite value appeared at step 12, made inside the forward of "
            "'gate' (SRMGate) while the model output stayed finite") in str(error)
    assert error.stats["first_nonfinite"] == {"step": 12, "module": "gate", "module_type": "SRMGate"}


@pytest.mark.code("LG502", "pass")
def test_finite_outputs_too_large_to_sum_are_never_replayed(caplog):
    """Outputs of 1e37 are finite (their float32 sum is not): the check looks at the minimum
    and maximum, so nothing is replayed, logged or raised."""
    model = nn.Sequential(nn.Linear(4, 64), nn.Tanh())
    with torch.no_grad():
        model[0].weight.fill_(0)
        model[0].bias.fill_(1e37)
    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        with trace_nonfinite(model) as tracer:
            tracer._replay = None  # a replay would fail the test
            for _ in range(3):
                model(torch.ones(2, 4))
    assert tracer.step == 3 and tracer.first_nonfinite is None
    assert caplog.text == ""


def test_a_loss_that_overflows_from_huge_finite_outputs_is_told_apart_from_the_loss():
    """The batch stays held after a clean forward, so check() can replay it and see outputs
    already too large for a squared loss."""
    model = nn.Sequential(nn.Linear(4, 64), nn.Linear(64, 1))
    with torch.no_grad():
        model[0].weight.fill_(0)
        model[0].bias.fill_(1e30)
    with trace_nonfinite(model) as tracer:
        out = model(torch.ones(2, 4))
        assert tracer._call is not None
        with pytest.raises(NonFiniteError, match="the loss overflowed from exploded outputs"):
            tracer.check(out.pow(2).sum())


class MaskScores(nn.Module):
    def forward(self, scores, pad):
        return scores.masked_fill(pad[:, None, :], float("-inf"))


class MaskedAttention(nn.Module):
    """Padded keys get -Inf scores, which the softmax turns into weight 0."""

    def __init__(self, d=8):
        super().__init__()
        self.emb, self.qkv, self.mask = nn.Embedding(20, d), nn.Linear(d, 3 * d), MaskScores()
        self.softmax, self.head = nn.Softmax(-1), nn.Linear(d, 2)

    def forward(self, tokens, pad):
        q, k, v = self.qkv(self.emb(tokens)).chunk(3, -1)
        h = self.softmax(self.mask(q @ k.transpose(1, 2), pad)) @ v
        return self.head(h.masked_fill(pad[..., None], 0).sum(1))


class SetEncoder(nn.Module):
    """A fully padded set makes nn.MultiheadAttention return NaN rows, replaced by nan_to_num."""

    def __init__(self, d=8):
        super().__init__()
        self.inp, self.attn = nn.Linear(4, d), nn.MultiheadAttention(d, 2, batch_first=True)
        self.head = nn.Linear(d, 1)

    def forward(self, x, pad):
        h = self.inp(x)
        a, _ = self.attn(h, h, h, key_padding_mask=pad)
        return self.head(torch.nan_to_num(a).masked_fill(pad[..., None], 0.0).sum(1))


@pytest.mark.code("LG502", "pass")
@pytest.mark.parametrize("kind", ["mask", "attn"])
def test_values_masked_or_replaced_on_purpose_are_logged_once_and_never_raised(kind, caplog):
    torch.manual_seed(0)
    if kind == "mask":
        model = MaskedAttention()
        pad = torch.arange(6)[None] >= torch.tensor([[3], [6]])
        args = (torch.randint(0, 20, (2, 6)), pad)
        words = "a softmax gives -Inf scores weight 0"
    else:
        model = SetEncoder()
        pad = torch.zeros(2, 5, dtype=torch.bool)
        pad[1] = True
        args = (torch.randn(2, 5, 4), pad)
        words = "replaced or discarded the NaN (nan_to_num"
    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        with trace_nonfinite(model) as tracer:
            for _ in range(3):
                tracer.check(model(*args).sum())
    assert tracer.step == 3
    assert tracer.first_nonfinite["module"] == kind and tracer.first_nonfinite["step"] == 1
    assert caplog.text.count("LG502") == 1 and f"'{kind}'" in caplog.text and words in caplog.text
    assert "sigmoid" not in caplog.text and "clamp the input" not in caplog.text


def test_a_subclass_of_a_safe_module_with_its_own_forward_is_checked():
    class SafeLog(nn.ReLU):
        def forward(self, x):
            return torch.log(x)

    model = nn.Sequential(nn.Linear(2, 2), SafeLog(), nn.Sigmoid())
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.zero_()
    with trace_nonfinite(model) as tracer:
        assert torch.isfinite(model(torch.ones(1, 2))).all()  # sigmoid(log 0) = sigmoid(-Inf) = 0
    assert tracer.first_nonfinite["module"] == "1"
