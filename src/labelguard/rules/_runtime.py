"""What the PyTorch guard sees, as the records the audit checks: a mask tensor becomes the
``mask`` sample of a file (its container ``"array"``), a vector of class ids the ``annotation``
record of a file of labels (its unit ``"label"``), and the registered rules of that scope
judge it through :func:`labelguard.core.rules.run_rules` with ``at_run_time=True``: a rule
written once runs in the audit and in ``guard()``, with the same message."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from labelguard.core.findings import Finding
from labelguard.core.records import AnnotationRecord, MaskRecord, MaskSample
from labelguard.core.rules import judge
from labelguard.core.spec import LabelSpec
from labelguard.rules._masks import label_sample
from labelguard.core.registry import get as get_check
from labelguard.errors import LabelError
from labelguard.rules.lg102 import ID_TOO_LARGE
from labelguard.rules.lg201 import VALUE_OUTSIDE_SPEC
from labelguard.rules.lg204 import NON_INTEGER, ids_not_whole


def tensor_findings(display: str | None, array: np.ndarray, spec: LabelSpec) -> tuple[list[Finding], np.ndarray,
                                                                                   np.ndarray]:
    """The registered ``mask`` rules on a label array that comes from no file (a target tensor
    of the guard), with its histogram: the array becomes the sample the audit checks (its
    container ``"array"``) and every rule that is not about a file's storage judges it.

    Float arrays holding only whole numbers are checked as integers; otherwise LG204 names
    the non-integer and non-finite pixel counts and the histogram is of the whole numbers.
    TypeError when the dtype holds no labels; RuntimeError naming the rule when a rule crashes
    (a bug of labelguard, never of the data)."""
    sample = label_sample(MaskSample(display, MaskRecord(array, "array", None, str(array.dtype))), array)
    assert sample.values is not None and sample.counts is not None  # not a user mistake: label_sample sets both
    return judge("mask", sample, spec, display or "a target", at_run_time=True), sample.values, sample.counts


def id_findings(display: str | None, array: np.ndarray, spec: LabelSpec, dtype: str,
                distinct: bool = False) -> tuple[list[Finding], np.ndarray | None]:
    """The registered ``annotation`` rules on class ids that come from no file (a scalar or a
    vector target of the guard), with the distinct whole ids when ``distinct`` (else None): the ids become a record of
    labels (an array: the rules judge it vectorised), each at its 1-based position. Float ids
    that are not whole numbers (or NaN/Inf) are LG204 and left out of the record. RuntimeError
    naming the rule when a rule crashes."""
    findings: list[Finding] = []
    flat = array.reshape(-1)
    kept = None  # the whole ids of a float target, when some were left out
    if flat.dtype.kind == "f":
        finite = np.isfinite(flat)
        whole = finite & (np.floor(flat) == flat)
        non_finite = int(flat.size - np.count_nonzero(finite))
        fractional = int(np.count_nonzero(finite & ~whole))
        if non_finite or fractional:
            examples = np.unique(flat[finite & ~whole])[:5].tolist()
            findings.append(ids_not_whole(display, dtype, fractional, non_finite, examples))
            kept = whole
        flat = flat[whole].astype(np.int64)
    # The ids as an array (labels, places): the rules judge them vectorised, whatever their number.
    record = AnnotationRecord(display, "tensor", unit="position", labels=flat,
                              places=np.flatnonzero(kept) + 1 if kept is not None else None)
    findings.extend(judge("annotation", record, spec, display or "a target", at_run_time=True))
    # The distinct ids cost a sort of every id: only a caller that asks (a one-hot loss) pays it.
    return findings, np.unique(flat) if distinct else None


# The record fields the box rules read (LG301, LG302): the only rules a detection target's
# boxes get, its class ids being judged as any vector of ids.
BOX_FIELDS = ("boxes", "extents", "normalised")


def box_findings(display: str | None, spec: LabelSpec, labels: list, *, corners: np.ndarray | None = None,
                 image_size: tuple[float, float] | None = None, extents: list | None = None,
                 normalised: list | None = None, box_style: str = "corners",
                 tolerance: float = 0.0) -> list[Finding]:
    """The registered rules that read boxes, on a detection target's boxes that come from no
    file: ``corners`` (n, 4) as (xmin, ymin, xmax, ymax) in the pixels of an input of
    ``image_size`` (width, height; None when unknown), or YOLO-like ``extents`` (width, height)
    with the ``normalised`` values that must lie in [0, 1]; ``labels`` names each box's class;
    ``tolerance``: how far a box may pass the border (a transform's rounding).
    RuntimeError naming the rule when a rule crashes."""
    record = AnnotationRecord(display, "tensor", unit="box", labels=labels,
                              boxes=corners.tolist() if corners is not None and len(corners) <= _LISTED else corners,
                              image_size=image_size, extents=extents, normalised=normalised, box_style=box_style,
                              border_tolerance=tolerance)
    return judge("annotation", record, spec, display or "a target", at_run_time=True, reading=BOX_FIELDS)


# Up to this many boxes are judged as a list (LG301's one comparison chain per box beats numpy's
# set-up on a few boxes); more as an array, vectorised.
_LISTED = 64


def binary_target_findings(display: str | None, array: np.ndarray, loss: str) -> list[Finding]:
    """The findings of a float target of a BCE loss (``loss`` names it): NaN/Inf values
    (LG204) and values outside [0, 1] (LG201 in a mask, LG102 in a vector of labels)."""
    findings = []
    finite = np.isfinite(array)
    non_finite = int(array.size - np.count_nonzero(finite))
    if non_finite:
        findings.append(NON_INTEGER.finding(
            display, f"{non_finite} target values are NaN/Inf ({loss} target)",
            hint="Find where the dataset produces NaN (a division by zero in normalisation, a "
            "failed lookup) and fix it there.",
            non_finite=non_finite,
        ))
    outside = finite & ((array < 0) | (array > 1))
    n_outside = int(np.count_nonzero(outside))
    if n_outside:
        values, counts = np.unique(array[outside], return_counts=True)
        pairs = ", ".join(f"{v:g} in {c}" for v, c in zip(values[:8].tolist(), counts[:8].tolist()))
        check = VALUE_OUTSIDE_SPEC if array.ndim >= 2 else ID_TOO_LARGE
        hint = ("Binary masks stored as 0/255: divide by 255 (or remap {255: 1})."
                if 255 in values.tolist() else "Scale the targets into [0, 1].")
        findings.append(check.finding(
            display,
            f"{n_outside} target values outside [0, 1] ({pairs}); {loss} needs targets in [0, 1]",
            hint=hint, values=values[:20].tolist(), counts=counts[:20].tolist(),
        ))
    return findings


def finding_of(error: LabelError) -> Finding:
    """The finding a guard's error was raised for, as a report lists it (the preflight's
    report of a sample its guarded dataset refused)."""
    message, _, hint = error.message.partition(" Hint: ")
    return get_check(error.code or "").finding(error.source, message, hint, index=error.index, values=error.values)


def named_finding(named: str, finding: Finding) -> Finding:
    """``finding`` with ``named`` (the part of a target it is about, e.g. ``"nested target
    component 1 (of 2, counted from 0): "``) before its message; ``finding`` itself when
    ``named`` is empty."""
    return replace(finding, message=named + finding.message) if named else finding
