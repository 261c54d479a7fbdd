"""The class-label checks every detection and classification format shares.

A reader hands over the class names or integer ids of one file (VOC objects, YOLO rows,
COCO annotations, CSV rows, ImageFolder folders) with their places in the file; these
functions return the LG101 / LG102 / LG103 findings, one per problem and file, with every
place listed in ``data``:

* LG101 ``data``: ``class``, ``suggestions``, ``unit``, ``places``, ``count``.
* LG102 ``data``: ``ids`` (the offending ids, sorted), ``num_classes`` (None when the spec
  is a non-contiguous set of values), ``allowed`` (those values then), ``unit``,
  ``places``, ``count``.
* LG103 ``data``: ``ids``, ``ignore``, ``unit``, ``places``, ``count``.

``places`` are 1-based (object index, row number) and capped at :data:`PLACES_KEPT`;
``count`` is always the full number. Reports group LG102 findings of many files by
``num_classes`` and ``ids`` into one line.

When a spec gives class names only, ids are checked against ``len(classes)``; when it gives
ids only (``num_classes``/``values``), names that are integers (VOC files labelled "0", "1")
are checked as ids and any other name is LG101.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable, Sequence

from labelguard.checks.classes import ID_TOO_LARGE, NEGATIVE_ID, UNKNOWN_CLASS
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec
from labelguard.core.text import LISTED, did_you_mean, noun, plural, shorten, verb

PLACES_KEPT = 50
PLACES_SHOWN = 5

__all__ = ["PLACES_KEPT", "count_labels", "id_findings", "label_findings", "name_findings"]


@lru_cache(maxsize=16)
def _allowed_names(spec: LabelSpec) -> frozenset[str] | None:
    # Memoised per spec: membership is then one hash per name, whatever the class count.
    return frozenset(spec.classes) if spec.classes is not None else None


def _places(indices: Sequence[int], places: Sequence[int] | None) -> list[int]:
    return [places[i] if places is not None else i + 1 for i in indices]


def _where(unit: str, places: list[int]) -> str:
    return f"{noun(len(places), unit)} {shorten(places, PLACES_SHOWN)}"


def name_findings(
    display: str,
    names: Sequence[str],
    spec: LabelSpec,
    *,
    unit: str = "object",
    places: Sequence[int] | None = None,
) -> list[Finding]:
    """LG101 for every name of one file that the spec does not allow (one finding per name).

    Args:
        display: the file as shown in findings.
        names: the class names in file order.
        spec: the label spec.
        unit: what a place counts ("object", "row", "annotation").
        places: the 1-based place of each name (defaults to its position + 1).
    """
    allowed = _allowed_names(spec)
    if allowed is None:
        return _names_as_ids(display, names, spec, unit, places) if spec.is_known else []
    unknown = [i for i, name in enumerate(names) if name not in allowed]
    if not unknown:
        return []
    by_name: dict[str, list[int]] = {}
    for i in unknown:
        by_name.setdefault(names[i], []).append(i)
    findings = []
    n = len(allowed)
    for name, indices in by_name.items():
        where = _places(indices, places)
        suggestions = spec.closest_classes(name)
        guess = did_you_mean(suggestions)
        findings.append(UNKNOWN_CLASS.finding(
            display,
            f"class {name!r} is not one of the {n} classes of the spec ({_where(unit, where)}){guess}",
            hint=(f"Rename it to {suggestions[0]!r}" if suggestions else "Rename it to a class of the spec")
            + ", add it to the class list, or remove the file if it comes from another dataset.",
            **{"class": name},
            suggestions=suggestions, unit=unit, places=where[:PLACES_KEPT], count=len(where),
        ))
    return findings


def _names_as_ids(display: str, names: Sequence[str], spec: LabelSpec, unit: str,
                  places: Sequence[int] | None) -> list[Finding]:
    """A spec of ids only: integer names are ids, any other name is unknown."""
    ids: list[int] = []
    id_places: list[int] = []
    others: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        try:
            value = int(name)
        except ValueError:
            others.setdefault(name, []).append(i)
            continue
        ids.append(value)
        id_places.append(places[i] if places is not None else i + 1)
    findings = id_findings(display, ids, spec, unit=unit, places=id_places)
    for name, indices in others.items():
        where = _places(indices, places)
        findings.append(UNKNOWN_CLASS.finding(
            display,
            f"class {name!r} is not an integer id, and the spec names no classes "
            f"({spec.describe()}): {_where(unit, where)}",
            hint="Give the class names (--classes, a labels.txt beside the annotations), "
            "or remove the file if it comes from another dataset.",
            **{"class": name},
            suggestions=[], unit=unit, places=where[:PLACES_KEPT], count=len(where),
        ))
    return findings


def id_findings(
    display: str,
    ids: Sequence[int],
    spec: LabelSpec,
    *,
    unit: str = "row",
    places: Sequence[int] | None = None,
) -> list[Finding]:
    """LG102 (ids past the spec) and LG103 (negative ids) for the ids of one file.

    One finding per code and file; ``data`` holds the offending ids and every place.
    """
    if not spec.is_known:
        return []
    # Asked once per distinct id; class ids are never shifted by reduce_zero_label.
    illegal = {value for value in set(ids) if not spec.is_legal(value, reduce=False)}
    bad = [i for i, value in enumerate(ids) if value in illegal] if illegal else []
    if not bad:
        return []
    negative = [i for i in bad if ids[i] < 0]
    too_large = [i for i in bad if ids[i] >= 0]
    findings = []
    if too_large:
        found = sorted({ids[i] for i in too_large})
        where = _places(too_large, places)
        listing = shorten(found, 10)
        what = noun(len(found), "class id")
        if spec.is_contiguous():
            n = spec.effective_num_classes
            assert n is not None  # not a user mistake: a known spec (checked above) counts its classes
            names = f" ({plural(len(spec.classes), 'class name')})" if spec.classes else ""
            message = (f"{what} {listing} {verb(len(found), 'is')} >= num_classes={n}{names}: "
                       f"ids must be 0..{n - 1} ({_where(unit, where)})")
            hint = (f"If the data is right, set num_classes (YOLO: nc) to the largest id found + 1; "
                    f"otherwise remap the ids to 0..{n - 1}.")
            extra: dict[str, int | list[int] | None] = {"num_classes": n, "allowed": None}
        else:
            allowed = spec.allowed_values()
            assert allowed is not None  # not a user mistake: a known spec (checked above) has its values
            values = list(allowed)  # not an interval from 0: the spec's own values
            message = (f"{what} {listing} {verb(len(found), 'is')} not among the allowed "
                       f"values [{shorten(values, LISTED)}] ({_where(unit, where)})")
            hint = "Remap the ids to the spec's values, or add them to the spec."
            extra = {"num_classes": None, "allowed": values}
        findings.append(ID_TOO_LARGE.finding(
            display, message, hint=hint,
            ids=found, **extra, unit=unit, places=where[:PLACES_KEPT], count=len(where),
        ))
    if negative:
        found = sorted({ids[i] for i in negative})
        where = _places(negative, places)
        ignore = list(spec.ignore)
        declared = f"ignore index {ignore}" if ignore else "no ignore index"
        findings.append(NEGATIVE_ID.finding(
            display,
            f"negative {noun(len(found), 'class id')} {shorten(found, LISTED)} "
            f"({declared} declared): {_where(unit, where)}",
            hint=f"Declare {found[0]} as ignore index (`--ignore-index {found[0]}`) and pass it to the "
            "loss, or drop those labels.",
            ids=found, ignore=ignore, unit=unit, places=where[:PLACES_KEPT], count=len(where),
        ))
    return findings


def label_findings(
    display: str,
    labels: Sequence[str] | Sequence[int],
    spec: LabelSpec,
    *,
    unit: str = "object",
    places: Sequence[int] | None = None,
) -> list[Finding]:
    """:func:`name_findings` for names, :func:`id_findings` for integer ids."""
    if labels and isinstance(labels[0], str):
        return name_findings(display, labels, spec, unit=unit, places=places)  # type: ignore[arg-type]
    return id_findings(display, labels, spec, unit=unit, places=places)  # type: ignore[arg-type]


def count_labels(labels: Iterable[str] | Iterable[int]) -> Counter:
    """Objects per class as the summary keys them: the name, or the id as text."""
    return Counter(label if isinstance(label, str) else str(label) for label in labels)
