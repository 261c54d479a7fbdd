"""Models shaped like the ones real projects train, for the training-side tests."""

from __future__ import annotations

import torch
from torch import nn


class RCANMeanShift(nn.Conv2d):
    """RCAN's (EDSR's common.py) MeanShift as published: it "freezes" itself with an attribute."""

    def __init__(self, rgb_range=255, rgb_mean=(0.4488, 0.4371, 0.4040), rgb_std=(1.0, 1.0, 1.0), sign=-1):
        super().__init__(3, 3, kernel_size=1)
        std = torch.Tensor(rgb_std)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.weight.data.div_(std.view(3, 1, 1, 1))
        self.bias.data = sign * rgb_range * torch.Tensor(rgb_mean)
        self.bias.data.div_(std)
        self.requires_grad = False


class RCANWithAttributeFreeze(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub_mean = RCANMeanShift(sign=-1)
        self.body = nn.Conv2d(3, 3, 3, padding=1)
        self.add_mean = RCANMeanShift(sign=1)

    def forward(self, x):
        return self.add_mean(self.body(self.sub_mean(x)))

