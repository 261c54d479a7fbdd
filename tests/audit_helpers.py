"""Small helpers the format tests share: run an audit without project config, pick findings."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult


def run(path, spec: LabelSpec | None = None, **kwargs):
    """Audit ``path`` against ``spec`` (an empty spec by default), ignoring config files above it."""
    return audit(path, spec if spec is not None else LabelSpec(), use_project_config=False, **kwargs)


def peak_of(call):
    """(the result of ``call()``, the peak bytes tracemalloc saw while it ran; NumPy reports its
    buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def merged_results(results) -> FileResult:
    """An engine's batch results merged into one, findings in a fixed order (engines yield
    batches as they finish)."""
    merged = FileResult("", files=0)
    for result in results:
        merged.findings.extend(result.findings)
        merged.errors.extend(result.errors)
        merged.summary.update(result.summary)
        merged.files += result.files
    merged.findings.sort(key=lambda f: json.dumps(f.to_dict(), sort_keys=True))
    return merged


def found(report, code: str, name: str | None = None) -> list:
    """Findings of ``code`` (on the file called ``name`` when given)."""
    return [f for f in report.findings if f.code == code
            and (name is None or (f.path is not None and Path(f.path).name == name))]


def codes(report) -> set[str]:
    return {f.code for f in report.findings}


# ../shared/corpus: small real datasets written by another project's tools, read in place.
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "datumaro"
REALWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "realworld"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")


def run_corpus(relative: str, spec: LabelSpec | None = None, **kwargs):
    """Audit a corpus dataset in place, with one worker."""
    return run(CORPUS / relative, spec, workers=1, **kwargs)
