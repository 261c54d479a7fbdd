"""Fixture builders: write real dataset files in their real layouts.

Every test builds its data with these into ``tmp_path``; nothing is mocked.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from PIL import Image


def organic_mask(size: tuple[int, int] = (64, 64), classes: Sequence[int] = (0, 1, 2),
                 seed: int = 0) -> np.ndarray:
    """A uint8 label map of blob-shaped regions holding each of ``classes``."""
    rng = np.random.default_rng(seed)
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w]
    mask = np.full(size, classes[0], dtype=np.uint8)
    for value in classes[1:]:
        cy, cx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
        ry, rx = rng.uniform(0.1, 0.3) * h, rng.uniform(0.1, 0.3) * w
        angle = np.arctan2(yy - cy, xx - cx)
        wobble = 1 + 0.2 * np.sin(3 * angle + rng.uniform(0, 6.28))
        mask[((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < wobble] = value
    return mask


def rgb_image(size: tuple[int, int] = (64, 64), seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(*size, 3), dtype=np.uint8)


def write_png(path: Path, array: np.ndarray, mode: str | None = None,
              palette: Sequence[int] | None = None) -> Path:
    """Write ``array`` as PNG; ``mode`` 'P' with ``palette`` writes a palette image."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "P":
        image = Image.frombytes("P", (array.shape[1], array.shape[0]), array.astype(np.uint8).tobytes())
        image.putpalette(list(palette) if palette is not None else voc_palette())
    elif mode == "I;16":
        image = Image.fromarray(array.astype(np.uint16))
    else:
        image = Image.fromarray(array) if mode is None else Image.fromarray(array).convert(mode)
    image.save(path, format="PNG")
    return path


def write_jpeg(path: Path, array: np.ndarray, quality: int = 75) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, format="JPEG", quality=quality)
    return path


def jpeg_roundtrip(array: np.ndarray, quality: int = 75) -> np.ndarray:
    """What a mask looks like after a save as JPEG and a reload."""
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    return np.asarray(Image.open(buffer))


def write_npz(path: Path, **arrays: np.ndarray) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return path


def write_npy(path: Path, array: np.ndarray) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return path


def write_h5(path: Path, **arrays: np.ndarray) -> Path:
    import h5py

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        for key, value in arrays.items():
            handle.create_dataset(key, data=value)
    return path


def write_nifti(path: Path, array: np.ndarray, affine: np.ndarray | None = None) -> Path:
    import nibabel as nib

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(nib.Nifti1Image(array, np.eye(4) if affine is None else affine), str(path))
    return path


def write_tiff(path: Path, array: np.ndarray) -> Path:
    import tifffile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(path, array)
    return path


def write_list(path: Path, lines: Iterable[str], newline: str = "\n", bom: bool = False) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = newline.join(lines) + newline
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def write_json(path: Path, data: Mapping) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def swin_unet_dataset(root: Path, n: int = 6, num_classes: int = 9, bad: Mapping[int, int] | None = None,
                      size: tuple[int, int] = (32, 32)) -> tuple[Path, Path]:
    """A Swin-Unet Synapse style set: ``train_npz/caseXXXX_sliceYYY.npz`` with ``image`` and
    ``label`` and a ``lists/train.txt`` naming the slices without extension.

    ``bad`` maps a sample index to a label value planted in 100 pixels of that slice.
    Returns (data dir, list file).
    """
    data = Path(root) / "train_npz"
    names = []
    for i in range(n):
        name = f"case{i // 3 + 1:04d}_slice{i % 3:03d}"
        label = organic_mask(size, classes=tuple(range(min(num_classes, 4))), seed=i)
        if bad and i in bad:
            label.reshape(-1)[:100] = bad[i]
        image = np.random.default_rng(i).random(size, dtype=np.float32)
        write_npz(data / f"{name}.npz", image=image, label=label)
        names.append(name)
    listing = write_list(Path(root) / "lists" / "train.txt", names)
    return data, listing


def voc_palette() -> list[int]:
    """The standard Pascal VOC colour palette (256 RGB triples, flattened)."""
    palette = []
    for index in range(256):
        r = g = b = 0
        c = index
        for shift in range(7, -1, -1):
            r |= ((c >> 0) & 1) << shift
            g |= ((c >> 1) & 1) << shift
            b |= ((c >> 2) & 1) << shift
            c >>= 3
        palette.extend((r, g, b))
    return palette


def write_bmp(path: Path, array: np.ndarray) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, format="BMP")
    return path


