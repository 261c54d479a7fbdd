"""The one discovery and pairing engine: which files a dataset holds, which image pairs with
which label, and the path policies every layout shares.

A layout only declares its roles (:class:`Role`: its images, labels, annotations, masks, each
in its folder), its lists' naming rule (:class:`ListRule`) and, where its tools derive a
label's path from the image's, that function; this module decides:

* **pairing** (:func:`pair_files`): images and labels in two folder trees meet by the longest
  name they share. Keys are tried from the most to the least specific, and the first that
  matches wins: the relative folder + the whole stem; the folder + the stem without the
  naming conventions of known tools (:mod:`labelguard.layouts.conventions`: mmsegmentation
  ``_img``/``_gt``, Cityscapes ``_leftImg8bit``/``_gtFine_labelIds``, DeepGlobe
  ``_sat``/``_mask``, ``_label``, ``_seg``...); the same with nnU-Net's ``_0000`` channel suffix
  dropped from images; the longest leading part of the label's stem, cut at a separator,
  that is an image's stem; and, last, the stem alone across folders when one image has it.
  Several images under one key are the channels of one case when they differ only by the
  channel suffix (they all count as used); otherwise the label is *ambiguous*: it is paired
  with none of them and none of them is reported as an orphan.
* **derived labels** (:func:`pair_derived`): the label's path follows from the image's, as a
  loader computes it (Ultralytics' ``images/`` -> ``labels/`` and ``.txt``, darknet's label
  beside its image).
* **roles in one folder** (:func:`pair_in_folder`): files side by side whose names differ by a
  role word (MONAI ``anatomical.nii`` + ``anatomical_label.nii.gz``, StarDist ``img2d.tif`` +
  ``mask2d.tif``, ``x_data.npy`` + ``x_label.npy``). A file found to be an image there is
  never audited as a label.
* **lists** (:func:`select_from_lists`): every list file (``--list``, VOC's ImageSets, a
  data.yaml's .txt splits, darknet's train.txt) is read once, its entries resolved by the
  layout's naming rule (paths, stems, VOC ids, images whose labels follow from them); an
  entry that names an image selects the image's labels, never the image.
* **path policy**: :func:`~labelguard.core.paths.inside_root` is the one test of "this path
  lies inside the dataset root" (:func:`~labelguard.core.paths.resolves_inside` the same with
  links resolved); :func:`resolve_entry` the one resolution of a name written in a list or a
  dataset file, :func:`resolve_declared` of a path a dataset file declares in a field;
  :func:`entry_findings` makes every LG003 (names no file) and LG005 (leads outside the
  root) about such names, with one cap (:data:`ENTRY_FINDINGS`) and a count of the rest;
  :func:`read_list` gives LG004 (unclean lines); :func:`read_metadata` LG001 for a metadata
  file that cannot be read, LG005 for one that is a link out of the dataset
  (:func:`linked_outside`).
* **the dataset root** of what metadata names is the folder of the file that names it (a
  data.yaml's or obj.data's folder, or the folder below it that a data.yaml's ``path``
  names), or the root of the layout that reads a list; every path a field names (splits,
  list files, names files, a saved dataset's data files) and every list entry must lie in
  it, as written and, for the declared paths and the metadata files themselves, with links
  resolved. What leaves it is LG005 naming the field or line, and is never opened, listed
  or walked: its content never reaches a report. A metadata file found by convention (a
  class list, a colour map, a dataset.json) in the dataset or one of its role folders must
  lie inside the layout's root once links are resolved (:func:`linked_outside`), never
  merely inside its own folder, which may itself be a link. Below all of this, no link in
  the data is followed outside what the audit was given (:mod:`labelguard.core.paths`).
* **what a folder holds** (:func:`describe_contents`): the counts by file kind that a report
  gives when an audit found nothing to audit.

Every function is deterministic (sorted input, first match by sort order) and runs in
O(n log n) on n files: keys are looked up in dictionaries, never compared pairwise.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Container, Iterable, Sequence, TypeVar

from labelguard.core import storage
from labelguard.checks.files import ESCAPES_ROOT, LINK_HINT, MISSING, UNCLEAN_LIST, UNPAIRED, UNREADABLE
from labelguard.core.cache import note_folder
from labelguard.core.paths import display_path, inside_root, resolves_inside, take_refused
from labelguard.core.text import SHOWN, clipped, plural, shorten, verb
from labelguard.core.findings import Finding
from labelguard.layouts.conventions import (
    IMAGE_PREFIXES, IMAGE_SUFFIXES, IMAGE_TOKENS, LABEL_PREFIXES, LABEL_SUFFIXES, LABEL_TOKENS,
)
from labelguard.readers.base import IMAGE_EXTENSIONS, ReadError, read_bytes, read_head
from labelguard.readers.lists import ListFile, parse_list

T = TypeVar("T")

# ---- names --------------------------------------------------------------------------------
# The conventions themselves are data in labelguard.layouts.conventions; these are the
# engine's look-ups built from them.

_SEPARATORS = "_-. "
# File systems that usually fold case (a listing then cannot tell that "A.PNG" opens "a.png").
CASE_FOLDING = sys.platform in ("darwin", "win32", "cygwin")
_LABEL_WORDS = frozenset(w.lower() for w in LABEL_SUFFIXES)
_IMAGE_WORDS = frozenset(w.lower() for w in IMAGE_SUFFIXES)
# The last part of every convention: a name ending otherwise carries none.
_TAIL_ENDS = frozenset(w.rsplit("_", 1)[-1] for w in _LABEL_WORDS | _IMAGE_WORDS)
_PREFIX_ROLES = {**{w: "label" for w in LABEL_PREFIXES}, **{w: "image" for w in IMAGE_PREFIXES}}
_CHANNEL = re.compile(r"_\d{4}$")

_ROLE_SPLIT = re.compile(r"([_\-. ])")
# A role word that runs into a number (StarDist's img2d / mask2d).
_WORD_NUMBER = re.compile(r"([A-Za-z]+)(\d.*)$")
# A number that is a whole token (no letter runs into it: ``mask2d`` and ``leftImg8bit`` keep
# theirs); no naming convention has one, so names that differ only in them have one role.
_NUMBER_TOKEN = re.compile(r"(?<![A-Za-z])\d+(?![A-Za-z])")
_DIGITS = "0123456789"
# The most names and shapes may_pair remembers having looked at (a memo: forgetting costs time only).
_LOOKS_KEPT = 4096

# Any word of the conventions: names without one skip the per-name regexes.
_ROLE_HINT = re.compile("|".join(sorted(
    {w.lower() for w in LABEL_SUFFIXES + IMAGE_SUFFIXES + LABEL_PREFIXES + IMAGE_PREFIXES}
    | IMAGE_TOKENS | LABEL_TOKENS, key=len, reverse=True)), re.IGNORECASE)


_DOUBLE_TAILS = (".gz", ".h5")  # the last part of the extensions strip_extension takes whole


def strip_extension(name: str) -> str:
    """``name`` without its extension (``.nii.gz`` and ``.npy.h5`` count as one), as
    :func:`os.path.splitext` cuts it: a name of only leading dots has none."""
    if name[-3:].lower() in _DOUBLE_TAILS:
        lower = name.lower()
        for ext in (".nii.gz", ".npy.h5"):
            if lower.endswith(ext):
                return name[: -len(ext)]
    dot = name.rfind(".")
    start = name.rfind(os.sep) + 1
    if dot <= start or not name[start:dot].strip("."):
        return name
    return name[:dot]


def _extension(path: str) -> str:
    """The extension :func:`strip_extension` cuts from ``path``."""
    cut = path.rfind(os.sep) + 1
    dot = path.rfind(".")
    if dot > cut and path[cut] != "." and path[-3:].lower() not in _DOUBLE_TAILS:
        return path[dot:]
    return path[len(strip_extension(path)):]


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
    relative = storage.relpath(os.path.dirname(path), root)
    return "" if relative == "." else relative


_UNNORMAL = os.sep + "."  # "/./", "/../" (or a hidden folder): left to relpath


def _relative_stems(root: str, paths: Sequence[str]) -> list[str]:
    """Each of ``paths`` below ``root`` without its extension (``sub/x`` for
    ``root/sub/x.jpg``): by slicing for the paths :func:`walk_files` gives, which start
    with ``root`` as written, else through :func:`os.path.relpath`."""
    prefix = os.path.join(root, "") if root else None
    start = len(prefix) if prefix else 0
    double = os.sep * 2
    found = []
    for path in paths:
        cut = path.rfind(os.sep) + 1
        name = path[cut:]
        dot = name.rfind(".")
        # The common name (x.jpg) without strip_extension's rules for .nii.gz and dot files.
        stem = name[:dot] if dot > 0 and name[0] != "." and name[-3:].lower() not in _DOUBLE_TAILS \
            else strip_extension(name)
        if prefix is None or not path.startswith(prefix) or path.find(_UNNORMAL, start - 1) >= 0 \
                or path.find(double, start - 1) >= 0:
            folder = _folder_of(path, root)
            found.append(os.path.join(folder, stem) if folder else stem)
        else:
            found.append(path[start:cut] + stem)
    return found


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
    # Image folder -> its images, for the image sub-folders whose counterpart holds no label at
    # all (img_dir/test/ beside ann_dir/train/ alone): a split published without its labels,
    # as test splits are, whose images are no orphans.
    unlabelled: dict[str, list[str]] = field(default_factory=dict)

    def notes(self, what: str = "label") -> list[str]:
        found = []
        if self.ambiguous:
            label, images = next(iter(sorted(self.ambiguous.items())))
            count = len(self.ambiguous)
            found.append(f"{plural(count, what)} {verb(count, 'matches')} several images by name (e.g. "
                         f"{display_path(label)}: {', '.join(display_path(i) for i in images[:3])}); "
                         "their image sizes are not compared")
        if self.unlabelled:
            count = sum(len(images) for images in self.unlabelled.values())
            folders = shorten(sorted(self.unlabelled), SHOWN, display_path, what="folder")
            found.append(f"{plural(count, 'image')} in {folders}: no {what} lies in the matching folder of "
                         f"the {what} folder, as in a split published without {what}s (test splits are); "
                         "not paired, not reported as orphans")
        return found


def labels_by_image(pairs: dict[str, str]) -> dict[str, list[str]]:
    """Image -> the labels paired with it, from pairs label -> image."""
    found: dict[str, list[str]] = {}
    for label, image in pairs.items():
        found.setdefault(image, []).append(label)
    return found


def _channels_of_one_case(candidates: list[str]) -> bool:
    stems = {_CHANNEL.sub("", strip_extension(os.path.basename(p))).lower() for p in candidates}
    return len(stems) == 1 and all(_CHANNEL.search(strip_extension(os.path.basename(p))) for p in candidates)


def pair_files(images: list[str], labels: list[str], image_root: str, label_root: str) -> Pairing:
    """Pair ``labels`` under ``label_root`` with ``images`` under ``image_root`` (see the
    module docstring for the keys, in order)."""
    if not images:
        return Pairing(orphan_labels=list(labels))
    stream = PairingStream(images, image_root, label_root)
    pairs = {}
    for label in labels:
        image = stream.image_of(label)
        if image is not None:
            pairs[label] = image
    result = stream.finish()
    result.pairs = pairs
    return result


class PairingStream:
    """:func:`pair_files` for labels that come one at a time, as discovery walks their
    folder: it keeps the images' keys (and, for the orphans, which images were used), never
    the labels it paired.

    Most datasets pair by the exact folder and stem (VOC, Ultralytics, most masks); the keys
    of the naming conventions are built only when some label is left over. A label's pair
    does not depend on the labels before it, so pairing one at a time gives what pairing
    all at once gives."""

    def __init__(self, images: list[str], image_root: str, label_root: str) -> None:
        self.label_root = label_root
        self.exact: dict[str, list[str]] = {}
        images = sorted(images)
        for path, key in zip(images, _relative_stems(image_root, images)):
            self.exact.setdefault(key.lower(), []).append(path)
        self.used: set[str] = set()
        self.label_folders: set[str] = set()  # the labels' folders relative to the label root
        self.result = Pairing()
        self._conventions: tuple[dict, dict, dict] | None = None

    def image_of(self, label: str) -> str | None:
        """The image ``label`` pairs with, or None (an orphan, or ambiguous)."""
        key = _relative_stems(self.label_root, [label])[0]
        folder, _, stem = key.rpartition(os.sep)
        self.label_folders.add(folder.lower())
        candidates = self.exact.get(key.lower())
        if not candidates:
            candidates = self._by_conventions(folder.lower(), stem)
        if not candidates:
            self.result.orphan_labels.append(label)
            return None
        self.used.update(candidates)
        if len(candidates) == 1 or _channels_of_one_case(candidates):
            return candidates[0]
        self.result.ambiguous[label] = candidates
        return None

    def finish(self) -> Pairing:
        """The orphans and ambiguous labels (``pairs`` is left empty: they were given); the
        images of a sub-folder whose counterpart holds no label are no orphans, but
        ``unlabelled``."""
        orphans = []
        for key, paths in self.exact.items():
            alone = [p for p in paths if p not in self.used]
            folder = key.rpartition(os.sep)[0]
            if alone and folder and self.label_folders and folder not in self.label_folders:
                for path in alone:
                    self.result.unlabelled.setdefault(os.path.dirname(path), []).append(path)
            else:
                orphans.extend(alone)
        self.result.orphan_images = sorted(orphans)
        return self.result

    def _by_conventions(self, folder: str, stem: str) -> list[str] | None:
        """The keys after the exact stem: the stem without tool conventions, without the
        channel suffix, its longest leading part, the stem anywhere."""
        if self._conventions is None:
            self._conventions = self._convention_keys()
        keyed, channel, anywhere = self._conventions
        key = name_key(stem)[0]
        candidates = keyed.get((folder, key)) or channel.get((folder, key))
        if not candidates:
            candidates = next((channel[(folder, part)] for part in _leading_parts(key)
                               if (folder, part) in channel), None)
        if not candidates:
            found = anywhere.get(key)
            candidates = found if found and (len(found) == 1 or _channels_of_one_case(found)) else None
        return candidates

    def _convention_keys(self) -> tuple[dict, dict, dict]:
        """The images by their keys without conventions (in their folder, with the channel
        suffix dropped, and anywhere), each list in the images' sorted order. The exact keys
        are lower case, as every key after them is."""
        keyed: dict[tuple[str, str], list[str]] = {}
        channel: dict[tuple[str, str], list[str]] = {}
        anywhere: dict[str, list[str]] = {}
        for exact, paths in self.exact.items():
            folder, _, stem = exact.rpartition(os.sep)
            key = name_key(stem)[0]
            channel_key = name_key(stem, channel=True)[0] if _CHANNEL.search(stem) else key
            keyed.setdefault((folder, key), []).extend(paths)
            channel.setdefault((folder, channel_key), []).extend(paths)
            anywhere.setdefault(channel_key, []).extend(paths)
        for table in (keyed, channel, anywhere):
            for paths in table.values():
                paths.sort()
        return keyed, channel, anywhere


def pair_derived(images: list[str], label_files: Callable[[str], Sequence[str]],
                 labels: Sequence[str] = ()) -> Pairing:
    """Pairs where a label's path follows from its image's, as a loader derives it
    (Ultralytics: the last ``/images/`` becomes ``/labels/``, the extension ``.txt``).

    ``label_files(image)`` gives the paths the loader tries, in order; the first that
    exists (among ``labels``, the label files found on disk, else on the file system) is the
    image's label. Images whose label does not exist are ``orphan_images`` (Ultralytics
    takes them for background images); ``labels`` that no image names are ``orphan_labels``.
    Two images may name one label file (``a.jpg`` and ``a.png``): the first is its pair."""
    known = set(labels)
    result = Pairing()
    for image in images:
        label = derived_label(image, label_files, known)
        if label is None:
            result.orphan_images.append(image)
        else:
            result.pairs.setdefault(label, image)
    result.orphan_labels = [label for label in labels if label not in result.pairs]
    return result


def derived_label(image: str, label_files: Callable[[str], Sequence[str]],
                  known: Container[str] = frozenset()) -> str | None:
    """The first of ``label_files(image)`` that exists (in ``known``, else on disk), or None."""
    return next((path for path in label_files(image) if path in known or storage.isfile(path)), None)


def pair_in_folder(files: list[str]) -> Pairing:
    """Pairs (label -> image) among files that lie side by side, told apart by role words.

    Only files that meet a partner are paired; ``orphan_*`` stay empty, since a lone file in
    a folder of masks is a mask, not an unpaired image. Files that cannot pair (no name says
    label, or none can be an image) are told in one pass that keeps nothing: a folder of
    100,000 masks costs no index."""
    return _pair_in_folder(files) if may_pair(files) else Pairing()


def _pair_in_folder(files: list[str]) -> Pairing:
    """:func:`pair_in_folder` without its first look at whether any two files may pair."""
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


def may_pair(files: Iterable[str]) -> bool:
    """False when no two of ``files`` can pair in :func:`pair_in_folder`: none is a label by
    its name (a label suffix or prefix, a label word), or none can be an image (an image
    word, or no role from its name, which a plain name has)."""
    label = image = False
    seen: set[str] = set()
    looked: set[str] = set()
    for path in files:
        stem = strip_extension(path[path.rfind(os.sep) + 1:])
        # A cheap look first: names that differ only in a last number (mask_000001 ...
        # mask_100000) are one look (as one shape, below, without its regexes).
        body = stem.rstrip(_DIGITS)
        key = stem if len(body) == len(stem) or body[-1:].isalpha() else body + "\0"
        if key in looked:
            continue
        if len(looked) >= _LOOKS_KEPT:  # a folder of names all unlike: memory stays bounded
            looked.clear()
            seen.clear()
        looked.add(key)
        if not _ROLE_HINT.search(stem):
            image = True
        else:
            # Names that differ only in their numbers have the same roles: one look per shape
            # (mask_000001 ... mask_100000 are one).
            shape = _NUMBER_TOKEN.sub("0", stem)
            if shape in seen:
                continue
            seen.add(shape)
            role = name_key(stem)[1]
            label = label or role == "label"
            image = image or role != "label"
            for _, token_role in _role_templates(stem):
                label = label or token_role == "label"
                image = image or token_role == "image"
        if label and image:
            return True
    return False


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

def walk_files(root: str, skip_dirs: frozenset[str] = frozenset()) -> list[str]:
    """Every file under ``root`` (sorted, hidden entries skipped), without the ``skip_dirs``."""
    return list(storage.iter_files(root, skip_dirs))


def relative_files(folder: str) -> list[tuple[str, str]]:
    """(path relative to ``folder``, path) of every file under ``folder``, sorted."""
    start = len(folder.rstrip(os.sep)) + 1
    return [(path[start:], path) for path in walk_files(folder)]


def display_paths(paths: Sequence[str]) -> list[str]:
    """:func:`display_path` of each of ``paths``, the folder of each worked out once."""
    shown = DisplayNames()
    return [shown(path) for path in paths]


class DisplayNames:
    """:func:`display_path` of paths one at a time, each folder's display path worked out
    once and kept (one entry per folder, never per file)."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        folder, sep, name = path.rpartition(os.sep)
        shown = self.folders.get(folder + sep)
        if shown is None:
            shown = self.folders[folder + sep] = display_path(folder or sep or os.curdir)
        return name if shown == os.curdir else os.path.join(shown, name)


