"""LabelSpec: what label values and class names are legal."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterable, Mapping

from labelguard.errors import SpecError

IGNORE_REDUCED = 255  # mmsegmentation's reduce_zero_label sends 0 here

# The parts of a spec whose origin the report names, in the order it names them.
PARTS = ("classes", "values", "num_classes", "ignore_index", "background", "reduce_zero_label")
# Said of a class-name file found next to the data it describes: such a file is often
# written from that very data (a converter's output), so it cannot vouch for it.
BESIDE_DATA = "beside the data"

# labelme's labelme2voc reads a labels.txt whose first line must be __ignore__ (id -1) and
# whose second must be _background_ (id 0); it writes the names from _background_ on as
# class_names.txt, and stores id -1 as -1 in SegmentationClassNpy and as 255 in the uint8
# palette PNGs of SegmentationClass.
LABELME_IGNORE = "__ignore__"
LABELME_BACKGROUND = "_background_"
LABELME_IGNORE_VALUES = (255, -1)


@dataclass(frozen=True)
class LabelSpec:
    """The legal labels of a dataset.

    Attributes:
        classes: class names in index order, when known.
        values: the explicit legal integer values, when given (e.g. ``(0, 1, 2)``).
        num_classes: number of classes; legal values are ``0 .. num_classes - 1``.
        ignore: values that are legal but ignored by the loss (e.g. ``(255,)``).
        background: the background value (usually 0), or None when there is none.
        reduce_zero_label: mmsegmentation's option: 0 becomes 255 and every other value
            shifts down by one before checking.
        sources: the files and flags the spec came from (plain paths, so that a fixer can
            open a class-name file).
        origins: ``(part, origin)`` pairs naming which file or flag gave each part (see
            :data:`PARTS`); filled from ``sources`` when not given.
        notes: what merging the spec's layers replaced, for the report.
    """

    classes: tuple[str, ...] | None = None
    values: tuple[int, ...] | None = None
    num_classes: int | None = None
    ignore: tuple[int, ...] = ()
    background: int | None = 0
    reduce_zero_label: bool = False
    sources: tuple[str, ...] = field(default=(), compare=False)
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.num_classes is not None and self.num_classes < 1:
            raise SpecError(f"num_classes must be at least 1, got {self.num_classes}")
        # A class list and a count that disagree are both kept (no check here): the count
        # decides what is legal, the names still name the values, the report states it.
        # A spec built from its sources alone got every part it sets from them.
        if not self.origins and self.sources:
            origin = ", ".join(self.sources)
            object.__setattr__(self, "origins", tuple((part, origin) for part in self.set_parts()))
        if self.values is not None and self.num_classes is not None:
            if len(self.values) > self.num_classes:
                raise SpecError(
                    f"{len(self.values)} values given ({list(self.values)}) but "
                    f"num_classes={self.num_classes}"
                )

    def set_parts(self) -> tuple[str, ...]:
        """The parts of :data:`PARTS` this spec sets (a background of 0 is the default)."""
        present = {
            "classes": self.classes is not None,
            "values": self.values is not None,
            "num_classes": self.num_classes is not None,
            "ignore_index": bool(self.ignore),
            "background": self.background != 0,
            "reduce_zero_label": self.reduce_zero_label,
        }
        return tuple(part for part in PARTS if present[part])

    @property
    def count_disagrees(self) -> bool:
        """True when a class list and num_classes of another length are both given: the
        count then decides which ids are legal."""
        return self.classes is not None and self.num_classes is not None and len(self.classes) != self.num_classes

    def origin(self, part: str) -> str | None:
        """The file or flag that gave ``part`` (one of :data:`PARTS`), when known."""
        return dict(self.origins).get(part)

    def describe_origins(self) -> str:
        """Which file or flag gave each part: ``from labels.txt`` when one gave all, else
        ``classes from labels.txt; num_classes from --num-classes 3``."""
        shown = [(part, origin) for part, origin in self.origins if part in self.set_parts()]
        if not shown:
            return ""
        distinct = list(dict.fromkeys(origin for _, origin in shown))
        if len(distinct) == 1:
            return f"from {distinct[0]}"
        return "; ".join(f"{part} from {origin}" for part, origin in shown)

    def provenance_notes(self) -> list[str]:
        """What the report must state about where the spec came from: a class list and a
        count that disagree, a part one layer replaced in another, a spec that only a
        class-name file beside the data gives."""
        notes = list(self.notes)
        if self.count_disagrees:
            names = len(self.classes)
            guess = ""
            if names + 1 == self.num_classes:
                guess = " (the names may leave out the background)"
            elif names == self.num_classes + 1:
                guess = " (the names may include a background or ignore entry that is not a class)"
            notes.append(
                f"{names} class names ({self.origin('classes') or 'class list'}) but num_classes="
                f"{self.num_classes} ({self.origin('num_classes') or 'count'}){guess}: values are checked "
                f"against num_classes={self.num_classes}, the names name values 0..{names - 1}")
        classes_origin = self.origin("classes") or ""
        if classes_origin.endswith(BESIDE_DATA):
            shown = classes_origin[:-len(BESIDE_DATA)].rstrip()
            if all(origin.startswith(shown) for part, origin in self.origins if part in self.set_parts()):
                notes.append(f"classes from {classes_origin}: a file written from the data cannot vouch "
                             "for it; give --classes/--num-classes or a labelguard.toml to check against "
                             "what the labels must be")
        return notes

    @property
    def is_known(self) -> bool:
        """True when the legal values are known (otherwise the audit only infers)."""
        return self.allowed_values() is not None

    @property
    def effective_num_classes(self) -> int | None:
        if self.num_classes is not None:
            return self.num_classes
        if self.classes is not None:
            return len(self.classes)
        if self.values is not None:
            return len(self.values)
        return None

    def allowed_values(self) -> frozenset[int] | None:
        """The legal class values, without the ignore values; None when unknown."""
        if self.values is not None:
            return frozenset(self.values)
        n = self.effective_num_classes
        if n is None:
            return None
        return frozenset(range(n))

    def is_contiguous(self) -> bool:
        allowed = self.allowed_values()
        return allowed is not None and allowed == frozenset(range(len(allowed)))

    def describe(self) -> str:
        """A short text such as ``[0, 9) (num_classes=9, ignore_index=None)``."""
        allowed = self.allowed_values()
        if allowed is None:
            return "no label spec given"
        if self.is_contiguous():
            head = f"[0, {len(allowed)})"
        else:
            head = "{" + ", ".join(str(v) for v in sorted(allowed)) + "}"
        ignore = ", ".join(str(v) for v in self.ignore) if self.ignore else "None"
        extra = ", reduce_zero_label=True" if self.reduce_zero_label else ""
        return f"{head} (num_classes={self.effective_num_classes}, ignore_index={ignore}{extra})"

    def class_name(self, value: int) -> str | None:
        if self.classes is not None and 0 <= value < len(self.classes):
            return self.classes[value]
        return None

    def class_index(self, name: str) -> int | None:
        if self.classes is None:
            return None
        try:
            return self.classes.index(name)
        except ValueError:
            return None

    def closest_classes(self, name: str, n: int = 3) -> list[str]:
        """Allowed class names closest to ``name`` (for "did you mean ...")."""
        if not self.classes:
            return []
        by_key = {normalise_name(c): c for c in self.classes}
        exact = by_key.get(normalise_name(name))
        found = [exact] if exact else []
        for match in difflib.get_close_matches(name, self.classes, n=n, cutoff=0.5):
            if match not in found:
                found.append(match)
        return found[:n]

    def merged(self, other: "LabelSpec") -> "LabelSpec":
        """A copy where every field set in ``other`` (a higher-priority source) wins.

        A class list is never dropped for a count: both are kept and the report states a
        disagreement. A higher-priority class list of another length replaces a lower
        count, and says so in ``notes``.
        """
        changes: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("sources", "origins", "notes"):
                continue
            value = getattr(other, f.name)
            if value != f.default and value is not None:
                changes[f.name] = value
        origins = dict(self.origins)
        origins.update((part, origin) for part, origin in other.origins if part in other.set_parts())
        notes = list(dict.fromkeys(self.notes + other.notes))
        if other.num_classes is not None:
            if other.values is None and self.values is not None and len(self.values) > other.num_classes:
                changes["values"] = None
                notes.append(f"values {list(self.values)} ({origins.get('values', 'a lower layer')}) "
                             f"replaced by num_classes={other.num_classes} ({origins.get('num_classes')})")
        elif self.num_classes is not None:
            if other.classes is not None and len(other.classes) != self.num_classes:
                changes["num_classes"] = None
                notes.append(f"num_classes={self.num_classes} ({origins.get('num_classes', 'a lower layer')}) "
                             f"replaced by the {len(other.classes)} class names of {origins.get('classes')}")
            if other.values is not None and len(other.values) > self.num_classes:
                changes["num_classes"] = None
        merged_sources = tuple(dict.fromkeys(self.sources + other.sources))
        result = replace(self, **changes, sources=merged_sources, origins=(), notes=tuple(notes))
        kept = tuple((part, origins[part]) for part in PARTS if part in origins and part in result.set_parts())
        return replace(result, origins=kept)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.classes is not None:
            data["classes"] = list(self.classes)
        if self.values is not None:
            data["values"] = list(self.values)
        if self.num_classes is not None:
            data["num_classes"] = self.num_classes
        data["ignore_index"] = list(self.ignore)
        data["background"] = self.background
        if self.reduce_zero_label:
            data["reduce_zero_label"] = True
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "") -> "LabelSpec":
        """Build a spec from a config table; unknown keys are an error that names them."""
        known = {"classes", "values", "num_classes", "ignore_index", "ignore", "background",
                 "reduce_zero_label"}
        unknown = sorted(set(data) - known)
        if unknown:
            where = f" in {source}" if source else ""
            raise SpecError(
                f"unknown label spec key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}{where}; "
                f"known keys: {', '.join(sorted(known))}"
            )
        ignore = data.get("ignore_index", data.get("ignore"))
        return cls(
            classes=_names(data["classes"]) if data.get("classes") is not None else None,
            values=_ints(data["values"], "values") if data.get("values") is not None else None,
            num_classes=_int(data["num_classes"], "num_classes") if data.get("num_classes") is not None else None,
            ignore=_ints(ignore, "ignore_index") if ignore is not None else (),
            background=_int(data["background"], "background") if data.get("background") is not None else 0,
            reduce_zero_label=_bool(data.get("reduce_zero_label", False), "reduce_zero_label"),
            sources=(source,) if source else (),
        )


def class_list_spec(names: Iterable[str], shown: str) -> "LabelSpec":
    """The spec a class-name file found beside the data gives (``shown`` is its path for the
    report, which says that such a file cannot vouch for the data).

    labelme's files are read as labelme2voc reads and writes them: ``__ignore__`` is not a
    class but the ignore value.
    """
    names = [str(name) for name in names]
    labelme = bool(names) and (
        names[0] == LABELME_IGNORE
        or (os.path.basename(shown) == "class_names.txt" and names[0] == LABELME_BACKGROUND))
    if names and names[0] == LABELME_IGNORE:
        names = names[1:]
    if not names:
        return LabelSpec()
    origins = [("classes", f"{shown} {BESIDE_DATA}")]
    ignore: tuple[int, ...] = ()
    if labelme:
        ignore = LABELME_IGNORE_VALUES
        origins.append(("ignore_index", f"{shown}: labelme2voc's {LABELME_IGNORE}, 255 in PNG masks and "
                                        "-1 in .npy"))
    return LabelSpec(classes=tuple(names), ignore=ignore, sources=(shown,), origins=tuple(origins))


def normalise_name(name: str) -> str:
    """The form under which names that differ by case, whitespace or punctuation collide."""
    return re.sub(r"[\W_]+", "", name.casefold())


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, (list, tuple)):
        raise SpecError(f"classes must be a list of names, got {value!r}")
    names = tuple(str(v) for v in value)
    empty = [i for i, name in enumerate(names) if not name.strip()]
    if empty:
        raise SpecError(f"classes: {len(empty)} of the {len(names)} names {'is' if len(empty) == 1 else 'are'} "
                        f"empty (position {', '.join(str(i) for i in empty[:5])}); give one name per class, "
                        "comma separated")
    return names


def _int(value: Any, key: str) -> int:
    """An integer from a config or flag value: a whole number or its text; never a bool, a
    fraction (3.9 is no class count), infinity or NaN."""
    if isinstance(value, bool):
        raise SpecError(f"{key} must be an integer, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise SpecError(f"{key} must be an integer, got {value!r}")
        return int(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key} must be an integer, got {value!r}") from None


def _bool(value: Any, key: str) -> bool:
    """A flag from a config: true or false, never the text "false" (which is truthy)."""
    if not isinstance(value, bool):
        raise SpecError(f"{key} must be true or false, got {value!r}")
    return value


def _ints(value: Any, key: str) -> tuple[int, ...]:
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [v for v in str(value).split(",") if v.strip()]
    if not isinstance(value, Iterable):
        raise SpecError(f"{key} must be a list of integers, got {value!r}")
    return tuple(_int(v, key) for v in value)
