"""watch(model, optimizer): divergence seen before the NaN (LG508), on real training loops."""

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from builders import swin_unet_dataset  # noqa: E402
from labelguard import UsageError  # noqa: E402
from labelguard.torch import DivergenceWatch, guard, watch  # noqa: E402
from torch_datasets import SynapseDataset, synapse_to_tensors  # noqa: E402
from torch_models import RCANLike  # noqa: E402


def regression(seed=1):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 8, generator=generator)
    return x, x.sum(1, keepdim=True)


def fixed_head_net():
    """A trainable first layer before two fixed ones: the loss is a quadratic in the first
    layer's weight, so SGD's error grows by exactly |1 - lr * curvature| per step when the
    learning rate is past 2 / curvature."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4, bias=False), nn.Linear(4, 4), nn.Linear(4, 1))
    model[1].requires_grad_(False)
    model[2].requires_grad_(False)
    return model


def curvature(model, x):
    """The largest eigenvalue of the loss's Hessian in the first layer's weight."""
    head = model[2].weight @ model[1].weight  # (1, 4): what the fixed layers multiply by
    return float(2 / len(x) * torch.linalg.eigvalsh(x.T @ x).max() * head.square().sum())


def train(model, optimizer, watcher, x, y, steps):
    losses = []
    for _ in range(steps):
        loss = (model(x) - y).square().mean()
        watcher.observe(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.code("LG508", "fail")
def test_a_learning_rate_past_the_stable_one_is_reported_long_before_the_nan(caplog):
    x, y = regression()
    model = fixed_head_net()
    lr = 2.3 / curvature(model, x)  # the error grows 1.3x per step: 100x in ~18 steps
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        with watch(model, optimizer, every=8) as watcher:
            losses = train(model, optimizer, watcher, x, y, steps=48)
    assert all(torch.isfinite(torch.tensor(losses)))  # no NaN yet: float32 holds 40 more steps
    (finding,) = watcher.report()
    assert finding.code == "LG508"
    assert finding.data["module"] == "0"
    assert finding.data["step"] <= 40
    message = finding.message
    assert message.startswith(f"training is diverging (step {finding.data['step']}): ")
    assert "the output of '0' (Linear) grew from max |x| " in message
    assert "the first module in the forward to grow past " in message
    assert "gradient norm " in message and "loss " in message
    assert f"Optimizer SGD: lr={lr:.4g}, momentum=0" in message
    assert f"lr={float(f'{lr:.4g}') / 10:g} instead of {lr:.4g}" in finding.hint
    assert "clip_grad_norm_" in finding.hint
    assert "LG508 training is diverging" in caplog.text
    # growing from the first step: read step by step throughout
    assert [h["steps"] for h in watcher.history] == [(step, step) for step in range(1, 49)]


class SigmoidRCAN(nn.Module):
    """RCAN's outline (its MeanShift convs trainable, as published) with a sigmoid, for a BCE
    loss on binary high-resolution targets; images in 0..255, as RCAN feeds them."""

    def __init__(self):
        super().__init__()
        self.net = RCANLike()

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def super_resolution_batch(scale):
    generator = torch.Generator().manual_seed(1)
    images = torch.rand(2, 3, 8, 8, generator=generator) * scale
    return images, torch.rand(2, 3, 8, 8, generator=generator)


def train_rcan(model, loss_fn, images, targets, steps):
    """SGD at lr=2 under a watch with its default window; the watch and the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
    losses = []
    with watch(model, optimizer) as watcher:
        for _ in range(steps):
            loss = loss_fn(model(images), targets)
            watcher.observe(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    return watcher, losses


@pytest.mark.code("LG508", "fail")
def test_a_divergence_within_the_first_window_is_reported_at_its_step():
    """BCELoss at lr=2: the outputs grow 100x by step 3, then the sigmoid saturates, so no NaN
    follows and every later step looks like the first ones; a watch that took its first 16
    steps as the baseline never saw it."""
    torch.manual_seed(0)
    images, targets = super_resolution_batch(255)
    watcher, losses = train_rcan(SigmoidRCAN(), nn.BCELoss(), images, (targets > 0.5).float(), steps=24)
    assert all(torch.isfinite(torch.tensor(losses)))
    (finding,) = watcher.report()
    assert finding.code == "LG508"
    assert (finding.data["step"], finding.data["module"]) == (3, "net.body")
    assert finding.message.startswith(
        "training is diverging (step 3): the output of 'net.body' (Conv2d) grew from max |x| 120 (step 1) "
        "to 1.36e+04 at step 3 (114x), the first module in the forward to grow past 100x; "
        "gradient norm 5.85 (steps 1-2) -> 28.3 at step 3 (4.8x); loss stayed near 48 (steps 1-2). "
        "Optimizer SGD: lr=2.0")
    assert [h["steps"] for h in watcher.history[:4]] == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_growth_in_the_first_steps_is_reported_before_the_nan_against_the_steps_before_it():
    """L1 at lr=2 on 0..1 images: the loss is 4,652 times step 1's at step 2, the gradient norm
    non-finite at step 4."""
    torch.manual_seed(0)
    images, targets = super_resolution_batch(1)
    watcher, losses = train_rcan(RCANLike(), nn.L1Loss(), images, targets, steps=6)
    assert not all(torch.isfinite(torch.tensor(losses)))
    diverging, broken = watcher.report()
    assert (diverging.code, diverging.data["step"], diverging.data["module"]) == ("LG508", 2, "body")
    assert diverging.message.startswith(
        "training is diverging (step 2): the output of 'body' (Conv2d) grew from max |x| 100 (step 1) to "
        "1.81e+05 at step 2 (1,803x), the first module in the forward to grow past 100x; gradient norm 279 "
        "(step 1) -> 1.54e+05 at step 2 (553x); loss 108 (step 1) -> 5.03e+05 at step 2 (4,652x)")
    assert (broken.code, broken.data["step"]) == ("LG502", 4)
    assert broken.message.startswith(
        "the gradient norm became non-finite at step 4; before it, the loss reached 4.8e+10x its 108 of step 1 "
        "(5.14e+12 at step 3), the gradient norm reached 1.5e+07x its 279 of step 1 (4.2e+09 at step 3)")
    assert "(LG508) ended in an overflow" in broken.hint


def test_a_nan_at_the_second_step_compares_no_step_with_itself():
    """MSE at lr=2: step 2's loss is 1.7e22 and its gradient norm non-finite, with step 1 the
    only finite step before it."""
    torch.manual_seed(0)
    images, targets = super_resolution_batch(1)
    watcher, _ = train_rcan(RCANLike(), nn.MSELoss(), images, targets, steps=3)
    diverging, broken = watcher.report()
    assert (diverging.code, diverging.data["step"]) == ("LG508", 2)
    assert "; gradient norm 6.54e+04 (step 1) -> non-finite at step 2; loss 1.44e+04 (step 1) -> 1.7e+22 at step 2" \
        in diverging.message
    assert broken.message.startswith(
        "the gradient norm became non-finite at step 2; before it, the loss was 1.44e+04 at step 1, the only "
        "step recorded, the gradient norm was 6.54e+04 at step 1, the only step recorded. Optimizer SGD")
    assert "(step 1) to" not in broken.message


def test_growth_after_a_calm_start_is_read_step_by_step_again():
    """A warm restart at step 25 sets a learning rate past the stable one (the error grows 1.6x
    a step): the watch, reading once per 8 steps by then, reads each step again once the growth
    shows, and reports the step the loss crosses 100x its baseline while training is at it."""
    x, y = regression()
    y = y + 0.5 * torch.randn(y.shape, generator=torch.Generator().manual_seed(2))  # a floor under the loss
    model = fixed_head_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3 / curvature(model, x))
    with watch(model, optimizer, every=8) as watcher:
        train(model, optimizer, watcher, x, y, steps=24)
        for group in optimizer.param_groups:
            group["lr"] = 2.6 / curvature(model, x)
        train(model, optimizer, watcher, x, y, steps=27)
        (finding,) = watcher.findings  # at step 51, without report()
    assert (finding.code, finding.data["step"], watcher.step) == ("LG508", 51, 51)
    assert finding.message.startswith("training is diverging (step 51): the output of '0' (Linear) grew from max "
                                      "|x| 14.2 (steps 1-8) to 185 at step 51 (13x)")
    assert "; loss 2.18 (steps 1-8) -> 468 at step 51 (215x)" in finding.message
    assert [h["steps"] for h in watcher.history[7:]] == [
        (8, 8), (9, 16), (17, 24), (25, 32), (33, 40), (41, 48), (49, 49), (50, 50), (51, 51)]


