"""The layout registry, the audit options and what discovery returns."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable

from labelguard.checks.files import ESCAPES_ROOT, MISSING, UNCLEAN_LIST, UNPAIRED, UNREADABLE
from labelguard.core.findings import Finding
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.errors import UsageError
from labelguard.readers.base import ReadError
from labelguard.readers.lists import ListFile, parse_list


@dataclass(frozen=True)
class AuditOptions:
    """What the user said about the layout (CLI flags or API arguments)."""

    format: str | None = None  # force a layout by name
    images: str | None = None
    masks: str | None = None
    lists: tuple[str, ...] = ()
    key: str | None = None  # array key in NPZ/HDF5 files
    image_key: str | None = None  # key of the image array beside it (its geometry is checked)
    color_map: str | None = None  # colour map file
    path_column: str | None = None
    label_column: str | None = None


@dataclass
class Discovery:
    """The files of a dataset as one layout sees them."""

    layout: str
    root: str
    tasks: list[FileTask] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    spec: LabelSpec = field(default_factory=LabelSpec)  # what the dataset itself declares
    notes: list[str] = field(default_factory=list)
    color_map: object | None = None


@dataclass(frozen=True)
class Layout:
    name: str
    detect: Callable[[str, AuditOptions], bool]
    discover: Callable[[str, AuditOptions], Discovery]
    priority: int  # lower is asked first
    description: str


LAYOUTS: dict[str, Layout] = {}


def register_layout(name: str, priority: int, description: str):
    """Decorator pair: ``@register_layout(...)`` on a class-free module exposing detect/discover."""

    def wrap(discover_fn: Callable[[str, AuditOptions], Discovery]):
        detect_fn = getattr(discover_fn, "detect", None)
        if detect_fn is None:
            raise ValueError(f"layout {name} needs a detect function (set discover.detect)")  # not a user mistake
        LAYOUTS[name] = Layout(name, detect_fn, discover_fn, priority, description)
        return discover_fn

    return wrap


def layout_names() -> list[str]:
    return sorted(LAYOUTS)


def discover(root: str, options: AuditOptions) -> Discovery:
    """Find the layout of ``root`` (or use the forced one) and discover its files."""
    if options.format:
        try:
            layout = LAYOUTS[options.format]
        except KeyError:
            raise UsageError(
                f"unknown format {options.format!r}; known: {', '.join(layout_names())}"
            ) from None
        return layout.discover(root, options)
    for layout in sorted(LAYOUTS.values(), key=lambda item: item.priority):
        if layout.detect(root, options):
            return layout.discover(root, options)
    return LAYOUTS["masks"].discover(root, options)


def display_path(path: str) -> str:
    """``path`` relative to the current directory when inside it, else absolute."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd:
        return "."
    if absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return absolute


# ---- pairing -----------------------------------------------------------------------------

_SUFFIXES = re.compile(
    r"(?:[_-](?:mask|masks|label|labels|gt|seg|segmentation|annotation|anno|target|"
    r"leftImg8bit|gtFine_labelIds|gtFine_labelTrainIds|gtCoarse_labelIds))+$",
    re.IGNORECASE,
)


def strip_extension(name: str) -> str:
    lower = name.lower()
    for ext in (".nii.gz", ".npy.h5"):
        if lower.endswith(ext):
            return name[: -len(ext)]
    return os.path.splitext(name)[0]


_CHANNEL = re.compile(r"_\d{4}$")


def pair_key(relative: str, channel: bool = False) -> str:
    """The name under which an image and its mask meet: folder + stem without the usual
    suffixes (``_mask``, ``_label``, ``_gt``...); with ``channel``, also without nnU-Net's
    ``_0000`` channel suffix (only ever stripped from the image side)."""
    folder, name = os.path.split(relative)
    stem = strip_extension(name)
    if channel:
        stem = _CHANNEL.sub("", stem)
    base = _SUFFIXES.sub("", stem) or stem
    if base.lower().startswith(("gt_", "mask_", "label_", "image_", "img_")):
        base = base.split("_", 1)[1]
    return os.path.join(folder, base).lower()


# ---- files and lists -------------------------------------------------------------------

