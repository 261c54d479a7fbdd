"""Small annotation files for the rules' examples, written as the tools write them."""

from __future__ import annotations

import json
from typing import Iterable


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