# ---- lists --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ListRule:
    """How the entries of one kind of list name files: a naming rule a layout declares.

    Attributes:
        extensions: tried after an entry written without one.
        ids: entries are ids (Pascal VOC's ImageSets): the first field of a line is a file's
            path below its role's folder, without extension, matched exactly (per-class lists
            add ``1`` / ``-1`` after it). An id is never looked for elsewhere.
        stems: an entry may name a file by its stem alone (mmsegmentation splits), when one
            file has that stem.
        loose: a leading ``../`` or leading folders may be dropped from an entry, as trainers
            do (darknet's ``data/``, Roboflow's ``../``).
        folders: an entry may name a folder (the splits of a data.yaml).
        images: entries name images, and each image's label follows from it (Ultralytics
            and darknet image lists); otherwise an entry names the label file itself.
        required: the role an entry must have a file of ("annotation", "mask"); None: any.
        images_suffice: an entry whose image has no label is not missing (a VOC test split
            comes without annotations; Ultralytics takes such an image for a background).
    """

    extensions: tuple[str, ...] = ()
    ids: bool = False
    stems: bool = True
    loose: bool = False
    folders: bool = False
    images: bool = False
    required: str | None = None
    images_suffice: bool = False


@dataclass(frozen=True)
class Role:
    """Files that play one part in a dataset (its annotations, masks or images), as a
    layout declares them.

    Attributes:
        name: what the files are, in messages ("annotation", "mask", "image").
        files: the files found.
        folder: the folder a loader opens them in by id (VOC's ``Annotations/<id>.xml``);
            None when they are named by path only.
        extension: the extension an id gets there, in messages (".xml"; "" for any).
    """

    name: str
    files: Sequence[str]
    folder: str | None = None
    extension: str = ""

    def expected(self, name: str, root: str) -> str:
        """Where a loader opens the file of id ``name``, as shown (``Annotations/x.xml``)."""
        where = os.path.join(self.folder or root, name + (self.extension or ".*"))
        return storage.relpath(where, root) if inside_root(where, root) else display_path(where)


