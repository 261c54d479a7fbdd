"""Output formatters: a registry, so new formats never touch the checks.

A formatter has a start / handle / stop life cycle over one report::

    formatter = get_formatter("json")(stream)
    formatter.start(report)
    for finding in report.findings:
        formatter.handle(finding)
    formatter.stop(report)
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from labelguard.errors import UsageError

if TYPE_CHECKING:  # `labelguard formats` lists the formats without numpy, which the report imports
    from labelguard.report import Report

FORMATTERS: dict[str, type["Formatter"]] = {}


class Formatter:
    """Base class: writes one report to a text stream."""

    name = ""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def start(self, report: Report) -> None:
        pass

    def handle(self, finding) -> None:
        pass

    def stop(self, report: Report) -> None:
        pass


def register(cls: type[Formatter]) -> type[Formatter]:
    FORMATTERS[cls.name] = cls
    return cls


def get_formatter(name: str) -> type[Formatter]:
    try:
        return FORMATTERS[name]
    except KeyError:
        raise UsageError(f"unknown output format {name!r}; known: {', '.join(sorted(FORMATTERS))}") from None


def write_report(report: Report, name: str, stream: IO[str]) -> None:
    """Render ``report`` in format ``name`` to ``stream``."""
    formatter = get_formatter(name)(stream)
    formatter.start(report)
    for finding in report.findings:
        formatter.handle(finding)
    formatter.stop(report)


from labelguard.output import json_format, text  # noqa: E402,F401  (register the built-in formats)

__all__ = ["FORMATTERS", "Formatter", "get_formatter", "register", "write_report"]
