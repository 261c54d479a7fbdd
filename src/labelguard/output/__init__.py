"""Output formatters: a registry, so new formats never touch the checks.

A formatter has a start / handle / stop life cycle over one report::

    formatter = get_formatter("json")(stream)
    formatter.start(report)
    for finding in report.findings:
        formatter.handle(finding)
    formatter.stop(report)

Options a format takes (``fail_on``, ``thumbnails``, ``color``, ``width``, ``quiet``) come as
keyword arguments; each format reads those it knows (:attr:`Formatter.options` lists them, so
the CLI can say when one was given for a format that does not use it).
"""

from __future__ import annotations

import importlib
from typing import IO, Any

from labelguard.errors import UsageError

# The report a formatter renders (labelguard.report.Report), not imported here: the report
# renders itself through these formatters (Report.write), and the registry stays below it.
Report = Any

FORMATTERS: dict[str, type["Formatter"]] = {}
# The built-in formats and the module of each, imported when its format is asked for: sarif's
# URL quoting and html's entities would add some 5 ms to the start-up of every audit.
BUILTIN_FORMATS = {"baseline": "baseline_format", "concise": "concise", "github": "github", "html": "html",
                   "json": "json_format", "junit": "junit", "sarif": "sarif", "text": "text"}
# What each built-in format is, as `labelguard formats` lists it.
FORMAT_DESCRIPTIONS = {
    "baseline": "every finding's identity, to accept today's findings (labelguard baseline write)",
    "concise": "one line per finding: path:line: CODE [severity] message",
    "github": "GitHub Actions annotations on each file and line",
    "html": "a page with charts and pictures of the flagged files (labelguard[html])",
    "json": "everything: every finding with its data, the value and class tables",
    "junit": "JUnit XML, a test case per code, for CI test views",
    "sarif": "SARIF 2.1.0, for code scanning",
    "text": "the readable report: summary, tables, findings grouped by code, next steps (the default)",
}


class Formatter:
    """Base class: writes one report to a text stream."""

    name = ""
    # The options this format reads; the others passed to it are not used.
    options: tuple[str, ...] = ()

    def __init__(self, stream: IO[str], **options: Any) -> None:
        self.stream = stream
        self.settings = options

    @classmethod
    def check_available(cls) -> None:
        """Raise MissingDependency when an extra this format draws with is not installed (the
        CLI asks before auditing, so that no run ends in a half-written report)."""

    def start(self, report: Report) -> None:
        pass

    def handle(self, finding) -> None:
        pass

    def stop(self, report: Report) -> None:
        pass


def register(cls: type[Formatter]) -> type[Formatter]:
    FORMATTERS[cls.name] = cls
    return cls


def format_names() -> list[str]:
    """Every format's name: the built-in ones and those registered from outside."""
    return sorted(set(BUILTIN_FORMATS) | set(FORMATTERS))


def get_formatter(name: str) -> type[Formatter]:
    if name not in FORMATTERS and name in BUILTIN_FORMATS:
        importlib.import_module(f"labelguard.output.{BUILTIN_FORMATS[name]}")
    try:
        return FORMATTERS[name]
    except KeyError:
        raise UsageError(f"unknown output format {name!r}; known: {', '.join(format_names())}") from None


def write_report(report: Report, name: str, stream: IO[str], **options: Any) -> None:
    """Render ``report`` in format ``name`` to ``stream`` (``options``: see the module docstring)."""
    formatter = get_formatter(name)(stream, **options)
    formatter.start(report)
    for finding in report.findings:
        formatter.handle(finding)
    formatter.stop(report)


__all__ = ["BUILTIN_FORMATS", "FORMATTERS", "FORMAT_DESCRIPTIONS", "Formatter", "format_names", "get_formatter",
           "register", "write_report"]
