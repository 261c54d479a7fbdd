"""Token sequences and the model they feed: the token spec and the token record.

A :class:`TokenSpec` says what a model's embedding tables take: the rows of the word
embedding (``vocab_size``), the positions (``max_position_embeddings`` less the padding
offset of RoBERTa-style learned positions), the segment types (``type_vocab_size``), the
labels of a classification head (``num_labels``, ``-100`` ignored), and what the tokenizer
can produce (its size with added tokens, its special ids). The audit reads it from a model's
``config.json`` and a ``tokenizer.json`` (``labelguard audit --model-config/--tokenizer`` or
a ``[tokens]`` table), the torch guard from the model's own modules; either way it rides on
the label spec as :attr:`LabelSpec.tokens <labelguard.core.spec.LabelSpec.tokens>`, so the
rules get it as every rule gets its spec and the cache keys on it.

A :class:`TokenBatch` is a slice of rows of a tokenized dataset (a record batch of an Arrow
or Parquet file, lines of a JSON-lines file, a batch of tensors), column by column, each a
:class:`TokenColumn`: the flat values of all its sequences with their offsets, so rules judge
a million tokens with one comparison and find the rows of the few bad ones afterwards.

Like the rest of the core, nothing here reads a file or imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from typing import Any, Mapping

import numpy as np

from labelguard.core.spec import INT64_MAX, LabelSpec
from labelguard.core.text import noun
from labelguard.errors import SpecError

# Hugging Face's losses (CrossEntropyLoss's default) skip this label: padding of token
# labels, the unmasked tokens of masked language modelling.
HF_IGNORE_INDEX = -100

# The parts of a token spec whose origin the report names, in the order it names them.
TOKEN_PARTS = ("vocab_size", "max_position_embeddings", "type_vocab_size", "num_labels", "tokenizer")

# Columns of token ids into the word embedding, of segment ids, of positions, of labels.
TOKEN_ID_COLUMNS = ("input_ids", "decoder_input_ids")
TOKEN_TYPE_COLUMN = "token_type_ids"
POSITION_COLUMN = "position_ids"
LABEL_COLUMNS = ("labels", "label")
# Every column the token rules read (a dataset's ClassLabel columns besides).
READ_COLUMNS = (*TOKEN_ID_COLUMNS, TOKEN_TYPE_COLUMN, POSITION_COLUMN, *LABEL_COLUMNS)


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


@dataclass
class TokenColumn:
    """One column of a :class:`TokenBatch`.

    Attributes:
        name: the column's name (``input_ids``).
        values: every value of the column's sequences, flat (an integer array; float for
            labels written as numbers with a fraction).
        offsets: sequence ``s`` is ``values[offsets[s]:offsets[s + 1]]`` (integers starting
            at 0, as the file stores them: int32 or int64); None when the column holds one
            value per row (a sequence label).
        sequence_rows: the row of each sequence when a row holds several (multiple choice:
            one sequence per choice); None when sequence ``s`` is row ``s``.
        classes: the classes the dataset declares for the column (a ``ClassLabel``'s
            ``num_classes``), when it declares them.
        missing: values that are no numbers (null, or text in a JSON line), filled with 0 in
            ``values``; None when there are none. missing_kinds: what they are (``null``,
            ``string``).
        extremes: (lowest, highest) of integer ``values`` when the reader knows them (pyarrow
            finds both in one pass); :meth:`bounds` computes them otherwise.
    """

    name: str
    values: np.ndarray
    offsets: np.ndarray | None = None
    sequence_rows: np.ndarray | None = None
    classes: int | None = None
    missing: np.ndarray | None = None
    missing_kinds: tuple[str, ...] = ()
    extremes: tuple[int, int] | None = None

    def bounds(self) -> tuple[int, int] | None:
        """(lowest, highest) of integer values; None for none or for values that are not
        integers (floats, Python ints past int64), which need an element-wise look."""
        if self.extremes is None and len(self.values) and self.values.dtype.kind in "iu":
            self.extremes = (int(self.values.min()), int(self.values.max()))
        return self.extremes

    @property
    def sequences(self) -> int:
        return len(self.values) if self.offsets is None else len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        """The length of each sequence."""
        if self.offsets is None:
            return np.ones(len(self.values), dtype=np.int64)
        return np.diff(self.offsets)

    def rows_of_values(self, positions: np.ndarray) -> np.ndarray:
        """The batch row of each of the values at ``positions`` (sorted)."""
        if self.offsets is None:
            return positions
        return self.rows_of_sequences(np.searchsorted(self.offsets, positions, side="right") - 1)

    def rows_of_sequences(self, sequences: np.ndarray) -> np.ndarray:
        """The batch row of each of ``sequences``."""
        return sequences if self.sequence_rows is None else self.sequence_rows[sequences]


@dataclass
class TokenBatch:
    """Rows of a tokenized dataset, column by column, as the ``tokens`` rules see them.

    Attributes:
        display: the file (or batch) as shown in findings.
        start: the place of the first row in the file (rows are 0-based, as ``dataset[i]``).
        rows: how many rows the batch holds.
        columns: the columns a rule may read, by name.
        unit: what a row is called in messages (``row``; ``sample`` on the torch side).
        problems: (column, what is wrong) of columns that cannot be read as ids (text in a
            label column, a column of floats where ids belong).
        lines: the line (1-based) of each row in a file of lines (JSON lines, where blank
            lines are skipped), or None where rows are no lines (Arrow, Parquet, a batch).
    """

    display: str
    start: int
    rows: int
    columns: dict[str, TokenColumn] = field(default_factory=dict)
    unit: str = "row"
    problems: list[tuple[str, str]] = field(default_factory=list)
    lines: np.ndarray | None = None

    def column(self, name: str) -> TokenColumn | None:
        return self.columns.get(name)
