"""LG211 label-volume-geometry-mismatch: a label volume lies elsewhere in space than its image.

A medical volume's header places its voxels in space (spacing, origin, direction); nnU-Net's
dataset check, MONAI's and TorchIO's loaders read it with the voxels. Shapes can agree while
a label written with another spacing, origin or orientation covers other anatomy than its
image: the network is trained on misaligned pairs, and nothing fails.

Two families of readers read a NIfTI header apart (``readers/masks.py``: ITK's rule beside
nibabel's): a pair is reported only when image and label differ as both read them, so a pair
that either family sees aligned gives nothing; the message states ITK's reading (SimpleITK's,
nnU-Net's) and the part of each header it came from.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from labelguard.core.records import MaskSample, VolumeGeometry
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.rules._examples import nifti_file, nnunet_dataset_json

VOLUME_GEOMETRY = define(
    "LG211", "label-volume-geometry-mismatch", "error",
    summary="a label volume's spacing, origin or direction differs from its image's",
    why="""
A label volume's voxels cover the anatomy its header places them on. A label saved with
another spacing, origin or orientation than its image (exported from a resampled or
reoriented copy) has the image's shape yet marks other voxels. nnU-Net's verify_dataset_integrity
stops only on a spacing mismatch; a different origin or direction it prints as a warning
and goes on, and a loader that ignores the header trains on misaligned pairs without any
error: labelguard calls every one of them an error, as misaligned labels train silently.
Compared as ITK (SimpleITK, nnU-Net) and as nibabel (MONAI, TorchIO) read each header; a
pair is reported only when the two differ in both readings. Off where sizes are declared
to differ (`sizes = "any"`) or a scale factor relates mask and image.""",
    bad="imagesTr/case_000_0000.nii.gz spacing (2.5, 2.5, 3), labelsTr/case_000.nii.gz spacing (3, 3, 3)",
    good="label and image with one spacing, origin and direction",
    fix="Resample the label onto its image's grid with nearest-neighbour interpolation; when its "
        "voxels already match the image's, copy the image's spacing, origin and direction into the "
        "label's header.",
)

# nnU-Net compares these with numpy's allclose at its default tolerances: a difference counts
# when it exceeds 1e-8 plus 1e-5 of the image's value. Spacing is kept at exactly that. A
# NIfTI header stores positions as float32, and a direction rebuilt from the qform's quaternion
# carries round-off near 1e-7 (MONAI's test volumes show it between an sform image and its
# qform label), so origin and direction take an absolute slack of 1e-5 mm (cosine) with the
# same relative one.
RELATIVE_TOLERANCE = 1e-5
SPACING_SLACK = 1e-8
POSITION_SLACK = 1e-5

# Values shown to this many significant digits: enough to tell apart what differs by more
# than the relative tolerance.
DIGITS = 6
# Below this a shown position or cosine is zero (float32 round-off of a zero).
ZERO = 1e-6


def _case(label_spacing=(2.5, 2.5, 3.0), label_origin=(0.0, 0.0, 0.0), label_axes=(1.0, 1.0, 1.0)):
    image = np.zeros((6, 5, 4), np.float32)
    label = np.zeros((6, 5, 4), np.uint8)
    label[1:3, 1:3, 1:3] = 1
    return {
        "dataset.json": nnunet_dataset_json(),
        "imagesTr/case_000_0000.nii": nifti_file(image, (2.5, 2.5, 3.0)),
        "labelsTr/case_000.nii": nifti_file(label, label_spacing, label_origin, label_axes),
    }


EXAMPLES = (
    Example(True, "an nnU-Net label of spacing 3 mm beside its image of spacing 2.5 mm",
            lambda: _case(label_spacing=(3.0, 3.0, 3.0))),
    Example(True, "an nnU-Net label moved 10 mm along x from its image",
            lambda: _case(label_origin=(10.0, 0.0, 0.0))),
    Example(True, "an nnU-Net label flipped along its first axis",
            lambda: _case(label_axes=(-1.0, 1.0, 1.0))),
    Example(False, "an nnU-Net label with its image's spacing, origin and direction",
            lambda: _case()),
    Example(False, "an nnU-Net label whose spacing is the float32 next to its image's (2.5000002 for 2.5)",
            lambda: _case(label_spacing=(2.5000002, 2.5, 3.0))),
)


@rule(VOLUME_GEOMETRY, "pair", EXAMPLES, files_only=True)
def label_volume_elsewhere(sample: MaskSample, spec):
    """LG211 for each paired volume (the image, the other channels of its case) whose header
    places its voxels elsewhere than the label's header places the label's."""
    label = sample.record.geometry
    if label is None or not sample.paired_geometry or spec.sizes_vary or spec.scale is not None:
        return ()
    findings = []
    for shown, image in sample.paired_geometry:
        differing = differences(label, image)
        # A pair that nibabel's family of loaders reads aligned is no error for them.
        if not differing or not differences(label.nibabel or label, image.nibabel or image):
            continue
        names = [name for name, _, _ in differing]
        parts = [f"{name} {show(theirs)} in the label, {show(ours)} in the image" for name, theirs, ours in differing]
        reading = f"both headers' {label.source}" if label.source == image.source else \
            f"the label's {label.source}, the image's {image.source}"
        findings.append(VOLUME_GEOMETRY.finding(
            sample.display,
            f"label and image {shown} differ in {' and '.join(names)} as SimpleITK reads them (nnU-Net's reader; "
            f"{reading}), and as nibabel does: " + "; ".join(parts)
            + f" (tolerance: {RELATIVE_TOLERANCE:g} of the image's value)",
            hint="Resample the label onto the image's grid with nearest-neighbour interpolation; if its "
                 "voxels were drawn on this image, copy the image's spacing, origin and direction into the "
                 "label's header instead.",
            image=shown, properties=names, label_reading=label.source, image_reading=image.source,
            label_geometry=_as_data(label), image_geometry=_as_data(image),
        ))
    return findings


def differences(label: VolumeGeometry, image: VolumeGeometry) -> list[tuple[str, tuple, tuple]]:
    """(property, label's value, image's value) of each property that differs beyond the
    tolerance; spacing is compared on the spatial axes both volumes have."""
    axes = min(len(label.spacing), len(image.spacing))
    found = []
    for name, theirs, ours, slack in (
            ("spacing", label.spacing[:axes], image.spacing[:axes], SPACING_SLACK),
            ("origin", label.origin, image.origin, POSITION_SLACK),
            ("direction", label.direction, image.direction, POSITION_SLACK)):
        if len(theirs) != len(ours) or not np.allclose(theirs, ours, rtol=RELATIVE_TOLERANCE, atol=slack):
            found.append((name, theirs, ours))
    return found


def show(values: Sequence[float]) -> str:
    """A vector (or a 3x3 direction, its rows) to :data:`DIGITS` significant digits."""
    numbers = [_number(v) for v in values]
    if len(numbers) == 9:
        return "(" + ", ".join("(" + ", ".join(numbers[i:i + 3]) + ")" for i in (0, 3, 6)) + ")"
    return "(" + ", ".join(numbers) + ")"


def _number(value: float) -> str:
    return f"{_round(value):.{DIGITS}g}"


def _as_data(geometry: VolumeGeometry) -> dict:
    return {"spacing": [_round(v) for v in geometry.spacing], "origin": [_round(v) for v in geometry.origin],
            "direction": [_round(v) for v in geometry.direction]}


def _round(value: float) -> float:
    """``value`` to :data:`DIGITS` significant digits; float32 round-off about zero (a cosine
    of -1e-8) is zero."""
    if not math.isfinite(value):
        return float(value)
    if abs(value) < ZERO:
        return 0.0
    return float(f"{value:.{DIGITS}g}")
