"""The YOLO editor of ``labelguard fix``: class ids remapped in the class column only, so a
label file stays byte-identical outside it."""

from __future__ import annotations

import re

from labelguard.layouts.formats import CannotFix, Planner, describe
from labelguard.layouts.tables import editor as tables_editor

_YOLO_ROW = re.compile(rb"^(\s*)(-?\d+)(?=\s)")
_NUMBER = re.compile(rb"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")


def _rows_remap(mapping: dict[int, int]) -> Planner:
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
        return b"\n".join(out), describe(counts, mapping, unit="rows"), {"remapped": counts}

    return plan


def remap(mapping: dict[int, int]) -> Planner:
    """A loose ``.txt`` is a YOLO label file, or else a space-separated label table."""
    yolo, table = _rows_remap(mapping), tables_editor.remap(mapping)

    def plan(path: str, data: bytes):
        try:
            return yolo(path, data)
        except CannotFix:
            return table(path, data)

    return plan
