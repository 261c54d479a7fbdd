"""The VOC editor of ``labelguard fix``: class names renamed in the ``<name>`` texts only, so
the file stays byte-identical outside them."""

from __future__ import annotations

import codecs
import re

from labelguard.errors import CannotFix
from labelguard.layouts.formats import Planner, describe, lookup
from labelguard.readers.base import ReadError

_NAME = re.compile(rb"(<name>)([^<]*)(</name>)")
# Elements whose <name> is not an object's class: an object's parts (head, hand), CVAT's
# attributes (<attribute><name>occluded</name>), actions. The reader skips them too.
_NOT_CLASSES = re.compile(rb"<(part|attributes|actions)>.*?</\1>", re.DOTALL)


def _encoding(data: bytes) -> str:
    """The encoding the file declares (UTF-8 when it declares none); CannotFix for one in
    which ``<name>`` is not written as those ASCII bytes (UTF-16) or that Python does not know."""
    from labelguard.readers.xml import ASCII_COMPATIBLE, ENCODING  # imports ElementTree: only when a fix runs

    end = data.find(b"?>", 0, 512) if data.startswith(b"<?xml") else -1
    match = ENCODING.search(data, 0, end) if end > 0 else None
    encoding = match.group(1).decode("ascii").lower() if match else "utf-8"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or encoding not in ASCII_COMPATIBLE:
        raise CannotFix(f"a VOC file in {encoding}: its <name> texts cannot be edited in place; rename by hand")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise CannotFix(f"the file declares the unknown encoding {encoding!r}") from None
    return encoding


def rename(mapping: dict[str, str]) -> Planner:
    """The planner that renames the classes of ``mapping`` in a VOC XML, in the encoding the
    file declares."""
    def plan(path: str, data: bytes):
        # Imported here: xml.sax.saxutils imports urllib.request, some 20 ms of every audit's start.
        from xml.sax.saxutils import escape, unescape

        if b"<annotation" not in data[:4096]:
            raise CannotFix("not a VOC annotation (no <annotation> element)")
        encoding = _encoding(data)
        counts: dict[str, int] = {}
        skipped = [m.span() for m in _NOT_CLASSES.finditer(data)]

        def swap(match: re.Match) -> bytes:
            if any(start <= match.start() < end for start, end in skipped):
                return match.group(0)
            # The reader takes the whole text as the name, so the whole text becomes the new name.
            try:
                key = lookup(mapping, unescape(match.group(2).decode(encoding)))
            except UnicodeDecodeError as exc:
                raise CannotFix(f"a <name> is not valid {encoding}: {exc.reason}") from None
            if key is None:
                return match.group(0)
            counts[key] = counts.get(key, 0) + 1
            try:
                return match.group(1) + escape(mapping[key]).encode(encoding) + match.group(3)
            except UnicodeEncodeError:
                raise CannotFix(f"the new name {mapping[key]!r} cannot be written in the file's {encoding}") from None

        new = _NAME.sub(swap, data)
        if not counts:
            return None, "no name of the map occurs", {}
        from labelguard.readers.xml import parse_xml

        try:  # the edit must never produce XML the reader refuses
            parse_xml(new)
        except ReadError as exc:
            raise CannotFix(f"the renamed XML would not parse: {exc}") from None
        return new, describe(counts, mapping), {"renamed": counts}

    return plan
