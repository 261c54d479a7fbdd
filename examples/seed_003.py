"""Seed 003 rebuilt on the CPU: Swin-Unet on a two-class dataset, labels [0, 1, 2].

The write-up: Swin-Unet trained on two foreground classes with ``num_classes=2`` (background
forgotten: 0, 1 and 2 are three classes) fails with a device-side assert; once that is fixed,
one slice of another resolution stops training with "stack expects each tensor to be equal
size", and a list file with stray characters names files that do not exist.

This script builds such a set (Synapse layout: ``train_npz/*.npz`` named by
``lists/train.txt``) in a temporary folder and runs, in order:

1. the training as the user ran it (``num_classes=2``): on the CPU the device assert is
   ``IndexError: Target 2 is out of bounds`` from the loss; ``labelguard explain`` on it;
2. ``labelguard.audit`` with ``num_classes=2``: LG201 (value 2 outside [0, 2), the hint
   suggests counting the background), LG213 (the slice of another size, with the majority
   size) and LG004 (the list line with a trailing space and a CR);
3. the training with ``num_classes=3``, reaching the odd slice: "stack expects each tensor to
   be equal size"; explain on it, then ``labelguard.torch.guard_collate`` naming the slice.

Run it: ``python examples/seed_003.py`` (a few seconds; nothing is written outside a
temporary folder).
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import labelguard
from labelguard.explain import explain
from labelguard.torch import SampleError, guard, guard_collate

ODD = "case0002_slice005"  # the slice left at 64x64 among 32x32 slices


def write_synapse(root: Path) -> Path:
    """16 slices of 32x32 with labels 0 (background), 1 and 2; one 64x64; a list whose one line
    ends with a space and a CR (an editor's leftovers)."""
    data, lists = root / "train_npz", root / "lists"
    data.mkdir(parents=True)
    lists.mkdir()
    rng = np.random.default_rng(3)
    names = []
    for i in range(16):
        name = f"case{i // 8 + 1:04d}_slice{i % 8:03d}"
        size = 64 if name == ODD else 32
        label = np.zeros((size, size), np.uint8)
        label[4:12, 4:14] = 1
        label[16:26, 10:20] = 2
        np.savez(data / f"{name}.npz", image=rng.random((size, size), dtype=np.float32), label=label)
        names.append(name)
    lines = [f"{name}\n" for name in names]
    lines[3] = f"{names[3]} \r\n"
    (lists / "train.txt").write_text("".join(lines), newline="")
    return root


class Synapse_dataset(Dataset):  # noqa: N801 - Swin-Unet's name
    def __init__(self, base_dir, list_dir, split):
        self.sample_list = open(os.path.join(list_dir, split + ".txt")).readlines()
        self.data_dir = base_dir

    def __len__(self):
        return len(self.sample_list)

    def __getitem__(self, idx):
        slice_name = self.sample_list[idx].strip()  # Swin-Unet strips "\n"; stripping all keeps this run going
        data = np.load(os.path.join(self.data_dir, slice_name + ".npz"))
        return {"image": torch.from_numpy(data["image"]).unsqueeze(0), "label": torch.from_numpy(data["label"])}


def train(dataset, num_classes: int, collate_fn=None) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, num_classes, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(dataset, batch_size=4, collate_fn=collate_fn) if collate_fn else DataLoader(dataset, 4)
    for batch in loader:
        loss = nn.functional.cross_entropy(model(batch["image"]), batch["label"].long())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def first_causes(failure: str) -> None:
    for cause in explain(failure).causes[:2]:
        print(f"  cause {cause.rank} ({cause.likelihood}): {cause.title}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="seed-003-") as folder:
        root = write_synapse(Path(folder) / "Synapse")
        dataset = Synapse_dataset(str(root / "train_npz"), str(root / "lists"), "train")

        print("== 1. training as the write-up ran it (num_classes=2)")
        try:
            train(dataset, num_classes=2)
            return 1
        except IndexError:
            failure = traceback.format_exc()
        print(failure.strip().splitlines()[-1])
        print("labelguard explain:")
        first_causes(failure)

        print("\n== 2. labelguard audit with num_classes=2")
        options = labelguard.AuditOptions(lists=(str(root / "lists" / "train.txt"),))
        report = labelguard.audit(str(root), spec={"num_classes": 2}, options=options)
        for code in ("LG201", "LG213", "LG004"):
            found = [f for f in report.findings if f.code == code]
            if found:
                where = f"{Path(found[0].path).name}: " if found[0].path else ""
                rest = len(found) - 1
                more = f" (and {rest:,} more such finding{'s' if rest > 1 else ''})" if rest else ""
                print(f"{code} {where}{found[0].message}{more}")
                if found[0].hint:
                    print(f"      hint: {found[0].hint}")

        print("\n== 3. training with num_classes=3, reaching the 64x64 slice")
        try:
            train(dataset, num_classes=3)
            return 1
        except RuntimeError:
            failure = traceback.format_exc()
        print(failure.strip().splitlines()[-1])
        print("labelguard explain:")
        first_causes(failure)
        try:
            train(guard(dataset, num_classes=3), num_classes=3, collate_fn=guard_collate())
            return 1
        except (SampleError, labelguard.LabelError) as error:
            print(f"guard_collate: {str(error).split(' Hint: ')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
