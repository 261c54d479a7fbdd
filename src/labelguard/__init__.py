"""labelguard: find the labels that trigger "CUDA error: device-side assert triggered".

Public API::

    audit(paths, spec, options=...) -> Report
                                     audit datasets against a label spec (a LabelSpec or a
                                     mapping: {"num_classes": 3}); options: AuditOptions or
                                     a mapping of its fields ({"format": "voc"})
    LabelSpec                        what labels are legal
    AuditOptions                     how the datasets are laid out (format, images, masks, lists...)
    Report, Finding, Severity        what an audit returns; Report.write(format, file) renders it
    LabelguardError and its subclasses (the tree is in labelguard.errors):
        UsageError, SpecError, UnsupportedError, MissingDependency, LabelError

Subpackages, each imported on its own::

    labelguard.explain   explain(text) -> Explanation: the likely causes of a PyTorch error log
    labelguard.fix       repair what the audit found, dry run first, with an undo journal
    labelguard.torch     the training-time guard (needs the torch extra)
"""

from labelguard._version import __version__
from labelguard.errors import (
    LabelError,
    LabelguardError,
    MissingDependency,
    SpecError,
    UnsupportedError,
    UsageError,
)

# The names that need numpy and the readers, imported on first use (PEP 562), so that
# ``labelguard --version``, ``rules`` or ``explain`` start without them.
_LAZY = {
    "AuditOptions": "labelguard.layouts.base",
    "Finding": "labelguard.core.findings",
    "LabelSpec": "labelguard.core.spec",
    "Report": "labelguard.report",
    "Severity": "labelguard.core.findings",
    "audit": "labelguard._audit",
}

__all__ = [
    "AuditOptions",
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


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labelguard' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
