"""Seed 002 rebuilt on the CPU: RCAN's MeanShift "frozen" by an attribute, then BCELoss fails.

The write-up: an RCAN super-resolution generator (modelA) feeds a discriminator whose last
layer is a sigmoid (modelB), trained with BCELoss. After a while training stops with
``Loss.cu: Assertion `input_val >= zero && input_val <= one` failed``, although a sigmoid
keeps its output in [0, 1]: the generator's output had become NaN. RCAN's MeanShift layers
set ``self.requires_grad = False`` (an attribute, which freezes nothing), and an optimizer
built over ``netG.parameters()`` trains them. Here the generator is trained in RCAN's 0..255
range (a pixel loss plus the discriminator's BCE) with SGD at a learning rate too high for
that range: it diverges to NaN within four steps (freezing the mean shifts properly does not
stop that divergence on its own; labelguard shows both faults).

This script builds such a pair of models and runs, in order:

1. the training: on the CPU the assertion is ``all elements of input should be between 0
   and 1`` from BCELoss; ``labelguard explain`` on it;
2. ``labelguard.torch.audit_optimizer``: LG507, the freeze that does nothing, by module;
3. the same training under ``watch`` and ``trace_nonfinite``: the divergence (LG508) and the
   first module whose output is not finite (LG502), before the loss fails;
4. ``guard(..., sizes=2)`` on the super-resolution pairs: targets twice the input's size by
   design are accepted, and a pair off that scale is named (LG206).

Run it: ``python examples/seed_002.py`` (a few seconds, on the CPU).
"""

from __future__ import annotations

import contextlib
import sys
import traceback

import torch
from torch import nn

from labelguard import LabelError
from labelguard.explain import explain
from labelguard.torch import SampleError, audit_optimizer, guard, trace_nonfinite, watch

STEPS = 60
LR = 1e-3


class MeanShift(nn.Conv2d):
    """RCAN's (EDSR's common.py) MeanShift as published: it "freezes" itself with an attribute."""

    def __init__(self, rgb_range=255, rgb_mean=(0.4488, 0.4371, 0.4040), sign=-1):
        super().__init__(3, 3, kernel_size=1)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.bias.data = sign * rgb_range * torch.Tensor(rgb_mean)
        self.requires_grad = False


class Generator(nn.Module):
    """RCAN's outline, shrunk: mean shifts around a head, a body and a x2 upsampler."""

    def __init__(self):
        super().__init__()
        self.sub_mean = MeanShift(sign=-1)
        self.head = nn.Conv2d(3, 8, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.tail = nn.Sequential(nn.Conv2d(8, 12, 3, padding=1), nn.PixelShuffle(2))
        self.add_mean = MeanShift(sign=1)

    def forward(self, x):
        x = self.head(self.sub_mean(x))
        return self.add_mean(self.tail(x + self.body(x)))


class Discriminator(nn.Module):
    """modelB: its last layer is a sigmoid, so its output is in [0, 1] while its input is finite."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1))

    def forward(self, x):
        return torch.sigmoid(self.features(x / 255))


def pairs(count: int = 8):
    """(low-resolution 12x12, high-resolution 24x24) pairs in 0..255, as RCAN's loader gives them."""
    generator = torch.Generator().manual_seed(2)
    return [(torch.rand(3, 12, 12, generator=generator) * 255, torch.rand(3, 24, 24, generator=generator) * 255)
            for _ in range(count)]


def train(guarded: bool = False, found: list | None = None) -> None:
    """Train the generator; ``guarded``: under labelguard's watch and trace_nonfinite (which
    raises LG502), watch's findings (LG508) added to ``found``."""
    torch.manual_seed(0)
    net_g, net_d = Generator(), Discriminator()
    optimizer = torch.optim.SGD(net_g.parameters(), lr=LR)  # the write-up's line: every parameter
    criterion = nn.BCELoss()
    low = torch.stack([x for x, _ in pairs()])
    high = torch.stack([y for _, y in pairs()])
    with contextlib.ExitStack() as stack:
        watcher = stack.enter_context(watch(net_g, optimizer)) if guarded else None
        tracer = stack.enter_context(trace_nonfinite(net_g)) if guarded else None
        try:
            for _ in range(STEPS):
                fake = net_g(low)
                score = net_d(fake)
                loss = nn.functional.mse_loss(fake, high) + criterion(score, torch.ones_like(score))
                if tracer is not None:
                    tracer.check(loss)
                if watcher is not None:
                    watcher.observe(loss)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        finally:
            if watcher is not None and found is not None:
                found.extend(watcher.report())


def main() -> int:
    print("== 1. training over every parameter, BCELoss after a sigmoid")
    try:
        train()
        print("trained without an error")
        return 1
    except RuntimeError:
        failure = traceback.format_exc()
    print(failure.strip().splitlines()[-1])
    print("labelguard explain:")
    for cause in explain(failure).causes[:3]:
        print(f"  cause {cause.rank} ({cause.likelihood}): {cause.title}")

    print("\n== 2. labelguard.torch.audit_optimizer")
    torch.manual_seed(0)
    net_g = Generator()
    for finding in audit_optimizer(net_g, torch.optim.SGD(net_g.parameters(), lr=LR)):
        print(f"{finding.code}: {finding.message}")

    print("\n== 3. the same training under watch and trace_nonfinite")
    found: list = []
    try:
        train(guarded=True, found=found)
    except LabelError as error:
        print(f"trace_nonfinite: {str(error).split(' Hint: ')[0]}")
    except RuntimeError as error:
        print(f"not caught before the loss: {error}")
    for finding in found:
        print(f"watch: {finding.code} {finding.message.split('. Optimizer')[0]}")

    print("\n== 4. guard(..., sizes=2) on the super-resolution pairs")
    data = pairs()
    checked = guard(data, input_range=(0, 255), sizes=2)
    print(f"{len([checked[i] for i in range(len(checked))])} pairs of 12x12 -> 24x24 accepted")
    data[5] = (data[5][0], torch.rand(3, 36, 36) * 255)
    checked = guard(data, input_range=(0, 255), sizes=2)
    try:
        for index in range(len(checked)):
            checked[index]
    except SampleError as error:
        print(str(error).split(" Hint: ")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
