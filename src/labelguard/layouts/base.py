"""The layout registry, the audit options and what discovery returns."""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import functools
import logging
import os
import re
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator

from labelguard.core import storage
from labelguard.core.findings import Finding
from labelguard.core.paths import current_roots, display_path, is_below
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.core.text import plural
from labelguard.config import CONFIG_NAME
from labelguard.errors import LabelguardError, UsageError
from labelguard.readers.base import CLASS_NAME_FILES
from labelguard.readers.colormap import COLOR_MAP_FILES
from labelguard.readers.integrity import DEFAULT_CHECK_MODE
from labelguard.readers.masks import JPEG_EXTENSIONS, PHOTO_EXTENSIONS, is_mask_candidate, mask_extension
from labelguard.layouts.conventions import CLASS_TABLE_FILES, is_image_dir, is_mask_dir
from labelguard.layouts.folders import holds_yolo_rows
from labelguard.layouts.lists import ListSelection, read_list
from labelguard.layouts.metadata import refused_folder_findings
from labelguard.layouts.pairing import pair_in_folder


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
    # How the images a dataset references are checked to be whole (LG008): one of
    # labelguard.readers.integrity.CHECK_MODES.
    check_images: str = DEFAULT_CHECK_MODE


log = logging.getLogger(__name__)


@dataclass
class Discovery:
    """The files of a dataset as one layout sees them.

    ``tasks`` is a list, or an iterator that yields each task as the layout's walk finds it
    (see :func:`discover_datasets`); ``findings`` and ``notes`` are complete once it is
    exhausted."""

    layout: str
    root: str
    tasks: Any = field(default_factory=list)  # list[FileTask] | Iterator[FileTask]
    findings: list[Finding] = field(default_factory=list)
    spec: LabelSpec = field(default_factory=LabelSpec)  # what the dataset itself declares
    notes: list[str] = field(default_factory=list)
    color_map: object | None = None
    # (root, layout) of each dataset, when one PATH held several.
    datasets: list[tuple[str, str]] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)  # the file lists read (what `fix list` may clean)
    # (pattern of the path relative to the root, why; fnmatch, whose * crosses folders): files
    # the layout knows and leaves out on purpose (other encodings of the labels it reads); the
    # inventory names them so, never as unaudited labels.
    left_out: list[tuple[str, str]] = field(default_factory=list)
    # The folders a layout whose tasks are streamed walks for its labels and images, when
    # they are not its whole root (the paired layout's images/ and masks/): what lies beside
    # them is none of its files.
    walked: list[str] = field(default_factory=list)
    # Internal errors: the layout's own code crashed (a bug of labelguard, never of the data);
    # complete once ``tasks`` is exhausted, like ``findings``.
    errors: list[str] = field(default_factory=list)

    def add_lists(self, selection: ListSelection) -> None:
        """What a reading of file lists found: its findings, and the lists it read."""
        self.findings.extend(selection.findings)
        self.lists.extend(selection.lists)
        self.errors.extend(selection.errors)


@dataclass(frozen=True)
class Seen:
    """One thing a layout's detection saw for it: what (in the words ``detect`` prints) and
    how much that says of its format (:data:`GIVEN` ... :data:`SHAPE`)."""

    text: str
    weight: float


# How much one thing seen says for a layout. Several things seen corroborate each other: the
# share of a layout's level its evidence leaves unconfirmed is the product of (1 - weight)
# over them (:func:`evidence`).
GIVEN = 1.0  # the user's word: a flag names the layout's folders
CONTENT = 0.75  # a file read is the format's (COCO's keys, VOC's <annotation> root, YOLO rows, token ids)
DECLARED = 0.6  # a file that declares the dataset's parts (nnU-Net's dataset.json, YOLO's data.yaml)
NAMES = 0.4  # folder or file names of the format's convention (labelsTr/, SegmentationClass/, images/ + masks/)
SHAPE = 0.2  # a shape other data shares (class folders of photos)

