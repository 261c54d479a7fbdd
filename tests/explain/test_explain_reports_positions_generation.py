"""What labelguard itself reported, BERT's position mismatch, a NaN at inference and a batch that
would not stack: each ranked by the evidence tied to the failure, on logs as they are printed.

* an error labelguard.torch raised names its check, the sample, file and values: that check is
  the first cause, worded from the check registry;
* a freeze that does nothing (LG507) printed at start-up is noted, not ranked above divergence,
  unless labelguard located the failure in the module it names;
* "The size of tensor a (600) must match the size of tensor b (512)" is a sequence longer than
  the model's positions only when the traceback passes through the position embeddings;
* multinomial's "probability tensor contains either inf, nan or element < 0" under generate()
  with no training in the traceback is no diverged training;
* "stack expects each tensor to be equal size" sends to LG213 and guard_collate, led by what
  the two shapes say.
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
    ("labelguard.torch.guard: LG003 sample 5 (lists/train.txt line 6): the file does not exist", "LG003"),
])
def test_each_error_labelguard_raises_puts_its_check_first(line, code):
    result = explain(f"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n{line}\n")
    first = result.causes[0]
    assert (first.id, first.codes, first.likelihood) == (f"labelguard-{code.lower()}", (code,), "likely")
    assert first.title.startswith(f"{code} {get(code).name}: {get(code).summary}")
    assert first.support[0].startswith(f"line 3: labelguard.torch raised {code}: ")
    assert result.evidence[0].to_dict() == {"key": "labelguard-error", "line": 3, "text": first.support[0],
                                            "code": code}


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
    assert first.support == (f"line 42: the traceback passes through the model's position embeddings ({code}): the "
                             "size or index that failed is a token position",)
    assert "labelguard.torch.guard(tokenized_dataset, model=model)" in first.confirm
    assert "--model-config" in first.confirm


def test_the_same_message_without_position_frames_is_a_generic_shape_mismatch():
    result = explain("RuntimeError: The size of tensor a (600) must match the size of tensor b (512) at "
                     "non-singleton dimension 1\n")
    assert [c.id for c in result.causes][:1] == ["shapes-differ-in-op"]
    positions = cause(result, "sequence-longer-than-positions")
    assert positions.likelihood == "possible" and positions.support == ()
    assert dict(result.facts.values) == {"size_a": "600", "size_b": "512", "dimension": "1"}


def test_a_tokenizer_warning_of_a_long_sequence_moves_the_positions_first():
    log = ("Token indices sequence length is longer than the specified maximum sequence length for this model "
           "(937 > 512). Running this sequence through the model will result in indexing errors\n"
           "RuntimeError: The size of tensor a (937) must match the size of tensor b (512) at non-singleton "
           "dimension 1\n")
    first = explain(log).causes[0]
    assert first.id == "sequence-longer-than-positions"
    assert first.support == ("line 1: the tokenizer made a sequence of 937 tokens, longer than the model's 512",)


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
    assert first.support[0].startswith("line 1: the traceback passes through the model's position embeddings")


# --- multinomial at inference -------------------------------------------------------------


def test_a_nan_in_generate_with_float16_is_the_precision_not_a_diverged_training():
    result = explain(read_log("cpu_generate_fp16_multinomial.log"))
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("half-precision-overflow", "likely")
    assert first.support == ("line 1: the model runs in float16 (torch.float16): values beyond 65504 overflow to "
                             "inf",)
    inference = ("line 15: the traceback runs generate (generation/utils.py) and no backward pass, optimizer step "
                 "or training loop, and the log prints no training loss: the failure came at inference, from "
                 "weights as they were loaded")
    assert first.noted == (inference,)
    diverged = cause(result, "training-diverged")
    assert diverged.likelihood == "less likely" and diverged.against == (inference,)
    assert {"nonfinite-weights-loaded", "checkpoint-mismatch", "sampling-settings"} <= {c.id for c in result.causes}


def test_a_nan_in_generate_without_more_evidence_is_never_training_first():
    log = read_log("cpu_generate_fp16_multinomial.log").split("\n", 1)[1]  # without the dtype line
    result = explain(log)
    assert result.causes[0].id == "half-precision-overflow"  # the most common cause at inference
    assert result.causes[0].support == ()
    assert cause(result, "training-diverged").likelihood == "less likely"


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


# --- a batch that would not stack -----------------------------------------------------------


STACK = ("  File \"/usr/lib/python3.10/site-packages/torch/utils/data/_utils/collate.py\", line 162, in "
         "default_collate\n    return torch.stack(batch, 0, out=out)\n"
         "RuntimeError: stack expects each tensor to be equal size, but got {first} at entry 0 and {other} at "
         "entry 3\n")


@pytest.mark.parametrize(("first", "other", "expected"), [
    ("[3, 224, 224]", "[1, 224, 224]", "channels-vary"),
    ("[3, 288, 224]", "[3, 320, 256]", "images-vary-in-size"),
    ("[512, 512]", "[256, 256]", "image-mask-size-differs"),
    ("[128]", "[97]", "sequences-not-padded"),
    ("[1, 512, 512]", "[512, 512]", "mask-layout-varies"),
])
def test_the_shapes_that_would_not_stack_lead_the_causes(first, other, expected):
    result = explain(STACK.format(first=first, other=other))
    assert (result.causes[0].id, result.causes[0].likelihood) == (expected, "likely")
    assert result.causes[0].support[0].startswith(f"line 3: the stacked shapes are {first} and {other}: ")


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
