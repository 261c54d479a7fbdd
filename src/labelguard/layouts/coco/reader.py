"""COCO JSON: a streaming reader that turns one file into compact columns.

A COCO file can be hundreds of megabytes. ``json.load`` would build every annotation as a
Python dict at once (several times the file size in memory); this reader walks the
top-level object itself and decodes one element of ``images``/``annotations``/
``categories`` at a time with the C decoder (``JSONDecoder.raw_decode``), keeping only
numbers in typed arrays (ids, boxes, sizes) and the image file names. Checks then run
vectorised over those columns, whatever order the sections come in (the official COCO
files put ``categories`` last).

Wrong types inside an element (a string ``category_id``, a bbox of 3 values) are noted as
:class:`Problem` entries with the element's place and the element is still used for every
check its other fields allow; broken JSON syntax raises :class:`ReadError` with the line
and column, since no training code can load such a file.

Flavours read: instances, person_keypoints, stuff (RLE), panoptic (``segments_info``),
captions and image_info (no categories: category ids are not class labels there), image
labels (annotations without boxes), Roboflow ``_annotations.coco.json``.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
from array import array
from dataclasses import dataclass, field
from typing import TypeGuard

import numpy as np

from labelguard.core.records import NO_ID, Problem
from labelguard.core.text import clipped, plural
from labelguard.readers.base import ReadError, open_regular, read_head, stream_size

CHUNK = 1 << 20
# Literals and numbers cut by a chunk boundary fail this close to the buffer's end.
SLACK = 16
CAPTION = NO_ID + 1  # caption annotations carry a category_id that is not a class
STRING_IDS = -(2**62)  # string image ids are coded downwards from here
STREAMED = ("images", "annotations", "categories")
# The types are right in a polygon of odd length: what is wrong is a coordinate.
ODD_POLYGON_HINT = ("Re-export or redraw these polygons: a polygon is a flat list of x, y pairs "
                    "[x1, y1, x2, y2, ...], so one of odd length has a coordinate missing or one too "
                    "many, and its points cannot be read as they were drawn.")

_WS = re.compile(r"[ \t\n\r]*")
_BLANK = " \t\n\r"
_DECODER = json.JSONDecoder()
_CATEGORIES_KEY = re.compile(r'"categories"\s*:\s*\[')


@dataclass
class CocoRecord:
    """The columns of one COCO file.

    Attributes:
        categories: category id -> name, in file order.
        category_places: category id -> its index in ``categories`` (first occurrence).
        image_ids / widths / heights: one entry per image (NaN size when absent).
        file_names: the images' ``file_name`` ("" when absent or mistyped).
        ann_index / seg_index: place of each annotation (segment index for panoptic, else -1).
        ann_ids / image_of / category_of: per annotation; NO_ID when missing or mistyped,
            CAPTION for caption annotations.
        boxes: (n, 4) x, y, width, height; NaN rows for annotations without a valid bbox.
        rle_sizes: (annotation row, height, width) for RLE segmentations.
        panoptic_files: (annotation index, file_name) of panoptic PNGs.
        problems: wrong types, by kind.
        sections: top-level keys seen.
        captions: caption annotations seen.
        string_ids: string image id -> its code in the integer columns.
        small_polygons: polygons of fewer than 3 points (degenerate, not mistyped).
    """

    categories: dict[int, str] = field(default_factory=dict)
    category_places: dict[int, int] = field(default_factory=dict)
    image_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    widths: np.ndarray = field(default_factory=lambda: np.zeros(0))
    heights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    file_names: list[str] = field(default_factory=list)
    ann_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    seg_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ann_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    image_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    category_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    rle_sizes: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    panoptic_files: list[tuple[int, str]] = field(default_factory=list)
    problems: dict[str, Problem] = field(default_factory=dict)
    sections: set[str] = field(default_factory=set)
    captions: int = 0
    string_ids: dict[str, int] = field(default_factory=dict)
    small_polygons: Problem = field(default_factory=lambda: Problem("a polygon has fewer than 3 points"))

    def image_name(self, code: int) -> str:
        """An image id as written in the file."""
        if code <= STRING_IDS:
            for text, value in self.string_ids.items():
                if value == code:
                    return repr(text)
        return str(code)

    def place(self, row: int) -> str:
        """``annotations[i]`` or ``annotations[i].segments_info[j]`` for annotation row ``row``."""
        index, segment = int(self.ann_index[row]), int(self.seg_index[row])
        base = f"annotations[{index}]"
        if segment >= 0:
            base += f".segments_info[{segment}]"
        ann_id = int(self.ann_ids[row])
        return base + (f" (id {ann_id})" if ann_id != NO_ID else "")


# ---- the streaming JSON walker ------------------------------------------------------------

class _Stream:
    """A window over a text file from which JSON values are decoded one at a time."""

    def __init__(self, handle, chunk: int = CHUNK) -> None:
        self.handle = handle
        self.chunk = chunk
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # newlines in the text already dropped from the window

    def fill(self, want: int = 1) -> None:
        """Make at least ``want`` characters available after ``pos`` (unless the file ends)."""
        if self.pos >= self.chunk:
            self.lines_before += self.buf.count("\n", 0, self.pos)
            self.buf = self.buf[self.pos:]
            self.pos = 0
        while not self.eof and len(self.buf) - self.pos < want:
            try:
                data = self.handle.read(max(self.chunk, want))
            except UnicodeDecodeError as exc:
                raise ReadError(f"not UTF-8 text ({exc.reason} near byte {exc.start} of a block)") from None
            except OSError as exc:
                raise ReadError(f"cannot read: {exc.strerror or exc}") from None
            if data:
                self.buf += data
            else:
                self.eof = True

    def peek(self) -> str:
        """The next non-blank character ('' at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]  # [ \t\n\r]* always matches
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos] if self.pos < len(self.buf) else ""
            self.fill()

    def expect(self, allowed: str, where) -> str:
        buf, pos = self.buf, self.pos
        if pos < len(buf) and buf[pos] in allowed:  # the common case: no blank before it
            self.pos = pos + 1
            return buf[pos]
        char = self.peek()
        if not char or char not in allowed:
            shown = " or ".join(repr(c) for c in allowed)
            found = f"found {char!r}" if char else "the file ends"
            raise self.error(f"expected {shown} {_where(where)}, {found}")
        self.pos += 1
        return char

    def value(self, where):
        """Decode the JSON value at ``pos``, reading more of the file when it continues.

        ``where`` names the value in error messages: a text, or (section, index).
        """
        buf, pos = self.buf, self.pos
        if pos < len(buf) and buf[pos] not in _BLANK:  # the common case, in one C call
            try:
                value, end = _DECODER.raw_decode(buf, pos)
            except (ValueError, RecursionError):  # decoded again below, where the error is worded
                pass
            else:
                if end < len(buf) or type(value) in (dict, list, str):
                    self.pos = end
                    return value
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                incomplete = exc.pos >= len(self.buf) - SLACK or exc.msg.startswith("Unterminated string")
                if self.eof or not incomplete:
                    if self.eof and incomplete:
                        raise self.error(f"the file ends inside {_where(where)}: it is truncated",
                                         exc.pos) from None
                    raise self.error(f"malformed JSON in {_where(where)}: {exc.msg}", exc.pos) from None
                self.fill(len(self.buf) - self.pos + self.chunk)
                continue
            except RecursionError:
                raise self.error(f"{_where(where)} is nested too deeply to decode") from None
            except ValueError:  # an integer of more digits than Python converts
                limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
                raise self.error(f"{_where(where)} holds an integer of more than {limit} digits, which "
                                 "Python's json refuses (json.load fails on this file too)") from None
            # A number at the window's end may continue in the next chunk.
            if end >= len(self.buf) and not self.eof and isinstance(value, (int, float)):
                self.fill(len(self.buf) - self.pos + self.chunk)
                continue
            self.pos = end
            return value

    def error(self, message: str, pos: int | None = None) -> ReadError:
        pos = self.pos if pos is None else pos
        line = self.lines_before + self.buf.count("\n", 0, pos) + 1
        start = self.buf.rfind("\n", 0, pos)
        column = f", column {pos - start}" if start >= 0 or self.lines_before == 0 else ""
        return ReadError(f"{message} (line {line}{column})")


