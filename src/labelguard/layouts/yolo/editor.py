"""The YOLO editor of ``labelguard fix``: class ids remapped in the class column only, so a
label file stays byte-identical outside it."""

from __future__ import annotations

import re

from labelguard.core.text import clipped
from labelguard.errors import CannotFix
from labelguard.layouts.formats import Planner, describe
from labelguard.layouts.tables import editor as tables_editor
from labelguard.layouts.yolo.reader import is_number, read_class_id

# The class column: the first field of a row, with the whitespace before it.
_CLASS_FIELD = re.compile(rb"^(\s*)(\S+)")


def _rows_remap(mapping: dict[int, int]) -> Planner:
    def plan(path: str, data: bytes):
        lines = data.split(b"\n")
        counts: dict[int, int] = {}
        out = []
        for number, line in enumerate(lines, 1):
            fields = line.decode("utf-8", "replace").split()
            if not fields:
                out.append(line)
                continue
            # Rows as the reader takes them: numbers all, the class column an integer (2.0 too).
            if len(fields) < 5 or not all(is_number(f) for f in fields):
                raise CannotFix(f"line {number} is not a YOLO row (class x y w h): "
                                f"{clipped(line.decode('utf-8', 'replace'))!r}")
            source = read_class_id(fields[0])
            if source is None:
                raise CannotFix(f"line {number}: the class {clipped(fields[0])!r} is not an integer")
            if source in mapping:
                counts[source] = counts.get(source, 0) + 1
                match = _CLASS_FIELD.match(line)
                assert match is not None  # not a user mistake: the line has fields
                line = match.group(1) + str(mapping[source]).encode() + line[match.end():]
            out.append(line)
        if not counts:
            return None, "no class id of the map occurs", {}
        return b"\n".join(out), describe(counts, mapping, unit="rows"), {"remapped": counts}

    return plan


def remap(mapping: dict[int, int]) -> Planner:
    """A loose ``.txt`` is a YOLO label file, or else a space-separated label table; a file
    that is neither is skipped with both reasons."""
    yolo, table = _rows_remap(mapping), tables_editor.remap(mapping)

    def plan(path: str, data: bytes):
        try:
            return yolo(path, data)
        except CannotFix as as_yolo:
            try:
                return table(path, data)
            except CannotFix as as_table:
                raise CannotFix(f"not a YOLO label file ({as_yolo}) nor a label table ({as_table})") from None

    return plan
