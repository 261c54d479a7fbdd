"""Partial summaries of an audit that merge associatively.

Every per-file result carries a small :class:`Summary`; the runner adds them up in any
order or grouping (a process pool, a Dask tree reduction) and gets the same total.
Counts add, sets union, example lists keep the smallest few paths.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

EXAMPLES_KEPT = 5


def _merge_examples(a: list[str], b: list[str]) -> list[str]:
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
    """

    samples: int = 0
    value_files: Counter = field(default_factory=Counter)
    value_pixels: Counter = field(default_factory=Counter)
    value_examples: dict[int, list[str]] = field(default_factory=dict)
    class_objects: Counter = field(default_factory=Counter)
    class_images: Counter = field(default_factory=Counter)
    class_examples: dict[str, list[str]] = field(default_factory=dict)
    colors: Counter = field(default_factory=Counter)
    empty: int = 0
    unreadable: int = 0
    kinds: Counter = field(default_factory=Counter)
    dtypes: Counter = field(default_factory=Counter)
    palette_decoded: Counter = field(default_factory=Counter)
    palette_examples: dict[str, list[str]] = field(default_factory=dict)

    def add_palette_decoded(self, palette: str, path: str) -> None:
        self.palette_decoded[palette] += 1
        self.palette_examples[palette] = _merge_examples(self.palette_examples.get(palette, []), [path])

    def add_values(self, path: str, values: Iterable[int], counts: Iterable[int]) -> None:
        """Count one file's values; ``path`` joins a value's examples if among the smallest few,
        as merging keeps them, so adding files one by one equals merging their summaries."""
        for value, count in zip(values, counts):
            value = int(value)
            self.value_files[value] += 1
            self.value_pixels[value] += int(count)
            examples = self.value_examples.setdefault(value, [])
            if path not in examples and (len(examples) < EXAMPLES_KEPT or path < examples[-1]):
                bisect.insort(examples, path)
                del examples[EXAMPLES_KEPT:]

    def add_classes(self, path: str, objects: Counter) -> None:
        for name, count in objects.items():
            self.class_objects[name] += count
            self.class_images[name] += 1
            examples = self.class_examples.setdefault(name, [])
            if len(examples) < EXAMPLES_KEPT:
                examples.append(path)

    def update(self, other: "Summary") -> "Summary":
        """Add ``other`` into this summary (in place) and return self."""
        # Called once per file or batch: empty parts of ``other`` (most of them, for one
        # file) are skipped rather than merged.
        self.samples += other.samples
        if other.value_files:
            self.value_files.update(other.value_files)
            self.value_pixels.update(other.value_pixels)
        for value, paths in other.value_examples.items():
            self.value_examples[value] = _merge_examples(self.value_examples.get(value, []), paths)
        if other.class_objects or other.class_images:
            self.class_objects.update(other.class_objects)
            self.class_images.update(other.class_images)
        for name, paths in other.class_examples.items():
            self.class_examples[name] = _merge_examples(self.class_examples.get(name, []), paths)
        if other.colors:
            self.colors.update(other.colors)
        self.empty += other.empty
        self.unreadable += other.unreadable
        self.kinds.update(other.kinds)
        self.dtypes.update(other.dtypes)
        if other.palette_decoded:
            self.palette_decoded.update(other.palette_decoded)
            for palette, paths in other.palette_examples.items():
                self.palette_examples[palette] = _merge_examples(self.palette_examples.get(palette, []), paths)
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
            "empty_masks": self.empty,
            "unreadable": self.unreadable,
            "kinds": dict(sorted(self.kinds.items())),
            "dtypes": dict(sorted(self.dtypes.items())),
        }
