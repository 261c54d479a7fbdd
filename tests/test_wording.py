"""Wording read from the real output: the CLI's text, an exception's message, a record's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from builders import write_png
from labelguard.cli import main


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config"], catch_exceptions=False)


def masks_of(root, *masks):
    for number, mask in enumerate(masks):
        write_png(root / "masks" / f"{number}.png", np.asarray(mask, np.uint8))
    return root


@pytest.mark.code("LG201", "fail")
def test_the_hint_of_values_far_past_num_classes_is_a_whole_sentence(tmp_path):
    data = masks_of(tmp_path / "d", [[0, 1], [2, 200]])
    result = cli("audit", str(data), "--num-classes", "3")
    assert result.exit_code == 1
    assert "hint: Remap the values (`labelguard fix remap`)." in result.output
    assert "Or remap" not in result.output


@pytest.mark.code("LG201", "fail")
def test_the_hint_keeps_the_case_of_what_it_names_and_joins_its_parts(tmp_path):
    data = masks_of(tmp_path / "d", [[0, 1], [2, 3]], [[0, 1], [2, 255]])
    text = " ".join(cli("audit", str(data), "--num-classes", "3").output.split())
    assert ("hint: If 3 is a real class, num_classes must be 4 (count the background too); "
            "or remap the values (`labelguard fix remap`).") in text
    assert ("hint: If 255 marks borders/unlabelled pixels, declare it as the ignore index (--ignore-index 255; "
            "guard(..., ignore_index=255)) and pass ignore_index=255 to the loss; or remap the values "
            "(`labelguard fix remap`).") in text


def test_the_guard_error_and_the_quarantine_record_say_the_same_hint(tmp_path):
    torch = pytest.importorskip("torch")
    from labelguard import LabelError
    from labelguard.torch import guard

    samples = [(torch.zeros(1, 2, 2), torch.tensor([[0, 1], [2, 200]]))]
    with pytest.raises(LabelError) as caught:
        guard(samples, num_classes=3)[0]
    assert str(caught.value).endswith("Hint: Remap the values (`labelguard fix remap`).")
    quarantine = tmp_path / "q.jsonl"
    skipping = guard(samples * 2 + [(torch.zeros(1, 2, 2), torch.zeros(2, 2, dtype=torch.long))],
                     num_classes=3, on_error="skip", quarantine=quarantine)
    skipping[0]
    record = json.loads(quarantine.read_text().splitlines()[0])
    assert record["message"].endswith("Hint: Remap the values (`labelguard fix remap`).")


def _preflight_of(model, targets):
    torch = pytest.importorskip("torch")
    from labelguard.torch import preflight

    batch = (torch.zeros(len(targets), 3, 2, 2), torch.tensor(targets))
    return preflight(model, torch.nn.CrossEntropyLoss(), [batch], raise_on_error=False)


def test_preflight_names_a_model_that_is_its_own_head_and_counts_its_batches():
    torch = pytest.importorskip("torch")
    report = _preflight_of(torch.nn.Conv2d(3, 2, 1), [[[0, 1], [2, 0]]])
    text = str(report)
    assert text.startswith("preflight: 1 batch, loss CrossEntropyLoss, the model (a Conv2d) with 2 outputs,")
    assert "''" not in text and "1 batches" not in text
    (finding,) = report.errors
    assert finding.message.startswith(
        "the model (a Conv2d) gives 2 classes but the targets hold 0, 1, 2: value 2 indexes past the logits")


def test_preflight_names_a_sequential_head_by_its_module_path_and_makes_the_verb_agree():
    torch = pytest.importorskip("torch")
    from labelguard.torch import PreflightError, preflight

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 1))
    batch = (torch.zeros(1, 3, 2, 2), torch.tensor([[[0, 1], [2, 3]]]))
    with pytest.raises(PreflightError) as caught:
        preflight(model, torch.nn.CrossEntropyLoss(), [batch, batch])
    text = str(caught.value)
    assert "preflight: 2 batches, loss CrossEntropyLoss, head '2' (Conv2d) with 2 outputs," in text
    assert "head '2' (Conv2d) gives 2 classes but the targets hold 0, 1, 2, 3: values 2, 3 index past" in text


def test_counts_of_one_are_singular_in_init_and_detect(tmp_path):
    data = masks_of(tmp_path / "d", [[0, 1], [2, 2]])
    detected = CliRunner().invoke(main, ["detect", str(data)])
    assert "masks, 1 label file, 0 paired with an image" in detected.output
    assert "1 label files" not in detected.output
    written = CliRunner().invoke(main, ["init", str(data)])
    assert written.exit_code == 0, written.output
    config = (data / "labelguard.toml").read_text()
    assert "# inferred from 1 sample under" in config
    assert "# value 0: 1 file, 1 pixel\n" in config and "# value 2: 1 file, 2 pixels\n" in config


@pytest.mark.parametrize("paths", [["empty"], ["empty", "text"]])
def test_an_audit_of_nothing_says_why_once(tmp_path, paths):
    (tmp_path / "empty").mkdir()
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "readme.md").write_text("no labels here\n")
    result = cli("audit", *(str(tmp_path / p) for p in paths))
    assert result.exit_code == 2
    assert result.stdout.count("Nothing was checked") == len(paths)  # once per dataset
    assert "nothing was audited" not in result.stdout
    assert result.stderr.count("nothing was audited: no label file") == 1
    said = json.loads(cli("audit", *(str(tmp_path / p) for p in paths), "-f", "json").stdout)
    assert said["summary"]["audited_nothing"].startswith("nothing was audited: no label file")
    assert not any("nothing was audited" in note for note in said["summary"]["notes"])


def test_the_counts_of_a_target_monitor_sentence_are_grouped_alike():
    torch = pytest.importorskip("torch")
    from labelguard.torch import TargetMonitor

    target = torch.zeros(4, 128, 128, dtype=torch.long)  # 65,536 elements
    target[1, :20] = 7  # 2,560 of them past 3 classes
    monitor = TargetMonitor(num_classes=3, on_error="warn")
    monitor(target)
    [error] = monitor.report()
    assert "2,560 elements of 65,536 were no class of [0, 3)" in str(error)
    assert "the first label value 7 at element 16384" in str(error)  # a position: not a count


@pytest.mark.code("LG213", "fail")
def test_the_counts_of_a_shape_outlier_sentence_are_grouped_alike(tmp_path):
    for number in range(1000):
        write_png(tmp_path / "d" / "masks" / f"{number:04d}.png", np.zeros((2, 2), np.uint8))
    write_png(tmp_path / "d" / "masks" / "odd.png", np.zeros((3, 3), np.uint8))
    said = json.loads(cli("audit", str(tmp_path / "d"), "--num-classes", "2", "-f", "json").stdout)
    [finding] = [f for f in said["findings"] if f["code"] == "LG213"]
    assert "differs in shape from the 1,000 of 1,001 there that are 2x2: 3x3 in 1 (" in finding["message"]


@pytest.mark.code("LG605", "fail")
def test_the_counts_of_tokenizer_and_embedding_sentences_are_grouped_alike(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 2000}))
    (tmp_path / "vocab.txt").write_text("".join(f"t{n}\n" for n in range(2002)))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text(json.dumps({"input_ids": [1, 2001, 2002]}) + "\n")

    said = json.loads(cli("audit", str(tmp_path / "data"), "--model-config", str(tmp_path / "model"),
                          "--tokenizer", str(tmp_path / "vocab.txt"), "-f", "json").stdout)
    [past] = [f["message"] for f in said["findings"] if f["code"] == "LG605"]
    assert "makes ids up to 2001 (2,002 ids, added tokens included) but the embedding has 2,000 rows" in past
    assert "ids 2000..2001 have no row" in past  # ids are values: never grouped
    said = json.loads(cli("audit", str(tmp_path / "data"), "--tokenizer", str(tmp_path / "vocab.txt"),
                          "-f", "json").stdout)
    [ids] = [f["message"] for f in said["findings"] if f["code"] == "LG601"]
    assert "1 row holds token ids outside the 2,002 ids of the tokenizer" in ids
