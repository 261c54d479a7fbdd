"""The one discovery and pairing engine: which files a dataset holds, which image pairs with
which label, and the path policies every layout shares.

A layout only says where its images and labels are (its roles); this module decides:

* **pairing** (:func:`pair_files`): images and labels in two folder trees meet by the longest
  name they share. Keys are tried from the most to the least specific, and the first that
  matches wins: the relative folder + the whole stem; the folder + the stem without the
  naming conventions of known tools (:data:`LABEL_SUFFIXES`, :data:`IMAGE_SUFFIXES`:
  mmsegmentation ``_img``/``_gt``, Cityscapes ``_leftImg8bit``/``_gtFine_labelIds``,
  ``_mask``, ``_label``, ``_seg``...); the same with nnU-Net's ``_0000`` channel suffix
  dropped from images; the longest leading part of the label's stem, cut at a separator,
  that is an image's stem; and, last, the stem alone across folders when one image has it.
  Several images under one key are the channels of one case when they differ only by the
  channel suffix (they all count as used); otherwise the label is *ambiguous*: it is paired
  with none of them and none of them is reported as an orphan.
* **roles in one folder** (:func:`pair_in_folder`): files side by side whose names differ by a
  role word (MONAI ``anatomical.nii`` + ``anatomical_label.nii.gz``, StarDist ``img2d.tif`` +
  ``mask2d.tif``, ``x_data.npy`` + ``x_label.npy``). A file found to be an image there is
  never audited as a label.
* **path policy**: :func:`inside_root` is the one test of "this path lies inside the dataset
  root"; :func:`resolve_entry` the one resolution of a list entry (LG003 missing, LG005
  outside the root) and :func:`select_from_lists` the one reading of ``--list`` files (with
  LG004 on unclean lines), used by every layout.
* **what a folder holds** (:func:`describe_contents`): the counts by file kind that a report
  gives when an audit found nothing to audit.

Every function is deterministic (sorted input, first match by sort order) and runs in
O(n log n) on n files: keys are looked up in dictionaries, never compared pairwise.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field

from labelguard.checks.files import ESCAPES_ROOT, MISSING, UNCLEAN_LIST, UNPAIRED, UNREADABLE
from labelguard.core.text import SHOWN, shorten
from labelguard.core.findings import Finding
from labelguard.readers.base import ReadError, read_bytes, read_head
from labelguard.readers.lists import ListFile, parse_list

# ---- names --------------------------------------------------------------------------------

LABEL_SUFFIXES = (
    "gtFine_labelTrainIds", "gtFine_labelIds", "gtFine_instanceIds", "gtFine_color",
    "gtCoarse_labelTrainIds", "gtCoarse_labelIds", "gtCoarse_instanceIds", "gtCoarse_color",
    "labelTrainIds", "labelIds", "mask", "masks", "label", "labels", "gt", "seg", "segmentation",
    "annotation", "anno", "target",
)
IMAGE_SUFFIXES = ("leftImg8bit", "img", "image")
LABEL_PREFIXES = ("gt", "mask", "label")
IMAGE_PREFIXES = ("image", "img")

_SEPARATORS = "_-. "
_LABEL_WORDS = frozenset(w.lower() for w in LABEL_SUFFIXES)
_IMAGE_WORDS = frozenset(w.lower() for w in IMAGE_SUFFIXES)
# The last part of every convention: a name ending otherwise carries none.
_TAIL_ENDS = frozenset(w.rsplit("_", 1)[-1] for w in _LABEL_WORDS | _IMAGE_WORDS)
_PREFIX_ROLES = {**{w: "label" for w in LABEL_PREFIXES}, **{w: "image" for w in IMAGE_PREFIXES}}
_CHANNEL = re.compile(r"_\d{4}$")

# Role words inside a name, as one folder holds image and label side by side.
IMAGE_TOKENS = frozenset({"data", "image", "images", "img", "volume", "vol", "input", "raw", "ct", "mri"})
LABEL_TOKENS = frozenset({"label", "labels", "mask", "masks", "seg", "gt", "annotation", "target"})
_ROLE_SPLIT = re.compile(r"([_\-. ])")
# A role word that runs into a number (StarDist's img2d / mask2d).
_WORD_NUMBER = re.compile(r"([A-Za-z]+)(\d.*)$")

# Any word of the conventions above: names without one skip the per-name regexes.
_ROLE_HINT = re.compile("|".join(sorted(
    {w.lower() for w in LABEL_SUFFIXES + IMAGE_SUFFIXES + LABEL_PREFIXES + IMAGE_PREFIXES}
    | IMAGE_TOKENS | LABEL_TOKENS, key=len, reverse=True)), re.IGNORECASE)


def strip_extension(name: str) -> str:
    lower = name.lower()
    for ext in (".nii.gz", ".npy.h5"):
        if lower.endswith(ext):
            return name[: -len(ext)]
    return os.path.splitext(name)[0]


def name_key(stem: str, channel: bool = False) -> tuple[str, str | None]:
    """(key, role) of a file stem: the stem without the naming conventions of known tools,
    lower-cased, and "label" / "image" when a convention said which it is.

    With ``channel``, nnU-Net's ``_0000`` channel suffix goes too (only ever on images)."""
    role = None
    base = _CHANNEL.sub("", stem) if channel else stem
    if base[max(base.rfind("_"), base.rfind("-")) + 1:].lower() not in _TAIL_ENDS:
        stripped = base  # the common case, checked in one look-up: no convention at the end
    else:
        stripped = _strip_tail(base, _LABEL_WORDS)
    if stripped != base:
        role, base = "label", stripped
    elif stripped[max(stripped.rfind("_"), stripped.rfind("-")) + 1:].lower() in _TAIL_ENDS:
        stripped = _strip_tail(base, _IMAGE_WORDS)
        if stripped != base:
            role, base = "image", stripped
    head, sep, rest = base.partition("_")
    if sep and rest and head.lower() in _PREFIX_ROLES:
        role = role or _PREFIX_ROLES[head.lower()]
        base = rest
    return base.lower(), role


