"""Fixture builders for detection datasets: Pascal VOC XML and YOLO, in their real layouts.

Each builder writes real files into a folder and returns paths; nothing is mocked.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Mapping, Sequence
from xml.sax.saxutils import escape

from PIL import Image

Box = tuple[float, float, float, float]
VOC_OBJECT = """  <object>
    <name>{name}</name>
    <pose>Unspecified</pose>
    <truncated>0</truncated>
    <difficult>0</difficult>
    <bndbox>
      <xmin>{box[0]:g}</xmin>
      <ymin>{box[1]:g}</ymin>
      <xmax>{box[2]:g}</xmax>
      <ymax>{box[3]:g}</ymax>
    </bndbox>{extra}
  </object>
"""
PERSON_PARTS = """
    <part>
      <name>head</name>
      <bndbox><xmin>5</xmin><ymin>6</ymin><xmax>9</xmax><ymax>10</ymax></bndbox>
    </part>
    <part>
      <name>hand</name>
      <bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox>
    </part>"""


def voc_xml(filename: str, objects: Iterable[tuple[str, Box]], size: tuple[int, int] | None = (500, 375),
            parts: bool = False) -> str:
    """The text of a VOC annotation as LabelImg and the VOC devkit write it.

    Args:
        filename: the ``<filename>`` text.
        objects: (class name, (xmin, ymin, xmax, ymax)) per object.
        size: (width, height) written in ``<size>``; None leaves ``<size>`` out.
        parts: give every "person" object ``<part>`` elements (head, hand).
    """
    body = "".join(
        VOC_OBJECT.format(name=escape(name), box=box,
                          extra=PERSON_PARTS if parts and name == "person" else "")
        for name, box in objects
    )
    size_xml = (f"  <size>\n    <width>{size[0]}</width>\n    <height>{size[1]}</height>\n"
                f"    <depth>3</depth>\n  </size>\n") if size else ""
    return (f'<annotation>\n  <folder>VOC2007</folder>\n  <filename>{escape(filename)}</filename>\n'
            f"{size_xml}  <segmented>0</segmented>\n{body}</annotation>\n")


def write_image(path: Path, size: tuple[int, int] = (32, 24)) -> Path:
    """A small real JPEG/PNG (format from the extension) of ``size`` (width, height)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (90, 120, 150)).save(path)
    return path


