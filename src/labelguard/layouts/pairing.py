"""The one pairing engine: which image pairs with which label.

A layout only declares its roles (:class:`~labelguard.layouts.lists.Role`: its images,
labels, annotations, masks, each in its folder) and, where its tools derive a label's path
from the image's, that function; this module decides:

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
* **orphans** (:func:`unpaired_findings`): LG002 for the images and labels left alone.

The rest of discovery has one module each: file lists and the names written in them
(:mod:`labelguard.layouts.lists`), a dataset's metadata files and the links out of it
(:mod:`labelguard.layouts.metadata`), walking a folder and saying what it holds
(:mod:`labelguard.layouts.folders`), and "inside the dataset root" and the paths a report
shows (:mod:`labelguard.core.paths`).

Every function is deterministic (sorted input, first match by sort order) and runs in
O(n log n) on n files: keys are looked up in dictionaries, never compared pairwise.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Container, Iterable, Sequence

from labelguard.core import storage
import labelguard.rules  # noqa: F401  (registers every rule: the files rules judge the orphans)
from labelguard.core.records import FileFacts
from labelguard.core.rules import run_rules
from labelguard.core.spec import NO_SPEC
from labelguard.core.paths import display_path
from labelguard.core.text import SHOWN, plural, shorten, verb
from labelguard.core.findings import Finding
from labelguard.layouts.conventions import (
    IMAGE_PREFIXES, IMAGE_SUFFIXES, IMAGE_TOKENS, LABEL_PREFIXES, LABEL_SUFFIXES, LABEL_TOKENS,
)

# ---- names --------------------------------------------------------------------------------
# The conventions themselves are data in labelguard.layouts.conventions; these are the
# engine's look-ups built from them.

_SEPARATORS = "_-. "
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


def extension_of(path: str) -> str:
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


def may_carry_convention(stem: str) -> bool:
    """False when :func:`name_key` leaves ``stem`` as it is (but for case): it ends in no
    convention's word and starts with no role prefix, which is what most names do."""
    tail = stem[max(stem.rfind("_"), stem.rfind("-")) + 1:].lower()
    return tail in _TAIL_ENDS or stem.partition("_")[0].lower() in _PREFIX_ROLES


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
    ``root/sub/x.jpg``): by slicing for the paths :func:`~labelguard.layouts.folders.walk_files`
    gives, which start with ``root`` as written, else through :func:`os.path.relpath`."""
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


def channel_case(path: str) -> tuple[str, str] | None:
    """(folder, case name) of an image named with nnU-Net's channel suffix
    (``case_0001.nii.gz``: its folder and ``case``), None for another name."""
    stem = strip_extension(os.path.basename(path))
    if not _CHANNEL.search(stem):
        return None
    return os.path.dirname(path), _CHANNEL.sub("", stem)


def _channels_of_one_case(candidates: list[str]) -> bool:
    stems = {_CHANNEL.sub("", strip_extension(os.path.basename(p))) for p in candidates}
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




def unpaired_findings(orphans_images: list[str], orphans_masks: list[str], what: str = "mask", *,
                      errors: list[str]) -> list[Finding]:
    """The ``files`` rules' findings (LG002) on the images and labels a pairing left alone,
    through the one runner: a rule that crashes is an entry of ``errors`` (the discovery's)."""
    found: list[Finding] = []
    run_rules("files", FileFacts(orphan_images=orphans_images, orphan_labels=orphans_masks, label_kind=what),
              NO_SPEC, "the pairing", found, errors)
    return found
