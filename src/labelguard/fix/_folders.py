"""Renaming ImageFolder class folders, journaled so that undo moves everything back.

A class folder whose new name is free is renamed in one ``os.rename`` (atomic). One whose new
name is taken (``Dog`` and ``dog`` both exist, or two old names map to one new name) is merged:
each file moves on its own (each move atomic and journaled before it happens), the folders it
needs are created and the emptied source folders removed, all journaled. A kill -9 half-way
leaves every file in its old or its new place, and undo moves the moved ones back.

Before anything moves, each class folder is re-audited under its new name (its images, the
new name against its own dataset's spec) and refused when that is worse than before. A new name
must be one folder name (no ``/``, ``..``, ``.``, empty or absolute name), and a class folder or
merge target that is a symbolic link, or lies outside the data, is refused: a merge would move
files out of (or into) a tree elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Sequence

from labelguard import layouts
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.core.text import plural, shorten, verb
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, UNCHANGED, FileChange, FixResult
from labelguard.fix._engine import Edit, apply_edits, data_root, dataset_specs, in_place_refusal, worse
from labelguard.fix._journal import FixError, Run
from labelguard.core.paths import display_path
from labelguard.layouts.base import AuditOptions
from labelguard.layouts.imagefolder import process_class_folder


def is_imagefolder(path: str) -> bool:
    """True when the audit reads ``path`` as an ImageFolder tree."""
    return os.path.isdir(path) and layouts.discover(os.fspath(path), AuditOptions()).layout == "imagefolder"


@dataclass
class _Plan:
    task: FileTask
    source: str
    target: str
    merge: bool
    moves: list[tuple[str, str]] = field(default_factory=list)  # (file, its new path), for a merge


def _files_under(folder: str) -> list[str]:
    found: list[str] = []
    for directory, dirs, files in os.walk(folder):
        dirs.sort()
        found.extend(os.path.join(directory, name) for name in sorted(files))
    return found


def rename_folders(paths: Sequence[str], mapping: dict[str, str], *, spec: LabelSpec | None = None,
                   apply: bool = False, out: str | None = None) -> FixResult:
    """Rename (or merge) the class folders of ImageFolder trees; see the module docstring."""
    if out is not None:
        raise FixError("ImageFolder class folders are renamed in place (journaled; `labelguard fix undo` "
                       "moves them back); --out is not supported for them")
    bad = {new: why for new in mapping.values() if (why := _not_a_folder_name(new))}
    if bad:
        raise FixError("a class folder's new name must be one folder name: "
                       + "; ".join(f"{name!r} {why}" for name, why in bad.items()))
    root = data_root(paths)
    result = FixResult("rename", apply)
    plans: list[tuple[_Plan, FileChange]] = []
    claimed: dict[str, set[str]] = {}  # target folder -> relative file names it will hold
    for path in paths:
        for discovery, before_spec in dataset_specs(path, AuditOptions(format="imagefolder"), spec):
            result.notes.extend(discovery.notes)
            after_spec = before_spec
            if spec is None and before_spec.classes is not None:
                renamed = tuple(dict.fromkeys(mapping.get(c, c) for c in before_spec.classes))
                after_spec = replace(before_spec, classes=renamed, num_classes=None)
            for task in discovery.tasks:
                if task.processor is not process_class_folder:
                    continue
                name = task.option("class_name")
                if name in mapping and mapping[name] != name:
                    target = os.path.join(os.path.dirname(task.path), mapping[name])
                    result.changes.append(_plan_one(task, target, root, claimed, before_spec, after_spec, plans))
    if not result.changes:
        result.notes.append("no class folder of the map found")
    if apply:
        apply_edits(result, [Edit(change, plan.target, perform=_mover(plan)) for plan, change in plans],
                    root, "fix rename --map " + ",".join(f"{k}={v}" for k, v in mapping.items()))
    return result


def _not_a_folder_name(name: str) -> str | None:
    """Why ``name`` is not one path component that names a folder, or None."""
    if not name.strip():
        return "is empty"
    if name in (".", ".."):
        return "names a folder by a path step, not a name"
    if os.path.isabs(name) or any(sep and sep in name for sep in (os.sep, os.altsep, "/")) or "\0" in name:
        return "holds a path separator"
    return None


def _mover(plan: _Plan):
    def perform(run: Run) -> None:
        if not plan.merge:
            run.move(plan.source, plan.target)
            return
        for source, target in plan.moves:
            run.mkdir(os.path.dirname(target))
            run.move(source, target)
        for directory, _, _ in sorted(os.walk(plan.source), key=lambda item: -len(item[0])):
            if not os.listdir(directory):
                run.rmdir(directory)

    return perform


def _plan_one(task: FileTask, target: str, root: str, claimed: dict[str, set[str]], before_spec: LabelSpec,
              after_spec: LabelSpec, plans: list) -> FileChange:
    source = task.path
    name, new = task.option("class_name"), os.path.basename(target)
    shown = display_path(source)
    refusal = in_place_refusal(source, root) or in_place_refusal(target, root)
    if refusal:
        return FileChange(shown, REFUSED, f"not renamed: {refusal}")
    files = _files_under(source)
    if os.path.exists(target) and os.path.samefile(source, target):
        return FileChange(shown, SKIPPED, f"{name!r} and {new!r} are one folder on this case-folding file "
                          "system; rename it through a temporary name by hand")
    renamed = replace(task, options=tuple((k, new) if k == "class_name" else (k, v) for k, v in task.options))
    reason = worse(process_class_folder(task, before_spec), process_class_folder(renamed, after_spec))
    if reason:
        return FileChange(shown, REFUSED, f"not renamed: {reason}")
    relative = [os.path.relpath(f, source) for f in files]
    key = os.path.normcase(os.path.abspath(target))
    merge = os.path.exists(target) or key in claimed
    if not merge:
        claimed[key] = set(relative)
        change = FileChange(shown, PLANNED, f"class folder {name!r} -> {new!r} ({plural(len(files), 'file')})",
                            display_path(target), {"moved": len(files)})
        plans.append((_Plan(task, source, target, False), change))
        return change
    held = claimed.setdefault(key, set(os.path.relpath(f, target) for f in _files_under(target)))
    clashes = [r for r in relative if r in held]
    if clashes:
        return FileChange(shown, SKIPPED, f"cannot merge {name!r} into {new!r}: {plural(len(clashes), 'file name')} "
                          f"{verb(len(clashes), 'exists')} in both ({shorten(clashes)}); rename them first",
                          details={"clashes": clashes})
    if not files:
        return FileChange(shown, UNCHANGED, f"class folder {name!r} holds no files; nothing to merge")
    held.update(relative)
    moves = [(f, os.path.join(target, r)) for f, r in zip(files, relative)]
    change = FileChange(shown, PLANNED,
                        f"class folder {name!r} merged into {new!r} ({plural(len(files), 'file')} moved)",
                        display_path(target), {"moved": len(files)})
    plans.append((_Plan(task, source, target, True, moves), change))
    return change