def _strip_tail(stem: str, words: frozenset[str]) -> str:
    """``stem`` without the trailing ``_word`` / ``-word`` parts that are in ``words`` (one
    or two separated parts each: ``_gtFine_labelIds``); never empty."""
    while True:
        cut = max(stem.rfind("_"), stem.rfind("-"))
        if cut <= 0:
            return stem
        before = max(stem.rfind("_", 0, cut), stem.rfind("-", 0, cut))
        if before > 0 and stem[before + 1:].lower() in words:
            stem = stem[:before]
        elif stem[cut + 1:].lower() in words:
            stem = stem[:cut]
        else:
            return stem


def _role_templates(stem: str):
    """(template, role) for each role word in ``stem``: the name with the word replaced by
    ``*`` (``x_*_1`` for ``x_label_1``, ``*2d`` for ``mask2d``)."""
    parts = _ROLE_SPLIT.split(stem)
    for i in range(0, len(parts), 2):
        word, tail = parts[i].lower(), ""
        if word not in IMAGE_TOKENS and word not in LABEL_TOKENS:
            match = _WORD_NUMBER.match(parts[i])
            if match is None:
                continue
            word, tail = match.group(1).lower(), match.group(2)
            if word not in IMAGE_TOKENS and word not in LABEL_TOKENS:
                continue
        template = "".join(parts[:i] + ["*" + tail] + parts[i + 1:]).lower()
        yield template, "image" if word in IMAGE_TOKENS else "label"


def pair_key(relative: str, channel: bool = False) -> str:
    """The name under which an image and its label meet: folder + :func:`name_key`."""
    folder, name = os.path.split(relative)
    return os.path.join(folder, name_key(strip_extension(name), channel)[0]).lower()


def _folder_of(path: str, root: str) -> str:
    relative = os.path.relpath(os.path.dirname(path), root)
    return "" if relative == "." else relative.lower()


def _leading_parts(key: str):
    """``key`` cut at each separator, longest first (``a_b_c`` gives ``a_b``, ``a``)."""
    for i in range(len(key) - 1, 0, -1):
        if key[i] in _SEPARATORS:
            yield key[:i]


# ---- pairing ------------------------------------------------------------------------------

