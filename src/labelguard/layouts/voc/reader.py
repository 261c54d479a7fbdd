"""Pascal VOC XML annotations, parsed safely into plain records.

Safety: the XML goes through :mod:`labelguard.readers.xml` (entities and external references
refused before anything is expanded, nesting bounded); a plain document is checked by expat
itself, with the same limits.

Speed: VOC files as annotation tools write them are *plain* (see :func:`_read_plain`) and
are read with byte searches after expat has checked that they are well-formed, which costs
half of building an ElementTree; any other document is read through ElementTree, and both
readers give equal records (the tests compare them on generated documents).

Only the ``<object>`` children of ``<annotation>`` are objects: the ``<part>`` elements of
an object (head, hand, foot), its ``<actions>`` and ``<attributes>`` are not object classes.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from xml.parsers.expat import ExpatError, ParserCreate

import numpy as np

from labelguard.core.text import clipped
from labelguard.readers.base import MAX_NESTING, ReadError, read_bytes
from labelguard.readers.xml import ENCODING, may_nest_deeper, parse_xml, too_deep

BOX_FIELDS = ("xmin", "ymin", "xmax", "ymax")
Box = tuple[float, float, float, float]


class VocAnnotation(NamedTuple):
    """One annotation file; object ``i`` (1-based) is ``names[i - 1]``, ``boxes[i - 1]``.

    Attributes:
        filename: the ``<filename>`` text, or None.
        width / height: the ``<size>``, 0 when absent or not numeric.
        names: each ``<object>``'s ``<name>``, None when absent or empty.
        boxes: each ``<object>``'s ``<bndbox>``, None when absent or not four numbers.
        problems: (object index, what is wrong), index 0 for the file as a whole.
    """

    filename: str | None
    width: float
    height: float
    names: list[str | None]
    boxes: list[Box | None]
    problems: list[tuple[int, str]]


def read_voc(data: bytes) -> VocAnnotation:
    """Parse one VOC annotation; ReadError when the file as a whole is unusable."""
    plain = _read_plain(data)
    return plain if plain is not None else read_voc_tree(data)


def read_voc_tree(data: bytes) -> VocAnnotation:
    """:func:`read_voc` through ElementTree only: the reference the plain reader must equal."""
    root = parse_xml(data)
    if root.tag != "annotation":
        raise ReadError(f"the root element is <{root.tag}>, not <annotation>: not a Pascal VOC annotation")
    size = root.find("size")
    size_texts = (size.findtext("width"), size.findtext("height")) if size is not None else None
    names = []
    coordinates = []
    for element in root.iterfind("object"):
        names.append(element.findtext("name"))
        box = element.find("bndbox")
        coordinates.append(None if box is None else tuple(box.findtext(f) for f in BOX_FIELDS))
    return _annotation(root.findtext("filename"), size_texts, names, coordinates)


def _annotation(filename: str | None, size_texts, names: list, coordinates: list) -> VocAnnotation:
    """The record from the texts both readers extract (str, or UTF-8 bytes for numbers;
    None for an absent element)."""
    problems: list[tuple[int, str]] = []
    width = height = 0.0
    if size_texts is not None:
        try:
            width = float(size_texts[0] or 0)
            height = float(size_texts[1] or 0)
        except ValueError:
            problems.append((0, f"<size> is not numeric: width {_text(size_texts[0])!r}, "
                                f"height {_text(size_texts[1])!r}"))
            width = height = 0.0
    boxes: list[Box | None] = []
    for index, texts in enumerate(coordinates, 1):
        if texts is None:
            boxes.append(None)
            problems.append((index, f"{_named(names[index - 1])}has no <bndbox>"))
            continue
        try:
            boxes.append((float(texts[0]), float(texts[1]), float(texts[2]), float(texts[3])))
        except (TypeError, ValueError):
            boxes.append(None)
            shown = ", ".join(f"{f} {_text(t)!r}" for f, t in zip(BOX_FIELDS, texts))
            problems.append((index, f"{_named(names[index - 1])}has a <bndbox> that is not four "
                                    f"numbers: {shown}"))
    for index, name in enumerate(names, 1):
        if name is None:
            problems.append((index, "has no <name>"))
        elif not name.strip():
            names[index - 1] = None
            problems.append((index, "has an empty <name>"))
    if problems:
        problems.sort()
    return VocAnnotation(filename, width, height, names, boxes, problems)


def _text(value: str | bytes | None) -> str | None:
    """An element's text as a message quotes it: decoded, and clipped (a text can be megabytes)."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return clipped(text) if text is not None else None


def _named(name: str | None) -> str:
    return f"({name!r}) " if name and name.strip() else ""


# ---- the plain reader -------------------------------------------------------------------

_PLAIN_ENCODINGS = frozenset({b"utf-8", b"utf8", b"us-ascii", b"ascii"})
# An object as annotation tools write it: <name> first, leaf elements (pose, truncated,
# difficult...), the <bndbox> coordinates in VOC order, then anything (<part>, <actions>,
# <attributes>) up to its end tag. Text between elements is skipped as ElementTree skips
# it; tags need no back-references, expat has checked that end tags match start tags.
_OBJECT = re.compile(
    rb"<object>[^<]*<name>([^<]*)</name>(?:[^<]*<\w+>[^<]*</\w+>)*"
    rb"[^<]*<bndbox>[^<]*<xmin>([^<]*)</xmin>[^<]*<ymin>([^<]*)</ymin>[^<]*<xmax>([^<]*)</xmax>"
    rb"[^<]*<ymax>([^<]*)</ymax>[^<]*</bndbox>[^<]*(?:<(?!/object>)[^<]*)*</object>")
