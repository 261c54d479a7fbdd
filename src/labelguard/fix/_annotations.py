"""Class names and ids in annotation files: VOC XML ``<name>``, COCO categories, YOLO rows and
CSV/TSV label tables.

Edits are made on the text spans that hold the class and nothing else, so a VOC XML file
stays byte-identical outside the ``<name>`` texts, a YOLO file outside the class column and a
table outside its label cells (a row with quoted cells is written back by the csv module).
COCO JSON is rewritten as JSON (2-space indent when the original was indented). Each format's
editor lives in its layout's package (``layouts/voc/editor.py``...), registered with the format
(:mod:`labelguard.layouts.formats`); this module runs them. The files are found by the audit's
layout discovery, and each rewrite is re-audited with the task the audit would run on it before
it replaces the original.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, UNCHANGED, CannotFix, FileChange, FixResult
from labelguard.fix._engine import (
    Edit, apply_edits, bytes_edit, check_out, data_root, dataset_specs, file_state, output_target, preview_edits,
    target_refusal, unknown_spec_note, worse,
)
from labelguard.fix._journal import FixError
from labelguard.core.paths import display_path
from labelguard.layouts.base import AuditOptions
from labelguard.layouts.folders import walk_files
from labelguard.layouts.formats import ANNOTATION_FORMATS, AnnotationFormat, Planner
from labelguard.readers.base import ReadError, read_bytes


@dataclass
class Targets:
    """The annotation files a fix edits, each with the audit task that checks it and the spec
    of its own dataset.

    Attributes:
        unspecified: the dataset folders for which no spec is known.
    """

    tasks: list[FileTask]
    specs: dict[str, LabelSpec]
    unspecified: list[str]


def find_targets(paths: Sequence[str], editors: Sequence[AnnotationFormat], spec: LabelSpec | None = None,
                 options: AuditOptions | None = None) -> Targets:
    """The files under ``paths`` that the audit reads with one of the ``editors``' processors,
    found by the layout discovery; where it finds none (a loose folder of files), the files
    such a format takes (:meth:`AnnotationFormat.takes`)."""
    options = options or AuditOptions()
    processors = tuple(e.processor for e in editors)
    targets = Targets([], {}, [])
    for path in paths:
        if not os.path.exists(path):
            raise FixError(f"{path}: no such file or directory")
        datasets = [([t for t in discovery.tasks if t.processor in processors and os.path.isfile(t.path)],
                     dataset_spec, discovery.root) for discovery, dataset_spec in dataset_specs(path, options, spec)]
        if not any(found for found, _, _ in datasets):
            datasets = [(_loose_files(path, editors, options), datasets[0][1], datasets[0][2])]
        for found, dataset_spec, dataset_root in datasets:
            found = [t for t in found if t.path not in targets.specs]
            for task in found:
                targets.tasks.append(task)
                targets.specs[task.path] = dataset_spec
            if found and not dataset_spec.is_known:
                targets.unspecified.append(display_path(dataset_root))
    return targets


def _loose_files(path: str, editors: Sequence[AnnotationFormat], options: AuditOptions) -> list[FileTask]:
    """Tasks for the files under ``path`` that one of ``editors`` takes, by suffix and content
    (:meth:`AnnotationFormat.takes`): a JSON file that is not COCO, an XML file that is not VOC
    are none of the fix's business."""
    found = []
    for candidate in [path] if os.path.isfile(path) else walk_files(path):
        editor = next((e for e in editors if e.takes(candidate, options)), None)
        if editor is None:
            continue
        found.append(FileTask(editor.processor, candidate, display_path(candidate)))
    return found


def audit_task(task: FileTask, spec: LabelSpec, path: str | None = None) -> FileResult:
    """The audit of ``task``'s file, or of ``path`` read as that file (its temp replacement)."""
    if path is not None:
        options = tuple((k, None) if k == "reference" and v and v[0] == task.path else (k, v)
                        for k, v in task.options)
        task = replace(task, path=path, options=options)
    return task.processor(task, spec)


