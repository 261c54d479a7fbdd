"""Fixture builders for COCO JSON, ADE20K and classification datasets, in their real layouts.

Each builder writes real files into a folder (tiny real JPEGs for images) and returns
paths; nothing is mocked.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from PIL import Image

from builders import write_jpeg, write_png

# The 80 COCO categories with their official ids (1..90 with ten gaps).
COCO_NAMES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
    "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
    "scissors", "teddy bear", "hair drier", "toothbrush",
)
COCO_GAPS = (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)
COCO_IDS = tuple(i for i in range(1, 91) if i not in COCO_GAPS)


def coco_categories(names: Sequence[str] | None = None, ids: Sequence[int] | None = None) -> list[dict]:
    """COCO ``categories``: the official 80 by default, else ``names`` with ``ids`` (1.. by default)."""
    if names is None:
        names, ids = COCO_NAMES, COCO_IDS
    ids = ids if ids is not None else range(1, len(names) + 1)
    return [{"id": i, "name": n, "supercategory": ""} for i, n in zip(ids, names)]


def coco_image(image_id: int, file_name: str, width: int = 64, height: int = 48) -> dict:
    return {"id": image_id, "width": width, "height": height, "file_name": file_name, "license": 0}


def coco_box(ann_id: int, image_id: int, category_id, bbox: Sequence = (4, 4, 10, 8), **extra) -> dict:
    """An instance annotation with a bbox and its rectangle as polygon segmentation."""
    ann = {"id": ann_id, "image_id": image_id, "category_id": category_id, "bbox": list(bbox),
           "iscrowd": 0, "area": 0.0}
    if "segmentation" not in extra and len(bbox) == 4 and all(isinstance(v, (int, float)) for v in bbox):
        x, y, w, h = bbox
        ann["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
        ann["area"] = float(w * h)
    ann.update(extra)
    return ann


def coco_document(images: Iterable[dict], annotations: Iterable[dict], categories: Iterable[dict],
                  order: Sequence[str] = ("info", "licenses", "categories", "images", "annotations")) -> dict:
    parts = {"info": {"description": "test", "version": "1.0", "year": 2024},
             "licenses": [{"id": 0, "name": "", "url": ""}],
             "images": list(images), "annotations": list(annotations), "categories": list(categories)}
    return {key: parts[key] for key in order}


def write_json(path: Path, document, indent: int | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=indent), encoding="utf-8")
    return path


def write_image(path: Path, size: tuple[int, int] = (64, 48), seed: int = 0) -> Path:
    """A small real image (JPEG or PNG by extension) of noise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    fmt = "PNG" if path.suffix.lower() == ".png" else "JPEG"
    Image.fromarray(pixels).save(path, format=fmt)
    return path


def coco_dataset(root: Path, split: str = "train", n_images: int = 3, *,
                 categories: list[dict] | None = None, annotations: list[dict] | None = None,
                 images: list[dict] | None = None, layout: str = "datumaro", flavour: str = "instances",
                 write_images: bool = True, order: Sequence[str] | None = None, indent: int | None = None) -> Path:
    """A COCO dataset of one split; returns the JSON file.

    Layouts: ``datumaro`` (annotations/<flavour>_<split>.json, images/<split>/), ``official``
    (annotations/instances_<split>2017.json, <split>2017/), ``mmdet`` (annotations/..., <split>/),
    ``roboflow`` (<split>/_annotations.coco.json with the images beside it), ``flat``
    (annotations.json with the images beside it).

    By default every image gets one annotation per category in turn (so every category is used
    when ``n_images`` >= the number of categories).
    """
    root = Path(root)
    categories = categories if categories is not None else coco_categories(["cat", "dog", "bird"])
    if images is None:
        images = [coco_image(i + 1, f"{i + 1:06d}.jpg") for i in range(n_images)]
    if annotations is None:
        ids = [c["id"] for c in categories]
        annotations = [coco_box(i + 1, img["id"], ids[i % len(ids)]) for i, img in enumerate(images)]
    if layout == "datumaro":
        json_path, image_dir = root / "annotations" / f"{flavour}_{split}.json", root / "images" / split
    elif layout == "official":
        json_path, image_dir = root / "annotations" / f"{flavour}_{split}2017.json", root / f"{split}2017"
    elif layout == "mmdet":
        json_path, image_dir = root / "annotations" / f"{flavour}_{split}.json", root / split
    elif layout == "roboflow":
        json_path, image_dir = root / split / "_annotations.coco.json", root / split
    elif layout == "flat":
        json_path, image_dir = root / "annotations.json", root
    else:
        raise ValueError(layout)
    document = coco_document(images, annotations, categories, **({"order": order} if order else {}))
    write_json(json_path, document, indent)
    if write_images:
        for k, image in enumerate(images):
            name = image.get("file_name")
            if isinstance(name, str) and name and not name.startswith(("/", "..")):
                write_image(image_dir / name, (int(image.get("width", 64)), int(image.get("height", 48))), seed=k)
    return json_path


