"""Dataset classes shaped like the ones real projects use, over files the builders write."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset, IterableDataset


class SynapseDataset(Dataset):
    """Swin-Unet's ``Synapse_dataset``: names in ``lists/<split>.txt``, ``<data_dir>/<name>.npz``
    holding ``image`` and ``label``; dict samples; ``sample_list`` and ``data_dir`` attributes."""

    def __init__(self, base_dir, list_dir, split="train", transform=None):
        self.transform = transform
        self.split = split
        self.sample_list = open(os.path.join(list_dir, split + ".txt")).readlines()
        self.data_dir = str(base_dir)

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


def synapse_to_tensors(sample):
    """Swin-Unet's RandomGenerator without the random part: image (1, H, W), label float32."""
    image, label = sample["image"], sample["label"]
    return {
        "image": torch.from_numpy(image.astype(np.float32)).unsqueeze(0),
        "label": torch.from_numpy(label.astype(np.float32)),
    }


class VOCStyleSegmentation(Dataset):
    """torchvision's VOCSegmentation layout and attributes (``images``, ``masks``), returning
    (image tensor, mask tensor) pairs; a mask's 255 border is kept."""

    def __init__(self, root):
        root = Path(root)
        names = (root / "ImageSets" / "Segmentation" / "train.txt").read_text().split()
        self.images = [str(root / "JPEGImages" / f"{n}.jpg") for n in names]
        self.masks = [str(root / "SegmentationClass" / f"{n}.png") for n in names]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = np.asarray(Image.open(self.images[index]).convert("RGB"), dtype=np.float32) / 255
        mask = np.asarray(Image.open(self.masks[index]), dtype=np.int64)
        return torch.from_numpy(image).permute(2, 0, 1), torch.from_numpy(mask)


class ImageFolderStyle(Dataset):
    """torchvision's ImageFolder attributes: ``samples`` of (path, class index), ``classes``."""

    def __init__(self, root, target_offset=0):
        root = Path(root)
        self.classes = sorted(p.name for p in root.iterdir() if p.is_dir())
        self.samples = [
            (str(path), index + target_offset)
            for index, name in enumerate(self.classes)
            for path in sorted((root / name).glob("*.png"))
        ]
        self.targets = [t for _, t in self.samples]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        image = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255
        return torch.from_numpy(image).permute(2, 0, 1), target


class NpzStream(IterableDataset):
    """An iterable dataset over npz files yielding dicts that name their file; shards the
    files between DataLoader workers."""

    def __init__(self, paths):
        self.paths = [str(p) for p in paths]

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        paths = self.paths if info is None else self.paths[info.id::info.num_workers]
        for path in paths:
            data = np.load(path)
            yield {"image": torch.from_numpy(data["image"]), "label": torch.from_numpy(data["label"]),
                   "path": path}


class TargetStream(IterableDataset):
    """(image, target) pairs over the given targets, shared out between DataLoader workers
    (worker k takes every num_workers-th one from the k-th); they name no file."""

    def __init__(self, targets):
        self.targets = list(targets)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        targets = self.targets if info is None else self.targets[info.id::info.num_workers]
        for target in targets:
            yield torch.zeros(2), target


class EndlessStream(IterableDataset):
    """An endless stream of (image, target) pairs, every one with the same target."""

    def __init__(self, target):
        self.target = target

    def __iter__(self):
        while True:
            yield torch.zeros(2), self.target


def drain_loader(loader):
    """Every batch of ``loader``. When it raises, its workers and queues are shut down before
    the error goes on.

    The iterator is shut down here, not left to the garbage collector: the error's traceback
    holds it in a reference cycle, and an iterator that the cyclic collector destroys starts a
    queue feeder thread inside its finalizer while the collector closes that queue's pipe. The
    thread then writes to and closes whatever later opens those file descriptor numbers, so a
    later test's DataLoader breaks at random (a SystemError or "semaphore or lock released too
    many times" in a worker, EBADF in a QueueFeederThread, an abort in torch's MapAllocator).
    No worker is killed first: a worker killed while it holds the lock of the iterator's
    shared stop event (every worker takes it to read the event) leaves that lock held for
    ever, and the shutdown's own ``set()`` of the event then waits on it without end.
    """
    iterator = iter(loader)
    try:
        return list(iterator)
    except BaseException:
        shutdown = getattr(iterator, "_shutdown_workers", None)  # iterators with worker processes
        if shutdown is not None:
            shutdown()
        raise


