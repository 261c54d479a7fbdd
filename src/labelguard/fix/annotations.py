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

from labelguard import layouts
from labelguard.audit import load_settings, resolve_spec
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.fix.base import PLANNED, REFUSED, SKIPPED, UNCHANGED, WRITTEN, FileChange, FixResult
from labelguard.fix.engine import data_root
from labelguard.fix.journal import FixError, Run, temp_path_for, write_fsynced
from labelguard.layouts.base import AuditOptions, display_path, walk_files
from labelguard.layouts.classification import _is_table, process_table
from labelguard.layouts.coco import process_coco
from labelguard.layouts.voc import process_voc
from labelguard.layouts.yolo import process_yolo
from labelguard.readers.base import ReadError
from labelguard.readers.tabular import read_table

_NAME = re.compile(rb"(<name>)(\s*)([^<]*?)(\s*)(</name>)")
_YOLO_ROW = re.compile(rb"^(\s*)(-?\d+)(?=\s)")
_NUMBER = re.compile(rb"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")

# plan(path, data) -> (new bytes or None when nothing changes, summary, details); CannotEdit to skip
Planner = Callable[[str, bytes], tuple[bytes | None, str, dict]]
# The processor that audits a file of each extension when the layout discovery did not find it.
_BY_EXTENSION = ((".xml", process_voc), (".json", process_coco), (".csv", process_table), (".tsv", process_table),
                 (".txt", process_yolo))


class CannotEdit(Exception):
    """This file is not of the kind the fix edits, or cannot be parsed."""


@dataclass
class Targets:
    """The annotation files a fix edits, each with the audit task that checks it, and the spec."""

    tasks: list[FileTask]
    spec: LabelSpec


def find_targets(paths: Sequence[str], processors: tuple, spec: LabelSpec | None = None,
                 options: AuditOptions | None = None) -> Targets:
    """The files under ``paths`` that the audit reads with one of ``processors``, found by the
    layout discovery; where it finds none (a loose folder of files), the files whose extension
    such a processor reads."""
    options = options or AuditOptions()
    tasks: list[FileTask] = []
    discovered = []
    for path in paths:
        if not os.path.exists(path):
            raise FixError(f"{path}: no such file or directory")
        discovery = layouts.discover(os.fspath(path), options)
        discovered.append(discovery.spec)
        found = [t for t in discovery.tasks if t.processor in processors and os.path.isfile(t.path)]
        if not found:
            candidates = [path] if os.path.isfile(path) else walk_files(path)
            for candidate in candidates:
                processor = next((p for ext, p in _BY_EXTENSION if candidate.lower().endswith(ext)), None)
                if processor not in processors:
                    continue
                if processor is process_table and not _is_table(candidate, options):
                    continue
                found.append(FileTask(processor, candidate, display_path(candidate)))
        known = {t.path for t in tasks}
        tasks.extend(t for t in found if t.path not in known)
    configs = load_settings(os.fspath(paths[0]), None, True)
    return Targets(tasks, resolve_spec(discovered, configs, spec))


def _errors(result: FileResult) -> dict[str, int]:
    found: dict[str, int] = {}
    for finding in result.findings:
        if finding.severity >= Severity.ERROR:
            found[finding.code] = found.get(finding.code, 0) + int(finding.data.get("count") or 1)
    return found


def audit_task(task: FileTask, spec: LabelSpec, path: str | None = None) -> FileResult:
    """The audit of ``task``'s file, or of ``path`` read as that file (its temp replacement)."""
    if path is not None:
        options = tuple((k, None) if k == "reference" and v and v[0] == task.path else (k, v)
                        for k, v in task.options)
        task = replace(task, path=path, options=options)
    return task.processor(task, spec)


def worse(before: FileResult, after: FileResult) -> str | None:
    """Why ``after`` is worse than ``before`` (a new error code, or more of one), or None."""
    old, new = _errors(before), _errors(after)
    for code, amount in new.items():
        if code not in old:
            message = next(f.message for f in after.findings if f.code == code)
            return f"the fixed file would have {code}: {message}"
        if amount > old[code]:
            return f"the fixed file would have more {code} errors ({amount} > {old[code]})"
    return None


