"""Seed 000 rebuilt on the CPU: a VOC detector, a stray annotation file and a scanned labels.txt.

The write-up: a 4-class VOC detection set (class names '0'..'3') trains for a while, then
stops with "device-side assert triggered" when the loader reaches an XML copied in from
another dataset, whose class is unknown. The fix suggested there scans every XML and writes
the names it finds to labels.txt, which then holds the stray name too ('5'), beside
``num_classes=4`` in the training config.

This script builds such a set in a temporary folder and runs, in order:

1. the training as the user ran it (class ids from the scanned labels.txt): on the CPU the
   device assert is ``IndexError: Target 4 is out of bounds`` from the loss;
2. ``labelguard explain`` on that error;
3. ``labelguard.audit`` with ``num_classes=4``: LG214 (the scanned list names a class past
   the count, '5', and the data uses it: the stray file's object);
4. the same training under ``labelguard.torch.guard``: the error names the sample, the XML
   file and the value before the loss runs; with the list fixed, a box drawn with its corners
   flipped is LG301 and the stray file's KeyError is recorded as LG001, each naming its XML.

Run it: ``python examples/seed_000.py`` (a few seconds; nothing is written outside a
temporary folder).
"""

from __future__ import annotations

import sys
import tempfile
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset

import labelguard
from labelguard.explain import explain
from labelguard.torch import SampleError, guard

CLASSES = ["0", "1", "2", "3"]  # the detector's classes, as in the write-up
STRAY = "000013"  # the XML copied in from another dataset


def write_voc(root: Path, flipped: bool = False) -> Path:
    """20 images of 32x24 with one object each; image 13 is the stray file (class '5'). With
    ``flipped``, image 6's box has xmin > xmax."""
    (root / "Annotations").mkdir(parents=True)
    (root / "JPEGImages").mkdir()
    (root / "ImageSets" / "Main").mkdir(parents=True)
    ids = [f"{i:06d}" for i in range(20)]
    for i, image_id in enumerate(ids):
        name = "5" if image_id == STRAY else CLASSES[i % 4]
        box = (20, 4, 8, 18) if flipped and i == 6 else (4, 4, 20, 18)
        (root / "Annotations" / f"{image_id}.xml").write_text(
            f"<annotation><filename>{image_id}.jpg</filename><size><width>32</width><height>24</height>"
            f"<depth>3</depth></size><object><name>{name}</name><bndbox><xmin>{box[0]}</xmin>"
            f"<ymin>{box[1]}</ymin><xmax>{box[2]}</xmax><ymax>{box[3]}</ymax></bndbox></object></annotation>\n")
        Image.new("RGB", (32, 24), (40 + 9 * i, 90, 160)).save(root / "JPEGImages" / f"{image_id}.jpg")
    (root / "ImageSets" / "Main" / "trainval.txt").write_text("".join(f"{i}\n" for i in ids))
    # The write-up's fix: every class name found in the XMLs, written to labels.txt.
    found = sorted({ET.parse(p).getroot().find("object/name").text for p in (root / "Annotations").glob("*.xml")})
    (root / "labels.txt").write_text("".join(f"{name}\n" for name in found))
    return root


class VOCDetection(Dataset):
    """The user's dataset: ids from ImageSets/Main, class index from labels.txt; returns the
    image and a torchvision-style target (boxes in pixels, labels)."""

    def __init__(self, root: Path):
        self.root = root
        names = (root / "labels.txt").read_text().split()
        self.class_to_ind = {name: i for i, name in enumerate(names)}
        ids = (root / "ImageSets" / "Main" / "trainval.txt").read_text().split()
        self.images = [str(root / "JPEGImages" / f"{i}.jpg") for i in ids]
        self.targets = [str(root / "Annotations" / f"{i}.xml") for i in ids]

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int):
        objects = ET.parse(self.targets[index]).getroot().iter("object")
        boxes, labels = [], []
        for obj in objects:
            boxes.append([float(obj.find(f"bndbox/{k}").text) for k in ("xmin", "ymin", "xmax", "ymax")])
            labels.append(self.class_to_ind[obj.find("name").text])
        image = torch.from_numpy(np.asarray(Image.open(self.images[index]), np.float32) / 255).permute(2, 0, 1)
        return image, {"boxes": torch.tensor(boxes), "labels": torch.tensor(labels)}


class TinyDetector(nn.Module):
    """One box and one class per image: enough for the loss to meet the labels."""

    def __init__(self, num_classes: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.cls = nn.Linear(8, num_classes)
        self.reg = nn.Linear(8, 4)

    def forward(self, images):
        features = self.body(images)
        return self.cls(features), self.reg(features)


def train(dataset, num_classes: int = 4, epochs: int = 1) -> None:
    torch.manual_seed(0)
    model = TinyDetector(num_classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(dataset, batch_size=4, collate_fn=lambda batch: tuple(zip(*batch)))
    for _ in range(epochs):
        for images, targets in loader:
            logits, boxes = model(torch.stack(images))
            labels = torch.cat([t["labels"][:1] for t in targets])
            box_targets = torch.stack([t["boxes"][0] for t in targets]) / 32
            loss = nn.functional.cross_entropy(logits, labels) + nn.functional.smooth_l1_loss(boxes, box_targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="seed-000-") as folder:
        root = write_voc(Path(folder) / "VOC")
        print(f"labels.txt written by scanning the XMLs: {(root / 'labels.txt').read_text().split()}")

        print("\n== 1. training as the write-up ran it (num_classes=4, ids from labels.txt)")
        try:
            train(VOCDetection(root))
            print("trained without an error")
            return 1
        except IndexError:
            failure = traceback.format_exc()
            print(failure.strip().splitlines()[-1])

        print("\n== 2. labelguard explain on that error")
        explanation = explain(failure)
        for cause in explanation.causes[:2]:
            print(f"cause {cause.rank} ({cause.likelihood}): {cause.title}")

        print("\n== 3. labelguard audit with num_classes=4")
        report = labelguard.audit(str(root), spec={"num_classes": 4})
        for finding in report.findings:
            if finding.code in ("LG214", "LG101"):
                print(f"{finding.code} {finding.path + ': ' if finding.path else ''}{finding.message}")

        print("\n== 4. the same training under labelguard.torch.guard")
        try:
            train(guard(VOCDetection(root), num_classes=4))
        except SampleError as error:
            values = ", ".join(map(str, error.values))
            print(f"{error.code} sample {error.index} ({Path(error.source).name}): values {values}")
        flipped = write_voc(Path(folder) / "VOC-flipped", flipped=True)
        (flipped / "labels.txt").write_text("".join(f"{name}\n" for name in CLASSES))
        keep = guard(VOCDetection(flipped), num_classes=4, on_error="skip")
        for index in range(len(keep)):
            try:
                keep[index]
            except KeyError:  # the stray file: its class is not in the fixed labels.txt
                continue
        for record in keep.records:
            print(f"skipped: {record.message.split(' Hint: ')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
