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


class RCANLike(nn.Module):
    """RCAN's mean shifts around a body; ``mean_shift`` is the class of the shifts (RCAN's
    own, which freezes nothing, by default)."""

    def __init__(self, mean_shift=RCANMeanShift):
        super().__init__()
        self.sub_mean = mean_shift(sign=-1)
        self.body = nn.Conv2d(3, 3, 3, padding=1)
        self.add_mean = mean_shift(sign=1)

    def forward(self, x):
        return self.add_mean(self.body(self.sub_mean(x)))



class SwinUnetDiceLoss(nn.Module):
    """A Dice loss shaped like Swin-Unet's ``DiceLoss(n_classes)``: it one-hot encodes the
    target by comparing it with each class in turn (a bad label gives an all-zero row, no
    error) and takes ``(inputs, target, weight=None, softmax=False)``."""

    def __init__(self, n_classes):
        super().__init__()
        self.n_classes = n_classes

    def forward(self, inputs, target, weight=None, softmax=False):
        if softmax:
            inputs = torch.softmax(inputs, dim=1)
        one_hot = torch.stack([(target == c).float() for c in range(self.n_classes)], dim=1)
        weight = weight or [1.0] * self.n_classes
        total = 0.0
        for c in range(self.n_classes):
            overlap = (inputs[:, c] * one_hot[:, c]).sum()
            union = inputs[:, c].square().sum() + one_hot[:, c].square().sum()
            total = total + (1 - (2 * overlap + 1e-5) / (union + 1e-5)) * weight[c]
        return total / self.n_classes


class RCANLikeGenerator(nn.Module):
    """RCAN's outline: MeanShift (frozen the published way: an attribute), a head conv, a body
    of convs with a long skip, a tail conv, MeanShift back; images in 0..255."""

    def __init__(self, channels=8):
        super().__init__()
        self.sub_mean = RCANMeanShift(sign=-1)
        self.head = nn.Conv2d(3, channels, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1),
                                  nn.Conv2d(channels, channels, 3, padding=1))
        self.tail = nn.Conv2d(channels, 3, 3, padding=1)
        self.add_mean = RCANMeanShift(sign=1)

    def forward(self, x):
        features = self.head(self.sub_mean(x))
        return self.add_mean(self.tail(self.body(features) + features))
