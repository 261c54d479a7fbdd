"""The unit of per-file work and its result.

A :class:`FileTask` says which file to read and how (its processor, paired image, options);
``task.processor(task, spec)`` is a pure function returning a :class:`FileResult`, so tasks
can run in-process, in a process pool or on a Dask cluster, and results can be cached by
content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from labelguard.core.findings import Finding
from labelguard.core.summary import Summary


@dataclass(frozen=True)
class FileTask:
    """One file (or pair) to audit.

    Attributes:
        processor: module-level function ``(task, spec) -> FileResult``; picklable by name.
        path: the annotation or mask file.
        display: the path as shown in findings.
        image: the paired image file, when there is one.
        options: format options (npz key, colour map...), as a tuple of (key, value) pairs.
    """

    processor: Callable[["FileTask", Any], "FileResult"]
    path: str
    display: str
    image: str | None = None
    image_display: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, key: str, default: Any = None) -> Any:
        for name, value in self.options:
            if name == key:
                return value
        return default


@dataclass
class FileResult:
    """Findings and the partial summary of one task, or of a batch of tasks merged.

    Attributes:
        path: the task's display path (a batch's first).
        files: how many tasks this result covers.
        cached: how many of them came from the result cache (:mod:`labelguard.core.cache`).
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    errors: list[str] = field(default_factory=list)  # labelguard's own failures, not the data's
    files: int = 1
    cached: int = 0