def write_voc(
    root: Path,
    annotations: Mapping[str, Sequence[tuple[str, Box]]],
    *,
    images: bool = True,
    size: tuple[int, int] = (500, 375),
    splits: Mapping[str, Sequence[str]] | None = None,
    labels: Sequence[str] | None = None,
    labelmap: Sequence[str] | None = None,
    parts: bool = False,
) -> Path:
    """A VOC folder: ``Annotations/<id>.xml``, ``JPEGImages/<id>.jpg``, ``ImageSets/Main`` lists.

    Args:
        annotations: image id -> objects.
        images: write a JPEG for every id.
        splits: split name -> ids, written as ``ImageSets/Main/<split>.txt``.
        labels: class names written to ``labels.txt`` at the root.
        labelmap: class names written as a Datumaro ``labelmap.txt`` (with colours).
    """
    root = Path(root)
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    for image_id, objects in annotations.items():
        (root / "Annotations" / f"{image_id}.xml").write_text(
            voc_xml(f"{image_id}.jpg", objects, size, parts=parts), encoding="utf-8")
        if images:
            write_image(root / "JPEGImages" / f"{image_id}.jpg", (16, 12))
    for split, ids in (splits or {}).items():
        main = root / "ImageSets" / "Main"
        main.mkdir(parents=True, exist_ok=True)
        (main / f"{split}.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    if labels is not None:
        (root / "labels.txt").write_text("".join(f"{n}\n" for n in labels), encoding="utf-8")
    if labelmap is not None:
        lines = ["# label:color_rgb:parts:actions"]
        lines += [f"{name}:{(37 * i) % 256},{(91 * i) % 256},{(53 * i) % 256}::" for i, name in enumerate(labelmap)]
        (root / "labelmap.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def generated_voc(root: Path, count: int, classes: Sequence[str], seed: int = 0,
                  max_objects: int = 4) -> Path:
    """``count`` VOC XMLs (no images) with 1..max_objects random boxes of ``classes``."""
    rng = random.Random(seed)
    folder = Path(root) / "Annotations"
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        objects = []
        for _ in range(rng.randint(1, max_objects)):
            x, y = rng.randint(1, 400), rng.randint(1, 300)
            objects.append((rng.choice(classes), (x, y, x + rng.randint(5, 99), y + rng.randint(5, 74))))
        name = f"{index:06d}"
        (folder / f"{name}.xml").write_text(voc_xml(f"{name}.jpg", objects), encoding="utf-8")
    return Path(root)


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<annotation><filename>a.jpg</filename><object><name>&lol9;</name>
<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE annotation [ <!ENTITY secret SYSTEM "file:///etc/passwd"> ]>
<annotation><filename>a.jpg</filename><object><name>&secret;</name>
<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>
"""


# ---- YOLO -------------------------------------------------------------------------------

def yolo_rows(rows: Iterable[Sequence[float]]) -> str:
    """Label-file text: one ``class x y w h`` (or ``class x1 y1 x2 y2 ...``) row per item."""
    lines = []
    for row in rows:
        head, *coords = row
        lines.append(" ".join([str(int(head))] + [f"{c:.6f}" for c in coords]))
    return "".join(line + "\n" for line in lines)


def write_yolo(
    root: Path,
    splits: Mapping[str, Mapping[str, Sequence[Sequence[float]] | str]],
    *,
    names: Sequence[str] | Mapping[int, str] | None = None,
    nc: int | None = None,
    yaml_name: str | None = "data.yaml",
    images: bool = True,
    extra_yaml: str = "",
) -> Path:
    """An Ultralytics dataset: ``images/<split>/<id>.jpg``, ``labels/<split>/<id>.txt``, data.yaml.

    Args:
        splits: split -> image id -> rows (tuples as for :func:`yolo_rows`) or raw label text.
        names: class names (a list, or an {id: name} dict as newer data.yaml files write them).
        nc: number of classes written as ``nc``.
        yaml_name: the data.yaml file name; None writes none.
        images: write a JPEG per id.
        extra_yaml: text appended to data.yaml (e.g. ``kpt_shape: [17, 3]``).
    """
    root = Path(root)
    for split, files in splits.items():
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        for image_id, rows in files.items():
            text = rows if isinstance(rows, str) else yolo_rows(rows)
            (root / "labels" / split / f"{image_id}.txt").write_text(text, encoding="utf-8")
            if images:
                write_image(root / "images" / split / f"{image_id}.jpg", (16, 12))
    if yaml_name:
        lines = []
        for split in splits:
            key = "val" if split in ("val", "valid", "validation") else split
            lines.append(f"{key}: images/{split}")
        if nc is not None:
            lines.append(f"nc: {nc}")
        if names is not None:
            if isinstance(names, Mapping):
                lines.append("names:")
                lines += [f"  {k}: {v}" for k, v in names.items()]
            else:
                lines.append("names: [" + ", ".join(repr(str(n)) for n in names) + "]")
        (root / yaml_name).write_text("\n".join(lines) + "\n" + extra_yaml, encoding="utf-8")
    return root


def write_darknet(root: Path, files: Mapping[str, Sequence[Sequence[float]] | str], names: Sequence[str],
                  classes: int | None = None, listed: Sequence[str] | None = None,
                  valid: Mapping[str, Sequence[Sequence[float]] | str] | None = None,
                  extension: str = ".jpg") -> Path:
    """A darknet dataset as CVAT/Datumaro export it: ``obj.data``, ``obj.names``, ``train.txt``
    naming ``data/obj_train_data/<id>.jpg`` (the export is darknet's ``data/`` folder), and
    the labels beside the images; with ``valid``, ``obj_valid_data`` and ``valid.txt`` as
    Datumaro writes a second subset. CVAT keeps the image's own extension (``extension``)."""
    root = Path(root)
    subsets = {"train": (files, listed)}
    if valid is not None:
        subsets["valid"] = (valid, None)
    for subset, (images, named) in subsets.items():
        data = root / f"obj_{subset}_data"
        data.mkdir(parents=True, exist_ok=True)
        for image_id, rows in images.items():
            text = rows if isinstance(rows, str) else yolo_rows(rows)
            (data / f"{image_id}.txt").write_text(text, encoding="utf-8")
            write_image(data / f"{image_id}{extension}", (16, 12))
        ids = named if named is not None else list(images)
        (root / f"{subset}.txt").write_text("".join(f"data/obj_{subset}_data/{i}{extension}\n" for i in ids),
                                            encoding="utf-8")
    (root / "obj.names").write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
    (root / "obj.data").write_text(
        f"classes = {classes if classes is not None else len(names)}\n"
        + "".join(f"{subset} = data/{subset}.txt\n" for subset in subsets)
        + "names = data/obj.names\nbackup = backup/\n", encoding="utf-8")
    return root


LABELME_OBJECT = """  <object>
    <name>{name}</name>
    <pose/>
    <truncated/>
    <difficult/>
    <bndbox>
      <xmin>{box[0]!r}</xmin>
      <ymin>{box[1]!r}</ymin>
      <xmax>{box[2]!r}</xmax>
      <ymax>{box[3]!r}</ymax>
    </bndbox>
  </object>
"""


def write_labelme2voc(root: Path, annotations: Mapping[str, Sequence[tuple[str, Box]]],
                      class_names: Sequence[str], size: tuple[int, int] = (32, 24)) -> Path:
    """A folder as labelme's ``labelme2voc.py`` writes it for boxes: ``Annotations/<id>.xml``
    (empty ``<folder/>``, ``<pose/>``... elements, float coordinates), ``JPEGImages/<id>.jpg``,
    ``AnnotationsVisualization/<id>.jpg`` and ``class_names.txt`` (``_background_`` first);
    no ImageSets."""
    root = Path(root)
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    for image_id, objects in annotations.items():
        body = "".join(LABELME_OBJECT.format(name=escape(name), box=tuple(float(v) for v in box))
                       for name, box in objects)
        (root / "Annotations" / f"{image_id}.xml").write_text(
            f"<annotation>\n  <folder/>\n  <filename>{image_id}.jpg</filename>\n  <database/>\n"
            f"  <annotation/>\n  <image/>\n  <size>\n    <height>{size[1]}</height>\n    <width>{size[0]}</width>\n"
            f"    <depth>3</depth>\n  </size>\n  <segmented/>\n{body}</annotation>\n", encoding="utf-8")
        write_image(root / "JPEGImages" / f"{image_id}.jpg", size)
        write_image(root / "AnnotationsVisualization" / f"{image_id}.jpg", size)
    (root / "class_names.txt").write_text("\n".join(class_names), encoding="utf-8")
    return root
