"""Tokenized datasets: the folders ``datasets.save_to_disk`` writes, and Arrow, Parquet and
JSON-lines files of token ids.

Layouts found:

* a ``save_to_disk`` folder (``state.json`` beside ``data-00000-of-0000N.arrow``): the data
  files ``state.json`` names (``cache-*.arrow`` files that ``map`` leaves beside them are
  derived, possibly stale, and not audited); a name that leads outside the folder is LG005,
  one that names no file LG003;
* a ``DatasetDict`` folder (``dataset_dict.json`` naming its split folders), each split as
  above;
* a folder of ``.arrow``/``.parquet`` files with an ``input_ids`` column and JSON lines with
  ``input_ids`` (the Hugging Face Hub's ``data/train-00000-of-00001.parquet``), in it or in
  the folders right below it, or one such file given as the path. Telling an Arrow or
  Parquet file's columns needs pyarrow: without it, only ``save_to_disk`` folders and files
  given as the path are taken for tokenized data (and folders with ``--format tokens`` or with
  JSON lines of token ids), and each Arrow or Parquet file of them is LG001 naming the extra.

One file is one task, streamed by :mod:`labelguard.readers.tokens` in record batches: ``datasets``
shards what it saves (500 MB a shard), so the files of a large dataset spread over the
workers. The token rules need the token spec (``--model-config``, ``--tokenizer`` or a
``[tokens]`` table); without it the rows are counted and LG006 says nothing was checked.
"""

from __future__ import annotations

import os
from typing import Iterator, cast

from labelguard._optional import available
from labelguard.core import storage
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.tokens import TokenBatch
from labelguard.core.paths import display_path
from labelguard.layouts.base import (
    CONTENT, DECLARED, AuditOptions, Discovery, Evidence, Seen, evidence, no, register_layout,
)
from labelguard.layouts.folders import walk_files
from labelguard.core.records import EntriesRecord, EntryProblem
from labelguard.layouts.lists import ListRule, judged, resolve_declared
from labelguard.layouts.metadata import metadata_findings, read_metadata
from labelguard.readers.base import parse_json, read_text
from labelguard.readers.tokens import TOKEN_DATA_EXTENSIONS, holds_token_ids, read_token_file, token_file_kind
from labelguard.rules._token_files import process_token_file

STATE_FILE = "state.json"
DATASET_DICT_FILE = "dataset_dict.json"
INFO_FILE = "dataset_info.json"
# Detection looks at the PATH and the folders right below it, at this many entries in all.
DETECT_ENTRIES = 400
# state.json names its data files by plain name, in its own folder.
DATA_FILE_NAME = ListRule(stems=False)
STATE_HINT = "Save the dataset again (save_to_disk), or restore the data files state.json names."


def token_batches(task: FileTask) -> Iterator[TokenBatch]:
    """The reader of the layout: one data file's rows, batch by batch."""
    return read_token_file(task.path, task.display)


def process_tokens(task: FileTask, spec: LabelSpec) -> FileResult:
    """Stream one tokenized data file through the token rules.

    Not cached (no ``cacheable`` attribute, :mod:`labelguard.core.cache`): an entry needs the
    SHA-256 of the file's bytes, and hashing an Arrow file costs more than auditing it (about
    1.5 s against 0.5 s for 1 GB), so every audit reads the data again.
    """
    return process_token_file(task, spec, token_batches)


def discover_tokens(root: str, options: AuditOptions) -> Discovery:
    discovery = Discovery("tokens", root)
    discovery.left_out.append(("*cache-*.arrow", "a cache file that datasets' map() leaves beside the data"))
    if storage.isfile(root):
        _add(discovery, [root])
    elif storage.isfile(os.path.join(root, DATASET_DICT_FILE)):
        _dataset_dict(discovery, root)
    elif storage.isfile(os.path.join(root, STATE_FILE)):
        _saved_dataset(discovery, root)
    else:
        _add(discovery, [path for path in walk_files(root) if _data_file(path, unknown=True)])
    return discovery


def _add(discovery: Discovery, paths: list[str]) -> None:
    discovery.tasks.extend(FileTask(process_tokens, path, display_path(path)) for path in paths)


def _data_file(path: str, unknown: bool = False) -> bool:
    """True for a data file of token ids; with ``unknown``, also for an Arrow or Parquet file
    whose columns cannot be told here (no pyarrow): in a dataset taken for tokens it is audited,
    so that its LG001 names the extra instead of leaving it out unseen. Detection leaves it
    out: it may be any table."""
    name = os.path.basename(path)
    if not name.lower().endswith(TOKEN_DATA_EXTENSIONS) or name.startswith("cache-"):
        return False
    if holds_token_ids(path):
        return True
    return unknown and not available("pyarrow") and token_file_kind(path) not in (None, "jsonl")