def image_sets_rule(list_path: str, root: str, required: str, extensions: tuple[str, ...]) -> ListRule:
    """The naming rule of a list of a Pascal VOC folder ``root``: under ``ImageSets`` (Main,
    Segmentation, Action, Layout), image ids of which a test split may come without labels
    (VOC2012's test images are published without annotations or masks); elsewhere, paths
    or stems of the files ``extensions`` name."""
    if inside_root(list_path, os.path.join(root, "ImageSets")):
        return ListRule(ids=True, required=required, images_suffice="test" in os.path.basename(list_path).lower())
    return ListRule(extensions=extensions)


@dataclass
class ListSelection:
    """The files a set of lists names, and the findings about the lists themselves."""

    paths: list[str] = field(default_factory=list)  # resolved label files (masks, annotations), in order
    pairs: dict[str, str] = field(default_factory=dict)  # label path -> the image named with it
    unlabelled: list[str] = field(default_factory=list)  # images named where images suffice, without a label
    findings: list[Finding] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)  # the list files read, as given


@dataclass(frozen=True)
class EntryProblem:
    """An entry of a list or dataset file that names no file, or a file outside the root.

    Attributes:
        place: where it is written ("line 3", or the key of a dataset file: "test").
        entry: the entry as written.
        says: what is wrong with it, when that is not that it does not exist under the root
            (LG003) or points outside it (LG005).
        detail: what was looked for, said after that ("no Annotations/x.xml").
        data: the finding's data (``line`` or ``split``).
    """

    place: str
    entry: str
    says: str = ""
    detail: str = ""
    data: tuple[tuple[str, object], ...] = ()


