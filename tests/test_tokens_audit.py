"""``labelguard audit`` of tokenized datasets (LG601-LG605) on real artefacts: a tokenizer
trained with ``tokenizers``, models built and saved by ``transformers``, datasets written by
``datasets`` and pyarrow. Where a row is reported, the real model is run on it to show that
it is exactly the rows the model cannot take that are named."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from audit_helpers import codes, found, run
from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.readers.tokens import token_spec_from_files, tokenizer_spec
from nlp_builders import (
    CORPUS, arrow_stream_claiming_a_terabyte_body, bert_config, build_model, encode_rows, roberta_config, save_dataset, save_model, train_tokenizer,
    write_arrow_file, write_jsonl, write_parquet,
)


def spec_of(model_folder=None, tokenizer=None) -> LabelSpec:
    return LabelSpec(tokens=token_spec_from_files(model_folder and str(model_folder), tokenizer and str(tokenizer)))


def crashes(model, ids, token_types=None) -> bool:
    """True when the real model cannot take one sequence on the CPU (an index out of range in
    one of its tables: what a GPU reports as the device-side assert)."""
    import torch

    inputs = {"input_ids": torch.tensor([ids])}
    if token_types is not None:
        inputs["token_type_ids"] = torch.tensor([token_types])
    try:
        with torch.no_grad():
            model(**inputs)
    except (IndexError, RuntimeError) as error:  # an embedding lookup, or a gather of positions
        assert "out of" in str(error), error
        return True
    return False


def entity_texts() -> list[str]:
    texts = list(CORPUS[:6])
    texts[2] = "<ent> the cat </ent> sat on the mat"
    texts[5] = "a dog ran <ent> in the park"
    return texts


@pytest.mark.code("LG601", "fail")
@pytest.mark.code("LG605", "fail")
def test_tokens_added_after_the_model_was_built_are_lg601_on_their_rows_and_lg605(tmp_path):
    """Scenario 16 (transformers #1848) on disk: two special tokens added to the tokenizer, the
    embedding not resized, the data tokenized with the grown tokenizer and saved."""
    tokenizer = train_tokenizer(tmp_path / "tokenizer", added_special=("<ent>", "</ent>"))
    vocab = tokenizer.get_vocab_size(with_added_tokens=False)
    config = bert_config(vocab)
    model_folder = save_model(config, tmp_path / "model")
    columns = encode_rows(tokenizer, entity_texts(), labels=[0, 1, 0, 1, 0, 1])
    save_dataset(tmp_path / "data", columns, class_names=["neg", "pos"])

    report = run(tmp_path / "data", spec_of(model_folder, tmp_path / "tokenizer" / "tokenizer.json"))

    [ids] = found(report, "LG601")
    assert ids.path.endswith("data-00000-of-00001.arrow")
    assert ids.data["rows"] == [2, 5] and ids.data["values"] == [vocab, vocab + 1]
    assert f"'input_ids': 2 rows hold token ids outside the embedding's {vocab} rows" in ids.message
    assert "resize_token_embeddings" in ids.hint
    model = build_model(config)
    assert [row for row, sequence in enumerate(columns["input_ids"]) if crashes(model, sequence)] == [2, 5]
    [tokenizer_finding] = found(report, "LG605")
    assert tokenizer_finding.data == {"tokenizer_size": vocab + 2, "vocab_size": vocab,
                                      "special_outside": ["<ent>", "</ent>"]}
    assert f"ids {vocab}..{vocab + 1} have no row" in tokenizer_finding.message
    assert report.summary.samples == 6


@pytest.mark.code("LG601", "pass")
@pytest.mark.code("LG605", "pass")
def test_the_same_data_with_the_embedding_resized_is_clean(tmp_path):
    tokenizer = train_tokenizer(tmp_path / "tokenizer", added_special=("<ent>", "</ent>"))
    model = build_model(bert_config(tokenizer.get_vocab_size(with_added_tokens=False)))
    model.resize_token_embeddings(tokenizer.get_vocab_size(with_added_tokens=True))
    model.save_pretrained(str(tmp_path / "model"))
    save_dataset(tmp_path / "data", encode_rows(tokenizer, entity_texts(), labels=[0, 1] * 3), class_names=["n", "p"])

    report = run(tmp_path / "data", spec_of(tmp_path / "model", tmp_path / "tokenizer"))

    assert report.findings == [] and report.errors == []
    assert report.summary.samples == 6
    [note] = [note for note in report.notes if note.startswith("token spec: ")]
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    assert note == (f"token spec: vocab_size {vocab}, max_position_embeddings 64, type_vocab_size 2, num_labels 2 "
                    f"(from {tmp_path / 'model' / 'config.json'}); tokenizer of {vocab} ids "
                    f"(from {tmp_path / 'tokenizer' / 'tokenizer.json'})")


def sequences(lengths, padding: dict[int, int] = {}, pad: int = 1) -> list[list[int]]:
    """One sequence per length, ids 5.. (row i ends with ``padding[i]`` pad ids)."""
    rows = []
    for row, length in enumerate(lengths):
        pads = padding.get(row, 0)
        rows.append([5 + (i % 50) for i in range(length - pads)] + [pad] * pads)
    return rows


@pytest.mark.code("LG602", "fail")
def test_roberta_positions_count_the_padding_offset_and_not_the_padding(tmp_path):
    """RoBERTa numbers positions from pad_token_id + 1: its 34-row table takes 32 tokens, and
    padding (which keeps position pad_token_id) makes no sequence too long."""
    config = roberta_config(100)
    save_model(config, tmp_path / "roberta", head="RobertaForMaskedLM")
    ids = sequences([10, 32, 33, 40, 64], padding={3: 10})
    save_dataset(tmp_path / "data", {"input_ids": ids})

    report = run(tmp_path / "data", spec_of(tmp_path / "roberta"))

    [finding] = found(report, "LG602")
    assert finding.data["rows"] == [2, 4] and finding.data["values"] == [33, 64]
    assert "the model's 32 usable positions (max_position_embeddings 34 from" in finding.message
    assert "less 2: roberta positions start at pad_token_id + 1" in finding.message
    model = build_model(config, "RobertaForMaskedLM")
    assert [row for row, sequence in enumerate(ids) if crashes(model, sequence)] == [2, 4]


@pytest.mark.code("LG602", "pass")
def test_bert_takes_as_many_tokens_as_it_has_positions(tmp_path):
    config = bert_config(100, max_position_embeddings=34)
    save_model(config, tmp_path / "bert")
    ids = sequences([10, 32, 33, 34])
    save_dataset(tmp_path / "data", {"input_ids": ids})

    report = run(tmp_path / "data", spec_of(tmp_path / "bert"))

    assert "LG602" not in codes(report)
    model = build_model(config)
    assert not any(crashes(model, sequence) for sequence in ids)


def test_a_model_of_rotary_positions_has_its_lengths_not_checked_and_says_so(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 100,
                                                      "max_position_embeddings": 16}))
    write_jsonl(tmp_path / "data" / "train.jsonl", {"input_ids": sequences([40])})
    report = run(tmp_path / "data", spec_of(tmp_path / "config.json"))
    assert "LG602" not in codes(report)
    assert any("sequence lengths not checked against max_position_embeddings 16" in note and "llama" in note
               for note in report.notes)


@pytest.mark.code("LG603", "fail")
def test_sentence_pairs_for_a_model_of_one_segment_type_are_lg603(tmp_path):
    """Scenario 16 (transformers #1538): BERT-style pairs (segment ids 0 and 1) for a model whose
    type_vocab_size is 1."""
    tokenizer = train_tokenizer(tmp_path / "tokenizer")
    config = bert_config(tokenizer.get_vocab_size(), type_vocab_size=1)
    save_model(config, tmp_path / "model")
    # single sentences have only segment 0; the pairs' second segment is 1
    columns = encode_rows(tokenizer, CORPUS[:4])
    pairs = encode_rows(tokenizer, CORPUS[4:6], pairs=CORPUS[6:8])
    for key in columns:
        columns[key] += pairs[key]
    save_dataset(tmp_path / "data", columns)

    report = run(tmp_path / "data", spec_of(tmp_path / "model"))

    [finding] = found(report, "LG603")
    assert finding.data["rows"] == [4, 5] and finding.data["values"] == [1]
    assert "the token type embedding's 1 row (type_vocab_size from" in finding.message
    model = build_model(config)
    assert [row for row in range(6) if crashes(model, columns["input_ids"][row], columns["token_type_ids"][row])] \
        == [4, 5]


@pytest.mark.code("LG603", "pass")
def test_sentence_pairs_for_bert_are_clean(tmp_path):
    tokenizer = train_tokenizer(tmp_path / "tokenizer")
    save_model(bert_config(tokenizer.get_vocab_size(), type_vocab_size=2), tmp_path / "model")
    save_dataset(tmp_path / "data", encode_rows(tokenizer, CORPUS[:3], pairs=CORPUS[3:6]))
    report = run(tmp_path / "data", spec_of(tmp_path / "model"))
    assert report.findings == []


@pytest.mark.code("LG604", "fail")
def test_labels_past_the_head_and_past_their_class_label_are_lg604(tmp_path):
    """A label column with three classes (and datasets' -1 'no label') for a head of two."""
    tokenizer = train_tokenizer(tmp_path / "tokenizer")
    save_model(bert_config(tokenizer.get_vocab_size(), num_labels=2), tmp_path / "model")
    save_dataset(tmp_path / "data", encode_rows(tokenizer, CORPUS[:6], labels=[0, 1, 2, 1, -1, 0]),
                 class_names=["negative", "neutral", "positive"])

    report = run(tmp_path / "data", spec_of(tmp_path / "model"))

    by_limit = {f.data["expected"].split(" (")[0]: f for f in found(report, "LG604")}
    head = by_limit["the model's 2 labels"]
    assert head.data["rows"] == [2, 4] and head.data["values"] == [-1, 2]
    assert "-100 ignored" in head.message and "never -1" in head.hint
    declared = by_limit["the dataset's 3 classes"]
    assert declared.data["rows"] == [4] and declared.data["values"] == [-1]


@pytest.mark.code("LG604", "pass")
def test_token_labels_with_minus_100_inside_the_head_are_clean(tmp_path):
    tokenizer = train_tokenizer(tmp_path / "tokenizer")
    save_model(bert_config(tokenizer.get_vocab_size(), num_labels=5), tmp_path / "model",
               head="BertForTokenClassification")
    columns = encode_rows(tokenizer, CORPUS[:4])
    columns["labels"] = [[-100] + [i % 5 for i in range(len(ids) - 2)] + [-100] for ids in columns["input_ids"]]
    save_dataset(tmp_path / "data", columns)
    report = run(tmp_path / "data", spec_of(tmp_path / "model"))
    assert report.findings == []


def test_the_label_spec_flags_check_label_columns_too(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", {"input_ids": [[1, 2], [1, 3]], "label": [0, 4]})
    report = run(tmp_path / "train.jsonl", LabelSpec(num_classes=3).with_origins([("num_classes", "--num-classes 3")]))
    [finding] = found(report, "LG604")
    assert finding.data["rows"] == [1] and "the label spec [0, 3)" in finding.message


def test_labels_of_a_language_model_are_token_ids(tmp_path):
    """A masked language model's labels are token ids (-100 for unmasked tokens): checked
    against the embedding, never against num_labels."""
    save_model(roberta_config(100), tmp_path / "mlm", head="RobertaForMaskedLM")
    write_jsonl(tmp_path / "data" / "train.jsonl", {"input_ids": [[0, 5, 6, 2], [0, 7, 8, 2]],
                                                    "labels": [[-100, 5, -100, -100], [-100, -100, 130, -100]]})
    report = run(tmp_path / "data", spec_of(tmp_path / "mlm"))
    [finding] = found(report, "LG601")
    assert finding.data["column"] == "labels" and finding.data["rows"] == [1] and finding.data["values"] == [130]
    assert "LG604" not in codes(report)


# ---- formats and streaming ------------------------------------------------------------------

def bad_every(rows: int, bad: set[int], vocab: int = 100) -> dict[str, list]:
    return {"input_ids": [[1, vocab + row % 7 if row in bad else 5, 2] for row in range(rows)],
            "label": [row % 2 for row in range(rows)]}


@pytest.mark.code("LG601", "fail")
@pytest.mark.parametrize("writer, name", [
    (lambda path, columns: write_parquet(path, columns, row_group_size=3000), "train.parquet"),
    (lambda path, columns: write_arrow_file(path, columns, batch_rows=2500), "train.arrow"),
    (write_jsonl, "train.jsonl"),
])
def test_rows_are_numbered_across_batches_and_row_groups(tmp_path, writer, name):
    bad = {5, 2999, 3000, 8191, 8192, 9999}
    writer(tmp_path / "data" / name, bad_every(10000, bad))
    report = run(tmp_path / "data", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    [finding] = found(report, "LG601")
    assert finding.data["rows"] == sorted(bad) and finding.data["row_count"] == len(bad)
    assert report.summary.samples == 10000


def token_spec_from_files_values(**values):
    from labelguard.core.spec import TokenSpec

    return TokenSpec(**values, origins=(("vocab_size", "the test"),))


def test_a_file_with_many_bad_rows_names_the_first_and_counts_them_all(tmp_path):
    bad = set(range(0, 20000, 7))
    save_dataset(tmp_path / "data", bad_every(20000, bad))
    report = run(tmp_path / "data", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    [finding] = found(report, "LG601")
    assert finding.data["row_count"] == len(bad) and finding.data["rows"] == sorted(bad)[:100]
    assert finding.data["count"] == len(bad)
    assert f"and {len(bad) - 10:,} more" in finding.message


def test_a_dataset_dict_audits_each_split_file(tmp_path):
    datasets = pytest.importorskip("datasets")
    splits = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict(bad_every(10, {3})),
        "validation": datasets.Dataset.from_dict(bad_every(10, {1, 2})),
    })
    splits.save_to_disk(str(tmp_path / "data"))
    report = run(tmp_path / "data", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    rows = {f.path.split("/")[-2]: f.data["rows"] for f in found(report, "LG601")}
    assert rows == {"train": [3], "validation": [1, 2]}
    assert report.layouts == ["tokens"]


def test_a_dataset_saved_in_shards_is_audited_shard_by_shard_with_parallel_workers(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(bad_every(4000, {10, 3500})).save_to_disk(str(tmp_path / "data"), num_shards=4)
    report = run(tmp_path / "data", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)), workers=2)
    assert sorted((f.path.rsplit("/", 1)[-1], f.data["rows"]) for f in found(report, "LG601")) == [
        ("data-00000-of-00004.arrow", [10]), ("data-00003-of-00004.arrow", [500])]
    assert report.summary.samples == 4000


def test_cache_files_beside_a_saved_dataset_are_not_audited(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(bad_every(10, set())).save_to_disk(str(tmp_path / "data"))
    stale = datasets.Dataset.from_dict(bad_every(10, {1}))
    stale.to_parquet(str(tmp_path / "unused.parquet"))
    (tmp_path / "data" / "cache-1234.arrow").write_bytes((tmp_path / "data" / "data-00000-of-00001.arrow").read_bytes())
    report = run(tmp_path / "data", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    assert report.findings == [] and report.files == [str(tmp_path / "data" / "data-00000-of-00001.arrow")]


def test_a_truncated_arrow_file_keeps_the_findings_of_the_rows_before_the_break(tmp_path):
    write_arrow_file(tmp_path / "data" / "train.arrow", bad_every(6000, {1, 5500}), batch_rows=2000)
    data = (tmp_path / "data" / "train.arrow").read_bytes()
    (tmp_path / "data" / "train.arrow").write_bytes(data[: len(data) // 2])
    report = run(tmp_path / "data" / "train.arrow", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    [unreadable] = found(report, "LG001")
    assert "cannot read the arrow" in unreadable.message
    assert report.errors == []


def test_an_invalid_json_line_is_lg001_and_the_rows_before_it_are_checked(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"input_ids": [1, 150, 2]}\n{"input_ids": [1, 5, 2]}\n{"input_ids": [1, 5\n')
    report = run(path, LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    [unreadable] = found(report, "LG001")
    assert unreadable.message.startswith("line 3: invalid JSON")
    assert unreadable.message.endswith("(after row 1: the rows before it were checked)")
    [ids] = found(report, "LG601")
    assert ids.data["rows"] == [0]


@pytest.mark.code("LG005", "fail")
@pytest.mark.code("LG003", "fail")
def test_data_files_state_json_names_outside_the_folder_or_missing_are_lg005_and_lg003(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(bad_every(10, set())).save_to_disk(str(tmp_path / "data"))
    state = json.loads((tmp_path / "data" / "state.json").read_text())
    state["_data_files"] += [{"filename": "../outside.arrow"}, {"filename": "data-00001-of-00001.arrow"}]
    (tmp_path / "outside.arrow").write_bytes((tmp_path / "data" / "data-00000-of-00001.arrow").read_bytes())
    (tmp_path / "data" / "state.json").write_text(json.dumps(state))
    report = run(tmp_path / "data", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    [escaping] = found(report, "LG005")
    assert "'../outside.arrow'" in escaping.message
    [missing] = found(report, "LG003")
    assert "_data_files[2]" in missing.message
    assert report.summary.samples == 10


PEAK_RSS = """
import sys
from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.core.spec import TokenSpec
spec = LabelSpec(tokens=TokenSpec(vocab_size=30000, max_position_embeddings=128))
report = audit(sys.argv[1], spec, use_project_config=False, workers=1, cache=False)
assert report.findings == [] and report.errors == [], (report.findings, report.errors)
# VmHWM: this process's own peak (ru_maxrss would count the test process it was forked from)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(report.summary.samples, int(peak.split()[1]) * 1024)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the peak resident memory is read from /proc")
@pytest.mark.parametrize("kind", ["arrow", "parquet"])
def test_a_tokenized_dataset_uses_flat_memory(tmp_path, kind):
    """Rows of 64 random ids, 20,000 and 200,000 of them, each audited in a fresh process: the
    larger file's peak resident memory (the page-cache pages a memory map would keep
    included) is that of the smaller one, give or take a fifth of their difference in size."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    peaks, sizes = [], []
    for rows in (20_000, 200_000):
        values = pa.array(rng.integers(0, 30000, rows * 64, dtype=np.int32))
        table = pa.table({"input_ids": pa.ListArray.from_arrays(pa.array(np.arange(0, rows * 64 + 1, 64, np.int32)),
                                                                values)})
        path = tmp_path / f"{rows}.{kind}"
        if kind == "parquet":
            pq.write_table(table, str(path), row_group_size=10_000)
        else:
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
                for batch in table.to_batches(max_chunksize=1000):
                    writer.write_batch(batch)
        del table, values
        done = subprocess.run([sys.executable, "-c", PEAK_RSS, str(path)], capture_output=True, text=True, check=True)
        samples, peak = map(int, done.stdout.split())
        assert samples == rows
        peaks.append(peak)
        sizes.append(path.stat().st_size)
    assert sizes[1] - sizes[0] > 20 * 2**20
    assert peaks[1] - peaks[0] < (sizes[1] - sizes[0]) / 5, (peaks, sizes)


# ---- the spec: files, config table, command line ---------------------------------------------

def test_a_vocab_txt_tokenizer_is_read_with_its_added_tokens(tmp_path):
    tokenizer = train_tokenizer(tmp_path / "tok")
    tokenizer.model.save(str(tmp_path / "tok"))
    size = tokenizer.get_vocab_size()
    (tmp_path / "tok" / "added_tokens.json").write_text(json.dumps({"<new>": size}))
    (tmp_path / "tok" / "tokenizer.json").unlink()
    spec = tokenizer_spec(str(tmp_path / "tok"))
    assert spec.tokenizer_size == size + 1 and ("<new>", size) in spec.special_ids
    assert spec.origin("tokenizer").endswith("vocab.txt")


def test_a_tokens_table_in_labelguard_toml_gives_the_spec(tmp_path):
    save_model(bert_config(100, max_position_embeddings=16), tmp_path / "model")
    write_jsonl(tmp_path / "data" / "train.jsonl", {"input_ids": sequences([4, 20]), "label": [0, 1]})
    (tmp_path / "labelguard.toml").write_text('[tokens]\nmodel_config = "model"\nmax_position_embeddings = 8\n')
    report = audit(tmp_path / "data", workers=1)
    [finding] = found(report, "LG602")
    assert finding.data["rows"] == [1] and "max_position_embeddings 8 from" in finding.message
    assert "labelguard.toml" in finding.message


def test_an_unknown_key_of_the_tokens_table_is_an_error_naming_it(tmp_path):
    from labelguard.errors import SpecError

    write_jsonl(tmp_path / "train.jsonl", {"input_ids": [[1, 2]]})
    (tmp_path / "labelguard.toml").write_text('[tokens]\nvocab = 100\n')
    with pytest.raises(SpecError, match="unknown token spec key vocab in .*labelguard.toml; known keys: "):
        audit(tmp_path / "train.jsonl")


def test_an_unreadable_model_config_is_an_error_naming_it(tmp_path):
    from labelguard.errors import SpecError

    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(SpecError, match="cannot read model config .*config.json: invalid model config"):
        token_spec_from_files(str(tmp_path / "config.json"))


def audit_cli(tmp_path, *args):
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *args, "-f", "json", "--no-progress",
                           "--no-config"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


@pytest.mark.code("LG006", "fail")
def test_the_command_line_takes_the_model_and_the_tokenizer(tmp_path):
    tokenizer = train_tokenizer(tmp_path / "tokenizer", added_special=("<ent>",))
    save_model(bert_config(tokenizer.get_vocab_size(with_added_tokens=False)), tmp_path / "model")
    save_dataset(tmp_path / "data", encode_rows(tokenizer, entity_texts(), labels=[0, 1] * 3))

    status, report, _ = audit_cli(tmp_path, "data", "--model-config", "model", "--tokenizer", "tokenizer")
    assert status == 1
    assert {f["code"] for f in report["findings"]} == {"LG601", "LG605"}
    assert report["summary"]["samples"] == 6

    status, report, _ = audit_cli(tmp_path, "data")
    [no_spec] = [f for f in report["findings"] if f["code"] == "LG006"]
    assert no_spec["message"].startswith("no token spec was given: 6 rows of tokenized data")
    assert "--model-config" in no_spec["hint"]


def test_a_token_spec_given_for_masks_says_it_checked_no_tokens(tmp_path):
    from builders import write_png

    write_png(tmp_path / "masks" / "a.png", np.zeros((4, 4), np.uint8))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 100}))
    report = run(tmp_path / "masks", LabelSpec(num_classes=2, tokens=token_spec_from_files(str(tmp_path / "config.json"))))
    assert any("no tokenized dataset was audited" in note for note in report.notes)


# ---- hostile files -----------------------------------------------------------------------------

def test_an_arrow_file_whose_offsets_point_past_its_values_is_lg001_before_numpy_views_them(tmp_path):
    """A crafted stream: the second row's sequence claims to end a million ids past the five the
    file holds. Viewed without a check, numpy would read memory outside the mapped file."""
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"input_ids": pa.array([[1, 2, 3], [4, 5]], pa.list_(pa.int32()))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    offsets = np.array([0, 3, 5], np.int32).tobytes()
    assert data.count(offsets) == 1
    (tmp_path / "train.arrow").write_bytes(data.replace(offsets, np.array([0, 3, 1_000_000], np.int32).tobytes()))
    report = run(tmp_path / "train.arrow", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    assert report.errors == []
    [unreadable] = found(report, "LG001")
    assert "cannot read the arrow stream" in unreadable.message and "out of bounds" in unreadable.message


def test_an_arrow_batch_claiming_a_terabyte_body_is_lg001_and_nothing_is_allocated_for_it(tmp_path):
    """A crafted stream whose second batch's message says its body is 1 TiB: the file is read,
    not memory-mapped, so the claim must not become an allocation (the process would die)."""
    (tmp_path / "train.arrow").write_bytes(arrow_stream_claiming_a_terabyte_body())
    report = run(tmp_path / "train.arrow", LabelSpec(tokens=token_spec_from_files_values(vocab_size=4)))
    assert report.errors == []
    [ids, unreadable] = sorted(report.findings, key=lambda f: f.code, reverse=True)
    assert ids.code == "LG601" and ids.data["rows"] == list(range(1, 60, 2))  # the first batch was checked
    assert unreadable.code == "LG001" and "cannot read the arrow stream" in unreadable.message
    assert "1099511627776 bytes" in unreadable.message and "(after row 59" in unreadable.message


def test_a_parquet_row_group_larger_than_max_file_bytes_is_lg001_before_it_is_decoded(tmp_path):
    write_parquet(tmp_path / "train.parquet", bad_every(5000, set()))
    report = run(tmp_path / "train.parquet", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)),
                 max_file_bytes=4096)
    [unreadable] = found(report, "LG001")
    assert "row group 0" in unreadable.message and "max_file_bytes" in unreadable.hint + unreadable.message
    assert report.summary.samples == 0


def test_a_json_line_longer_than_max_file_bytes_is_lg001_without_reading_it_whole(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"input_ids": [1, 2]}\n{"input_ids": [' + "7, " * 5000 + '7]}\n')
    report = run(path, LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)), max_file_bytes=4096)
    [unreadable] = found(report, "LG001")
    assert unreadable.message.startswith("line 2 holds 14.7 KiB of JSON")


def test_json_lines_are_told_by_their_first_record_and_pretty_printed_json_is_not_taken(tmp_path):
    long_text = "word " * 3000
    write_jsonl(tmp_path / "a" / "train.jsonl", {"text": [long_text, "short"], "input_ids": [[1, 2], [1, 130]]})
    report = run(tmp_path / "a", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    assert report.layouts == ["tokens"] and found(report, "LG601")[0].data["rows"] == [1]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.json").write_text(json.dumps({"input_ids": [1, 2]}, indent=2))
    assert run(tmp_path / "b").layouts != ["tokens"]


def test_rows_of_many_small_record_batches_keep_their_numbers(tmp_path):
    """A stream of many small record batches (datasets writes 1,000 rows each): rows are
    numbered across the batches, and every row is counted."""
    pa = pytest.importorskip("pyarrow")
    rows = [[1, 2, 3] if i % 7 else [1, 200] for i in range(2500)]  # every 7th row holds id 200
    table = pa.table({"input_ids": pa.array(rows, pa.list_(pa.int32()))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for first in range(0, 2500, 300):
            writer.write_batch(table.to_batches()[0].slice(first, 300))
    (tmp_path / "train.arrow").write_bytes(sink.getvalue().to_pybytes())
    report = run(tmp_path / "train.arrow", LabelSpec(tokens=token_spec_from_files_values(vocab_size=100)))
    [ids] = found(report, "LG601")
    assert ids.data["row_count"] == len(range(0, 2500, 7)) == 358
    assert ids.data["rows"] == list(range(0, 700, 7))  # the first 100 rows named, numbered across batches
    assert report.summary.samples == 2500