@dataclass
class Pairing:
    """The outcome of pairing: label -> image, and what stayed alone."""

    pairs: dict[str, str] = field(default_factory=dict)
    orphan_images: list[str] = field(default_factory=list)
    orphan_labels: list[str] = field(default_factory=list)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # label -> its candidate images

    def notes(self, what: str = "label") -> list[str]:
        if not self.ambiguous:
            return []
        label, images = next(iter(sorted(self.ambiguous.items())))
        count = len(self.ambiguous)
        return [f"{count} {what}{'s' if count > 1 else ''} match{'' if count > 1 else 'es'} several "
                f"images by name (e.g. {display_path(label)}: {', '.join(display_path(i) for i in images[:3])}); "
                "their image sizes are not compared"]


def _channels_of_one_case(candidates: list[str]) -> bool:
    stems = {_CHANNEL.sub("", strip_extension(os.path.basename(p))).lower() for p in candidates}
    return len(stems) == 1 and all(_CHANNEL.search(strip_extension(os.path.basename(p))) for p in candidates)


def pair_files(images: list[str], labels: list[str], image_root: str, label_root: str) -> Pairing:
    """Pair ``labels`` under ``label_root`` with ``images`` under ``image_root`` (see the
    module docstring for the keys, in order)."""
    images = sorted(images)
    exact: dict[tuple[str, str], list[str]] = {}
    keyed: dict[tuple[str, str], list[str]] = {}
    channel: dict[tuple[str, str], list[str]] = {}
    anywhere: dict[str, list[str]] = {}
    for path in images:
        folder = _folder_of(path, image_root)
        stem = strip_extension(os.path.basename(path))
        exact.setdefault((folder, stem.lower()), []).append(path)
        keyed.setdefault((folder, name_key(stem)[0]), []).append(path)
        key = name_key(stem, channel=True)[0]
        channel.setdefault((folder, key), []).append(path)
        anywhere.setdefault(key, []).append(path)
    result = Pairing()
    used: set[str] = set()
    for label in labels:
        folder = _folder_of(label, label_root)
        stem = strip_extension(os.path.basename(label))
        key = name_key(stem)[0]
        candidates = (exact.get((folder, stem.lower())) or keyed.get((folder, key))
                      or channel.get((folder, key)))
        if not candidates:
            candidates = next((channel[(folder, part)] for part in _leading_parts(key)
                               if (folder, part) in channel), None)
        if not candidates:
            found = anywhere.get(key)
            candidates = found if found and (len(found) == 1 or _channels_of_one_case(found)) else None
        if not candidates:
            result.orphan_labels.append(label)
            continue
        used.update(candidates)
        if len(candidates) == 1 or _channels_of_one_case(candidates):
            result.pairs[label] = candidates[0]
        else:
            result.ambiguous[label] = candidates
    result.orphan_images = [p for p in images if p not in used]
    return result


def pair_in_folder(files: list[str]) -> Pairing:
    """Pairs (label -> image) among files that lie side by side, told apart by role words.

    Only files that meet a partner are paired; ``orphan_*`` stay empty, since a lone file in
    a folder of masks is a mask, not an unpaired image."""
    by_key: dict[tuple[str, str], list[tuple[str | None, str]]] = {}
    by_token: dict[tuple[str, str], dict[str, list[str]]] = {}
    for path in sorted(files):
        folder, name = os.path.split(path)
        stem = strip_extension(name)
        if not _ROLE_HINT.search(stem):
            # No role word at all (most masks: 00001.png): the name is its own key.
            by_key.setdefault((folder, stem.lower()), []).append((None, path))
            continue
        key, role = name_key(stem)
        by_key.setdefault((folder, key), []).append((role, path))
        for template, token_role in _role_templates(stem):
            by_token.setdefault((folder, template), {}).setdefault(token_role, []).append(path)
    result = Pairing()
    claimed: set[str] = set()
    for members in by_key.values():
        labels = [p for role, p in members if role == "label"]
        images = [p for role, p in members if role == "image"] or [p for role, p in members if role is None]
        if labels and images:
            _claim(result, labels, images, claimed)
    for slot in by_token.values():
        labels = [p for p in slot.get("label", []) if p not in claimed]
        images = [p for p in slot.get("image", []) if p not in result.pairs]
        if labels and images:
            _claim(result, labels, images, claimed)
    return result


