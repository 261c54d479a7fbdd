"""Token sequences: the token record (the token spec, what the model takes, is
:class:`labelguard.core.spec.TokenSpec`).

The :class:`~labelguard.core.spec.TokenSpec` says what a model's embedding tables take: the rows of the word
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

from dataclasses import dataclass, field

import numpy as np


# Columns of token ids into the word embedding, of segment ids, of positions, of labels.
TOKEN_ID_COLUMNS = ("input_ids", "decoder_input_ids")
TOKEN_TYPE_COLUMN = "token_type_ids"
POSITION_COLUMN = "position_ids"
LABEL_COLUMNS = ("labels", "label")
# Every column the token rules read (a dataset's ClassLabel columns besides).
READ_COLUMNS = (*TOKEN_ID_COLUMNS, TOKEN_TYPE_COLUMN, POSITION_COLUMN, *LABEL_COLUMNS)


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
