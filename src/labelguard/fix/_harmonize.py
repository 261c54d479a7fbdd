"""Harmonizing the label sets of several datasets (one per site) onto one common spec.

:func:`harmonize` audits each dataset, lists its labels (mask values, class names, class ids)
and proposes one map per dataset onto a common spec; :func:`apply_mapping` applies a saved
proposal with the ``fix`` functions (each dataset in its own journaled run, so ``fix undo``
restores it).

The mapping file is JSON::

    {
      "format": "labelguard-harmonize",
      "version": 1,
      "spec": {"classes": ["background", "dog", "cat"]},   # or {"num_classes": 3}
      "datasets": [
        {"path": "site_a", "layout": "voc", "kind": "names",
         "labels": {"Dog": 12, "cat": 5},                  # what the audit counted
         "map": {"Dog": "dog"}},                            # fix rename --map Dog=dog
        {"path": "site_b", "layout": "masks", "kind": "values",
         "labels": {"0": 4, "255": 4}, "map": {"255": 1}},  # fix remap --map 255:1
        {"path": "site_c", "layout": "yolo", "kind": "ids",
         "labels": {"dog": 3}, "classes": ["dog", "cat"],
         "map": {"0": 1, "1": 2}, "names_file": "site_c/classes.txt"}  # fix remap --ids, names file rewritten
      ]
    }

``kind`` says which fix applies the map: ``values`` (mask values, ``fix remap``), ``names``
(``fix rename``) or ``ids`` (class ids of YOLO rows, COCO categories, CSV labels:
``fix remap --ids``). The class-name file a dataset declares its classes in (classes.txt,
labels.txt, obj.names: ``names_file``, which must lie inside its dataset) is rewritten to the
common list. Paths are relative to the mapping file's folder. Edit the file to change the
proposal before applying it.

How the proposal is made: class names that differ only by case, blanks or punctuation, or by
one swap of two neighbouring letters (``dgo``), are one class, spelled as most objects spell
it; the common class list follows the first dataset's order. Mask values (and ids without
names) are matched by rank: each dataset's sorted values go to ``0..n-1``, which is a guess
to review (it is right for 0/255 against 0/1, not for sites that left a class out).

Labels that are no class of their own dataset (negative ids, ids or values outside the class
count the dataset declares, its ignore values) are listed as ``invalid`` and never mapped onto
a class of the common spec: mapping ``-1`` to 0 would make every unlabelled pixel background.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from labelguard.core.spec import LabelSpec, normalise_name
from labelguard.core.paths import display_path, resolves_inside
from labelguard.errors import SpecError
from labelguard.fix._base import FixResult, read_json_file
from labelguard.fix._journal import FixError
from labelguard.readers.base import NAME_LIST_FILES

FORMAT = "labelguard-harmonize"


@dataclass
class DatasetLabels:
    """One dataset's labels and its proposed map onto the common spec.

    Attributes:
        path: the dataset folder (as given, or relative to the mapping file).
        layout: the layout the audit read it with.
        kind: ``values``, ``names`` or ``ids``: which fix applies ``map``.
        labels: label (value, name or id, as text) -> files (values) or objects/rows.
        map: old label -> new label (only the labels that change).
        classes: the dataset's own class list in id order (``ids`` with names).
        names_file: the class-name file rewritten to the common list (YOLO).
        invalid: labels that are no class of the dataset itself (negative ids, ids or values
            at or above its own class count, its own ignore values) -> why; never mapped onto
            a class of the common spec.
    """

    path: str
    layout: str
    kind: str
    labels: dict[str, int]
    map: dict[str, Any] = field(default_factory=dict)
    classes: list[str] | None = None
    names_file: str | None = None
    invalid: dict[str, str] = field(default_factory=dict)

    @property
    def classes_found(self) -> dict[str, int]:
        """The labels that are classes of the dataset (``labels`` without the invalid ones)."""
        return {k: n for k, n in self.labels.items() if k not in self.invalid}

    def to_dict(self) -> dict[str, Any]:
        data = {"path": self.path, "layout": self.layout, "kind": self.kind, "labels": self.labels,
                "map": {str(k): v for k, v in self.map.items()}}
        if self.invalid:
            data["invalid"] = self.invalid
        if self.classes is not None:
            data["classes"] = self.classes
        if self.names_file is not None:
            data["names_file"] = self.names_file
        return data


@dataclass
class Harmonization:
    """A proposal: the common spec and one map per dataset (see the module docstring).

    Example:
        >>> plan = harmonize(["site_a", "site_b"])  # doctest: +SKIP
        >>> plan.save("mapping.json")  # doctest: +SKIP
        >>> apply_mapping("mapping.json", apply=True)  # doctest: +SKIP
    """

    spec: LabelSpec
    datasets: list[DatasetLabels]
    notes: list[str] = field(default_factory=list)

    @property
    def differences(self) -> list[str]:
        """One line per dataset whose labels differ from the common spec."""
        lines = []
        for dataset in self.datasets:
            if dataset.map:
                pairs = ", ".join(f"{k} -> {v}" for k, v in dataset.map.items())
                lines.append(f"{dataset.path} ({dataset.layout}): {pairs}")
            elif dataset.names_file and dataset.classes != list(self.spec.classes or ()):
                lines.append(f"{dataset.path} ({dataset.layout}): class list differs ({dataset.names_file})")
        return lines

    def to_dict(self, base: str | None = None) -> dict[str, Any]:
        spec = {k: v for k, v in self.spec.to_dict().items() if k in ("classes", "num_classes", "values")}
        datasets = []
        for dataset in self.datasets:
            data = dataset.to_dict()
            if base is not None:
                data["path"] = _relative(dataset.path, base)
                if dataset.names_file:
                    data["names_file"] = _relative(dataset.names_file, base)
            datasets.append(data)
        return {"format": FORMAT, "version": 1, "spec": spec, "datasets": datasets, "notes": self.notes}

    def save(self, path: str) -> None:
        """Write the mapping file (paths relative to its folder)."""
        base = os.path.dirname(os.path.abspath(path))
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(base), handle, indent=2, ensure_ascii=False)
            handle.write("\n")

    @classmethod
    def load(cls, path: str) -> "Harmonization":
        """Read a mapping file; FixError naming what is wrong."""
        data = read_json_file(path, "mapping file")
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise FixError(f"{path} is not a mapping file (no \"format\": \"{FORMAT}\"); "
                           "write one with `labelguard harmonize A B -o mapping.json`")
        base = os.path.dirname(os.path.abspath(path))
        try:
            spec = LabelSpec.from_mapping(data.get("spec") or {}, path)
        except SpecError as exc:
            raise FixError(str(exc)) from None
        datasets = []
        for number, entry in enumerate(data.get("datasets") or [], 1):
            if not isinstance(entry, dict) or entry.get("kind") not in ("values", "names", "ids") \
                    or not isinstance(entry.get("path"), str) or not isinstance(entry.get("map", {}), dict):
                raise FixError(f"{path}: dataset {number} needs a path, a kind (values, names or ids) and a map")
            names_file = entry.get("names_file")
            dataset_path = os.path.normpath(os.path.join(base, entry["path"]))
            if names_file is not None:
                if not isinstance(names_file, str) or not names_file:
                    raise FixError(f"{path}: dataset {number}'s names_file is not a file name")
                names_file = os.path.normpath(os.path.join(base, names_file))
                if not resolves_inside(names_file, dataset_path) or os.path.realpath(names_file) == \
                        os.path.realpath(dataset_path):
                    raise FixError(f"{path}: dataset {number}'s names_file {names_file} is not inside its dataset "
                                   f"{dataset_path} (links resolved); a mapping file rewrites only files of the "
                                   "datasets it names")
            datasets.append(DatasetLabels(
                dataset_path, entry.get("layout", ""), entry["kind"],
                dict(entry.get("labels") or {}), dict(entry.get("map") or {}), entry.get("classes"),
                names_file, dict(entry.get("invalid") or {})))
        return cls(spec, datasets, list(data.get("notes") or []))


def _relative(path: str, base: str) -> str:
    try:
        return os.path.relpath(os.path.abspath(path), base)
    except ValueError:  # another drive
        return os.path.abspath(path)


def _swapped(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one swap of two neighbouring letters."""
    if len(a) != len(b) or len(a) < 3:
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def _same_class(a: str, b: str) -> bool:
    ka, kb = normalise_name(a), normalise_name(b)
    return ka == kb or _swapped(ka, kb)


