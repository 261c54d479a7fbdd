"""LG213 on the merged summary: masks whose shape differs from the shape nearly all the
others of their dataset share.

Masks are compared within their split: the masks of one folder with as many axes (Swin-Unet's
2-D training slices are never batched with its 3-D test volumes). A split whose masks come in
many sizes (VOC's photographs) is resized or cropped by its loader, and none is reported: only
a split where one shape holds at least :data:`MAJORITY` of :data:`FEWEST` or more masks, and a
few masks differ from it (a slice left at another resolution among 512x512 slices), which
default_collate cannot stack with the others unless the loader resizes every sample. A
declared ``sizes = "any"`` says sizes differ on purpose: nothing is reported.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import SHOWN, plural, shorten
from labelguard.rules.lg206 import describe_shape

SHAPE_OUTLIER = define(
    "LG213", "sample-shape-differs", "warning",
    summary="a sample's shape differs from the rest of its split where a batch needs equal sizes",
    why="""
default_collate stacks the samples of a batch into one tensor: one slice left at another
resolution among equal slices stops training at that batch with "stack expects each tensor
to be equal size", after the epochs before it ran.""",
    bad="train_npz: 2,210 slices 512x512, case0031_slice007.npz 256x256",
    good="every slice 512x512 (or the loader resizes every sample to one size)",
    fix="Re-export the odd samples at the dataset's size (nearest-neighbour for masks), or resize "
        "every sample in the dataset's transform.",
    scope="dataset",
)

# A split is judged only when it has this many masks and one shape holds this share of them.
FEWEST = 5
MAJORITY = 0.8


def _slices(n: int, odd: dict) -> dict:
    files = {f"data/case{i:02d}.npz": {"image": np.zeros((8, 8), np.float32), "label": np.zeros((8, 8), np.uint8)}
             for i in range(n)}
    files.update(odd)
    return files


EXAMPLES = (
    Example(True, "one 4x4 slice among six 8x8 slices",
            lambda: _slices(6, {"data/odd.npz": {"image": np.zeros((4, 4), np.float32),
                                                 "label": np.zeros((4, 4), np.uint8)}})),
    Example(False, "seven 8x8 slices",
            lambda: _slices(7, {})),
    Example(False, "six 8x8 training slices and two 3-D test volumes (never batched together)",
            lambda: _slices(6, {f"test/vol{i}.npz": {"image": np.zeros((3, 8, 8), np.float32),
                                                     "label": np.zeros((3, 8, 8), np.uint8)} for i in range(2)})),
    Example(False, "six 8x8 masks in train/ and one 4x4 in val/ (another split)",
            lambda: {**{f"train/m{i}.png": np.zeros((8, 8), np.uint8) for i in range(6)},
                     "val/m.png": np.zeros((4, 4), np.uint8)}),
    Example(False, "masks of many sizes (a loader that resizes)",
            lambda: {f"masks/m{i}.png": np.zeros((4 + i, 6), np.uint8) for i in range(6)}),
    Example(False, "one 4x4 slice among six 8x8 slices where sizes = \"any\"",
            lambda: _slices(6, {"data/odd.npz": {"image": np.zeros((4, 4), np.float32),
                                                 "label": np.zeros((4, 4), np.uint8)}}),
            spec={"sizes": "any"}),
)


@rule(SHAPE_OUTLIER, "dataset", EXAMPLES)
def shapes_differ_from_the_majority(summary: Summary, spec: LabelSpec):
    """One finding per split (the masks of one folder, of one number of axes: Swin-Unet's
    2-D training slices apart from its 3-D test volumes) where one shape holds most masks."""
    if spec.sizes_vary:
        return []
    groups: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for (folder, shape), count in summary.shapes.items():
        groups[(folder, shape.count("x") + 1)][shape] = count
    findings = []
    for (folder, _), shapes in sorted(groups.items()):
        total = sum(shapes.values())
        if len(shapes) < 2 or total < FEWEST:
            continue
        majority, held = max(shapes.items(), key=lambda item: (item[1], item[0]))
        if held < MAJORITY * total:
            continue
        odd = sorted((key for key in shapes if key != majority), key=lambda key: (-shapes[key], key))
        count = total - held
        examples = {key: summary.shape_examples.get((folder, key), []) for key in odd[:SHOWN]}
        listed = shorten([f"{_shown(key)} in {shapes[key]:,} ({', '.join(examples.get(key, []))})" for key in odd],
                         SHOWN, sep="; ")
        where = f" of {folder}" if folder else ""
        findings.append(SHAPE_OUTLIER.finding(
            None,
            f"{plural(count, 'mask')}{where} differ{'s' if count == 1 else ''} in shape from the {held:,} of {total:,} "
            f"there that are {_shown(majority)}: {listed}",
            hint=f"Re-export these samples at {_shown(majority)} (nearest-neighbour for masks), or resize every "
            "sample in the dataset's transform; batching them as they are fails with 'stack expects each tensor to "
            "be equal size' (labelguard.torch.guard_collate names the sample at run time). If sizes differ on "
            "purpose, declare sizes = \"any\".",
            folder=folder, majority=majority, majority_count=held, count=count,
            shapes={key: shapes[key] for key in odd[:SHOWN]}, examples=examples,
        ))
    return findings


def _shown(key: str) -> str:
    """A stored shape ("24x32", height first) as LG206 writes one: width x height in 2-D."""
    return describe_shape(tuple(int(n) for n in key.split("x")))
