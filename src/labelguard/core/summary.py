"""Partial summaries of an audit that merge associatively.

Every per-file result carries a small :class:`Summary`; the runner adds them up in any
order or grouping (a process pool, a Dask tree reduction) and gets the same total.
Counts add, sets union, example lists keep the smallest few paths.

Mask values are counted exactly up to a bound: an image saved as a label holds millions of
distinct values, and a counter of each would cost more than the files. Ordered by distance
from 0 (0, 1, -1, 2, -2, ...), the :data:`VALUES_KEPT` values nearest 0 (the classes and the
ignore values) and the :data:`VALUES_KEPT` farthest (the outliers) are kept; the pixels of the
others are added up. Which values are kept depends only on the set of all values, and a
value kept in the total was kept in every part that held it, so its counts are exact and
merging stays associative.
"""

from __future__ import annotations

import bisect
import functools
import os
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Iterable

EXAMPLES_KEPT = 5
# Distinct mask values counted exactly at each end of the order by distance from 0.
VALUES_KEPT = 1024
# Distinct mask shapes counted; past it, a dataset's sizes vary by design (VOC's photos).
SHAPES_KEPT = 64


# An empty Counter without the Python call of Counter.__init__ (a sixth of its 0.4
# microseconds): a summary has 12, and the result cache makes one per file.
_counter = functools.partial(dict.__new__, Counter)


def _merge_examples(a: list[str], b: list[str]) -> list[str]:
    return sorted(set(a) | set(b))[:EXAMPLES_KEPT]


def _merge_sorted(a: list[str], b: list[str]) -> list[str]:
    """:func:`_merge_examples` of ``a`` sorted and without repeats (as every list of examples
    but ``class_examples`` is kept): ``a`` itself when it is full and ``b`` holds only later
    paths, as it does when files come in the order of their paths (a quarter of the cost of
    merging a mask's summary)."""
    if len(a) >= EXAMPLES_KEPT and b and min(b) > a[-1]:
        return a
    return sorted(set(a) | set(b))[:EXAMPLES_KEPT]


