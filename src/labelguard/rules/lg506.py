"""LG506: the definition of the code, and the findings labelguard.torch reports with it from
what it measured of the ids that reach the model's embeddings."""

from __future__ import annotations

from labelguard.core.findings import Finding
from labelguard.core.registry import define

INDEX_OUT_OF_TABLE = define(
    "LG506", "index-exceeds-table", "error",
    summary="an index tensor exceeds the table it indexes (token ids >= embedding rows)",
    why="""
An id >= num_embeddings is the "srcIndex < srcSelectDimSize" device-side assert on a GPU and
"index out of range in self" on the CPU.""",
    bad="tokenizer extended to 30524 tokens, model.embeddings has 30522 rows",
    good="model.resize_token_embeddings(len(tokenizer))",
    fix="Resize the embedding to the tokenizer (resize_token_embeddings), or fix the ids.",
    scope="runtime",
)


def ids_past_the_embedding(module: str, values: list[int], bad: int, total: int, rows: int) -> Finding:
    """LG506 for the ids (``values``, sorted: the distinct ones; ``bad`` of ``total`` ids) that go
    into the embedding ``module`` (its qualified name) of ``rows`` rows and lie outside it."""
    if "token_type" in module:
        hint = (f"token_type_ids must be < type_vocab_size ({rows}): pass token_type_ids=None "
                "(or zeros) for single-segment input, or load a config with a larger "
                "type_vocab_size.")
    else:
        hint = ("The tokenizer has more tokens than the embedding has rows: "
                "model.resize_token_embeddings(len(tokenizer)) after adding tokens, or fix the ids.")
    return INDEX_OUT_OF_TABLE.finding(
        None,
        f"ids {', '.join(map(str, values[:10]))} ({bad} of {total}) go into "
        f"'{module}' (Embedding) whose table has num_embeddings={rows} rows (valid ids "
        f"0..{rows - 1}). On a GPU this is the \"srcIndex < srcSelectDimSize\" device-side "
        "assert, on the CPU \"index out of range in self\"",
        hint=hint, module=module, values=values[:20], num_embeddings=rows,
    )
