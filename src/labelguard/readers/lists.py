"""File lists (train.txt, ImageSets/*.txt): parsing with every unclean line noted.

A list is read as bytes so that a BOM, CRLF endings and stray whitespace are seen exactly
as a dataset class that does ``open(f).read().split('\\n')`` would see them. Blank and ``#``
comment lines are not entries, and both are noted: such a loader opens them as file names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labelguard.readers.base import ReadError, decode_text, read_text_bytes

# The longest line a file list may hold. A line names a file, or an image and its mask
# (CamVid): paths stop at 4,096 bytes on Linux and 1,024 on macOS, so a longer line names
# no file on any system, and resolving it as a path costs a copy per candidate extension.
MAX_LINE = 1 << 16


@dataclass(frozen=True)
class ListEntry:
    line: int
    raw: str
    text: str  # the stripped line
    fields: tuple[str, ...]  # whitespace-separated parts (CamVid lists pair "image mask")


@dataclass
class ListFile:
    path: str
    entries: list[ListEntry] = field(default_factory=list)
    # problem -> line numbers: "bom", "crlf", "whitespace", "blank", "comment", "duplicate"
    problems: dict[str, list[int]] = field(default_factory=dict)
    examples: dict[int, str] = field(default_factory=dict)

    def note(self, problem: str, line: int, raw: str) -> None:
        self.problems.setdefault(problem, []).append(line)
        self.examples.setdefault(line, raw)


def parse_list(path: str) -> ListFile:
    """Parse a file list; ReadError when it cannot be read as text."""
    data = read_text_bytes(path, "text list")
    listing = ListFile(path)
    if data.startswith(b"\xef\xbb\xbf"):
        listing.note("bom", 1, "<BOM>")
        data = data[3:]
    text = decode_text(data)
    seen: dict[str, int] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(text) > MAX_LINE:
        number, longest = max(enumerate(map(len, lines), 1), key=lambda item: item[1])
        if longest > MAX_LINE:
            raise ReadError(f"line {number} holds {longest:,} characters, more than any path or pair of paths "
                            f"(at most {MAX_LINE:,} are read as one): not a file list")
    for number, raw in enumerate(lines, 1):
        if raw.endswith("\r"):
            listing.note("crlf", number, raw)
            raw = raw[:-1]
        stripped = raw.strip()
        if not stripped:
            listing.note("blank", number, raw)
            continue
        if stripped.startswith("#"):
            # Not an entry here, but a loader that does not skip comments opens "# fold 1.npz".
            listing.note("comment", number, raw)
            continue
        if stripped != raw:
            listing.note("whitespace", number, raw)
        if stripped in seen:
            listing.note("duplicate", number, raw)
            continue
        seen[stripped] = number
        listing.entries.append(ListEntry(number, raw, stripped, tuple(stripped.split())))
    return listing