def _claim(result: Pairing, labels: list[str], images: list[str], claimed: set[str]) -> None:
    claimed.update(images)
    for label in labels:
        if label in result.pairs or label in images:
            continue
        if len(images) == 1:
            result.pairs[label] = images[0]
        else:
            result.ambiguous[label] = images


# ---- paths --------------------------------------------------------------------------------

def inside_root(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or lies below it (both made absolute and normalised;
    links are not followed, as loaders open the path as written)."""
    return _below(os.path.abspath(path), os.path.abspath(root))


def _below(path: str, root: str) -> bool:
    """:func:`inside_root` of two absolute, normalised paths."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def display_path(path: str) -> str:
    """``path`` relative to the current directory when inside it, else absolute."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd:
        return "."
    if _below(absolute, cwd):
        return os.path.relpath(absolute, cwd)
    return absolute


def walk_files(root: str, skip_dirs: frozenset[str] = frozenset()) -> list[str]:
    """Every file under ``root`` (sorted, hidden entries skipped), without the ``skip_dirs``."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip_dirs)
        for name in sorted(files):
            if not name.startswith("."):
                found.append(os.path.join(directory, name))
    return found


# ---- lists --------------------------------------------------------------------------------

@dataclass
class ListSelection:
    """The files a set of lists names, and the findings about the lists themselves."""

    paths: list[str] = field(default_factory=list)  # resolved mask/annotation files, in order
    pairs: dict[str, str] = field(default_factory=dict)  # label path -> image path named beside it
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
        shown = shorten(lines, SHOWN, lambda n: f"line {n}" + (
            f" {listing.examples[n]!r}" if problem in ("whitespace", "comment", "duplicate") else ""))
        findings.append(UNCLEAN_LIST.finding(
            display,
            f"the list {_LIST_PROBLEMS.get(problem, problem)}: {shown}",
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


def stem_index(candidates: list[str]) -> dict[str, list[str]]:
    """Stem and :func:`pair_key` -> the ``candidates`` that have it, for entries named without
    folder or extension."""
    by_stem: dict[str, list[str]] = {}
    for path in candidates:
        base = os.path.basename(path)
        by_stem.setdefault(strip_extension(base).lower(), []).append(path)
        key = pair_key(base)
        if key != strip_extension(base).lower():
            by_stem.setdefault(key, []).append(path)
    return by_stem


def select_from_lists(
    lists: tuple[str, ...],
    root: str,
    candidates: list[str],
    extensions: tuple[str, ...],
) -> ListSelection:
    """Resolve every list entry against ``root`` (with or without extension, or by stem
    among ``candidates``); LG003/LG004/LG005 on the lists.

    An "image label" line names the label last; its image is kept as the label's pair. A
    line that names only an image (a list of image paths) selects the one label that shares
    its name."""
    selection = ListSelection()
    root_abs = os.path.abspath(root)
    by_stem = stem_index(candidates)
    candidate_set = set(candidates)
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
            # A whole line of several fields is only ever a file name with spaces, never a stem.
            whole = resolve_entry(entry.text, root_abs, list_dir, by_stem if len(entry.fields) == 1 else {},
                                  extensions)
            if whole[0] or len(entry.fields) == 1:
                parts = [(entry.text, whole)]
            else:
                parts = [(name, resolve_entry(name, root_abs, list_dir, by_stem, extensions))
                         for name in entry.fields]
            found = []
            for name, (path, escaped) in parts:
                if path is None and len(parts) > 1 and name.lstrip("+-").isdigit():
                    continue  # a number beside a name (VOC's "id 1", "path class") names no file
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
            if len(found) == 1 and found[0] not in candidate_set:
                # An image named alone: its label is the candidate that shares its stem.
                stem = strip_extension(os.path.basename(found[0])).lower()
                labels = by_stem.get(stem) or by_stem.get(pair_key(os.path.basename(found[0]))) or []
                if len(set(labels)) == 1:
                    found = [found[0], labels[0]]
            target = found[-1]  # "image label" lines name the label last
            if target not in chosen:
                chosen.add(target)
                selection.paths.append(target)
                if len(found) > 1 and found[0] != target:
                    selection.pairs[target] = found[0]
        for line, name in missing:
            selection.findings.append(MISSING.finding(
                shown, f"line {line}: {name!r} does not exist under {display_path(root_abs)}",
                hint="Regenerate the list from the files on disk, or restore the file.",
                line=line, entry=name,
            ))
    return selection


def resolve_entry(name: str, root: str, list_dir: str, by_stem: dict[str, list[str]],
                  extensions: tuple[str, ...]) -> tuple[str | None, bool]:
    """(path or None, escapes_root) for one list entry.

    Entries resolve against the root, then the list's folder, with or without one of
    ``extensions``, then by stem among the dataset's files (only when one file has it). A
    leading '/' is read as root-relative first (CamVid lists), then as a real absolute path.
    """
    relative = name.lstrip("/\\") if os.path.isabs(name) else name
    for base in (root, list_dir):
        path = os.path.normpath(os.path.join(base, relative))
        for candidate in (path, *(path + ext for ext in extensions)):
            if os.path.isfile(candidate):
                return candidate, not inside_root(candidate, root)
    if os.path.isabs(name) and os.path.isfile(name):
        absolute = os.path.abspath(name)
        return absolute, not inside_root(absolute, root)
    if not inside_root(os.path.join(root, relative), root):
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


def holds_yolo_rows(path: str) -> bool:
    """True when the first lines of a text file are YOLO rows (a class id and 4 or more
    numbers); an empty file counts when it sits in a ``labels`` folder (an image without
    objects)."""
    try:
        head = read_head(path, 4096)
    except ReadError:
        return False
    lines = [line.split() for line in head.decode("utf-8", errors="replace").splitlines()[:5] if line.strip()]
    if not lines:
        return os.path.basename(os.path.dirname(os.path.abspath(path))).lower() == "labels"
    for fields in lines:
        if len(fields) < 5 or not fields[0].isdigit():
            return False
        try:
            [float(f) for f in fields[1:]]
        except ValueError:
            return False
    return True


# ---- what a folder holds ------------------------------------------------------------------

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".gif"})
_DESCRIBE_LIMIT = 100_000
_KINDS_SHOWN = 6


def missing_reason(path: str) -> str:
    """Why ``path``, which is neither a file nor a folder to read, gives nothing: it does not
    exist, or it is a named pipe, socket or device (never opened)."""
    if os.path.exists(path):
        return "not a regular file or folder (a named pipe, socket or device): not read"
    if os.path.lexists(path):
        return "a symbolic link to nothing (no such file or directory at its target)"
    return "no such file or directory"


def describe_contents(root: str) -> str:
    """What ``root`` holds, by extension: "12 .jpg images, 3 .txt files and 1 .xml file", or
    why nothing is there (no such folder, an empty folder)."""
    if os.path.isfile(root):
        if root.lower().endswith(".txt"):
            try:
                entries = sum(1 for line in read_bytes(root, "list").splitlines() if line.strip())
            except ReadError:
                return f"the file {display_path(root)}, which cannot be read"
            return f"the list {display_path(root)} with {entries} entr{'y' if entries == 1 else 'ies'}"
        return f"the file {display_path(root)}"
    if not os.path.isdir(root):
        return missing_reason(root)
    counts: Counter = Counter()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith("."):
                lower = name.lower()
                counts[".nii.gz" if lower.endswith(".nii.gz") else os.path.splitext(lower)[1]] += 1
        if sum(counts.values()) >= _DESCRIBE_LIMIT:
            break
    if not counts:
        return "an empty folder"
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = []
    for ext, count in ranked[:_KINDS_SHOWN]:
        kind = "image" if ext in IMAGE_EXTENSIONS else "file"
        parts.append(f"{count} {ext or 'extension-less'} {kind}{'s' if count > 1 else ''}")
    rest = sum(count for _, count in ranked[_KINDS_SHOWN:])
    if rest:
        parts.append(f"{rest} other file{'s' if rest > 1 else ''}")
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return ("at least " if sum(counts.values()) >= _DESCRIBE_LIMIT else "") + text
