"""labelguard: find the labels that trigger "CUDA error: device-side assert triggered".

Public API::

    LabelSpec        what labels are legal
    Finding, Severity
    LabelError       raised by labelguard.torch when a target breaks the spec
"""

from labelguard._version import __version__
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.errors import LabelError, LabelguardError, MissingDependency, SpecError

__all__ = [
    "Finding",
    "LabelError",
    "LabelSpec",
    "LabelguardError",
    "MissingDependency",
    "Severity",
    "SpecError",
    "__version__",
]
