"""How the terminal reports (text, concise) look on a terminal: colour and wrapped lines.

Plain ANSI codes, not rich: this module loads with every audit, and rich's import would add
to the start-up of each (rich stays with the progress bar). Colour is added to a line after
the text from the data in it was escaped (:func:`labelguard.core.text.printable`), and only
around words the report itself chose (a code, a severity, a heading): an escape sequence in
the output never comes from the data.
"""

from __future__ import annotations

import os
import re
from typing import IO

_RESET = "\x1b[0m"
_SEVERITY = {"error": "31", "warning": "33", "info": "36"}
_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
COLOR_CHOICES = ("auto", "always", "never")
# The narrowest a wrapped report gets: on a narrower terminal lines wrap at this width anyway.
MIN_WIDTH = 60


class Style:
    """Paints the words a report chose; a Style that is not ``enabled`` returns them as they are."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}{_RESET}" if self.enabled and text else text

    def severity(self, text: str, level: str) -> str:
        """``text`` in the colour of severity ``level`` (error red, warning yellow, info cyan)."""
        return self._paint(text, _SEVERITY.get(level, "0"))

    def code(self, text: str) -> str:
        return self._paint(text, "1")

    def heading(self, text: str) -> str:
        return self._paint(text, "1")


def wants_color(choice: str, stream: IO[str] | None) -> bool:
    """Whether ``--color CHOICE`` colours a report written to ``stream``: ``always`` and
    ``never`` say so; ``auto`` colours a terminal, unless ``NO_COLOR`` holds any value
    (https://no-color.org) or ``TERM`` is ``dumb``."""
    if choice == "always":
        return True
    if choice == "never" or stream is None:
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a stream without a terminal behind it, or one closed
        return False


def visible_length(text: str) -> int:
    """The characters ``text`` takes on a terminal, its colour codes left out."""
    return len(_ESCAPE.sub("", text))


def _hanging_indent(line: str) -> int:
    """Where the continuation of ``line`` starts: under the text after a list dash, after a
    ``label:`` column (``result:    ...``, ``hint: ...``), else two spaces in."""
    plain = _ESCAPE.sub("", line)
    lead = len(plain) - len(plain.lstrip(" "))
    body = plain[lead:]
    if body.startswith(("- ", "... ")):
        return lead + body.index(" ") + 1
    label = re.match(r"[a-z][a-z ]{0,15}: +", body)
    if label:
        return lead + label.end()
    return lead + 2


def wrapped(line: str, width: int) -> list[str]:
    """``line`` broken at blanks into lines of at most ``width`` visible characters, each
    after the first indented under the text it continues. A word is never cut (a path stays
    whole, to be copied), so a word longer than the width keeps a line of its own; nor is a
    short span in brackets, backticks or quotes (``[0, 3)``, a command, a quoted name). A
    colour open at a line's end is closed there and opened again on the next line."""
    width = max(width, MIN_WIDTH)
    if visible_length(line) <= width:
        return [line]
    hang = " " * min(_hanging_indent(line), width // 2)
    lead = line[:len(line) - len(line.lstrip(" "))]
    if line.startswith("- ", len(lead)):
        lead += "- "  # a list dash stays with the first word of its item
    lines: list[str] = []
    current, length, words, colour = lead, len(lead), 0, ""
    for gap, token in _pieces(line[len(lead):], min(SPAN_LIMIT, width - len(hang))):
        size = visible_length(token)
        if words and length + len(gap) + size > width:
            lines.append(current + (_RESET if colour else ""))
            current, length, words = hang + colour + token, len(hang) + size, 1
        else:
            current, length, words = current + gap + token, length + len(gap) + size, words + 1
        for escape in _ESCAPE.findall(token):
            colour = "" if escape == _RESET else colour + escape
    lines.append(current)
    return lines


# The longest span in brackets, backticks or quotes kept on one line, in visible characters
# (an interval, a command in backticks, a quoted name): a longer one (a clause in parentheses)
# breaks like the text around it, and so does one longer than a continued line.
SPAN_LIMIT = 40
_OPENING, _CLOSING = "([{", ")]}"


def _pieces(text: str, limit: int) -> list[tuple[str, str]]:
    """``text`` as (the blanks before, a piece) pairs: the pieces are its words, but the blanks
    inside a span of at most ``limit`` visible characters (:func:`_short_spans`) stay in the
    piece that holds them."""
    visible: list[int] = []  # where each visible character of text is, its colour codes left out
    position = 0
    for escape in _ESCAPE.finditer(text):
        visible.extend(range(position, escape.start()))
        position = escape.end()
    visible.extend(range(position, len(text)))
    plain = "".join(text[index] for index in visible)
    kept: set[int] = set()
    for start, end in _short_spans(plain, limit):
        kept.update(visible[index] for index in range(start, end))
    pieces: list[tuple[str, str]] = []
    gap, begin = "", 0
    for blanks in re.finditer(r" +", text):
        if blanks.start() in kept:
            continue
        if blanks.start() > begin:
            pieces.append((gap, text[begin:blanks.start()]))
        gap, begin = blanks.group(), blanks.end()
    if begin < len(text):
        pieces.append((gap, text[begin:]))
    return pieces


def _short_spans(plain: str, limit: int) -> list[tuple[int, int]]:
    """(start, end) of each span of ``plain`` in brackets (any of ``([{`` closed by any of
    ``)]}``, so that the interval ``[0, 3)`` counts), backticks, or quotes that open and close
    a word (not the apostrophe in ``file's``) no longer than ``limit``."""
    spans: list[tuple[int, int]] = []
    closed: set[int] = set()  # a backtick or quote that closed a span opens none
    for start, char in enumerate(plain):
        stop = min(len(plain), start + limit)
        end = None
        if char in _OPENING:
            depth = 0
            for index in range(start, stop):
                depth += (plain[index] in _OPENING) - (plain[index] in _CLOSING)
                if depth == 0:
                    end = index
                    break
        elif char == "`" and start not in closed:
            found = plain.find("`", start + 1, stop)
            end = found if found > 0 else None
        elif (char in "'\"" and start not in closed and (start == 0 or not plain[start - 1].isalnum())
              and plain[start + 1:start + 2] not in ("", " ")):
            end = next((index for index in range(start + 1, stop) if plain[index] == char
                        and not plain[index + 1:index + 2].isalnum()), None)
        if end is not None:
            spans.append((start, end + 1))
            if plain[end] in "`'\"":
                closed.add(end)
    return spans


def terminal_width(stream: IO[str] | None) -> int | None:
    """The width a report written to ``stream`` wraps at: the terminal's (at least
    :data:`MIN_WIDTH`) when ``stream`` is one, else None (piped or written to a file, each line
    stays one line, for grep and diff)."""
    try:
        if stream is None or not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil

    return max(shutil.get_terminal_size().columns, MIN_WIDTH)
