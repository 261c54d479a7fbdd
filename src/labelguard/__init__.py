"""labelguard: find the labels that trigger "CUDA error: device-side assert triggered".

Public API::

    audit(paths, spec) -> Report     audit datasets against a label spec
    explain(text) -> Explanation     the likely causes of a PyTorch error log
    LabelSpec                        what labels are legal
    Report, Finding, Severity        what an audit returns
    LabelError                       raised by labelguard.torch when a target breaks the spec
"""

from labelguard._version import __version__
from labelguard.audit import audit
from labelguard.report import Report
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.errors import LabelError, LabelguardError, MissingDependency, SpecError
from labelguard.explain import explain

__all__ = [
    "Finding",
    "LabelError",
    "LabelSpec",
    "LabelguardError",
    "MissingDependency",
    "Report",
    "Severity",
    "SpecError",
    "audit",
    "explain",
    "__version__",
]
