"""LG207 mask-layout-unexpected: channels a class-index mask does not have, or a wider dtype
than its values need."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import MaskSample
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.rules._instances import reading_of

LAYOUT = define(
    "LG207", "mask-layout-unexpected", "warning",
    summary="unexpected mask layout: several channels, or a wider dtype than needed",
    why="""
A (H, W, 3) grey mask or a one-hot (H, W, C) mask gives the wrong target shape for
cross_entropy; 16-bit or int64 masks for a few classes waste memory and need conversion
(torch has no uint16 ops on older versions).""",
    bad="mask 512x512x3 with three identical channels; or a uint16 mask with values 0..2",
    good="mask 512x512 uint8",
    fix="Save a single channel with the smallest integer dtype that holds the classes.",
)

EXAMPLES = (
    Example(True, "a grey mask stored as RGB", lambda: {"masks/a.png": np.stack([np.eye(4, dtype=np.uint8)] * 3, -1)}),
    Example(True, "a 16-bit PNG holding 0..2", lambda: {"masks/a.png": ("I;16", np.eye(4, dtype=np.uint16) * 2)}),
    Example(False, "an 8-bit single-channel mask", lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)}),
)


@rule(LAYOUT, "mask", EXAMPLES, files_only=True)
def extra_channels(sample: MaskSample, spec):
    if sample.alpha:
        return (LAYOUT.finding(
            sample.display,
            f"mask has an alpha channel (mode {sample.record.mode}); only the first channel is used",
            hint="Save masks as a single channel (mode L or P).", channels=sample.channels,
        ),)
    if sample.grey:
        return (LAYOUT.finding(
            sample.display, f"grey mask stored with {sample.channels} identical channels (mode {sample.record.mode})",
            hint="Save masks as a single channel (mode L); loaders that keep 3 channels give (H, W, 3) targets.",
            channels=sample.channels,
        ),)
    return ()


DTYPE_EXAMPLES = (
    Example(True, "a 16-bit PNG where the spec declares dtype uint8",
            lambda: {"masks/a.png": ("I;16", np.eye(4, dtype=np.uint16))}, spec={"num_classes": 2, "dtype": "uint8"}),
    Example(False, "an 8-bit PNG where the spec declares dtype uint8",
            lambda: {"masks/a.png": np.eye(4, dtype=np.uint8)}, spec={"num_classes": 2, "dtype": "uint8"}),
)


@rule(LAYOUT, "mask", DTYPE_EXAMPLES, files_only=True)
def other_than_declared_dtype(sample: MaskSample, spec):
    """Strict admission: the spec's ``dtype`` is the one type every mask is stored as."""
    stored = sample.record.array
    if spec.dtype is None or stored.dtype == np.dtype(spec.dtype):
        return ()
    return (LAYOUT.finding(
        sample.display,
        f"mask stored as {stored.dtype} ({sample.record.mode}), the spec{spec.origin_note('dtype')} declares "
        f"dtype = \"{spec.dtype}\"",
        hint=f"Save the mask as {spec.dtype}, or change dtype in the spec if the dataset's contract changed.",
        dtype=str(stored.dtype), declared=spec.dtype,
    ),)


@rule(LAYOUT, "mask", files_only=True)
def wider_dtype(sample: MaskSample, spec):
    stored = sample.record.array
    if spec.dtype is not None:  # a declared dtype is judged by other_than_declared_dtype alone
        return ()
    if sample.record.container not in ("png", "tiff") or stored.ndim != 2 or stored.dtype.itemsize == 1 \
            or stored.dtype.kind not in "iu" or not stored.size or sample.looks_like_image:
        return ()
    if reading_of(sample.instances, spec) == "instances":
        return ()  # object ids: the next mask may hold more than 255 (LG212 judges the dtype)
    if int(stored.max(initial=0)) >= 256 or int(stored.min(initial=0)) < 0:
        return ()
    return (LAYOUT.finding(
        sample.display,
        f"{stored.dtype} mask ({sample.record.mode}) holds only values below 256: a wider dtype than needed",
        hint="Save masks as 8-bit (mode L or P); older torch versions cannot convert uint16 arrays.",
        dtype=str(stored.dtype),
    ),)