def _run(action: str, paths: Sequence[str], planners: dict, apply: bool, out: str | None, command: str,
         spec: LabelSpec | None = None, extra: Sequence[tuple[str, bytes]] = (), force: bool = False) -> FixResult:
    """Plan every file with the planner of its editor (``planners``: processor -> Planner); on
    apply the engine writes each to a temp file beside its target, re-audits that with the
    file's own audit task and replaces the original only when it is not worse (a dry run checks
    the same in a scratch folder). ``extra`` (path, bytes) pairs are written in the same run,
    when no file was refused (a class-name file)."""
    editors = [e for e in ANNOTATION_FORMATS if e.processor in planners]
    targets = find_targets(paths, editors, spec)
    root = data_root(paths)
    check_out(root, out)
    result = FixResult(action, apply)
    if targets.unspecified:
        result.notes.append(unknown_spec_note(targets.unspecified))
    edits: list[Edit] = []
    for task in targets.tasks:
        edit = _plan_file(task, planners[task.processor], targets.specs[task.path], root, out, force)
        result.changes.append(edit.change)
        if edit.write is not None:
            edits.append(edit)
    for path, data in extra:
        target = output_target(path, root, out)
        refusal = target_refusal(path, target, root, out, force)
        state = file_state(path)
        if not refusal:
            try:
                if read_bytes(path, "class-name file") == data:
                    continue
            except ReadError as exc:
                refusal = str(exc)
        status, summary = (REFUSED, f"not fixed: {refusal}") if refusal else (
            PLANNED, "class names rewritten to the common list")
        change = FileChange(display_path(path), status, summary, display_path(target))
        result.changes.append(change)
        edits.append(bytes_edit(change, target, data, companion=True, source=path, state=state))
    if apply:
        apply_edits(result, edits, out if out is not None else root, command)
    else:
        preview_edits(result, edits)
    if not targets.tasks:
        result.notes.append("no annotation files found")
    return result


def _plan_file(task: FileTask, planner: Planner, spec: LabelSpec, root: str, out: str | None, force: bool) -> Edit:
    """One annotation file's edit (its change alone when there is nothing to write)."""
    path = task.path
    shown = display_path(path)
    target = output_target(path, root, out)
    refusal = target_refusal(path, target, root, out, force)
    if refusal:
        return Edit(FileChange(shown, REFUSED, f"not fixed: {refusal}", display_path(target)), target)
    state = file_state(path)
    try:
        data = read_bytes(path, "annotation file")
        new, summary, details = planner(path, data)
    except ReadError as exc:
        return Edit(FileChange(shown, SKIPPED, str(exc)), target)
    except CannotFix as exc:
        return Edit(FileChange(shown, SKIPPED, str(exc)), target)
    if new is None:
        return Edit(FileChange(shown, UNCHANGED, summary, details=details), target)
    change = FileChange(shown, PLANNED, summary, display_path(target), details)
    return bytes_edit(change, target, new, _reaudit(task, spec), source=path, state=state,
                      preview=_reaudit_beside(task, spec, data))


def _reaudit(task: FileTask, spec: LabelSpec) -> Callable[[str], str | None]:
    def verify(temp: str) -> str | None:
        return worse(audit_task(task, spec), audit_task(task, spec, temp))

    return verify


def _reaudit_beside(task: FileTask, spec: LabelSpec, original: bytes) -> Callable[[str], str | None]:
    """The dry run's re-audit of a new file written outside the data: compared with the original
    bytes written beside it, so that what the re-audit finds by the file's place (its images
    missing there) counts on both sides alike."""
    def verify(temp: str) -> str | None:
        folder = os.path.join(os.path.dirname(temp), "before")
        os.mkdir(folder)
        before = os.path.join(folder, os.path.basename(temp))
        with open(before, "wb") as handle:
            handle.write(original)
        return worse(audit_task(task, spec, before), audit_task(task, spec, temp))

    return verify


def _planners(action: str, mapping: dict) -> dict:
    """Processor -> Planner for every registered format whose editor can do ``action`` (rename, remap)."""
    planners = {}
    for editor in ANNOTATION_FORMATS:
        factory = getattr(editor, action)
        if factory is not None:
            planners[editor.processor] = factory(mapping)
    return planners


def rename_classes(paths: Sequence[str], mapping: dict[str, str], *, spec: LabelSpec | None = None,
                   apply: bool = False, out: str | None = None,
                   extra: Sequence[tuple[str, bytes]] = (), force: bool = False) -> FixResult:
    """Rename classes in VOC XML (``<name>`` text only), COCO JSON categories and label tables
    (CSV/TSV label cells, one-hot headers) under ``paths``; ``extra`` (path, bytes) pairs (a
    class-name file) are written in the same run. A name is matched by its exact spelling first
    (``'dog '`` with its space), then stripped; it is written exactly as the map spells it."""
    command = "fix rename --map " + ",".join(f"{_quoted(k)}={_quoted(v)}" for k, v in mapping.items())
    return _run("rename", paths, _planners("rename", mapping), apply, out, command, spec, extra, force)


def remap_class_ids(paths: Sequence[str], mapping: dict[int, int], *, spec: LabelSpec | None = None,
                    apply: bool = False, out: str | None = None,
                    extra: Sequence[tuple[str, bytes]] = (), force: bool = False) -> FixResult:
    """Remap integer class ids in YOLO label rows, COCO category ids and label tables with
    integer labels."""
    command = "fix remap --ids --map " + ",".join(f"{k}:{v}" for k, v in mapping.items())
    return _run("remap-ids", paths, _planners("remap", mapping), apply, out, command, spec, extra, force)


def _quoted(name: str) -> str:
    return repr(name) if name != name.strip() or any(c in name for c in ",='\"") else name
