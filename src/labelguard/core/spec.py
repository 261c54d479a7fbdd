"""LabelSpec: what label values and class names are legal."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterable, Mapping

from labelguard.errors import SpecError

IGNORE_REDUCED = 255  # mmsegmentation's reduce_zero_label sends 0 here


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
        sources: where each part of the spec came from, for the report.
    """

    classes: tuple[str, ...] | None = None
    values: tuple[int, ...] | None = None
    num_classes: int | None = None
    ignore: tuple[int, ...] = ()
    background: int | None = 0
    reduce_zero_label: bool = False
    sources: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.num_classes is not None and self.num_classes < 1:
            raise SpecError(f"num_classes must be at least 1, got {self.num_classes}")
        if (
            self.classes is not None
            and self.num_classes is not None
            and len(self.classes) != self.num_classes
        ):
            raise SpecError(
                f"{len(self.classes)} class names given but num_classes={self.num_classes}"
            )
        if self.values is not None and self.num_classes is not None:
            if len(self.values) > self.num_classes:
                raise SpecError(
                    f"{len(self.values)} values given ({list(self.values)}) but "
                    f"num_classes={self.num_classes}"
                )

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
        """A copy where every field set in ``other`` (a higher-priority source) wins."""
        changes: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "sources":
                continue
            value = getattr(other, f.name)
            if value != f.default and value is not None:
                changes[f.name] = value
        merged_sources = tuple(dict.fromkeys(self.sources + other.sources))
        # A later source that names a different number of classes replaces the earlier
        # class list, values or count rather than contradicting them (decided before the
        # new spec is built, which would reject the contradiction).
        if other.num_classes is not None:
            if other.classes is None and self.classes is not None and len(self.classes) != other.num_classes:
                changes["classes"] = None
            if other.values is None and self.values is not None and len(self.values) > other.num_classes:
                changes["values"] = None
        elif self.num_classes is not None:
            if other.classes is not None and len(other.classes) != self.num_classes:
                changes["num_classes"] = None
            if other.values is not None and len(other.values) > self.num_classes:
                changes["num_classes"] = None
        return replace(self, **changes, sources=merged_sources)

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
            reduce_zero_label=bool(data.get("reduce_zero_label", False)),
            sources=(source,) if source else (),
        )


def normalise_name(name: str) -> str:
    """The form under which names that differ by case, whitespace or punctuation collide."""
    return re.sub(r"[\W_]+", "", name.casefold())


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, (list, tuple)):
        raise SpecError(f"classes must be a list of names, got {value!r}")
    return tuple(str(v) for v in value)


def _int(value: Any, key: str) -> int:
    if isinstance(value, bool):
        raise SpecError(f"{key} must be an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key} must be an integer, got {value!r}") from None


def _ints(value: Any, key: str) -> tuple[int, ...]:
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [v for v in str(value).split(",") if v.strip()]
    if not isinstance(value, Iterable):
        raise SpecError(f"{key} must be a list of integers, got {value!r}")
    return tuple(_int(v, key) for v in value)