@dataclass
class Summary:
    """What an audit saw, in a form that merges.

    Attributes:
        samples: files (or annotation records) audited.
        value_files / value_pixels: mask value -> number of files / pixels holding it.
        value_examples: mask value -> a few files holding it.
        class_objects / class_images: class name or id (as text) -> objects / images.
        class_examples: class -> a few files holding it.
        colors: "r,g,b" -> pixels, for colour masks decoded without a map.
        empty: masks that hold only background or ignore values.
        unreadable: files that could not be read.
        kinds: record kind (mask, voc, coco...) -> count.
        dtypes: stored mask dtype/mode -> files.
        palette_decoded / palette_examples: standard palette ("voc", "camvid") -> colour
            masks decoded through it, and a few of them.
        values_capped: more distinct mask values were found than are counted (twice
            :data:`VALUES_KEPT`); capped_pixels: the pixels of the values not counted.
        remarks / remark_examples: how files were read when the report must say so (a
            reader's remark) -> files, and a few of them.
        token_rows / token_highest: tokenized data read without a token spec: column ->
            rows holding it, and its highest value (what LG006 lists as not checked).
        shapes / shape_examples: (a mask's folder, its shape as stored: "512x512",
            "1x96x96") -> masks of that shape there, and a few of them (LG213); shapes_varied:
            more than :data:`SHAPES_KEPT` (folder, shape) pairs were seen (the dataset's sizes
            vary by design), so none is counted.
        instances / instance_extent / instance_examples: masks whose values number objects
            (instance ids), by (folder, reading): "instances" for masks read as such,
            "classes" for masks that look so where class ids are expected. ``instances``
            counts (folder, reading, what) with what: "masks", "ids", "split" (masks with an id
            of several regions), "outside" (masks with values the spec does not allow) and
            "dtype NAME"; ``instance_extent`` keeps [fewest ids, most ids, highest id] of a mask.
    """

    samples: int = 0
    value_files: Counter = field(default_factory=_counter)
    value_pixels: Counter = field(default_factory=_counter)
    value_examples: dict[int, list[str]] = field(default_factory=dict)
    class_objects: Counter = field(default_factory=_counter)
    class_images: Counter = field(default_factory=_counter)
    class_examples: dict[str, list[str]] = field(default_factory=dict)
    colors: Counter = field(default_factory=_counter)
    empty: int = 0
    unreadable: int = 0
    kinds: Counter = field(default_factory=_counter)
    dtypes: Counter = field(default_factory=_counter)
    palette_decoded: Counter = field(default_factory=_counter)
    palette_examples: dict[str, list[str]] = field(default_factory=dict)
    values_capped: bool = False
    capped_pixels: int = 0
    remarks: Counter = field(default_factory=_counter)
    remark_examples: dict[str, list[str]] = field(default_factory=dict)
    token_rows: Counter = field(default_factory=_counter)
    token_highest: dict[str, int] = field(default_factory=dict)
    shapes: Counter = field(default_factory=_counter)
    shape_examples: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    shapes_varied: bool = False
    instances: Counter = field(default_factory=_counter)
    instance_extent: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    instance_examples: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def add_remark(self, remark: str, path: str) -> None:
        self.remarks[remark] += 1
        self.remark_examples[remark] = _merge_sorted(self.remark_examples.get(remark, []), [path])

    def add_shape(self, path: str, shape: tuple[int, ...]) -> None:
        """Count one mask's stored shape; ``path`` joins its examples as merging keeps them."""
        if self.shapes_varied:
            return
        key = (os.path.dirname(path), "x".join(str(n) for n in shape))
        self.shapes[key] += 1
        self.shape_examples[key] = _merge_sorted(self.shape_examples.get(key, []), [path])
        self._cap_shapes()

    def _cap_shapes(self) -> None:
        """Past :data:`SHAPES_KEPT` distinct shapes the sizes vary by design: none is kept
        (the same after any order of merging: the set of shapes only grows)."""
        if len(self.shapes) > SHAPES_KEPT:
            self.shapes.clear()
            self.shape_examples.clear()
            self.shapes_varied = True

    def add_instance_mask(self, path: str, reading: str, ids: int, highest: int, dtype: str,
                          split: bool = False, outside: bool = False, one_region: int = 0) -> None:
        """Count one mask whose values number objects; ``reading`` is "instances" (read as
        such) or "classes" (class ids were expected); ``one_region``: its ids of one connected
        region each."""
        key = (os.path.dirname(path), reading)
        self._add_instances({(*key, "masks"): 1, (*key, "ids"): ids, (*key, "split"): int(split),
                             (*key, "one region"): one_region,
                             (*key, "outside"): int(outside), (*key, f"dtype {dtype}"): 1},
                            {key: [ids, ids, highest]}, {key: [path]})

    def _add_instances(self, counts, extents, examples) -> None:
        self.instances.update({key: n for key, n in counts.items() if n})
        for key, (fewest, most, highest) in extents.items():
            had = self.instance_extent.get(key)
            self.instance_extent[key] = [fewest, most, highest] if had is None else \
                [min(had[0], fewest), max(had[1], most), max(had[2], highest)]
        for key, paths in examples.items():
            self.instance_examples[key] = _merge_sorted(self.instance_examples.get(key, []), paths)

    def add_palette_decoded(self, palette: str, path: str) -> None:
        self.palette_decoded[palette] += 1
        self.palette_examples[palette] = _merge_sorted(self.palette_examples.get(palette, []), [path])

    def add_values(self, path: str, values: Iterable[int], counts: Iterable[int]) -> None:
        """Count one file's values; ``path`` joins a value's examples if among the smallest few,
        as merging keeps them, so adding files one by one equals merging their summaries."""
        values, counts = _kept_values(values, counts, self)
        for value, count in zip(values, counts):
            value = int(value)
            self.value_files[value] += 1
            self.value_pixels[value] += int(count)
            examples = self.value_examples.setdefault(value, [])
            if path not in examples and (len(examples) < EXAMPLES_KEPT or path < examples[-1]):
                bisect.insort(examples, path)
                del examples[EXAMPLES_KEPT:]
        self._cap_values()

    def _cap_values(self) -> None:
        """Drop the values past the :data:`VALUES_KEPT` at each end, adding up their pixels."""
        if len(self.value_files) <= 2 * VALUES_KEPT:
            return
        ordered = sorted(self.value_files, key=_from_zero)
        for value in ordered[VALUES_KEPT:-VALUES_KEPT]:
            del self.value_files[value]
            self.capped_pixels += self.value_pixels.pop(value)
            self.value_examples.pop(value, None)
        self.values_capped = True

    def add_classes(self, path: str, objects: Counter) -> None:
        for name, count in objects.items():
            self.class_objects[name] += count
            self.class_images[name] += 1
            examples = self.class_examples.setdefault(name, [])
            if len(examples) < EXAMPLES_KEPT:
                examples.append(path)

    def update(self, other: "Summary | SimpleNamespace") -> "Summary":
        """Add ``other`` into this summary (in place) and return self. ``other`` may be a
        read-only view of a summary's parts (a cached result's): it is only read."""
        # Called once per file or batch: empty parts of ``other`` (most of them, for one
        # file) are skipped rather than merged.
        self.samples += other.samples
        if other.value_files:
            _add(self.value_files, other.value_files)
            _add(self.value_pixels, other.value_pixels)
        examples = self.value_examples
        for value, paths in other.value_examples.items():
            examples[value] = _merge_sorted(examples.get(value, []), paths)
        self.values_capped |= other.values_capped
        self.capped_pixels += other.capped_pixels
        self._cap_values()
        if other.class_objects or other.class_images:
            self.class_objects.update(other.class_objects)
            self.class_images.update(other.class_images)
        for name, paths in other.class_examples.items():
            self.class_examples[name] = _merge_examples(self.class_examples.get(name, []), paths)
        if other.colors:
            self.colors.update(other.colors)
        self.empty += other.empty
        self.unreadable += other.unreadable
        _add(self.kinds, other.kinds)
        _add(self.dtypes, other.dtypes)
        if other.palette_decoded:
            self.palette_decoded.update(other.palette_decoded)
            for palette, paths in other.palette_examples.items():
                self.palette_examples[palette] = _merge_sorted(self.palette_examples.get(palette, []), paths)
        if other.remarks:
            self.remarks.update(other.remarks)
            for remark, paths in other.remark_examples.items():
                self.remark_examples[remark] = _merge_sorted(self.remark_examples.get(remark, []), paths)
        if other.shapes_varied and not self.shapes_varied:
            self.shapes.clear()
            self.shape_examples.clear()
            self.shapes_varied = True
        elif other.shapes and not self.shapes_varied:
            _add(self.shapes, other.shapes)
            for key, paths in other.shape_examples.items():
                self.shape_examples[key] = _merge_sorted(self.shape_examples.get(key, []), paths)
            self._cap_shapes()
        if other.instances:
            self._add_instances(other.instances, other.instance_extent, other.instance_examples)
        if other.token_rows:
            self.token_rows.update(other.token_rows)
            for column, highest in other.token_highest.items():
                self.token_highest[column] = max(highest, self.token_highest.get(column, highest))
        return self

    def merged(self, other: "Summary") -> "Summary":
        """A new summary holding both."""
        return Summary().update(self).update(other)

    def found_values(self) -> list[int]:
        return sorted(self.value_files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "values": {
                str(v): {"files": self.value_files[v], "pixels": self.value_pixels[v]}
                for v in sorted(self.value_files)
            },
            "classes": {
                name: {"objects": self.class_objects[name], "images": self.class_images[name]}
                for name in sorted(self.class_objects)
            },
            "values_capped": {"kept": len(self.value_files), "other_pixels": self.capped_pixels}
            if self.values_capped else None,
            "empty_masks": self.empty,
            "unreadable": self.unreadable,
            "kinds": dict(sorted(self.kinds.items())),
            "dtypes": dict(sorted(self.dtypes.items())),
        }