# The most of a layout's level that weak evidence loses: one thing of the convention's names
# alone gives (1 - SPREAD * (1 - NAMES)) of it; the same with a file read of the format, all
# but a little.
SPREAD = 0.2


@dataclass(frozen=True)
class Evidence:
    """Why a layout does or does not take a path for one of its datasets.

    ``confidence`` is 0 when the layout does not apply, else how strongly what it saw speaks
    for it: the layout's level (how specific its format is: a COCO file says more than class
    folders of photos) lowered by what its evidence leaves unconfirmed (a file read of the
    format confirms more than a folder's name; each thing seen more confirms more).
    ``reasons`` say what was seen for it, ``against`` what was seen that rules it out."""

    confidence: float = 0.0
    reasons: tuple[str, ...] = ()
    against: tuple[str, ...] = ()
    # The folder below the path asked about where what was seen lies (a layout that looks
    # into sub-folders), None when it lies at the path itself: a folder whose only evidence is
    # one sub-folder's may hold other datasets beside it.
    below: str | None = None

    def __bool__(self) -> bool:
        return self.confidence > 0


def evidence(level: float, *seen: Seen, below: str | None = None) -> Evidence:
    """A layout of ``level`` (its ``ceiling``) applies, for what was ``seen`` (in the
    sub-folder ``below``, when not at the path itself): the confidence is ``level`` lowered by
    :data:`SPREAD` times the share its evidence leaves unconfirmed, the product of
    ``1 - weight`` over what was seen."""
    if not seen:
        raise ValueError("evidence needs what was seen")  # not a user mistake: a layout's
    unconfirmed = 1.0
    for item in seen:
        unconfirmed *= 1.0 - item.weight
    return Evidence(level * (1.0 - SPREAD * unconfirmed), tuple(item.text for item in seen), below=below)


def no(*against: str) -> Evidence:
    """A layout does not apply, for the reasons ``against`` (may be none: nothing of it seen)."""
    return Evidence(0.0, (), against)


# What a layout can do beyond reading its own files; the options and commands that need a
# capability ask for it instead of listing layout names.
LISTS = "lists"  # selects its files through --list
TABLES = "tables"  # reads CSV/TSV tables (--path-column, --label-column)
MASKS = "masks"  # its labels are masks (every mask container under it is a label unless paired as an image)
CATCH_ALL = "catch-all"  # takes any folder: asked only where no other layout applies
IMAGES = "images"  # finds its images in the folder --images names


@dataclass(frozen=True)
class Layout:
    name: str
    detect: Callable[[str, AuditOptions], Evidence]
    discover: Callable[[str, AuditOptions], Discovery]
    description: str
    # The highest confidence its detection gives: detection stops asking layouts once the
    # best found exceeds every remaining one's ``ceiling`` by more than :data:`NEAR`.
    ceiling: float
    capabilities: frozenset[str] = frozenset()

    def can(self, capability: str) -> bool:
        return capability in self.capabilities


LAYOUTS: dict[str, Layout] = {}


def register_layout(name: str, description: str, ceiling: float, capabilities: Iterable[str] = ()):
    """Decorator: ``@register_layout(...)`` on a layout module's discover function, whose
    ``detect`` attribute returns :class:`Evidence`."""

    def wrap(discover_fn: Callable[[str, AuditOptions], Discovery]):
        detect_fn = getattr(discover_fn, "detect", None)
        if detect_fn is None:
            raise ValueError(f"layout {name} needs a detect function (set discover.detect)")  # not a user mistake
        # Every call of a layout's code is isolated here, wherever it is made from.
        LAYOUTS[name] = Layout(name, _isolated_detect(name, detect_fn), _isolated_discover(name, discover_fn),
                               description, ceiling, frozenset(capabilities))
        return discover_fn

    return wrap


def layout_names() -> list[str]:
    return sorted(LAYOUTS)


def layouts_with(capability: str) -> list[str]:
    """The names of the layouts that have ``capability``."""
    return sorted(name for name, layout in LAYOUTS.items() if layout.can(capability))


