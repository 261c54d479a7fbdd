"""What labelguard itself reported, BERT's position mismatch, a NaN at inference and a batch that
would not stack: each ranked by the evidence tied to the failure, on logs as they are printed.

* an error labelguard.torch raised names its check, the sample, file and values: that check is
  the first cause, worded from the check registry;
* a freeze that does nothing (LG507) printed at start-up is noted, not ranked above divergence,
  unless labelguard located the failure in the module it names;
* "The size of tensor a (600) must match the size of tensor b (512)" is a sequence longer than
  the model's positions only when the position embeddings raised it at the sequence axis;
* multinomial's "probability tensor contains either inf, nan or element < 0" under transformers'
  generate() with no sign of training in the log is no diverged training, and that sign alone
  makes no cause likely;
* "stack expects each tensor to be equal size" sends to LG213 and guard_collate, led by which
  dimensions of the two shapes differ.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from explain_fixtures import read_log

import labelguard.rules  # noqa: F401  (registers every code)
from labelguard.core.registry import get
from labelguard.explain import explain
from labelguard.explain._knowledge import ENTRIES
from labelguard.explain._render import render_explanation


CORPUS = Path(__file__).parent / "corpus"


def cause(result, cause_id):
    return next(c for c in result.causes if c.id == cause_id)


# --- labelguard's own findings ---------------------------------------------------------


def test_a_guard_error_out_of_a_worker_ranks_its_check_first_with_the_sample_file_and_value():
    result = explain(read_log("cpu_labelguard_sample_error_workers.log"))
    first = result.causes[0]
    assert (first.id, first.likelihood, first.codes) == ("labelguard-lg201", "likely", ("LG201",))
    assert first.title.startswith("LG201 mask-value-outside-spec: a mask value is outside the spec")
    assert first.support == ("line 19: labelguard.torch raised LG201: sample 17 (train_npz/case0007_slice017.npz): "
                             "label value 9 in 100 pixels is outside [0, 9) (num_classes=9, ignore_index=None). On a "
                             "GPU this is the \"device-side assert triggered\" in cross_entropy.",)
    check = get("LG201")
    assert first.fix == check.fix and " ".join(check.why.split()) in first.why
    assert "`labelguard rule LG201`" in first.confirm
    assert [c.id for c in result.causes] == ["labelguard-lg201"]  # a NaN cause needs labelguard's NaN finding
    text = render_explanation(result)
    assert "1. [likely] LG201 mask-value-outside-spec" in text
    assert "seen:    line 19: labelguard.torch raised LG201: sample 17 (train_npz/case0007_slice017.npz)" in text


@pytest.mark.parametrize(("line", "code"), [
    ("labelguard.torch.SampleError: LG201 sample 17 (train_npz/case0007_slice003.npz): label value 9 in 100 "
     "pixels is outside [0, 9) (num_classes=9, ignore_index=None). Hint: If 9 is a real class, num_classes "
     "must be 10", "LG201"),
    ("labelguard.torch.SampleError: LG509 sample 412 (images/0412.png): the input holds 1,024 NaN of 150,528 "
     "values. Hint: Fix the sample", "LG509"),
    ("labelguard.torch.PreflightError: LG503 preflight found 1 error:", "LG503"),
    ("labelguard.errors.LabelError: LG102 sample 3: class id 80 is >= num_classes (80)", "LG102"),
])
def test_each_error_labelguard_raises_puts_its_check_first(line, code):
    result = explain(f"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n{line}\n")
    first = result.causes[0]
    assert (first.id, first.codes, first.likelihood) == (f"labelguard-{code.lower()}", (code,), "likely")
    assert first.title.startswith(f"{code} {get(code).name}: {get(code).summary}")
    assert first.support[0].startswith(f"line 3: labelguard.torch raised {code}: ")
    assert result.evidence[0].to_dict() == {"key": "labelguard-error", "line": 3, "text": first.support[0],
                                            "code": code}


def test_a_note_the_guard_added_to_the_datasets_error_says_the_dataset_raised_it():
    """The guard re-raises what the dataset raised with a note naming the sample: no check of
    labelguard's failed, so nothing may say it checked and raised."""
    result = explain(read_log("cpu_labelguard_guard_note_file_not_found.log"))
    first = result.causes[0]
    assert (first.id, first.codes, first.likelihood) == ("labelguard-note-lg003", ("LG003",), "likely")
    assert first.title == (f"LG003 {get('LG003').name}: {get('LG003').summary} (the dataset raised the error; "
                           "labelguard.torch.guard named the sample and its file)")
    assert first.why.startswith("The dataset's own code raised the error, not a labelguard check: ")
    assert first.support == ("line 20: labelguard.torch.guard's note (LG003) on the error the dataset raised: "
                             "sample 1 ('data/cases/case0002.npz '): the dataset raised FileNotFoundError: [Errno 2] "
                             "No such file or directory: 'data/cases/case0002.npz '.",)
    assert [e.key for e in result.evidence][:1] == ["labelguard-note"]
    text = render_explanation(result)
    assert "checked it and raised" not in text and "stopped the run" not in text
    assert cause(result, "list-path-whitespace").likelihood == "likely"


