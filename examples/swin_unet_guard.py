"""A minimal Swin-Unet style training script with labelguard.torch in it.

The dataset is Swin-Unet's ``Synapse_dataset`` (``lists/train.txt`` naming ``.npz`` slices
under ``train_npz/``), unchanged; the lines marked ``labelguard`` are all it takes:

* ``guard(...)`` checks every slice's label in the DataLoader workers and raises a
  LabelError naming the file and the value (or skips and quarantines it);
* ``preflight(...)`` runs two batches on the CPU before training and compares the head
  with num_classes and the labels;
* ``audit_optimizer`` and ``trace_nonfinite`` catch frozen parameters and the first NaN.

Run it on your data::

    python examples/swin_unet_guard.py --root_path data/Synapse/train_npz --list_dir lists/lists_Synapse

or on a generated demo set with one bad slice (label value 9 with num_classes=9)::

    python examples/swin_unet_guard.py                      # stops at the bad slice, naming it
    python examples/swin_unet_guard.py --on_error skip      # trains on, prints the skipped slice
    python examples/swin_unet_guard.py --on_error skip --quarantine bad.jsonl   # ...and lists it in bad.jsonl
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from labelguard import LabelError
from labelguard.torch import audit_optimizer, guard, preflight, trace_nonfinite


class Synapse_dataset(Dataset):  # noqa: N801 - Swin-Unet's name
    def __init__(self, base_dir, list_dir, split, transform=None):
        self.transform = transform
        self.split = split
        self.sample_list = open(os.path.join(list_dir, self.split + ".txt")).readlines()
        self.data_dir = base_dir

    def __len__(self):
        return len(self.sample_list)

    def __getitem__(self, idx):
        slice_name = self.sample_list[idx].strip("\n")
        data = np.load(os.path.join(self.data_dir, slice_name + ".npz"))
        sample = {"image": data["image"], "label": data["label"]}
        if self.transform:
            sample = self.transform(sample)
        sample["case_name"] = slice_name
        return sample


class RandomGenerator:
    """Swin-Unet's augmentation, reduced to a flip: image (1, H, W), label float32 (H, W)."""

    def __call__(self, sample):
        image, label = sample["image"], sample["label"]
        if np.random.rand() > 0.5:
            image, label = np.flip(image, 1), np.flip(label, 1)
        return {
            "image": torch.from_numpy(image.astype(np.float32).copy()).unsqueeze(0),
            "label": torch.from_numpy(label.astype(np.float32).copy()),
        }


class TinyUNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(32, 16, 3, padding=1), nn.ReLU())
        self.output = nn.Conv2d(16, num_classes, 1)

    def forward(self, x):
        return self.output(self.up(self.down(x)))


class DiceLoss(nn.Module):
    """Swin-Unet's DiceLoss: one-hot by comparison, so values past num_classes pass silently."""

    def __init__(self, n_classes):
        super().__init__()
        self.n_classes = n_classes

    def forward(self, inputs, target):
        inputs = torch.softmax(inputs, dim=1)
        loss = 0.0
        for i in range(self.n_classes):
            score, truth = inputs[:, i], (target == i).float()
            intersect = (score * truth).sum()
            loss += 1 - (2 * intersect + 1e-5) / (score.sum() + truth.sum() + 1e-5)
        return loss / self.n_classes


def write_demo(root: Path, num_classes: int, slices: int = 24, size: int = 64) -> tuple[Path, Path]:
    """Synapse-style slices with blob labels; slice 17 carries the value num_classes."""
    data, lists = root / "train_npz", root / "lists"
    data.mkdir(parents=True)
    lists.mkdir()
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size] / size
    names = []
    for i in range(slices):
        label = np.zeros((size, size), np.uint8)
        for value in range(1, num_classes):
            cy, cx, r = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.05, 0.15)
            label[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = value
        if i == 17:
            label[:10, :10] = num_classes  # the slice that would stop a GPU run
        name = f"case{i // 8 + 1:04d}_slice{i % 8:03d}"
        np.savez(data / f"{name}.npz", image=rng.random((size, size), dtype=np.float32), label=label)
        names.append(name)
    (lists / "train.txt").write_text("\n".join(names) + "\n")
    return data, lists


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root_path", help="folder of the .npz slices (default: a generated demo set)")
    parser.add_argument("--list_dir", help="folder holding train.txt")
    parser.add_argument("--num_classes", type=int, default=9)
    parser.add_argument("--max_epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--on_error", choices=("raise", "skip", "warn"), default="raise")
    parser.add_argument("--quarantine", help="JSON-lines file of the bad samples (default: printed only)")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    workdir = None
    if args.root_path is None:
        workdir = tempfile.TemporaryDirectory(prefix="swin-unet-demo-")
        root_path, list_dir = write_demo(Path(workdir.name), args.num_classes)
    else:
        root_path, list_dir = Path(args.root_path), Path(args.list_dir)

    db_train = Synapse_dataset(str(root_path), str(list_dir), "train", transform=RandomGenerator())
    db_train = guard(db_train, num_classes=args.num_classes,  # labelguard
                     on_error=args.on_error, quarantine=args.quarantine)
    loader = DataLoader(db_train, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)

    model = TinyUNet(args.num_classes)
    ce_loss, dice_loss = nn.CrossEntropyLoss(), DiceLoss(args.num_classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    for finding in audit_optimizer(model, optimizer):  # labelguard
        print(f"{finding.code}: {finding.message}")

    try:
        report = preflight(model, ce_loss, loader, num_classes=args.num_classes)  # labelguard
        print(report)
        with trace_nonfinite(model) as tracer:  # labelguard
            for epoch in range(args.max_epochs):
                for step, batch in enumerate(loader):
                    image, label = batch["image"], batch["label"]
                    outputs = model(image)
                    loss = 0.4 * ce_loss(outputs, label.long()) + 0.6 * dice_loss(outputs, label)
                    tracer.check(loss)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                print(f"epoch {epoch}: {step + 1} steps, last loss {loss.item():.4f}")
    except LabelError as error:
        raise SystemExit(f"stopped: {error}") from error
    finally:
        if workdir is not None:
            workdir.cleanup()
    for record in db_train.records:
        print(f"{record.action}: sample {record.index} ({record.source}) {record.code} values {record.values}")
    if db_train.records and args.quarantine:
        print(f"quarantine: {args.quarantine}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
