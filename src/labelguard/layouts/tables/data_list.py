"""OpenMMLab annotation files (mmengine's ``BaseDataset`` format, which mmpretrain's
``CustomDataset`` and its classification datasets read): a JSON object with ``metainfo``
and a ``data_list`` of samples, each an ``img_path`` and a ``gt_label``:

* single-label: ``"gt_label": 1``;
* multi-label: ``"gt_label": [0, 1]`` (each id a class of the sample);
* multi-task: ``"gt_label": {"gender": 0, "wear": [1, 0]}`` (ids of each task's own classes,
  ``metainfo.tasks``): their paths are read, their labels are not checked against one spec.

Samples that cannot be read (no ``img_path``, a label that is no integer id) are problems
with their place (``data_list[3]``); the other samples are still read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from labelguard.core.text import clipped
from labelguard.readers.base import ProblemLog, ReadError, parse_json, read_text

# What makes a JSON file one of these, in its first bytes.
_DATA_LIST = re.compile(rb'"data_list"\s*:')
_SAMPLE_KEYS = re.compile(rb'"(img_path|gt_label)"\s*:')


def is_data_list_head(head: bytes) -> bool:
    """True when ``head``, a JSON file's first bytes, opens an OpenMMLab ``data_list`` of
    ``img_path``/``gt_label`` samples."""
    return bool(_DATA_LIST.search(head) and _SAMPLE_KEYS.search(head))


@dataclass
class DataList(ProblemLog):
    """The samples of one annotation file.

    Attributes:
        paths: the ``img_path`` of each sample read.
        samples: the ``data_list`` index of each.
        labels: per sample, the class ids (one for a single-label sample, any number for a
            multi-label one); None for a multi-task sample, whose ids are of its tasks.
        kind: "single-label", "multi-label" or "multi-task" (the file's first sample's).
        problems: (the sample's number, data_list index + 1; what is wrong), the first
            ``PROBLEMS_KEPT``.
        problem_count: how many samples could not be read.
    """

    paths: list[str] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    labels: list[tuple[int, ...] | None] = field(default_factory=list)
    kind: str = "single-label"
    problems: list[tuple[int, str]] = field(default_factory=list)
    problem_count: int = 0


def read_data_list(path: str) -> DataList:
    """Read an OpenMMLab annotation file; ReadError when it cannot be read or is not one."""
    value = parse_json(read_text(path), "OpenMMLab annotation file")
    if not isinstance(value, dict) or not isinstance(value.get("data_list"), list):
        raise ReadError("no 'data_list' array: not an OpenMMLab annotation file")
    found = DataList()
    kinds = set()
    for index, sample in enumerate(value["data_list"]):
        if not isinstance(sample, dict):
            found.problem(index + 1, f"(data_list[{index}]) is a JSON {type(sample).__name__}, not an object "
                                     "of img_path and gt_label")
            continue
        image = sample.get("img_path")
        if not isinstance(image, str) or not image.strip() or "\x00" in image:
            found.problem(index + 1, f"(data_list[{index}]) has no img_path (a non-empty string)")
            continue
        label = sample.get("gt_label")
        if isinstance(label, dict):
            ids, kind = None, "multi-task"
        elif isinstance(label, list):
            ids, kind = label, "multi-label"
        else:
            ids, kind = [label], "single-label"
        if ids is not None and not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            found.problem(index + 1, f"(data_list[{index}]) has a gt_label {clipped(repr(label), 40)} that is "
                                     "no class id (an integer) or list of them")
            continue
        kinds.add(kind)
        found.paths.append(image)  # as mmengine joins it: " a.jpg" names no a.jpg
        found.samples.append(index)
        found.labels.append(tuple(ids) if ids is not None else None)
    found.kind = "multi-task" if "multi-task" in kinds else "multi-label" if "multi-label" in kinds \
        else "single-label"
    return found
