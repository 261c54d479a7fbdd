"""A file that was not read, as a finding: LG005 for a link out of the data, LG001 with the
reader's (or discovery's) reason otherwise (and, for want of an extra, what to install). The
one place these findings are made for files that no rule reads."""

from typing import Iterable

from labelguard._optional import install_command
from labelguard.core.findings import Finding
from labelguard.core.registry import Check
from labelguard.core.text import plural, shorten, verb
from labelguard.errors import MissingDependency
from labelguard.readers.base import LinkedOutside, NeedsExtra, ReadError
from labelguard.rules.lg001 import UNREADABLE
from labelguard.rules.lg005 import ESCAPES_ROOT


# What to do about a file or folder that is a link out of the data (LG005, never read).
LINK_HINT = "Put the file itself in the dataset in place of the link, or audit the folder the link leads to."
# What to do about a file that needs an extra (LG001): nothing is known of the file itself.
EXTRA_HINT = ("Install the extra where the audit runs ({command}) and audit again: this file was not read, so "
              "its labels are not checked.")


def not_read(path: str | None, error: ReadError) -> Finding:
    """The finding of a file a reader did not read: LG005 when it leads outside the data the
    audit was given through a link (never opened), else LG001 with the reader's reason (for a
    file that needs an extra that is not installed, the extra, and a hint that blames no file)."""
    if isinstance(error, LinkedOutside):
        return linked_out(path, str(error))
    if isinstance(error, NeedsExtra):
        return UNREADABLE.finding(path, str(error), hint=EXTRA_HINT.format(command=install_command(error.extra)),
                                  extra=error.extra)
    return UNREADABLE.finding(path, str(error))


def refuse_unread_for_extras(findings: Iterable[Finding], inferred: str) -> None:
    """MissingDependency when any of an audit's ``findings`` says a file was not read for want
    of an extra: what is ``inferred`` from the labels that were read (a spec, a class map)
    would silently miss the labels of those files, which may well be fine."""
    unread = [f for f in findings if f.code == UNREADABLE.code and isinstance(f.data, dict) and f.data.get("extra")]
    if not unread:
        return
    commands = " and ".join(install_command(extra) for extra in sorted({f.data["extra"] for f in unread}))
    raise MissingDependency(
        f"{plural(len(unread), 'file')} of the data ({shorten(f.path for f in unread)}) {verb(len(unread), 'needs')} "
        f"an extra that cannot be imported here ({commands}): no {inferred} was inferred from the other files, "
        "as it could miss classes that only these files hold")


def unreadable(path: str | None, message: str, hint: str = "") -> Finding:
    """LG001 for a file or folder discovery could not read or find (a metadata file, a colour
    map, a PATH that holds no dataset of the layout asked for), with what went wrong."""
    return UNREADABLE.finding(path, message, hint=hint)


def linked_out(path: str | None, message: str) -> Finding:
    """LG005 for a file or folder that is a link leading outside the data the audit was given:
    never opened, listed or read."""
    return ESCAPES_ROOT.finding(path, message, hint=LINK_HINT)


def load_failure(check: Check, text: str, hint: str) -> Finding:
    """LG003 (a missing file) or LG001 (any other error) for a sample the dataset itself
    failed to load at run time: ``text`` is what it raised."""
    return check.finding(None, f"the dataset raised {text}", hint=hint, error=text)