def _where(where) -> str:
    if isinstance(where, str):
        return where
    if where[0] == "after":
        return f"after {where[1]}[{where[2]}]"
    return f"{where[0]}[{where[1]}]"


def walk_sections(handle, on_element, on_value, chunk: int = CHUNK) -> None:
    """Walk a top-level JSON object; ``on_element(key, index, value)`` for each element of
    the ``STREAMED`` arrays, ``on_value(key, value)`` for every other top-level value."""
    stream = _Stream(handle, chunk)
    stream.fill()
    first = stream.peek()
    if not first:
        raise ReadError("empty file: no JSON at all")
    if first != "{":
        kind = {"[": "a list"}.get(first, "not an object")
        raise ReadError(f"the top level is {kind}, expected a COCO object "
                        "{\"images\": [...], \"annotations\": [...], \"categories\": [...]}")
    stream.pos += 1
    if stream.peek() == "}":
        stream.pos += 1
    else:
        while True:
            if stream.peek() != '"':
                raise stream.error("expected a key in double quotes in the top-level object")
            key = stream.value("a top-level key")
            stream.expect(":", f"after the key {key!r}")
            if key in STREAMED and stream.peek() == "[":
                stream.pos += 1
                index = 0
                if stream.peek() == "]":
                    stream.pos += 1
                else:
                    value, expect = stream.value, stream.expect
                    while True:
                        on_element(key, index, value((key, index)))
                        if expect(",]", ("after", key, index)) == "]":
                            break
                        index += 1
                on_value(key, None)
            else:
                on_value(key, stream.value(f"the value of {key!r}"))
            if stream.expect(",}", f"after the value of {key!r}") == "}":
                break
    if stream.peek():
        raise stream.error("unexpected data after the top-level object")