def truncate(path: Path, keep: float = 0.5) -> Path:
    """Cut ``path`` to the first ``keep`` fraction of its bytes, as an interrupted copy does."""
    path = Path(path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def corrupt(path: Path, at: float = 0.5, length: int = 16) -> Path:
    """Overwrite ``length`` bytes from the ``at`` fraction of ``path`` with 0xAB (bit rot)."""
    path = Path(path)
    data = bytearray(path.read_bytes())
    start = int(len(data) * at)
    data[start:start + length] = b"\xab" * len(data[start:start + length])
    path.write_bytes(bytes(data))
    return path


def with_border(mask: np.ndarray, value: int = 255, width: int = 2) -> np.ndarray:
    """``mask`` with a frame of ``value`` (VOC/Cityscapes "unlabelled" borders)."""
    framed = mask.copy()
    framed[:width, :] = framed[-width:, :] = value
    framed[:, :width] = framed[:, -width:] = value
    return framed


def colorize(indices: np.ndarray, colors: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """An (H, W, 3) colour mask painting index i with ``colors[i]``."""
    return np.asarray(colors, dtype=np.uint8)[indices]


def write_dataset_meta(path: Path, names: Sequence[str], colors: Sequence[tuple[int, int, int]]) -> Path:
    """A Datumaro-style dataset_meta.json with label_map and segmentation_colors."""
    return write_json(path, {"label_map": {str(i): n for i, n in enumerate(names)},
                             "segmentation_colors": [list(c) for c in colors],
                             "background_label": "0"})


def write_label_colors(path: Path, names: Sequence[str], colors: Sequence[tuple[int, int, int]]) -> Path:
    """CamVid's label_colors.txt: 'R G B name' per line."""
    return write_list(path, [f"{r} {g} {b}\t{n}" for n, (r, g, b) in zip(names, colors)])


def write_voc_labelmap(path: Path, names: Sequence[str], colors: Sequence[tuple[int, int, int]]) -> Path:
    """VOC's labelmap.txt: 'name:r,g,b::' per line under a comment header."""
    return write_list(path, ["# label:color_rgb:parts:actions"]
                      + [f"{n}:{r},{g},{b}::" for n, (r, g, b) in zip(names, colors)])


def paired_dataset(root: Path, names: Sequence[str], masks: Sequence[np.ndarray] | None = None,
                   mask_suffix: str = "", image_size: tuple[int, int] | None = None) -> tuple[Path, Path]:
    """``images/<name>.png`` and ``masks/<name><mask_suffix>.png`` for each name.

    The images take each mask's size unless ``image_size`` is given. Returns (images, masks).
    """
    images, mask_dir = Path(root) / "images", Path(root) / "masks"
    for i, name in enumerate(names):
        mask = masks[i] if masks is not None else organic_mask((32, 32), seed=i)
        write_png(mask_dir / f"{name}{mask_suffix}.png", mask)
        write_png(images / f"{name}.png", rgb_image(image_size or mask.shape[:2], seed=i))
    return images, mask_dir


def voc_segmentation_dataset(root: Path, n: int = 6, num_classes: int = 3,
                             bad: Mapping[int, int] | None = None, size: tuple[int, int] = (32, 32),
                             border: int = 255) -> Path:
    """A Pascal VOC style segmentation set: ``JPEGImages/NNNN.jpg``, palette masks
    ``SegmentationClass/NNNN.png`` whose regions are outlined with ``border`` (VOC's 255),
    and ``ImageSets/Segmentation/train.txt``.

    ``bad`` maps a sample index to a value planted in 50 pixels of that mask. Returns the root.
    """
    root = Path(root)
    names = []
    for i in range(n):
        name = f"{2007000 + i:07d}"
        mask = organic_mask(size, classes=tuple(range(num_classes)), seed=i)
        edges = np.zeros(size, dtype=bool)
        edges[:, 1:] |= mask[:, 1:] != mask[:, :-1]
        edges[1:, :] |= mask[1:, :] != mask[:-1, :]
        mask[edges] = border
        if bad and i in bad:
            mask.reshape(-1)[:50] = bad[i]
        write_jpeg(root / "JPEGImages" / f"{name}.jpg", rgb_image(size, seed=i), quality=90)
        write_png(root / "SegmentationClass" / f"{name}.png", mask, mode="P")
        names.append(name)
    write_list(root / "ImageSets" / "Segmentation" / "train.txt", names)
    return root


def image_folder_dataset(root: Path, classes: Sequence[str] = ("cat", "dog"), per_class: int = 3,
                         size: tuple[int, int] = (16, 16)) -> Path:
    """An ImageFolder layout: ``<root>/<class>/<n>.png``. Returns the root."""
    root = Path(root)
    for c, name in enumerate(classes):
        for i in range(per_class):
            write_png(root / name / f"{i:03d}.png", rgb_image(size, seed=c * 100 + i))
    return root


RED, GREEN = (200, 0, 0), (0, 200, 0)


def datasets_numbering_colours_differently(root: Path) -> Path:
    """Two mask datasets side by side, ``a`` and ``b``, each with a dataset_meta.json: the same
    red/green mask ``masks/x.png`` in each, a's map numbering red 1 and green 2, b's map
    numbering green 1 and red 2."""
    mask = np.zeros((16, 16, 3), np.uint8)
    mask[2:8, 2:8] = RED
    mask[9:14, 9:14] = GREEN
    write_dataset_meta(root / "a" / "dataset_meta.json", ["background", "car", "tree"], [(0, 0, 0), RED, GREEN])
    write_dataset_meta(root / "b" / "dataset_meta.json", ["background", "tree", "car"], [(0, 0, 0), GREEN, RED])
    for name in ("a", "b"):
        write_png(root / name / "masks" / "x.png", mask)
    return root
