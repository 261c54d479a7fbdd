"""XML parsed safely: the one policy for every XML document labelguard reads (a VOC
annotation, the OME-XML description of a TIFF).

A document that declares entities (billion laughs, quadratic blow-up) or refers to an external
entity is refused before anything is expanded. Entities can only be declared in a
``<!DOCTYPE>``, so a document without one, in an ASCII-compatible encoding, cannot hold any:
such documents go to expat directly, everything else through defusedxml, which refuses entity
declarations and external references. Nesting deeper than :data:`MAX_NESTING` is refused.
"""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element, ParseError, XML

import defusedxml
import defusedxml.ElementTree

from labelguard.readers.base import MAX_NESTING, ReadError

# Encodings in which "<!DOCTYPE" can only be written as those ASCII bytes.
ASCII_COMPATIBLE = frozenset({
    "utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1", "iso8859-1",
    "iso-8859-15", "windows-1252", "cp1252",
})
ENCODING = re.compile(rb"""encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def parse_xml(data: bytes, what: str = "VOC annotation") -> Element:
    """The root element of ``data``; ReadError for malformed or unsafe XML, or XML nested
    deeper than :data:`MAX_NESTING`. ``what`` names the kind of document in the messages (no
    such document nests so deep or needs entities)."""
    root = _parse_xml(data, what)
    if may_nest_deeper(data):
        deepest = 0
        pending = [(root, 1)]
        while pending:
            element, depth = pending.pop()
            deepest = max(deepest, depth)
            if deepest > MAX_NESTING:
                raise too_deep(what)
            pending.extend((child, depth + 1) for child in element)
    return root


def may_nest_deeper(data: bytes) -> bool:
    """False when ``data`` has too few start tags to nest deeper than :data:`MAX_NESTING`
    (every ``<`` that does not begin ``</`` counts, comments and declarations too)."""
    return data.count(b"<") - data.count(b"</") > MAX_NESTING


def too_deep(what: str = "VOC annotation") -> ReadError:
    return ReadError(f"the XML nests elements more than {MAX_NESTING} levels deep: refused, no {what} "
                     "nests so deep")


def _parse_xml(data: bytes, what: str) -> Element:
    if not data.strip():
        raise ReadError("empty file: no XML in it" if not data else "holds only whitespace, no XML")
    if _needs_defused(data):
        try:
            return defusedxml.ElementTree.fromstring(data)
        except defusedxml.EntitiesForbidden as exc:
            if exc.sysid or exc.pubid:
                raise ReadError(_external(exc.name, exc.sysid or exc.pubid)) from None
            raise ReadError(
                f"the XML declares the entity {exc.name!r}: refused, because entity expansion can "
                f"exhaust memory (billion laughs); {what}s never need entities") from None
        except defusedxml.ExternalReferenceForbidden as exc:
            raise ReadError(_external(None, exc.sysid or exc.pubid)) from None
        except defusedxml.DefusedXmlException as exc:
            raise ReadError(f"unsafe XML refused: {exc}") from None
        except (ParseError, ValueError, LookupError) as exc:  # LookupError: unknown encoding
            raise ReadError(f"malformed XML: {exc}") from None
    try:
        return XML(data)
    except (ParseError, ValueError, LookupError) as exc:
        raise ReadError(f"malformed XML: {exc}") from None


def _external(name: str | None, target: str | None) -> str:
    entity = f"entity {name!r}" if name else "entity"
    return (f"the XML refers to the external {entity} {target or '?'!r}: refused, because it would "
            "read another file or URL")


def _needs_defused(data: bytes) -> bool:
    if b"<!DOCTYPE" in data or b"\x00" in data[:4] or data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    if data.startswith(b"<?xml"):
        end = data.find(b"?>", 0, 512)
        match = ENCODING.search(data, 0, end if end > 0 else 512)
        if match and match.group(1).decode("ascii").lower() not in ASCII_COMPATIBLE:
            return True
    return False
