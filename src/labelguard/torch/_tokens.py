"""Token batches against the model that takes them, read from the model itself.

:func:`token_spec_of` reads a model's tables from its own modules (the word embedding's
rows, the learned position table and the rows it reserves, the token type embedding) and
its ``config`` (``num_labels`` of a classification head, the padding id), so no config file
and no GPU is needed. :func:`token_findings` turns a batch (or one sample) of
``input_ids``/``token_type_ids``/``position_ids``/``labels`` into a
:class:`~labelguard.core.tokens.TokenBatch` and runs the audit's own ``tokens`` rules on it
(LG601-LG604): the guard and preflight judge tensors exactly as the audit judges files.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from labelguard.core.findings import Finding
from labelguard.core.rules import run_rules
from labelguard.core.spec import LabelSpec
from labelguard.errors import UnsupportedError
from labelguard.core.tokens import READ_COLUMNS, TOKEN_ID_COLUMNS, TokenBatch, TokenColumn
from labelguard.core.spec import TokenSpec
from labelguard.readers.tokens import CLASS_LABEL_HEADS, PADDING_OFFSET_POSITIONS, TOKEN_LABEL_HEADS, json_column
from labelguard.rules._tokens import merge_findings
import labelguard.rules  # noqa: F401  (registers the token rules)

log = logging.getLogger("labelguard.torch")

# Module names (their last part) of the tables a transformer looks its inputs up in.
WORD_EMBEDDINGS = ("word_embeddings", "embed_tokens", "wte", "tok_embeddings", "shared")
POSITION_EMBEDDINGS = ("position_embeddings", "embed_positions", "wpe")
TOKEN_TYPE_EMBEDDINGS = ("token_type_embeddings",)


def token_spec_of(model: nn.Module) -> TokenSpec:
    """What ``model``'s tables take: its word, position and token type embeddings (their
    modules, which is what the lookups index) and its config's head and padding id.

    Raises:
        UnsupportedError: ``model`` is not a torch module.
    """
    if not isinstance(model, nn.Module):
        raise UnsupportedError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    pad = getattr(config, "pad_token_id", None)
    origins: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
    word = _input_embeddings(model)
    if word is not None:
        name, module = word
        values["vocab_size"] = module.num_embeddings
        origins.append(("vocab_size", f"the model's {name!r}"))
    for name, module in model.named_modules():
        last = name.rsplit(".", 1)[-1]
        if not isinstance(module, nn.Embedding):
            continue
        if last in POSITION_EMBEDDINGS and "max_position_embeddings" not in values:
            values["max_position_embeddings"] = module.num_embeddings
            values["position_offset"] = _reserved_positions(module, model_type)
            origins.append(("max_position_embeddings", f"the model's {name!r}"))
        elif last in TOKEN_TYPE_EMBEDDINGS and "type_vocab_size" not in values:
            values["type_vocab_size"] = module.num_embeddings
            origins.append(("type_vocab_size", f"the model's {name!r}"))
    head = type(model).__name__
    labels_are_tokens = head.endswith(TOKEN_LABEL_HEADS)
    num_labels = getattr(config, "num_labels", None) if head.endswith(CLASS_LABEL_HEADS) else None
    if isinstance(num_labels, int):
        values["num_labels"] = num_labels
        origins.append(("num_labels", f"{head}.config.num_labels"))
    return TokenSpec(**values, labels_are_tokens=labels_are_tokens,
                     pad_token_id=pad if isinstance(pad, int) else None,
                     model_type=model_type if isinstance(model_type, str) else None, origins=tuple(origins))


def _input_embeddings(model: nn.Module) -> tuple[str, nn.Embedding] | None:
    """(name, module) of the word embedding: the one ``get_input_embeddings`` returns, else
    the first embedding named like one."""
    found = None
    getter = getattr(model, "get_input_embeddings", None)
    if callable(getter):
        try:
            found = getter()
        except (NotImplementedError, AttributeError):
            found = None
    for name, module in model.named_modules():
        if module is found and isinstance(module, nn.Embedding):
            return name, module
        if found is None and isinstance(module, nn.Embedding) and name.rsplit(".", 1)[-1] in WORD_EMBEDDINGS:
            return name, module
    return None


def _reserved_positions(module: nn.Embedding, model_type: str | None) -> int:
    """Rows of a position table before the first position: BART's and OPT's tables say so
    (``offset``); RoBERTa-style tables start at ``padding_idx + 1``."""
    offset = getattr(module, "offset", None)
    if isinstance(offset, int):
        return offset
    if module.padding_idx is not None and (model_type is None or model_type in PADDING_OFFSET_POSITIONS):
        return module.padding_idx + 1
    return 0


def token_batch_of(batch: Mapping, display: str, unit: str = "row", start: int = 0) -> TokenBatch | None:
    """The token columns of a collated batch (tensors of shape (batch, length), or (batch,)
    for a sequence label) or of one sample (a list or 1-D tensor per key, which is one row);
    None when it holds no token ids. A nested (jagged) tensor is read as its ragged rows."""
    if not any(key in batch for key in TOKEN_ID_COLUMNS):
        return None
    ids = _unnested(next(batch[key] for key in TOKEN_ID_COLUMNS if key in batch))
    one_sample = not (isinstance(ids, torch.Tensor) and ids.dim() >= 2) and not _nested(ids)
    rows = 1 if one_sample else len(ids)
    columns: dict[str, TokenColumn] = {}
    problems = []
    for key in READ_COLUMNS:
        value = _unnested(batch.get(key))
        if value is None:
            continue
        column = _column(key, value, one_sample)
        if isinstance(column, str):
            problems.append((key, column))
        else:
            columns[key] = column
    return TokenBatch(display, start, rows, columns, unit=unit, problems=problems)


def _unnested(value: Any) -> Any:
    """A nested tensor as the list of its components' values (no array holds its rows whole);
    any other value as it is."""
    if isinstance(value, torch.Tensor) and value.is_nested:
        return [component.tolist() for component in value.unbind()]
    return value


def _nested(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and isinstance(value[0], (list, tuple, torch.Tensor))


def _column(key: str, value: Any, one_sample: bool) -> TokenColumn | str:
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if tensor.is_floating_point() or tensor.is_complex():
            tensor = tensor.double() if not tensor.is_complex() else tensor
        array = tensor.numpy()
        if array.dtype.kind == "c":
            return f"holds {array.dtype} values, not ids"
        if one_sample:
            array = array.reshape(1) if array.ndim == 0 else array.reshape(1, *array.shape)
        return _dense(key, array)
    return json_column(key, [value] if one_sample else list(value))


def _dense(key: str, array: np.ndarray) -> TokenColumn:
    """A rectangular column: (rows,) one value a row, (rows, length) one sequence a row,
    (rows, choices, length) one sequence a choice."""
    if array.ndim == 1:
        return TokenColumn(key, array)
    sequence_rows = None
    if array.ndim >= 3:
        sequence_rows = np.repeat(np.arange(array.shape[0], dtype=np.int64), int(np.prod(array.shape[1:-1])))
        array = array.reshape(-1, array.shape[-1])
    sequences, length = array.shape
    offsets = np.arange(sequences + 1, dtype=np.int64) * length
    return TokenColumn(key, array.reshape(-1), offsets, sequence_rows)


def token_findings(tokens: TokenSpec, batch: Any, where: str, spec: LabelSpec | None = None,
                   unit: str = "row", start: int = 0) -> list[Finding]:
    """The token rules' findings on ``batch`` (a mapping of ``input_ids``...; anything else
    has none) against ``tokens`` and the label spec ``spec``, merged per column; its rows are
    numbered from ``start`` (a guarded sample's index)."""
    if not isinstance(batch, Mapping):
        return []
    record = token_batch_of(batch, where, unit, start)
    if record is None:
        return []
    found: list[Finding] = []
    errors: list[str] = []
    run_rules("tokens", record, (spec or LabelSpec()).merged(LabelSpec(tokens=tokens)), where, found, errors)
    for error in errors:  # a crashing rule: its code unchecked, the others' findings kept
        log.warning("%s", error)
    return merge_findings(found)


def holds_tokens(sample: Any) -> bool:
    """True when ``sample`` is a mapping with token ids (what the token rules judge)."""
    return isinstance(sample, Mapping) and any(key in sample for key in TOKEN_ID_COLUMNS)
