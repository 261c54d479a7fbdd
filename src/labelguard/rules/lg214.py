"""LG214 on the merged summary: two sources of the spec disagree, a class-name file (or list)
of one length and a class count of another.

A VOC or YOLO loader indexes its class list by name, so a name whose index falls outside the
count reaches the loss as an id past the head: the audit would check the names against the
list (every one found) and the ids against the count, and the device-side assert would come
from the name nobody checked. The finding names both sources, the names past the count, and
which of them the data uses.

A list one name shorter than the count is not a finding but a note: torchvision's detection
models count the background in ``num_classes`` and a classes.txt never names it, and a mask
set's labels.txt often leaves it out too.
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
user to say; checked against either alone, the data looks clean.""",
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
    Example(True, "a labels.txt of 2 names beside the data and num_classes=4",
            lambda: {"Annotations/a.xml": voc_xml([("cat", (1, 1, 9, 9))]),
                     "JPEGImages/a.jpg": image(), "labels.txt": "cat\ndog\n"},
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


@rule(SPEC_SOURCES_DISAGREE, "dataset", EXAMPLES)
def class_list_and_count_disagree(summary: Summary, spec: LabelSpec):
    if not spec.count_disagrees or len(spec.classes or ()) + 1 == spec.num_classes:
        return []  # one name short: the background left out, as torchvision's detection heads count it
    # count_disagrees holds only when both are given; not a user mistake when it does not
    assert spec.classes is not None and spec.num_classes is not None
    names, count = spec.classes, spec.num_classes
    listed = f"{plural(len(names), 'class name')} ({spec.origin('classes') or 'the class list'})"
    counted = f"num_classes={count} ({spec.origin('num_classes') or 'the class count'})"
    if len(names) > count:
        past = list(names[count:])
        used = [name for name in past if name in summary.class_objects]
        values = [index for index in range(count, len(names)) if index in summary.value_files]
        indices = f"the index {count}" if len(past) == 1 else f"the indices {count}..{len(names) - 1}"
        what = (f"the {noun(len(past), 'name')} {shorten(past, LISTED, repr)} {verb(len(past), 'has')} "
                f"{indices}, outside [0, {count})")
        if used:
            objects = sum(summary.class_objects[name] for name in used)
            what += (f", and the data uses {shorten(used, LISTED, repr)} ({plural(objects, 'object')}): "
                     "a loader that indexes the class list gives the loss ids past the head")
        elif values:
            shown = shorten(values, LISTED, lambda v: f"{v} ({names[v]!r})")
            what += f", and the masks hold {noun(len(values), 'value')} {shown}"
        elif len(names) == count + 1:
            what += " (the list may hold a background or ignore entry that is not a class)"
        hint = (f"Make them agree: remove or remap {shorten(past, LISTED, repr)} in the class list, or set "
                f"num_classes={len(names)} and build the head with {len(names)} outputs.")
        extra = {"past_count": past, "used": used or [names[v] for v in values]}
    else:
        what = f"values {len(names)}..{count - 1} have no name"
        hint = (f"Make them agree: name every class in the list (the background too, if it is a class), or set "
                f"num_classes={len(names)}.")
        extra = {}
    return [SPEC_SOURCES_DISAGREE.finding(
        None, f"{listed} but {counted}: {what}", hint=hint,
        names=len(names), num_classes=count, **extra,
    )]
