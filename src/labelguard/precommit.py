"""Which datasets a commit touches: the pre-commit hook audits those, and only those.

A dataset is a folder holding a ``labelguard.toml`` (its contract); a file belongs to the
nearest such folder at or above it, looked for up to the current folder (the repository
root, where pre-commit runs hooks), never above it. Files outside every dataset are not
audited. Found with the data, a dataset's contract is data (the trust model of
docs/security.md): it sets the label spec and layout hints, and its baseline,
``labelguard-baseline.json`` beside it, is not used. When the hook's arguments say
``--trust-contracts`` (the repository's owner declares the contracts theirs), each contract is
passed as ``--config`` (all its settings apply) and its baseline as ``--baseline``.
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


def touched_datasets(files: Iterable[str], top: str = ".") -> list[tuple[str, str, str | None]]:
    """(dataset folder, its contract, its baseline file or None), relative to ``top``, for
    every dataset that one of ``files`` belongs to, sorted."""
    roots = {root for root in (dataset_of(path, top) for path in files) if root is not None}
    top = os.path.abspath(top)
    found = []
    for root in sorted(roots):
        baseline = os.path.join(root, DEFAULT_BASELINE)
        found.append((os.path.relpath(root, top), os.path.relpath(os.path.join(root, CONFIG_NAME), top),
                      os.path.relpath(baseline, top) if os.path.isfile(baseline) else None))
    return found