def _names_file(spec: LabelSpec) -> str | None:
    """The class-name file (classes.txt, obj.names...) the dataset's class list was read from."""
    return next((s for s in spec.sources if os.path.basename(s) in NAME_LIST_FILES and os.path.isfile(s)), None)


def _read(path: str) -> DatasetLabels:
    from labelguard._audit import audit
    from labelguard.rules._unread import refuse_unread_for_extras

    report = audit(path, use_project_config=False)
    refuse_unread_for_extras(report.findings, "class map")
    layout = report.layouts[0] if report.layouts else ""
    summary = report.summary
    own = report.spec
    if summary.value_files and not summary.class_objects:
        labels = {str(v): n for v, n in sorted(summary.value_files.items())}
        return DatasetLabels(path, layout, "values", labels, invalid=_invalid_numbers(labels, own))
    objects = {str(k): int(n) for k, n in summary.class_objects.items()}
    if not objects:
        raise FixError(f"{path}: the audit found no labels to harmonize (layout {layout or 'unknown'})")
    declared = list(own.classes) if own.classes else None
    if layout == "yolo" or (layout == "csv" and all(_is_int(k) for k in objects)):
        if layout == "yolo" and declared:
            # The audit counts valid ids under their names and the others under the id itself.
            invalid = {k: f"class id {k} is not one of the {len(declared)} classes of the dataset"
                       for k in objects if k not in declared and _is_int(k)}
            return DatasetLabels(path, layout, "ids", objects, classes=declared, names_file=_names_file(own),
                                 invalid=invalid)
        return DatasetLabels(path, layout, "ids", objects, invalid=_invalid_numbers(objects, own))
    return DatasetLabels(path, layout, "names", objects, classes=declared, names_file=_names_file(own))


