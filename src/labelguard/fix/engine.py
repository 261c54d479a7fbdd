"""The per-file loop every mask fix runs: plan, write to a temp file, verify, re-audit, replace.

Dry run (the default) reads and transforms every file and reports what would change;
``apply=True`` writes through one :class:`~labelguard.fix.journal.Run`, so every write is
atomic, backed up and undoable. ``out`` writes the fixed files under another folder (same
relative paths) and leaves the input untouched.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from labelguard import layouts
from labelguard.audit import load_settings, resolve_spec
from labelguard.core.spec import LabelSpec
from labelguard.errors import MissingDependency
from labelguard.fix.base import PLANNED, REFUSED, SKIPPED, UNCHANGED, WRITTEN, FileChange, FixResult
from labelguard.fix.journal import FixError, Run, temp_path_for
from labelguard.fix.masks import CannotFix, LabelFile, audit_file, worse, write_verified
from labelguard.layouts.base import AuditOptions, display_path
from labelguard.layouts.masks import process_mask

log = logging.getLogger(__name__)

# transform(label_file) -> (new array or None when nothing changes, one-line summary, details)
Transform = Callable[[LabelFile], tuple[np.ndarray | None, str, dict]]
Opener = Callable[[str, str | None], LabelFile]


@dataclass
class Dataset:
    """The mask files a fix works on, their common root, and the effective spec."""

    files: list[str]
    root: str
    spec: LabelSpec
    color_map: object | None
    notes: list[str]


def data_root(paths: Sequence[str]) -> str:
    folders = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths]
    return os.path.commonpath(folders)


def find_masks(paths: Sequence[str], spec: LabelSpec | None = None,
               options: AuditOptions | None = None, use_project_config: bool = True) -> Dataset:
    """The mask files under ``paths`` as the audit discovers them, and the spec that applies."""
    if not paths:
        raise FixError("no paths given")
    for path in paths:
        if not os.path.exists(path):
            raise FixError(f"{path}: no such file or directory")
    options = options or AuditOptions()
    discoveries = [layouts.discover(os.fspath(p), options) for p in paths]
    configs = load_settings(os.fspath(paths[0]), None, use_project_config)
    effective = resolve_spec((d.spec for d in discoveries), configs, spec)
    files: list[str] = []
    notes: list[str] = []
    for discovery in discoveries:
        for task in discovery.tasks:
            if task.processor is process_mask and task.path not in files:
                files.append(task.path)
        notes.extend(discovery.notes)
    color_map = next((d.color_map for d in discoveries if d.color_map is not None), None)
    return Dataset(files, data_root(paths), effective, color_map, notes)


def run_fixes(action: str, dataset: Dataset, opener: Opener, transform: Transform, *,
              key: str | None = None, apply: bool = False, out: str | None = None,
              command: str = "", audit_color_map=None) -> FixResult:
    """Run ``transform`` on every file of ``dataset``; see the module docstring."""
    result = FixResult(action, apply, notes=list(dataset.notes))
    if out is not None and os.path.abspath(out) == dataset.root:
        raise FixError("--out is the data folder itself; omit --out to fix in place (with backups)")
    run: Run | None = None
    try:
        for path in dataset.files:
            target = path if out is None else os.path.join(out, os.path.relpath(path, dataset.root))
            if run is None and apply:
                run = Run(out if out is not None else dataset.root, command or action)
            change = _fix_one(path, target, dataset.spec, opener, transform, key, run, out is not None,
                              audit_color_map)
            result.changes.append(change)
    finally:
        result.close_run(run)
    if not dataset.files:
        result.notes.append("no mask files found")
    return result


def _fix_one(path: str, target: str, spec: LabelSpec, opener: Opener, transform: Transform,
             key: str | None, run: Run | None, copy_unchanged: bool, audit_color_map) -> FileChange:
    shown = display_path(path)
    shown_target = display_path(target)
    try:
        label_file = opener(path, key)
        new, summary, details = transform(label_file)
    except (CannotFix, MissingDependency) as exc:
        return FileChange(shown, SKIPPED, str(exc), shown_target)
    if new is None:
        if run is not None and copy_unchanged:
            with open(path, "rb") as handle:
                run.write_bytes(target, handle.read())
        return FileChange(shown, UNCHANGED, summary, shown_target, details)
    if run is None:
        return FileChange(shown, PLANNED, summary, shown_target, details)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    temp = temp_path_for(target)
    try:
        try:
            write_verified(label_file, new, temp)
        except CannotFix as exc:
            return FileChange(shown, SKIPPED, str(exc), shown_target, details)
        except FixError as exc:
            return FileChange(shown, REFUSED, f"not written: {exc}", shown_target, details)
        before = audit_file(path, spec, label_file.key, audit_color_map)
        after = audit_file(temp, spec, label_file.key)
        reason = worse(before, after)
        if reason:
            return FileChange(shown, REFUSED, f"not written: {reason}", shown_target, details)
        run.replace(target, temp)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return FileChange(shown, WRITTEN, summary, shown_target, details)
