"""Write a rule's examples (:class:`labelguard.core.rules.Example`) as real files and audit them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from builders import write_h5, write_jpeg, write_npy, write_npz, write_png, write_tiff
from labelguard._audit import audit
from labelguard.core.rules import Example
from labelguard.core.spec import LabelSpec
from labelguard.layouts.base import AuditOptions


def write_example_file(path: Path, content) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
        return
    if isinstance(content, bytes):
        path.write_bytes(content)
        return
    if isinstance(content, tuple):
        kind, array = content
        if kind == "npy":  # NPY bytes under whatever name the example gives
            np.save(path.open("wb"), array)
        else:  # a PNG mode: "P" (the VOC palette), "I;16"
            write_png(path, array, mode=kind)
        return
    suffix = path.suffix.lower()
    if isinstance(content, dict):
        (write_npz if suffix == ".npz" else write_h5)(path, **content)
    elif suffix in (".jpg", ".jpeg"):
        write_jpeg(path, content)
    elif suffix == ".npy":
        write_npy(path, content)
    elif suffix in (".tif", ".tiff"):
        write_tiff(path, content)
    else:
        write_png(path, content)


def audit_example(example: Example, root: Path):
    for relative, content in example.files().items():
        write_example_file(root / relative, content)
    options = dict(example.options)
    if "lists" in options:
        options["lists"] = tuple(str(root / name) for name in options["lists"])
    return audit(root / example.path, LabelSpec(**example.spec), options=AuditOptions(**options),
                 use_project_config=False, workers=1)
