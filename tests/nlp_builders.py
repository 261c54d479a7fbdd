"""Real NLP artefacts for the token tests, made in tmp_path with the libraries users make them
with: a WordPiece tokenizer trained by ``tokenizers``, tiny BERT/RoBERTa models built from a
config by ``transformers`` (no weights downloaded), datasets written by ``datasets``
(``save_to_disk``, ``to_parquet``, ``to_json``) and Arrow/Parquet files written by pyarrow.

Each builder imports its library when called: a test that needs one skips with
``pytest.importorskip`` when the ``nlp`` test extra is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CORPUS = [
    "the cat sat on the mat", "a dog ran in the park", "the model reads every token of the text",
    "tokens past the embedding crash the lookup", "labels outside the head crash the loss",
    "positions are a table of rows", "segment ids pick a token type", "a tokenizer splits words into pieces",
    "the quick brown fox jumps over the lazy dog", "training stops with a device side assert",
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_tokenizer(folder: Path, added_special: tuple[str, ...] = ()):
    """A WordPiece tokenizer trained on :data:`CORPUS`, BERT-style ([CLS] a [SEP] b [SEP] with
    segment ids 0/1), saved as ``folder/tokenizer.json``; ``added_special`` tokens are added
    after training (their ids follow the vocabulary). Returns the tokenizer."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, normalizers, pre_tokenizers, processors, trainers

    tokenizer = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=120, special_tokens=SPECIALS))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    if added_special:
        tokenizer.add_special_tokens(list(added_special))
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return tokenizer


def encode_rows(tokenizer, texts, pairs=None, labels=None, max_length=None) -> dict[str, list]:
    """Columns of a tokenized dataset: input_ids, token_type_ids, attention_mask (and label)."""
    if max_length:
        tokenizer.enable_truncation(max_length)
    encodings = [tokenizer.encode(text, pair) if pairs else tokenizer.encode(text)
                 for text, pair in zip(texts, pairs or [None] * len(texts))]
    tokenizer.no_truncation()
    columns = {"input_ids": [e.ids for e in encodings], "token_type_ids": [e.type_ids for e in encodings],
               "attention_mask": [e.attention_mask for e in encodings]}
    if labels is not None:
        columns["label"] = list(labels)
    return columns


def bert_config(vocab_size: int, **kwargs):
    transformers = pytest.importorskip("transformers")
    settings = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=64)
    settings.update(kwargs)
    return transformers.BertConfig(vocab_size=vocab_size, **settings)


def roberta_config(vocab_size: int, **kwargs):
    transformers = pytest.importorskip("transformers")
    settings = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=34, type_vocab_size=1)
    settings.update(kwargs)
    return transformers.RobertaConfig(vocab_size=vocab_size, **settings)


def save_model(config, folder: Path, head: str = "BertForSequenceClassification") -> Path:
    """The model of ``config`` with the given head, built without weights being downloaded and
    saved as save_pretrained saves it (config.json beside the weights); returns its folder."""
    transformers = pytest.importorskip("transformers")
    model = getattr(transformers, head)(config)
    model.save_pretrained(str(folder))
    return folder


def build_model(config, head: str = "BertForSequenceClassification"):
    transformers = pytest.importorskip("transformers")
    return getattr(transformers, head)(config).eval()


def save_dataset(folder: Path, columns: dict[str, list], class_names: list[str] | None = None,
                 label_column: str = "label"):
    """``columns`` saved with datasets' save_to_disk (a ClassLabel for ``label_column`` when
    ``class_names`` are given); returns the Dataset."""
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict(columns)
    if class_names is not None:
        dataset = dataset.cast_column(label_column, datasets.ClassLabel(names=class_names))
    dataset.save_to_disk(str(folder))
    return dataset


def write_parquet(path: Path, columns: dict[str, list], row_group_size: int | None = None) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), str(path), row_group_size=row_group_size)


def write_arrow_file(path: Path, columns: dict[str, list], batch_rows: int | None = None) -> None:
    """The Arrow IPC file format (feather v2), in record batches of ``batch_rows``."""
    pa = pytest.importorskip("pyarrow")
    table = pa.table(columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)


def arrow_stream_claiming_a_terabyte_body() -> bytes:
    """An Arrow stream of 100 rows of ids in two record batches (60 rows, then 40) whose second
    batch's message says its body is 1 TiB (the bodyLength in its flatbuffer, rewritten)."""
    pa = pytest.importorskip("pyarrow")
    import numpy as np

    table = pa.table({"input_ids": pa.array([[1, 2, 3], [4, 5]] * 50, pa.list_(pa.int32()))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_batch(table.to_batches()[0].slice(0, 60))
        writer.write_batch(table.to_batches()[0].slice(60, 40))
    data = sink.getvalue().to_pybytes()
    messages = list(pa.ipc.MessageReader.open_stream(pa.BufferReader(data)))
    body = np.array([messages[2].body.size], np.int64).tobytes()
    assert data.count(body) == 1  # the second record batch's bodyLength, in its flatbuffer
    return data.replace(body, np.array([1 << 40], np.int64).tobytes())


def write_jsonl(path: Path, columns: dict[str, list]) -> None:
    names = list(columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = zip(*(columns[name] for name in names))
    path.write_text("".join(json.dumps(dict(zip(names, row))) + "\n" for row in rows), encoding="utf-8")
