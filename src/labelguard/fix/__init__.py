"""``labelguard.fix``: repair what the audit found, safely.

Every fix is a dry run unless ``apply=True``; applied runs write through one atomic-write +
journal layer (:mod:`labelguard.fix.journal`) so that :func:`undo` restores the exact bytes,
even after a run was killed half-way.
"""

from labelguard.fix.api import colors, remap, remap_ids, rename
from labelguard.fix.base import FileChange, FixResult
from labelguard.fix.harmonize import Harmonization, apply_mapping, harmonize
from labelguard.fix.journal import FixError, UndoResult, undo
from labelguard.fix.lists import clean_list

__all__ = [
    "FileChange",
    "FixError",
    "FixResult",
    "Harmonization",
    "UndoResult",
    "apply_mapping",
    "clean_list",
    "colors",
    "harmonize",
    "remap",
    "remap_ids",
    "rename",
    "undo",
]
