"""LG605 tokenizer-larger-than-embedding: the tokenizer makes ids the model's embedding does
not have (its vocabulary with added tokens is larger, or special tokens lie past it).

It compares the two spec files themselves (``--tokenizer`` with ``--model-config``), once
per audit, whatever the data holds: the ids that do not fit are found before any text is
tokenized with them. Ids in the data past the embedding are LG601's.
"""

from __future__ import annotations

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.text import plural, shorten
from labelguard.core.spec import TokenSpec
from labelguard.rules._examples import token_lines

TOKENIZER_PAST_EMBEDDING = define(
    "LG605", "tokenizer-larger-than-embedding", "warning",
    summary="tokenizer and model disagree: the tokenizer's vocabulary (with added tokens) is larger than the "
    "embedding, or special token ids fall outside it",
    why="""
Every id the tokenizer can make must have a row in the model's word embedding. Tokens added
after the model was built ([ENT], <|im_start|>, a new pad token) get ids past the last row
unless the embedding is resized; the first text that holds one crashes training with the
device-side assert of an out-of-range embedding lookup. A tokenizer smaller than the
embedding is normal (tables are often padded to a multiple of 8 or 64).""",
    bad="""tokenizer.json: 30524 ids (added "<ent>" 30522, "</ent>" 30523)
config.json:    "vocab_size": 30522""",
    good="""model.resize_token_embeddings(len(tokenizer)); model.save_pretrained(...)
config.json:    "vocab_size": 30524""",
    fix="Resize the model's embedding to the tokenizer (model.resize_token_embeddings(len(tokenizer))) and "
    "save the model again, or use the tokenizer saved with the checkpoint.",
    scope="dataset",
)

SPEC = {"tokens": TokenSpec(vocab_size=100, tokenizer_size=102, special_ids=(("<ent>", 101),),
                            origins=(("vocab_size", "config.json"), ("tokenizer", "tokenizer.json")))}
EXAMPLES = (
    Example(True, "a tokenizer of 102 ids (a special token 101) for an embedding of 100 rows",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2]}])}, spec=SPEC),
    Example(False, "a tokenizer of 100 ids for an embedding of 100 rows",
            lambda: {"train.jsonl": token_lines([{"input_ids": [1, 5, 2]}])},
            spec={"tokens": TokenSpec(vocab_size=100, tokenizer_size=100)}),
)


@rule(TOKENIZER_PAST_EMBEDDING, "dataset", EXAMPLES)
def tokenizer_larger_than_embedding(summary: Summary, spec: LabelSpec):
    tokens = spec.tokens
    if tokens is None:
        return []
    return tokenizer_findings(tokens)


def tokenizer_findings(tokens: TokenSpec) -> list:
    """LG605 of a token spec that knows both the tokenizer and the embedding (also what the
    torch side asks of a model and its tokenizer)."""
    if tokens.tokenizer_size is None or tokens.vocab_size is None or tokens.tokenizer_size <= tokens.vocab_size:
        return []
    rows = tokens.vocab_size
    outside = sorted((id_, token) for token, id_ in tokens.special_ids if id_ >= rows)
    special = ""
    if outside:
        special = (f"; special {plural(len(outside), 'token')} outside it: "
                   f"{shorten(outside, 6, lambda pair: f'{pair[1]!r} {pair[0]}')}")
    return [TOKENIZER_PAST_EMBEDDING.finding(
        None,
        f"the tokenizer ({tokens.origin('tokenizer') or 'given'}) makes ids up to {tokens.tokenizer_size - 1} "
        f"({tokens.tokenizer_size:,} ids, added tokens included) but the embedding has {plural(rows, 'row')} "
        f"({tokens.described('vocab_size', 'vocab_size')}): ids {rows}..{tokens.tokenizer_size - 1} have no "
        f"row{special}",
        tokenizer_size=tokens.tokenizer_size, vocab_size=rows, special_outside=[token for _, token in outside],
    )]