@pytest.mark.code("LG508", "pass")
def test_healthy_training_on_real_files_gives_no_finding(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=8, num_classes=4)
    loader = DataLoader(guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors),
                              num_classes=4), batch_size=4, shuffle=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, optimizer, every=4) as watcher:
        for _ in range(6):
            for batch in loader:
                loss = nn.functional.cross_entropy(model(batch["image"]), batch["label"].long())
                watcher.observe(loss)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                with torch.no_grad():  # a validation forward between steps is not a step
                    model(batch["image"])
    assert watcher.report() == []
    assert watcher.step == 12
    # the first 4 steps one by one, then calm: windows of 4
    assert [h["steps"] for h in watcher.history] == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 8), (9, 12)]
    assert set(watcher.history[0]["activations"]) == {"0", "1", "3"}


def test_nan_without_growth_before_it_says_divergence_is_not_the_cause():
    x, y = regression()
    model = fixed_head_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    watcher = watch(model, optimizer, every=4).attach()
    train(model, optimizer, watcher, x, y, steps=10)
    poisoned = x.clone()
    poisoned[3, 2] = float("nan")  # one bad sample
    train(model, optimizer, watcher, poisoned, y, steps=1)
    watcher.detach()
    (finding,) = watcher.report()
    assert finding.code == "LG502"
    assert finding.message.startswith("the loss became non-finite at step 11; before it, the loss stayed at "
                                      "or below 1x its 9.93 of steps 1-4")
    assert "not a slow divergence" in finding.hint and "LG509" in finding.hint


