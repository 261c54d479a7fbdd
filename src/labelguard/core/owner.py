"""Whose a file or folder is: the one test of "this user's own".

labelguard trusts a few things it finds on disk only when no one else could have written
them: the result cache's folder (:mod:`labelguard.core.cache`) and a config found in a folder
above the audited data (:func:`labelguard.config.found_config`). Both ask here.
"""

from __future__ import annotations

import os
import stat

# Windows has no owners or modes of this kind: there the place of a file (the user's own
# %LOCALAPPDATA%, the folders the user chose) decides.
POSIX = hasattr(os, "geteuid")


def other_owner(st: os.stat_result, root_too: bool = False) -> str | None:
    """Why the file or folder of ``st`` is another user's (a clause: "it belongs to user
    65534, not to this user (1000)"), or None when it is this user's, or root's with
    ``root_too`` (the system's files, which only the administrator can change)."""
    if not POSIX or st.st_uid == os.geteuid() or (root_too and st.st_uid == 0):
        return None
    return f"it belongs to user {st.st_uid}, not to this user ({os.geteuid()}{' or root' if root_too else ''})"


def not_own(path: str, st: os.stat_result, root_too: bool = False, group_may_write: bool = False) -> str | None:
    """Why the file or folder at ``path`` (its ``st``) is not this user's own, or None: it is
    another user's (:func:`other_owner`), or its mode lets other users write into it (its
    group too, unless ``group_may_write``: where umask 002 is the default, each user has a
    group of their own and every file they write is group-writable)."""
    owner = other_owner(st, root_too)
    if owner or not POSIX:
        return owner
    if st.st_mode & (0o002 if group_may_write else 0o022):
        who = "o" if group_may_write else "go"
        return (f"other users may write into it (mode {stat.S_IMODE(st.st_mode):04o}; "
                f"`chmod {who}-w {path}` makes it this user's alone)")
    return None
