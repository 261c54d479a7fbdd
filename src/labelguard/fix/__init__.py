"""``labelguard.fix``: repair what the audit found, safely.

Every fix is a dry run unless ``apply=True``. Each format's editor only plans; applied runs
write through one engine (:mod:`labelguard.fix._engine`: temp file, re-read and re-audit, atomic
replace) and one journal (:mod:`labelguard.fix._journal`), so that :func:`undo` restores the
exact bytes, even after a run was killed half-way.
"""

from labelguard.fix._api import colors, remap, remap_ids, rename
from labelguard.fix._base import FileChange, FixResult
from labelguard.fix._drop import drop
from labelguard.fix._harmonize import Harmonization, apply_mapping, harmonize
from labelguard.fix._journal import FixError, UndoResult, undo
from labelguard.fix._lists import clean_list

__all__ = [
    "FileChange",
    "FixError",
    "FixResult",
    "Harmonization",
    "UndoResult",
    "apply_mapping",
    "clean_list",
    "colors",
    "drop",
    "harmonize",
    "remap",
    "remap_ids",
    "rename",
    "undo",
]