def _run(action: str, paths: Sequence[str], processors: tuple, planner: Planner, apply: bool,
         out: str | None, command: str, spec: LabelSpec | None = None,
         extra: Sequence[tuple[str, bytes]] = ()) -> FixResult:
    """Plan every file; on apply write each to a temp file beside it, re-audit that with the
    file's own audit task and replace the original only when it is not worse. ``extra``
    (path, bytes) pairs are written in the same run (a class-name file)."""
    targets = find_targets(paths, processors, spec)
    root = data_root(paths)
    if out is not None and os.path.abspath(out) == root:
        raise FixError("--out is the data folder itself; omit --out to fix in place (with backups)")
    result = FixResult(action, apply)
    run: Run | None = None
    try:
        for task in targets.tasks:
            path = task.path
            shown = display_path(path)
            with open(path, "rb") as handle:
                data = handle.read()
            try:
                new, summary, details = planner(path, data)
            except CannotEdit as exc:
                result.changes.append(FileChange(shown, SKIPPED, str(exc)))
                continue
            if new is None:
                result.changes.append(FileChange(shown, UNCHANGED, summary, details=details))
                continue
            target = path if out is None else os.path.join(out, os.path.relpath(path, root))
            change = FileChange(shown, PLANNED, summary, display_path(target), details)
            result.changes.append(change)
            if not apply:
                continue
            # The temp file sits beside the target, so --out leaves the input folder untouched.
            os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
            temp = temp_path_for(target)
            try:
                write_fsynced(temp, new)
                reason = worse(audit_task(task, targets.spec), audit_task(task, targets.spec, temp))
                if reason:
                    change.status, change.summary = REFUSED, f"not written: {reason}"
                    continue
                if run is None:
                    run = Run(out if out is not None else root, command)
                run.replace(target, temp)
                change.status = WRITTEN
            finally:
                if os.path.exists(temp):
                    os.unlink(temp)
        for path, data in extra:
            with open(path, "rb") as handle:
                if handle.read() == data:
                    continue
            target = path if out is None else os.path.join(out, os.path.relpath(path, root))
            change = FileChange(display_path(path), PLANNED, "class names rewritten to the common list",
                                display_path(target))
            result.changes.append(change)
            if apply and result.ok:
                if run is None:
                    run = Run(out if out is not None else root, command)
                run.write_bytes(target, data)
                change.status = WRITTEN
    finally:
        result.close_run(run)
    if not targets.tasks:
        result.notes.append("no annotation files found")
    return result


def _voc_rename(mapping: dict[str, str]) -> Planner:
    def plan(path: str, data: bytes):
        if b"<annotation" not in data[:4096]:
            raise CannotEdit("not a VOC annotation (no <annotation> element)")
        counts: dict[str, int] = {}

        def swap(match: re.Match) -> bytes:
            name = unescape(match.group(3).decode("utf-8"))
            if name in mapping:
                counts[name] = counts.get(name, 0) + 1
                return b"".join((match.group(1), match.group(2), escape(mapping[name]).encode("utf-8"),
                                 match.group(4), match.group(5)))
            return match.group(0)

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
        raise CannotEdit(f"the renamed XML would not parse: {exc}") from None