def discover(root: str, options: AuditOptions) -> Discovery:
    """The files of ``root`` as one :class:`Discovery`: the datasets of
    :func:`discover_datasets` merged (their tasks, findings and notes; the first declared spec)."""
    found = discover_datasets(root, options)
    if len(found) == 1:
        return found[0]
    merged = Discovery(found[0].layout, root, datasets=[(d.root, d.layout) for d in found])
    for part in found:
        merged.tasks.extend(part.tasks)
        merged.findings.extend(part.findings)
        merged.notes.extend(part.notes)
        merged.lists.extend(part.lists)
        merged.errors.extend(part.errors)
        merged.left_out.extend(part.left_out)
        merged.walked.extend(part.walked)
        if not merged.spec.is_known and part.spec.is_known:
            merged.spec = part.spec
        merged.color_map = merged.color_map or part.color_map
    return merged


# Sub-folders examined for datasets below a PATH that is none itself (VOCdevkit/VOC2007...).
SUBDATASET_DEPTH = 7
SUBDATASET_FOLDERS = 1000
# Folders a file list sits in, below the dataset root it names files of.
LIST_DIRS = frozenset({"lists", "list", "splits", "split", "sets", "imagesets", "main", "segmentation",
                       "action", "layout"})
DESCRIPTOR_EXTENSIONS = (".json", ".yaml", ".yml", ".xml", ".toml", ".csv", ".tsv")
# Files that describe the dataset of their folder (class names, colours, splits).
METADATA_FILES = frozenset({"dataset_meta.json", "dataset.json", "meta.json", "labelmap.csv",
                            "label_colors.txt", "class_dict.csv", "label_map.txt"})


# Files that declare the classes or colours of the dataset of their folder.
DECLARING_FILES = tuple(sorted(METADATA_FILES | set(CLASS_NAME_FILES) | set(COLOR_MAP_FILES) | set(CLASS_TABLE_FILES)))


def discover_datasets(root: str, options: AuditOptions, stream: bool = False) -> list[Discovery]:
    """The datasets at ``root``, each discovered by its layout.

    With ``stream``, a dataset's ``tasks`` may be a one-pass iterator that yields each task as
    the walk finds it (the audit hands them to the engine as they come); its findings and
    notes are complete once it is exhausted. Without, ``tasks`` is a list.

    ``root`` is a dataset (its layout detected, or forced by ``--format``; ``--masks`` means
    the paired layout); a folder holding several datasets (VOCdevkit with VOC2007 and
    VOC2012, train/ and val/ trees of different layouts), each audited on its own; or a file
    that describes a dataset: a file list, a class-name file, nnU-Net's dataset.json (the
    dataset around it), a YOLO label file, or a file any layout reads (COCO JSON, VOC XML,
    data.yaml, CSV, a mask)."""
    # The layouts' probes ask object storage about the same prefixes many times: one listing
    # each (storage.listings_kept). A streamed walk lists afresh as it goes.
    with storage.listings_kept():
        with detection_crashes() as crashed:
            found = _discover_datasets(root, options)
        if found:
            # A layout whose detection crashed was taken as not applying: the datasets found say so.
            found[0].errors.extend(crashed)
        if options.lists:
            found = _datasets_of_lists(found, options.lists)
        roots = current_roots()
        if roots is not None:
            # The dataset a file given as PATH belongs to (a list's, a data.yaml's) is given too.
            roots.grant(discovery.root for discovery in found)
        left = [len(found)]
        for discovery in found:
            discovery.tasks = _with_refused_folders(discovery, discovery.tasks, left)
            if not stream:
                discovery.tasks = list(discovery.tasks)
    return found


