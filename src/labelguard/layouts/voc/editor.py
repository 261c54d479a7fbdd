"""The VOC editor of ``labelguard fix``: class names renamed in the ``<name>`` texts only, so
the file stays byte-identical outside them."""

from __future__ import annotations

import re

from labelguard.layouts.formats import CannotFix, Planner, describe, lookup

_NAME = re.compile(rb"(<name>)([^<]*)(</name>)")


def rename(mapping: dict[str, str]) -> Planner:
    """The planner that renames the classes of ``mapping`` in a VOC XML."""
    def plan(path: str, data: bytes):
        # Imported here: xml.sax.saxutils imports urllib.request, some 20 ms of every audit's start.
        from xml.sax.saxutils import escape, unescape

        if b"<annotation" not in data[:4096]:
            raise CannotFix("not a VOC annotation (no <annotation> element)")
        counts: dict[str, int] = {}

        def swap(match: re.Match) -> bytes:
            # The reader takes the whole text as the name, so the whole text becomes the new name.
            key = lookup(mapping, unescape(match.group(2).decode("utf-8")))
            if key is None:
                return match.group(0)
            counts[key] = counts.get(key, 0) + 1
            return match.group(1) + escape(mapping[key]).encode("utf-8") + match.group(3)

        new = _NAME.sub(swap, data)
        if not counts:
            return None, "no name of the map occurs", {}
        _check_xml(new)
        return new, describe(counts, mapping), {"renamed": counts}

    return plan


def _check_xml(data: bytes) -> None:
    import defusedxml.ElementTree as ET

    try:
        ET.fromstring(data)
    except Exception as exc:  # the edit must never produce unparsable XML
        raise CannotFix(f"the renamed XML would not parse: {exc}") from None
