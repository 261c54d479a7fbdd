"""explain reads the whole log for evidence, and its labels differ with it.

The seed write-ups' logs (002: a GAN whose losses grew before the NaN that BCE asserted on;
003: a list line with a trailing space, a Swin-Unet loss that was NaN from the first
iteration) ranked the same with or without the lines that point at the cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from explain_fixtures import read_log
from hypothesis import given, settings
from hypothesis import strategies as st

from labelguard.explain import explain
from labelguard.explain._evidence import KEYS, gather
from labelguard.explain._extract import normalise
from labelguard.explain._render import render_explanation

CORPUS = Path(__file__).parent / "corpus"

BCE_ASSERT = (
    "/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator(): block: [0,0,0], thread: [0,0,0] "
    "Assertion `input_val >= zero && input_val <= one` failed.\n"
    "RuntimeError: CUDA error: device-side assert triggered\n"
)


def by_title(result, words):
    return next(c for c in result.causes if c.title.startswith(words))


def test_seed_002_losses_that_grew_before_the_nan_rank_divergence_first_and_logits_last():
    result = explain(read_log("cuda_bce_gan_nan_after_epochs.log"))
    first = result.causes[0]
    assert (first.likelihood, first.title.split(":")[0]) == ("likely", "training diverged")
    assert first.support == ("G loss grew from 1.21 (line 1) to 2213.7 (line 6), 1,830x before it became "
                             "non-finite",)
    logits = by_title(result, "BCELoss is fed logits")
    assert logits.likelihood == "less likely" and logits.rank == len(result.causes) - 1
    assert logits.against == ("line 7: D loss: nan, the first non-finite loss, after 6 finite values",
                              "D loss printed 6 finite values (lines 1-6): training ran before the error")
    assert not any("LG507" in c.codes for c in result.causes)  # no freeze offered without evidence


def test_the_same_assertion_alone_labels_its_causes_by_frequency_not_all_likely():
    result = explain(BCE_ASSERT)
    assert [c.likelihood for c in result.causes] == ["likely", "possible", "possible", "possible"]
    assert result.causes[0].title == "BCELoss is fed logits: the last layer has no sigmoid"
    assert result.evidence == ()
    assert not any("frozen" in c.title for c in result.causes)


def test_a_freeze_reported_at_start_up_is_offered_and_noted_but_moves_nothing():
    log = ("labelguard: LG507 module 'sub_mean' (MeanShift) sets requires_grad = False as an attribute; "
           "its parameters weight, bias stay trainable\n" + "[G loss: 3.1]\n[G loss: nan]\n" + BCE_ASSERT)
    result = explain(log)
    freeze = by_title(result, "a freeze that does nothing")
    assert freeze.likelihood == "possible" and freeze.codes == ("LG507", "LG504")
    assert freeze.support == () and freeze.against == ()
    assert freeze.noted[0].startswith("line 1: labelguard reported LG507: module 'sub_mean' (MeanShift)")
    assert "they alone make no NaN" in freeze.why
    diverged = by_title(result, "training diverged")
    assert diverged.likelihood == "likely" and diverged.rank < freeze.rank
    assert "     noted:   line 1: labelguard reported LG507" in render_explanation(result)


def test_a_code_a_hint_cites_in_passing_is_no_report():
    hint = ("WARNING:labelguard.torch:LG502 the loss became non-finite at step 9; before it, nothing finite was "
            "recorded before it to compare with Hint: run audit_optimizer(model, optimizer) (LG504/LG507) and "
            "watch the growth before the NaN (LG508).\n")
    keys = [e.key for e in gather(hint)]
    assert "frozen-reported" not in keys and "divergence-reported" not in keys


def test_seed_003_a_path_with_a_space_before_its_extension_points_at_the_list():
    result = explain(read_log("cpu_file_not_found_list_space.log"))
    assert result.summary == "a file the data pipeline names could not be found or loaded"
    first = result.causes[0]
    assert first.likelihood == "likely" and first.codes == ("LG004", "LG003")
    assert first.support == ("line 26: the path '../data/Synapse/train_npz/case0005_slice012 .npz' has "
                             "whitespace before its extension, which a file list's line keeps when its "
                             "reader does not strip it",)
    assert [c.likelihood for c in result.causes] == ["likely", "possible", "less likely"]


def test_seed_003_unable_to_load_with_a_trailing_space():
    result = explain(read_log("cpu_unable_to_load_npz.log"))
    assert result.causes[0].support[0].endswith("'data/train/labels/case_001.npz ' ends with whitespace, "
                                                "which a file list's line keeps when its reader does not "
                                                "strip it")
    (unreadable,) = [e for e in result.evidence if e.key == "unreadable-file"]
    assert unreadable.text == "line 13: could not load .npz file 'data/train/labels/case_001.npz '"


def test_a_missing_file_without_whitespace_names_no_list_line():
    result = explain("FileNotFoundError: [Errno 2] No such file or directory: 'data/train/case_001.npz'\n")
    assert [e.key for e in result.evidence] == ["missing-file"]
    assert [c.likelihood for c in result.causes] == ["likely", "possible", "possible"]
    assert not result.causes[0].support


def test_seed_003_a_loss_nan_from_the_first_iteration_points_at_the_data():
    result = explain(read_log("train_swin_unet_loss_nan_from_start.log"))
    assert result.summary == "the loss became NaN/Inf during training"
    assert result.causes[0].title.startswith("a sample holds NaN/Inf")
    assert result.causes[0].likelihood == "likely"
    diverging = by_title(result, "training diverged")
    assert diverging.likelihood == "less likely"
    assert diverging.against == ("line 3: loss was nan from its first printed value: the first steps "
                                 "already failed",)


def test_a_label_cast_from_nan_in_the_log_is_evidence_for_the_data():
    log = "step 1 loss: 0.9\nstep 2 loss: 0.8\nstep 3 loss: 0.85\nstep 4 loss: nan\ntarget max -9223372036854775808\n"
    result = explain(log)
    data = result.causes[0]
    assert data.title.startswith("a sample holds NaN/Inf") and data.likelihood == "likely"
    assert data.support == ("line 5 shows -9223372036854775808, what NaN becomes when cast to a 64-bit integer "
                            "(a label or index that held NaN before .long())",)
    (steady,) = [e for e in result.evidence if e.key == "loss-steady"]
    assert steady.text.startswith("loss stayed between 0.8 and 0.9 over 3 printed values (lines 1-3)")


def test_loss_formats_and_lines_that_are_no_loss():
    text = "\n".join([
        "epoch 1 train_loss=1.5e-1 val loss: 2",
        "{'loss': 0.25, 'lr': 0.001}",
        "    loss = criterion(out, y)",
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator()",
        "epoch 2 train_loss=40.0 val loss: 2.5",
        "Loss = tensor(nan, device='cuda:0')",
    ])
    evidence = {e.key: e.text for e in gather(text)}
    assert evidence["loss-grew"] == "train loss grew from 0.15 (line 1) to 40 (line 5), 267x"
    assert evidence["loss-nonfinite"] == "line 6: loss: nan, the first non-finite loss, after 1 finite value"
    assert "loss-nan-from-start" not in evidence


def test_a_loss_that_wanders_within_two_orders_of_magnitude_did_not_grow():
    text = "\n".join(f"loss: {value}" for value in (2.0, 0.5, 3.1, 0.04, 3.9))
    assert [e.key for e in gather(text)] == ["trained"]


def test_the_text_and_json_show_the_evidence_and_what_each_cause_rests_on():
    result = explain(read_log("cuda_bce_gan_nan_after_epochs.log"))
    text = render_explanation(result)
    assert "  evidence:    G loss grew from 1.21 (line 1) to 2213.7 (line 6)" in text
    assert "1. [likely] training diverged" in text and "     seen:    G loss grew" in text
    assert "[less likely] BCELoss is fed logits" in text and "     against: line 7: D loss: nan" in text
    data = json.loads(json.dumps(result.to_dict()))
    assert data["evidence"][1] == {"key": "loss-grew", "line": 6, "text": result.evidence[1].text, "code": None}
    assert data["causes"][0]["support"] and data["causes"][-1]["against"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("loss LOSS: =nan inf 0.5e3 '\"[]\nNo such file or directory"
                                             " Unable to load LG507 LG204 -9223372036854775808 .npz\\r_")),
               max_size=400))
def test_evidence_reading_takes_any_text(text):
    lines = text.count("\n") + 1
    for item in gather(text):
        assert item.key in KEYS and 1 <= item.line <= lines and item.text


# --- the target a loss rejected, against the ignore_index the log declares ------------------

CROSS_ENTROPY = ('  File "/home/u/seg/train.py", line 40, in <module>\n    loss = criterion(out, lbl)\n'
                 "IndexError: Target {target} is out of bounds.\n")


@pytest.mark.parametrize(("declared", "target", "first", "seen"), [
    # a class id past the classes, whatever ignore_index the log declares
    ("Namespace(ignore_index=255, num_classes=19)\n", 26, "class-id-too-large",
     "line 4: the target the loss rejected is 26, no ignore value (negative or 255); the log declares "
     "ignore_index=255 (line 1): a class id at or past the number of classes"),
    ("", 19, "class-id-too-large",
     "line 3: the target the loss rejected is 19, no ignore value (negative or 255): a class id at or past the "
     "number of classes"),
    # an ignore value the loss was not given
    ("", 255, "ignore-value-not-ignored",
     "line 3: the target the loss rejected is 255, a value datasets use for 'ignore' or 'no label', and the log "
     "declares no ignore_index"),
    ("ignore_index: 255\n", -1, "ignore-value-not-ignored",
     "line 4: the target the loss rejected is -1, a value datasets use for 'ignore' or 'no label', while the log "
     "declares ignore_index=255 (line 1)"),
    ("Namespace(ignore_index=255, num_classes=19)\n", 255, "ignore-value-not-ignored",
     "line 4: the target the loss rejected is 255, a value datasets use for 'ignore' or 'no label', the log's own "
     "ignore_index=255 (line 1): the value reached a loss that was not given it"),
])
def test_a_declared_ignore_index_moves_the_ignore_cause_only_for_an_ignore_value(declared, target, first, seen):
    result = explain(declared + CROSS_ENTROPY.format(target=target))
    assert (result.causes[0].id, result.causes[0].likelihood) == (first, "likely")
    ignore = next(c for c in result.causes if c.id == "ignore-value-not-ignored")
    if first == "ignore-value-not-ignored":
        assert ignore.support == (seen,)
    else:
        assert ignore.likelihood == "less likely" and ignore.against == (seen,)
        assert result.causes[0].noted == (seen,)


def test_the_cityscapes_label_ids_log_ranks_the_class_id_first():
    result = explain((CORPUS / "seg_target_26_ignore_index_255.log").read_text(encoding="utf-8"))
    assert [c.id for c in result.causes][:1] == ["class-id-too-large"]
    assert next(c for c in result.causes if c.id == "ignore-value-not-ignored").likelihood == "less likely"


# --- Rich's logging handler ---------------------------------------------------------------

RICH = (
    "[12/05/26 10:01:02] INFO     step 1 loss 22.07                    train_sr.py:21\n"
    "                    WARNING  LG508 training is diverging (step 2): _watch.py:336\n"
    "                             the output of '0' (Conv2d) grew from               \n"
    "                             max |x| 305 (step 1) to 5.63e+04 at                \n"
    "                             step 2 (184x)                                      \n"
    "[12/05/26 10:01:03] WARNING  LG502 the loss became non-finite at   _watch.py:336\n"
    "                             step 7; before it, the loss reached 5e+31x. Hint:   \n"
    "                             The growth reported before it (LG508)              \n"
    "                             ended in an overflow: lower the                    \n"
    "                             learning rate.                                     \n"
    "RuntimeError: Loss is inf, stopping training\n"
)


def test_rich_records_are_read_as_reports_with_their_wrapped_lines():
    clean = normalise(RICH)
    lines = clean.split("\n")
    assert len(lines) == len(RICH.split("\n"))  # every line keeps its number
    assert lines[1] == ("                    WARNING  LG508 training is diverging (step 2): the output of '0' (Conv2d) "
                        "grew from max |x| 305 (step 1) to 5.63e+04 at step 2 (184x)")
    assert lines[2:5] == ["", "", ""]
    evidence = {e.key: e for e in gather(clean)}
    assert evidence["divergence-reported"].text.startswith("line 2: labelguard reported LG508: training is diverging")
    lg502 = "\n".join(RICH.split("\n")[5:10])
    (reading,) = [e for e in gather(normalise(lg502)) if e.key == "divergence-reported"]
    assert reading.text.startswith("line 1: labelguard.torch.watch saw the growth it reported (LG508) end in the "
                                   "non-finite value (LG502)")
    result = explain(RICH)
    assert result.matches[0].entry == "labelguard-finding"
    assert (result.causes[0].id, result.causes[0].likelihood) == ("training-diverged", "likely")


def test_a_level_word_without_a_time_or_a_path_makes_no_rich_record():
    text = "ERROR    plain text without a time\n                             indented code line\n"
    assert normalise(text) == text
