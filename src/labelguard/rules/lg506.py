"""LG506: the definition of the code; the PyTorch runtime side (labelguard.torch) reports it."""

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
