"""The fix functions of the public API; the ``labelguard fix`` commands are thin layers over them."""

from __future__ import annotations

import os
from typing import Sequence, TypeAlias

import numpy as np

from labelguard.core import storage
from labelguard.core.spec import LabelSpec
from labelguard.core.text import noun, plural, shorten, shown_color
from labelguard.fix._base import CannotFix, FixResult, load_report, parse_name_map, parse_value_map, report_paths
from labelguard.fix._journal import FixError
from labelguard.fix._masks import (
    LabelFile, color_table, colors_to_indices, describe_counts, find_masks, open_color_file, open_label_file,
    remap_array, run_mask_fix, shown_values, values_of,
)
from labelguard.layouts.base import AuditOptions
from labelguard.fix._remote import fixed_locally
from labelguard.readers.base import ReadError
from labelguard.readers.colormap import ColorMap, load_color_map

# The paths a fix function takes; kept as text, as the annotations that name it are.
PathsArg: TypeAlias = "str | os.PathLike | Sequence[str | os.PathLike] | None"


def _paths(paths, report: dict | None) -> list[str]:
    """The paths given (or the report's), ``file://`` URLs as their paths; URLs of object
    storage as they are (:func:`labelguard.fix._remote.local_copy` copies them)."""
    if paths is None or (not isinstance(paths, (str, os.PathLike)) and not list(paths)):
        if report is None:
            raise FixError("no paths given")
        return report_paths(report)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [storage.local_path(os.fspath(p)) for p in paths]




def remap(
    paths: PathsArg = None,
    mapping: "str | dict | None" = None,
    *,
    spec: LabelSpec | None = None,
    options: AuditOptions | None = None,
    from_report: str | None = None,
    apply: bool = False,
    out: str | None = None,
    force: bool = False,
    storage_options: dict | None = None,
) -> FixResult:
    """Replace mask values: ``{255: 1}`` turns every 255 into 1 (all pairs at once, so a swap works).

    Masks keep their format: PNG its mode (L, P, I;16), palette, text chunks and resolution, TIFF
    its compression, resolution and ImageJ metadata, NPZ its other arrays (copied byte for
    byte), HDF5 its other datasets, attributes and chunking, NIfTI its header and affine.

    Args:
        paths: dataset folders or mask files (default: the report's paths).
        mapping: ``"255:1,3:2"`` or ``{255: 1, 3: 2}`` (default: the report's suggested remap).
        spec: the label spec the re-audit checks against (default: what the data and config declare).
        options: layout options, as for :func:`labelguard._audit.audit` (``key`` for NPZ/HDF5).
        from_report: a saved JSON audit report whose ``suggested_remap`` to apply.
        apply: write (default: a dry run that only reports).
        out: write the fixed masks under this folder (outside the data) and leave the input untouched.
            For a dataset in object storage (``s3://...``), which a fix never writes, the folder
            gets a copy of it, fixed in place (journaled: ``undo(out)`` restores the copy).
        force: also rewrite what is refused by default: masks the audit flags as images or as
            JPEG-damaged (LG202), since a remap would hide the damage; read-only files (they stay
            read-only); files with other hard links (this name gets the new bytes, the other
            names keep the old). Symbolic links and HDF5 files that reach into other files
            are refused even so.
        storage_options: fsspec options for paths in object storage (as for the audit).

    Returns:
        A :class:`FixResult`; ``result.changes`` holds one entry per mask file.

    Raises:
        FixError: no map given or found, bad map, unreadable report.

    Example:
        >>> result = remap("masks/", "255:1", apply=True)  # doctest: +SKIP
        >>> result.count("written")  # doctest: +SKIP
        12
    """
    report = load_report(from_report) if from_report else None
    if mapping is None:
        suggested = (report or {}).get("summary", {}).get("suggested_remap") if report else None
        if not suggested:
            raise FixError("no map given" + (" and the report suggests no remap" if report else "")
                           + "; pass one such as 255:1")
        mapping = suggested
    value_map = parse_value_map(mapping)

    def transform(label_file: LabelFile):
        new, counts = remap_array(label_file.array, value_map)
        before = values_of(label_file.array)
        if not counts:
            return None, f"no value of the map occurs ({noun(len(before), 'value')} {shown_values(before)})", {
                "values": before}
        after = values_of(new)
        return new, f"{describe_counts(counts, value_map)}; values {shown_values(before)} -> {shown_values(after)}", {
            "pixels": {str(k): v for k, v in counts.items()}, "before": before, "after": after}

    def fix(local: list[str], fix_out: str | None, staging) -> FixResult:
        return run_mask_fix("remap", find_masks(local, spec, options), open_label_file, transform,
                            key=(options or AuditOptions()).key, apply=apply, out=fix_out, force=force,
                            command="fix remap --map " + ",".join(f"{k}:{v}" for k, v in value_map.items()))

    return fixed_locally(_paths(paths, report), out, apply, storage_options, fix)


