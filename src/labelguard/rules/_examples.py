"""Small annotation files for the rules' examples, written as the tools write them."""

from __future__ import annotations

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
