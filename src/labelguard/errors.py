"""Exceptions raised by labelguard.

Every error labelguard raises on purpose derives from :class:`LabelguardError`, and each also
derives from the built-in exception a caller would expect (a bad value is a ``ValueError``),
so ``except ValueError`` keeps working. The tree::

    LabelguardError                      base of everything labelguard raises on purpose
    ├── UsageError (ValueError)          a call or option labelguard cannot honour: an unknown
    │   │                                name (layout, output format, severity), an argument
    │   │                                out of range or a reference that names nothing
    │   ├── SpecError                    a label spec or config is contradictory or has
    │   │                                unknown keys
    │   ├── ColumnError                  --path-column/--label-column name no column of the
    │   │                                tables found
    │   ├── OptionError                  an audit option that does not apply to the dataset
    │   │                                found
    │   └── ClusterError                 the Dask cluster asked for cannot run the audit:
    │                                    unreachable, without workers, or its workers
    │                                    cannot import this labelguard
    ├── UnsupportedError (TypeError)     an object labelguard cannot work with: guard() on
    │                                    something that is not a dataset, checked() on a loss
    │                                    it does not know
    ├── MissingDependency (ImportError)  an optional extra is needed: says which one to install
    ├── LabelError (ValueError)          a target broke the spec at training time
    │   ├── labelguard.torch.SampleError     a sample or batch, also from a DataLoader worker
    │   ├── labelguard.torch.NonFiniteError  the first NaN/Inf of a forward or backward pass
    │   └── labelguard.torch.PreflightError  preflight found errors; carries the report
    ├── labelguard.fix.FixError (ValueError)
    │                                    a fix cannot be planned, applied or undone
    ├── CannotFix                        one file cannot be fixed this way (its format, an
    │                                    unmapped colour): the fix reports it as skipped and
    │                                    goes on; never raised out of labelguard.fix
    └── labelguard.explain.FlightRecordError (ValueError)
                                         a flight record file is missing or damaged

Findings about user data are never raised: they are reported as :class:`labelguard.Finding`.
A ``ValueError`` or ``TypeError`` that is not a LabelguardError is a bug in labelguard (or
comes from the caller's own code, such as a dataset that raises).
"""

from __future__ import annotations

from typing import Any


class LabelguardError(Exception):
    """Base class of the errors labelguard raises on purpose."""


class UsageError(LabelguardError, ValueError):
    """A call or option labelguard cannot honour; the message names what was given and what is known."""


class SpecError(UsageError):
    """A label spec or a config file is invalid (unknown key, contradictory values)."""


class UnsupportedError(LabelguardError, TypeError):
    """An object of a kind labelguard cannot work with; the message says what it accepts."""


class OptionError(UsageError):
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


class ColumnError(UsageError):
    """A ``--path-column``/``--label-column`` names no column of the tables found; the message
    lists the columns each table has."""


class ClusterError(UsageError):
    """The Dask cluster an audit was sent to cannot run it: its scheduler cannot be reached,
    it has no worker, or its workers cannot import the labelguard of the audit (another
    version, or none); the message names the address and what to do."""


class CannotFix(LabelguardError):
    """This file cannot be fixed this way (its format, an unmapped colour...); the message says
    why and the file is reported as skipped."""