def _datasets_of_lists(found: list[Discovery], lists: tuple[str, ...]) -> list[Discovery]:
    """The datasets of ``found`` that the ``--list`` files select a file of, when a PATH
    holding several datasets was given lists that name files of some of them only
    (LandCover.ai's train.txt names the tiles in output/, none of the scenes of masks/):
    the others are not what the lists ask for, and a note says so instead of an LG003 per
    entry. Where the lists select no file of any dataset, every dataset keeps its findings
    (a stale list)."""
    if len(found) < 2 or not all(isinstance(discovery.tasks, list) for discovery in found):
        return found
    # A dataset whose layout crashed keeps its internal error in the report, selected or not.
    selected = [discovery for discovery in found if discovery.tasks or discovery.errors]
    if not selected or len(selected) == len(found):
        return found
    named = ", ".join(display_path(path) for path in lists)
    for discovery in found:
        if discovery not in selected:
            selected[0].notes.append(f"{named} names no file of the {discovery.layout} dataset "
                                     f"{display_path(discovery.root)}: it was not audited")
    return selected


def _with_refused_folders(discovery: Discovery, tasks: Iterable[FileTask], left: list[int]) -> Iterator[FileTask]:
    """``tasks``, then LG005 in ``discovery.findings`` for each folder inside its root that
    discovery did not look into because it leads outside the data the audit was given through
    a link (:mod:`labelguard.core.paths`); the last dataset done (``left`` counts them) also
    takes those that lie in no dataset's folder."""
    yield from tasks
    left[0] -= 1
    discovery.findings.extend(refused_folder_findings(None if not left[0] else discovery.root))


# The crashes of layouts' detection while a collector is open (:func:`detection_crashes`):
# (layout, what it raised) -> [the first folder, how many folders].
_DETECTION_CRASHES: contextvars.ContextVar[dict[tuple[str, str], list] | None] = contextvars.ContextVar(
    "detection_crashes", default=None)


@contextlib.contextmanager
def detection_crashes() -> Iterator[list[str]]:
    """Collect, while the block runs, the internal errors of layouts whose detection raised
    (such a layout is taken as not applying); the list is filled when the block ends, one
    entry per layout and exception, with the number of folders it was raised on."""
    crashes: dict[tuple[str, str], list] = {}
    messages: list[str] = []
    token = _DETECTION_CRASHES.set(crashes)
    try:
        yield messages
    finally:
        _DETECTION_CRASHES.reset(token)
        for (name, detail), (root, count) in crashes.items():
            more = f" (and on {count - 1} more folders)" if count > 1 else ""
            messages.append(f"{display_path(root)}: layout {name!r} crashed while detecting the dataset{more}: "
                            f"{detail}")


def _isolated_detect(name: str, detect: Callable[[str, AuditOptions], Evidence]
                     ) -> Callable[[str, AuditOptions], Evidence]:
    """``detect``, isolated: one that raises (anything but a LabelguardError, which says what
    the user asked for cannot be done) is evidence against its layout naming the crash, and an
    internal error of the open collector (:func:`detection_crashes`); the other layouts are asked."""
    @functools.wraps(detect)
    def isolated(root: str, options: AuditOptions) -> Evidence:
        try:
            return detect(root, options)
        except LabelguardError:
            raise
        except Exception as exc:  # one layout's crash must not cost the detection of the others
            log.debug("layout %s crashed detecting %s", name, root, exc_info=True)
            detail = _detail(exc)
            crashes = _DETECTION_CRASHES.get()
            if crashes is not None:
                crashes.setdefault((name, detail), [root, 0])[1] += 1
            return no(f"its detection crashed ({detail})")

    return isolated


def _isolated_discover(name: str, discover: Callable[[str, AuditOptions], Discovery]):
    """``discover``, isolated: one that raises (anything but a LabelguardError) gives a
    discovery of no files with the crash as an internal error naming the layout, and the other
    datasets are still audited; a walk that raises midway keeps the files it found before."""
    @functools.wraps(discover)
    def isolated(root: str, options: AuditOptions) -> Discovery:
        try:
            discovery = discover(root, options)
        except LabelguardError:
            raise
        except Exception as exc:  # a bug in one layout must not cost the audit of the others
            log.debug("layout %s crashed on %s", name, root, exc_info=True)
            discovery = Discovery(name, root)
            discovery.errors.append(_crash(name, root, exc, "discovering the dataset"))
            return discovery
        if not isinstance(discovery.tasks, list):
            discovery.tasks = _isolated_walk(name, discovery, discovery.tasks)
        return discovery

    return isolated