# ---- building the columns -------------------------------------------------------------------

def _type_name(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _shown(value, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) or math.isfinite(value) \
            else repr(value)
    except (RecursionError, ValueError):  # nested to the decoder's limit; an integer too long to print
        return f"({_type_name(value)} too deep or too long to show)"
    return clipped(text, limit)


def _is_number(value) -> TypeGuard[float]:
    kind = type(value)
    if kind is int:
        return -_FLOAT_INT < value < _FLOAT_INT
    return kind is float and value == value and value not in (math.inf, -math.inf)


# The integer columns are int64: an id past them (JSON allows 10**30) is no id training code
# can hold in a tensor. Numbers become float64 columns: an integer past a float's range is none.
_INT64 = 2 ** 63
_FLOAT_INT = 2 ** 1023


def _is_id(value) -> TypeGuard[int]:
    return type(value) is int and -_INT64 <= value < _INT64


class _Builder:
    """Receives the streamed elements and appends the columns (no per-element objects kept)."""

    def __init__(self) -> None:
        self.record = CocoRecord()
        self.image_ids = array("q")
        self.widths = array("d")
        self.heights = array("d")
        self.ann_index = array("q")
        self.seg_index = array("q")
        self.ann_ids = array("q")
        self.image_of = array("q")
        self.category_of = array("q")
        self.boxes = array("d")
        self.rle = array("q")
        self.section_types: dict[str, str] = {}

    def problem(self, what: str, place: str, detail: str, hint: str = "") -> None:
        entry = self.record.problems.get(what)
        if entry is None:
            entry = self.record.problems[what] = Problem(what, hint=hint)
        entry.add(place, detail)

    def image_key(self, value, place: str, key: str) -> int:
        """The integer column value of an image id; string ids (Mapillary-style panoptic
        files) get codes of their own, so they match only the same string."""
        if _is_id(value):
            return value
        if type(value) is int:
            self.problem(f"an image {key} is beyond the 64-bit integer range", place,
                         f"{place} has {key} {_shown(value)}")
            return NO_ID
        if type(value) is str:
            code = self.record.string_ids.get(value)
            if code is None:
                code = self.record.string_ids[value] = STRING_IDS - len(self.record.string_ids)
            return code
        self.problem(f"an image {key} is not an integer", place,
                     f"{place} has {key} {_shown(value)} ({_type_name(value)})")
        return NO_ID

    def element(self, key: str, index: int, value) -> None:
        if key == "annotations":
            self.annotation(index, value)
        elif key == "images":
            self.image(index, value)
        else:
            self.category(index, value)

    def value(self, key: str, value) -> None:
        self.record.sections.add(key)
        if value is not None and key in STREAMED:
            self.problem(f"'{key}' is not a list", key, f"'{key}' is {_type_name(value)}")

    def category(self, index: int, cat) -> None:
        place = f"categories[{index}]"
        if type(cat) is not dict:
            self.problem("a category is not an object", place, f"{place} is {_type_name(cat)}")
            return
        cat_id, name = cat.get("id"), cat.get("name")
        if type(cat_id) is not int:
            self.problem("a category id is not an integer", place,
                         f"{place} has id {_shown(cat_id)} ({_type_name(cat_id)})")
            return
        if not _is_id(cat_id):
            self.problem("a category id is beyond the 64-bit integer range", place,
                         f"{place} has id {_shown(cat_id)}")
            return
        if type(name) is not str:
            self.problem("a category name is not a string", place,
                         f"{place} (id {cat_id}) has name {_shown(name)} ({_type_name(name)})")
            name = str(name)
        record = self.record
        if cat_id in record.categories:
            first = record.category_places[cat_id]
            self.problem("a category id is repeated", place,
                         f"{place} repeats id {cat_id} of categories[{first}] "
                         f"({record.categories[cat_id]!r}, now {name!r})")
            return
        record.categories[cat_id] = name
        record.category_places[cat_id] = index

    def image(self, index: int, image) -> None:
        place = f"images[{index}]"
        if type(image) is not dict:
            self.problem("an image is not an object", place, f"{place} is {_type_name(image)}")
            return
        image_id = self.image_key(image.get("id"), place, "id")
        width, height = image.get("width"), image.get("height")
        if width is None and height is None:
            width = height = math.nan
        elif not (_is_number(width) and _is_number(height)):
            self.problem("an image size is not two numbers", place,
                         f"{place} has width {_shown(width)} and height {_shown(height)}")
            width = height = math.nan
        name = image.get("file_name")
        if type(name) is not str:
            if name is not None:
                self.problem("an image file_name is not a string", place,
                             f"{place} has file_name {_shown(name)} ({_type_name(name)})")
            name = ""
        self.image_ids.append(image_id)
        self.widths.append(width)
        self.heights.append(height)
        self.record.file_names.append(name)

    def annotation(self, index: int, ann) -> None:
        place = f"annotations[{index}]"
        if type(ann) is dict and type(ann.get("id")) is int:
            place = f"{place} (id {ann['id']})"
        if type(ann) is not dict:
            self.problem("an annotation is not an object", place, f"{place} is {_type_name(ann)}")
            return
        image_id = self.image_key(ann.get("image_id"), place, "image_id")
        segments = ann.get("segments_info")
        if segments is not None:  # panoptic: the segments are the objects
            name = ann.get("file_name")
            if type(name) is str:
                self.record.panoptic_files.append((index, name))
            if type(segments) is not list:
                self.problem("segments_info is not a list", place,
                             f"{place} has segments_info {_type_name(segments)}")
                return
            for number, segment in enumerate(segments):
                where = f"annotations[{index}].segments_info[{number}]"
                if type(segment) is dict and type(segment.get("id")) is int:
                    where = f"{where} (id {segment['id']})"
                if type(segment) is not dict:
                    self.problem("a segment is not an object", where, f"{where} is {_type_name(segment)}")
                    continue
                self.object(index, number, image_id, segment, where)
            return
        self.object(index, -1, image_id, ann, place)

    def object(self, index: int, segment: int, image_id: int, obj: dict, place: str) -> None:
        ann_id = obj.get("id")
        if type(ann_id) is int and not _is_id(ann_id):
            self.problem("an annotation id is beyond the 64-bit integer range", place,
                         f"{place} has id {_shown(ann_id)}")
        if not _is_id(ann_id):
            ann_id = NO_ID
        category: int | None
        if "caption" in obj and "bbox" not in obj:
            self.record.captions += 1
            category = CAPTION
        else:
            category = obj.get("category_id")
            if type(category) is not int:
                self.problem("a category_id is not an integer", place,
                             f"{place} has category_id {_shown(category)} ({_type_name(category)})")
                category = NO_ID
            elif not _is_id(category):
                self.problem("a category_id is beyond the 64-bit integer range", place,
                             f"{place} has category_id {_shown(category)}")
                category = NO_ID
        bbox = obj.get("bbox")
        if bbox is None or bbox == []:  # panoptic writers leave [] for "not computed"
            x = y = w = h = math.nan
        elif type(bbox) is list and len(bbox) == 4 and _numbers(bbox):
            x, y, w, h = bbox
        else:
            detail = plural(len(bbox), "value") if type(bbox) is list else _type_name(bbox)
            self.problem("a bbox is not 4 numbers [x, y, width, height]", place,
                         f"{place} has bbox {_shown(bbox)} ({detail})")
            x = y = w = h = math.nan
        row = len(self.ann_index)
        self.ann_index.append(index)
        self.seg_index.append(segment)
        self.ann_ids.append(ann_id)
        self.image_of.append(image_id)
        self.category_of.append(category)
        self.boxes.extend((x, y, w, h))
        crowd = obj.get("iscrowd", 0)
        if crowd not in (0, 1) or type(crowd) not in (int, bool):
            self.problem("iscrowd is not 0 or 1", place, f"{place} has iscrowd {_shown(crowd)}")
        segmentation = obj.get("segmentation")
        if segmentation is not None:
            self.segmentation(row, segmentation, place)
        keypoints = obj.get("keypoints")
        if keypoints is not None and not (
                type(keypoints) is list and len(keypoints) % 3 == 0 and _numbers(keypoints)):
            self.problem("keypoints are not a list of (x, y, visibility) numbers", place,
                         f"{place} has keypoints {_shown(keypoints)}")

    def segmentation(self, row: int, seg, place: str) -> None:
        if type(seg) is list:
            for number, polygon in enumerate(seg):
                if type(polygon) is not list or not _numbers(polygon):
                    self.problem("a segmentation polygon is not a list of numbers", place,
                                 f"{place} has segmentation[{number}] = {_shown(polygon)}")
                elif len(polygon) % 2:
                    self.problem("a segmentation polygon has an odd number of coordinates", place,
                                 f"{place} has segmentation[{number}] with {len(polygon)} coordinates",
                                 hint=ODD_POLYGON_HINT)
                elif len(polygon) < 6:
                    self.record.small_polygons.add(place, f"{place} has segmentation[{number}] with "
                                                          f"{plural(len(polygon) // 2, 'point')}")
            return
        if type(seg) is dict:
            size, counts = seg.get("size"), seg.get("counts")
            if not (type(size) is list and len(size) == 2 and all(_is_id(v) for v in size)):
                self.problem("an RLE segmentation size is not [height, width]", place,
                             f"{place} has segmentation size {_shown(size)}")
            elif not (type(counts) is str or (type(counts) is list and all(type(v) is int for v in counts))):
                self.problem("RLE counts are neither a string nor a list of integers", place,
                             f"{place} has segmentation counts {_shown(counts)}")
            else:
                self.rle.extend((row, size[0], size[1]))
            return
        self.problem("a segmentation is neither polygons nor RLE", place,
                     f"{place} has segmentation {_shown(seg)} ({_type_name(seg)})")

    def finish(self) -> CocoRecord:
        record = self.record
        record.image_ids = np.frombuffer(self.image_ids, dtype=np.int64) if self.image_ids else record.image_ids
        record.widths = np.frombuffer(self.widths, dtype=np.float64) if self.widths else record.widths
        record.heights = np.frombuffer(self.heights, dtype=np.float64) if self.heights else record.heights
        if self.ann_index:
            record.ann_index = np.frombuffer(self.ann_index, dtype=np.int64)
            record.seg_index = np.frombuffer(self.seg_index, dtype=np.int64)
            record.ann_ids = np.frombuffer(self.ann_ids, dtype=np.int64)
            record.image_of = np.frombuffer(self.image_of, dtype=np.int64)
            record.category_of = np.frombuffer(self.category_of, dtype=np.int64)
            record.boxes = np.frombuffer(self.boxes, dtype=np.float64).reshape(-1, 4)
        if self.rle:
            record.rle_sizes = np.frombuffer(self.rle, dtype=np.int64).reshape(-1, 3)
        return record


def _numbers(values: list) -> bool:
    """True when every element is a finite int/float (``sum`` runs the type test in C)."""
    try:
        return math.isfinite(sum(values))
    except (TypeError, OverflowError):  # OverflowError: an integer past a float's range
        return False


def read_coco(path: str, chunk: int = CHUNK) -> CocoRecord:
    """Stream ``path`` into a :class:`CocoRecord`; ReadError when it is not COCO JSON at all.

    ``chunk`` is the size of the reads (characters); tests make it tiny to cut every value.
    """
    builder = _Builder()
    handle = io.TextIOWrapper(open_regular(path, "JSON file"), encoding="utf-8-sig", newline="")
    with handle:
        walk_sections(handle, builder.element, builder.value, chunk)
    record = builder.finish()
    if "images" not in record.sections and "annotations" in record.sections:
        raise ReadError("has 'annotations' but no 'images' list: not a COCO file")
    return record


# ---- a cheap look at the categories, for discovery ------------------------------------------

_FILE_NAME_KEY = re.compile(r'"file_name"\s*:\s*"((?:[^"\\]|\\.){1,1024})"')


def peek_file_name(path: str, window: int = CHUNK) -> str | None:
    """The first image ``file_name`` in a COCO file's first ``window`` bytes (where the
    ``images`` list of every common writer starts), without reading the rest; None when there
    is none there."""
    try:
        head = read_head(path, window)
    except ReadError:
        return None
    match = _FILE_NAME_KEY.search(head.decode("utf-8", errors="replace"))
    if match is None:
        return None
    try:
        value = json.loads(f'"{match.group(1)}"')
    except ValueError:
        return None
    return value if isinstance(value, str) and value else None


def peek_categories(path: str, window: int = CHUNK) -> list[tuple[int, str]] | None:
    """The ``categories`` of a COCO file when they sit in its first or last ``window``
    characters (where every common writer puts them), without reading the rest; None
    when they are not found there or do not decode."""
    try:
        with open_regular(path, "JSON file") as handle:
            size = stream_size(handle)
            head = handle.read(window)
            tail = b""
            if size > window:
                handle.seek(max(window, size - window))
                tail = handle.read()
    except (ReadError, OSError):
        return None
    for block in (head, tail):
        text = block.decode("utf-8", errors="replace")
        for match in _CATEGORIES_KEY.finditer(text):
            try:
                value, _ = _DECODER.raw_decode(text, match.end() - 1)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, list):
                cats = [(c["id"], c["name"]) for c in value
                        if isinstance(c, dict) and _is_id(c.get("id")) and isinstance(c.get("name"), str)]
                if len(cats) == len(value):
                    return cats
    return None


def looks_like_coco(path: str) -> bool:
    """True when a JSON file's first kilobytes hold COCO's top-level keys."""
    try:
        head = read_head(path, 1 << 16)
    except ReadError:
        return False
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    keys = set(re.findall(rb'"(images|annotations|categories|info|licenses)"\s*:', head))
    return b"images" in keys or (b"annotations" in keys and b"categories" in keys)