# Findings of one kind (LG003, LG005) made for the entries of one list, one each; the
# entries past them are counted and named in one more finding.
ENTRY_FINDINGS = 100
# Entries the finding of the rest names in its data (a report stays small); its count says all.
ENTRIES_KEPT = 1000
LIST_HINT = "Regenerate the list from the files on disk, or restore the file."
# Characters of one entry a finding quotes: a path is shorter; a longer line (a key, a dump
# read as a list) is cut, so that a file named as a list is never copied into the report.
ENTRY_SHOWN = 256


def entry_findings(source: str, missing: Sequence[EntryProblem], escaping: Sequence[EntryProblem],
                   root: str, hint: str = LIST_HINT, escape_hint: str = "") -> list[Finding]:
    """LG003 for the entries of ``source`` (a list, a dataset file) that name no file and
    LG005 for those that lead outside ``root``: the one place these findings are made.

    The first :data:`ENTRY_FINDINGS` problems of each kind are a finding each; the rest are
    one finding that says how many there are (``count``) and names the first of them (its
    data holds the first :data:`ENTRIES_KEPT`), so that a list of 50,000 stale entries is
    not 50,000 findings, a report stays small and nothing is left out silently. An entry is
    quoted up to :data:`ENTRY_SHOWN` characters. ``hint`` goes with the LG003 findings,
    ``escape_hint`` with the LG005 ones."""
    findings = []
    shown = display_path(root)
    for check, problems, says, what, check_hint in (
            (ESCAPES_ROOT, escaping, f"points outside the dataset root {shown}",
             f"point outside the dataset root {shown}", escape_hint),
            (MISSING, missing, f"does not exist under {shown}", f"name no file under {shown}", hint)):
        for problem in problems[:ENTRY_FINDINGS]:
            detail = f" ({problem.detail})" if problem.detail else ""
            entry = clipped(problem.entry, ENTRY_SHOWN)
            findings.append(check.finding(source, f"{problem.place}: {entry!r} {problem.says or says}{detail}",
                                          hint=check_hint, **dict(problem.data), entry=entry))
        rest = problems[ENTRY_FINDINGS:]
        if rest:
            kept = rest[:ENTRIES_KEPT]
            data: dict[str, Any] = {"entries": [clipped(p.entry, ENTRY_SHOWN) for p in kept], "count": len(rest)}
            for key in dict.fromkeys(key for p in kept for key, _ in p.data):
                data[f"{key}s"] = [dict(p.data).get(key) for p in kept]
            findings.append(check.finding(
                source,
                f"{plural(len(rest), 'more entry')} {what}: "
                f"{shorten(rest, SHOWN, lambda p: f'{p.place} {clipped(p.entry, ENTRY_SHOWN)!r}', what='entry')}",
                hint=check_hint, **data,
            ))
    return findings


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
            f" {clipped(listing.examples[n], ENTRY_SHOWN)!r}" if problem in ("whitespace", "comment", "duplicate")
            else ""))
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


