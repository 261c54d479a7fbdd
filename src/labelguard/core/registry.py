"""The check registry: every code labelguard can report, with its documentation.

A check is registered once, with its code, a name that describes the problem, a default
severity and its documentation (what it means, why it breaks training, a bad and a good
example, the fix). Checks build their findings through :meth:`Check.finding`, so severity
and code can never drift from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labelguard.core.findings import Finding, Severity


@dataclass(frozen=True)
class Check:
    """The documentation and defaults of one check code."""

    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    bad: str
    good: str
    fix: str
    scope: str = "file"  # file | dataset | runtime

    @property
    def family(self) -> str:
        return self.code[:3] + "xx"

    def finding(self, path: str | None, message: str, hint: str = "", **data: Any) -> Finding:
        return Finding(self.code, self.severity, path, message, hint or self.fix, data)


REGISTRY: dict[str, Check] = {}


def define(
    code: str,
    name: str,
    severity: str,
    *,
    summary: str,
    why: str,
    bad: str,
    good: str,
    fix: str,
    scope: str = "file",
) -> Check:
    """Register a check code; a code can be defined only once."""
    if code in REGISTRY:
        raise ValueError(f"check code {code} is defined twice")
    check = Check(
        code=code,
        name=name,
        severity=Severity.parse(severity),
        summary=summary,
        why=why.strip(),
        bad=bad.strip("\n"),
        good=good.strip("\n"),
        fix=fix.strip(),
        scope=scope,
    )
    REGISTRY[code] = check
    return check


def get(code: str) -> Check:
    """The registered check for ``code`` (case-insensitive); KeyError when unknown."""
    return REGISTRY[code.strip().upper()]
