"""Writes a benchmark's figures into its own section of docs/performance.md.

Every script whose figures the documentation quotes takes ``--write-docs``: it then replaces
the block between ``<!-- bench:NAME begin -->`` and ``<!-- bench:NAME end -->`` (and nothing
else) with the command line as run, the date, the machine, a table of what it measured with
the ratios against the baseline of the same run, and the output it printed. The block ends
with the SHA-256 of its body, so that ``tests/test_benchmarks.py`` fails on a figure edited
by hand: a figure changes only by running its script again.

Usage in a script::

    report = _docs.Report("bench_spec", parser)   # adds --write-docs, starts the capture
    args = parser.parse_args()
    report.start(args)
    ...
    report.row("audit, num_classes 10", f"{seconds * 1e3:.1f} ms", f"{ratio:.2f}x")
    report.finish()                                # writes only with --write-docs
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import os
import platform
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from labelguard.fix._journal import atomic_write

DOCS = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
STAMP = re.compile(r"^<!-- sha256 ([0-9a-f]{64}) -->$")


def begin_marker(name: str) -> str:
    return f"<!-- bench:{name} begin -->"


def end_marker(name: str) -> str:
    return f"<!-- bench:{name} end -->"


def stamp(body: str) -> str:
    return f"<!-- sha256 {hashlib.sha256(body.encode()).hexdigest()} -->"


@dataclass
class Section:
    """One machine-written block as found in the file: its name, body and the stamp it ends with."""

    name: str
    body: str
    recorded: str | None

    @property
    def intact(self) -> bool:
        return self.recorded == hashlib.sha256(self.body.encode()).hexdigest()


def sections(text: str) -> list[Section]:
    """The machine-written blocks of a document, in order."""
    found = []
    for match in re.finditer(r"^<!-- bench:([\w-]+) begin -->\n(.*?)^<!-- bench:\1 end -->$", text, re.M | re.S):
        lines = match.group(2).splitlines(keepends=True)
        recorded = STAMP.match(lines[-1].rstrip("\n")) if lines else None
        body = "".join(lines[:-1]) if recorded else match.group(2)
        found.append(Section(match.group(1), body, recorded.group(1) if recorded else None))
    return found


def replace_section(path: Path, name: str, body: str) -> None:
    """Put ``body`` (stamped) between the markers of ``name`` in ``path``, atomically.

    The rest of the file is kept byte for byte; a section not yet in the file is appended.
    """
    if not body.endswith("\n"):
        body += "\n"
    block = f"{begin_marker(name)}\n{body}{stamp(body)}\n{end_marker(name)}"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(rf"^{re.escape(begin_marker(name))}\n.*?^{re.escape(end_marker(name))}$", re.M | re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = f"{text.rstrip()}\n\n{block}\n" if text.strip() else f"{block}\n"
    # A reader (mkdocs, the test, another script) sees the old file or the new one, never half;
    # the page keeps its permissions (the one atomic write of the project).
    atomic_write(str(path), text.encode("utf-8"))


class _Tee(io.TextIOBase):
    """What the script prints goes to the terminal and into the section."""

    def __init__(self, terminal: TextIO) -> None:
        self.terminal = terminal
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.terminal.write(text)

    def flush(self) -> None:
        self.terminal.flush()


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _without_machine_paths(text: str) -> str:
    """The printed output names temporary folders and the checkout; the docs name neither."""
    for folder, name in ((tempfile.gettempdir(), "$TMPDIR"), (str(Path(__file__).resolve().parents[1]), "."),
                         (str(Path.home()), "~")):
        text = re.sub(rf"{re.escape(folder)}(/[^\s:,;)'\"]*)?", lambda m, n=name: n + (m.group(1) or ""), text)
    return re.sub(r"\$TMPDIR/[^\s:,;)'\"]+", "$TMPDIR/...", text)


@dataclass
class Report:
    """The figures of one run of one script, written to its section when asked."""

    name: str
    parser: argparse.ArgumentParser
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    target: Path | None = None
    _tee: _Tee | None = None
    _load_before: str = ""
    _started: datetime.datetime | None = None

    def __post_init__(self) -> None:
        self.parser.add_argument(
            "--write-docs", nargs="?", const=str(DOCS), default=None, metavar="PATH",
            help="write this run's figures into the script's section of docs/performance.md (or PATH)")

    def start(self, args: argparse.Namespace) -> None:
        """Note the load and start keeping what is printed (only with --write-docs)."""
        if args.write_docs is None:
            return
        self.target = Path(args.write_docs)
        self._load_before = _load()
        self._started = datetime.datetime.now(datetime.timezone.utc)
        self._tee = _Tee(sys.stdout)
        sys.stdout = self._tee

    def row(self, what: str, measured: str, ratio: str = "") -> None:
        """One line of the section's table: what was measured, the figure, its ratio to the baseline."""
        self.rows.append((what, measured, ratio))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def body(self, command: list[str], printed: str) -> str:
        started = self._started or datetime.datetime.now(datetime.timezone.utc)
        lines = [
            f"`{shlex.join(command)}`, run on {started:%Y-%m-%d} ({started:%H:%M} UTC).",
            "",
            f"Machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}; load average (1, 5, 15 min) {self._load_before} before, "
            f"{_load()} after.",
            "",
        ]
        if self.rows:
            lines += ["| measured | figure | ratio |", "| --- | ---: | ---: |"]
            lines += [f"| {what} | {measured} | {ratio} |" for what, measured, ratio in self.rows]
            lines.append("")
        lines += [*self.notes, ""] if self.notes else []
        if printed.strip():
            lines += ["What the script printed:", "", "```text", _without_machine_paths(printed.rstrip()), "```"]
        return "\n".join(lines) + "\n"

    def finish(self) -> None:
        """Write the section (with --write-docs) and stop the capture."""
        if self._tee is None or self.target is None:
            return
        sys.stdout = self._tee.terminal
        command = ["python", f"benchmarks/{self.name}.py", *map(_without_machine_paths, sys.argv[1:])]
        replace_section(self.target, self.name, self.body(command, self._tee.kept.getvalue()))
        print(f"wrote the {self.name} section of {self.target}")
