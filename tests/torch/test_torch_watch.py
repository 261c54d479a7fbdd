"""watch(model, optimizer): divergence seen before the NaN (LG508), on real training loops."""

import logging

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from builders import swin_unet_dataset  # noqa: E402
from labelguard import UsageError  # noqa: E402
from labelguard.torch import DivergenceWatch, guard, watch  # noqa: E402
from torch_datasets import SynapseDataset, synapse_to_tensors  # noqa: E402


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
    assert message.startswith("training is diverging (steps ")
    assert "the output of '0' (Linear) grew from max |x| " in message
    assert "the first module in the forward to grow past " in message
    assert "gradient norm " in message and "loss " in message
    assert f"Optimizer SGD: lr={lr:.4g}, momentum=0" in message
    assert f"lr={float(f'{lr:.4g}') / 10:g} instead of {lr:.4g}" in finding.hint
    assert "clip_grad_norm_" in finding.hint
    assert "LG508 training is diverging" in caplog.text
    assert [h["steps"] for h in watcher.history[:2]] == [(1, 8), (9, 16)]


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
    assert len(watcher.history) == 3
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
    assert "betas=(0.5, 0.999) differs from Adam's default (0.9, 0.999), a safer start" in _lower_the_step(optimizer, unusual)
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
    assert [h["steps"] for h in watcher.history] == [(1, 2), (3, 4), (5, 5)]
    assert watcher.history[0]["grad_norm"] is None
    with pytest.raises(UsageError, match="growth must be above 1"):
        watch(model, growth=1)
    with pytest.raises(UsageError, match="every and sample_every must be at least 1"):
        watch(model, every=0)
    with pytest.raises(UsageError, match="names 'head', not modules of Sequential"):
        watch(model, modules=["head"])