def stem_index(candidates: Sequence[str]) -> dict[str, list[str]]:
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


def _may_carry_convention(stem: str) -> bool:
    """False when :func:`name_key` leaves ``stem`` as it is (but for case): it ends in no
    convention's word and starts with no role prefix, which is what most names do."""
    tail = stem[max(stem.rfind("_"), stem.rfind("-")) + 1:].lower()
    return tail in _TAIL_ENDS or stem.partition("_")[0].lower() in _PREFIX_ROLES


def _by_stem(by_stem: dict[str, list[str]], name: str) -> set[str]:
    """The files of ``by_stem`` that answer to the stem of ``name``."""
    base = os.path.basename(name)
    stem = strip_extension(base)
    found = by_stem.get(stem.lower())
    if not found and _may_carry_convention(stem):
        found = by_stem.get(pair_key(base))
    return set(found or ())


class _Lists:
    """One reading of a set of lists against a dataset's roles (see :func:`select_from_lists`)."""

    def __init__(self, root: str, roles: Sequence[Role], images: Role | None,
                 label_of: Callable[[str], Sequence[str]] | None):
        self.root = storage.abspath(root)
        self.roles = roles
        self.images = images
        self.role_of = {path: role.name for role in roles for path in role.files}
        self.image_set = frozenset(images.files) if images else frozenset()
        self.stems: list[dict[str, list[str]]] | None = None
        self.label_of = label_of
        self.ids: list[tuple[Role, _Ids]] | None = None
        self.image_ids: _Ids | None = None
        self.known: dict[str, str] | None = None
        self.selection = ListSelection()
        self.chosen: set[str] = set()
        self.listings = DirectoryListings()

    def as_found(self, path: str) -> str:
        """``path`` (resolved, absolute) as the layout found it: the label or image of that
        file in the form the layout's pairs and tasks use, else ``path`` itself."""
        if self.known is None:
            files = [*self.role_of, *self.image_set]
            self.known = {storage.abspath(file): file for file in files}
        return self.known.get(path, path)

    def read(self, list_path: str, rule: ListRule) -> None:
        # A list in the dataset (not one the user named outside it) is data: a link out of it is not read.
        outside = linked_outside(list_path, self.root, "file list") if inside_root(list_path, self.root) else []
        if outside:
            self.selection.findings.extend(outside)
            return
        self.selection.lists.append(list_path)
        listing, findings = read_list(list_path)
        self.selection.findings.extend(findings)
        if listing is None:
            return
        list_dir = os.path.dirname(storage.abspath(list_path))
        missing: list[EntryProblem] = []
        escaping: list[EntryProblem] = []
        for entry in listing.entries:
            problems = (self._by_id(entry.fields[0], rule) if rule.ids
                        else self._by_path(entry.text, entry.fields, list_dir, rule))
            for name, says, detail, escapes in problems:
                (escaping if escapes else missing).append(
                    EntryProblem(f"line {entry.line}", name, says, detail, (("line", entry.line),)))
        self.selection.findings.extend(entry_findings(display_path(list_path), missing, escaping, self.root))

    def _choose(self, label: str, image: str | None = None) -> None:
        if label not in self.chosen:
            self.chosen.add(label)
            self.selection.paths.append(label)
            if image is not None and image != label:
                self.selection.pairs[label] = image

    def _by_id(self, name: str, rule: ListRule) -> list[tuple[str, str, str, bool]]:
        """Select the files of id ``name``; the problems with it."""
        if self.ids is None:
            self.ids = [(role, _Ids(role, {p for p in role.files})) for role in self.roles]
        if (".." in name or name.startswith(("/", "\\"))) and not inside_root(os.path.join(self.root, name), self.root):
            return [(name, "", "", True)]
        found = False
        for role, by_id in self.ids:
            for label in by_id.get(name):
                self._choose(label)
                found = found or rule.required in (None, role.name)
        if found:
            return []
        if self.image_ids is None and self.images is not None:
            self.image_ids = _Ids(self.images, self.image_set)
        images = self.image_ids.get(name) if self.image_ids is not None else []
        if images and rule.images_suffice:
            self.selection.unlabelled.append(images[0])
            return []
        looked = "no " + " or ".join(role.expected(name, self.root) for role, _ in self.ids
                                     if rule.required in (None, role.name))
        if images:
            looked += f" for its image {display_path(images[0])}"
        elif rule.images_suffice and self.images is not None:
            looked += f", no image {self.images.expected(name, self.root)}"
        return [(name, "", looked, False)]

    def _by_path(self, text: str, fields: tuple[str, ...], list_dir: str,
                 rule: ListRule) -> list[tuple[str, str, str, bool]]:
        """Select the files a line names by path; the problems with it."""
        # A whole line of several fields is only ever a file name with spaces, never a stem.
        whole = self._resolve(text, list_dir, rule, stems=rule.stems and len(fields) == 1)
        if whole[0] or len(fields) == 1:
            parts = [(text, whole)]
        else:
            parts = [(name, self._resolve(name, list_dir, rule, rule.stems)) for name in fields]
        found = []
        problems = []
        for name, (paths, escapes) in parts:
            if not paths and len(parts) > 1 and name.lstrip("+-").isdigit():
                continue  # a number beside a name (VOC's "id 1", "path class") names no file
            if escapes:
                problems.append((name, "", "", True))
            elif not paths:
                problems.append((name, "", "", False))
            else:
                found.append(paths)
        if len(found) > 1:
            for label in found[-1]:  # "image label" lines name the label last
                self._choose(label, found[0][0])
        elif found and len(found[0]) > 1:
            for label in found[0]:  # a stem that names a label of each role (VOC: x.xml and x.png)
                self._choose(label)
        elif found:
            problems.extend(self._named_alone(text, found[0][0], rule))
        return problems

    def _resolve(self, name: str, list_dir: str, rule: ListRule, stems: bool) -> tuple[list[str], bool]:
        """(the files ``name`` names, escapes the root): the file it resolves to, as the
        layout found it; else, by stem, the one label of each role that has that stem."""
        path, escapes = resolve_entry(name, self.root, list_dir, rule, self.listings)
        if path is not None:
            return [self.as_found(path)], escapes
        if escapes or not stems:
            return [], escapes
        return self._by_stems(name), False

    def _by_stems(self, name: str) -> list[str]:
        """The labels that answer to the stem of ``name``: one of each role that has exactly
        one (a stem shared by an annotation and a mask names both, never neither)."""
        if self.stems is None:
            self.stems = [stem_index(role.files) for role in self.roles]
        found = []
        for index in self.stems:
            matches = _by_stem(index, name)
            if len(matches) == 1:
                found.append(matches.pop())
        return found

    def _named_alone(self, text: str, path: str, rule: ListRule) -> list[tuple[str, str, str, bool]]:
        """Select what a line naming one file selects: a label itself; for an image, its
        labels (a problem when it has none and images do not suffice)."""
        if path in self.role_of:
            self._choose(path)
            return []
        is_image = rule.images or path in self.image_set
        labels = self._labels_of(path)
        for label in labels:
            self._choose(label, path)
        if labels:
            return []
        if not is_image:
            self._choose(path)  # a file the layout did not find, named as a label
        elif rule.images_suffice:
            self.selection.unlabelled.append(path)
        else:
            what = rule.required or (self.roles[0].name if len(self.roles) == 1 else "label")
            return [(text, f"is an image without {_article(what)} {what}", display_path(path), False)]
        return []

    def _labels_of(self, image: str) -> list[str]:
        if self.label_of is not None:
            return list(self.label_of(image))
        # Without the layout's pairing: the labels that share the image's stem.
        return self._by_stems(image)


