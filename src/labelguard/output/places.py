"""Where in its file a finding is, for the formats that point at places (SARIF, GitHub, JUnit).

A finding's data says it in the words of its format: ``line`` (a list entry), ``lines`` (an
unclean list), ``rows`` or line ``places`` (YOLO rows and table lines are line numbers), or an
element that is no line (``object 3`` of a VOC file, ``annotations[3] (id 4)`` of a COCO file).
A tokenized dataset's tally (``rows`` beside ``row_count``) counts its rows from 0, as
``dataset[i]`` does, in a file that may have no lines (Arrow, Parquet): its place is the
element ``row 2``, with the line its JSON-lines reader kept (``lines``) when there is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

# Units whose places are line numbers of the file.
LINE_UNITS = ("line", "row")


@dataclass(frozen=True)
class Place:
    """A line (1-based) and/or an element of a file; both None when the finding is about the
    whole file."""

    line: int | None = None
    element: str | None = None

    def describe(self) -> str:
        return ", ".join(part for part in (f"line {self.line}" if self.line else "", self.element or "") if part)

    def prefix(self, message: str) -> str:
        """"object 3: " to put before ``message`` where a format has no place for the element,
        or "" when there is none or the message names it already (:func:`names_element`)."""
        return f"{self.element}: " if self.element and not names_element(message, self.element) else ""


def names_element(message: str, element: str) -> bool:
    """Whether ``message`` names ``element`` or another of its kind anywhere: LG301's "2 boxes
    lie outside ...: object 2 'G-man': ...; object 3 'cat': ..." needs no "object 2: " before it
    (which would name one object of two, twice). An element such as ``object 2`` counts as named
    by any ``object N`` or ``objects N, M`` of the message; any other by itself."""
    kind = re.fullmatch(r"([A-Za-z_]+) \d+", element)
    if kind:
        return re.search(rf"(?<![\w.]){kind.group(1)}s? \d", message) is not None
    return element in message


def _first_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 1 else None
    if isinstance(value, (list, tuple)) and value:
        return _first_int(value[0])
    return None


def finding_place(data: Mapping[str, Any]) -> Place:
    """The place a finding's data names (see the module docstring)."""
    unit = data.get("unit")
    if "row_count" in data:
        return _dataset_row(data)
    line = _first_int(data.get("line")) or _first_int(data.get("lines")) or _first_int(data.get("rows"))
    places = data.get("places")
    if line is None and unit in LINE_UNITS:
        line = _first_int(places)
    if line is not None:
        return Place(line=line)
    if isinstance(places, (list, tuple)) and places:
        first = places[0]
        return Place(element=str(first) if isinstance(first, str) else f"{unit or 'object'} {first}")
    boxes = data.get("boxes")
    if isinstance(boxes, list) and boxes and isinstance(boxes[0], Mapping):
        box = boxes[0]
        for key in ("object", "annotation", "row", "line"):
            if isinstance(box.get(key), int):
                return Place(line=box[key]) if key in LINE_UNITS else Place(element=f"{key} {box[key]}")
    return Place()


def _dataset_row(data: Mapping[str, Any]) -> Place:
    """The first row a tokenized dataset's tally names (0 is a row too), and its line."""
    rows, lines = data.get("rows"), data.get("lines")
    row = rows[0] if isinstance(rows, (list, tuple)) and rows and isinstance(rows[0], int) else None
    return Place(line=_first_int(lines), element=None if row is None else f"{data.get('unit') or 'row'} {row}")
