"""LG007 on file facts: label files under the audited path that no dataset read (the
inventory of each dataset, and of a PATH's files in no dataset, names them by kind and
reason)."""

from __future__ import annotations

import numpy as np

from labelguard.core.records import FileFacts
from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.text import plural, shorten
from labelguard.rules._examples import coco_box, coco_json

NOT_AUDITED = define(
    "LG007", "label-file-not-audited", "warning",
    summary="a file that can hold labels lies under the audited path but no dataset audited it",
    why="""
A layout detected for part of a folder, a second dataset beside the first or an export the tool
does not know leaves label files unread: an audit that says "No findings" about the files it
did read says nothing about these, and they are what the DataLoader may load.""",
    bad="download/ holds as_yolo/ (audited) and masks/*.png that no dataset read",
    good="every mask, annotation file and label list under PATH audited, or named as an image or metadata",
    fix="Audit the folder that holds them (`labelguard detect PATH` shows how each folder was taken), force "
    "the layout that reads them with --format, or move them out of the dataset if they are not part of it.",
)


EXAMPLES = (
    Example(True, "a COCO file, and a folder of masks beside it that no dataset reads",
            lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1)]),
                     "extra/masks/a.png": np.eye(8, dtype=np.uint8), "extra/masks/b.png": np.eye(8, dtype=np.uint8)}),
    Example(False, "a COCO file alone", lambda: {"annotations/instances_train.json": coco_json([coco_box(1, 1)])}),
)


@rule(NOT_AUDITED, "files", EXAMPLES)
def labels_not_audited(facts: FileFacts, spec):
    """One finding per kind of label file left unread, with the reason and the first files."""
    return [NOT_AUDITED.finding(
        group.files[0] if group.count == 1 else None,
        f"{plural(group.count, group.kind)} under {facts.root} not audited: {group.reason} "
        f"({shorten(group.files, len(group.files), total=group.count)})",
        kind=group.kind, count=group.count, files=list(group.files)) for group in facts.unaudited]
