"""Token batches against real transformers models on the CPU: preflight(model, ...) and
guard(dataset, model=...) read the model's own tables (LG601-LG604), and the rows they name
are the rows the model itself cannot take."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils.data import DataLoader  # noqa: E402

from labelguard.torch import PreflightError, SampleError, guard, preflight  # noqa: E402
from labelguard.errors import UnsupportedError  # noqa: E402
from nlp_builders import bert_config, build_model, roberta_config  # noqa: E402


def batch(ids, **columns):
    """A collated batch as a data collator makes it: tensors of (rows, length), labels (rows,)."""
    out = {"input_ids": torch.tensor(ids), "attention_mask": torch.ones(len(ids), len(ids[0]), dtype=torch.long)}
    out.update({key: torch.tensor(value) for key, value in columns.items()})
    return out


def crashing_rows(model, inputs) -> list[int]:
    """The rows of ``inputs`` that the real model cannot take one by one on the CPU."""
    rows = []
    for row in range(len(inputs["input_ids"])):
        one = {key: value[row:row + 1] for key, value in inputs.items() if key != "labels"}
        if "labels" in inputs:
            one["labels"] = inputs["labels"][row:row + 1]
        try:
            with torch.no_grad():
                model(**one)
        except (IndexError, RuntimeError) as error:
            assert "out of" in str(error) or "Target" in str(error), error
            rows.append(row)
    return rows


@pytest.mark.code("LG601", "fail")
@pytest.mark.code("LG603", "fail")
def test_preflight_names_the_rows_whose_ids_and_segments_the_model_has_no_row_for():
    model = build_model(bert_config(100, type_vocab_size=1, num_labels=2))
    inputs = batch([[2, 5, 3, 0], [2, 100, 3, 0], [2, 7, 3, 0], [2, 8, 3, 104]],
                   token_type_ids=[[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0]], labels=[0, 1, 0, 1])
    report = preflight(model, None, [inputs], raise_on_error=False)

    by_code = {f.code: f for f in report.errors}
    assert set(by_code) == {"LG601", "LG603"}
    assert by_code["LG601"].data["rows"] == [1, 3] and by_code["LG601"].data["values"] == [100, 104]
    assert "the model's 'bert.embeddings.word_embeddings'" in by_code["LG601"].message
    assert by_code["LG603"].data["rows"] == [2]
    assert by_code["LG601"].path == "batch 1"
    assert crashing_rows(model, inputs) == [1, 2, 3]
    with pytest.raises(PreflightError) as raised:
        preflight(model, None, [inputs])
    assert raised.value.code == "LG601"


@pytest.mark.code("LG601", "pass")
@pytest.mark.code("LG602", "pass")
@pytest.mark.code("LG603", "pass")
@pytest.mark.code("LG604", "pass")
def test_preflight_of_a_batch_the_model_takes_finds_nothing():
    model = build_model(bert_config(100, type_vocab_size=2, num_labels=3, max_position_embeddings=8))
    inputs = batch([[2, 5, 3, 9, 9, 9, 9, 3], [2, 99, 3, 0, 0, 0, 0, 0]],
                   token_type_ids=[[0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0]], labels=[2, 0])
    report = preflight(model, torch.nn.CrossEntropyLoss(), [inputs])
    assert report.findings == [] and report.batches == 1
    assert crashing_rows(model, inputs) == []


@pytest.mark.code("LG602", "fail")
def test_preflight_counts_roberta_positions_from_the_padding_id():
    """A RoBERTa table of 10 positions takes 8 tokens (positions start at padding_idx + 1);
    padding does not count."""
    model = build_model(roberta_config(100, max_position_embeddings=10), "RobertaForMaskedLM")
    pad = model.config.pad_token_id
    inputs = batch([[0] + [5] * 6 + [2, pad, pad], [0] + [5] * 8 + [2], [0, 5, 2] + [pad] * 7])
    report = preflight(model, None, [inputs], raise_on_error=False)
    [finding] = report.errors
    assert finding.code == "LG602" and finding.data["rows"] == [1] and finding.data["values"] == [10]
    assert "the model's 8 usable positions" in finding.message
    assert crashing_rows(model, inputs) == [1]


@pytest.mark.code("LG604", "fail")
def test_preflight_names_labels_past_the_classification_head():
    model = build_model(bert_config(100, num_labels=2))
    inputs = batch([[2, 5, 3], [2, 6, 3], [2, 7, 3]], labels=[0, 2, 1])
    report = preflight(model, torch.nn.CrossEntropyLoss(), [inputs], raise_on_error=False)
    [finding] = report.errors
    assert finding.code == "LG604" and finding.data["rows"] == [1] and finding.data["values"] == [2]
    assert "BertForSequenceClassification.config.num_labels" in finding.message
    assert crashing_rows(model, inputs) == [1]


def test_the_labels_of_a_masked_language_model_are_token_ids():
    model = build_model(bert_config(100), "BertForMaskedLM")
    inputs = batch([[2, 5, 3], [2, 6, 3]], labels=[[-100, 5, -100], [-100, 120, -100]])
    report = preflight(model, None, [inputs], raise_on_error=False)
    [finding] = report.errors
    assert finding.code == "LG601" and finding.data["column"] == "labels" and finding.data["rows"] == [1]


class TokenDataset(torch.utils.data.Dataset):
    """Tokenized samples as a datasets.Dataset with format "torch" gives them."""

    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        ids, label = self.rows[index]
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.ones(len(ids), dtype=torch.long),
                "label": torch.tensor(label)}


@pytest.mark.code("LG601", "fail")
@pytest.mark.parametrize("workers", [0, 2])
def test_guard_with_the_model_stops_at_the_sample_with_an_id_past_the_embedding(workers):
    model = build_model(bert_config(100, num_labels=2))
    dataset = guard(TokenDataset([([2, 5, 3], 0), ([2, 6, 3], 1), ([2, 130, 3], 0), ([2, 7, 3], 1)]), model=model)
    loader = DataLoader(dataset, batch_size=4, num_workers=workers,
                        collate_fn=lambda samples: samples)
    with pytest.raises(SampleError) as raised:
        next(iter(loader))
    error = raised.value
    assert error.code == "LG601" and error.index == 2 and error.values == [130]
    assert "LG601 sample 2" in str(error) and "row 2" in str(error)
    assert "the embedding's 100 rows" in error.expected


@pytest.mark.code("LG604", "fail")
def test_guard_skips_samples_whose_label_the_head_cannot_take(tmp_path):
    model = build_model(bert_config(100, num_labels=2))
    samples = [{"input_ids": [2, 5, 3], "label": 0}, {"input_ids": [2, 6, 3], "label": 2},
               {"input_ids": [2, 7, 3], "label": 1}]
    dataset = guard(samples, model=model, on_error="skip", quarantine=tmp_path / "bad.jsonl")
    assert [dataset[i]["label"] for i in range(3)] == [0, 1, 1]
    [record] = dataset.records
    assert record.code == "LG604" and record.index == 1 and record.values == [2]


@pytest.mark.code("LG604", "pass")
def test_guard_passes_token_labels_with_minus_100():
    model = build_model(bert_config(100, num_labels=3), "BertForTokenClassification")
    samples = [{"input_ids": [2, 5, 6, 3], "labels": [-100, 2, 0, -100]}]
    assert guard(samples, model=model)[0] is samples[0]


def test_guard_with_a_model_without_token_tables_is_an_error():
    with pytest.raises(UnsupportedError, match="Linear has no nn.Embedding"):
        guard([{"input_ids": [1]}], model=torch.nn.Linear(2, 2))
    with pytest.raises(UnsupportedError, match="must be a torch.nn.Module"):
        guard([{"input_ids": [1]}], model="bert-base-uncased")
