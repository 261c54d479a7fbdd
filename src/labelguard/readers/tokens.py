"""Tokenized datasets and the files that say what their model takes.

Two kinds of files are read here:

* the spec of token checks (:class:`~labelguard.core.spec.TokenSpec`): a model's
  ``config.json`` (as ``save_pretrained`` writes it) and a tokenizer (``tokenizer.json`` of
  the ``tokenizers`` library, or a ``vocab.txt`` with its ``added_tokens.json``), each given
  as the file or the folder holding it. They are the user's spec: a file that cannot be read
  is a :class:`SpecError`, as an invalid ``labelguard.toml`` is.
* tokenized data, streamed as :class:`~labelguard.core.tokens.TokenBatch` es of at most
  :data:`BATCH_ROWS` rows: Arrow files (the IPC stream ``datasets.save_to_disk`` writes, and
  the IPC file format), Parquet (row group by row group) and JSON lines with ``input_ids``.
  Each record batch is read into memory of its own (not memory-mapped: a mapped file's pages
  would stay in the process) and its integer columns viewed, not copied, so a 10 GB dataset
  costs a batch of memory; a file that cannot be read is a :class:`ReadError`
  (LG001), raised where it happens so that the rows before it keep their findings. What a
  record batch or a row group declares it decodes to is held to the read limits before
  pyarrow decodes it (:mod:`~labelguard.readers.columnar`), and what JSON lines cost once
  parsed before they are (:data:`JSON_COST`): a file of a few kilobytes cannot make an
  audit allocate gigabytes.

The dataset's own ``ClassLabel`` features (the ``huggingface`` metadata ``datasets`` stores in
every Arrow and Parquet schema) give a label column its number of classes.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Callable, Iterable, Iterator, cast

import numpy as np

from labelguard._optional import available
from labelguard.core import storage
from labelguard.core.tokens import READ_COLUMNS, TOKEN_ID_COLUMNS, TokenBatch, TokenColumn
from labelguard.core.spec import TokenSpec
from labelguard.core.text import byte_size, clipped, shorten
from labelguard.errors import SpecError
from labelguard.readers.base import (
    ReadError, check_decoded, open_stream, parse_json, read_head, read_text, require_to_read, stream_size,
)
from labelguard.readers.columnar import IpcLimits, ParquetLimits

# Rows per batch the rules judge at once: large enough that a batch costs far more than the
# calls of the rules, small enough that a batch of 512-token rows stays a few MiB.
BATCH_ROWS = 8192
TOKEN_DATA_EXTENSIONS = (".arrow", ".parquet", ".jsonl", ".json")
PARQUET_MAGIC = b"PAR1"
ARROW_FILE_MAGIC = b"ARROW1"
ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"
# What is read of a file to tell its kind, and how far into a JSON-lines file its first record
# is looked for.
FIRST_READ = 4096
JSON_HEAD = 1 << 16
# The reads of a Parquet file: column chunks are read in pieces of this size.
READ_BUFFER = 1 << 20
# The first pyarrow whose OSFile takes an open descriptor (apache/arrow GH-49751).
PYARROW_DESCRIPTOR_FILES = 25
# The most bytes of Python objects one byte of a JSON line becomes once parsed and made columns:
# measured at up to 38 (a line of empty lists or objects, ``[[],[],...]``), with room to spare.
# A line, and the lines of a batch together, may hold max_file_bytes / JSON_COST bytes.
JSON_COST = 64

# ---- the spec: a model's config.json and its tokenizer ---------------------------------------

MODEL_CONFIG = "config.json"
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
# Model families whose positions are a learned table of max_position_embeddings rows (GPT-2
# calls it n_positions). Others (rotary, ALiBi, relative, sinusoidal) take any length.
LEARNED_POSITIONS = frozenset({
    "albert", "bart", "bert", "biogpt", "camembert", "data2vec-text", "distilbert", "electra", "ernie",
    "esm", "flaubert", "gpt2", "gpt_neo", "ibert", "layoutlm", "longformer", "luke", "markuplm", "mbart",
    "megatron-bert", "mobilebert", "mpnet", "opt", "roberta", "roberta-prelayernorm", "squeezebert", "xlm",
    "xlm-roberta", "xlm-roberta-xl", "xmod",
})
# Families that number positions from pad_token_id + 1 (RoBERTa's create_position_ids_from_input_ids).
PADDING_OFFSET_POSITIONS = frozenset({
    "camembert", "data2vec-text", "esm", "ibert", "longformer", "luke", "markuplm", "mpnet", "roberta",
    "roberta-prelayernorm", "xlm-roberta", "xlm-roberta-xl", "xmod",
})
# Heads whose labels are token ids (language modelling), and heads whose labels are classes.
TOKEN_LABEL_HEADS = ("ForMaskedLM", "ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "ForPreTraining",
                     "WithLMHead")
CLASS_LABEL_HEADS = ("ForSequenceClassification", "ForTokenClassification")
# transformers' num_labels when a classification head's config lists no id2label.
DEFAULT_NUM_LABELS = 2


def token_spec_from_files(model_config: str | None = None, tokenizer: str | None = None,
                          relative_to: str | None = None) -> TokenSpec | None:
    """The token spec a model config and a tokenizer give together; None for neither.

    ``relative_to``: the folder relative paths are taken from (a config file's); the
    origins name the paths as given."""
    spec = None
    if model_config:
        spec = model_config_spec(_located(model_config, relative_to), model_config)
    if tokenizer:
        found = tokenizer_spec(_located(tokenizer, relative_to), tokenizer)
        spec = found if spec is None else spec.merged(found)
    return spec


def _located(path: str, relative_to: str | None) -> str:
    return os.path.join(relative_to, path) if relative_to and not os.path.isabs(path) else path


def model_config_spec(path: str, shown: str | None = None) -> TokenSpec:
    """The token spec of a model's ``config.json`` (the file, or the model folder holding it)."""
    shown = shown or path
    if os.path.isdir(path):
        path = os.path.join(path, MODEL_CONFIG)
        shown = os.path.join(shown, MODEL_CONFIG)
    config = _spec_json(path, shown, "model config")
    if not isinstance(config, dict):
        raise SpecError(f"model config {shown} is not a JSON object (a config.json as save_pretrained writes it)")
    text = config.get("text_config")
    if "vocab_size" not in config and isinstance(text, dict):
        config = {**config, **text}  # a multimodal model: its language model's tables
        shown = f"{shown} text_config"
    model_type = config.get("model_type") if isinstance(config.get("model_type"), str) else None

    def number(key: str) -> int | None:
        value = config.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(f"model config {shown}: {key} must be a whole number, got {clipped(repr(value))}")
        return value

    vocab_size = number("vocab_size") or None
    type_vocab_size = number("type_vocab_size") or None
    pad_token_id = number("pad_token_id")
    origins = [(part, shown) for part, value in (("vocab_size", vocab_size), ("type_vocab_size", type_vocab_size))
               if value is not None]
    notes: list[str] = []
    positions, offset = _positions(config, model_type, pad_token_id, number, shown, notes)
    if positions is not None:
        origins.append(("max_position_embeddings", shown))
    num_labels, labels_are_tokens = _labels(config, shown, notes)
    if num_labels is not None:
        origins.append(("num_labels", shown))
    try:
        return TokenSpec(vocab_size=vocab_size, max_position_embeddings=positions, position_offset=offset,
                         type_vocab_size=type_vocab_size, num_labels=num_labels,
                         labels_are_tokens=labels_are_tokens, pad_token_id=pad_token_id, model_type=model_type,
                         origins=tuple(origins), notes=tuple(notes))
    except SpecError as exc:
        raise SpecError(f"model config {shown}: {exc}") from None


def _positions(config: dict, model_type: str | None, pad_token_id: int | None, number, shown: str,
               notes: list[str]) -> tuple[int | None, int]:
    """(max_position_embeddings, padding offset) of a learned position table; (None, 0) when
    the model has none, with a note saying why its length was not checked."""
    key = "n_positions" if "max_position_embeddings" not in config and "n_positions" in config \
        else "max_position_embeddings"
    positions = number(key) or None
    if positions is None:
        return None, 0
    kind = config.get("position_embedding_type")
    family = model_type or "this"
    if isinstance(kind, str):
        learned = kind == "absolute"
        why = f"its position_embedding_type is {kind!r}"
    elif config.get("sinusoidal_embeddings") is True:
        learned, why = False, "its positions are sinusoidal"
    else:
        learned = model_type in LEARNED_POSITIONS
        why = (f"labelguard does not know {family} models to have a learned position table (rotary, ALiBi "
               "and relative positions take any length); set max_position_embeddings under [tokens] in "
               "labelguard.toml to check lengths against it")
    if not learned:
        notes.append(f"sequence lengths not checked against {key} {positions} of {shown}: {why}")
        return None, 0
    offset = 0
    if model_type in PADDING_OFFSET_POSITIONS:
        offset = (1 if pad_token_id is None else pad_token_id) + 1
    return positions, offset


def _labels(config: dict, shown: str, notes: list[str]) -> tuple[int | None, bool]:
    """(num_labels of a classification head, whether labels are token ids)."""
    architectures = [a for a in config.get("architectures") or () if isinstance(a, str)]
    labels_are_tokens = any(a.endswith(TOKEN_LABEL_HEADS) for a in architectures)
    id2label = config.get("id2label")
    count = config.get("num_labels", config.get("_num_labels"))
    if isinstance(id2label, dict) and id2label:
        return len(id2label), labels_are_tokens
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count, labels_are_tokens
    if any(a.endswith(CLASS_LABEL_HEADS) for a in architectures):
        notes.append(f"num_labels {DEFAULT_NUM_LABELS} for {architectures[0]}: transformers' default, as "
                     f"{shown} lists no id2label")
        return DEFAULT_NUM_LABELS, labels_are_tokens
    return None, labels_are_tokens


def tokenizer_spec(path: str, shown: str | None = None) -> TokenSpec:
    """The ids a tokenizer produces: a ``tokenizer.json``, a ``vocab.txt`` (with the
    ``added_tokens.json`` beside it), or the folder holding one."""
    shown = shown or path
    if os.path.isdir(path):
        for name in TOKENIZER_FILES:
            if os.path.isfile(os.path.join(path, name)):
                path, shown = os.path.join(path, name), os.path.join(shown, name)
                break
        else:
            raise SpecError(f"tokenizer {shown}: the folder holds none of {', '.join(TOKENIZER_FILES)}")
    if os.path.basename(path) == "vocab.txt" or path.endswith(".txt"):
        ids, special = _vocab_txt(path, shown)
    else:
        ids, special = _tokenizer_json(path, shown)
    if not ids:
        raise SpecError(f"tokenizer {shown} holds no token")
    return TokenSpec(tokenizer_size=max(ids) + 1, special_ids=tuple(special), origins=(("tokenizer", shown),))


def _tokenizer_json(path: str, shown: str) -> tuple[list[int], list[tuple[str, int]]]:
    data = _spec_json(path, shown, "tokenizer")
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict):
        raise SpecError(f"tokenizer {shown} has no 'model' object: not a tokenizer.json of the tokenizers library")
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        ids = list(vocab.values())
    elif isinstance(vocab, list):  # Unigram: [token, score] pairs, ids by position
        ids = [len(vocab) - 1] if vocab else []
    else:
        raise SpecError(f"tokenizer {shown}: model.vocab is neither an object nor a list")
    special = []
    for entry in data.get("added_tokens") or ():
        if not isinstance(entry, dict):
            continue
        ids.append(entry.get("id"))
        if entry.get("special"):
            special.append((str(entry.get("content")), entry.get("id")))
    bad = [value for value in ids if isinstance(value, bool) or not isinstance(value, int) or value < 0]
    if bad:
        raise SpecError(f"tokenizer {shown}: token ids must be whole numbers >= 0, found "
                        f"{shorten(bad, 5, lambda v: clipped(repr(v)))}")
    # Each special id is in ids too: the check above leaves whole numbers only.
    return ids, cast("list[tuple[str, int]]", special)


