"""A torchvision-style segmentation training script (Pascal VOC layout) with labelguard.torch.

VOC masks outline every object with 255 ("void"); the loss must ignore it. Here the loss is
``CrossEntropyLoss(ignore_index=255)`` and ``guard(..., loss=criterion)`` reads the ignore
index from it, so 255 passes and any other value past the 21 classes stops the run with the
mask's file name. ``checked(criterion)`` does the same check on the batch right before the
loss (on a GPU: one reduction and one sync per step), and ``collate`` names the two images
when a batch cannot be stacked.

Uses ``torchvision.datasets.VOCSegmentation`` when torchvision is installed, otherwise a
stand-in with the same attributes (``images``, ``masks``) reading the same layout.

Run it on VOC::

    python examples/torchvision_guard.py --root data/VOC   # holding VOCdevkit/VOC2012

or on a generated demo tree with one mask holding the value 21::

    python examples/torchvision_guard.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset

from labelguard import LabelError
from labelguard.torch import checked, collate, guard, preflight

NUM_CLASSES = 21  # VOC: background + 20 classes; 255 is "void"


def to_tensors(image, mask):
    """torchvision's ToTensor + PILToTensor for the (image, mask) pair, without torchvision."""
    image = torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32) / 255).permute(2, 0, 1)
    return image, torch.from_numpy(np.asarray(mask, dtype=np.int64))


class VOCSegmentationStandIn(Dataset):
    """torchvision.datasets.VOCSegmentation's layout and attributes."""

    def __init__(self, root, year="2012", image_set="train", transforms=None):
        base = Path(root) / "VOCdevkit" / f"VOC{year}"
        names = (base / "ImageSets" / "Segmentation" / f"{image_set}.txt").read_text().split()
        self.images = [str(base / "JPEGImages" / f"{n}.jpg") for n in names]
        self.masks = [str(base / "SegmentationClass" / f"{n}.png") for n in names]
        self.transforms = transforms

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image, mask = Image.open(self.images[index]), Image.open(self.masks[index])
        return self.transforms(image, mask) if self.transforms else (image, mask)


def voc_segmentation(root: Path):
    try:
        from torchvision.datasets import VOCSegmentation
    except ImportError:
        VOCSegmentation = VOCSegmentationStandIn
    return VOCSegmentation(str(root), year="2012", image_set="train", transforms=to_tensors)


def write_demo(root: Path, count: int = 16, size: int = 48) -> None:
    """A VOC2012 tree: palette masks with 255 outlines; mask 2007_000011 holds 21 in a corner."""
    base = root / "VOCdevkit" / "VOC2012"
    for folder in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (base / folder).mkdir(parents=True)
    palette = [c for i in range(256) for c in ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256)]
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size]
    names = []
    for i in range(count):
        name = f"2007_{i:06d}"
        mask = np.zeros((size, size), np.uint8)
        cy, cx, r = rng.integers(12, size - 12, 2).tolist() + [int(rng.integers(6, 12))]
        disc = (yy - cy) ** 2 + (xx - cx) ** 2
        mask[disc < r * r] = int(rng.integers(1, NUM_CLASSES))
        mask[(disc >= (r - 1) ** 2) & (disc < (r + 1) ** 2)] = 255  # the void outline
        if i == 11:
            mask[:4, :4] = NUM_CLASSES
        image = Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8))
        image.save(base / "JPEGImages" / f"{name}.jpg", quality=90)
        indexed = Image.fromarray(mask, mode="P")
        indexed.putpalette(palette)
        indexed.save(base / "SegmentationClass" / f"{name}.png")
        names.append(name)
    (base / "ImageSets" / "Segmentation" / "train.txt").write_text("\n".join(names) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", help="folder holding VOCdevkit/ (default: a generated demo tree)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    with tempfile.TemporaryDirectory(prefix="voc-demo-") as tmp:
        root = Path(args.root) if args.root else Path(tmp)
        if args.root is None:
            write_demo(root)
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, NUM_CLASSES, 1))
        criterion = nn.CrossEntropyLoss(ignore_index=255)
        train_set = guard(voc_segmentation(root), num_classes=NUM_CLASSES, loss=criterion)
        loader = DataLoader(train_set, batch_size=4, shuffle=True, num_workers=args.num_workers,
                            collate_fn=collate)
        loss_fn = checked(criterion)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        try:
            print(preflight(model, criterion, loader, num_classes=NUM_CLASSES))
            for epoch in range(args.epochs):
                for images, masks in loader:
                    loss = loss_fn(model(images), masks)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                print(f"epoch {epoch}: last loss {loss.item():.4f}")
        except LabelError as error:
            raise SystemExit(f"stopped: {error}") from error
    return 0


if __name__ == "__main__":
    sys.exit(main())