def test_an_error_that_counts_findings_is_read_from_the_finding_it_lists():
    """preflight raises "LG507 preflight found 1 error:" and lists the finding below: the
    evidence quotes the finding; a freeze that stopped the run is the failure, so it is likely."""
    result = explain(read_log("cpu_labelguard_preflight_freeze_raised.log"))
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("freeze-does-nothing", "likely")
    finding = ("'sub_mean' (MeanShift) sets requires_grad = False as a plain attribute, which freezes nothing: "
               "2 parameters still have requires_grad=True and are trained: sub_mean.weight (MeanShift), "
               "sub_mean.bias (MeanShift)")
    assert first.support == (f"line 8: labelguard.torch raised LG507 and stopped the run on this setup finding: "
                             f"{finding}",)
    assert first.noted == ()
    raised = next(e for e in result.evidence if e.key == "labelguard-error")
    assert raised.text == f"line 8: labelguard.torch raised LG507: {finding}"
    assert not any("found 1 error" in e.text for e in result.evidence)


def test_a_code_this_release_does_not_know_says_so():
    first = explain("labelguard.torch.SampleError: LG299 sample 1: something new\n").causes[0]
    assert first.id == "labelguard-lg299" and "does not know" in first.title


def test_explaining_labelguard_lines_imports_no_numpy_and_no_rules():
    log = read_log("cpu_labelguard_sample_error_workers.log")
    code = ("import sys; from labelguard.explain import explain; r = explain(sys.stdin.read()); "
            "print(r.causes[0].id, 'numpy' in sys.modules, 'labelguard.rules' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], input=log, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["labelguard-lg201", "False", "False"], done.stderr


def test_a_nan_the_tracer_found_in_exploded_activations_ranks_divergence_not_its_code():
    result = explain(read_log("cpu_labelguard_tracer_exploded_freeze_noted.log"))
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("training-diverged", "likely")
    assert first.support[0].startswith("line 24: labelguard.torch saw activations explode before the non-finite "
                                       "value (LG502): step 134: the loss () float32 holds 0 NaN, 1 +Inf")
    assert not any(c.id.startswith("labelguard-lg5") for c in result.causes)  # LG502 locates, it names no cause
    raised = next(e for e in result.evidence if e.key == "labelguard-error")
    assert raised.code == "LG502" and raised.text.startswith("line 24: labelguard.torch raised LG502: step 134")


# --- a freeze that does nothing is context unless tied to the failure -----------------------


@pytest.mark.parametrize("name", ["cpu_labelguard_watch_diverged_freeze_noted.log",
                                  "cpu_labelguard_tracer_exploded_freeze_noted.log"])
def test_a_freeze_printed_at_start_up_is_noted_and_ranked_below_divergence(name):
    result = explain(read_log(name))
    assert result.causes[0].id == "training-diverged" and result.causes[0].likelihood == "likely"
    freeze = cause(result, "freeze-does-nothing")
    assert freeze.likelihood == "possible" and freeze.support == ()
    assert freeze.noted == ("line 1: labelguard reported LG507: 'sub_mean' (MeanShift) sets requires_grad = False as "
                            "a plain attribute, which freezes nothing: 2 parameters still have requires_grad=True "
                            "and are trained: sub_mean.weight (MeanShift), sub_mean.bias (MeanShift)",)
    data = json.loads(json.dumps(result.to_dict()))
    assert next(c for c in data["causes"] if c["id"] == "freeze-does-nothing")["noted"] == list(freeze.noted)
    text = render_explanation(result)
    assert "noted: evidence shown that moved nothing" in text
    assert "     noted:   line 1: labelguard reported LG507" in text


def test_the_watch_names_the_divergence_it_saw():
    first = explain(read_log("cpu_labelguard_watch_diverged_freeze_noted.log")).causes[0]
    assert first.support[0].startswith("line 20: labelguard reported LG508: training is diverging")


def test_a_freeze_in_the_module_where_activations_exploded_ranks_first():
    result = explain(read_log("cpu_labelguard_tracer_frozen_module_exploded.log"))
    freeze, diverged = result.causes[0], result.causes[1]
    assert (freeze.id, freeze.likelihood) == ("freeze-does-nothing", "likely")
    assert freeze.support == ("line 9: labelguard located the failure in 'sub_mean', the module whose freeze does "
                              "nothing or whose frozen parameters are optimised (LG507, line 1): parameters meant "
                              "to stay fixed were trained",)
    assert (diverged.id, diverged.likelihood) == ("training-diverged", "likely")


def test_a_freeze_inside_the_module_the_tracer_names_is_tied_too():
    log = ("LG504 warning: 2 frozen parameters (requires_grad=False) are in the optimizer: encoder.stem.weight, "
           "encoder.stem.bias\n"
           "labelguard.torch.NonFiniteError: LG502 step 7: the first non-finite value was produced by module "
           "'encoder.stem.conv' (Conv2d): its output (2, 8, 4, 4) float32 holds 3 NaN, 0 +Inf, 0 -Inf of 256\n")
    freeze = cause(explain(log), "freeze-does-nothing")
    assert freeze.likelihood == "likely"
    assert freeze.support[0].startswith("line 2: labelguard located the failure in 'encoder.stem.conv', inside "
                                        "'encoder.stem', the module")


# --- BERT: a sequence longer than the model's positions --------------------------------------


@pytest.mark.parametrize(("name", "code"), [
    ("cpu_bert_positions_add.log", "embeddings = embeddings + position_embeddings"),
    ("cpu_bert_positions_expand.log", "token_type_ids = buffered_token_type_ids.expand(batch_size, seq_length)"),
])
def test_the_size_mismatch_in_bert_embeddings_is_a_sequence_past_the_positions(name, code):
    result = explain(read_log(name))
    first = result.causes[0]
    assert (first.id, first.likelihood, first.codes) == ("sequence-longer-than-positions", "likely", ("LG602",))
    assert first.support == (f"line 45: the sizes 600 and 512 did not match at dimension 1, the sequence axis of "
                             f"(batch, sequence) inputs, raised in the model's position or token-type embeddings "
                             f"({code}, line 42)",)
    assert "labelguard.torch.guard(tokenized_dataset, model=model)" in first.confirm
    assert "--model-config" in first.confirm


def test_the_same_message_without_position_frames_is_a_generic_shape_mismatch():
    result = explain("RuntimeError: The size of tensor a (600) must match the size of tensor b (512) at "
                     "non-singleton dimension 1\n")
    assert [c.id for c in result.causes][:1] == ["shapes-differ-in-op"]
    positions = cause(result, "sequence-longer-than-positions")
    assert positions.likelihood == "possible" and positions.support == ()
    assert dict(result.facts.values) == {"size_a": "600", "size_b": "512", "dimension": "1"}


def test_a_tokenizer_warning_of_the_sizes_that_failed_is_shown_but_ranks_nothing_without_the_embeddings():
    """The sizes are the tokenizer's length and limit, but nothing shows the position embeddings
    raised it (a user's layer sized for 512 tokens fails the same way): noted, not first."""
    log = ("Token indices sequence length is longer than the specified maximum sequence length for this model "
           "(937 > 512). Running this sequence through the model will result in indexing errors\n"
           "RuntimeError: The size of tensor a (937) must match the size of tensor b (512) at non-singleton "
           "dimension 1\n")
    result = explain(log)
    assert result.causes[0].id == "shapes-differ-in-op"
    positions = cause(result, "sequence-longer-than-positions")
    assert (positions.likelihood, positions.support) == ("possible", ())
    assert positions.noted == ("line 2: the sizes that did not match (937 and 512) are the sequence length and the "
                               "model's maximum the tokenizer warned about (line 1)",)


@pytest.mark.parametrize(("name", "first_cause"), [
    # the mismatch at the sequence axis, sized as the tokenizer warned, raised in a user's pooling layer
    ("bert_pooling_positions_mismatch_tokenizer_warning.log", "shapes-differ-in-op"),
    # a tokenizer warning, and a batch mismatch at dimension 0 in mse_loss
    ("tokenizer_warning_mse_batch_mismatch.log", "target-shape-differs"),
    # the token-type embeddings raised it, at dimension 0 (the batch), not the sequence
    ("bert_token_types_batch_mismatch.log", "shapes-differ-in-op"),
])
def test_position_evidence_is_tied_to_the_failure_or_ranks_nothing(name, first_cause):
    result = explain((CORPUS / name).read_text(encoding="utf-8"))
    assert result.causes[0].id == first_cause
    positions = cause(result, "sequence-longer-than-positions")
    assert positions.likelihood == "possible" and positions.support == ()
    assert not any("token position" in e.text for e in result.evidence)
    if name.startswith("bert_token_types"):
        (raised,) = [e.text for e in result.evidence if e.key == "position-frames"]
        assert raised == ("line 10: the error was raised in the model's position or token-type embeddings "
                          "(embeddings = inputs_embeds + token_type_embeddings)")
    if name.startswith("tokenizer_warning"):
        assert positions.noted == ()  # the warning's 1034 and 512 are not the sizes that failed


def test_a_loss_between_differently_shaped_output_and_target_ranks_the_target_shape_first():
    log = ("/home/user/reg/train.py:40: UserWarning: Using a target size (torch.Size([16])) that is different to "
           "the input size (torch.Size([16, 4])). This will likely lead to incorrect results due to broadcasting.\n"
           "  loss = F.mse_loss(pred, y)\n"
           "RuntimeError: The size of tensor a (4) must match the size of tensor b (16) at non-singleton dimension 1\n")
    assert explain(log).causes[0].id == "target-shape-differs"


def test_an_index_error_in_the_position_embeddings_ranks_the_positions_first():
    log = ('  File "/opt/conda/lib/python3.8/site-packages/transformers/modeling_bert.py", line 174, in forward\n'
           "    position_embeddings = self.position_embeddings(position_ids)\n"
           '  File "/opt/conda/lib/python3.8/site-packages/torch/nn/functional.py", line 1814, in embedding\n'
           "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n"
           "IndexError: index out of range in self\n")
    first = explain(log).causes[0]
    assert (first.id, first.likelihood) == ("position-or-type-id-past-table", "likely")
    assert first.support[0] == ("line 1: the error was raised in the model's position or token-type embeddings "
                                "(position_embeddings = self.position_embeddings(position_ids))")


# --- multinomial at inference -------------------------------------------------------------


def test_a_nan_in_generate_with_float16_is_the_precision_not_a_diverged_training():
    result = explain(read_log("cpu_generate_fp16_multinomial.log"))
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("half-precision-overflow", "likely")
    assert first.support == ("line 1: the model runs in float16 (torch.float16): values beyond 65504 overflow to "
                             "inf",)
    inference = ("line 15: the traceback runs transformers' generate (generation/utils.py); no training frame seen "
                 "(no backward pass, optimizer or training loop) and the log prints no training progress, loss or "
                 "gradient norm: inference, as far as the log shows")
    assert first.noted == (inference,)
    diverged = cause(result, "training-diverged")
    assert diverged.likelihood == "less likely" and diverged.against == (inference,)
    assert {"nonfinite-weights-loaded", "checkpoint-mismatch", "sampling-settings"} <= {c.id for c in result.causes}


def test_a_nan_in_generate_without_more_evidence_makes_no_cause_likely_and_training_less_likely():
    """The sign of inference tells none of the generation causes from the others: it offers them
    and rules divergence out, but no prior makes the first of them likely."""
    log = read_log("cpu_generate_fp16_multinomial.log").split("\n", 1)[1]  # without the dtype line
    result = explain(log)
    assert "likely" not in {c.likelihood for c in result.causes}
    assert {"half-precision-overflow", "nonfinite-weights-loaded", "checkpoint-mismatch",
            "sampling-settings"} <= {c.id for c in result.causes}
    assert all(c.noted[0].startswith("line 14: the traceback runs transformers' generate")
               for c in result.causes if c.id in ("half-precision-overflow", "sampling-settings"))
    assert cause(result, "training-diverged").likelihood == "less likely"
    assert not any("as they were loaded" in e.text for e in result.evidence)


def test_a_temperature_of_zero_in_the_failing_call_ranks_the_sampling_settings_first():
    log = read_log("cpu_generate_fp16_multinomial.log").split("\n", 1)[1].replace("temperature=0.8", "temperature=0")
    first = explain(log).causes[0]
    assert first.id == "sampling-settings"
    assert first.support == ("line 3: sampling with temperature=0: logits divided by a temperature of about zero "
                             "overflow",)


def test_nan_weights_the_tracer_found_at_inference_are_the_checkpoint():
    result = explain(read_log("cpu_labelguard_tracer_generate_nan_weights.log"))
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("nonfinite-weights-loaded", "likely")
    assert first.support[0].startswith("line 35: labelguard.torch found non-finite parameters in the module that "
                                       "produced the NaN (LG502): step 1: the first non-finite value was produced by "
                                       "module 'lm_head' (Linear)")
    diverged = cause(result, "training-diverged")
    assert diverged.likelihood == "less likely" and diverged.against[0].startswith("line 15: the traceback runs")


def test_generate_inside_a_training_script_is_no_sign_of_inference():
    log = read_log("cpu_generate_fp16_multinomial.log").split("\n", 1)[1].replace(
        "/home/user/chatbot/chat_cli.py", "/home/user/rlhf/rl_training.py")
    result = explain(log)
    assert "inference" not in [e.key for e in result.evidence]
    assert result.causes[0].id == "training-diverged"


@pytest.mark.parametrize(("name", "support"), [
    # run_epoch -> reinforce_step -> model.sample: a sampling loop of the model's own, inside training,
    # whose printed gradient norm grew 4,896x
    ("scst_multinomial_grad_norm_grew.log", "the gradient norm grew from 1.8 (line 1) to 8812.4 (line 3), 4,896x: "
     "the gradients grew by orders of magnitude before the error"),
    # a PPO loop hands the optimizer to the function that calls transformers' generate
    ("ppo_generate_optimizer_in_loop.log", None),
])
def test_generation_inside_training_is_no_inference_and_ranks_divergence_first(name, support):
    result = explain((CORPUS / name).read_text(encoding="utf-8"))
    assert "inference" not in [e.key for e in result.evidence]
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("training-diverged", "likely")
    assert first.support == ((support,) if support else ())
    assert not {"half-precision-overflow", "nonfinite-weights-loaded"} & {c.id for c in result.causes}


@pytest.mark.parametrize(("progress", "inference"), [
    ("Loading checkpoint shards: 100%|##########| 2/2 [00:05<00:00,  2.61s/it]\n", True),
    ("epoch 2 iter 300 | avg_reward 0.412\n", False),
    ("step 120 loss 0.93\n", False),
    ("{'grad_norm': 3.2, 'learning_rate': 1e-05}\n", False),
])
def test_inference_is_claimed_only_without_training_printed(progress, inference):
    log = progress + read_log("cpu_generate_fp16_multinomial.log").split("\n", 1)[1]
    assert ("inference" in [e.key for e in explain(log).evidence]) is inference


def test_a_sampling_function_of_the_users_own_is_no_sign_of_inference():
    """Only transformers' generation (or a pipeline) is: a captioning model's own sample() runs in
    training loops as often as at inference."""
    log = ('Traceback (most recent call last):\n  File "/home/u/cap/eval.py", line 9, in <module>\n'
           "    seqs = model.sample(feats)\n"
           '  File "/home/u/cap/models/att_model.py", line 262, in sample\n    it = torch.multinomial(probs, 1)\n'
           "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n")
    assert "inference" not in [e.key for e in explain(log).evidence]


def test_a_growing_gradient_norm_supports_divergence_and_keeps_a_steady_loss_from_being_read():
    text = "\n".join(f"step {n} loss {loss} grad_norm {norm}" for n, loss, norm in
                     [(1, 0.9, 1.2), (2, 0.8, 3.5), (3, 0.85, 950.0)])
    result = explain(text + "\nRuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n")
    keys = [e.key for e in result.evidence]
    assert "grad-norm-grew" in keys and "loss-stable" not in keys
    assert result.causes[0].id == "training-diverged" and result.causes[0].likelihood == "likely"


# --- a batch that would not stack -----------------------------------------------------------


STACK = ("  File \"/usr/lib/python3.10/site-packages/torch/utils/data/_utils/collate.py\", line 162, in "
         "default_collate\n    return torch.stack(batch, 0, out=out)\n"
         "RuntimeError: stack expects each tensor to be equal size, but got {first} at entry 0 and {other} at "
         "entry 3\n")


@pytest.mark.parametrize(("first", "other", "expected", "seen"), [
    ("[3, 224, 224]", "[1, 224, 224]", "channels-vary", "they differ only in the first dimension (3 against 1)"),
    ("[3, 288, 224]", "[3, 320, 256]", "images-vary-in-size",
     "they differ in the last two dimensions (288x224 against 320x256) and share a first dimension of 3"),
    ("[512, 512]", "[256, 256]", "image-mask-size-differs", "they differ in both dimensions (512x512 against 256x256)"),
    ("[128]", "[97]", "sequences-not-padded",
     "they differ only in the last dimension (128 against 97): a length that varies from sample to sample"),
    ("[80, 3001]", "[80, 2113]", "sequences-not-padded",
     "they differ only in the last dimension (3001 against 2113): a length that varies from sample to sample"),
    ("[1, 512, 512]", "[512, 512]", "mask-layout-varies",
     "tensors of 3 and 2 dimensions: one has an axis the other lacks"),
])
def test_the_shapes_that_would_not_stack_lead_the_causes(first, other, expected, seen):
    result = explain(STACK.format(first=first, other=other))
    assert (result.causes[0].id, result.causes[0].likelihood) == (expected, "likely")
    assert result.causes[0].support == (f"line 3: the stacked shapes are {first} and {other}: {seen}",)


@pytest.mark.parametrize("name", ["stack_log_mel_frames.log", "stack_waveforms.log"])
def test_stack_evidence_names_no_kind_of_data_from_the_rank(name):
    """Log-mel features of 3001 and 2113 frames are no label maps, and waveforms no token
    sequences: the evidence states the shapes; the cause names the kinds it can be."""
    result = explain((CORPUS / name).read_text(encoding="utf-8"))
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("sequences-not-padded", "likely")
    (seen,) = first.support
    for word in ("mask", "label", "token", "image", "not padded", "not resized"):
        assert word not in seen
    assert "audio" in first.title and "feature frames" in first.title and "pad_sequence" in first.fix


def test_every_stack_cause_names_lg213_and_guard_collate_not_only_the_audit():
    (entry,) = [e for e in ENTRIES if e.id == "stack-unequal-size"]
    for stack_cause in entry.causes:
        assert "labelguard.torch.guard_collate()" in stack_cause.confirm, stack_cause.id
        if stack_cause.id != "sequences-not-padded":  # token sequences: no audit check of shapes
            assert "LG213" in stack_cause.confirm and "LG213" in stack_cause.codes, stack_cause.id
    assert get("LG213").code == "LG213"
    assert "guard_collate" in " ".join(entry.cannot_know)


def test_the_collate_log_names_guard_collate_and_lg213_first():
    first = explain(read_log("cpu_stack_dataloader.log")).causes[0]
    assert first.id == "images-vary-in-size" and first.codes[0] == "LG213"
    assert "guard_collate()" in first.confirm


def test_generate_under_no_grad_of_an_old_torch_is_still_inference():
    """torch 1.x's no_grad decorator lives in torch/autograd/grad_mode.py: no sign of training."""
    result = explain((CORPUS / "llm_generate_fp16_belle.log").read_text(encoding="utf-8"))
    assert "autograd/grad_mode.py" in result.facts.torch_call.path
    assert [e.key for e in result.evidence] == ["inference", "half-precision"]
    assert cause(result, "training-diverged").likelihood == "less likely"