def _load_map(color_map: "str | os.PathLike | dict | ColorMap") -> "dict | ColorMap":
    """A colour map given as a file is read; a table or a ColorMap is used as it is."""
    if isinstance(color_map, (str, os.PathLike)):
        try:
            return load_color_map(os.fspath(color_map))
        except ReadError as exc:
            raise FixError(f"colour map {color_map}: {exc}") from None
    return color_map


def colors(
    paths: PathsArg = None,
    color_map: "str | dict | ColorMap | None" = None,
    *,
    spec: LabelSpec | None = None,
    options: AuditOptions | None = None,
    from_report: str | None = None,
    unmapped: int | None = None,
    mode: str = "P",
    apply: bool = False,
    out: str | None = None,
    force: bool = False,
    storage_options: dict | None = None,
) -> FixResult:
    """Convert colour (RGB/RGBA) masks to index masks.

    The map is, in this order: ``color_map`` (a map file, a :class:`ColorMap` or
    ``{"r,g,b": index}``), the report's ``suggested_color_map``, the map the dataset declares,
    or the map an audit of the data proposes (VOC colours keep their VOC index; otherwise
    black is 0 and the others follow by pixel count).

    Args:
        unmapped: the index for colours not in the map (default: such a file is skipped).
        mode: ``"P"`` writes the index mask with the map's colours as palette (it looks the same
            in a viewer), ``"L"`` a plain grey index mask.
        force: as for :func:`remap`.
        The other arguments are as for :func:`remap`.
    """
    if mode not in ("P", "L"):
        raise FixError(f"mode must be P or L, got {mode!r}")
    report = load_report(from_report) if from_report else None
    return fixed_locally(_paths(paths, report), out, apply, storage_options, lambda local, fix_out, staging: _colors(
        local, color_map, report, spec, options, unmapped, mode, apply, fix_out, force,
        # A copy of a remote dataset is not cached: its paths are gone once the fix is done.
        cache=None if staging is None else False))


def _colors(paths: list[str], color_map, report: dict | None, spec: LabelSpec | None, options: AuditOptions | None,
            unmapped: int | None, mode: str, apply: bool, out: str | None, force: bool,
            cache: bool | None = None) -> FixResult:
    """:func:`colors` of local ``paths``."""
    dataset = find_masks(paths, spec, options)
    given = _load_map(color_map) if color_map is not None else None
    fallback = None
    if given is None and any(own is None for own in dataset.color_maps.values()):
        # Masks of a dataset that declares no colour map: the map the report or the audit
        # proposes from their colours.
        proposal = report["summary"].get("suggested_color_map") if report is not None else None
        if proposal is None:
            from labelguard._audit import audit

            proposal = audit(paths, spec, options=options, cache=cache).suggested_color_map
        if not proposal and all(own is None for own in dataset.color_maps.values()):
            raise FixError("no colour masks found to propose a map from; pass a colour map")
        fallback = _load_map(proposal) if proposal else None
    # A map the user gives applies to every mask; otherwise each dataset's own map, and the
    # proposal for the masks of datasets that declare none.
    maps = {path: next((m for m in (given, own, fallback) if m is not None), None)
            for path, own in dataset.color_maps.items()}
    tables: dict[int, object] = {}

    def table_of(path: str):
        chosen = maps.get(path)
        if chosen is None:
            raise CannotFix("no colour map for this file (its dataset declares none): pass a colour map")
        if id(chosen) not in tables:
            tables[id(chosen)] = color_table(chosen)
        return tables[id(chosen)]

    def opener(path: str, key: str | None) -> LabelFile:
        return open_color_file(path, table_of(path), mode)

    def transform(label_file: LabelFile):
        indices, per_color = colors_to_indices(label_file.array, table_of(label_file.path), unmapped)
        shown = shorten(per_color.items(), 8, lambda item: f"{shown_color(item[0])} -> {item[1][0]} in "
                        f"{plural(item[1][1], 'pixel')}", what="colour")
        return indices.astype(np.int64), shown, {"colors": per_color}

    return run_mask_fix("colors", dataset, opener, transform, apply=apply, out=out, command="fix colors",
                        audit_color_maps={path: m if isinstance(m, ColorMap) else None for path, m in maps.items()},
                        force=force)


