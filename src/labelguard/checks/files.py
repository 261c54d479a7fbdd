"""LG0xx: files, pairs and file lists."""

from labelguard.core.findings import Finding
from labelguard.core.registry import define
from labelguard.readers.base import LinkedOutside, ReadError

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

# What to do about a file or folder that is a link out of the data (LG005, never read).
LINK_HINT = "Put the file itself in the dataset in place of the link, or audit the folder the link leads to."


def not_read(path: str | None, error: ReadError) -> Finding:
    """The finding of a file a reader did not read: LG005 when it leads outside the data the
    audit was given through a link (never opened), else LG001 with the reader's reason."""
    if isinstance(error, LinkedOutside):
        return ESCAPES_ROOT.finding(path, str(error), hint=LINK_HINT)
    return UNREADABLE.finding(path, str(error))