def _is_int(label: str) -> bool:
    return label.lstrip("+-").isdigit()


def _invalid_numbers(labels: dict[str, int], own: LabelSpec) -> dict[str, str]:
    """The numeric labels that are no class of the dataset: negative ones, its ignore values and,
    when it declares its classes, those outside them."""
    invalid = {}
    for label in labels:
        value = int(label)
        if own.is_ignored(value, reduce=False):
            invalid[label] = f"{value} is the dataset's ignore index"
        elif value < 0:
            invalid[label] = f"{value} is negative: no class id"
        elif not own.is_legal(value, reduce=False):
            invalid[label] = f"{value} is outside the dataset's own spec {own.describe()}"
    return invalid


def _invalid_notes(datasets: list[DatasetLabels]) -> list[str]:
    return [f"{d.path}: {', '.join(d.invalid.values())}; left out of the map (not a class to harmonize): "
            "fix or declare it first (`labelguard audit`)" for d in datasets if d.invalid]


def harmonize(paths: Sequence[str | os.PathLike], spec: LabelSpec | None = None) -> Harmonization:
    """Compare the labels of several datasets and propose one map per dataset onto a common spec.

    Args:
        paths: the dataset folders (two or more; the first one's class order leads).
        spec: the common spec to map onto (default: proposed from the data).

    Returns:
        A :class:`Harmonization`; ``.save(file)`` writes the mapping file that
        ``labelguard fix remap/rename --from-mapping FILE`` (or :func:`apply_mapping`) applies.

    Raises:
        FixError: fewer than two paths, a path without labels, or datasets of mixed kinds
            (mask values against class names) that have no common ground.
    """
    folders = [os.fspath(p) for p in paths]
    if len(folders) < 2:
        raise FixError(f"harmonize compares two or more datasets; got {len(folders)}")
    for path in folders:
        if not os.path.exists(path):
            raise FixError(f"{path}: no such file or directory")
    datasets = [_read(p) for p in folders]
    named = [d for d in datasets if d.kind == "names" or d.classes]
    if named and len(named) != len(datasets):
        numeric = ", ".join(f"{d.path} ({d.layout})" for d in datasets if d not in named)
        raise FixError(f"cannot match numbered labels ({numeric}) with named classes: give those datasets "
                       "a class-name file (classes.txt, labels.txt) first")
    if named:
        return _harmonize_names(datasets, spec)
    return _harmonize_numbers(datasets, spec)


def _harmonize_names(datasets: list[DatasetLabels], spec: LabelSpec | None) -> Harmonization:
    totals: Counter = Counter()
    for dataset in datasets:
        totals.update(dataset.classes_found)
    canonical: list[str] = list(spec.classes) if spec is not None and spec.classes else []
    fixed = bool(canonical)
    # Most used spelling first, so that it names the class.
    for name, _ in sorted(totals.items(), key=lambda item: (-item[1], item[0] != item[0].lower(), item[0])):
        if not fixed and not any(_same_class(name, c) for c in canonical):
            canonical.append(name)
    notes = _invalid_notes(datasets)

    def common(name: str) -> str | None:
        return next((c for c in canonical if c == name), None) or next(
            (c for c in canonical if _same_class(name, c)), None)

    if not fixed:
        ordered: list[str] = []
        for dataset in datasets:
            own = dataset.classes or sorted(dataset.classes_found)
            for name in own:
                target = common(name)
                if target is not None and target not in ordered:
                    ordered.append(target)
        canonical = ordered + [c for c in canonical if c not in ordered]
    for dataset in datasets:
        if dataset.kind == "ids":
            own = dataset.classes or []
            for index, name in enumerate(own):
                target = common(name)
                if target is None:
                    notes.append(f"{dataset.path}: class {name!r} has no counterpart in the common spec")
                elif canonical.index(target) != index:
                    dataset.map[str(index)] = canonical.index(target)
            if dataset.names_file is None and own != canonical:
                notes.append(f"{dataset.path}: its class names are not in a names file labelguard rewrites "
                             f"(data.yaml?); set them to {canonical} after applying the map")
        else:
            for name in sorted(dataset.classes_found):
                target = common(name)
                if target is None:
                    notes.append(f"{dataset.path}: class {name!r} has no counterpart in the common spec")
                elif target != name:
                    dataset.map[name] = target
    return Harmonization(LabelSpec.from_source("harmonize", classes=tuple(canonical)), datasets, notes)