# ---- classification ----------------------------------------------------------------------

def write_table(path: Path, rows: Iterable[Sequence], header: Sequence[str] | None = None,
                separator: str = ",", line_end: str = "\n") -> Path:
    """A CSV/TSV/txt table; cells are written as given (no quoting)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    if header is not None:
        lines.append(separator.join(header))
    lines.extend(separator.join(str(c) for c in row) for row in rows)
    path.write_text(line_end.join(lines) + line_end, encoding="utf-8")
    return path


def classification_csv(root: Path, labels: Mapping[str, str], *, header=("image_name", "label_name"),
                       name: str = "train.csv", image_dir: str = "images", separator: str = ",",
                       write_images: bool = True, missing: Iterable[str] = ()) -> Path:
    """A table ``file,label`` with the images in ``root/image_dir``; ``missing`` files are not written."""
    root = Path(root)
    skip = set(missing)
    if write_images:
        for k, file in enumerate(labels):
            if file not in skip:
                write_image(root / image_dir / file, seed=k)
    return write_table(root / name, list(labels.items()), header=header, separator=separator)


def imagenet_txt(root: Path, entries: Sequence[tuple[str, int]], synsets: Sequence[str] | None,
                 *, write_images: bool = True, list_name: str = "train.txt") -> Path:
    """ImageNet-style ``train.txt`` ("path id" lines), ``synsets.txt`` and ``images/``."""
    root = Path(root)
    if synsets is not None:
        (root).mkdir(parents=True, exist_ok=True)
        (root / "synsets.txt").write_text("\n".join(synsets) + "\n", encoding="utf-8")
    if write_images:
        for k, (file, _) in enumerate(entries):
            write_image(root / "images" / file, seed=k)
    return write_table(root / list_name, entries, separator=" ")


def mnist_csv(path: Path, labels: Sequence, pixels: int = 784, seed: int = 0) -> Path:
    """MNIST CSV: no header, the label then ``pixels`` grey values per row."""
    rng = random.Random(seed)
    rows = [[label] + [rng.randint(0, 255) for _ in range(pixels)] for label in labels]
    return write_table(path, rows)


def imagefolder(root: Path, tree: Mapping[str, Mapping[str, int]] | Mapping[str, int], *,
                ext: str = ".jpg") -> Path:
    """``root/<split>/<class>/<n>.jpg`` from {split: {class: count}}, or ``root/<class>/...``
    from {class: count}."""
    root = Path(root)
    first = next(iter(tree.values()), None)
    splits = tree if isinstance(first, Mapping) else {"": tree}
    for split, classes in splits.items():
        for c, (name, count) in enumerate(classes.items()):
            folder = root / split / name if split else root / name
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(count):
                write_image(folder / f"{name.strip() or 'x'}_{k:03d}{ext}", (16, 16), seed=c * 100 + k)
    return root


# ---- ADE20K -----------------------------------------------------------------------------

def ade_color(index: int, instance: int = 1) -> tuple[int, int, int]:
    """The colour ADE20K writes for class ``index`` (instance number in B)."""
    return (index // 256) * 10, index % 256, instance


def write_ade20k(root, stem: str, classes: np.ndarray, parts: np.ndarray | None = None):
    """One ADE20K image as the dataset ships it: x.jpg, x.json, x_seg.png (+ x_parts_1.png and
    one instance mask per class in x/)."""
    folder = root / "training" / "street"
    h, w = classes.shape
    write_jpeg(folder / f"{stem}.jpg", np.full((h, w, 3), 128, np.uint8))
    seg = np.zeros((h, w, 3), np.uint8)
    for value in np.unique(classes):
        seg[classes == value] = ade_color(int(value)) if value else (0, 0, 0)
    write_png(folder / f"{stem}_seg.png", seg)
    objects = []
    for i, value in enumerate(v for v in np.unique(classes) if v):
        write_png(folder / stem / f"instance_{i:03d}_ADE_train_{stem}.png", (classes == value).astype(np.uint8))
        objects.append({"id": i, "name": f"class {value}", "name_ndx": int(value),
                        "instance_mask": f"{stem}/instance_{i:03d}_ADE_train_{stem}.png"})
    if parts is not None:
        part = np.zeros((h, w, 3), np.uint8)
        for value in np.unique(parts):
            part[parts == value] = ade_color(int(value)) if value else (0, 0, 0)
        write_png(folder / f"{stem}_parts_1.png", part)
    (folder / f"{stem}.json").write_text(json.dumps({"annotation": {"filename": f"{stem}.jpg", "object": objects}}))


def classes_map(values, shape=(12, 16)) -> np.ndarray:
    out = np.zeros(shape, np.int32)
    for i, value in enumerate(values):
        out[:, i * 3:(i + 1) * 3] = value
    return out
