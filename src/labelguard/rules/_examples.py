"""Small annotation files for the rules' examples, written as the tools write them."""

from __future__ import annotations

import json
from typing import Iterable, Sequence

import numpy as np


def voc_xml(objects: Iterable[tuple[str, tuple[float, float, float, float]]], *,
            size: tuple[int, int] = (100, 80), filename: str | None = "a.jpg") -> str:
    """A LabelImg-style VOC annotation: ``objects`` are (name, (xmin, ymin, xmax, ymax))."""
    parts = ["<annotation>", "  <folder>JPEGImages</folder>"]
    if filename is not None:
        parts.append(f"  <filename>{filename}</filename>")
    parts.append(f"  <size><width>{size[0]}</width><height>{size[1]}</height><depth>3</depth></size>")
    for name, (xmin, ymin, xmax, ymax) in objects:
        parts += ["  <object>", f"    <name>{name}</name>", "    <difficult>0</difficult>",
                  f"    <bndbox><xmin>{xmin:g}</xmin><ymin>{ymin:g}</ymin><xmax>{xmax:g}</xmax>"
                  f"<ymax>{ymax:g}</ymax></bndbox>", "  </object>"]
    parts.append("</annotation>")
    return "\n".join(parts) + "\n"


def yolo_rows(rows: Iterable[Iterable[float]]) -> str:
    """A YOLO label file: one row per object, the class id first."""
    return "".join(" ".join(f"{v:g}" for v in row) + "\n" for row in rows)


def coco_json(annotations: Iterable[dict], *, categories: Iterable[tuple[int, str]] = ((1, "cat"), (2, "dog")),
              images: Iterable[tuple[int, str]] = ((1, "a.jpg"),), size: tuple[int, int] = (10, 8)) -> str:
    """A COCO instances file as exporters write it: ``images`` of one size, the given
    ``annotations`` (each a dict of ``id``, ``image_id``, ``category_id``, ``bbox``...) and
    ``categories`` as (id, name)."""
    return json.dumps({
        "info": {"description": "example"}, "licenses": [],
        "images": [{"id": i, "file_name": name, "width": size[0], "height": size[1]} for i, name in images],
        "annotations": [{"iscrowd": 0, "area": 1.0, **annotation} for annotation in annotations],
        "categories": [{"id": i, "name": name, "supercategory": ""} for i, name in categories],
    })


def coco_box(ann_id: int, category_id: int, bbox=(1, 1, 4, 4), image_id=1, **extra) -> dict:
    """One COCO annotation with its bbox [x, y, width, height]."""
    return {"id": ann_id, "image_id": image_id, "category_id": category_id, "bbox": list(bbox), **extra}


def csv_table(rows: Iterable[Iterable], header: Iterable[str] = ("image", "label")) -> str:
    """A classification table as pandas' ``to_csv(index=False)`` writes it."""
    return "".join(",".join(str(cell) for cell in row) + "\n" for row in (header, *rows))


def image():
    """A small photograph-like RGB image for examples that need the image file on disk."""
    import numpy as np

    return np.random.default_rng(0).integers(0, 256, (8, 10, 3), dtype=np.uint8)


def token_lines(rows: Iterable[dict]) -> str:
    """A tokenized dataset as JSON lines (``Dataset.to_json`` writes them so): one object of
    columns (``input_ids``, ``token_type_ids``, ``labels``...) per row."""
    return "".join(json.dumps(row) + "\n" for row in rows)


def nnunet_dataset_json(labels: Sequence[str] = ("background", "organ"), channels: Sequence[str] = ("CT",),
                        training: int = 1, ending: str = ".nii") -> str:
    """An nnU-Net v2 ``dataset.json``: ``labels`` numbered from 0, one name per channel."""
    return json.dumps({"channel_names": {str(i): name for i, name in enumerate(channels)},
                       "labels": {name: i for i, name in enumerate(labels)},
                       "numTraining": training, "file_ending": ending}, indent=4)


def nifti_file(array: np.ndarray, spacing: Sequence[float], origin: Sequence[float] = (0.0, 0.0, 0.0),
               axes: Sequence[float] = (1.0, 1.0, 1.0)) -> bytes:
    """The bytes of a single-file NIfTI-1 volume as nibabel saves it: voxels of ``spacing``
    along axes of sign ``axes`` (RAS+), the first voxel at ``origin`` (RAS+ mm)."""
    import nibabel  # the examples of NIfTI cases are written only where nibabel is installed

    affine = np.diag([*(s * a for s, a in zip(spacing, axes)), 1.0])
    affine[:3, 3] = origin
    return nibabel.Nifti1Image(array, affine).to_bytes()


def image_bytes(kind: str = "jpeg", *, cut: int = 0, corrupt_scan: bool = False, bad_crc: bool = False) -> bytes:
    """The bytes of :func:`image` saved as ``kind`` ("jpeg", "png"), as a damaged copy holds
    them: the last ``cut`` bytes missing, a JPEG's scan data overwritten in its middle with a
    marker that may not stand there (it still ends with FF D9), or a PNG's IDAT checksum
    changed."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image()).save(buffer, kind.upper())
    data = buffer.getvalue()
    if corrupt_scan:
        start = data.index(b"\xff\xda")
        middle = (start + len(data)) // 2
        data = data[:middle] + b"\xff\xd8" + data[middle + 2:]
    if bad_crc:
        idat = data.index(b"IDAT")
        end = idat + 4 + int.from_bytes(data[idat - 4:idat], "big")
        data = data[:end] + bytes([data[end] ^ 0xFF]) + data[end + 1:]
    return data[:len(data) - cut] if cut else data