def _harmonize_numbers(datasets: list[DatasetLabels], spec: LabelSpec | None) -> Harmonization:
    given = spec if spec is not None else LabelSpec()
    value_sets = [sorted(int(v) for v in d.classes_found if not given.is_ignored(int(v), reduce=False))
                  for d in datasets]
    if spec is not None and spec.allowed_values():
        common_spec = spec
    else:
        common_spec = LabelSpec.from_source("harmonize", num_classes=max(1, max(len(v) for v in value_sets)))
    # The class values in order, as a ValueSet: zipped with the values found, never listed whole.
    allowed = common_spec.allowed_values()
    # Not a user mistake: a spec given with class values is used, else one of num_classes,
    # and either has its values.
    assert allowed is not None
    notes = _invalid_notes(datasets)
    for dataset, values in zip(datasets, value_sets):
        if len(values) > allowed.size:
            notes.append(f"{dataset.path}: {len(values)} values {values} for {allowed.size} classes; mapped "
                         "the lowest ones only, map the rest by hand")
        for value, target in zip(values, allowed):
            if value != target:
                dataset.map[str(value)] = target
        if len(values) < allowed.size and dataset.map:
            notes.append(f"{dataset.path}: only {len(values)} of {allowed.size} classes occur; the rank match "
                         f"{', '.join(f'{k} -> {v}' for k, v in dataset.map.items())} is a guess, check it")
    return Harmonization(common_spec, datasets, notes)


def apply_mapping(mapping_file: str, *, kinds: Sequence[str] = ("values", "names", "ids"), apply: bool = False,
                  force: bool = False) -> list[FixResult]:
    """Apply a saved :class:`Harmonization`: each dataset's map with the fix of its kind, each
    written file re-audited against the common spec; one journaled run per dataset.

    Args:
        mapping_file: the file ``labelguard harmonize ... -o FILE`` wrote.
        kinds: only these kinds of map (``fix remap`` applies values and ids, ``fix rename`` names).
        apply: write (default: a dry run).
        force: also rewrite read-only and hard-linked files (see :func:`labelguard.fix.remap`).

    Returns:
        One :class:`FixResult` per dataset that has something to change.
    """
    from labelguard.fix._annotations import remap_class_ids, rename_classes
    from labelguard.fix._api import remap, rename

    plan = Harmonization.load(mapping_file)
    results = []
    for dataset in plan.datasets:
        if dataset.kind not in kinds:
            continue
        if not os.path.exists(dataset.path):
            raise FixError(f"{mapping_file}: dataset {dataset.path} does not exist")
        extra = []
        if dataset.kind in ("ids", "names") and dataset.names_file and plan.spec.classes:
            extra = [(dataset.names_file, "".join(c + "\n" for c in plan.spec.classes).encode("utf-8"))]
        if not dataset.map and not extra:
            continue
        if dataset.kind == "values":
            result = remap(dataset.path, {int(k): int(v) for k, v in dataset.map.items()}, spec=plan.spec,
                           apply=apply, force=force)
        elif dataset.kind == "names" and dataset.layout != "imagefolder":
            result = rename_classes([dataset.path], {str(k): str(v) for k, v in dataset.map.items()},
                                    spec=plan.spec, apply=apply, extra=extra, force=force)
        elif dataset.kind == "names":
            result = rename(dataset.path, {str(k): str(v) for k, v in dataset.map.items()}, spec=plan.spec,
                            apply=apply)
            if extra:
                assert dataset.names_file is not None  # not a user mistake: ``extra`` is only set with one
                result.notes.append(f"{display_path(dataset.names_file)} still lists the old class names; "
                                    "set it to the common list")
        else:
            result = remap_class_ids([dataset.path], {int(k): int(v) for k, v in dataset.map.items()},
                                     spec=plan.spec, apply=apply, extra=extra, force=force)
        result.notes.insert(0, f"dataset {display_path(dataset.path)}")
        results.append(result)
    return results
