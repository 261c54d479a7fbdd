"""Which datasets a commit touches: the pre-commit hook audits those, and only those.

A dataset is a folder holding a ``labelguard.toml`` (its contract); a file belongs to the
nearest such folder at or above it, looked for up to the current folder (the repository
root, where pre-commit runs hooks), never above it. Files outside every dataset are not
audited. The dataset's baseline, ``labelguard-baseline.json`` beside its contract, is used
when the hook's arguments say ``--baselines``: found with the data, it decides which findings
pass, which only the user may (the trust model of docs/security.md).
"""

from __future__ import annotations

import os
from typing import Iterable

from labelguard.baseline import DEFAULT_BASELINE
from labelguard.config import CONFIG_NAME
from labelguard.core.paths import inside_root


def dataset_of(path: str, top: str) -> str | None:
    """The folder of the nearest ``labelguard.toml`` at or above ``path``, not above ``top``."""
    top = os.path.abspath(top)
    current = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
    while True:
        if os.path.isfile(os.path.join(current, CONFIG_NAME)):
            return current
        if current == top or os.path.dirname(current) == current or not inside_root(current, top):
            return None
        current = os.path.dirname(current)


def touched_datasets(files: Iterable[str], top: str = ".") -> list[tuple[str, str | None]]:
    """(dataset folder relative to ``top``, its baseline file or None) for every dataset that
    one of ``files`` belongs to, sorted."""
    roots = {root for root in (dataset_of(path, top) for path in files) if root is not None}
    found = []
    for root in sorted(roots):
        baseline = os.path.join(root, DEFAULT_BASELINE)
        shown = os.path.relpath(root, os.path.abspath(top))
        found.append((shown, os.path.relpath(baseline, os.path.abspath(top)) if os.path.isfile(baseline) else None))
    return found
