"""How messages count and list things: plurals, shortened lists and names that show their blanks.

Every finding, reader problem and report line words these the same way::

    >>> plural(3, "file")
    '3 files'
    >>> shorten(["a", "b", "c", "d"], 2)
    'a, b and 2 more'
    >>> shorten([3, 4, 5], 2, what="value")
    '3, 4 and 1 more value'
    >>> show_name("dog "), show_name("dog")
    ("'dog '", 'dog')
    >>> printable("a\\x1b[2J.png"), printable("bad\\udcffname"), printable("gnp\\u202e.exe")
    ('a\\\\x1b[2J.png', 'bad\\\\xffname', 'gnp\\\\u202e.exe')
    >>> clipped("9" * 5000, 10)
    '9999999... (5,000 characters)'
    >>> spans([1, 2, 3, 5])
    '1..3, 5'
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterable, Mapping

# Items a message lists before it counts the rest.
SHOWN = 5
# Rows or items a report lists before it counts the rest.
LISTED = 20

_IRREGULAR = {"is": "are", "was": "were", "has": "have", "does": "do", "this": "these", "it": "they"}


def _plural_word(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def noun(n: int, word: str) -> str:
    """``word`` for a count of ``n``: the last word gets the plural ("class value" -> "class values")."""
    if n == 1:
        return word
    head, _, last = word.rpartition(" ")
    return f"{head} {_plural_word(last)}" if head else _plural_word(last)


def plural(n: int, word: str) -> str:
    """The count and the noun: ``plural(1, "file")`` -> "1 file", ``plural(2, "class")`` -> "2 classes",
    ``plural(3000, "file")`` -> "3,000 files" (thousands grouped, as every count of a report is)."""
    return f"{n:,} {noun(n, word)}"


def verb(n: int, singular: str) -> str:
    """A verb agreeing with ``n`` subjects: ``verb(2, "is")`` -> "are", ``verb(2, "occurs")`` -> "occur"."""
    if n == 1:
        return singular
    if singular in _IRREGULAR:
        return _IRREGULAR[singular]
    if singular.endswith("ies") and len(singular) > 4:
        return singular[:-3] + "y"  # applies -> apply; lies -> lie below
    if singular.endswith(("ches", "shes", "sses", "xes", "zes")):
        return singular[:-2]  # matches -> match
    return singular[:-1] if singular.endswith("s") else singular


def with_article(phrase: str) -> str:
    """``phrase`` after "a" or "an", as it is said: "an image", "an NPY file", "a NIfTI file",
    "a YAML file" (an acronym by its first letter's name); a phrase with its own article as
    it is."""
    word = phrase.split(" ", 1)[0]
    if word in ("a", "an", "the"):
        return phrase
    if word.isupper() and len(word) > 1:
        vowel_sound = word[0] in "AEFHILMNORSX"
    else:
        vowel_sound = word[:1].lower() in ("a", "e", "i", "o", "u")
    return f"{'an' if vowel_sound else 'a'} {phrase}"


def shorten(
    items: Iterable[Any],
    limit: int = SHOWN,
    fmt: Callable[[Any], str] = str,
    *,
    total: int | None = None,
    sep: str = ", ",
    what: str = "",
) -> str:
    """The first ``limit`` items and a count of the rest: "a, b, c and 7 more".

    Args:
        items: what to list (only the first ``limit`` are formatted).
        limit: how many to show.
        fmt: how to show one item (``repr`` quotes names so that blanks show).
        total: the full count when ``items`` holds only the first few (data capped upstream).
        sep: between items; any separator but ", " also comes before "and N more".
        what: what the rest are: ``what="value"`` gives "and 3 more values".
    """
    shown: list[str] = []
    count = 0
    for item in items:
        if count < limit:
            shown.append(fmt(item))
        count += 1
    rest = max(count if total is None else total, count) - len(shown)
    text = sep.join(shown)
    if rest <= 0:
        return text
    tail = f"and {rest:,} more" + (f" {noun(rest, what)}" if what else "")
    if not text:
        return tail
    return f"{text} {tail}" if sep == ", " else f"{text}{sep}{tail}"


def byte_size(count: int) -> str:
    """A byte count as people read it: "512 bytes", "3.2 MiB", "72.8 TiB"."""
    if count < 1024:
        return plural(count, "byte")
    for power, unit in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), 1):
        if count < 1024 ** (power + 1) or unit == "EiB":
            break
    if count < 1024 ** 7 * 1000:
        return f"{count / 1024 ** power:.1f} {unit}"
    # A declared shape can multiply to more than a float holds.
    return f"about 10^{len(str(count)) - 1} bytes"


def cut(text: str, width: int) -> str:
    """``text`` within ``width`` characters, ``...`` ending one that was longer: a table cell, a
    line quoted in one line of a report (:func:`clipped` also says how long a value was)."""
    return text if len(text) <= width else text[:max(width - 3, 1)] + "..."


def clipped(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: a value quoted from a file
    (a 100 MB line, a 5,000-digit number) must not become a 100 MB message."""
    if len(text) <= limit:
        return text
    return f"{text[:max(limit - 3, 1)]}... ({len(text):,} characters)"


# What text from the data may not print as it is: C0 and C1 controls and DEL (escape
# sequences, line breaks, XML 1.0's forbidden characters), lone surrogates (the bytes of a
# non-UTF-8 file name, as surrogateescape decodes them), bidi overrides, marks and isolates,
# line and paragraph separators, invisible format characters and spaces other than U+0020, and
# the noncharacters U+FFFE/U+FFFF that XML forbids. A fixed list, not str.isprintable(): the
# escaped form is part of a finding's identity (labelguard.baseline), so it must not change
# with the Unicode version of the Python that runs the audit.
UNSAFE_CHARACTERS = ("\x00-\x1f\x7f-\xa0\xad\u061c\u1680\u180e\u2000-\u200b\u200e\u200f\u2028-\u202f"
                     "\u205f-\u2064\u2066-\u206f\u3000\ud800-\udfff\ufeff\ufff9-\ufffb\ufffe\uffff")


@functools.cache
def _unsafe() -> re.Pattern:
    # Compiled when a text is not plain ASCII (some milliseconds, which most audits never pay).
    return re.compile(f"[{UNSAFE_CHARACTERS}]")


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a non-UTF-8 name: shown as the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` from the data as every report shows it: each character that could act on a
    terminal, a CI log, an XML parser or the reader's eye (:data:`UNSAFE_CHARACTERS`) written
    as an escape.

    ``\\t``, ``\\n``, ``\\r``; other controls below U+0080 as ``\\x1b``; a byte of a
    non-UTF-8 file name as ``\\xff``; anything else as ``\\u202e`` (so that ``\\xNN`` from 0x80
    up always means a byte). Plain text comes back unchanged; the same text always gives the
    same escape, and two texts that differ only in such characters never give the same one. A
    backslash is left as it is (Windows paths), so only a text already holding ``\\x1b``-like
    sequences can share its escape with another.
    """
    if text.isascii() and text.isprintable():
        return text
    return _unsafe().sub(_escape, text)


def printable_data(value: Any) -> Any:
    """``value`` (a report's JSON data: dicts, lists, strings, numbers) with every string in
    it, keys included, shown by :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(key) if isinstance(key, str) else key: printable_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_data(item) for item in value]
    return value


def show_name(name: str) -> str:
    """A class name as a table shows it: bare when plain, quoted when blanks at its ends,
    control characters, emptiness or a leading quote would otherwise hide what it is (those
    escaped by :func:`printable`). Inside the quotes a quote or backslash of the name is
    escaped too (``'a\\'b '``), so that one shown name is one name."""
    shown = printable(name)
    if name and shown == name and name == name.strip() and not name.startswith("'"):
        return name
    return "'" + printable(name.replace("\\", "\\\\").replace("'", "\\'")) + "'"


def spans(ids: list[int]) -> str:
    """Sorted ids as runs ("80..82, 84..90"), or a range less its gaps ("1..90 except 12, 26")
    when it has more than four runs."""
    runs: list[list[int]] = []
    for value in ids:
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    parts = [f"{a}..{b}" if b > a + 1 else (f"{a}, {b}" if b > a else str(a)) for a, b in runs]
    if len(runs) <= 4:
        return ", ".join(parts)
    # The gaps between the runs, counted from the runs (never by walking the span).
    gap_count = sum(after[0] - before[1] - 1 for before, after in zip(runs, runs[1:]))
    if gap_count <= 12:
        gaps = [v for before, after in zip(runs, runs[1:]) for v in range(before[1] + 1, after[0])]
        return f"{ids[0]}..{ids[-1]} except {', '.join(str(g) for g in gaps)}"
    return ", ".join(parts[:4]) + f", ... {ids[-1]}"


def did_you_mean(suggestions: Iterable[str]) -> str:
    """"; did you mean 'dog' or 'dogs'?" for the closest allowed names, "" when there are none."""
    names = [repr(name) for name in suggestions]
    return f"; did you mean {' or '.join(names)}?" if names else ""


def shown_color(key: str) -> str:
    """A colour map key "r,g,b" as every report writes a colour: "(9, 9, 9)"."""
    return "(" + ", ".join(part.strip() for part in key.split(",")) + ")"


def severity_counts_text(counts: Mapping[str, int]) -> str:
    """"7 errors, 1 warning, 0 info": a result's counts as every report and the demo say them."""
    return f"{plural(counts['error'], 'error')}, {plural(counts['warning'], 'warning')}, {counts['info']:,} info"