class _Ids:
    """The files of a role by id: ``<folder>/<id><extension>``, as its loader opens them,
    looked up for each extension the role's files have (one, mostly)."""

    def __init__(self, role: Role, members: Container[str]):
        self.members = members
        self.prefix = os.path.join(role.folder or "", "")
        self.extensions = (role.extension,) if role.extension else tuple(sorted(
            {_extension(path) for path in role.files}))

    def get(self, name: str) -> Sequence[str]:
        if len(self.extensions) == 1:
            path = self.prefix + name + self.extensions[0]
            return (path,) if path in self.members else ()
        return [path for path in (self.prefix + name + ext for ext in self.extensions) if path in self.members]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def select_from_lists(
    lists: Sequence[str],
    root: str,
    candidates: Sequence[str] | Sequence[Role],
    extensions: tuple[str, ...] = (),
    *,
    rule: ListRule | Callable[[str], ListRule] | None = None,
    images: Role | None = None,
    label_of: Callable[[str], Sequence[str]] | None = None,
) -> ListSelection:
    """Read every list once and resolve its entries against ``root`` by the layout's naming
    rule: the one reading of file lists (LG004 on unclean lines, LG003 for entries that name
    no file, LG005 for entries that lead outside the root).

    Args:
        lists: the list files.
        root: the dataset root entries are relative to, and must stay inside.
        candidates: the label files an entry may name: paths, or the layout's roles (VOC's
            annotations and masks, each in its folder).
        extensions: tried after an entry written without one (when no ``rule`` is given).
        rule: the lists' naming rule, or a function of a list's path giving it.
        images: the dataset's images: an entry naming one selects its labels (``label_of``),
            never the image itself.
        label_of: image -> its label files, as the layout pairs them; by default the one
            candidate that shares the image's stem.

    Entries resolve as :func:`resolve_entry` says, or by id (:attr:`ListRule.ids`). An
    "image label" line names the label last; its image is kept as the label's pair.
    """
    if not lists:
        return ListSelection()
    roles = list(candidates) if candidates and isinstance(candidates[0], Role) else [
        Role("file", list(candidates))]  # type: ignore[arg-type]
    reading = _Lists(root, roles, images, label_of)  # type: ignore[arg-type]
    for list_path in lists:
        chosen = rule(list_path) if callable(rule) else rule or ListRule(extensions=extensions)
        reading.read(list_path, chosen)
    return reading.selection


