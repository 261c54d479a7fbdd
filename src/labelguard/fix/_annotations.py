"""Class names and ids in annotation files: VOC XML ``<name>``, COCO categories, YOLO rows and
CSV/TSV label tables.

Edits are made on the text spans that hold the class and nothing else, so a VOC XML file
stays byte-identical outside the ``<name>`` texts, a YOLO file outside the class column and a
table outside its label cells (a row with quoted cells is written back by the csv module).
COCO JSON is rewritten as JSON (2-space indent when the original was indented). The files are
found by the audit's layout discovery, and each rewrite is re-audited with the task the audit
would run on it before it replaces the original.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, replace
from typing import Callable, Sequence
from xml.sax.saxutils import escape, unescape

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
from labelguard.layouts.coco import process_coco
from labelguard.layouts.tables import is_table, process_table
from labelguard.layouts.voc import process_voc
from labelguard.layouts.yolo import process_yolo
from labelguard.readers.base import ReadError, parse_json, read_bytes
from labelguard.readers.tabular import read_table

_NAME = re.compile(rb"(<name>)([^<]*)(</name>)")
_YOLO_ROW = re.compile(rb"^(\s*)(-?\d+)(?=\s)")
_NUMBER = re.compile(rb"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")

# plan(path, data) -> (new bytes or None when nothing changes, summary, details); CannotFix to skip
Planner = Callable[[str, bytes], tuple[bytes | None, str, dict]]


@dataclass(frozen=True)
class AnnotationEditor:
    """How the class names and ids of one annotation format are edited.

    Attributes:
        processor: the audit's per-file processor of the format; the discovery's tasks with it
            are this editor's files, and it re-audits each rewrite.
        suffixes: the files this editor takes when the discovery found none of its tasks.
        rename: ``rename(name_map)`` -> Planner, or None when the format has no class names.
        remap: ``remap(id_map)`` -> Planner, or None when it has no class ids.
    """

    processor: Callable
    suffixes: tuple[str, ...]
    rename: Callable[[dict[str, str]], Planner] | None = None
    remap: Callable[[dict[int, int]], Planner] | None = None


# In the order a loose file is tried (by suffix) when the discovery names no task for it.
ANNOTATION_EDITORS: list[AnnotationEditor] = []


def register_editor(editor: AnnotationEditor) -> AnnotationEditor:
    ANNOTATION_EDITORS.append(editor)
    return editor


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


def find_targets(paths: Sequence[str], editors: Sequence[AnnotationEditor], spec: LabelSpec | None = None,
                 options: AuditOptions | None = None) -> Targets:
    """The files under ``paths`` that the audit reads with one of the ``editors``' processors,
    found by the layout discovery; where it finds none (a loose folder of files), the files
    whose suffix such an editor takes."""
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


def _loose_files(path: str, editors: Sequence[AnnotationEditor], options: AuditOptions) -> list[FileTask]:
    """Tasks for the files under ``path`` whose suffix one of ``editors`` takes."""
    found = []
    for candidate in [path] if os.path.isfile(path) else walk_files(path):
        editor = next((e for e in editors if candidate.lower().endswith(e.suffixes)), None)
        if editor is None or (editor.processor is process_table and not is_table(candidate, options)):
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
    editors = [e for e in ANNOTATION_EDITORS if e.processor in planners]
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


def lookup(mapping: dict[str, str], name: str) -> str | None:
    """The key of ``mapping`` that renames ``name``: its exact spelling (``'dog '``, surrounding
    whitespace included), else its stripped spelling; None when the name stays (its new name is
    exactly what it already is)."""
    for key in (name, name.strip()):
        if key in mapping:
            return None if mapping[key] == name else key
    return None


def _voc_rename(mapping: dict[str, str]) -> Planner:
    def plan(path: str, data: bytes):
        if b"<annotation" not in data[:4096]:
            raise CannotFix("not a VOC annotation (no <annotation> element)")
        counts: dict[str, int] = {}

        def swap(match: re.Match) -> bytes:
            # The reader takes the whole text as the name, so the whole text becomes the new name.
            key = lookup(mapping, unescape(match.group(2).decode("utf-8")))
            if key is None:
                return match.group(0)
            counts[key] = counts.get(key, 0) + 1
            return match.group(1) + escape(mapping[key]).encode("utf-8") + match.group(3)

        new = _NAME.sub(swap, data)
        if not counts:
            return None, "no name of the map occurs", {}
        _check_xml(new)
        return new, _describe(counts, mapping), {"renamed": counts}

    return plan


def _check_xml(data: bytes) -> None:
    import defusedxml.ElementTree as ET

    try:
        ET.fromstring(data)
    except Exception as exc:  # the edit must never produce unparsable XML
        raise CannotFix(f"the renamed XML would not parse: {exc}") from None


def _coco_load(data: bytes) -> dict:
    try:
        doc = parse_json(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise CannotFix(f"not JSON: {exc}") from None
    except ReadError as exc:
        raise CannotFix(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("categories"), list):
        raise CannotFix("not a COCO file (no categories list)")
    return doc


def _coco_dump(doc: dict, original: bytes) -> bytes:
    indented = original.lstrip()[:2] in (b"{\n", b"{\r")
    return (json.dumps(doc, indent=2 if indented else None, ensure_ascii=False) + ("\n" if indented else "")).encode()


def _coco_rename(mapping: dict[str, str]) -> Planner:
    def plan(path: str, data: bytes):
        doc = _coco_load(data)
        counts: dict[str, int] = {}
        for category in doc["categories"]:
            name = category.get("name") if isinstance(category, dict) else None
            key = lookup(mapping, name) if isinstance(name, str) else None
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
                category["name"] = mapping[key]
        if not counts:
            return None, "no category name of the map occurs", {}
        return _coco_dump(doc, data), _describe(counts, mapping), {"renamed": counts}

    return plan


def _coco_remap(mapping: dict[int, int]) -> Planner:
    def plan(path: str, data: bytes):
        doc = _coco_load(data)
        counts: dict[int, int] = {}
        targets = {c.get("id") for c in doc["categories"] if isinstance(c, dict)}
        for category in doc["categories"]:
            if isinstance(category, dict) and category.get("id") in mapping:
                category["id"] = mapping[category["id"]]
        for annotation in doc.get("annotations") or []:
            if isinstance(annotation, dict) and annotation.get("category_id") in mapping:
                source = annotation["category_id"]
                counts[source] = counts.get(source, 0) + 1
                annotation["category_id"] = mapping[source]
        ids = [c.get("id") for c in doc["categories"] if isinstance(c, dict)]
        if len(ids) != len(set(ids)):
            raise CannotFix(f"the map would give two categories the same id (ids {ids})")
        if not counts and not (targets & set(mapping)):
            return None, "no category id of the map occurs", {}
        return _coco_dump(doc, data), _describe(counts, mapping, unit="annotations"), {"remapped": counts}

    return plan


def _yolo_remap(mapping: dict[int, int]) -> Planner:
    def plan(path: str, data: bytes):
        lines = data.split(b"\n")
        counts: dict[int, int] = {}
        out = []
        for number, line in enumerate(lines, 1):
            fields = line.split()
            if not fields:
                out.append(line)
                continue
            if len(fields) < 5 or not all(_NUMBER.match(f) for f in fields):
                raise CannotFix(f"line {number} is not a YOLO row (class x y w h): {line[:60]!r}")
            match = _YOLO_ROW.match(line)
            if match is None:
                raise CannotFix(f"line {number}: the class {fields[0].decode()!r} is not an integer")
            source = int(match.group(2))
            if source in mapping:
                counts[source] = counts.get(source, 0) + 1
                line = match.group(1) + str(mapping[source]).encode() + line[match.end():]
            out.append(line)
        if not counts:
            return None, "no class id of the map occurs", {}
        return b"\n".join(out), _describe(counts, mapping, unit="rows"), {"remapped": counts}

    return plan


def _decode(data: bytes) -> tuple[bytes, str, str]:
    """(BOM, text, encoding) of a table, decoded as the reader decodes it."""
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    body = data[len(bom):]
    try:
        return bom, body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return bom, body.decode("latin-1"), "latin-1"


def _set_cell(line: str, separator: str | None, column: int, width: int, value: str, number: int) -> str:
    """``line`` with cell ``column`` set to exactly ``value`` (whitespace around the old text goes
    with it); the other cells keep their exact text."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if separator is None:
        spans = [m.span() for m in re.finditer(r"\S+", body)]
        start, end = spans[-1] if width == 2 and column == 1 else spans[column]
        return body[:start] + value + body[end:] + ending
    if '"' not in body and separator not in value and '"' not in value:
        cells = body.split(separator)
        if len(cells) != width:
            raise CannotFix(f"line {number}: {len(cells)} fields, expected {width}")
        cells[column] = value
        return separator.join(cells) + ending
    cells = next(csv.reader([body], delimiter=separator))
    if len(cells) != width:
        raise CannotFix(f"line {number}: a quoted field spans lines; edit this row by hand")
    cells[column] = value
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=separator, lineterminator="").writerow(cells)
    return buffer.getvalue() + ending


