"""LG213 on the merged summary: masks whose shape differs from the shape nearly all the
others of their dataset share.

A dataset whose masks come in many sizes (VOC's photographs) is resized or cropped by its
loader, and none is reported: only a dataset where one shape holds at least
:data:`MAJORITY` of :data:`FEWEST` or more masks, and a few masks differ from it (a slice
left at another resolution among 512x512 slices), which default_collate cannot stack with
the others unless the loader resizes every sample. A declared ``sizes = "any"`` says sizes
differ on purpose: nothing is reported.
"""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import SHOWN, plural, shorten

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

# A dataset is judged only when it has this many masks and one shape holds this share of them.
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
    Example(False, "masks of many sizes (a loader that resizes)",
            lambda: {f"masks/m{i}.png": np.zeros((4 + i, 6), np.uint8) for i in range(6)}),
    Example(False, "one 4x4 slice among six 8x8 slices where sizes = \"any\"",
            lambda: _slices(6, {"data/odd.npz": {"image": np.zeros((4, 4), np.float32),
                                                 "label": np.zeros((4, 4), np.uint8)}}),
            spec={"sizes": "any"}),
)


@rule(SHAPE_OUTLIER, "dataset", EXAMPLES)
def shapes_differ_from_the_majority(summary: Summary, spec: LabelSpec):
    shapes = summary.shapes
    total = sum(shapes.values())
    if spec.sizes_vary or len(shapes) < 2 or total < FEWEST:
        return ()
    majority, held = max(shapes.items(), key=lambda item: (item[1], item[0]))
    if held < MAJORITY * total:
        return ()
    odd = sorted((key for key in shapes if key != majority), key=lambda key: (-shapes[key], key))
    count = total - held
    listed = shorten(odd, SHOWN, lambda key: f"{key} in {shapes[key]} ({', '.join(summary.shape_examples[key])})",
                     sep="; ")
    return (SHAPE_OUTLIER.finding(
        None,
        f"{plural(count, 'mask')} differ{'s' if count == 1 else ''} in shape from the {held} of {total} "
        f"that are {majority}: {listed}",
        hint=f"Re-export these samples at {majority} (nearest-neighbour for masks), or resize every sample "
        "in the dataset's transform; batching them as they are fails with 'stack expects each tensor to be "
        "equal size' (labelguard.torch.guard_collate names the sample at run time). If sizes differ on "
        "purpose, declare sizes = \"any\".",
        majority=majority, majority_count=held, count=count,
        shapes={key: shapes[key] for key in odd[:SHOWN]},
        examples={key: summary.shape_examples[key] for key in odd[:SHOWN]},
    ),)