def test_adam_betas_that_differ_from_the_defaults_are_named_in_the_hint():
    from labelguard.torch._watch import _lower_the_step, _optimizer_settings

    model = fixed_head_net()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4, betas=(0.5, 0.999))
    settings, unusual = _optimizer_settings(optimizer)
    assert settings == "Adam: lr=0.0002, betas=(0.5, 0.999), eps=1e-08, weight_decay=0"
    assert "betas=(0.5, 0.999) differs from Adam's default (0.9, 0.999), a safer start" in _lower_the_step(
        optimizer, unusual)
    assert _optimizer_settings(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))[1] == {}


def test_outputs_growing_while_the_loss_falls_are_learning_not_divergence():
    x, y = regression()
    y = y * 1000  # targets a thousand times the outputs the network starts with
    model = nn.Sequential(nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=2.0)
    with watch(model, optimizer, every=4, sample_every=1) as watcher:
        losses = train(model, optimizer, watcher, x, y, steps=800)
    assert losses[-1] < losses[0] / 10
    assert max(watcher.history[-1]["activations"].values()) > 100 * watcher.history[0]["activations"]["0"]
    assert watcher.report() == []


def test_without_an_optimizer_each_forward_is_a_step_and_bad_arguments_are_usage_errors():
    x, y = regression()
    model = fixed_head_net()
    watcher = DivergenceWatch(model, every=2)
    with watcher:
        for _ in range(5):
            watcher.observe((model(x) - y).square().mean())
    assert watcher.step == 4
    assert watcher.report() == []
    assert [h["steps"] for h in watcher.history] == [(1, 1), (2, 2), (3, 4), (5, 5)]
    assert watcher.history[0]["grad_norm"] is None
    with pytest.raises(UsageError, match="growth must be above 1"):
        watch(model, growth=1)
    with pytest.raises(UsageError, match="every and sample_every must be at least 1"):
        watch(model, every=0)
    with pytest.raises(UsageError, match="names 'head', not modules of Sequential"):
        watch(model, modules=["head"])


class LayerScale(nn.Module):
    """timm's LayerScale: a per-channel gain that starts at 1e-6 (DeiT-III, ConvNeXt)."""

    def __init__(self, dim, init_values=1e-6):
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