def _cell_text(line: str, separator: str | None, column: int, width: int, number: int) -> str:
    """The exact text of cell ``column`` (whitespace around it included), as the csv module and
    pandas hand it to a dataset class."""
    body = line.rstrip("\r\n")
    if separator is None:
        tokens = re.findall(r"\S+", body)
        # Two-field lines name the label last, whatever spaces the path holds.
        cells = [" ".join(tokens[:-1]), tokens[-1]] if width == 2 and tokens else tokens
    elif '"' in body:
        cells = next(csv.reader([body], delimiter=separator), [])
    else:
        cells = body.split(separator)
    if column >= len(cells):
        raise CannotFix(f"line {number}: {len(cells)} fields, expected {width}")
    return cells[column]


# change(cell text) -> (the label it counts as, its new text), or None to keep the cell
CellChange = Callable[[str], "tuple[str, str] | None"]


def _table_edit(change: CellChange, rename_header: bool
                ) -> Callable[[str, bytes], tuple[bytes | None, dict[str, int]]]:
    """``edit(path, data) -> (new bytes or None, changed rows per old label)`` for label tables."""
    def edit(path: str, data: bytes):
        try:
            table = read_table(path)
        except ReadError as exc:
            raise CannotFix(str(exc)) from None
        bom, text, encoding = _decode(data)
        lines = text.splitlines(keepends=True)
        layout = table.layout
        counts: dict[str, int] = {}
        if layout.onehot_columns:
            if not rename_header:
                raise CannotFix("a one-hot table names its classes in the header; it has no class ids to remap")
            header_line = next(i for i, line in enumerate(lines) if line.strip())
            names = [_cell_text(lines[header_line], layout.separator, k, layout.width, header_line + 1)
                     for k in range(layout.width)]
            changed = []
            for k in layout.onehot_columns:
                renamed = change(names[k])
                if renamed is not None:
                    counts[renamed[0]] = 1
                    names[k] = renamed[1]
                    changed.append(k)
            merged = [n for n in set(names) if names.count(n) > 1]
            if merged:
                raise CannotFix(f"the map would give two one-hot columns the name {merged[0]!r}; merge them by hand")
            for k in changed:
                lines[header_line] = _set_cell(lines[header_line], layout.separator, k, layout.width, names[k],
                                               header_line + 1)
        else:
            column = layout.label_column
            # Not a user mistake: a table read without one-hot columns always has a label column.
            assert column is not None
            for number in table.lines:
                cell = _cell_text(lines[number - 1], layout.separator, column, layout.width, number)
                renamed = change(cell)
                if renamed is None:
                    continue
                counts[renamed[0]] = counts.get(renamed[0], 0) + 1
                lines[number - 1] = _set_cell(lines[number - 1], layout.separator, column,
                                              layout.width, renamed[1], number)
        if not counts:
            return None, counts
        return bom + "".join(lines).encode(encoding), counts

    return edit


