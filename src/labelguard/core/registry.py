"""The check registry: every code labelguard can report, with its documentation.

A check is registered once, with its code, a name that describes the problem, a default
severity and its documentation (what it means, why it breaks training, a bad and a good
example, the fix). Checks build their findings through :meth:`Check.finding`, so severity
and code can never drift from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from labelguard.core.findings import Finding, Severity


# How safe the fix of a code is, as ruff grades its fixes: what applying it can change.
FIX_SAFETY = {
    "safe": "keeps every label's meaning: only the form of the data changes (a list's whitespace, line "
            "endings, BOM, blank and duplicate lines); apply it without review",
    "unsafe": "changes label values, names or ids, or drops entries, by a mapping or a choice that is only right "
              "if it matches the annotation protocol: read the dry run, then apply (every write is journaled: "
              "`labelguard fix undo`)",
    "display-only": "the report shows what to change (the spec, the loss, the head), which no command writes",
    "none": "no automatic fix: the data must be re-exported or repaired at its source",
}


@dataclass(frozen=True)
class FixExample:
    """A case a code's fix is tested on, as sqlfluff's ``fix_str``: the files before, the fix
    (a function of :mod:`labelguard.fix` called on the folder with ``apply=True``), and the
    files the fix changes as they must be after it. The test writes ``before``, audits (the
    code is reported), applies the fix, compares ``after`` and audits again (it is not).

    Attributes:
        description: what the case shows, as ``labelguard rule`` prints it.
        before: relative path -> content, as :class:`labelguard.core.rules.Example` files.
        call: the name of the :mod:`labelguard.fix` function (``remap``, ``rename``...).
        arguments: its keyword arguments besides the paths (``lists`` for ``clean_list``:
            relative paths) and ``apply``.
        after: relative path -> the content the fix leaves there.
        spec: the label spec's fields the audits use.
        options: audit options (``lists``: relative paths of file lists to read).
    """

    description: str
    before: Callable[[], Mapping[str, Any]]
    call: str
    arguments: Mapping[str, Any]
    after: Callable[[], Mapping[str, Any]]
    spec: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)


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
    fix_safety: str = "none"  # a key of FIX_SAFETY
    fix_command: str = ""  # the `labelguard fix` command that repairs it, when one does
    fix_examples: tuple[FixExample, ...] = field(default=(), compare=False, repr=False)
    fix_example: str = ""  # what the fix examples show, one line each (what the catalog keeps of them)

    @property
    def family(self) -> str:
        return self.code[:3] + "xx"

    def finding(self, path: str | None, message: str, hint: str = "", **data: Any) -> Finding:
        return Finding(self.code, self.severity, path, message, hint or self.fix, data)

    @property
    def fix_cases(self) -> list[str]:
        return [line for line in self.fix_example.split("\n") if line]

    @property
    def fix_safety_text(self) -> str:
        """The fix's safety in words: ``unsafe (labelguard fix remap): changes label values...``."""
        command = f" ({self.fix_command})" if self.fix_command else ""
        return f"{self.fix_safety}{command}: {FIX_SAFETY[self.fix_safety]}"

    def help_text(self) -> str:
        """The code's documentation as plain text: why it breaks training, an example, the fix."""
        return (f"{self.summary}.\n\nWhy it breaks training: {' '.join(self.why.split())}\n\nBad: {self.bad}\n"
                f"Good: {self.good}\n\nFix: {self.fix}\nFix safety: {self.fix_safety_text}"
                + "".join(f"\n  fixed example: {line}" for line in self.fix_cases))

    def help_markdown(self) -> list[str]:
        """The code's documentation as Markdown lines (a section of docs/rules.md)."""
        return [f"**{self.name}** (default severity: {self.severity}, {self.scope}-level): {self.summary}.", "",
                "### Why it breaks training", "", self.why, "", "### Example", "", "Bad:", "", "```", self.bad,
                "```", "", "Good:", "", "```", self.good, "```", "", "### Fix", "", self.fix, "",
                f"Fix safety: {self.fix_safety_text}.", *self._fixed_examples_markdown()]

    def _fixed_examples_markdown(self) -> list[str]:
        if not self.fix_cases:
            return []
        return ["", "Fixed examples (each tested):", "", *(f"- {line}" for line in self.fix_cases)]


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
    fix_safety: str = "none",
    fix_command: str = "",
    fix_examples: tuple[FixExample, ...] = (),
) -> Check:
    """Register a check code; a code can be defined only once. ``fix_safety`` grades its
    automatic fix (:data:`FIX_SAFETY`), ``fix_command`` names it and ``fix_examples`` prove it."""
    if code in REGISTRY:
        raise ValueError(f"check code {code} is defined twice")  # not a user mistake
    if fix_safety not in FIX_SAFETY or (fix_safety in ("safe", "unsafe")) != bool(fix_command):
        raise ValueError(f"{code}: fix_safety {fix_safety!r} with fix_command {fix_command!r}")  # not a user mistake
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
        fix_safety=fix_safety,
        fix_command=fix_command,
        fix_examples=tuple(fix_examples),
        fix_example="\n".join(example.description for example in fix_examples),
    )
    REGISTRY[code] = check
    return check


def get(code: str) -> Check:
    """The registered check for ``code`` (case-insensitive); KeyError when unknown."""
    return REGISTRY[code.strip().upper()]


def rules_markdown(checks: Mapping[str, Check] | None = None) -> str:
    """The reference of every code of ``checks`` (default: the registry) as Markdown (what
    docs/rules.md holds)."""
    if checks is None:
        checks = REGISTRY
    lines = ["# labelguard checks", "",
             "Generated by `labelguard rules --markdown` from the check registry; do not edit by hand.", ""]
    lines.append("| code | name | severity | what it means |")
    lines.append("| --- | --- | --- | --- |")
    for code in sorted(checks):
        check = checks[code]
        lines.append(f"| [{code}](#{code.lower()}) | {check.name} | {check.severity} | {check.summary} |")
    for code in sorted(checks):
        check = checks[code]
        lines += ["", f"## {code}", "", *check.help_markdown()]
    return "\n".join(lines) + "\n"
