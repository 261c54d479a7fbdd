"""What the dataset rules share: the classes of the data without stray values, and labels."""

from __future__ import annotations

from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import show_name
from labelguard.core.values import suggest_remap

# Values under this share of all pixels, found in few files, are stray values (JPEG or
# interpolation fringes: LG202 names them) rather than the dataset's classes.
STRAY_SHARE = 0.005


def main_values(summary: Summary) -> list[int]:
    """The found values that are classes of the data, without stray fringe values."""
    total = sum(summary.value_pixels.values()) + summary.capped_pixels or 1
    half = max(1, summary.samples) / 2
    return [v for v in summary.found_values()
            if summary.value_pixels[v] >= STRAY_SHARE * total or summary.value_files[v] >= half]


def class_label(value: int, spec: LabelSpec) -> str:
    name = spec.class_name(value)
    return f"{value} ({show_name(name)})" if name else str(value)


def suggested_remap(summary: Summary, spec: LabelSpec) -> dict[int, int] | None:
    """The remap that would bring every found mask value into the spec, when one is evident."""
    if spec.reduce_zero_label or summary.values_capped:
        return None  # with values left uncounted no remap is evident
    return suggest_remap(main_values(summary), spec)


def fmt_map(mapping: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in mapping.items()) + "}"