def _table_rename(mapping: dict[str, str]) -> Planner:
    def change(cell: str) -> tuple[str, str] | None:
        key = lookup(mapping, cell)
        return None if key is None else (key, mapping[key])

    edit = _table_edit(change, True)

    def plan(path: str, data: bytes):
        new, counts = edit(path, data)
        if new is None:
            return None, "no label of the map occurs", {}
        return new, _describe(counts, mapping, unit="rows"), {"renamed": counts}

    return plan


def _table_remap(mapping: dict[int, int]) -> Planner:
    def change(cell: str) -> tuple[str, str] | None:
        if not re.fullmatch(r"\s*[+-]?\d+\s*", cell) or int(cell) not in mapping:
            return None
        return str(int(cell)), str(mapping[int(cell)])

    edit = _table_edit(change, False)

    def plan(path: str, data: bytes):
        new, counts = edit(path, data)
        if new is None:
            return None, "no class id of the map occurs", {}
        by_id = {int(k): n for k, n in counts.items()}
        return new, _describe(by_id, mapping, unit="rows"), {"remapped": by_id}

    return plan


def _describe(counts: dict, mapping: dict, unit: str = "") -> str:
    suffix = f" {unit}" if unit else ""
    return ", ".join(f"{source} -> {mapping[source]} ({n}{suffix})" for source, n in counts.items())


def _yolo_or_table_remap(mapping: dict[int, int]) -> Planner:
    """A loose ``.txt`` is a YOLO label file, or else a space-separated label table."""
    yolo, table = _yolo_remap(mapping), _table_remap(mapping)

    def plan(path: str, data: bytes):
        try:
            return yolo(path, data)
        except CannotFix:
            return table(path, data)

    return plan


register_editor(AnnotationEditor(process_voc, (".xml",), rename=_voc_rename))
register_editor(AnnotationEditor(process_coco, (".json",), rename=_coco_rename, remap=_coco_remap))
register_editor(AnnotationEditor(process_table, (".csv", ".tsv"), rename=_table_rename, remap=_table_remap))
register_editor(AnnotationEditor(process_yolo, (".txt",), remap=_yolo_or_table_remap))


def _planners(action: str, mapping: dict) -> dict:
    """Processor -> Planner for every registered editor that can do ``action`` (rename, remap)."""
    planners = {}
    for editor in ANNOTATION_EDITORS:
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