def rename(
    paths: "str | os.PathLike | Sequence[str | os.PathLike]",
    mapping: "str | dict",
    *,
    spec: LabelSpec | None = None,
    apply: bool = False,
    out: str | None = None,
    force: bool = False,
    storage_options: dict | None = None,
) -> FixResult:
    """Rename classes: ``"Dog=dog,dgo=dog"`` in VOC XML ``<name>`` texts (the rest of each file stays
    byte-identical), COCO ``categories[].name``, the label cells of CSV/TSV label tables (the other
    cells keep their text) or their one-hot header, and ImageFolder class folders (a folder whose
    new name is free is renamed; one whose new name exists is merged into it file by file).

    Each rewritten file is re-audited with the reader and checks of its format before it
    replaces the original, and refused when it would have more errors.

    Args:
        paths: annotation folders or files, or an ImageFolder tree.
        mapping: ``"OLD=NEW,..."`` or ``{"OLD": "NEW"}``.
        spec: the spec the re-audit checks against (default: what the data and config declare).
        apply: write (default: a dry run).
        out: write the renamed files under this folder instead (not for ImageFolder trees).
        force: also rewrite read-only and hard-linked annotation files (see :func:`remap`).

    Raises:
        FixError: a bad map; for ImageFolder trees, a new name that is not one folder name
            (``/``, ``..``, ``.``, empty, absolute).

    Example:
        >>> result = rename("voc/", "Dog=dog,dgo=dog", apply=True)  # doctest: +SKIP
        >>> undo("voc/")  # doctest: +SKIP
    """
    from labelguard.fix._annotations import rename_classes
    from labelguard.fix._folders import is_imagefolder, rename_folders

    name_map = parse_name_map(mapping)
    def fix(local: list[str], fix_out: str | None, staging) -> FixResult:
        if not any(is_imagefolder(p) for p in local):
            return rename_classes(local, name_map, spec=spec, apply=apply, out=fix_out, force=force)
        result = rename_folders(local, name_map, spec=spec, apply=apply, out=fix_out)
        if force:
            result.notes.append("force changes nothing for class folders: moving a folder rewrites no file")
        return result

    return fixed_locally(_paths(paths, None), out, apply, storage_options, fix)


def remap_ids(
    paths: "str | os.PathLike | Sequence[str | os.PathLike]",
    mapping: "str | dict",
    *,
    spec: LabelSpec | None = None,
    apply: bool = False,
    out: str | None = None,
    force: bool = False,
    storage_options: dict | None = None,
) -> FixResult:
    """Remap integer class ids: the class column of YOLO rows (only that text changes), COCO
    ``categories[].id`` with every ``annotations[].category_id``, and the label cells of CSV/TSV
    tables whose labels are ids.

    Each rewritten file is re-audited (its format's reader and checks) and refused when worse.

    Args:
        paths: label folders or files.
        mapping: ``"FROM:TO,..."`` or ``{FROM: TO}``.
        spec: the spec the re-audit checks against (default: what the data and config declare).
        apply: write (default: a dry run).
        out: write the remapped files under this folder instead.
        force: also rewrite read-only and hard-linked files (see :func:`remap`).
    """
    from labelguard.fix._annotations import remap_class_ids

    value_map = parse_value_map(mapping)
    def fix(local: list[str], fix_out: str | None, staging) -> FixResult:
        return remap_class_ids(local, value_map, spec=spec, apply=apply, out=fix_out, force=force)

    return fixed_locally(_paths(paths, None), out, apply, storage_options, fix)
