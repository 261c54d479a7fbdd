"""LG001 on masks: the bytes are of another format than the file's name says.

The code itself (``file-unreadable``) is defined with the other file codes in
:mod:`labelguard.checks.files`; this rule is the mask side of it.
"""

from __future__ import annotations

import numpy as np

from labelguard.checks.files import UNREADABLE
from labelguard.core.records import MaskSample
from labelguard.core.rules import Example, rule
from labelguard.readers.masks import IMAGE_FORMATS, mask_extension

_FORMAT_NAMES = {"zip": "NPZ (zip)", "nifti": "NIfTI", "riff": "WebP", "gzip": "gzip"}

EXAMPLES = (
    Example(True, "an NPY array saved under a .png name",
            lambda: {"masks/a.png": ("npy", np.zeros((4, 4), np.uint8))}),
    Example(False, "a PNG named .png", lambda: {"masks/a.png": np.zeros((4, 4), np.uint8)}),
)


@rule(UNREADABLE, "mask", EXAMPLES)
def renamed_container(sample: MaskSample, spec):
    """LG001 for a file whose bytes are of another format than its name says, where readers
    that go by the name (np.load, nibabel, PIL) cannot open it. A JPEG under an image name is
    LG202's; image formats under each other's names open in PIL."""
    record = sample.record
    if not record.renamed or record.lossy or (
            record.container in IMAGE_FORMATS and record.declared in IMAGE_FORMATS):
        return ()
    real = _FORMAT_NAMES.get(record.container, record.container.upper())
    return (UNREADABLE.finding(
        sample.display,
        f"{real} data in a file named {mask_extension(sample.display)}: loaders that pick the reader by the "
        "extension fail on it (labelguard read it by its content and checked its values)",
        hint="Rename the file to the extension of its real format, or re-export it in the format "
        "its name says.",
        container=record.container, declared=record.declared,
    ),)
