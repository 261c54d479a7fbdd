"""Class names and ids in annotation files: VOC XML ``<name>``, COCO categories, YOLO rows.

Edits are made on the text spans that hold the class and nothing else, so a VOC XML file
stays byte-identical outside the ``<name>`` texts and a YOLO file outside the class column.
COCO JSON is rewritten as JSON (2-space indent when the original was indented).
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable, Sequence
from xml.sax.saxutils import escape, unescape

from labelguard.fix.base import PLANNED, SKIPPED, UNCHANGED, WRITTEN, FileChange, FixResult
from labelguard.fix.engine import data_root
from labelguard.fix.journal import FixError, Run
from labelguard.layouts.base import display_path, walk_files

_NAME = re.compile(rb"(<name>)(\s*)([^<]*?)(\s*)(</name>)")
_YOLO_ROW = re.compile(rb"^(\s*)(-?\d+)(?=\s)")
_NUMBER = re.compile(rb"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")

# plan(path, data) -> (new bytes or None when nothing changes, summary, details); CannotEdit to skip
Planner = Callable[[str, bytes], tuple[bytes | None, str, dict]]


class CannotEdit(Exception):
    """This file is not of the kind the fix edits, or cannot be parsed."""


def _files(paths: Sequence[str], suffixes: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for path in paths:
        if not os.path.exists(path):
            raise FixError(f"{path}: no such file or directory")
        candidates = [path] if os.path.isfile(path) else walk_files(path)
        found.extend(p for p in candidates if p.lower().endswith(suffixes) and p not in found)
    return found


def _run(action: str, paths: Sequence[str], suffixes: tuple[str, ...], planner: Planner, apply: bool,
         out: str | None, command: str) -> FixResult:
    files = _files(paths, suffixes)
    root = data_root(paths)
    result = FixResult(action, apply)
    run: Run | None = None
    try:
        for path in files:
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
            if apply:
                if run is None:
                    run = Run(out if out is not None else root, command)
                run.write_bytes(target, new)
                change.status = WRITTEN
    finally:
        if run is not None:
            run.close()
            if run.written:
                result.run_id, result.journal = run.id, run.journal_path
    if not files:
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


def _describe(counts: dict, mapping: dict, unit: str = "") -> str:
    suffix = f" {unit}" if unit else ""
    return ", ".join(f"{source} -> {mapping[source]} ({n}{suffix})" for source, n in counts.items())


def rename_classes(paths: Sequence[str], mapping: dict[str, str], *, apply: bool = False,
                   out: str | None = None) -> FixResult:
    """Rename classes in VOC XML (``<name>`` text only) and COCO JSON categories under ``paths``."""
    voc, coco = _voc_rename(mapping), _coco_rename(mapping)

    def plan(path: str, data: bytes):
        return (voc if path.lower().endswith(".xml") else coco)(path, data)

    command = "fix rename --map " + ",".join(f"{k}={v}" for k, v in mapping.items())
    return _run("rename", paths, (".xml", ".json"), plan, apply, out, command)


def remap_class_ids(paths: Sequence[str], mapping: dict[int, int], *, apply: bool = False,
                    out: str | None = None) -> FixResult:
    """Remap integer class ids in YOLO label rows (``.txt``) and COCO category ids (``.json``)."""
    yolo, coco = _yolo_remap(mapping), _coco_remap(mapping)

    def plan(path: str, data: bytes):
        return (coco if path.lower().endswith(".json") else yolo)(path, data)

    command = "fix remap --ids --map " + ",".join(f"{k}:{v}" for k, v in mapping.items())
    return _run("remap-ids", paths, (".txt", ".json"), plan, apply, out, command)
