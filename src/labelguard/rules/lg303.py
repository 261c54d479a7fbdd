"""LG303 on annotation records: an object repeated in one file (same class, same geometry)."""

from __future__ import annotations

from labelguard.checks.boxes import DUPLICATE_BOX
from labelguard.checks.labels import PLACES_KEPT
from labelguard.core.records import AnnotationRecord
from labelguard.core.rules import Example, rule
from labelguard.core.text import SHOWN, plural, shorten
from labelguard.rules._examples import voc_xml, yolo_rows

EXAMPLES = (
    Example(True, "a YOLO row written twice",
            lambda: {"labels/a.txt": yolo_rows([(0, .5, .5, .2, .2), (0, .5, .5, .2, .2)])}),
    Example(True, "a VOC object written twice",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("cat", (1, 1, 9, 9))])}),
    Example(False, "two objects of one class in different places",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9)), ("cat", (2, 2, 9, 9))])}),
)

_HINTS = {
    "row": "Remove the repeated rows (Ultralytics drops them with a warning).",
    "object": "Remove the repeated <object> elements.",
}


@rule(DUPLICATE_BOX, "annotation", EXAMPLES)
def repeated_objects(record: AnnotationRecord, spec):
    keys = record.keys
    if keys is None:
        if not record.boxes:
            return ()
        keys = list(zip(record.labels, record.boxes))
    if len(set(keys)) == len(keys):
        return ()
    seen: dict = {}
    repeats = []
    for index, key in enumerate(keys):
        place = record.place(index)
        first = seen.setdefault(key, place)
        if first != place:
            repeats.append((place, first, record.labels[index], record.boxes[index] if record.boxes else None))
    unit = record.unit

    def describe(item) -> str:
        text = f"{unit} {item[0]} repeats {unit} {item[1]}"
        if item[3] is not None:
            text += f" ({item[2]!r}, box {', '.join(f'{v:g}' for v in item[3])})"
        return text

    return [DUPLICATE_BOX.finding(
        record.display,
        f"{plural(len(repeats), f'duplicate {unit}')}: {shorten(repeats, SHOWN, describe, sep='; ')}",
        hint=_HINTS.get(unit, f"Remove the repeated {unit}s."),
        pairs=[[first, place] for place, first, _, _ in repeats[:PLACES_KEPT]], count=len(repeats),
    )]
