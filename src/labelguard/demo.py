"""``labelguard demo``: write a small realistic dataset with planted faults and audit it.

Three sets, each with the faults users report most:

- ``swin_unet``: Swin-Unet Synapse-style ``train_npz/*.npz`` slices (image + label) and a
  ``lists/train.txt``; one slice holds label 9 with num_classes=9, one has an image/label
  size mismatch, the list has a trailing space and names a slice that does not exist.
- ``voc_seg``: VOC-style palette PNG masks with 255 borders (not declared as ignore), and
  one mask that is really a JPEG renamed ``.png``.
- ``binary``: image/mask folders of binary masks stored as 0/255 for a two-class spec, one
  mask resized with bilinear interpolation, one image whose size differs from its mask.
"""

from __future__ import annotations

import io
import os
import tempfile
from typing import IO, Any

import numpy as np
from PIL import Image

from labelguard.core.text import severity_counts_text
from labelguard.readers.colormap import voc_palette_colors

SIZE = 96


def _blobs(rng: np.random.Generator, size: int, classes: list[int]) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size]
    mask = np.zeros((size, size), dtype=np.uint8)
    for value in classes:
        cy, cx = rng.uniform(0.25, 0.75, size=2) * size
        ry, rx = rng.uniform(0.12, 0.25, size=2) * size
        wobble = 1 + 0.25 * np.sin(4 * np.arctan2(yy - cy, xx - cx) + rng.uniform(0, 6.3))
        mask[((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < wobble] = value
    return mask


def _borders(mask: np.ndarray, value: int = 255) -> np.ndarray:
    """VOC-style object borders: pixels next to a different class get ``value``."""
    edge = np.zeros(mask.shape, dtype=bool)
    edge[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    edge[1:, :] |= mask[1:, :] != mask[:-1, :]
    out = mask.copy()
    out[edge] = value
    return out


def _save_png(path: str, array: np.ndarray, palette: list[int] | None = None) -> None:
    image = Image.fromarray(array)
    if palette is not None:
        image = image.convert("P")
        image.putpalette(palette)
        image = Image.frombytes("P", image.size, array.tobytes())
        image.putpalette(palette)
    image.save(path, format="PNG")


def write_demo(root: str) -> dict[str, str]:
    """Write the three demo sets under ``root``; returns name -> folder."""
    rng = np.random.default_rng(7)
    sets = {}

    swin = os.path.join(root, "swin_unet")
    os.makedirs(os.path.join(swin, "train_npz"), exist_ok=True)
    os.makedirs(os.path.join(swin, "lists"), exist_ok=True)
    names = []
    for case in range(1, 4):
        for index in range(4):
            name = f"case{case:04d}_slice{index:03d}"
            label = _blobs(rng, SIZE, [1, 2, 3, 5][: 1 + (index + case) % 4])
            image = rng.random((SIZE, SIZE), dtype=np.float32)
            if (case, index) == (2, 1):
                label.reshape(-1)[:100] = 9  # num_classes=9 means 0..8
            if (case, index) == (3, 2):
                image = rng.random((SIZE * 2, SIZE * 2), dtype=np.float32)
            np.savez(os.path.join(swin, "train_npz", f"{name}.npz"), image=image, label=label)
            names.append(name)
    lines = [names[0] + " "] + names[1:] + ["case0009_slice000"]
    with open(os.path.join(swin, "lists", "train.txt"), "w", encoding="utf-8", newline="\n") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(swin, "labelguard.toml"), "w", encoding="utf-8") as handle:
        handle.write("# Synapse: background + 8 organs\n[labels]\nnum_classes = 9\n")
    sets["swin_unet"] = swin

    voc = os.path.join(root, "voc_seg")
    for sub in ("SegmentationClass", "JPEGImages"):
        os.makedirs(os.path.join(voc, sub), exist_ok=True)
    palette = [c for rgb in voc_palette_colors(256) for c in rgb]
    for index in range(6):
        name = f"2007_{index:06d}"
        mask = _borders(_blobs(rng, SIZE, [1, 2][: 1 + index % 2] if index % 3 else [2]))
        photo = rng.integers(0, 256, size=(SIZE, SIZE, 3), dtype=np.uint8)
        Image.fromarray(photo).save(os.path.join(voc, "JPEGImages", f"{name}.jpg"), quality=85)
        target = os.path.join(voc, "SegmentationClass", f"{name}.png")
        if index == 4:
            Image.fromarray(mask).save(target, format="JPEG", quality=90)  # a JPEG named .png
        else:
            _save_png(target, mask, palette)
    with open(os.path.join(voc, "labelguard.toml"), "w", encoding="utf-8") as handle:
        handle.write('[labels]\nclasses = ["background", "cat", "dog"]\n'
                     "# the 255 borders are not declared: add ignore_index = [255]\n")
    sets["voc_seg"] = voc

    binary = os.path.join(root, "binary")
    for sub in ("images", "masks"):
        os.makedirs(os.path.join(binary, sub), exist_ok=True)
    for index in range(5):
        mask = (_blobs(rng, SIZE, [1]) * 255).astype(np.uint8)
        size = (SIZE, SIZE)
        if index == 2:
            # Pillow 9.0 has no Image.Resampling; later versions still set these names, in a loop
            # that their type stubs do not show.
            small = Image.fromarray(mask).resize((SIZE // 2, SIZE // 2), Image.NEAREST)  # type: ignore[attr-defined]
            mask = np.asarray(small.resize((SIZE, SIZE), Image.BILINEAR))  # type: ignore[attr-defined]
        if index == 3:
            size = (SIZE + 32, SIZE)
        photo = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(photo).save(os.path.join(binary, "images", f"img_{index:03d}.png"))
        _save_png(os.path.join(binary, "masks", f"img_{index:03d}_mask.png"), mask)
    with open(os.path.join(binary, "labelguard.toml"), "w", encoding="utf-8") as handle:
        handle.write('[labels]\nclasses = ["background", "lesion"]\n')
    sets["binary"] = binary
    return sets


def run_demo(directory: str | None, stream: IO[str]) -> int:
    """Write the demo under ``directory`` (a new temporary folder when None) and audit it."""
    from labelguard._audit import audit
    from labelguard.core.paths import display_path
    from labelguard.layouts.base import AuditOptions
    from labelguard.output import write_report
    from labelguard.report import severity_counts

    root = directory or tempfile.mkdtemp(prefix="labelguard-demo-")
    os.makedirs(root, exist_ok=True)
    sets = write_demo(root)
    stream.write(f"labelguard demo: wrote three small datasets with planted faults to {display_path(root)}\n\n")
    runs: list[tuple[str, str, dict[str, Any]]] = [
        ("swin_unet", "labelguard audit {p} --list {p}/lists/train.txt",
         dict(options=AuditOptions(lists=(os.path.join(sets["swin_unet"], "lists", "train.txt"),)))),
        ("voc_seg", "labelguard audit {p}", {}),
        ("binary", "labelguard audit {p}", {}),
    ]
    findings = []
    for name, command, kwargs in runs:
        path = sets[name]
        shown = display_path(path)
        stream.write(f"$ {command.format(p=shown)}\n")
        report = audit(path, workers=1, **kwargs)
        buffer = io.StringIO()
        write_report(report, "text", buffer)
        stream.write(buffer.getvalue() + "\n")
        findings.extend(report.findings)
    counts = severity_counts(findings)
    stream.write(
        f"labelguard found {severity_counts_text(counts)} in the three demo datasets. Try `labelguard rule LG201`, or "
        f"`labelguard audit {display_path(sets['voc_seg'])} --ignore-index 255` to see the 255 borders accepted.\n"
    )
    # The HTML report audits the three sets together, the swin_unet one through its list
    # (a --list would apply to every PATH): the same findings as the three audits above.
    stream.write(_html_report(root, [os.path.join(sets["swin_unet"], "lists", "train.txt"),
                                     sets["voc_seg"], sets["binary"]]) + "\n")
    return 0


def _html_report(root: str, paths: list[str]) -> str:
    """Write the HTML report of the three sets at ``paths`` (audited together, each against its
    own spec) beside them, and say where; without the html extra, say how to get it."""
    from labelguard._audit import audit
    from labelguard._optional import available
    from labelguard.core.paths import display_path
    from labelguard.output import write_report

    if not available("matplotlib"):
        return "The HTML report needs matplotlib: pip install 'labelguard[html]', then run the demo again."
    target = os.path.join(root, "report.html")
    with open(target, "w", encoding="utf-8") as handle:
        write_report(audit(paths, workers=1), "html", handle)
    return (f"HTML report of the three sets, with pictures of the flagged masks: {display_path(target)} "
            "(open it in a browser)")