_FILENAME = re.compile(rb"<filename>([^<]*)</filename>")
_PREFIXED_TAG = re.compile(rb"<[^>:]*:")
_SIZE = re.compile(rb"<size>\s*<width>([^<]*)</width>\s*<height>([^<]*)</height>")


def _read_plain(data: bytes) -> VocAnnotation | None:
    """The annotation of a *plain* document, read without building a tree; None otherwise.

    Plain: UTF-8 or ASCII, an ``<annotation>`` root, no DOCTYPE, comment, CDATA, processing
    instruction, entity or character reference, attribute or namespace prefix, and objects,
    ``<size>`` and ``<filename>`` in the shapes of :data:`_OBJECT`, :data:`_SIZE` and
    :data:`_FILENAME`: what LabelImg, CVAT, Datumaro and the VOC devkit write. In such a
    document text holds no ``<``, and ``count("<") - 2 * count("</")`` over a stretch is the
    number of elements it leaves open, plus one for each self-closing tag in it: so a
    stretch that counts 0 leaves none open, which tells the root's own children from nested
    elements with byte counts alone (anything else counts more, and falls back). expat
    still checks the whole document; without namespace processing it accepts and rejects
    exactly what ElementTree does on documents with no prefixes and no attributes.
    """
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    if data.startswith(b"<?xml", start):
        end = data.find(b"?>", start)
        if end < 0:
            return None
        match = ENCODING.search(data, start, end)
        if match and match.group(1).lower() not in _PLAIN_ENCODINGS:
            return None
        start = end + 2
    if (b"&" in data or data.find(b"=", start) >= 0
            or (data.find(b"!", start) >= 0 and data.find(b"<!", start) >= 0)
            or (data.find(b"?", start) >= 0 and data.find(b"<?", start) >= 0)):
        return None
    if data.find(b":", start) >= 0 and _PREFIXED_TAG.search(data, start):
        return None
    root = data.find(b"<annotation>", start)
    if root < 0 or data[start:root].strip():
        return None
    parser = ParserCreate()
    try:
        parser.Parse(data, True)
    except ExpatError as exc:
        raise ReadError(f"malformed XML: {exc}") from None
    if may_nest_deeper(data) and _plain_depth(data, start) > MAX_NESTING:
        raise too_deep()
    return _plain_annotation(data, root + 12)


def _plain_depth(data: bytes, start: int) -> int:
    """How deep the elements of a well-formed plain document nest, from its tags alone: in a
    plain document a tag runs from ``<`` to the next ``>`` (no attribute can hold one), an
    end tag starts ``</`` and an empty element ends ``/>``."""
    raw = np.frombuffer(data, dtype=np.uint8)
    opens = np.flatnonzero(raw[start:] == ord("<")) + start
    closes = np.flatnonzero(raw == ord(">"))
    tag_ends = closes[np.searchsorted(closes, opens)]
    steps = np.where(raw[opens + 1] == ord("/"), -1, np.where(raw[tag_ends - 1] == ord("/"), 0, 1))
    return int(np.cumsum(steps).max(initial=0))


def _plain_annotation(data: bytes, lo: int) -> VocAnnotation | None:
    """Read the root's children (``lo``: where the root's content starts); None when the
    document is not plain after all."""
    size_texts = None
    i = data.find(b"<size", lo)
    if i >= 0:
        # The document's first <size> is the root's first <size> when nothing before it is open.
        size = _SIZE.match(data, i)
        if size is None or data.count(b"<", lo, i) != 2 * data.count(b"</", lo, i):
            return None
        size_texts = size.group(1, 2)
    filename = None
    i = data.find(b"<filename", lo)
    if i >= 0:
        found = _FILENAME.match(data, i)
        if found is None or data.count(b"<", lo, i) != 2 * data.count(b"</", lo, i):
            return None
        filename = _decoded(found.group(1))
    names: list[str | None] = []
    boxes: list[Box | None] = []
    before = lo  # a position where nothing below the root is open
    crlf = b"\r" in data
    try:
        for match in _OBJECT.finditer(data, lo):
            start = match.start()
            if not data[before:start].isspace() and \
                    data.count(b"<", before, start) != 2 * data.count(b"</", before, start):
                return None  # an <object> nested in another element
            name, xmin, ymin, xmax, ymax = match.groups()
            names.append(_decoded(name) if crlf else name.decode("utf-8"))
            boxes.append((float(xmin), float(ymin), float(xmax), float(ymax)))
            before = match.end()
    except ValueError:  # a coordinate that is not a number: the general path words it
        return None
    if len(names) != data.count(b"<object"):
        return None  # an object in another shape
    try:
        width = float(size_texts[0] or 0) if size_texts else 0.0
        height = float(size_texts[1] or 0) if size_texts else 0.0
    except ValueError:
        return None
    for name in names:
        if not name.strip():  # type: ignore[union-attr]
            return None  # an empty <name>: the general path words it
    return VocAnnotation(filename, width, height, names, boxes, [])


def _decoded(text: bytes) -> str:
    if b"\r" in text:  # XML parsers normalise line ends in text
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return text.decode("utf-8")


# ---- files ------------------------------------------------------------------------------

def read_voc_file(path: str) -> VocAnnotation:
    """:func:`read_voc` of the file at ``path``; ReadError with the OS reason when unreadable."""
    return read_voc(read_bytes(path, "annotation file"))