def _add(counter: Counter, counts: dict) -> None:
    """``counter.update(counts)`` for a mapping of numbers, without the call's checks: a
    file's summary holds a few counts in each of several counters, and those checks took a
    fifth of merging it."""
    get = counter.get
    for key, count in counts.items():
        counter[key] = get(key, 0) + count


def _from_zero(value: int) -> tuple[int, bool]:
    """The order of values by distance from 0: 0, 1, -1, 2, -2, ..."""
    return abs(value), value < 0


def _kept_values(values, counts, summary: Summary):
    """One file's histogram (sequences or arrays) cut to the :data:`VALUES_KEPT` values at
    each end of the order from 0 before any is counted one by one; the pixels of the others
    go to ``summary``."""
    if len(values) <= 2 * VALUES_KEPT:
        return values, counts
    import numpy as np  # here only: `labelguard formats` reads this module's limits without numpy

    values, counts = np.asarray(values), np.asarray(counts, dtype=np.int64)
    # Sorted by (distance from 0, sign) without overflow: -2**63 has no int64 absolute value.
    negative = values < 0
    distance = values.astype(np.uint64) if values.dtype.kind == "u" else \
        np.where(negative, (-(values + 1)).astype(np.uint64) + np.uint64(1), values.astype(np.uint64))
    order = np.lexsort((negative, distance))
    kept = np.concatenate([order[:VALUES_KEPT], order[-VALUES_KEPT:]])
    summary.capped_pixels += int(counts.sum()) - int(counts[kept].sum())
    summary.values_capped = True
    return values[kept], counts[kept]
