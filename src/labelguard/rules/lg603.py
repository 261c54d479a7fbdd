"""LG603 token-type-past-table: a token_type_id at or above the model's type_vocab_size."""

from __future__ import annotations

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import plural
from labelguard.core.tokens import TOKEN_TYPE_COLUMN, TokenBatch
from labelguard.core.spec import TokenSpec
from labelguard.rules._examples import token_lines
from labelguard.rules._tokens import offending_values

TOKEN_TYPE_PAST_TABLE = define(
    "LG603", "token-type-past-table", "error",
    summary="a token_type_id is >= type_vocab_size",
    why="""
Segment ids index the token type embedding, a table of type_vocab_size rows: BERT has 2,
RoBERTa, XLM-R and many distilled models 1. Sentence pairs tokenized for BERT carry
token_type_ids 0 and 1; fed to a model with one segment type, every second segment reads
past the table (the "srcIndex < srcSelectDimSize" device-side assert on a GPU).""",
    bad="""batch = bert_tokenizer(question, context)    # token_type_ids 0 and 1
RobertaModel.from_pretrained("roberta-base")(**batch)   # type_vocab_size 1""",
    good="""batch = roberta_tokenizer(question, context)   # no token_type_ids, or all 0""",
    fix="Tokenize with the model's own tokenizer (return_token_type_ids=False for one-segment models), "
    "drop the token_type_ids column, or use a model with type_vocab_size >= 2.",
)

SPEC = {"tokens": TokenSpec(type_vocab_size=1, origins=(("type_vocab_size", "config.json"),))}
EXAMPLES = (
    Example(True, "segment ids 0 and 1 for one token type",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2, 6, 2], "token_type_ids": [0, 0, 0, 1, 1]}])},
            spec=SPEC),
    Example(False, "segment ids all 0",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2, 6, 2], "token_type_ids": [0, 0, 0, 0, 0]}])},
            spec=SPEC),
)


@rule(TOKEN_TYPE_PAST_TABLE, "tokens", EXAMPLES)
def token_types_past_table(batch: TokenBatch, spec: LabelSpec):
    tokens = spec.tokens
    column = batch.column(TOKEN_TYPE_COLUMN)
    if tokens is None or tokens.type_vocab_size is None or column is None:
        return []
    rows, legal = tokens.type_vocab_size, tokens.token_types
    assert legal is not None  # not a user mistake: built from type_vocab_size, checked above
    return offending_values(
        TOKEN_TYPE_PAST_TABLE, batch, column, legal, phrase="holds segment ids outside", noun="ids",
        expected=lambda: (f"the token type embedding's {plural(rows, 'row')} "
                          f"({tokens.described('type_vocab_size', 'type_vocab_size')})"),
        hint=TOKEN_TYPE_PAST_TABLE.fix, limit=rows)
