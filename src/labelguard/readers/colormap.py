"""Colour maps of colour-coded mask datasets, and decoding colour masks through them.

Sources, as datasets declare them: a Datumaro-style ``dataset_meta.json`` with
``segmentation_colors``, CamVid's ``label_colors.txt``, VOC's ``labelmap.txt``, a
``name,r,g,b`` CSV, the standard VOC palette, the CamVid palette, or a file given with
``--color-map``.
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from typing import Callable

from labelguard.core import storage
from labelguard.core.text import clipped
from labelguard.readers.base import ReadError, parse_json, read_text

COLOR_MAP_FILES = ("dataset_meta.json", "label_colors.txt", "labelmap.txt", "labelmap.csv",
                   "label_colors.csv", "class_dict.csv")

VOC_CLASSES = (
    "background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat",
    "chair", "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant",
    "sheep", "sofa", "train", "tvmonitor",
)

CAMVID_COLORS = (
    ("Void", (0, 0, 0)), ("Animal", (64, 128, 64)), ("Archway", (192, 0, 128)),
    ("Bicyclist", (0, 128, 192)), ("Bridge", (0, 128, 64)), ("Building", (128, 0, 0)),
    ("Car", (64, 0, 128)), ("CartLuggagePram", (64, 0, 192)), ("Child", (192, 128, 64)),
    ("Column_Pole", (192, 192, 128)), ("Fence", (64, 64, 128)), ("LaneMkgsDriv", (128, 0, 192)),
    ("LaneMkgsNonDriv", (192, 0, 64)), ("Misc_Text", (128, 128, 64)),
    ("MotorcycleScooter", (192, 0, 192)), ("OtherMoving", (128, 64, 64)),
    ("ParkingBlock", (64, 192, 128)), ("Pedestrian", (64, 64, 0)), ("Road", (128, 64, 128)),
    ("RoadShoulder", (128, 128, 192)), ("Sidewalk", (0, 0, 192)), ("SignSymbol", (192, 128, 128)),
    ("Sky", (128, 128, 128)), ("SUVPickupTruck", (64, 128, 192)), ("TrafficCone", (0, 0, 64)),
    ("TrafficLight", (0, 64, 64)), ("Train", (192, 64, 128)), ("Tree", (128, 128, 0)),
    ("Truck_Bus", (192, 128, 192)), ("Tunnel", (64, 0, 64)), ("VegetationMisc", (192, 192, 0)),
    ("Wall", (64, 192, 0)),
)

RGB = tuple[int, int, int]


# The colour the VOC palette gives index 255: the "void" band drawn along object borders.
VOC_VOID = ((224, 224, 192), 255)


@dataclass(frozen=True)
class ColorMap:
    """An ordered colour -> class index map; index i is the i-th entry.

    Attributes:
        standard: the name of a built-in palette ("voc", "camvid"); None for a map the
            dataset declares (a file), which is authoritative for every colour, grey included.
        extra: colours with an index of their own beyond the classes (VOC's void: 255).
    """

    colors: tuple[RGB, ...]
    names: tuple[str, ...]
    source: str
    standard: str | None = None
    extra: tuple[tuple[RGB, int], ...] = ()

    def __post_init__(self) -> None:
        if len(self.colors) != len(self.names):
            raise ValueError("a colour map needs one name per colour")  # not a user mistake

    def lookup(self) -> dict[int, int]:
        """Packed 0xRRGGBB -> index (the first entry wins when a colour repeats)."""
        table: dict[int, int] = {}
        for index, (r, g, b) in enumerate(self.colors):
            table.setdefault((r << 16) | (g << 8) | b, index)
        for (r, g, b), index in self.extra:
            table.setdefault((r << 16) | (g << 8) | b, index)
        return table

    def to_dict(self) -> dict:
        return {"source": self.source,
                "colors": {name: list(color) for name, color in zip(self.names, self.colors)}}


def rgb_color(components, where: str) -> RGB:
    """An (r, g, b) colour from three whole numbers 0..255; ReadError saying ``where`` the
    colour was read and what is wrong (not three numbers, a component outside 0..255)."""
    values = list(components)
    if len(values) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ReadError(f"{where}: {clipped(repr(values))} is not an r, g, b colour of three whole numbers")
    outside = [v for v in values if not 0 <= v <= 255]
    if outside:
        raise ReadError(f"{where}: colour {clipped(repr(tuple(values)))} has a component outside 0..255 "
                        f"({clipped(str(outside[0]))})")
    return (values[0], values[1], values[2])


def voc_palette_colors(n: int = 256) -> tuple[RGB, ...]:
    """The standard Pascal VOC palette's first ``n`` colours."""
    colors = []
    for index in range(n):
        r = g = b = 0
        c = index
        for shift in range(7, -1, -1):
            r |= (c & 1) << shift
            g |= ((c >> 1) & 1) << shift
            b |= ((c >> 2) & 1) << shift
            c >>= 3
        colors.append((r, g, b))
    return tuple(colors)


def voc_color_map() -> ColorMap:
    return ColorMap(voc_palette_colors(len(VOC_CLASSES)), VOC_CLASSES, "standard VOC palette",
                    standard="voc", extra=(VOC_VOID,))


def camvid_color_map() -> ColorMap:
    return ColorMap(tuple(c for _, c in CAMVID_COLORS), tuple(n for n, _ in CAMVID_COLORS),
                    "standard CamVid colours", standard="camvid")


def color_proposal(colors: Counter) -> dict[str, int]:
    """A colour -> index map proposed for colour masks found without a map.

    Standard VOC palette colours keep their VOC index; otherwise black is 0 and the other
    colours follow by decreasing pixel count.
    """
    voc: dict[tuple[int, ...], int] = {c: i for i, c in enumerate(voc_color_map().colors)}
    parsed = {tuple(int(v) for v in key.split(",")): n for key, n in colors.items()}
    if parsed and all(c in voc for c in parsed):
        return {"%d,%d,%d" % c: voc[c] for c in sorted(parsed, key=lambda c: voc[c])}
    ordered = sorted(parsed, key=lambda c: (c != (0, 0, 0), -parsed[c], c))
    return {"%d,%d,%d" % c: i for i, c in enumerate(ordered)}


def pack(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 -> (H, W) uint32 0xRRGGBB."""
    rgb = rgb.astype(np.uint32, copy=False)
    return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]


def unpack(code: int) -> RGB:
    return ((code >> 16) & 255, (code >> 8) & 255, code & 255)


def color_histogram(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(packed colours, counts, inverse index) of an (H, W, 3) mask."""
    codes, inverse, counts = np.unique(pack(rgb[..., :3]).reshape(-1), return_inverse=True,
                                       return_counts=True)
    return codes, counts, inverse


def decode(rgb: np.ndarray, color_map: ColorMap) -> tuple[np.ndarray, dict[RGB, int]]:
    """Class indices of a colour mask, and the colours not in the map with their pixel counts.

    Unmapped pixels get index -1 in the returned array.
    """
    codes, counts, inverse = color_histogram(rgb)
    table = color_map.lookup()
    index_of = np.array([table.get(int(c), -1) for c in codes], dtype=np.int64)
    indices = index_of[inverse].reshape(rgb.shape[:-1])
    unmapped = {unpack(int(c)): int(n) for c, n, i in zip(codes, counts, index_of) if i < 0}
    return indices, unmapped


def load_color_map(path: str) -> ColorMap:
    """Read a colour map file; ReadError when it is not one."""
    name = os.path.basename(path).lower()
    try:
        text = read_text(path)
    except ReadError as exc:
        raise ReadError(f"colour map: {exc}") from None
    if name.endswith(".json"):
        return _from_meta_json(text, path)
    if name.endswith(".csv"):
        return _from_csv(text, path)
    if ":" in text.split("\n", 2)[-1] or name == "labelmap.txt":
        return _from_voc_labelmap(text, path)
    return _from_label_colors(text, path)


def _from_meta_json(text: str, path: str) -> ColorMap:
    meta = parse_json(text, f"JSON in {os.path.basename(path)}")
    colors = meta.get("segmentation_colors") if isinstance(meta, dict) else None
    if not isinstance(colors, list) or not colors:
        raise ReadError(f"{os.path.basename(path)} declares no segmentation_colors")
    label_map = meta.get("label_map") or {}
    names = []
    parsed = []
    for index, color in enumerate(colors):
        if not isinstance(color, list):
            raise ReadError(f"segmentation_colors[{index}] is not an [r, g, b] triple: {clipped(repr(color))}")
        parsed.append(rgb_color(color, f"segmentation_colors[{index}]"))
        names.append(str(label_map.get(str(index), index)) if isinstance(label_map, dict) else str(index))
    return ColorMap(tuple(parsed), tuple(names), path)


def _from_label_colors(text: str, path: str) -> ColorMap:
    colors: list[RGB] = []
    names: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            rgb = [int(v) for v in parts[:3]]
        except ValueError:
            raise ReadError(f"line {number} of {os.path.basename(path)} is not 'R G B name': "
                            f"{clipped(line)!r}") from None
        colors.append(rgb_color(rgb, f"line {number} of {os.path.basename(path)}"))
        names.append(" ".join(parts[3:]) or str(len(names)))
    if not colors:
        raise ReadError(f"{os.path.basename(path)} holds no colours")
    return ColorMap(tuple(colors), tuple(names), path)


def _from_voc_labelmap(text: str, path: str) -> ColorMap:
    colors, names = [], []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(":")
        if len(fields) < 2 or not fields[1]:
            raise ReadError(f"line {number} of {os.path.basename(path)} is not 'name:r,g,b:...': {clipped(line)!r}")
        try:
            rgb = [int(v) for v in fields[1].split(",")]
        except ValueError:
            raise ReadError(f"line {number} of {os.path.basename(path)} has a bad colour: "
                            f"{clipped(fields[1])!r}") from None
        colors.append(rgb_color(rgb, f"line {number} of {os.path.basename(path)}"))
        names.append(fields[0])
    if not colors:
        raise ReadError(f"{os.path.basename(path)} holds no colours")
    return ColorMap(tuple(colors), tuple(names), path)


def _from_csv(text: str, path: str) -> ColorMap:
    reader = csv.DictReader(io.StringIO(text))
    fields = {f.strip().lower(): f for f in (reader.fieldnames or [])}
    keys = [fields.get(k) for k in ("r", "g", "b")]
    name_key = fields.get("name") or fields.get("class") or fields.get("label")
    if None in keys:
        raise ReadError(f"{os.path.basename(path)} has no r, g, b columns")
    colors: list[RGB] = []
    names: list[str] = []
    for number, row in enumerate(reader, 2):
        try:
            rgb = [int(row[k]) for k in keys]
        except (TypeError, ValueError):
            raise ReadError(f"row {number} of {os.path.basename(path)} has a bad colour") from None
        colors.append(rgb_color(rgb, f"row {number} of {os.path.basename(path)}"))
        names.append(row.get(name_key, str(len(names))) if name_key else str(len(names)))
    if not colors:
        raise ReadError(f"{os.path.basename(path)} holds no colours")
    return ColorMap(tuple(colors), tuple(names), path)


def find_color_map(directories: list[str], admit: Callable[[str], bool] = lambda path: True
                   ) -> tuple[ColorMap | None, str | None]:
    """The first colour map declared in ``directories`` (nearest first), of the files that
    ``admit(path)`` lets be read (the layout's policy on metadata: never a link out of the
    dataset, whose content would reach the report); a file it refuses is passed by unread.

    Returns (map, None), or (None, error message) when a declared map cannot be read,
    or (None, None) when none is declared.
    """
    for directory in directories:
        for name in COLOR_MAP_FILES:
            path = os.path.join(directory, name)
            if not storage.isfile(path) or not admit(path):
                continue
            if name == "dataset_meta.json":
                try:
                    meta = parse_json(read_text(path))
                except ReadError as exc:
                    return None, f"{path}: {exc}"
                if not isinstance(meta, dict) or "segmentation_colors" not in meta:
                    continue
            try:
                return load_color_map(path), None
            except ReadError as exc:
                return None, f"{path}: {exc}"
    return None, None
