"""LabelSpec: what label values and class names are legal; TokenSpec: what a model's
embedding tables take (it rides on the label spec as ``LabelSpec.tokens``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Set
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from typing import Any, Iterable, Mapping

import numpy as np

from labelguard.core.text import noun
from labelguard.errors import SpecError

IGNORE_REDUCED = 255  # mmsegmentation's reduce_zero_label sends 0 here
# Every number of a spec is an int64, the widest type a label tensor has: past it a value
# cannot be a class and a count cannot be met.
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
# Up to this many values outside a set's interval are compared one by one, not by np.isin.
_COMPARED_ONE_BY_ONE = 8

# The parts of a spec whose origin the report names, in the order it names them.
PARTS = ("classes", "values", "num_classes", "ignore_index", "background", "reduce_zero_label", "dtype",
         "require_pairs", "max_files_unreadable", "sizes", "masks_hold")
# The parts that say which values are classes: a user who gives one of them gives the spec.
CLASS_PARTS = ("classes", "values", "num_classes")
# How a target's size relates to its input's and to the other samples' (``sizes``): "equal"
# (the default: a mask has its image's size, and a split's samples share one shape) or "any"
# (multi-scale pipelines that crop or resize in the loader); a number is a scale factor (the
# target is that many times the input's size: super-resolution pairs).
SIZE_RELATIONS = ("equal", "any")
# What the values of a dataset's masks are (``masks_hold``): "classes" (semantic masks: a value
# is a class) or "instances" (instance-id masks: a value numbers one object, 0 is background,
# as StarDist, Cellpose and MONAI write them). Undeclared, each mask's own evidence decides.
MASK_CONTENTS = ("classes", "instances")
# The dtypes a spec may declare for its masks (``dtype = "uint8"``): integer types only.
MASK_DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")
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
class ValueSet:
    """A set of integers as one interval ``[start, stop)`` plus a few other values: the shape
    of every set of legal values, so that it costs what its other values cost, whatever the
    interval spans (a spec of 100,000,000 classes is two numbers).

    ``in`` and :meth:`contains` (an array) never enumerate the interval, nor does ``size``;
    iterating yields the values in ascending order, lazily, so ``sorted``/``list`` of a set
    costs its size: look at ``size`` (or ``is_interval``) before listing one. Build one with
    :meth:`of`, which keeps it canonical (``others`` never touches the interval).
    """

    start: int = 0
    stop: int = 0
    others: frozenset[int] = frozenset()

    @classmethod
    def of(cls, values: Iterable[int] = (), *, start: int = 0, stop: int = 0) -> "ValueSet":
        """The values with the interval ``[start, stop)``, in the one form that makes equal
        sets equal: the longest run of consecutive members (the lowest on a tie) is the
        interval. Costs what ``values`` holds."""
        if stop <= start:
            start = stop = 0
        runs: list[list[int]] = []  # half-open runs of consecutive values outside the interval
        for value in sorted({int(v) for v in values if not start <= v < stop}):
            if runs and runs[-1][1] == value:
                runs[-1][1] += 1
            else:
                runs.append([value, value + 1])
        if stop > start:
            interval = [start, stop]
            apart = []
            for run in runs:  # a run that touches the interval joins it
                if run[1] == interval[0]:
                    interval[0] = run[0]
                elif run[0] == interval[1]:
                    interval[1] = run[1]
                else:
                    apart.append(run)
            runs = apart + [interval]
        if not runs:
            return cls()
        # Another run is longer than the given interval only when the interval is shorter than
        # the values given: listing it below costs no more than they do.
        longest = max(runs, key=lambda run: (run[1] - run[0], -run[0]))
        others = frozenset(v for run in runs if run is not longest for v in range(run[0], run[1]))
        return cls(longest[0], longest[1], others)

    @property
    def size(self) -> int:
        """How many values (a Python int: no limit)."""
        return self.stop - self.start + len(self.others)

    @property
    def is_interval(self) -> bool:
        """True when the set is exactly ``[start, stop)`` (empty included)."""
        return not self.others

    @property
    def lowest(self) -> int | None:
        candidates = ([self.start] if self.stop > self.start else []) + ([min(self.others)] if self.others else [])
        return min(candidates) if candidates else None

    @property
    def highest(self) -> int | None:
        candidates = ([self.stop - 1] if self.stop > self.start else []) + ([max(self.others)] if self.others else [])
        return max(candidates) if candidates else None

    def shifted(self, by: int) -> "ValueSet":
        """Every value plus ``by``."""
        return ValueSet(self.start + by, self.stop + by, frozenset(v + by for v in self.others))

    def contains(self, values: np.ndarray) -> np.ndarray:
        """``value in self`` for every element of an array of any numeric dtype, as a bool
        array of its shape: vectorised on what int64 holds, exact past it (uint64 values,
        object arrays of Python ints, whole floats); fractions, NaN and infinities are not in
        any set."""
        array = np.asarray(values)
        kind = array.dtype.kind
        if kind == "O":
            flat = array.reshape(-1)
            return np.fromiter((v in self for v in flat.tolist()), dtype=bool, count=flat.size).reshape(array.shape)
        if kind == "b" or (kind in "iu" and (kind == "i" or array.dtype.itemsize < 8)):
            return self._contains_int64(array.astype(np.int64, copy=False))
        if kind == "u":  # uint64: past int64 no value of a spec lies, but a set may hold one
            fits = array <= INT64_MAX
        elif kind == "f":
            whole = np.isfinite(array) & (np.floor(array) == array)
            fits = whole & (array >= -2.0 ** 63) & (array < 2.0 ** 63)
        else:  # complex, text, dates: no label
            return np.zeros(array.shape, dtype=bool)
        found = np.zeros(array.shape, dtype=bool)
        found[fits] = self._contains_int64(array[fits].astype(np.int64))
        beyond = ~fits if kind == "u" else whole & ~fits
        if beyond.any():
            distinct, inverse = np.unique(array[beyond], return_inverse=True)
            members = np.array([int(v) in self for v in distinct.tolist()], dtype=bool)
            found[beyond] = members[inverse.reshape(-1)]
        return found

    def _contains_int64(self, array: np.ndarray) -> np.ndarray:
        found = np.zeros(array.shape, dtype=bool)
        if self.stop > self.start:
            found = (array >= self.start) & (array < self.stop)
        others = self._others_int64
        if others.size > _COMPARED_ONE_BY_ONE:
            found |= np.isin(array, others)
        else:
            # A few ignore values (255, -1): a comparison each costs far less than np.isin's
            # set-up on the small arrays of distinct values this mostly sees.
            for value in others.tolist():
                found |= array == value
        return found

    @cached_property
    def _others_int64(self) -> np.ndarray:
        # Built once per set (not a field: equality and hashing ignore it).
        return np.array(sorted(v for v in self.others if INT64_MIN <= v <= INT64_MAX), dtype=np.int64)

    def __contains__(self, value: object) -> bool:
        number = _integer(value)
        return number is not None and (self.start <= number < self.stop or number in self.others)

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __iter__(self) -> Iterator[int]:
        yield from sorted(v for v in self.others if v < self.start)
        yield from range(self.start, self.stop)
        yield from sorted(v for v in self.others if v >= self.stop)

    def __or__(self, values: Iterable[int]) -> "ValueSet":
        """The set with a few more values (ignore values, say): costs what they hold."""
        return ValueSet.of([*self.others, *values], start=self.start, stop=self.stop)

    __ror__ = __or__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ValueSet):
            return (self.start, self.stop, self.others) == (other.start, other.stop, other.others)
        if isinstance(other, Set):
            return len(other) == self.size and all(v in self for v in other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.start, self.stop, self.others))

    def __repr__(self) -> str:
        interval = f"[{self.start}, {self.stop})" if self.stop > self.start else ""
        others = "{" + ", ".join(str(v) for v in sorted(self.others)) + "}" if self.others else ""
        return f"ValueSet({' + '.join(part for part in (interval, others) if part) or '{}'})"


def _integer(value: object) -> int | None:
    """``value`` as an exact int when it is an integer or a whole finite float, else None."""
    if isinstance(value, (int, np.integer, np.bool_)):
        return int(value)
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


def reduce_zero_label(values: np.ndarray) -> np.ndarray:
    """mmsegmentation's reduce_zero_label on an integer array (:meth:`LabelSpec.loss_value`
    on each): 0 -> 255, v -> v - 1, 255 stays; int64 out."""
    out = values.astype(np.int64) - 1
    out[values == 0] = IGNORE_REDUCED
    out[values == IGNORE_REDUCED] = IGNORE_REDUCED
    return out


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
        sources: (read-only) the files and flags the spec came from (plain paths, so that a
            fixer can open a class-name file): :meth:`from_source`, :meth:`with_origins`.
        origins: (read-only) ``(part, origin)`` pairs naming which file or flag gave each part
            (see :data:`PARTS`); filled from ``sources`` when not given.
        notes: (read-only) what merging the spec's layers replaced, for the report.
        tokens: what the model's embedding tables take, for token sequences
            (:class:`TokenSpec`: ``--model-config``, ``--tokenizer``,
            a ``[tokens]`` table, or a model's own modules); None when nothing was said.
        dtype: the integer dtype masks must be stored as (strict admission: a mask stored
            otherwise is LG207), or None.
        require_pairs: every mask must have its image, paired by name or stored in the
            same file (strict admission: a mask without one is LG002).
        max_files_unreadable: the most files of a dataset that may be unreadable (strict
            admission: more is a dataset-level LG001), or None for no bound.
        sizes: how a target's size relates to its input's (:data:`SIZE_RELATIONS`): None or
            ``"equal"`` (image and mask of one size, LG206; a split's samples of one shape,
            LG213), ``"any"`` (neither is checked: sizes differ on purpose), or a scale factor
            (a float: the target is ``sizes`` times its input's size, super-resolution). Read
            it with :attr:`sizes_vary` and :attr:`scale`; only the user declares it (never data beside the
            data: it makes verdicts less strict).
        masks_hold: what mask values are (:data:`MASK_CONTENTS`): ``"instances"`` (every integer
            mask is an instance-id mask: LG212 checks its objects, no class rule judges its
            ids), ``"classes"`` (every mask holds classes: masks that look like instance ids are
            LG212), or None (each mask's own evidence decides). A config found with the data
            may say ``"classes"`` only: ``"instances"`` makes verdicts less strict.
        conventional_ignore: (read-only) the ignore values a tool's convention gave rather than a
            declaration (labelme2voc's ``__ignore__``, stored as 255 and -1): legal all the
            same; the ignore_index origin names the convention and the file that made it one.
        declared: (read-only) the parts of :data:`PARTS` the user declared (flags, the API's spec, a
            config: :meth:`as_declared`), as against those that dataset metadata or a
            convention filled; :meth:`merged` keeps them.

    What is legal is said here and nowhere else; ask, never recompute:

    * :meth:`is_legal` (one value) and :meth:`legal` (a numpy array, vectorised): values as
      stored, reduce_zero_label applied inside, ignore values legal; ``reduce=False`` for
      values reduce_zero_label never touches (class ids of annotation files).
    * :meth:`is_ignored`, :meth:`loss_value`: what the loss ignores, what it sees.
    * :meth:`allowed_values` (the class values) and :meth:`legal_values` (everything legal):
      :class:`ValueSet` objects, an interval plus a few other values, so a spec of
      100,000,000 classes costs two numbers; ``size``, ``highest``, ``is_interval``;
      :meth:`is_contiguous`, :meth:`describe`, :attr:`is_known`.

    Nothing here costs more than the values the spec lists: no call enumerates
    ``range(num_classes)``; iterating a :class:`ValueSet` does, so check its ``size`` first.
    Every number is an int64 (:class:`SpecError` past it).
    """

    classes: tuple[str, ...] | None = None
    values: tuple[int, ...] | None = None
    num_classes: int | None = None
    ignore: tuple[int, ...] = ()
    background: int | None = 0
    reduce_zero_label: bool = False
    tokens: TokenSpec | None = None
    dtype: str | None = None
    require_pairs: bool = False
    max_files_unreadable: int | None = None
    sizes: str | float | None = None
    masks_hold: str | None = None
    # Provenance, set by labelguard (from_source, with_origins, merged, as_declared), never by
    # the constructor's user: keyword-only and private; read them through the properties.
    _sources: tuple[str, ...] = field(default=(), compare=False, kw_only=True, repr=False)
    _origins: tuple[tuple[str, str], ...] = field(default=(), compare=False, kw_only=True, repr=False)
    _notes: tuple[str, ...] = field(default=(), compare=False, kw_only=True, repr=False)
    _conventional_ignore: tuple[int, ...] = field(default=(), kw_only=True, repr=False)
    _declared: tuple[str, ...] = field(default=(), kw_only=True, repr=False)

    def __post_init__(self) -> None:
        if self.dtype is not None and self.dtype not in MASK_DTYPES:
            raise SpecError(f"dtype {self.dtype!r} is not a mask dtype; known: {', '.join(MASK_DTYPES)}")
        if self.max_files_unreadable is not None and self.max_files_unreadable < 0:
            raise SpecError(f"max_files_unreadable must be 0 or more, got {self.max_files_unreadable}")
        if self.num_classes is not None and self.num_classes < 1:
            raise SpecError(f"num_classes must be at least 1, got {self.num_classes}")
        if self.sizes is not None:
            object.__setattr__(self, "sizes", size_relation(self.sizes))
        if self.masks_hold is not None:
            object.__setattr__(self, "masks_hold", mask_contents(self.masks_hold))
        _check_int64("num_classes", () if self.num_classes is None else (self.num_classes,))
        _check_int64("values", self.values or ())
        _check_int64("ignore_index", self.ignore)
        _check_int64("background", () if self.background is None else (self.background,))
        # A class list and a count that disagree are both kept (no check here): the count
        # decides what is legal, the names still name the values, the report states it.
        # A spec built from its sources alone got every part it sets from them.
        if not self.origins and self.sources:
            origin = ", ".join(self.sources)
            object.__setattr__(self, "_origins", tuple((part, origin) for part in self.set_parts()))
        if self.values is not None and self.num_classes is not None:
            if len(self.values) > self.num_classes:
                raise SpecError(
                    f"{len(self.values)} values given ({list(self.values)}) but "
                    f"num_classes={self.num_classes}"
                )

    @property
    def sources(self) -> tuple[str, ...]:
        return self._sources

    @property
    def origins(self) -> tuple[tuple[str, str], ...]:
        return self._origins

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes

    @property
    def conventional_ignore(self) -> tuple[int, ...]:
        return self._conventional_ignore

    @property
    def declared(self) -> tuple[str, ...]:
        return self._declared

    @classmethod
    def from_source(cls, source: str, **parts: Any) -> "LabelSpec":
        """A spec whose every part ``source`` (a file, a flag) gave: what the report names as
        its origin."""
        return cls(**parts, _sources=(source,) if source else ())

    def with_origins(self, origins: Iterable[tuple[str, str]]) -> "LabelSpec":
        """This spec with each part's origin named: ``(part, origin)`` pairs of :data:`PARTS`."""
        origins = tuple(origins)
        return replace(self, _sources=tuple(dict.fromkeys(origin for _, origin in origins)), _origins=origins)

    def as_declared(self) -> "LabelSpec":
        """This spec as the user's own declaration: every part it sets is :attr:`declared`."""
        return replace(self, _declared=self.set_parts())

    def unsaid_ignore(self) -> tuple[int, ...]:
        """The ignore values legal only by a convention in a spec the user gave: the user
        declared which values are classes and no ignore index, a convention added these
        (LG210), and without them they would be illegal. Empty when the user gave no spec:
        conventions then fill what nobody said, and the spec line names them."""
        if "ignore_index" in self.declared or not any(part in self.declared for part in CLASS_PARTS):
            return ()
        conventional = [v for v in self.conventional_ignore if v in self.ignore]
        if not conventional:
            return ()
        without = replace(self, ignore=tuple(v for v in self.ignore if v not in conventional),
                          _conventional_ignore=())
        return tuple(v for v in conventional if not without.is_legal(v))

    def set_parts(self) -> tuple[str, ...]:
        """The parts of :data:`PARTS` this spec sets (a background of 0 is the default)."""
        present = {
            "classes": self.classes is not None,
            "values": self.values is not None,
            "num_classes": self.num_classes is not None,
            "ignore_index": bool(self.ignore),
            "background": self.background != 0,
            "reduce_zero_label": self.reduce_zero_label,
            "dtype": self.dtype is not None,
            "require_pairs": self.require_pairs,
            "max_files_unreadable": self.max_files_unreadable is not None,
            "sizes": self.sizes is not None,
            "masks_hold": self.masks_hold is not None,
        }
        return tuple(part for part in PARTS if present[part])

    @property
    def count_disagrees(self) -> bool:
        """True when a class list and num_classes of another length are both given: the
        count then decides which ids are legal (a note says so; LG214 reports the data's use
        of a name past the count)."""
        return self.classes is not None and self.num_classes is not None and len(self.classes) != self.num_classes

    def legal_class_names(self) -> tuple[str, ...]:
        """The class names whose index is a class value: all of them, less those past
        num_classes when a count that disagrees decides; () without a class list."""
        if self.classes is None:
            return ()
        return self.classes[:self.num_classes] if self.count_disagrees else self.classes

    def origin(self, part: str) -> str | None:
        """The file or flag that gave ``part`` (one of :data:`PARTS`), when known."""
        return dict(self.origins).get(part)

    def origin_note(self, part: str) -> str:
        """`` (the file or flag)`` that gave ``part``, for a message that cites the spec; ""
        when unknown."""
        origin = self.origin(part)
        return f" ({origin})" if origin else ""

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
        count that disagree (LG214 adds a finding when the data uses a name past the count), a
        part one layer replaced in another, a spec that only a class-name file beside the data
        gives."""
        notes = list(self.notes)
        if self.tokens is not None:
            notes.append(f"token spec: {self.tokens.describe()}")
            notes.extend(self.tokens.notes)
        if self.count_disagrees:
            # count_disagrees holds only when both are given
            assert self.classes is not None and self.num_classes is not None  # not a user mistake: see above
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
        return self._class_values is not None

    @property
    def effective_num_classes(self) -> int | None:
        if self.num_classes is not None:
            return self.num_classes
        if self.classes is not None:
            return len(self.classes)
        if self.values is not None:
            return len(self.values)
        return None

    def allowed_values(self) -> ValueSet | None:
        """The legal class values, without the ignore values; None when unknown.

        ``values`` when given, else ``[0, num_classes)`` (a class list counts when there is
        no ``num_classes``), as a :class:`ValueSet`: an interval, never a list of its members.
        """
        return self._class_values

    def legal_values(self, *, reduce: bool = True) -> ValueSet | None:
        """Every legal value as stored: the class values and the ignore values, and under
        reduce_zero_label the stored values that become them (``v + 1``) or become 255 (0,
        255); None when unknown. ``reduce=False`` for values that reduce_zero_label never
        touches (class ids of annotation files)."""
        return self._legal_reduced if reduce and self.reduce_zero_label else self._legal_plain

    def is_legal(self, value: Any, *, reduce: bool = True) -> bool:
        """True when one stored value (an int, an exact Python int past int64, a whole
        float) is legal; a spec that says nothing (``is_known`` False) forbids nothing."""
        legal = self.legal_values(reduce=reduce)
        return legal is None or value in legal

    def legal(self, values: np.ndarray, *, reduce: bool = True) -> np.ndarray:
        """:meth:`is_legal` of every element of an array (any numeric dtype, uint64 past
        int64 included), as a bool array of its shape. Vectorised over the array; what it
        costs never depends on num_classes. Fractions, NaN and infinities are illegal."""
        legal = self.legal_values(reduce=reduce)
        if legal is None:
            return np.ones(np.shape(values), dtype=bool)
        return legal.contains(values)

    def is_ignored(self, value: int, *, reduce: bool = True) -> bool:
        """True when the loss ignores a stored value: an ignore value, or under
        reduce_zero_label one that becomes 255 or an ignore value."""
        if reduce and self.reduce_zero_label:
            seen = self.loss_value(value)
            return seen == IGNORE_REDUCED or seen in self.ignore
        return value in self.ignore

    def loss_value(self, value: int) -> int:
        """The value the loss sees for a stored one: under reduce_zero_label 0 and 255 become
        255 and any other v becomes v - 1 (:func:`reduce_zero_label` on arrays); else itself."""
        if not self.reduce_zero_label:
            return value
        return IGNORE_REDUCED if value in (0, IGNORE_REDUCED) else value - 1

    def is_contiguous(self) -> bool:
        """True when the class values are exactly ``0 .. n - 1``."""
        allowed = self._class_values
        return allowed is not None and allowed.is_interval and allowed.start == 0

    def describe(self) -> str:
        """A short text such as ``[0, 9) (num_classes=9, ignore_index=None)``."""
        allowed = self._class_values
        if allowed is None:
            return "no label spec given"
        if self.is_contiguous():
            head = f"[0, {allowed.size})"
        else:
            # Not an interval from 0, so the spec's explicit values: listing them costs what
            # the spec itself holds.
            head = "{" + ", ".join(str(v) for v in allowed) + "}"
        ignore = ", ".join(str(v) for v in self.ignore) if self.ignore else "None"
        extra = ", reduce_zero_label=True" if self.reduce_zero_label else ""
        return f"{head} (num_classes={self.effective_num_classes}, ignore_index={ignore}{extra})"

    @property
    def sizes_vary(self) -> bool:
        """True when the user declared that sizes differ on purpose (``sizes = "any"``): no
        size check applies (LG206 between input and target, LG213 between samples)."""
        return self.sizes == "any"

    @property
    def scale(self) -> float | None:
        """The declared scale factor of a target's size to its input's, None when there is
        none (sizes "equal", "any" or not declared)."""
        return self.sizes if isinstance(self.sizes, float) else None

    # The sets below are built once per spec (a frozen dataclass; the cache is not a field,
    # so equality, hashing and ``replace`` ignore it).
    @cached_property
    def _class_values(self) -> ValueSet | None:
        if self.values is not None:
            return ValueSet.of(self.values)
        n = self.effective_num_classes
        return None if n is None else ValueSet.of(start=0, stop=n)

    @cached_property
    def _legal_plain(self) -> ValueSet | None:
        classes = self._class_values
        return None if classes is None else classes | self.ignore

    @cached_property
    def _legal_reduced(self) -> ValueSet | None:
        # Stored v is legal when v - 1 is (the loss sees v - 1), and 0 and 255 always are
        # (they become 255, the value reduce_zero_label leaves for the loss to ignore).
        seen = self._legal_plain
        return None if seen is None else (seen | (IGNORE_REDUCED,)).shifted(1) | (0, IGNORE_REDUCED)

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
        import difflib

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
            if f.name.startswith("_"):  # provenance: merged below
                continue
            value = getattr(other, f.name)
            if f.name == "tokens" and value is not None and self.tokens is not None:
                value = self.tokens.merged(value)
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
        # The ignore values are those of the highest layer that sets them, and so is which of
        # them a convention gave.
        conventional = other.conventional_ignore if other.ignore else self.conventional_ignore
        result = replace(self, **changes, _sources=merged_sources, _origins=(), _notes=tuple(notes),
                         _conventional_ignore=conventional)
        kept = tuple((part, origins[part]) for part in PARTS if part in origins and part in result.set_parts())
        declared = tuple(part for part in result.set_parts() if part in self.declared + other.declared)
        return replace(result, _origins=kept, _declared=declared)

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
        if self.tokens is not None:
            data["tokens"] = self.tokens.to_dict()
        if self.dtype is not None:
            data["dtype"] = self.dtype
        if self.require_pairs:
            data["require_pairs"] = True
        if self.max_files_unreadable is not None:
            data["max_files_unreadable"] = self.max_files_unreadable
        if self.sizes is not None:
            data["sizes"] = self.sizes
        if self.masks_hold is not None:
            data["masks_hold"] = self.masks_hold
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "") -> "LabelSpec":
        """Build a spec from a config table; unknown keys are an error that names them."""
        known = {"classes", "values", "num_classes", "ignore_index", "ignore", "background",
                 "reduce_zero_label", "dtype", "require_pairs", "max_files_unreadable", "sizes",
                 "masks_hold"}
        unknown = sorted(set(data) - known)
        if unknown:
            where = f" in {source}" if source else ""
            raise SpecError(
                f"unknown label spec {noun(len(unknown), 'key')} {', '.join(unknown)}{where}; "
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
            _sources=(source,) if source else (),
            dtype=_dtype(data["dtype"]) if data.get("dtype") is not None else None,
            require_pairs=_bool(data.get("require_pairs", False), "require_pairs"),
            max_files_unreadable=_int(data["max_files_unreadable"], "max_files_unreadable")
            if data.get("max_files_unreadable") is not None else None,
            sizes=size_relation(data["sizes"]) if data.get("sizes") is not None else None,
            masks_hold=mask_contents(data["masks_hold"]) if data.get("masks_hold") is not None else None,
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
    return LabelSpec(classes=tuple(names), ignore=ignore, _sources=(shown,), _origins=tuple(origins),
                     _conventional_ignore=ignore)


def normalise_name(name: str) -> str:
    """The form under which names that differ by case, whitespace or punctuation collide."""
    return re.sub(r"[\W_]+", "", name.casefold())


def _check_int64(part: str, numbers: Iterable[int]) -> None:
    for number in numbers:
        if not INT64_MIN <= number <= INT64_MAX:
            raise SpecError(f"{part} {number} is past what a label can hold: spec numbers are int64, "
                            f"{INT64_MIN} to {INT64_MAX}")


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


def size_relation(value: Any) -> str | float:
    """A declared size relation (``sizes``): ``"equal"``, ``"any"``, or a scale factor above 0
    (a number, or its text: ``2``, ``"x2"``, ``"0.5"``)."""
    shown = value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in SIZE_RELATIONS:
            return text
        value = text[1:] if text.startswith("x") else text
    if isinstance(value, bool):
        value = None
    try:
        factor = float(value)
    except (TypeError, ValueError):
        factor = float("nan")
    if not (0 < factor < float("inf")):
        raise SpecError(f"sizes must be \"equal\", \"any\" or a scale factor above 0 (2 for targets twice the "
                        f"input's size), got {shown!r}")
    return "equal" if factor == 1.0 else factor


def mask_contents(value: Any) -> str:
    """What masks hold (``masks_hold``): ``"classes"`` (``"semantic"`` says the same) or
    ``"instances"``."""
    text = value.strip().lower() if isinstance(value, str) else value
    if text == "semantic":
        return "classes"
    if text not in MASK_CONTENTS:
        raise SpecError(f"masks_hold must be \"classes\" (or \"semantic\") or \"instances\", got {value!r}")
    return text


def _dtype(value: Any) -> str:
    """A mask dtype named in a config: one of :data:`MASK_DTYPES`."""
    if not isinstance(value, str) or value.strip().lower() not in MASK_DTYPES:
        raise SpecError(f"dtype must be one of {', '.join(MASK_DTYPES)}, got {value!r}")
    return value.strip().lower()


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


# Hugging Face's losses (CrossEntropyLoss's default) skip this label: padding of token
# labels, the unmasked tokens of masked language modelling.
HF_IGNORE_INDEX = -100

# The parts of a token spec whose origin the report names, in the order it names them.
TOKEN_PARTS = ("vocab_size", "max_position_embeddings", "type_vocab_size", "num_labels", "tokenizer")


@dataclass(frozen=True)
class TokenSpec:
    """What a model's embedding tables and head take, and what its tokenizer produces.

    Attributes:
        vocab_size: rows of the word embedding: token ids must be below it.
        max_position_embeddings: rows of a learned position table; None when the model has
            none (rotary, relative or sinusoidal positions take any length).
        position_offset: positions the table reserves before the first token: RoBERTa-style
            models number positions from ``pad_token_id + 1``, so a 514-row table takes 512
            tokens.
        type_vocab_size: rows of the segment (token type) embedding.
        num_labels: classes of the classification head; None when the model has none.
        label_ignore: label values the loss skips (``-100``).
        labels_are_tokens: the model's labels are token ids (masked or causal language
            modelling): they must be below ``vocab_size``, not ``num_labels``.
        pad_token_id: the padding id (RoBERTa-style positions do not count it).
        model_type: the model family, for messages (``roberta``).
        tokenizer_size: the tokenizer's highest id + 1, added tokens included.
        special_ids: (token, id) of the tokenizer's special tokens.
        origins: ``(part, origin)`` pairs naming the file or module behind each part of
            :data:`TOKEN_PARTS`.
        notes: what the report must say about the spec (a table that was not checked, why).
    """

    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    position_offset: int = 0
    type_vocab_size: int | None = None
    num_labels: int | None = None
    label_ignore: tuple[int, ...] = (HF_IGNORE_INDEX,)
    labels_are_tokens: bool = False
    pad_token_id: int | None = None
    model_type: str | None = None
    tokenizer_size: int | None = None
    special_ids: tuple[tuple[str, int], ...] = ()
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_position_embeddings", "type_vocab_size", "num_labels", "tokenizer_size"):
            value = getattr(self, name)
            if value is not None and not 1 <= value <= INT64_MAX:
                raise SpecError(f"{name} must be a whole number from 1 to {INT64_MAX}, got {value}")
        if self.position_offset < 0:
            raise SpecError(f"position_offset must be 0 or more, got {self.position_offset}")
        if self.max_position_embeddings is not None and self.position_offset >= self.max_position_embeddings:
            raise SpecError(f"position_offset {self.position_offset} leaves no position of the "
                            f"{self.max_position_embeddings} of max_position_embeddings")

    @property
    def is_known(self) -> bool:
        """True when the spec says anything a token column can be checked against."""
        return any(value is not None for value in (self.vocab_size, self.max_position_embeddings,
                                                   self.type_vocab_size, self.num_labels, self.tokenizer_size))

    @property
    def longest(self) -> int | None:
        """The most tokens one sequence may hold (positions less the padding offset)."""
        if self.max_position_embeddings is None:
            return None
        return self.max_position_embeddings - self.position_offset

    @property
    def id_limit(self) -> int | None:
        """Token ids must be below this: the embedding's rows, or without a model the
        tokenizer's size (an id past it came from no such tokenizer)."""
        return self.vocab_size if self.vocab_size is not None else self.tokenizer_size

    def origin(self, part: str) -> str | None:
        """The file or module that gave ``part`` (one of :data:`TOKEN_PARTS`), when known."""
        return self._origin_of.get(part)

    @cached_property
    def _origin_of(self) -> dict[str, str]:
        return dict(self.origins)

    def described(self, part: str, text: str) -> str:
        """``text`` with where ``part`` came from: ``vocab_size 30522 from config.json``."""
        origin = self.origin(part)
        return f"{text} from {origin}" if origin else text

    # The legality of each column, asked of a LabelSpec like every other label value:
    # built once per spec (not fields: equality and hashing ignore them).
    @cached_property
    def token_ids(self) -> LabelSpec | None:
        """The legal token ids, ``[0, id_limit)``."""
        return None if self.id_limit is None else LabelSpec(num_classes=self.id_limit)

    @cached_property
    def token_labels(self) -> LabelSpec | None:
        """The legal labels of a language model: token ids, and the ignore values."""
        return None if self.id_limit is None else LabelSpec(num_classes=self.id_limit, ignore=self.label_ignore)

    @cached_property
    def token_types(self) -> LabelSpec | None:
        return None if self.type_vocab_size is None else LabelSpec(num_classes=self.type_vocab_size)

    @cached_property
    def positions(self) -> LabelSpec | None:
        return None if self.max_position_embeddings is None else LabelSpec(num_classes=self.max_position_embeddings)

    def class_labels(self, classes: int) -> LabelSpec:
        """The legal values of a label column of ``classes`` classes: the classes and the
        ignore values."""
        return class_label_spec(classes, self.label_ignore)

    def merged(self, other: "TokenSpec") -> "TokenSpec":
        """A copy where every part ``other`` (a higher-priority source) sets wins."""
        changes: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("origins", "notes"):
                continue
            value = getattr(other, f.name)
            if value != f.default and value is not None:
                changes[f.name] = value
        origins = dict(self.origins)
        origins.update(other.origins)
        notes = tuple(dict.fromkeys(self.notes + other.notes))
        return replace(self, **changes, origins=tuple(origins.items()), notes=notes)

    def describe(self) -> str:
        """The spec in one line with where its parts came from: ``vocab_size 30522,
        type_vocab_size 2 (from config.json); tokenizer of 30524 ids (from tokenizer.json)``."""
        parts: list[tuple[str, str]] = []
        if self.vocab_size is not None:
            parts.append(("vocab_size", f"vocab_size {self.vocab_size}"))
        if self.max_position_embeddings is not None:
            offset = f" less padding offset {self.position_offset}" if self.position_offset else ""
            parts.append(("max_position_embeddings",
                          f"max_position_embeddings {self.max_position_embeddings}{offset}"))
        if self.type_vocab_size is not None:
            parts.append(("type_vocab_size", f"type_vocab_size {self.type_vocab_size}"))
        if self.num_labels is not None:
            parts.append(("num_labels", f"num_labels {self.num_labels}"))
        if self.tokenizer_size is not None:
            parts.append(("tokenizer", f"tokenizer of {self.tokenizer_size} ids"))
        if not parts:
            return "nothing known"
        groups: dict[str | None, list[str]] = {}
        for part, text in parts:
            groups.setdefault(self.origin(part), []).append(text)
        text = "; ".join(", ".join(texts) + (f" (from {origin})" if origin else "") for origin, texts in groups.items())
        return text + ("; labels are token ids" if self.labels_are_tokens else "")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("origins", "notes")}
        data["label_ignore"] = list(self.label_ignore)
        data["special_ids"] = {token: id_ for token, id_ in self.special_ids}
        data["origins"] = dict(self.origins)
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "") -> "TokenSpec":
        """A spec from a config table of numbers; unknown keys are an error naming them."""
        unknown = sorted(set(data) - set(CONFIG_KEYS))
        if unknown:
            where = f" in {source}" if source else ""
            raise SpecError(f"unknown token spec {noun(len(unknown), 'key')} {', '.join(unknown)}{where}; "
                            f"known keys: {', '.join(sorted(CONFIG_KEYS) + sorted(FILE_KEYS))}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key == "label_ignore_index":
                values["label_ignore"] = _whole_numbers(value, key, source)
            elif key == "labels_are_tokens":
                if not isinstance(value, bool):
                    raise SpecError(f"{key} must be true or false{_in(source)}, got {value!r}")
                values[key] = value
            else:
                values[key] = _whole_number(value, key, source)
        parts = {"vocab_size": "vocab_size", "max_position_embeddings": "max_position_embeddings",
                 "position_offset": "max_position_embeddings", "type_vocab_size": "type_vocab_size",
                 "num_labels": "num_labels"}
        origins = tuple(dict.fromkeys((parts[key], source) for key in values if key in parts and source))
        return cls(**values, origins=origins)


@lru_cache(maxsize=256)
def class_label_spec(classes: int, ignore: tuple[int, ...]) -> LabelSpec:
    """The legal labels of ``classes`` classes with ``ignore`` values: one spec per pair, built
    once (a file's batches all ask for the same)."""
    return LabelSpec(num_classes=classes, ignore=ignore)


# The keys of a [tokens] config table that are numbers, and those that name files.
CONFIG_KEYS = ("vocab_size", "max_position_embeddings", "position_offset", "type_vocab_size", "num_labels",
               "label_ignore_index", "labels_are_tokens")
FILE_KEYS = ("model_config", "tokenizer")


def _in(source: str) -> str:
    return f" in {source}" if source else ""


def _whole_number(value: Any, key: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{key} must be a whole number{_in(source)}, got {value!r}")
    return value


def _whole_numbers(value: Any, key: str, source: str) -> tuple[int, ...]:
    values = value if isinstance(value, (list, tuple)) else [value]
    return tuple(_whole_number(v, key, source) for v in values)


# The spec of rules that judge no label values (the names a list writes, the files a pairing
# left alone): it says nothing, so it allows everything.
NO_SPEC = LabelSpec()
