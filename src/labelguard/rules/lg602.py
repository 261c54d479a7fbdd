"""LG602 sequence-longer-than-positions: a sequence longer than the model's learned position
table, with the padding offset of RoBERTa-style models counted."""

from __future__ import annotations

import numpy as np

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.tokens import POSITION_COLUMN, TOKEN_ID_COLUMNS, TokenBatch, TokenColumn
from labelguard.core.spec import TokenSpec
from labelguard.rules._examples import token_lines
from labelguard.rules._tokens import offending_sequences, offending_values

SEQUENCE_TOO_LONG = define(
    "LG602", "sequence-longer-than-positions", "error",
    summary="a sequence is longer than the model's positions (max_position_embeddings, less the padding "
    "offset of RoBERTa-style models)",
    why="""
Learned positions are an embedding of max_position_embeddings rows: token i of a sequence
looks up row i. A longer sequence indexes past the table, the same "index out of range in
self" on the CPU and "srcIndex < srcSelectDimSize" device-side assert on a GPU as a bad token
id. RoBERTa-style models (RoBERTa, XLM-R, CamemBERT, Longformer...) number positions from
pad_token_id + 1, so their 514-row table takes 512 tokens, not 514.""",
    bad="""tokenizer(texts)                      # truncation off: a 700-token review
RobertaModel.from_pretrained("roberta-base")   # 514 positions, 512 usable""",
    good="""tokenizer(texts, truncation=True, max_length=512)""",
    fix="Tokenize with truncation=True and max_length at most the model's usable positions "
    "(tokenizer.model_max_length), or split long texts into windows (stride).",
)

SPEC = {"tokens": TokenSpec(max_position_embeddings=8, position_offset=2, pad_token_id=1, model_type="roberta",
                            origins=(("max_position_embeddings", "config.json"),))}
EXAMPLES = (
    Example(True, "a sequence of 7 tokens for 8 positions less RoBERTa's offset 2",
            lambda: {"train.jsonl": token_lines([{"input_ids": [0, 5, 6, 2]}, {"input_ids": [0, 5, 6, 7, 8, 9, 2]}])},
            spec=SPEC),
    Example(False, "sequences of at most 6 tokens",
            lambda: {"train.jsonl": token_lines([{"input_ids": [0, 5, 6, 2]}, {"input_ids": [0, 5, 6, 7, 8, 2]}])},
            spec=SPEC),
)


@rule(SEQUENCE_TOO_LONG, "tokens", EXAMPLES)
def sequences_longer_than_positions(batch: TokenBatch, spec: LabelSpec):
    tokens = spec.tokens
    if tokens is None or tokens.longest is None:
        return []
    found = []
    for name in TOKEN_ID_COLUMNS:
        column = batch.column(name)
        if column is None or column.offsets is None:
            continue
        sequences, lengths = _too_long(column, tokens)
        found += offending_sequences(SEQUENCE_TOO_LONG, batch, column, sequences, lengths,
                                     phrase="is longer than", noun="lengths", expected=lambda: _positions(tokens),
                                     hint=SEQUENCE_TOO_LONG.fix, limit=tokens.longest)
    positions = batch.column(POSITION_COLUMN)
    if positions is not None:
        legal = tokens.positions
        assert legal is not None  # not a user mistake: a longest sequence (checked above) means a position table
        found += offending_values(
            SEQUENCE_TOO_LONG, batch, positions, legal, phrase="holds position ids outside", noun="ids",
            expected=lambda: f"the position table's {tokens.max_position_embeddings} rows ({_table(tokens)})",
            hint="Compute position_ids below max_position_embeddings, or leave them to the model.",
            limit=tokens.max_position_embeddings)
    return found


def _table(tokens: TokenSpec) -> str:
    return tokens.described("max_position_embeddings", f"max_position_embeddings {tokens.max_position_embeddings}")


def _positions(tokens: TokenSpec) -> str:
    """How many tokens a sequence may hold, in words, with the table and its offset."""
    if not tokens.position_offset:
        return f"the model's {tokens.longest} positions ({_table(tokens)})"
    if tokens.pad_token_id is not None and tokens.position_offset == tokens.pad_token_id + 1:
        why = f"{tokens.model_type or 'RoBERTa-style'} positions start at pad_token_id + 1"
    else:
        why = "rows the model reserves before the first position"
    return (f"the model's {tokens.longest} usable positions ({_table(tokens)}, less {tokens.position_offset}: "
            f"{why})")


def _too_long(column: TokenColumn, tokens: TokenSpec) -> tuple[np.ndarray, np.ndarray]:
    """(sequences over the limit, their lengths). RoBERTa-style positions count the tokens
    that are not padding (padding keeps position pad_token_id), so padding added to a batch
    makes no sequence too long."""
    lengths = column.lengths()
    over = np.flatnonzero(lengths > tokens.longest)
    if not len(over) or not tokens.position_offset or tokens.pad_token_id is None:
        return over, lengths[over]
    offsets = column.offsets
    assert offsets is not None  # not a user mistake: the caller passes a column of sequences
    padding_before = np.zeros(len(column.values) + 1, dtype=np.int64)
    np.cumsum(column.values == tokens.pad_token_id, out=padding_before[1:])
    padding = padding_before[offsets[over + 1]] - padding_before[offsets[over]]
    counted = lengths[over] - padding
    keep = counted > tokens.longest
    return over[keep], counted[keep]
