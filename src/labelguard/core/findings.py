"""Findings: small immutable records of one problem in one place."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from labelguard.errors import UsageError


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that ``ERROR > WARNING > INFO``."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str | "Severity") -> "Severity":
        if isinstance(text, Severity):
            return text
        try:
            return cls[str(text).strip().upper()]
        except KeyError:
            raise UsageError(
                f"unknown severity {text!r}: expected one of error, warning, info"
            ) from None

    def __str__(self) -> str:
        return self.name.lower()


# The key of a finding's data holding its message's last sentence when that sentence says what
# the fault does in training, the same for every file (LG201's "On a GPU this is the
# device-side assert..."): a report of many findings of a code says it once, not once per file.
CONSEQUENCE = "consequence"


@dataclass(frozen=True)
class Finding:
    """One problem found in one place.

    Attributes:
        code: the stable check code, e.g. ``"LG201"``.
        severity: how bad it is (the check's default unless config changed it).
        path: the file the problem is in, or None for a finding about a dataset as a whole.
        message: the facts, with the real values.
        hint: what to do about it.
        data: machine-readable details (values, counts, row numbers, suggested remaps).
        dataset: the root of the dataset the finding belongs to, shown as paths are (the audit
            sets it: a rule or reader never knows which dataset it serves); None outside an
            audit (the runtime guard's findings).
    """

    code: str
    severity: Severity
    path: str | None
    message: str
    hint: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    dataset: str | None = None

    def sort_key(self) -> tuple:
        """By dataset, file, code, then message with its numbers compared as numbers ("line 9"
        before "line 10"): a dataset's own findings come together, its dataset-level ones first."""
        return (self.dataset or "", self.path or "", self.code, _natural(self.message))

    def with_severity(self, severity: Severity) -> "Finding":
        return replace(self, severity=severity)

    def in_dataset(self, dataset: str) -> "Finding":
        """This finding as one of the dataset at ``dataset`` (its root, as paths are shown)."""
        return replace(self, dataset=dataset)

    def with_hint(self) -> str:
        """The message and its hint in one line of text (a log record, SARIF's one text)."""
        return with_hint(self.message, self.hint)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": str(self.severity),
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
            "data": dict(self.data),
            "dataset": self.dataset,
        }


def with_hint(message: str, hint: str | None) -> str:
    """``message``, then "Hint: ``hint``" as a sentence of its own: a full stop comes between
    them unless the message ends with one ("... weight_decay=0. Hint: Lower ...")."""
    if not hint:
        return message
    return f"{message}{'' if message.endswith(('.', '!', '?')) else '.'} Hint: {hint}"


_DIGITS = re.compile(r"(\d+)")


def _natural(text: str) -> tuple:
    """``text`` as a key that orders its runs of digits by value: text parts at even places,
    number keys at odd places, so any two keys compare part by part."""
    return tuple(_number_key(part) if index % 2 else part for index, part in enumerate(_DIGITS.split(text)))


def _number_key(digits: str) -> tuple[int, str]:
    """A run of digits ordered by value without converting it (a message may quote a number
    of thousands of digits, past what int() converts)."""
    significant = digits.lstrip("0")
    return len(significant), significant
