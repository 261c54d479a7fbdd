"""Exceptions raised by labelguard.

The tree::

    LabelguardError                 base of everything labelguard raises on purpose
    ├── SpecError (ValueError)      a label spec or config is contradictory or has unknown keys
    ├── OptionError (ValueError)    an audit option that does not apply to the dataset found
    ├── MissingDependency (ImportError)
    │                               an optional extra is needed: says which one to install
    └── LabelError (ValueError)     a target value broke the spec at training time (labelguard.torch)

Findings about user data are never raised: they are reported as :class:`labelguard.Finding`.
"""

from __future__ import annotations

from typing import Any


class LabelguardError(Exception):
    """Base class of the errors labelguard raises on purpose."""


class SpecError(LabelguardError, ValueError):
    """A label spec or a config file is invalid (unknown key, contradictory values)."""


class OptionError(LabelguardError, ValueError):
    """An audit option names something the dataset found does not have (a table column on
    a mask folder, a file list for a layout that reads none)."""


class MissingDependency(LabelguardError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class LabelError(LabelguardError, ValueError):
    """A sample's target breaks the label spec.

    Attributes:
        code: the check code (``"LG201"``...).
        index: the sample index in its dataset, when known.
        source: the file the sample came from, when known.
        values: the offending values.
        expected: a short description of what was expected.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        index: int | None = None,
        source: str | None = None,
        values: Any = None,
        expected: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.index = index
        self.source = source
        self.values = values
        self.expected = expected

    def __reduce__(self):
        # Keyword-only attributes must survive the pickle trip out of a DataLoader worker.
        return (
            _rebuild_label_error,
            (self.message, self.code, self.index, self.source, self.values, self.expected),
        )

    def __str__(self) -> str:
        return self.message


def _rebuild_label_error(message, code, index, source, values, expected) -> LabelError:
    return LabelError(
        message, code=code, index=index, source=source, values=values, expected=expected
    )