def _isolated_walk(name: str, discovery: Discovery, tasks: Iterable[FileTask]) -> Iterator[FileTask]:
    found = 0
    try:
        for task in tasks:
            found += 1
            yield task
    except LabelguardError:
        raise
    except Exception as exc:  # the files found before the crash are still audited
        log.debug("layout %s crashed walking %s", name, discovery.root, exc_info=True)
        walked = f"walking the dataset, after {plural(found, 'file')}"
        discovery.errors.append(_crash(name, discovery.root, exc, walked))


def _detail(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _crash(name: str, root: str, exc: Exception, doing: str) -> str:
    return f"{display_path(root)}: layout {name!r} crashed while {doing}: {_detail(exc)}"


def _discover_datasets(root: str, options: AuditOptions) -> list[Discovery]:
    if options.format:
        try:
            layout = LAYOUTS[options.format]
        except KeyError:
            raise UsageError(
                f"unknown format {options.format!r}; known: {', '.join(layout_names())}"
            ) from None
        return [layout.discover(root, options)]
    if options.masks:
        return [LAYOUTS["paired"].discover(root, options)]
    if storage.isfile(root):
        return _discover_file(root, options)
    voc = _voc_root_of_image_sets(root)
    if voc is not None:
        return _discover_datasets(voc, options)
    found = candidates(root, options)
    if found and found[0].evidence.below is not None:
        # What was seen lies in one sub-folder: beside it may lie datasets of other layouts
        # (a folder of exports), each then audited on its own.
        parts = _sub_datasets(root, options, SUBDATASET_DEPTH, [0])
        if len({layout.name for _, layout in parts}) > 1:
            return _with_datasets_inside([layout.discover(folder, options) for folder, layout in parts], options)
    if found:
        discovery = found[0].layout.discover(root, options)
        discovery.notes.extend(near_ties(found))
        return _with_datasets_inside([discovery], options)
    if storage.isdir(root):
        parts = _sub_datasets(root, options, SUBDATASET_DEPTH, [0])
        # Folders of masks are one dataset, unless a part is of another layout or declares
        # its own classes or colours: then each part is checked against its own.
        if any(layout.name != "masks" or _declares_metadata(folder) for folder, layout in parts):
            return _with_datasets_inside([layout.discover(folder, options) for folder, layout in parts], options)
    return [LAYOUTS["masks"].discover(root, options)]


# Evidence at least this confident is of a format (a COCO file, VOC XMLs, YOLO rows, a
# saved dataset), never of a generic shape (class folders of photos, a table, image and
# mask folders): only such a dataset is taken for one of its own inside another's folder.
SPECIFIC = 0.4


def _with_datasets_inside(found: list[Discovery], options: AuditOptions) -> list[Discovery]:
    """``found``, each followed by the datasets of other formats inside its folder that its
    layout reads no file of (mmyolo's test data: COCO files at the root, a VOCdevkit below
    them), each audited on its own as when it is the PATH. Only a dataset whose files are
    listed, or whose streamed walk covers the folders it names (``walked``), is looked into
    (a streamed walk of the whole root reads its whole tree), and only on a local file
    system (in object storage, each folder looked into is a request more)."""
    result = []
    for discovery in found:
        result.append(discovery)
        if not (isinstance(discovery.tasks, list) or discovery.walked) or storage.url_scheme(discovery.root) or \
                not storage.isdir(discovery.root):
            continue
        # The folders a streamed walk reads whole are not looked into: all in them is read.
        walked = tuple(os.path.join(os.path.abspath(folder), "") for folder in discovery.walked)
        holding = _folders_holding(discovery, walked)
        confidence: dict[str, float] = {}
        for folder, layout in _sub_datasets(discovery.root, options, SUBDATASET_DEPTH, [0], walked, confidence):
            if layout.name == discovery.layout and not layout.can(CATCH_ALL):
                continue
            relative = storage.relpath(folder, discovery.root).replace(os.sep, "/") + "/"
            if any(fnmatch.fnmatchcase(relative, pattern) for pattern, _ in discovery.left_out):
                continue  # what the layout leaves out on purpose (Mapillary's panoptic JSON)
            if os.path.abspath(folder) in holding:
                continue  # it holds files the dataset reads
            if confidence.get(folder, 0.0) >= SPECIFIC or (layout.can(CATCH_ALL) and _masks_pair_with_photos(folder)):
                result.append(layout.discover(folder, options))
    return result


def _folders_holding(discovery: Discovery, walked: tuple[str, ...]) -> set[str]:
    """The folders (absolute) under ``discovery``'s root that hold a file it reads, at any
    depth: the folders of its tasks' labels and images, and of the folders it walks whole,
    with every folder between them and the root. A sub-folder is then looked up once, not
    compared with every file read."""
    root = os.path.abspath(discovery.root)
    starts = {os.path.dirname(os.path.abspath(path)) for task in discovery.tasks
              for path in (task.path, task.image) if path} if isinstance(discovery.tasks, list) else set()
    starts.update(folder.rstrip(os.sep) for folder in walked)
    holding: set[str] = set()
    for folder in starts:
        while folder not in holding and is_below(folder, root):
            holding.add(folder)
            folder = os.path.dirname(folder)
    return holding


def _masks_pair_with_photos(folder: str) -> bool:
    """True when every mask in ``folder`` is named as the label of a photo beside it
    (LandCover.ai's ``x.jpg`` beside ``x_m.png``, Roboflow's ``x.jpg`` beside ``x_mask.png``):
    a dataset of its own, whatever the folder's name."""
    try:
        with storage.scandir(folder) as entries:
            names = [e.name for e in entries if e.is_file() and not e.name.startswith(".")]
    except OSError:
        return False
    masks = [name for name in names if is_mask_candidate(name) and mask_extension(name) not in JPEG_EXTENSIONS]
    if not masks or len(names) > SUBDATASET_FOLDERS * 10:
        return False
    pairing = pair_in_folder([os.path.join(folder, name) for name in names])
    return all(os.path.join(folder, name) in pairing.pairs for name in masks)


def _voc_root_of_image_sets(folder: str) -> str | None:
    """The VOC folder of an ``ImageSets`` folder (or of one of its split folders), whose
    lists name image ids, not files: the lists are audited with their dataset."""
    folder = storage.abspath(folder)
    for candidate in (folder, os.path.dirname(folder)):
        if os.path.basename(candidate) == "ImageSets":
            parent = os.path.dirname(candidate)
            if storage.isdir(os.path.join(parent, "Annotations")) or storage.isdir(
                    os.path.join(parent, "SegmentationClass")):
                return parent
    return None


# Layouts whose ceiling lies this far below the best evidence found are not asked.
NEAR = 0.05


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    evidence: Evidence


def candidates(root: str, options: AuditOptions, every: bool = False) -> list[Candidate]:
    """The layouts that take ``root`` for one of their datasets, most confident first (ties by
    name), the catch-all layout left out. Layouts are asked from the highest ceiling down,
    until none left could come within :data:`NEAR` of the best found; with ``every``, all are
    asked and those that do not apply are listed last with the reasons against them."""
    found: list[Candidate] = []
    rejected: list[Candidate] = []
    best = 0.0
    for layout in sorted(LAYOUTS.values(), key=lambda item: (-item.ceiling, item.name)):
        if layout.can(CATCH_ALL):
            continue
        if not every and best - layout.ceiling > NEAR:
            break
        seen = layout.detect(root, options)
        if seen:
            found.append(Candidate(layout, seen))
            best = max(best, seen.confidence)
        elif every:
            rejected.append(Candidate(layout, seen))
    found.sort(key=lambda c: (-c.evidence.confidence, c.layout.name))
    return found + rejected


def near_ties(found: list[Candidate]) -> list[str]:
    """What to say of the layouts of ``found`` (:func:`candidates`' answer) whose evidence
    comes within :data:`NEAR` of the layout taken: the evidence decided, and the user may
    decide otherwise."""
    if not found or not found[0].evidence:
        return []
    best = found[0]
    # (a gap of NEAR computed in floating point may exceed it by a rounding error: still near)
    near = [c for c in found[1:] if c.evidence and best.evidence.confidence - c.evidence.confidence <= NEAR + 1e-9]
    return [f"{best.layout.name} ({best.evidence.confidence:.2f}: {'; '.join(best.evidence.reasons)}) was taken "
            f"over {c.layout.name} ({c.evidence.confidence:.2f}: {'; '.join(c.evidence.reasons)}), whose "
            f"evidence comes within {NEAR}; --format {c.layout.name} reads the folder as that instead"
            for c in near]


def detect_layout(root: str, options: AuditOptions) -> Layout | None:
    """The layout whose evidence for ``root`` is strongest (the catch-all layout left out)."""
    found = candidates(root, options)
    return found[0].layout if found else None


def _sub_datasets(folder: str, options: AuditOptions, depth: int, seen: list[int],
                  skipped: tuple[str, ...] = (), confidence: dict[str, float] | None = None
                  ) -> list[tuple[str, Layout]]:
    """(folder, layout) of the datasets below ``folder``, ``depth`` levels at most; the
    folders of ``skipped`` (absolute, each ending in a separator) are not looked into. Into
    ``confidence``, the confidence of the layout detected for each folder found (none for the
    catch-all layout's)."""
    try:
        children = storage.folder_paths(folder, hidden=False)
    except OSError:
        return []
    found: list[tuple[str, Layout]] = []
    for child in children:
        if skipped and os.path.join(os.path.abspath(child), "").startswith(skipped):
            continue
        seen[0] += 1
        if seen[0] > SUBDATASET_FOLDERS:
            break
        seen_here = candidates(child, options)
        layout = seen_here[0].layout if seen_here else None
        if layout is not None and seen_here[0].evidence.below is not None and depth > 1:
            below = _sub_datasets(child, options, depth - 1, seen, skipped, confidence)
            if len({part.name for _, part in below}) > 1:
                found.extend(below)  # a folder of exports beside each other
                continue
        if layout is not None:
            found.append((child, layout))
            if confidence is not None:
                confidence[child] = seen_here[0].evidence.confidence
        elif _holds_masks(child):
            # Masks beside other datasets: the catch-all layout audits them as one dataset.
            found.append((child, LAYOUTS["masks"]))
        elif _declares_metadata(child) and _holds_masks_below(child, depth):
            # A class file above masks: the datasets below it are what it holds when a layout
            # takes them (labelme's labels.txt above the VOC folder labelme2voc wrote), as
            # when each is audited alone; else its masks are one dataset.
            below = _sub_datasets(child, options, depth - 1, seen, skipped, confidence) if depth > 1 else []
            found.extend(below if any(part.name != "masks" for _, part in below) else [(child, LAYOUTS["masks"])])
        elif depth > 1:
            below = _sub_datasets(child, options, depth - 1, seen, skipped, confidence)
            if len(below) > 1 and all(part.name == "masks" and not _declares_metadata(folder)
                                      for folder, part in below):
                # Folders of masks side by side are one dataset, as at the top (LEVIR-CD's
                # A/, B/ and label/), unless one declares its own classes.
                found.append((child, LAYOUTS["masks"]))
            else:
                found.extend(below)
    return found


def _declares_metadata(folder: str) -> bool:
    """True when ``folder`` holds a file that declares its dataset's classes or colours, or a
    labelguard.toml (the spec of the folder's tree)."""
    return any(storage.isfile(os.path.join(folder, name)) for name in (*DECLARING_FILES, CONFIG_NAME))


def _holds_masks_below(folder: str, depth: int) -> bool:
    """True when ``folder`` or a folder below it, ``depth`` levels at most, holds masks."""
    if _holds_masks(folder):
        return True
    if depth <= 1:
        return False
    try:
        children = storage.folder_paths(folder, hidden=False)
    except OSError:
        return False
    return any(_holds_masks_below(child, depth - 1) for child in children[:SUBDATASET_FOLDERS])


def _holds_masks(folder: str) -> bool:
    """True when ``folder`` itself holds lossless mask files (JPEGs are taken for photos); an
    image folder by its tools' convention (``images_png/``) holds none."""
    if is_image_dir(os.path.basename(storage.abspath(folder))):
        return False
    try:
        with storage.scandir(folder) as entries:
            return any(e.is_file() and not e.name.startswith(".") and is_mask_candidate(e.name)
                       and mask_extension(e.name) not in JPEG_EXTENSIONS for e in entries)
    except OSError:
        return False


def _discover_file(path: str, options: AuditOptions) -> list[Discovery]:
    name = os.path.basename(path).lower()
    folder = os.path.dirname(storage.abspath(path))
    if name == "dataset.json" and storage.isdir(os.path.join(folder, "labelsTr")):
        return [LAYOUTS["nnunet"].discover(folder, options)]
    if name in CLASS_NAME_FILES or name in METADATA_FILES:
        return _discover_datasets(folder, options)
    if name.endswith(".txt"):
        if os.path.basename(folder).lower() in LIST_DIRS:
            return [_discover_list(path, options)]
        if LAYOUTS["csv"].detect(path, options):
            return [LAYOUTS["csv"].discover(path, options)]
        if holds_yolo_rows(path):
            return [LAYOUTS["yolo"].discover(path, options)]
        return [_discover_list(path, options)]
    layout = detect_layout(path, options)
    if layout is None and name.endswith(DESCRIPTOR_EXTENSIONS):
        # A file no layout reads that sits in a dataset (a config, a per-image JSON of
        # another tool): the dataset of its folder is what it describes.
        found = _discover_datasets(folder, options)
        found[0].notes.append(f"{display_path(path)} is no label file labelguard reads; the dataset of "
                              f"its folder {display_path(folder)} was audited")
        return found
    return [(layout or LAYOUTS["masks"]).discover(path, options)]


def _discover_list(path: str, options: AuditOptions) -> Discovery:
    """A file list as PATH: the dataset above it, audited through the list."""
    listed = replace(options, lists=(*options.lists, path))
    folder = os.path.dirname(storage.abspath(path))
    voc = _voc_root_of_image_sets(folder)
    for candidate in [voc] if voc else _ancestors(folder, 3):
        found = candidates(candidate, listed)
        # The table layout would read the lists beside this one as tables, not this list's
        # dataset; evidence that lies in a sub-folder (another dataset beside the list's
        # folder, one that a layout's probe found below a parent) is not about this folder.
        if found and found[0].layout.name != "csv" and found[0].evidence.below is None:
            return found[0].layout.discover(candidate, listed)
    root = os.path.dirname(folder) if os.path.basename(folder).lower() in LIST_DIRS else folder
    photos = _names_only_photos(path)
    if photos:
        # mmpretrain's ann_without_labels.txt, an inference list: images, and no label to
        # audit; never photos read as masks.
        discovery = Discovery("masks", root)
        discovery.notes.append(f"{display_path(path)} names {photos} photos (JPEG, WebP, BMP) and no label file: "
                               "a list of images without labels, so nothing in it is audited; give the labels' "
                               "list, or the dataset's folder")
        return discovery
    return LAYOUTS["masks"].discover(root, listed)


def _names_only_photos(path: str) -> int:
    """The number of entries of the list ``path`` when each one's first field names a photo
    by its extension and no label folder, else 0."""
    listing, _ = read_list(path)
    if listing is None or not listing.entries:
        return 0
    for entry in listing.entries:
        first = entry.fields[0].lower() if entry.fields else ""
        if not first.endswith(PHOTO_EXTENSIONS) or any(is_mask_dir(part) for part in re.split(r"[\\/]", first)[:-1]):
            return 0
    return len(listing.entries)


def _ancestors(folder: str, count: int) -> list[str]:
    found = [folder]
    while len(found) <= count and os.path.dirname(found[-1]) != found[-1]:
        found.append(os.path.dirname(found[-1]))
    return found
