"""LG0xx: files, pairs and file lists."""

from typing import Iterable

from labelguard._optional import install_command
from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.core.text import plural, shorten, verb
from labelguard.errors import MissingDependency
from labelguard.readers.base import LinkedOutside, NeedsExtra, ReadError

UNREADABLE = define(
    "LG001", "file-unreadable", "error",
    summary="a file cannot be read, decoded or parsed",
    why="""
A DataLoader worker that meets this file raises mid-epoch (or, worse, a dataset class
swallows the error and feeds an empty or partial target). Interrupted copies, zero-byte files
and files written by the wrong tool are the usual causes.""",
    bad="masks/case_017.png  (0 bytes: the copy was interrupted)",
    good="masks/case_017.png  (a complete PNG that decodes to a 512x512 label map)",
    fix="Re-export or re-copy the file from its source; remove it from the lists if it cannot be recovered.",
)

UNPAIRED = define(
    "LG002", "image-without-label", "error",
    summary="an image has no annotation/mask, or an annotation/mask has no image",
    why="""
Datasets that pair images and labels by name fail with FileNotFoundError on the missing
side, or silently train on fewer samples than intended.""",
    bad="images/0042.png exists, masks/0042.png does not",
    good="images/0042.png and masks/0042.png (or masks/0042_mask.png) both exist",
    fix="Restore the missing file, or remove the orphan from the dataset and its lists.",
)

MISSING = define(
    "LG003", "listed-file-missing", "error",
    summary="a file named by a list or annotation does not exist",
    why="""
The dataset opens the file named in the list, XML <filename>, COCO file_name or CSV row and
fails with FileNotFoundError, often only when that sample is drawn, hours into training.""",
    bad="train.txt names case0031_slice007 but train_npz/case0031_slice007.npz does not exist",
    good="every entry of train.txt resolves to a file under the data root",
    fix="Regenerate the list from the files on disk, or restore the missing files.",
)

UNCLEAN_LIST = define(
    "LG004", "list-entry-unclean", "warning",
    summary="a file-list entry has stray whitespace, CRLF, a BOM, or is blank or duplicated",
    why="""
Code that builds paths with line.rstrip('\\n') keeps the trailing space or '\\r', and
np.load('case_001.npz ') fails with 'No such file'; duplicated lines silently oversample.""",
    bad="'case_001.npz '  (trailing space)  /  'case_002\\r\\n'  (Windows line ending)",
    good="'case_001.npz'",
    fix="Strip every line, drop blank and duplicate lines, save with LF endings and no BOM "
    "(`labelguard fix list`).",
)

ESCAPES_ROOT = define(
    "LG005", "path-escapes-root", "error",
    summary="a path in a list or annotation escapes the dataset root",
    why="""
'../' or absolute paths make a dataset depend on one machine's layout (it breaks when the
data moves) and can read files that are not part of the dataset at all.""",
    bad="train.txt: ../../other_project/masks/0001.png  or  /home/someone/data/0001.png",
    good="train.txt: masks/0001.png (relative to the dataset root)",
    fix="Rewrite the entries relative to the dataset root, or copy the files into the dataset.",
)

NOT_AUDITED = define(
    "LG007", "label-file-not-audited", "warning",
    summary="a file that can hold labels lies under the audited path but no dataset audited it",
    why="""
A layout detected for part of a folder, a second dataset beside the first or an export the tool
does not know leaves label files unread: an audit that says "No findings" about the files it
did read says nothing about these, and they are what the DataLoader may load.""",
    bad="download/ holds as_yolo/ (audited) and masks/*.png that no dataset read",
    good="every mask, annotation file and label list under PATH audited, or named as an image or metadata",
    fix="Audit the folder that holds them (`labelguard detect PATH` shows how each folder was taken), force "
    "the layout that reads them with --format, or move them out of the dataset if they are not part of it.",
)


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
        return ESCAPES_ROOT.finding(path, str(error), hint=LINK_HINT)
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
