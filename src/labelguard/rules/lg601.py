"""LG601 token-id-past-embedding: a token id at or above the rows of the model's word
embedding (or, with a tokenizer and no model, past every id the tokenizer makes).

LG601 is the token-specific code: ids of ``input_ids`` (and ``decoder_input_ids``, and the
labels of a language model, ``-100`` ignored) against the word embedding the model's config
or its own module declares. LG506 stays the code of any other index tensor that exceeds its
table (an ``nn.Embedding`` over categories, ``gather``, ``index_select``), as preflight finds
it while the model runs.
"""

from __future__ import annotations

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.text import plural
from labelguard.core.tokens import TOKEN_ID_COLUMNS, TokenBatch
from labelguard.core.spec import TokenSpec
from labelguard.rules._examples import token_lines
from labelguard.rules._tokens import offending_values

TOKEN_PAST_EMBEDDING = define(
    "LG601", "token-id-past-embedding", "error",
    summary="a token id is >= the model's embedding rows (vocab_size)",
    why="""
An embedding is a table of vocab_size rows; a token id at or above it (or a negative one)
reads past the table: "index out of range in self" on the CPU, and on a GPU the
"srcIndex < srcSelectDimSize" device-side assert in indexSelectLargeIndex, which kills the
CUDA context and names no sample. Tokens added to the tokenizer after the model was built,
or a tokenizer of another checkpoint, produce such ids in every batch that holds them.""",
    bad="""tokenizer.add_tokens(["<ent>", "</ent>"])    # ids 30522, 30523
model = BertModel.from_pretrained("bert-base-uncased")   # 30522 rows""",
    good="""tokenizer.add_tokens(["<ent>", "</ent>"])
model.resize_token_embeddings(len(tokenizer))   # 30524 rows""",
    fix="Resize the embedding to the tokenizer (model.resize_token_embeddings(len(tokenizer))) after "
    "adding tokens, or tokenize with the tokenizer of the model's checkpoint.",
)

SPEC = {"tokens": TokenSpec(vocab_size=100, origins=(("vocab_size", "config.json"),))}
EXAMPLES = (
    Example(True, "input_ids holding 100 and 101 for an embedding of 100 rows",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2]}, {"input_ids": [1, 100, 101, 2]}])},
            spec=SPEC),
    Example(False, "input_ids all below 100",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2]}, {"input_ids": [1, 99, 2]}])}, spec=SPEC),
)


@rule(TOKEN_PAST_EMBEDDING, "tokens", EXAMPLES)
def token_ids_past_embedding(batch: TokenBatch, spec: LabelSpec):
    tokens = spec.tokens
    if tokens is None or tokens.id_limit is None:
        return []
    hint = TOKEN_PAST_EMBEDDING.fix if tokens.vocab_size is not None else (
        "Tokenize with the model's own tokenizer; pass --model-config to compare the ids with the embedding itself.")
    found = []
    for name in TOKEN_ID_COLUMNS:
        column = batch.column(name)
        if column is not None:
            token_ids = tokens.token_ids
            assert token_ids is not None  # not a user mistake: built from id_limit, checked above
            found += offending_values(TOKEN_PAST_EMBEDDING, batch, column, token_ids,
                                      phrase="holds token ids outside", noun="ids",
                                      expected=lambda: _table(tokens), hint=hint, limit=tokens.id_limit)
    column = batch.column("labels") if tokens.labels_are_tokens else None
    if column is not None:
        ignored = ", ".join(str(v) for v in tokens.label_ignore)
        token_labels = tokens.token_labels
        assert token_labels is not None  # not a user mistake: built from id_limit, checked above
        found += offending_values(TOKEN_PAST_EMBEDDING, batch, column, token_labels,
                                  phrase="holds label token ids outside", noun="ids",
                                  expected=lambda: f"{_table(tokens)}, {ignored} ignored", hint=hint,
                                  limit=tokens.id_limit)
    return found


def _table(tokens: TokenSpec) -> str:
    """The table token ids must fit, in words: the embedding, else the tokenizer."""
    if tokens.vocab_size is not None:
        return f"the embedding's {plural(tokens.vocab_size, 'row')} ({tokens.described('vocab_size', 'vocab_size')})"
    return (f"the {tokens.tokenizer_size:,} ids of the tokenizer ({tokens.origin('tokenizer')}; no model config "
            "given): no such tokenizer made them")
