"""What a log tells: kernel assertions, the error, the Python frames, versions.

The extractor is tolerant of how logs reach us: copied from a terminal, a notebook, a
Windows console (backslash paths, GBK or UTF-16 files), a distributed run (``[rank0]:``
prefixes), a Markdown page that ate the backticks, or a blog post with Chinese text on the
same line. It reports only what is in the text; :mod:`labelguard.explain._engine` decides what
is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from labelguard.explain._knowledge import ERA_HINTS

# Terminal escape sequences: CSI (colours, cursor moves), OSC (titles, links; ended by BEL
# or ST) and the two-byte ones; then any other control character but tab and newline.
# Nothing from the log may reach the user's terminal as a command.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x9b]")
_LINE_PREFIX = re.compile(r"^\s*(?:\[rank\d+\]:|\(\w+ pid=\d+\)|\[default\d+\]:)\s?")

# Paths are matched with ASCII characters only, so text glued to a path (Chinese words,
# a grep line number and colon) stays outside it.
_PATH_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~+-\\/")
_SOURCE_LINE = re.compile(r"(?P<file>[A-Za-z0-9_]+\.(?:cu|cuh|cpp|cc|c|h|hpp)):(?P<line>\d+)")
_ASSERTION = re.compile(r"Assertion\s{0,8}[`'\"]?(?P<condition>.{1,300}?)[`'\"]?\s{1,8}failed")
# Quantifiers are bounded where a search restarts at every occurrence of the prefix: an
# unbounded "[^\]]*" after "block: [" made "block: [" x 20,000 cost 2 * 10^8 steps.
_BLOCK_THREAD = re.compile(r"block:\s{0,8}\[(?P<block>[^\]\n]{0,64})\],?\s{0,8}"
                           r"thread:\s{0,8}\[(?P<thread>[^\]\n]{0,64})\]")

# An exception line: at the start of the line or after a logger's prefix ("ERROR ... ] ").
_ERROR = re.compile(
    r"(?:^|(?<=\s))(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\s*:\s*"
    r"(?P<message>.*\S)\s*$"
)

# The note labelguard.torch.guard adds to an error the dataset raised (Python 3.11's add_note).
_GUARD_NOTE = re.compile(r"^\s*labelguard\.torch\.guard:")

_FRAME_PLAIN = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+))?')
_FRAME_IPYTHON = re.compile(r"^\s*File (?P<path>\S.*?):(?P<line>\d+), in (?P<function>[^(\s]+)")
_FRAME_CELL = re.compile(r"^\s*(?P<path>Cell In\s*\[\d*\]), line (?P<line>\d+)")
_FRAME_IPYTHON_OLD = re.compile(
    r"^(?P<path>\S+\.py|<ipython-input-[\w-]+>) in (?P<function>[\w.<>]+)\("
)
_IPYTHON_ARROW = re.compile(r"^\s*-*>\s*(?P<line>\d+)\s?(?P<code>.*)$")
_CARET_LINE = re.compile(r"^[\s^~]+$")

_TORCH_VERSION = re.compile(
    r"\b(?:PyTorch|torch)(?:\s+version)?\s*(?:==|:|=|\s)\s*v?"
    r"(?P<version>\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\+[\w.]+)?)"
)
_PYTHON_VERSION = re.compile(
    r"python(?P<a>3\.\d+)[\\/](?:site|dist)-packages|\bPython (?P<b>3\.\d+\.\d+)"
)
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\")


@dataclass(frozen=True)
class Assertion:
    """One distinct kernel assertion site of the log, with how often it was printed.

    Attributes:
        condition: the condition as printed (``t >= 0 && t < n_classes``).
        path: the kernel's source path as printed, when printed.
        file: the source file name (``Loss.cu``).
        line: the line number in that file (it changes between torch releases).
        function: the kernel or functor name, when printed (Windows builds omit it).
        count: how many assertion lines named this site.
        blocks: how many distinct CUDA blocks printed it.
        first_block, first_thread: the first block/thread printed, as in the log.
    """

    condition: str
    path: str | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    count: int = 1
    blocks: int = 0
    first_block: str | None = None
    first_thread: str | None = None

    @property
    def location(self) -> str | None:
        if self.path is None:
            return None
        return f"{self.path}:{self.line}" if self.line is not None else self.path

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "path": self.path,
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "count": self.count,
            "blocks": self.blocks,
            "first_block": self.first_block,
            "first_thread": self.first_thread,
        }


@dataclass(frozen=True)
class Frame:
    """One Python traceback frame.

    Attributes:
        path, line, function: where the frame's code is, as printed.
        code: the frame's source line, when printed.
        at: the log line (1-based) the frame was printed on; evidence read from frames names
            it. Not in :meth:`to_dict`, which names a frame by its source location.
    """

    path: str
    line: int | None
    function: str | None = None
    code: str | None = None
    at: int | None = None

    @property
    def is_library(self) -> bool:
        """True for torch, installed packages, the standard library and interpreter frames."""
        path = self.path.replace("\\", "/").lower()
        return (
            "/site-packages/" in path
            or "/dist-packages/" in path
            or "/torch/" in path
            or path.startswith("<frozen")
            or re.search(r"/lib/python\d(?:\.\d+)?/", path) is not None
        )

    @property
    def is_torch(self) -> bool:
        return "/torch/" in self.path.replace("\\", "/")

    def describe(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        if self.function:
            where += f" in {self.function}"
        return f"{where}: {self.code}" if self.code else where

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "function": self.function, "code": self.code}


@dataclass(frozen=True)
class Facts:
    """What the log says.

    Attributes:
        assertions: the distinct kernel assertion sites, in order of appearance.
        assertion_lines: how many "Assertion ... failed" lines the log holds.
        error_type, error_message: the last exception line of the log.
        errors: every distinct exception line, in order (chained tracebacks give several).
        frames: every Python frame, in order.
        user_frame: the last frame outside torch, installed packages and the standard library.
        torch_call: the last torch frame after the user frame (the torch function called).
        torch_version, python_version: when the log prints them.
        windows: True when the log shows Windows paths.
        era: what the wording of the log says about the torch release (hints, not facts).
        values: numbers the matched messages carry (``target``, ``index``, ``size``...).
    """

    assertions: tuple[Assertion, ...] = ()
    assertion_lines: int = 0
    error_type: str | None = None
    error_message: str | None = None
    errors: tuple[str, ...] = ()
    frames: tuple[Frame, ...] = ()
    user_frame: Frame | None = None
    torch_call: Frame | None = None
    torch_version: str | None = None
    python_version: str | None = None
    windows: bool = False
    era: tuple[str, ...] = ()
    values: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "assertions": [a.to_dict() for a in self.assertions],
            "assertion_lines": self.assertion_lines,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "errors": list(self.errors),
            "user_frame": self.user_frame.to_dict() if self.user_frame else None,
            "torch_call": self.torch_call.to_dict() if self.torch_call else None,
            "frames": [f.to_dict() for f in self.frames],
            "torch_version": self.torch_version,
            "python_version": self.python_version,
            "windows": self.windows,
            "era": list(self.era),
            "values": dict(self.values),
        }


def decode(data: bytes) -> str:
    """Text of a log file: UTF-8, UTF-16 (PowerShell redirects) or GB18030 (Chinese Windows)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def normalise(text: str) -> str:
    """The log without colour codes, carriage returns and per-process prefixes, and with the
    records of Rich's logging handler on one line each (their line numbers kept)."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    if "\r" in text:
        # A lone carriage return is a progress bar redrawing its line: keep the last drawing.
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    text = _CONTROL.sub("", text)
    return "\n".join(_unwrap_rich([_LINE_PREFIX.sub("", _clip_line(line)) for line in text.split("\n")]))


# A record of Rich's logging handler (rich.logging.RichHandler, its default columns): the time
# (left blank when it repeats), the level, the message wrapped onto lines indented to its column,
# and the path of the call at the right of the first line.
_RICH_RECORD = re.compile(r"^(?:(?P<time>\[[^\]\n]{1,40}\])|[ \t]{1,40})[ \t]{0,40}"
                          r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ \t]{1,8}(?=\S)")
_RICH_PATH = re.compile(r"[\w.-]{1,120}:\d{1,6}")


def _unwrap_rich(lines: list[str]) -> list[str]:
    """Each Rich record's message joined onto its first line, without the path column; the lines
    it was wrapped onto are left empty, so that every other line keeps its number."""
    index = 0
    while index < len(lines):
        head = _RICH_RECORD.match(lines[index])
        message = lines[index].rstrip()
        index += 1
        if head is None:
            continue
        before, _, last = message.rpartition(" ")
        has_path = bool(before.strip()) and _RICH_PATH.fullmatch(last) is not None
        if has_path:
            message = before.rstrip()
        elif head.group("time") is None:
            continue  # an indented level word, and no path: not a record of Rich's
        column, first = head.end(), index - 1
        while index < len(lines):
            wrapped = lines[index]
            if len(wrapped) <= column or wrapped[:column].strip() or wrapped[column] in " \t":
                break
            message += " " + wrapped.strip()
            lines[index] = ""
            index += 1
        lines[first] = message
    return lines


# A log line longer than this is a dump (a printed tensor, a base64 blob), never an error
# message: its middle is cut, so that the work of every pattern stays bounded per line.
LONG_LINE = 20_000
_LINE_END = 2_000


def _clip_line(line: str) -> str:
    if len(line) <= LONG_LINE:
        return line
    return f"{line[:LONG_LINE - _LINE_END]} [... {len(line) - LONG_LINE:,} characters cut ...] {line[-_LINE_END:]}"


def digest(text: str) -> str:
    """The log without repeats, for signature matching.

    A kernel prints its assertion once per failing thread; thousands of lines that differ
    only in block/thread carry no more signature than the first of them.
    """
    kept: dict[str, str] = {}
    for line in text.split("\n"):
        kept.setdefault(_BLOCK_THREAD.sub("", line), line)
    return "\n".join(kept.values())


def extract(text: str) -> Facts:
    """The facts of an already :func:`normalise`-d log."""
    lines = text.split("\n")
    assertions, assertion_lines = _assertions(lines)
    errors = _errors(lines)
    frames = _frames(lines)
    user_index = _last_index(frames, lambda f: not f.is_library)
    user_frame = frames[user_index] if user_index is not None else None
    after_user = frames[user_index + 1:] if user_index is not None else frames
    torch_index = _last_index(after_user, lambda f: f.is_torch)
    torch_call = after_user[torch_index] if torch_index is not None else None
    error_type = error_message = None
    if errors:
        error_type, _, error_message = errors[-1].partition(": ")
    return Facts(
        assertions=assertions,
        assertion_lines=assertion_lines,
        error_type=error_type,
        error_message=error_message,
        errors=tuple(errors),
        frames=tuple(frames),
        user_frame=user_frame,
        torch_call=torch_call,
        torch_version=_first_group(_TORCH_VERSION, text, "version"),
        python_version=_python_version(text),
        windows=_WINDOWS_PATH.search(text) is not None,
        era=tuple(hint for pattern, hint in ERA_HINTS if re.search(pattern, text)),
    )


def _assertions(lines: list[str]) -> tuple[tuple[Assertion, ...], int]:
    sites: dict[tuple, dict[str, Any]] = {}
    total = 0
    for line in lines:
        if "ssertion" not in line or "failed" not in line:
            continue
        found = _ASSERTION.search(line)
        if found is None:
            continue
        total += 1
        condition = found.group("condition").strip()
        prefix, suffix = line[: found.start()], line[found.end():]
        location = _location(prefix, last=True)
        function = _function_name(prefix[location[3]:]) if location else None
        if location is None and re.match(r"\.?\s*at\s", suffix):
            location = _location(suffix, last=False)
        block_thread = _BLOCK_THREAD.search(prefix)
        path, file, line_no = location[:3] if location else (None, None, None)
        key = (path, file, line_no, function, condition)
        site = sites.setdefault(key, {"count": 0, "blocks": set(), "first": block_thread})
        site["count"] += 1
        if block_thread is not None:
            site["blocks"].add(block_thread.group("block").replace(" ", ""))
        if site["first"] is None:
            site["first"] = block_thread
    result = []
    for (path, file, line_no, function, condition), site in sites.items():
        first = site["first"]
        result.append(
            Assertion(
                condition=condition,
                path=path,
                file=file,
                line=line_no,
                function=function,
                count=site["count"],
                blocks=len(site["blocks"]),
                first_block=f"[{first.group('block').replace(' ', '')}]" if first else None,
                first_thread=f"[{first.group('thread').replace(' ', '')}]" if first else None,
            )
        )
    return tuple(result), total


def _location(text: str, *, last: bool) -> tuple[str, str, int, int] | None:
    """(path, file, line, end) of a ``path/File.cu:123`` in ``text``: the last or the first.

    The file and line are found by a regular expression; the path is then extended to the
    left over path characters, which keeps text glued to it (a grep line number and colon,
    Chinese words) outside and costs nothing on logs with thousands of such lines.
    """
    found = None
    for found in _SOURCE_LINE.finditer(text):  # noqa: B007  (the first match, or with ``last`` the last)
        if not last:
            break
    if found is None:
        return None
    start = found.start()
    while start > 0 and text[start - 1] in _PATH_CHARS:
        start -= 1
    # A Windows drive letter: "C:" right before the path, at the start of a word.
    if (start >= 2 and text[start - 1] == ":" and text[start - 2].isalpha()
            and (start == 2 or text[start - 3] not in _PATH_CHARS)):
        start -= 2
    path = text[start:found.start("line") - 1]
    return path, found.group("file"), int(found.group("line")), found.end()


def _function_name(between: str) -> str | None:
    """The kernel name printed between ``file:line:`` and ``block:``/``Assertion``."""
    text = between.split("block:")[0].strip().strip(":").strip()
    return text or None


def _errors(lines: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for line in lines:
        if _GUARD_NOTE.match(line):
            continue  # the note quotes the dataset's error, printed on the line above it
        found = _ERROR.search(line.strip())
        if found is None:
            continue
        seen[f"{found.group('type')}: {found.group('message')}"] = None
    return list(seen)


def _frames(lines: list[str]) -> list[Frame]:
    frames: list[Frame] = []
    for index, line in enumerate(lines):
        plain = _FRAME_PLAIN.search(line)
        if plain is not None:
            frames.append(
                Frame(
                    path=plain.group("path"),
                    line=int(plain.group("line")),
                    function=(plain.group("function") or "").strip() or None,
                    code=_code_after(lines, index),
                    at=index + 1,
                )
            )
            continue
        notebook = (
            _FRAME_IPYTHON.match(line) or _FRAME_CELL.match(line) or _FRAME_IPYTHON_OLD.match(line)
        )
        if notebook is not None:
            arrow_line, code = _arrow_after(lines, index)
            groups = notebook.groupdict()
            line_no = groups.get("line") or arrow_line
            frames.append(
                Frame(
                    path=groups["path"].strip(),
                    line=int(line_no) if line_no else None,
                    function=groups.get("function"),
                    code=code,
                    at=index + 1,
                )
            )
    return frames


def _code_after(lines: list[str], index: int) -> str | None:
    if index + 1 >= len(lines):
        return None
    code = lines[index + 1].strip()
    if not code or code.startswith("File ") or _CARET_LINE.match(code) or _ERROR.search(code):
        return None
    return code


def _arrow_after(lines: list[str], index: int) -> tuple[str | None, str | None]:
    for following in lines[index + 1: index + 12]:
        arrow = _IPYTHON_ARROW.match(following)
        if arrow is not None and "->" in following:
            return arrow.group("line"), arrow.group("code").strip() or None
    return None, None


def _last_index(items, predicate) -> int | None:
    for index in range(len(items) - 1, -1, -1):
        if predicate(items[index]):
            return index
    return None


def _first_group(pattern: re.Pattern, text: str, group: str) -> str | None:
    found = pattern.search(text)
    return found.group(group) if found else None


def _python_version(text: str) -> str | None:
    found = _PYTHON_VERSION.search(text)
    if found is None:
        return None
    return found.group("a") or found.group("b")
