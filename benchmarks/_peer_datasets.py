"""The two datasets of ``bench_peers.py``, written with their planted faults: a YOLO detection
dataset (JPEG photos-like images, ``data.yaml``) and an nnU-Net v2 raw dataset (``.nii.gz``
volumes, ``dataset.json``). Each fault has an id, a description and the files that carry it: a
tool detects the fault when it reports one of those files."""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

YOLO_CLASSES = ("person", "bicycle", "car", "motorcycle", "bus", "truck", "traffic light", "stop sign", "bench",
                "dog")
NNUNET_LABELS = {"background": 0, "liver": 1, "tumour": 2}
NNUNET_NAME = "Dataset001_X"
VOLUME_SHAPE = (64, 64, 32)
SPACING = 2.5
ORIGIN = (-80.0, -80.0, -40.0)
# Base encodings: every image is one of them with its own JPEG comment, so each file has its own
# bytes (a content-keyed cache sees 5,000 files) for the price of a write.
BASE_IMAGES = 24


@dataclass(frozen=True)
class Fault:
    id: str
    description: str
    files: tuple[str, ...]  # relative to the dataset's root; one reported is the fault detected


# ---- YOLO ------------------------------------------------------------------------------------

def _photo_like(rng: np.random.Generator, width: int = 640, height: int = 480) -> np.ndarray:
    """Smooth light and shadow, a few flat objects with edges, sensor noise: an image whose JPEG
    costs to decode about what a photo's does."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.empty((height, width, 3), np.float32)
    for channel in range(3):
        fx, fy, phase = rng.uniform(0.002, 0.02, 2).tolist() + [rng.uniform(0, 6.3)]
        image[..., channel] = 128 + 70 * np.sin(xs * fx + phase) * np.cos(ys * fy)
    for _ in range(int(rng.integers(4, 10))):
        x0, y0 = int(rng.integers(0, width - 40)), int(rng.integers(0, height - 40))
        x1, y1 = x0 + int(rng.integers(20, 200)), y0 + int(rng.integers(20, 160))
        image[y0:y1, x0:x1] = rng.uniform(0, 255, 3)
    image += rng.normal(0, 12, image.shape).astype(np.float32)
    return np.clip(image, 0, 255).astype(np.uint8)


def _with_comment(jpeg: bytes, text: str) -> bytes:
    payload = text.encode()
    return jpeg[:2] + b"\xff\xfe" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def _boxes(rng: random.Random, count: int) -> list[str]:
    rows = []
    for _ in range(count):
        width, height = rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4)
        x, y = rng.uniform(width / 2, 1 - width / 2), rng.uniform(height / 2, 1 - height / 2)
        rows.append(f"{rng.randrange(len(YOLO_CLASSES))} {x:.6f} {y:.6f} {width:.6f} {height:.6f}")
    return rows


def write_yolo(root: Path, count: int, seed: int = 0) -> list[Fault]:
    """``root/images/{train,val}``, ``root/labels/{train,val}`` (a tenth in val) and
    ``root/data.yaml``; the faults are planted in train (:func:`plant_yolo_faults`)."""
    rng, np_rng = random.Random(seed), np.random.default_rng(seed)
    bases = []
    for _ in range(min(BASE_IMAGES, count)):
        buffer = io.BytesIO()
        Image.fromarray(_photo_like(np_rng)).save(buffer, "JPEG", quality=90)
        bases.append(buffer.getvalue())
    val_count = max(1, count // 10)
    for split in ("train", "val"):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
    for index in range(count):
        split = "val" if index >= count - val_count else "train"
        stem = f"im_{index:06d}"
        (root / "images" / split / f"{stem}.jpg").write_bytes(_with_comment(bases[index % len(bases)], stem))
        (root / "labels" / split / f"{stem}.txt").write_text("\n".join(_boxes(rng, rng.randint(1, 6))) + "\n")
    names = "\n".join(f"  {index}: {name}" for index, name in enumerate(YOLO_CLASSES))
    (root / "data.yaml").write_text(f"path: .\ntrain: images/train\nval: images/val\nnames:\n{names}\n")
    return plant_yolo_faults(root)


def _png(width: int = 640, height: int = 480) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(_photo_like(np.random.default_rng(7), width, height)).save(buffer, "PNG")
    return buffer.getvalue()


def plant_yolo_faults(root: Path) -> list[Fault]:
    """Writes (again) the faulty files of train's first images: a peer may repair a file it
    reads (Ultralytics re-saves a JPEG without its end marker), so each round plants them anew."""
    images, labels = root / "images" / "train", root / "labels" / "train"
    faults: list[Fault] = []

    def image_fault(index: int, fault_id: str, description: str, data: bytes, suffix: str = ".jpg") -> None:
        stem = f"im_{index:06d}"
        for old in images.glob(f"{stem}.*"):
            old.unlink()
        (images / f"{stem}{suffix}").write_bytes(data)
        faults.append(Fault(fault_id, description, (f"images/train/{stem}{suffix}",)))

    def label_fault(index: int, fault_id: str, description: str, rows: list[str]) -> None:
        stem = f"im_{index:06d}"
        (labels / f"{stem}.txt").write_text("\n".join(rows) + "\n")
        faults.append(Fault(fault_id, description, (f"labels/train/{stem}.txt", f"images/train/{stem}.jpg")))

    good = (images / "im_000001.jpg").read_bytes()
    if not good.endswith(b"\xff\xd9"):  # a second round: im_000001 is never faulty
        raise RuntimeError(f"{images / 'im_000001.jpg'} is not a whole JPEG")
    png = _png()
    image_fault(2, "truncated-jpeg", "JPEG cut at 60% of its bytes (no FF D9 end marker)", good[:len(good) * 6 // 10])
    image_fault(3, "truncated-png", "PNG cut at half its bytes (no IEND)", png[:len(png) // 2], ".png")
    image_fault(4, "corrupt-jpeg-ffd9", "JPEG cut at 45% of its scan, FF D9 appended (ends like a whole JPEG)",
                good[:len(good) * 45 // 100] + b"\xff\xd9")
    image_fault(5, "empty-image", "image file of 0 bytes", b"")
    label_fault(6, "class-id-too-large", f"class id {len(YOLO_CLASSES)} with nc={len(YOLO_CLASSES)}",
                ["0 0.5 0.5 0.2 0.2", f"{len(YOLO_CLASSES)} 0.3 0.3 0.1 0.1"])
    label_fault(7, "negative-class-id", "class id -1", ["-1 0.5 0.5 0.2 0.2", "1 0.3 0.3 0.1 0.1"])
    label_fault(8, "coords-outside", "box x_center 1.3 and width 0.6 (outside [0, 1])",
                ["2 1.3 0.5 0.6 0.2", "1 0.3 0.3 0.1 0.1"])
    label_fault(9, "too-few-values", "a row of 4 values (class x y w)", ["3 0.5 0.5 0.2", "1 0.3 0.3 0.1 0.1"])
    label_fault(10, "duplicate-boxes", "the same box twice", ["4 0.5 0.5 0.2 0.2", "4 0.5 0.5 0.2 0.2"])
    orphan = labels / "orphan_000001.txt"
    orphan.write_text("0 0.5 0.5 0.2 0.2\n")
    faults.append(Fault("label-without-image", "label file with no image of its name",
                        ("labels/train/orphan_000001.txt",)))
    return faults


# ---- nnU-Net v2 ------------------------------------------------------------------------------

def _affine(spacing: float = SPACING, origin: tuple[float, float, float] = ORIGIN, flip: bool = False) -> np.ndarray:
    affine = np.diag([spacing, spacing, spacing, 1.0])
    affine[:3, 3] = origin
    if flip:
        affine[0, 0] = -spacing
    return affine


def _volume_pair(rng: np.random.Generator, shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    zz, yy, xx = np.meshgrid(*(np.arange(size) for size in shape), indexing="ij")
    centre = [rng.uniform(0.35, 0.65) * size for size in shape]
    radius = sum(((axis - middle) / size) ** 2 for axis, middle, size in zip((zz, yy, xx), centre, shape))
    label = np.zeros(shape, np.uint8)
    label[radius < 0.06] = 1
    label[radius < 0.01] = 2
    image = (label.astype(np.int16) * 120 - 200 + rng.normal(0, 30, shape)).astype(np.int16)
    return image, label


def _save_nifti(path: Path, array: np.ndarray, affine: np.ndarray) -> None:
    import nibabel as nib

    image = nib.Nifti1Image(array, affine)
    image.set_qform(affine, code=1)
    image.set_sform(affine, code=1)
    nib.save(image, str(path))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


# Cases 1-8 carry one fault each; the rest are whole.
NNUNET_FAULTS = {
    1: ("spacing-mismatch", f"label spacing 3.0 beside an image of spacing {SPACING}"),
    2: ("origin-mismatch", "label origin 10 mm off its image's"),
    3: ("direction-mismatch", "label's first axis flipped (direction differs)"),
    4: ("shape-mismatch", f"label of shape 64x64x30 beside an image of {'x'.join(map(str, VOLUME_SHAPE))}"),
    5: ("label-value-undeclared", f"label value 7, dataset.json declares {sorted(NNUNET_LABELS.values())}"),
    6: ("truncated-image", "image .nii.gz cut at half its bytes"),
    7: ("truncated-label", "label .nii.gz cut at half its bytes"),
    8: ("missing-label", "image without its label file"),
}


def nnunet_faults() -> list[Fault]:
    return [Fault(fault_id, description,
                  (f"labelsTr/case_{index:03d}.nii.gz", f"imagesTr/case_{index:03d}_0000.nii.gz"))
            for index, (fault_id, description) in NNUNET_FAULTS.items()]


def write_nnunet(parent: Path, count: int, seed: int = 0) -> Path:
    """``parent/Dataset001_X`` with ``count`` cases (at least 9) in imagesTr/labelsTr and its
    dataset.json, the faults of :data:`NNUNET_FAULTS` planted."""
    root = parent / NNUNET_NAME
    images, labels = root / "imagesTr", root / "labelsTr"
    images.mkdir(parents=True, exist_ok=True)
    labels.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for index in range(count):
        image, label = _volume_pair(rng, VOLUME_SHAPE)
        image_path, label_path = images / f"case_{index:03d}_0000.nii.gz", labels / f"case_{index:03d}.nii.gz"
        _save_nifti(image_path, image, _affine())
        kind = NNUNET_FAULTS.get(index, ("", ""))[0]
        label_affine = _affine(3.0 if kind == "spacing-mismatch" else SPACING,
                               (ORIGIN[0] + 10.0, *ORIGIN[1:]) if kind == "origin-mismatch" else ORIGIN,
                               flip=kind == "direction-mismatch")
        if kind == "shape-mismatch":
            label = label[:, :, :30]
        if kind == "label-value-undeclared":
            label[label == 2] = 7
        if kind != "missing-label":
            _save_nifti(label_path, np.ascontiguousarray(label), label_affine)
        if kind == "truncated-image":
            _truncate(image_path)
        if kind == "truncated-label":
            _truncate(label_path)
    (root / "dataset.json").write_text(json.dumps({
        "channel_names": {"0": "CT"}, "labels": NNUNET_LABELS, "numTraining": count, "file_ending": ".nii.gz",
        "name": NNUNET_NAME}, indent=2))
    return root


def remove_cases(root: Path, case_ids: set[str]) -> None:
    """Removes cases (image channels and label) and lowers dataset.json's numTraining to match:
    nnU-Net's check on the next copy then meets the faults left."""
    for case in case_ids:
        for path in [*(root / "imagesTr").glob(f"{case}_*.nii.gz"), root / "labelsTr" / f"{case}.nii.gz"]:
            path.unlink(missing_ok=True)
    described = json.loads((root / "dataset.json").read_text())
    described["numTraining"] = len(list((root / "imagesTr").glob("*_0000.nii.gz")))
    (root / "dataset.json").write_text(json.dumps(described, indent=2))


def copy_tree(source: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    return target


__all__ = ["Fault", "write_yolo", "plant_yolo_faults", "write_nnunet", "nnunet_faults", "remove_cases", "copy_tree",
           "YOLO_CLASSES", "NNUNET_LABELS", "NNUNET_NAME"]
