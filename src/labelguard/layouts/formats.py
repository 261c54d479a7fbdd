"""The registry of annotation formats: what the audit and ``labelguard fix`` need of a format
besides its layout's discovery.

Each format has one home, the package of its layout (``layouts/voc/``, ``layouts/coco/``,
``layouts/yolo/``, ``layouts/tables/``): its parser (``reader.py``), the record builder and
processor the audit runs on one file (``record.py``), its editor for ``labelguard fix``
(``editor.py``, whose planners raise :class:`~labelguard.errors.CannotFix` for a file they
cannot edit), and its discovery in the package itself, which registers the layout and,
with :func:`register_format`, the format: its name, the suffixes of its files, the processor,
a sniff of a file's content, and the editor's planners. ``labelguard fix`` edits the files of
every registered format through these planners and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol


# plan(path, data) -> (new bytes or None when nothing changes, summary, details); CannotFix to skip
Planner = Callable[[str, bytes], "tuple[bytes | None, str, dict]"]


class ColumnOptions(Protocol):
    """The options a sniff may follow: the columns the user named (``--path-column``,
    ``--label-column``)."""

    @property
    def path_column(self) -> str | None: ...

    @property
    def label_column(self) -> str | None: ...


@dataclass(frozen=True)
class AnnotationFormat:
    """One annotation format.

    Attributes:
        name: the format's name in records and reports (``voc``, ``coco``, ``yolo``, ``csv``).
        suffixes: the files of the format by name, when discovery named none of them (a loose
            folder of files handed to ``labelguard fix``).
        processor: the audit's per-file processor (``FileTask, LabelSpec -> FileResult``); the
            discovery's tasks with it are the format's files, and it re-audits each rewrite.
        sniff: ``sniff(path, options) -> bool``, True when the file's content is of the format;
            None when its suffix suffices.
        rename: ``rename(name_map) -> Planner``, or None when the format has no class names.
        remap: ``remap(id_map) -> Planner``, or None when it has no class ids.
    """

    name: str
    suffixes: tuple[str, ...]
    processor: Callable
    sniff: Callable[[str, ColumnOptions], bool] | None = None
    rename: Callable[[dict[str, str]], Planner] | None = None
    remap: Callable[[dict[int, int]], Planner] | None = None

    def takes(self, path: str, options: ColumnOptions) -> bool:
        """True when ``path`` is a file of this format: by its suffix, then its content."""
        return path.lower().endswith(self.suffixes) and (self.sniff is None or self.sniff(path, options))


# In the order a loose file is tried (by suffix) when the discovery names no task for it.
ANNOTATION_FORMATS: list[AnnotationFormat] = []


def register_format(found: AnnotationFormat) -> AnnotationFormat:
    """Add ``found`` to :data:`ANNOTATION_FORMATS`, in place of a format of the same name."""
    ANNOTATION_FORMATS[:] = [known for known in ANNOTATION_FORMATS if known.name != found.name]
    ANNOTATION_FORMATS.append(found)
    return found


def lookup(mapping: dict[str, str], name: str) -> str | None:
    """The key of ``mapping`` that renames ``name``: its exact spelling (``'dog '``, surrounding
    whitespace included), else its stripped spelling; None when the name stays (its new name is
    exactly what it already is)."""
    for key in (name, name.strip()):
        if key in mapping:
            return None if mapping[key] == name else key
    return None


def describe(counts: dict, mapping: dict, unit: str = "") -> str:
    """An editor's summary: each old name or id with its new one and how often it changed."""
    suffix = f" {unit}" if unit else ""
    return ", ".join(f"{source} -> {mapping[source]} ({n}{suffix})" for source, n in counts.items())