class DirectoryListings:
    """Answers "is this path a file (or a folder)?" from one listing per folder, read the
    first time a path in it is asked about: the cost of resolving a list of millions of
    entries is its folders' listings and a dictionary look-up per entry, never a stat per try
    (a list of 2,000,000 missing entries tried with 15 extensions under two folders would
    be 60,000,000 stats).

    A name a listing lacks is confirmed with a real stat where file systems usually fold
    case (macOS, Windows), since "A.PNG" opens "a.png" there.
    """

    def __init__(self) -> None:
        self._folders: dict[str, _Listing] = {}
        self._plain: dict[tuple, tuple] = {}

    def _listing(self, folder: str) -> "_Listing":
        found = self._folders.get(folder)
        if found is None:
            found = self._folders[folder] = _Listing(folder)
        return found

    def find_plain(self, relative: str, bases: tuple[str, str], root: str, extensions: tuple[str, ...],
                   folders: bool) -> tuple[str | None, bool]:
        """:func:`resolve_entry`'s first tries for a plain relative name (no ``..``, no ``.``
        part, no backslash, not absolute), with the folder it names looked up once for all
        the names in it: (path or None, escapes the root)."""
        folder, _, name = relative.rpartition("/")
        key = (bases, folder)
        places = self._plain.get(key)
        if places is None:
            places = []
            for base in dict.fromkeys(bases):
                where = storage.normpath(os.path.join(base, folder)) if folder else base
                places.append((where, self._listing(where), inside_root(where, root)))
            places = self._plain[key] = tuple(places)
        for where, listing, inside in places:
            entries = listing.entries if folders else listing.files
            if name in entries:
                return os.path.join(where, name), not inside
            longer = listing.by_prefix.get(name)
            if longer:
                for ext in extensions:
                    if name + ext in longer and name + ext in entries:
                        return os.path.join(where, name + ext), not inside
        if CASE_FOLDING:
            find = _stat_finder(folders)
            for where, _, inside in places:
                found = find(os.path.join(where, name), extensions)
                if found is not None:
                    return found, not inside
        return None, False

    def holds(self, path: str, extensions: tuple[str, ...] = (), *, folders: bool = False) -> str | None:
        """The first of ``path`` and ``path`` + each of ``extensions`` that is a file (or, with
        ``folders``, any entry), from their folder's listing; None."""
        folder, name = os.path.split(path)
        listing = self._listing(folder)
        entries = listing.entries if folders else listing.files
        if name in entries:
            return path
        longer = listing.by_prefix.get(name)
        if longer:
            for ext in extensions:
                if name + ext in longer and name + ext in entries:
                    return path + ext
        if CASE_FOLDING:
            return _stat_finder(folders)(path, extensions)
        return None


class _Listing:
    """One folder's entries: its files, all its entries, and the names that extend a shorter
    name by an extension ("a.nii.gz" under "a" and "a.nii")."""

    __slots__ = ("files", "entries", "by_prefix")

    def __init__(self, folder: str) -> None:
        files: set[str] = set()
        entries: set[str] = set()
        note_folder(folder)  # a cached result that looked names up here depends on the listing
        try:
            with storage.scandir(folder) as scan:
                for entry in scan:
                    # As os.path.isfile and os.path.exists see them: links followed, a
                    # broken link is nothing.
                    try:
                        if entry.is_file():
                            files.add(entry.name)
                            entries.add(entry.name)
                        elif entry.is_dir() or not entry.is_symlink() or storage.exists(entry.path):
                            entries.add(entry.name)
                    except OSError:
                        pass
        except OSError:
            pass
        by_prefix: dict[str, set[str]] = {}
        for name in entries:
            dot = name.find(".", 1)
            while dot > 0:
                by_prefix.setdefault(name[:dot], set()).add(name)
                dot = name.find(".", dot + 1)
        self.files, self.entries, self.by_prefix = files, entries, by_prefix


def resolve_entry(name: str, root: str, list_dir: str, rule: ListRule,
                  listings: "DirectoryListings | None" = None) -> tuple[str | None, bool]:
    """(path or None, escapes_root) for one name written in a list or a dataset file: the
    one resolution of such names.

    Tried in order: the name under the root and the list's folder, with or without one of
    the rule's extensions; a name starting with '/' as root-relative (CamVid lists), then
    as the absolute path it is; with :attr:`ListRule.loose`, the name without a leading
    ``../`` or without leading folders, under the root and the list's folder, when that
    lands inside the root (darknet reads ``data/obj_train_data/1.jpg`` from the folder
    above its ``data/``, wherever labelguard runs). A name found outside ``root``, or that
    leads outside it and is found nowhere, escapes it. (Names that are stems are looked up
    among the dataset's files by :func:`select_from_lists`.)

    ``listings`` answers "does it exist" from one listing per folder instead of a stat per
    try: a list of many entries passes one for all of them."""
    if listings is not None and _plain(name):
        found, escapes = listings.find_plain(name, (root, list_dir), root, rule.extensions, rule.folders)
        if found is not None or not rule.loose:
            return found, escapes
    find = _stat_finder(rule.folders) if listings is None else partial(listings.holds, folders=rule.folders)
    absolute = storage.isabs(name)
    relative = name.lstrip("/\\") if absolute else name
    for base in (root, list_dir):
        found = find(storage.normpath(os.path.join(base, relative)), rule.extensions)
        if found is not None:
            return found, not inside_root(found, root)
    # A local path is never looked at for a dataset in object storage (nor a URL for a local
    # one): it lies outside the root either way.
    if absolute and bool(storage.url_scheme(name)) == bool(storage.url_scheme(root)) and find(storage.normpath(name)):
        path = storage.abspath(name)
        return path, not inside_root(path, root)
    if rule.loose and not absolute:
        for written in _loose_forms(relative):
            for base in (root, list_dir):
                found = find(storage.normpath(os.path.join(base, written)), rule.extensions)
                if found is not None and inside_root(found, root):
                    return found, False
    return None, not inside_root(os.path.join(root, relative), root)


def resolve_declared(name: str, root: str, base: str, rule: ListRule) -> tuple[str | None, bool, str]:
    """(path, leaves the dataset, why) for a path a dataset file declares in one of its fields
    (a data.yaml's ``path`` and splits, an obj.data's lists and ``names``, a saved dataset's
    data files): :func:`resolve_entry` under ``root`` and ``base``, stricter on what leaves.

    Such a path leaves ``root`` when it is written outside it, whether a file is there or not
    (an absolute path found nowhere under the root, a URL), or when it is a link, or lies in a
    linked folder, that resolves outside it (:func:`resolves_inside`). An absolute path is
    read as root-relative (as CamVid's lists write them) only under a ``loose`` rule, the
    trainers' lenient reading: a data.yaml's ``path: /`` is the file system's root, never
    the dataset's. A path that leaves comes back as None: it is never opened, listed or
    walked, and ``why`` says "a link to ..." when only its link leaves. A dataset declares a
    handful of these: each costs a ``realpath``, never a list entry or a file of the walk."""
    outside = storage.isabs(name) and not inside_root(storage.abspath(name), root)
    if outside and not rule.loose:
        return None, True, ""
    path, escapes = resolve_entry(name, root, base, rule)
    if escapes or (path is None and outside):
        return None, True, ""
    if path is not None and not resolves_inside(path, root):
        return None, True, f"a link to {display_path(os.path.realpath(path))}"
    return path, False, ""


