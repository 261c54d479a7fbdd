"""labelguard: find the labels that trigger "CUDA error: device-side assert triggered".

Public API::

    audit(paths, spec) -> Report     audit datasets against a label spec
    LabelSpec                        what labels are legal
    Report, Finding, Severity        what an audit returns
    LabelguardError and its subclasses (the tree is in labelguard.errors):
        UsageError, SpecError, UnsupportedError, MissingDependency, LabelError

Subpackages, each imported on its own::

    labelguard.explain   explain(text) -> Explanation: the likely causes of a PyTorch error log
    labelguard.fix       repair what the audit found, dry run first, with an undo journal
    labelguard.torch     the training-time guard (needs the torch extra)
"""

from labelguard._version import __version__
from labelguard._audit import audit
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.errors import (
    LabelError,
    LabelguardError,
    MissingDependency,
    SpecError,
    UnsupportedError,
    UsageError,
)
from labelguard.report import Report

__all__ = [
    "Finding",
    "LabelError",
    "LabelSpec",
    "LabelguardError",
    "MissingDependency",
    "Report",
    "Severity",
    "SpecError",
    "UnsupportedError",
    "UsageError",
    "__version__",
    "audit",
]