def synapse_binary(sample):
    """Foreground/background float masks shaped like a one-channel output: (1, H, W)."""
    tensors = synapse_to_tensors(sample)
    return {"image": tensors["image"], "label": (tensors["label"] > 0).float().unsqueeze(0)}


def synapse_reduce_zero_label(sample):
    """mmsegmentation's reduce_zero_label applied by the pipeline: 0 -> 255, v -> v - 1."""
    tensors = synapse_to_tensors(sample)
    label = tensors["label"].long()
    reduced = label - 1
    reduced[label == 0] = 255
    return {"image": tensors["image"], "label": reduced}


class SSDVOCDetection(Dataset):
    """SSD.pytorch's VOCDetection: ``ids`` of (VOC root, image id) tuples read from
    ``ImageSets/Main/<split>.txt``, files found through the path templates ``_annopath`` and
    ``_imgpath``; each XML object's name is looked up in the class list (an unknown name
    raises KeyError, as its VOCAnnotationTransform does). Returns (image, target) with the
    target one row (xmin, ymin, xmax, ymax, class index) per object."""

    def __init__(self, root, classes, split="trainval"):
        import xml.etree.ElementTree as ET

        self._parse = ET.parse
        self.class_to_ind = {name: i for i, name in enumerate(classes)}
        self._annopath = os.path.join("%s", "Annotations", "%s.xml")
        self._imgpath = os.path.join("%s", "JPEGImages", "%s.jpg")
        self.ids = [(str(root), line.strip())
                    for line in open(os.path.join(root, "ImageSets", "Main", split + ".txt"))]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        img_id = self.ids[index]
        tree = self._parse(self._annopath % img_id).getroot()
        rows = []
        for obj in tree.iter("object"):
            box = [float(obj.find("bndbox").find(k).text) for k in ("xmin", "ymin", "xmax", "ymax")]
            rows.append(box + [self.class_to_ind[obj.find("name").text.strip()]])
        image = np.asarray(Image.open(self._imgpath % img_id), dtype=np.float32) / 255
        return torch.from_numpy(image).permute(2, 0, 1), torch.tensor(rows)


class TorchvisionVOCDetection(Dataset):
    """A VOC detection dataset as torchvision's reference scripts feed a detector: the image as
    a float (3, H, W) tensor, the target a dict of ``boxes`` (corners in pixels, float32) and
    ``labels`` (int64, 1-based: 0 is the background of torchvision's detectors), read from
    ``Annotations/<id>.xml`` for the ids of ``ImageSets/Main/<split>.txt``; ``images`` and
    ``targets`` name each sample's files, as in torchvision's VOCDetection."""

    def __init__(self, root, classes, split="trainval"):
        import xml.etree.ElementTree as ET

        self._parse = ET.parse
        self.class_to_ind = {name: i + 1 for i, name in enumerate(classes)}
        ids = [line.strip() for line in open(os.path.join(root, "ImageSets", "Main", split + ".txt"))]
        self.targets = [os.path.join(root, "Annotations", f"{i}.xml") for i in ids]
        self.images = [os.path.join(root, "JPEGImages", f"{i}.jpg") for i in ids]

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        tree = self._parse(self.targets[index]).getroot()
        boxes, labels = [], []
        for obj in tree.iter("object"):
            boxes.append([float(obj.find("bndbox").find(k).text) for k in ("xmin", "ymin", "xmax", "ymax")])
            labels.append(self.class_to_ind[obj.find("name").text.strip()])
        image = np.asarray(Image.open(self.images[index]).convert("RGB"), dtype=np.float32) / 255
        return (torch.from_numpy(image).permute(2, 0, 1),
                {"boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
                 "labels": torch.tensor(labels, dtype=torch.int64)})


def detection_collate(batch):
    """torchvision's detection references' collate: a tuple of images and a tuple of targets."""
    return tuple(zip(*batch))