def walk_files(root: str, skip_dirs: frozenset[str] = frozenset()) -> list[str]:
    """Every file under ``root`` (sorted, hidden entries skipped), without the ``skip_dirs``."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip_dirs)
        for name in sorted(files):
            if not name.startswith("."):
                found.append(os.path.join(directory, name))
    return found


@dataclass
class ListSelection:
    """The files a set of lists names, and the findings about the lists themselves."""

    paths: list[str] = field(default_factory=list)  # resolved mask/annotation files, in order
    pairs: dict[str, str] = field(default_factory=dict)  # mask path -> image path named beside it
    findings: list[Finding] = field(default_factory=list)


_LIST_PROBLEMS = {
    "bom": "starts with a UTF-8 byte order mark",
    "crlf": "has Windows (CRLF) line endings",
    "whitespace": "has leading/trailing whitespace",
    "blank": "has blank lines",
    "comment": "has # comment lines, which a loader reading every line opens as file names",
    "duplicate": "has duplicated entries",
}


def list_findings(listing: ListFile, display: str) -> list[Finding]:
    findings = []
    for problem, lines in listing.problems.items():
        shown = ", ".join(
            f"line {n}" + (f" {listing.examples[n]!r}" if problem in ("whitespace", "comment", "duplicate") else "")
            for n in lines[:5]
        )
        more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
        findings.append(UNCLEAN_LIST.finding(
            display,
            f"the list {_LIST_PROBLEMS[problem]}: {shown}{more}",
            hint="Code that does not strip each line opens 'name ' or 'name\\r' and fails; "
            "clean the list (`labelguard fix list`).",
            problem=problem, lines=lines,
        ))
    return findings


def read_list(list_path: str) -> tuple[ListFile | None, list[Finding]]:
    """A parsed file list and the findings about it (LG004 unclean lines, LG001 unreadable)."""
    shown = display_path(list_path)
    try:
        listing = parse_list(list_path)
    except ReadError as exc:
        return None, [UNREADABLE.finding(shown, f"cannot read the file list: {exc}")]
    return listing, list_findings(listing, shown)


def select_from_lists(
    lists: tuple[str, ...],
    root: str,
    candidates: list[str],
    extensions: tuple[str, ...],
) -> ListSelection:
    """Resolve every list entry against ``root`` (with or without extension, or by stem
    among ``candidates``); LG003/LG004/LG005 on the lists."""
    selection = ListSelection()
    root_abs = os.path.abspath(root)
    by_stem: dict[str, list[str]] = {}
    for path in candidates:
        by_stem.setdefault(strip_extension(os.path.basename(path)).lower(), []).append(path)
        by_stem.setdefault(pair_key(os.path.basename(path)), []).append(path)
    chosen: set[str] = set()
    for list_path in lists:
        shown = display_path(list_path)
        listing, findings = read_list(list_path)
        selection.findings.extend(findings)
        if listing is None:
            continue
        missing: list[tuple[int, str]] = []
        list_dir = os.path.dirname(os.path.abspath(list_path))
        for entry in listing.entries:
            whole = _resolve(entry.text, root_abs, list_dir, by_stem, extensions)
            if whole[0] or len(entry.fields) == 1:
                parts = [(entry.text, whole)]
            else:
                parts = [(name, _resolve(name, root_abs, list_dir, by_stem, extensions))
                         for name in entry.fields]
            found = []
            for name, (path, escaped) in parts:
                if escaped:
                    selection.findings.append(ESCAPES_ROOT.finding(
                        shown, f"line {entry.line}: {name!r} points outside the dataset root "
                        f"{display_path(root_abs)}",
                        line=entry.line, entry=name,
                    ))
                elif path is None:
                    missing.append((entry.line, name))
                else:
                    found.append(path)
            if not found:
                continue
            target = found[-1]  # "image mask" lines name the mask last
            if target not in chosen:
                chosen.add(target)
                selection.paths.append(target)
                if len(found) > 1:
                    selection.pairs[target] = found[0]
        for line, name in missing:
            selection.findings.append(MISSING.finding(
                shown, f"line {line}: {name!r} does not exist under {display_path(root_abs)}",
                hint="Regenerate the list from the files on disk, or restore the file.",
                line=line, entry=name,
            ))
    return selection


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _resolve(name: str, root: str, list_dir: str, by_stem: dict[str, list[str]],
             extensions: tuple[str, ...]) -> tuple[str | None, bool]:
    """(path or None, escapes_root) for one list entry.

    Entries resolve against the root, then the list's folder, with or without one of
    ``extensions``, then by stem among the dataset's files. A leading '/' is read as
    root-relative first (CamVid lists), then as a real absolute path.
    """
    relative = name.lstrip("/\\") if os.path.isabs(name) else name
    for base in (root, list_dir):
        path = os.path.normpath(os.path.join(base, relative))
        for candidate in (path, *(path + ext for ext in extensions)):
            if os.path.isfile(candidate):
                return candidate, not _inside(candidate, root)
    if os.path.isabs(name) and os.path.isfile(name):
        absolute = os.path.abspath(name)
        return absolute, not _inside(absolute, root)
    if not _inside(os.path.normpath(os.path.join(root, relative)), root):
        return None, True
    stem = strip_extension(os.path.basename(relative)).lower()
    matches = set(by_stem.get(stem) or by_stem.get(pair_key(os.path.basename(relative))) or [])
    if len(matches) == 1:
        return matches.pop(), False
    return None, False


def unpaired_findings(orphans_images: list[str], orphans_masks: list[str], what: str = "mask") -> list[Finding]:
    findings = []
    for path in orphans_images:
        findings.append(UNPAIRED.finding(
            display_path(path), f"image has no {what} (no {what} file with a matching name)",
            hint="Restore the missing file, or remove the image from the dataset and its lists.",
            side="image",
        ))
    for path in orphans_masks:
        findings.append(UNPAIRED.finding(
            display_path(path), f"{what} has no image (no image file with a matching name)",
            hint="Restore the image, or remove the orphan from the dataset and its lists.",
            side=what,
        ))
    return findings