def _dataset_dict(discovery: Discovery, root: str) -> None:
    """A DatasetDict: the split folders its dataset_dict.json names, each a saved dataset."""
    path = os.path.join(root, DATASET_DICT_FILE)
    data, findings = read_metadata(path, _json, root)
    discovery.findings.extend(findings)
    splits = data.get("splits") if isinstance(data, dict) else None
    if data is not None and not (isinstance(splits, list) and all(isinstance(s, str) for s in splits)):
        discovery.findings.extend(metadata_findings(path, ["'splits' is not a list of split names"]))
        splits = None
    if splits is None:  # the folders that look like splits
        splits = [name for name in storage.folder_names(root) if storage.isfile(os.path.join(root, name, STATE_FILE))]
    missing: list[EntryProblem] = []
    escaping: list[EntryProblem] = []
    for split in splits:
        folder, escapes, why = resolve_declared(split, root, root, ListRule(stems=False, folders=True))
        if folder is None:
            (escaping if escapes else missing).append(EntryProblem(f"split {split!r}", split, detail=why))
            continue
        _saved_dataset(discovery, folder)
    discovery.findings.extend(judged(EntriesRecord(display_path(path), display_path(root), missing, escaping,
                                                   hint=STATE_HINT), discovery.errors))


def _saved_dataset(discovery: Discovery, folder: str) -> None:
    """A save_to_disk folder: the data files its state.json names."""
    path = os.path.join(folder, STATE_FILE)
    state, findings = read_metadata(path, _json, discovery.root)
    discovery.findings.extend(findings)
    files = state.get("_data_files") if isinstance(state, dict) else None
    names = [entry.get("filename") for entry in files if isinstance(entry, dict)] if isinstance(files, list) else None
    if names is None or not all(isinstance(name, str) for name in names):
        if state is not None:
            discovery.findings.extend(metadata_findings(path, ["'_data_files' is not a list of {'filename': ...} "
                                                               "entries; the folder's data-*.arrow files were "
                                                               "audited instead"]))
        _add(discovery, sorted(os.path.join(folder, name) for name in storage.listdir(folder)
                               if name.startswith("data-") and name.endswith(".arrow")))
        return
    found, missing, escaping = [], [], []
    for index, name in enumerate(cast("list[str]", names)):  # each a str: the test above
        resolved, escapes, why = resolve_declared(name, folder, folder, DATA_FILE_NAME)
        if escapes:
            escaping.append(EntryProblem(f"_data_files[{index}]", name, detail=why))
        elif resolved is None:
            missing.append(EntryProblem(f"_data_files[{index}]", name))
        else:
            found.append(resolved)
    discovery.findings.extend(judged(EntriesRecord(display_path(path), display_path(folder), missing, escaping,
                                                   hint=STATE_HINT), discovery.errors))
    _add(discovery, found)


def _json(path: str):
    return parse_json(read_text(path), os.path.basename(path))


def _detect_tokens(root: str, options: AuditOptions) -> Evidence:
    if storage.isfile(root):
        kind = token_file_kind(root)
        return evidence(0.95, Seen(f"a {kind} file of token ids", CONTENT)) if kind is not None else no()
    if not storage.isdir(root):
        return no()
    if storage.isfile(os.path.join(root, DATASET_DICT_FILE)):
        return evidence(0.95, Seen(f"{DATASET_DICT_FILE} (datasets.save_to_disk)", DECLARED))
    if storage.isfile(os.path.join(root, STATE_FILE)) and storage.isfile(os.path.join(root, INFO_FILE)):
        return evidence(0.95, Seen(f"{STATE_FILE} and {INFO_FILE} (datasets.save_to_disk)", DECLARED))
    budget = [DETECT_ENTRIES]
    folders = _data_in(root, budget)
    if folders is True:
        return evidence(0.95, Seen("data files with input_ids", CONTENT))
    holding = next((folder for folder in folders or () if _data_in(folder, budget) is True), None)
    if holding is not None:
        return evidence(0.95, Seen(f"data files with input_ids in {display_path(holding)}", CONTENT), below=holding)
    return no()


def _data_in(folder: str, budget: list[int]) -> bool | list[str]:
    """True when ``folder`` holds a data file of token ids, else its sub-folders; entries
    looked at are taken from ``budget``."""
    folders = []
    try:
        with storage.scandir(folder) as scan:
            for entry in scan:
                if budget[0] <= 0:
                    break
                budget[0] -= 1
                if entry.name.startswith("."):
                    continue
                if storage.is_folder(entry):
                    folders.append(entry.path)
                elif storage.is_regular(entry) and _data_file(entry.path):
                    return True
    except (OSError, storage.StorageError):
        pass
    return sorted(folders)


discover_tokens.detect = _detect_tokens  # type: ignore[attr-defined]  # read by register_layout
register_layout("tokens", "tokenized text: datasets.save_to_disk folders, Arrow/Parquet files, JSON lines with "
                "input_ids", 0.95)(discover_tokens)