def _plain(name: str) -> bool:
    """True for a relative name of plain parts: no ``..`` or ``.`` part, no backslash, not
    absolute, no doubled or trailing slash (it names the path it spells)."""
    return bool(name) and name[0] != "/" and "\\" not in name and "//" not in name and name[-1] != "/" and not (
        name.startswith("./") or name.startswith("../") or "/./" in name or "/../" in name
        or name.endswith("/.") or name.endswith("/..") or name in (".", ".."))


def _stat_finder(folders: bool) -> Callable[..., str | None]:
    """A finder that stats each try: the first of a path and the path + each of the extensions
    that is a file (any entry, with ``folders``), or None."""
    exists = storage.exists if folders else storage.isfile  # an object of object storage too

    def find(path: str, extensions: tuple[str, ...] = ()) -> str | None:
        return next((candidate for candidate in (path, *(path + ext for ext in extensions)) if exists(candidate)),
                    None)

    return find


def _loose_forms(name: str) -> list[str]:
    """``name`` without a leading ``../``, then without each leading folder, as trainers
    read them (``data/obj_train_data/1.jpg``: ``obj_train_data/1.jpg``, ``1.jpg``)."""
    normal = name.replace("\\", "/")
    forms = []
    if normal.startswith("../"):
        forms.append(normal[3:])
    parts = [p for p in normal.split("/") if p not in ("", ".")]
    forms.extend("/".join(parts[i:]) for i in range(1, len(parts)))
    return forms


# ---- metadata -----------------------------------------------------------------------------

def refused_folder_findings() -> list[Finding]:
    """LG005 for each folder discovery did not look into or walk because it leads outside the
    data the audit was given through a link (:func:`labelguard.core.paths.listing_refused`)."""
    return [ESCAPES_ROOT.finding(display_path(refused.path), refused.describe("its files were not listed or read"),
                                 hint=LINK_HINT) for refused in take_refused()]


def linked_outside(path: str, root: str, what: str = "") -> list[Finding]:
    """LG005 when the metadata file ``path`` is a link (or lies in a linked folder) that
    resolves outside the dataset ``root``: such a file is not read, since its content would
    come from outside the dataset into the report. [] otherwise.

    A file inside the root as written is judged against the root, never against its own
    folder, which may itself be a link out (``masks -> ../private`` would make
    ``private/classes.txt`` lie "in its folder"). A file a layout looks for above the root (a
    class list beside the dataset folder) is judged against that folder, an ancestor of
    the data."""
    folder = root if inside_root(path, root) else os.path.dirname(storage.abspath(path))
    if resolves_inside(path, folder):
        return []
    return [ESCAPES_ROOT.finding(
        display_path(path), f"{what + ': ' if what else ''}a link to {display_path(os.path.realpath(path))}, "
        f"outside the dataset root {display_path(folder)}: not read", hint=LINK_HINT)]


def read_metadata(path: str, reader: Callable[[str], T], root: str, what: str = "") -> tuple[T | None, list[Finding]]:
    """A dataset's metadata file (a class list, a data.yaml, an obj.data) read by ``reader``;
    LG001 when it cannot be read, LG005 when it is a link that leads outside the dataset
    ``root`` (:func:`linked_outside`), and None."""
    outside = linked_outside(path, root, what)
    if outside:
        return None, outside
    try:
        return reader(path), []
    except ReadError as exc:
        return None, [UNREADABLE.finding(display_path(path), f"{what}: {exc}" if what else str(exc))]


def metadata_findings(path: str, problems: Sequence[str], hint: str = "") -> list[Finding]:
    """LG001 for each thing wrong in a metadata file that could be read (a key of the wrong
    type, a line that is no ``key = value``)."""
    return [UNREADABLE.finding(display_path(path), problem, hint=hint) for problem in problems]


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
        return os.path.basename(os.path.dirname(storage.abspath(path))).lower() == "labels"
    for fields in lines:
        if len(fields) < 5 or not fields[0].isdigit():
            return False
        try:
            [float(f) for f in fields[1:]]
        except ValueError:
            return False
    return True


# ---- what a folder holds ------------------------------------------------------------------

_DESCRIBE_LIMIT = 100_000
_KINDS_SHOWN = 6


def missing_reason(path: str) -> str:
    """Why ``path``, which is neither a file nor a folder to read, gives nothing: it does not
    exist, or it is a named pipe, socket or device (never opened)."""
    if storage.exists(path):
        return "not a regular file or folder (a named pipe, socket or device): not read"
    if storage.lexists(path):
        return "a symbolic link to nothing (no such file or directory at its target)"
    return "no such file or directory"


def describe_contents(root: str) -> str:
    """What ``root`` holds, by extension: "12 .jpg images, 3 .txt files and 1 .xml file", or
    why nothing is there (no such folder, an empty folder)."""
    if storage.isfile(root):
        if root.lower().endswith(".txt"):
            try:
                entries = sum(1 for line in read_bytes(root, "list").splitlines() if line.strip())
            except ReadError:
                return f"the file {display_path(root)}, which cannot be read"
            return f"the list {display_path(root)} with {plural(entries, 'entry')}"
        return f"the file {display_path(root)}"
    if not storage.isdir(root):
        return missing_reason(root)
    counts: Counter = Counter()
    for directory, dirs, files in storage.walk(root):
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
        parts.append(plural(count, f"{ext or 'extension-less'} {kind}"))
    rest = sum(count for _, count in ranked[_KINDS_SHOWN:])
    if rest:
        parts.append(plural(rest, "other file"))
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return ("at least " if sum(counts.values()) >= _DESCRIBE_LIMIT else "") + text