def _vocab_txt(path: str, shown: str) -> tuple[list[int], list[tuple[str, int]]]:
    try:
        tokens = read_text(path).split("\n")
    except ReadError as exc:
        raise SpecError(f"cannot read tokenizer {shown}: {exc}") from None
    if tokens and tokens[-1] == "":
        tokens.pop()
    ids = [len(tokens) - 1] if tokens else []
    special = [(token, index) for index, token in enumerate(tokens)
               if token.startswith("[") and token.endswith("]") and token[1:-1].isupper()]
    added = os.path.join(os.path.dirname(path), "added_tokens.json")
    if os.path.isfile(added):
        extra = _spec_json(added, os.path.join(os.path.dirname(shown), "added_tokens.json"), "tokenizer")
        if isinstance(extra, dict):
            numbers = [v for v in extra.values() if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
            ids.extend(numbers)
            special.extend((str(token), v) for token, v in extra.items() if v in numbers)
    return ids, special


def _spec_json(path: str, shown: str, what: str) -> Any:
    try:
        return parse_json(read_text(path), what)
    except ReadError as exc:
        raise SpecError(f"cannot read {what} {shown}: {exc}") from None


# ---- tokenized data ------------------------------------------------------------------------

def token_file_kind(path: str) -> str | None:
    """``arrow-stream``, ``arrow-file``, ``parquet`` or ``jsonl`` for a file of tokenized data
    (told by its bytes; JSON lines by a first record holding ``input_ids``), else None. Reads
    4 KiB, and up to :data:`JSON_HEAD` only for a JSON file whose first line is longer."""
    try:
        return _kind(path, lambda count: read_head(path, count))
    except ReadError:
        return None


def _kind(path: str, head: Callable[[int], bytes]) -> str | None:
    """:func:`token_file_kind` of ``path``, whose first ``count`` bytes ``head(count)`` reads."""
    first = head(FIRST_READ)
    if first.startswith(PARQUET_MAGIC):
        return "parquet"
    if first.startswith(ARROW_FILE_MAGIC):
        return "arrow-file"
    if first.startswith(ARROW_STREAM_MAGIC) and path.lower().endswith(".arrow"):
        return "arrow-stream"
    if not path.lower().endswith((".jsonl", ".json")):
        return None
    text = first.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{") or text.startswith(b"{\n") or text.startswith(b"{\r"):
        return None  # not one object per line (a pretty-printed COCO or labelme file opens with "{" alone)
    if b"\n" not in text and len(first) == FIRST_READ:  # a long first line: the rest of it
        text = head(JSON_HEAD).lstrip(b"\xef\xbb\xbf \t\r\n")
    return "jsonl" if b'"input_ids"' in text.split(b"\n", 1)[0] else None


def holds_token_ids(path: str) -> bool:
    """True when ``path`` is a data file with a column of token ids: JSON lines whose first
    record holds ``input_ids``, or (with pyarrow installed) an Arrow or Parquet file whose
    schema has ``input_ids`` or ``decoder_input_ids``. Only the head or the schema is read, of
    the file opened once (:class:`_DataFile`)."""
    try:
        with _opened(path) as opened:
            kind = _kind(path, opened.head)
            if kind is None or kind == "jsonl":
                return kind is not None
            if not available("pyarrow"):
                return False
            import pyarrow as pa

            try:
                with opened.arrow_source(pa) as source:
                    if kind == "parquet":
                        import pyarrow.parquet as pq

                        names = pq.read_schema(source).names
                    else:
                        reader = pa.ipc.open_stream(source) if kind == "arrow-stream" else pa.ipc.open_file(source)
                        names = reader.schema.names
            except (pa.ArrowException, OSError, UnicodeDecodeError):
                return False
    except ReadError:
        return False
    return any(name in TOKEN_ID_COLUMNS for name in names)


def read_token_file(path: str, display: str) -> Iterator[TokenBatch]:
    """The rows of a tokenized data file, :data:`BATCH_ROWS` at most per batch.

    Raises:
        ReadError: the file cannot be read (at the start, or at the batch where it breaks);
            NeedsExtra for an Arrow or Parquet file where pyarrow cannot be imported.
    """
    with _opened(path) as opened:
        kind = _kind(path, opened.head)
        if kind is None:
            raise ReadError("neither an Arrow, Parquet nor JSON-lines file of token ids (a JSON-lines file's "
                            "first record must hold input_ids)")
        if kind == "jsonl":
            yield from _json_lines(opened.handle, display)
            return
        pa = require_to_read("pyarrow", "read Arrow and Parquet datasets")
        try:
            yield from _arrow_batches(pa, opened, display, kind, ahead=not storage.url_scheme(path))
        except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # pyarrow's errors on damaged data
            raise ReadError(f"cannot read the {kind.replace('-', ' ')}: {clipped(str(exc), 200)}") from None


@contextlib.contextmanager
def _opened(path: str) -> Iterator[_DataFile]:
    with open_stream(path, "data file") as handle:
        yield _DataFile(handle)


class _DataFile:
    """A data file opened once: a local file as :func:`~labelguard.readers.base.open_regular`
    opens and checks it, or an object of object storage streamed in ranges. Everything of
    the file is read through this handle, pyarrow too: a file is never opened again by name,
    so what is read is the regular file that was checked, not what a link or a named pipe
    put at its path since; and an object's metadata and data share its fetched ranges."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.size = stream_size(handle)
        try:
            self.descriptor = handle.fileno() if hasattr(os, "pread") else None
        except (AttributeError, OSError):  # an object of object storage
            self.descriptor = None

    def read_at(self, offset: int, count: int) -> bytes:
        """The bytes at ``offset`` (fewer at the file's end), the handle's position kept. A
        local file is read with ``pread``: one call, no seek."""
        count = min(count, self.size - offset)
        if offset < 0 or count <= 0:
            return b""
        if self.descriptor is not None:
            try:
                return os.pread(self.descriptor, count, offset)
            except OSError as exc:
                raise ReadError(f"cannot read: {exc.strerror or exc}") from None
        position = self.handle.tell()
        try:
            self.handle.seek(offset)
            return self.handle.read(count)
        finally:
            self.handle.seek(position)

    def head(self, count: int) -> bytes:
        return self.read_at(0, count)

    def arrow_source(self, pa):
        """What pyarrow reads the file from: for a local file read with ``pread``, pyarrow's
        own file over a duplicate of its descriptor (pyarrow from
        :data:`PYARROW_DESCRIPTOR_FILES` on takes one; ``pread`` leaves the offset they
        share alone); else the handle, through :class:`_ArrowSource`."""
        if self.descriptor is not None and int(pa.__version__.split(".", 1)[0]) >= PYARROW_DESCRIPTOR_FILES:
            return pa.OSFile(os.dup(self.descriptor))
        return pa.PythonFile(_ArrowSource(pa, self.handle, self.size), mode="r")


def _arrow_batches(pa, opened: _DataFile, display: str, kind: str, ahead: bool) -> Iterator[TokenBatch]:
    """The file's batches, each read into memory of its own and let go once judged: no
    memory map, whose pages of a 10 GB file would all stay in the process (its peak RSS the
    file's size; and a file truncated while mapped kills the process with SIGBUS), and no
    Parquet pre-buffering, which keeps every column chunk it read. Each record batch and row
    group is held to the read limits by what its metadata declares before pyarrow decodes
    it (:mod:`~labelguard.readers.columnar`); ``ahead``: every record batch's at the start
    (a local file; :class:`~labelguard.readers.columnar.IpcLimits`)."""
    with opened.arrow_source(pa) as source:
        if kind == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(source, pre_buffer=False, buffer_size=READ_BUFFER) as parquet:
                yield from _parquet_batches(pa, parquet, opened.read_at, opened.size, display)
            return
        checked = IpcLimits(opened.read_at, opened.size, kind.replace("-", " "), ahead).batches()
        if kind == "arrow-file":
            reader = pa.ipc.open_file(source)
            batches = _file_batches(reader, checked)
        else:
            reader = pa.ipc.open_stream(source)
            batches = _stream_batches(reader, checked)
        yield from _judged_batches(pa, batches, _read_columns(pa, reader.schema), display)


class _ArrowSource:
    """The file object pyarrow reads a data file from (through ``pa.PythonFile``): the
    handle of a :class:`_DataFile`, each read made into a buffer of pyarrow's memory pool as
    pyarrow's own files make it, and never longer than what the file holds from where it
    is. (``handle.read(n)`` would allocate the ``n`` bytes a damaged message declares, a
    terabyte, before the file ends the read; and a new ``bytes`` of each record batch's
    size costs the kernel fresh pages every time: the audit ran at half the speed.)"""

    def __init__(self, pa, handle, size: int) -> None:
        self.pa, self.handle, self.size = pa, handle, size
        self.seek, self.tell, self.close = handle.seek, handle.tell, handle.close

    @property
    def closed(self) -> bool:
        return self.handle.closed

    def read(self, count: int | None = -1):
        left = self.size - self.handle.tell()
        count = left if count is None or count < 0 else min(count, left)
        if count <= 0:
            return b""
        buffer = self.pa.allocate_buffer(count, resizable=True)
        read = self.handle.readinto(memoryview(buffer))
        if read < count:  # the file was cut shorter since it was opened: pyarrow says what is missing
            buffer.resize(read)
        return buffer


def _file_batches(reader, checked: Iterator[None]) -> Iterator:
    """The record batches of an IPC file, each read once ``checked`` (walking the blocks of
    the same footer) has checked its metadata."""
    read = 0
    for _ in checked:
        if read == reader.num_record_batches:
            return
        yield reader.get_batch(read)
        read += 1
    if read < reader.num_record_batches:
        raise ReadError(f"cannot read the arrow file: pyarrow finds {reader.num_record_batches} record batches in "
                        f"its footer, labelguard {read}")


def _stream_batches(reader, checked: Iterator[None]) -> Iterator:
    """The record batches of an IPC stream, each read once ``checked`` (walking the same
    messages) has checked its metadata."""
    for _ in checked:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return
    try:
        reader.read_next_batch()  # where the walk stopped at a message cut off, pyarrow says why
    except StopIteration:
        return
    raise ReadError("cannot read the arrow stream: a record batch follows the end of its messages")


def _parquet_batches(pa, parquet, read_at, size: int, display: str) -> Iterator[TokenBatch]:
    """The row groups' batches, of the columns of ids alone (:func:`_read_columns`)."""
    columns = _read_columns(pa, parquet.schema_arrow)
    read, unread, _ = columns
    limits = ParquetLimits(read_at, size, read)
    if not read:  # no column to decode: the rows are counted all the same
        for group in range(parquet.num_row_groups):
            limits.check_row_group(group)
        yield TokenBatch(display, 0, parquet.metadata.num_rows, problems=unread)
        return

    def batches():
        for group in range(parquet.num_row_groups):
            limits.check_row_group(group)
            # One thread: an audit runs one file per worker process.
            yield from parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=read,
                                            use_threads=False)

    yield from _judged_batches(pa, batches(), columns, display)


def _judged_batches(pa, batches: Iterable, columns: tuple, display: str) -> Iterator[TokenBatch]:
    """The ``columns`` (:func:`_read_columns`) the rules read of each record batch,
    :data:`BATCH_ROWS` rows at most."""
    names, unread, classes = columns
    start = 0
    for batch in batches:
        for first in range(0, batch.num_rows, BATCH_ROWS):
            part = batch if batch.num_rows <= BATCH_ROWS else batch.slice(first, BATCH_ROWS)
            batch_columns: dict[str, TokenColumn] = {}
            for name in names:
                array = part.column(name)
                array.validate(full=True)  # offsets inside their buffers before numpy views them
                batch_columns[name] = _arrow_column(pa, name, array, classes.get(name))
            yield TokenBatch(display, start, part.num_rows, batch_columns, problems=list(unread))
            start += part.num_rows


def _read_columns(pa, schema) -> tuple[list[str], list[tuple[str, str]], dict[str, int]]:
    """(the columns of ids of ``schema`` the rules read, (column, what makes it none) of the
    others they would, the ClassLabel columns' num_classes), told from the schema: a column
    of text or other values where ids belong is named, never read (a dictionary-encoded
    string can repeat a megabyte a million times). ReadError when the schema names one of
    them twice (which holds the values is unknown)."""
    classes = _class_labels(schema.metadata)
    names = [name for name in schema.names if name in READ_COLUMNS or name in classes]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ReadError(f"the schema names column {twice[0]!r} {names.count(twice[0])} times: which one holds "
                        "the values is unknown")
    kinds = dict(zip(schema.names, schema.types))
    problems = {name: _not_ids(pa, kinds[name]) for name in names}
    return ([name for name in names if problems[name] is None],
            [(name, problem) for name, problem in problems.items() if problem is not None], classes)


def _class_labels(metadata: dict | None) -> dict[str, int]:
    """column -> num_classes of the ClassLabel features ``datasets`` stored in a schema."""
    raw = (metadata or {}).get(b"huggingface")
    if not raw:
        return {}
    try:
        info = parse_json(raw.decode("utf-8", "replace"), "datasets metadata")
    except ReadError:
        return {}
    features = info.get("info", {}).get("features") if isinstance(info, dict) else None
    if not isinstance(features, dict):
        return {}
    found = {}
    for name, feature in features.items():
        classes = _class_count(feature)
        if classes is not None:
            found[name] = classes
    return found


def _class_count(feature: Any) -> int | None:
    """num_classes of a ClassLabel feature, or of one held by a Sequence/List feature."""
    for _ in range(3):
        if isinstance(feature, list) and len(feature) == 1:
            feature = feature[0]
        if not isinstance(feature, dict):
            return None
        if feature.get("_type") == "ClassLabel":
            names = feature.get("names")
            if isinstance(names, list) and names:
                return len(names)
            count = feature.get("num_classes")
            return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None
        feature = feature.get("feature")
    return None


def _arrow_column(pa, name: str, array, classes: int | None) -> TokenColumn:
    """One column of ids (:func:`_read_columns`) as flat values with sequence offsets.
    ``array`` has been validated in full: its offsets lie inside its values."""
    import pyarrow.compute as pc

    sequence_rows = None
    offsets = None
    if _is_list(pa, array.type):
        offsets, inner = _unnested(pa, array)
        if _is_list(pa, inner.type):  # a sequence per choice (multiple choice)
            sequence_rows = np.repeat(np.arange(len(array), dtype=np.int64), np.diff(offsets))
            offsets, inner = _unnested(pa, inner)
        array = inner
    if pa.types.is_boolean(array.type):
        array = array.cast(pa.int8())
    missing = None
    if array.null_count:
        missing = array.is_null().to_numpy(zero_copy_only=False)
        array = pc.fill_null(array, 0)
    values = array.to_numpy(zero_copy_only=False)
    kinds = ("null",) if missing is not None else ()
    extremes = None
    if len(array) and pa.types.is_integer(array.type):  # one SIMD pass, where numpy takes two
        found = pc.min_max(array)
        extremes = (found["min"].as_py(), found["max"].as_py())
    return TokenColumn(name, values, offsets, sequence_rows, classes, missing, kinds, extremes)


def _unnested(pa, array) -> tuple[np.ndarray, Any]:
    """(offsets from 0, the values of the sequences) of a list array. Without nulls its own
    offsets are viewed (shifted only when a slice starts them past 0) and its values sliced:
    no copy; a null sequence counts as empty, whatever values its slot spans."""
    import pyarrow.compute as pc

    if not array.null_count and not isinstance(array.type, pa.FixedSizeListType):
        stored = array.offsets.to_numpy()
        first, last = int(stored[0]), int(stored[-1])
        return (stored - first if first else stored), array.values.slice(first, last - first)
    lengths = pc.list_value_length(array).fill_null(0).to_numpy()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, array.flatten()


def _is_list(pa, kind) -> bool:
    return isinstance(kind, (pa.ListType, pa.LargeListType, pa.FixedSizeListType))


def _not_ids(pa, kind) -> str | None:
    """What makes a column of type ``kind`` no column of ids (its values, under a list or a
    list of lists, neither integers, floats nor booleans); None for a column of ids."""
    values = kind
    for _ in range(2):
        if _is_list(pa, values):
            values = values.value_type
    if pa.types.is_boolean(values) or pa.types.is_integer(values) or pa.types.is_floating(values):
        return None
    return f"holds {values} values, not ids"


def _json_lines(handle, display: str) -> Iterator[TokenBatch]:
    """JSON lines, one record an object, read from ``handle`` with the standard library (no
    extra needed).

    Parsed, a line costs up to :data:`JSON_COST` times its bytes: a line, and the lines of
    one batch together, may hold ``max_file_bytes / JSON_COST`` bytes, so that parsing them
    costs at most ``max_file_bytes``."""
    limit = _line_limit()
    start = 0
    number = 0
    held = 0  # the bytes of the lines of the batch
    records: list[dict] = []
    lines: list[int] = []  # the line of each record (blank lines are skipped)
    while True:
        line = handle.readline(limit + 1)
        if not line:
            break
        number += 1
        if len(line) > limit:
            if records:  # the rows before it are checked before the file is given up
                yield _json_batch(records, lines, display, start)
            length = _line_length(handle, line)
            check_decoded(f"line {number} holds {byte_size(length)} of JSON; parsed into Python objects (up "
                          f"to {JSON_COST} bytes a byte), it", length * JSON_COST, "may take")
        if not line.strip():
            continue
        if records and held + len(line) > limit:
            yield _json_batch(records, lines, display, start)
            start += len(records)
            records, lines, held = [], [], 0
        held += len(line)
        problem: str | None
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problem = f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})"
        except (ValueError, RecursionError):  # digits past Python's limit, nesting past the stack
            problem = f"line {number}: JSON that Python cannot read (a number too long or nesting too deep)"
        else:
            problem = None if isinstance(record, dict) else \
                f"line {number}: a JSON {type(record).__name__}, not an object of columns"
        if problem is not None:
            if records:  # the rows before it are checked before the file is given up
                yield _json_batch(records, lines, display, start)
            raise ReadError(problem)
        records.append(record)
        lines.append(number)
        if len(records) == BATCH_ROWS:
            yield _json_batch(records, lines, display, start)
            start += len(records)
            records, lines, held = [], [], 0
    if records:
        yield _json_batch(records, lines, display, start)


def _line_length(handle, start: bytes) -> int:
    """The length of the line that opens with ``start``, its rest read in pieces, not held."""
    length = len(start)
    while not start.endswith(b"\n"):
        start = handle.readline(1 << 16)
        if not start:
            break
        length += len(start)
    return length


def _line_limit() -> int:
    from labelguard.core.limits import current_limits

    return max(current_limits().max_file_bytes // JSON_COST, 1)


def _json_batch(records: list[dict], lines: list[int], display: str, start: int) -> TokenBatch:
    names = [name for name in READ_COLUMNS if any(name in record for record in records)]
    columns, problems = {}, []
    for name in names:
        column = json_column(name, [record.get(name) for record in records])
        if isinstance(column, str):
            problems.append((name, column))
        else:
            columns[name] = column
    return TokenBatch(display, start, len(records), columns, problems=problems,
                      lines=np.array(lines, dtype=np.int64))


def json_column(name: str, cells: list) -> TokenColumn | str:
    """A column of JSON values (or Python lists, as a dataset without a tensor format gives
    them): one number per row, or a list (of lists) of numbers per row."""
    sequence_rows = None
    offsets = None
    if any(isinstance(cell, list) for cell in cells):
        if any(cell is not None and not isinstance(cell, list) for cell in cells):
            return "mixes lists and single values"
        lists = [[] if cell is None else cell for cell in cells]
        nested = [isinstance(item, list) for cell in lists for item in cell]
        if any(nested):
            if not all(nested):
                return "mixes sequences and lists of sequences"
            lengths = [len(cell) for cell in lists]
            sequence_rows = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
            lists = [item if isinstance(item, list) else [] for cell in lists for item in cell]
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(cell) for cell in lists], out=offsets[1:])
        flat = [item for cell in lists for item in cell]
    else:
        flat = cells
    values, missing, kinds = _json_numbers(flat)
    return TokenColumn(name, values, offsets, sequence_rows, None, missing, kinds)


def _json_numbers(items: list) -> tuple[np.ndarray, np.ndarray | None, tuple[str, ...]]:
    """(values, mask of the items that are no numbers or None, what those are), those filled
    with 0."""
    kinds = set(map(type, items))
    others = kinds - {int, float}
    missing = None
    if others:
        missing = np.fromiter((type(item) in others for item in items), dtype=bool, count=len(items))
        items = [0 if type(item) in others else item for item in items]
    names = tuple(sorted(_json_type(kind) for kind in others))
    if float in kinds:
        return np.array(items, dtype=np.float64), missing, names
    try:
        return np.array(items, dtype=np.int64), missing, names
    except OverflowError:  # integers past int64: compared exactly as Python ints
        return np.array(items, dtype=object), missing, names


def _json_type(kind: type) -> str:
    return {bool: "boolean", str: "string", dict: "object", list: "array", type(None): "null"}.get(kind, kind.__name__)