class ScaledResidual(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.inp, self.mlp, self.ls, self.head = nn.Linear(8, d), nn.Linear(d, d), LayerScale(d), nn.Linear(d, 4)

    def forward(self, x):
        h = self.inp(x)
        return self.head(h + self.ls(torch.relu(self.mlp(h))))


@pytest.mark.code("LG508", "pass")
def test_a_layer_scale_growing_from_1e_6_while_training_is_healthy_is_no_divergence():
    """AdamW moves a 1e-6 gain by ~lr a step: its output grows 1,000x in the first steps while
    the loss and the gradient norm stay where they were. A module's rise alone is not LG508."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    model = ScaledResidual()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    protos = torch.randn(4, 8, generator=generator)
    with watch(model, optimizer, every=8) as watcher:
        for _ in range(40):
            y = torch.randint(0, 4, (32,), generator=generator)
            loss = nn.functional.cross_entropy(model(protos[y] + torch.randn(32, 8, generator=generator)), y)
            watcher.observe(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    ls = [h["activations"]["ls"] for h in watcher.history]
    assert max(ls) > 100 * ls[0]  # the output did grow by two orders of magnitude
    assert watcher.report() == []


@pytest.mark.code("LG508", "pass")
def test_a_loss_that_starts_near_zero_grows_without_divergence_while_the_gradient_norm_holds():
    """A GRPO-style policy loss (group-normalised advantages, ratio 1, beta * KL to a frozen
    reference) is ~1e-8 at step 1 and 1e-5 a few steps later, the gradient norm steady."""
    import copy

    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    policy = nn.Sequential(nn.Embedding(32, 32), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 16))
    reference = copy.deepcopy(policy).requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    rewards = torch.rand(32, 16, generator=generator)
    losses = []
    with watch(policy, optimizer, every=8) as watcher:
        for _ in range(24):
            prompts = torch.randint(0, 32, (8,), generator=generator).repeat_interleave(16)
            logits = policy(prompts)
            actions = torch.multinomial(logits.detach().softmax(-1), 1, generator=generator).squeeze(1)
            r = rewards[prompts, actions].view(8, 16)
            advantage = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).view(-1)
            logp = logits.log_softmax(-1).gather(1, actions[:, None]).squeeze(1)
            ref_logp = reference(prompts).log_softmax(-1).gather(1, actions[:, None]).squeeze(1)
            kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
            loss = (-(torch.exp(logp - logp.detach()) * advantage) + 0.04 * kl).mean()
            watcher.observe(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(abs(float(loss.detach())))
    assert max(losses[1:8]) > 100 * losses[0]
    assert watcher.report() == []


def test_after_the_first_window_the_baseline_is_the_median_of_its_steps_all_of_them():
    """The first layer's output grows 13x from step 1 to 2 as SGD learns: the baseline after
    the first 8 steps is their median, not step 1 kept because step 2 was too far from it."""
    x, y = regression()
    model = fixed_head_net()
    stable = 2 / curvature(model, x)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5 * stable)
    with watch(model, optimizer, every=8) as watcher:
        train(model, optimizer, watcher, x, y, steps=40)
        assert watcher.findings == []
        optimizer.param_groups[0]["lr"] = 1.3 * stable
        train(model, optimizer, watcher, x, y, steps=40)
    outputs = [h["activations"]["0"] for h in watcher.history[:8]]
    assert outputs[1] > 10 * outputs[0]
    finding = watcher.report()[0]
    assert finding.code == "LG508"
    assert "(steps 1-8)" in finding.message and "(step 1)" not in finding.message
    assert "the output of '0'" not in finding.message  # it stayed near its median of steps 1-8


def test_a_module_rise_alone_is_not_divergence_and_stayed_near_means_within_2x():
    """Without an optimizer: the output grows 1,000x at step 2 and the loss 9x; no gradient
    norm. The loss did not corroborate the output's growth."""
    model = nn.Linear(2, 2)
    with watch(model) as watcher:
        for scale, loss in ((1.0, 1.0), (1000.0, 9.0)):
            with torch.no_grad():
                model.weight.fill_(scale)
                model.bias.zero_()
            model(torch.ones(1, 2))
            watcher.observe(torch.tensor(loss))
        model(torch.ones(1, 2))
    assert watcher.report() == []
    from labelguard.torch._watch import _Signals

    signals = _Signals(2, 4, 10.0, 2.0)
    for step, value in ((1, 1.0), (2, 9.0)):
        values = np.array([value, value])
        ratios = signals.ratios(values)
        signals.note(step, values)
        if step == 2:
            assert signals.change(0) == "1 (step 1) -> 9 at step 2 (9x)"
        signals.add(step, values, ratios)