def _coco_load(data: bytes) -> dict:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CannotEdit(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("categories"), list):
        raise CannotEdit("not a COCO file (no categories list)")
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
            if name in mapping:
                counts[name] = counts.get(name, 0) + 1
                category["name"] = mapping[name]
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
            raise CannotEdit(f"the map would give two categories the same id (ids {ids})")
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
                raise CannotEdit(f"line {number} is not a YOLO row (class x y w h): {line[:60]!r}")
            match = _YOLO_ROW.match(line)
            if match is None:
                raise CannotEdit(f"line {number}: the class {fields[0].decode()!r} is not an integer")
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
    """``line`` with cell ``column`` set to ``value``; the other cells keep their exact text."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if separator is None:
        spans = [m.span() for m in re.finditer(r"\S+", body)]
        start, end = spans[-1] if width == 2 and column == 1 else spans[column]
        return body[:start] + value + body[end:] + ending
    if '"' not in body and separator not in value and '"' not in value:
        cells = body.split(separator)
        if len(cells) != width:
            raise CannotEdit(f"line {number}: {len(cells)} fields, expected {width}")
        cells[column] = value  # exactly the new label: blanks around it would make another label
        return separator.join(cells) + ending
    cells = next(csv.reader([body], delimiter=separator))
    if len(cells) != width:
        raise CannotEdit(f"line {number}: a quoted field spans lines; edit this row by hand")
    cells[column] = value
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=separator, lineterminator="").writerow(cells)
    return buffer.getvalue() + ending


def _table_edit(change: Callable[[str], str | None], rename_header: bool
                ) -> Callable[[str, bytes], tuple[bytes | None, dict[str, int]]]:
    """``edit(path, data) -> (new bytes or None, changed rows per old label)`` for label tables;
    ``change(label)`` gives a label's new text (None: keep it)."""
    def edit(path: str, data: bytes):
        try:
            table = read_table(path)
        except ReadError as exc:
            raise CannotEdit(str(exc)) from None
        bom, text, encoding = _decode(data)
        lines = text.splitlines(keepends=True)
        layout = table.layout
        counts: dict[str, int] = {}
        if layout.onehot_columns:
            if not rename_header:
                raise CannotEdit("a one-hot table names its classes in the header; it has no class ids to remap")
            header_line = next(i for i, line in enumerate(lines) if line.strip())
            names = list(layout.header)
            changed = []
            for k in layout.onehot_columns:
                new = change(names[k].strip())
                if new is not None and new != names[k].strip():
                    counts[names[k].strip()] = 1
                    names[k] = new
                    changed.append(k)
            merged = [n for n in set(names) if names.count(n) > 1]
            if merged:
                raise CannotEdit(f"the map would give two one-hot columns the name {merged[0]!r}; merge them by hand")
            for k in changed:
                lines[header_line] = _set_cell(lines[header_line], layout.separator, k, layout.width, names[k],
                                               header_line + 1)
        else:
            for number, label in zip(table.lines, table.labels):
                new = change(label)
                if new is None or new == label:
                    continue
                counts[label] = counts.get(label, 0) + 1
                lines[number - 1] = _set_cell(lines[number - 1], layout.separator, layout.label_column,
                                              layout.width, new, number)
        if not counts:
            return None, counts
        return bom + "".join(lines).encode(encoding), counts

    return edit


def _table_rename(mapping: dict[str, str]) -> Planner:
    edit = _table_edit(mapping.get, True)

    def plan(path: str, data: bytes):
        new, counts = edit(path, data)
        if new is None:
            return None, "no label of the map occurs", {}
        return new, _describe(counts, mapping, unit="rows"), {"renamed": counts}

    return plan


def _table_remap(mapping: dict[int, int]) -> Planner:
    def change(label: str) -> str | None:
        if not re.fullmatch(r"\s*[+-]?\d+\s*", label):
            return None
        value = int(label)
        return str(mapping[value]) if value in mapping else None

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


def _pick(planners: dict) -> Planner:
    def plan(path: str, data: bytes):
        lower = path.lower()
        for suffix, planner in planners.items():
            if lower.endswith(suffix):
                return planner(path, data)
        raise CannotEdit("not an annotation file this fix edits")

    return plan


def rename_classes(paths: Sequence[str], mapping: dict[str, str], *, spec: LabelSpec | None = None,
                   apply: bool = False, out: str | None = None,
                   extra: Sequence[tuple[str, bytes]] = ()) -> FixResult:
    """Rename classes in VOC XML (``<name>`` text only), COCO JSON categories and label tables
    (CSV/TSV label cells, one-hot headers) under ``paths``; ``extra`` (path, bytes) pairs (a
    class-name file) are written in the same run."""
    table = _table_rename(mapping)
    plan = _pick({".xml": _voc_rename(mapping), ".json": _coco_rename(mapping), ".csv": table, ".tsv": table,
                  ".txt": table})
    command = "fix rename --map " + ",".join(f"{k}={v}" for k, v in mapping.items())
    return _run("rename", paths, (process_voc, process_coco, process_table), plan, apply, out, command, spec,
                extra)


def remap_class_ids(paths: Sequence[str], mapping: dict[int, int], *, spec: LabelSpec | None = None,
                    apply: bool = False, out: str | None = None,
                    extra: Sequence[tuple[str, bytes]] = ()) -> FixResult:
    """Remap integer class ids in YOLO label rows, COCO category ids and label tables with
    integer labels."""
    yolo, table = _yolo_remap(mapping), _table_remap(mapping)

    def plan(path: str, data: bytes):
        lower = path.lower()
        if lower.endswith(".json"):
            return _coco_remap(mapping)(path, data)
        if lower.endswith((".csv", ".tsv")):
            return table(path, data)
        try:
            return yolo(path, data)
        except CannotEdit:
            return table(path, data)

    command = "fix remap --ids --map " + ",".join(f"{k}:{v}" for k, v in mapping.items())
    return _run("remap-ids", paths, (process_yolo, process_coco, process_table), plan, apply, out, command, spec,
                extra)
