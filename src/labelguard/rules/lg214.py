"""LG214 on the merged summary: two sources of the spec disagree, a class-name file (or list)
of one length and a class count of another.

A VOC or YOLO loader indexes its class list by name, so a name whose index falls outside the
count reaches the loss as an id past the head: the audit would check the names against the
list (every one found) and the ids against the count, and the device-side assert would come
from the name nobody checked. The finding names both sources, the names past the count, and
which of them the data uses.

The disagreement alone (a list longer or shorter than the count, no name past the count in
use) stays the spec's note: conventions explain many (torchvision's detection models count
the background that a classes.txt never names; a label map may end with a void entry; COCO
category ids need not be contiguous), and an error there would fire on correct setups. The
finding needs the data's evidence: a name past the count that an object carries, or a mask
value (as the loss sees it, ignore values apart) that indexes one.
"""

from __future__ import annotations

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import LISTED, noun, plural, shorten, verb
from labelguard.rules._examples import image, voc_xml

SPEC_SOURCES_DISAGREE = define(
    "LG214", "spec-sources-disagree", "error",
    summary="two sources of the spec disagree: a class list of one length and a class count of another",
    why="""
A labels.txt written by scanning the data (0, 1, 2, 3, 5) beside --num-classes 4 from the
training config: each looks fine alone, but the loader maps '5' to index 4, past a head of 4
outputs, and the loss fails with the device-side assert. Which source is right is for the
user to say; checked against either alone, the data looks clean. Reported when the data uses
a name past the count; a list and a count that only differ are a note of the spec.""",
    bad="labels.txt: 0 1 2 3 5 (5 names) and --num-classes 4",
    good="labels.txt: 0 1 2 3 (4 names) and --num-classes 4",
    fix="Make the class list and the count agree: drop or remap the extra class, or raise the count "
        "(and the model's head) to the number of names.",
    scope="dataset",
)

EXAMPLES = (
    Example(True, "a labels.txt of 5 names beside the data, num_classes=4, and an object of the fifth name",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("5", (2, 2, 8, 8))]),
                     "JPEGImages/a.jpg": image(), "labels.txt": "0\n1\n2\n3\n5\n"},
            spec={"num_classes": 4}),
    Example(False, "a labels.txt of 5 names and num_classes=4, the fifth name unused (a note, not a finding)",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("3", (2, 2, 8, 8))]),
                     "JPEGImages/a.jpg": image(), "labels.txt": "0\n1\n2\n3\n5\n"},
            spec={"num_classes": 4}),
    Example(False, "a labels.txt of 3 names and num_classes=4, the background counted (torchvision detection)",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))]),
                     "JPEGImages/a.jpg": image(), "labels.txt": "cat\ndog\nbird\n"},
            spec={"num_classes": 4}),
    Example(False, "a labels.txt of 4 names beside the data and num_classes=4",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("3", (2, 2, 8, 8))]),
                     "JPEGImages/a.jpg": image(), "labels.txt": "0\n1\n2\n3\n"},
            spec={"num_classes": 4}),
    Example(False, "a labels.txt of 5 names and no class count",
            lambda: {"Annotations/a.xml": voc_xml([("0", (1, 1, 9, 9)), ("5", (2, 2, 8, 8))]),
                     "JPEGImages/a.jpg": image(), "labels.txt": "0\n1\n2\n3\n5\n"}),
)


def _files(examples: dict, keys, total: int) -> str:
    """"in FILE, FILE and N more files": the files that hold ``keys``, as many as the summary kept
    (``total`` files in all); "" when it kept none."""
    kept = sorted({path for key in keys for path in examples.get(key, [])})
    if not kept:
        return ""
    return f"in {shorten(kept, LISTED, total=max(total, len(kept)), what='file')}"


@rule(SPEC_SOURCES_DISAGREE, "dataset", EXAMPLES)
def class_list_and_count_disagree(summary: Summary, spec: LabelSpec):
    if spec.values is not None or not spec.count_disagrees:
        return []
    # count_disagrees holds only when both are given; not a user mistake when it does not
    assert spec.classes is not None and spec.num_classes is not None
    names, count = spec.classes, spec.num_classes
    # The names past the count that the data uses: objects of that name, or mask values (as the
    # loss sees them, ignore values apart) that index them.
    used = [name for name in names[count:] if name in summary.class_objects]
    values = sorted(v for v in summary.value_files
                    if not spec.is_ignored(v) and count <= spec.loss_value(v) < len(names))
    if not used and not values:
        return []  # the disagreement alone is the spec's note: a convention may explain it
    if used:
        objects = sum(summary.class_objects[name] for name in used)
        files = _files(summary.class_examples, used, sum(summary.class_images[name] for name in used))
        where = f"; {files}" if files else ""
        evidence = f"the data uses {shorten(used, LISTED, repr)} ({plural(objects, 'object')}{where})"
    else:
        used = list(dict.fromkeys(names[spec.loss_value(v)] for v in values))
        shown = shorten(values, LISTED, lambda v: f"{v} ({names[spec.loss_value(v)]!r})")
        files = _files(summary.value_examples, values, sum(summary.value_files[v] for v in values))
        evidence = f"the masks hold {noun(len(values), 'value')} {shown}{f' ({files})' if files else ''}"
    past = len(names) - count
    return [SPEC_SOURCES_DISAGREE.finding(
        None,
        f"{plural(len(names), 'class name')} ({spec.origin('classes') or 'the class list'}) but "
        f"num_classes={count} ({spec.origin('num_classes') or 'the class count'}): {evidence}, "
        f"{'a name' if len(used) == 1 else 'names'} of the list past the count, outside [0, {count}): "
        "a loader that indexes the class list gives the loss class ids the model has no output for",
        hint=f"Make them agree: if {shorten(used, LISTED, repr)} {verb(len(used), 'is')} no class of this "
        "dataset, remove the annotations that use it (a stray file: `labelguard fix drop FILE`) and "
        f"the name from the class list; else set num_classes={len(names)} and build the head with "
        f"{len(names)} outputs.",
        names=len(names), num_classes=count, past_count=past, used=used,
    )]
