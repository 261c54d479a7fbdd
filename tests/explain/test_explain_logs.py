"""Every knowledge-base entry against real logs, written as they are printed.

The ``cuda_*`` logs reproduce the formats users reported across torch releases (THC/THCUNN
in 1.x, ATen ``Loss.cu``/``NLLLoss2d.cu``/``Indexing.cu`` in 1.8-2.x, ``IndexKernelUtils.cu``
vectorized gather and ``torch.AcceleratorError`` in 2.8+), with Windows builds (no kernel
name, backslash paths), Chinese text around them, ``[rank0]:`` and ``grep -n`` prefixes and a
Markdown page that ate the backticks. ``cuda_bernoulli_from_source`` and
``cuda_multi_margin_from_source`` are built from the kernels' assertion text (no public log
of them was found). The ``cpu_*`` logs were printed by torch 2.13 on the CPU, paths
neutralised; ``cpu_detection_degenerate_box`` by torchvision 0.28's untrained
``fasterrcnn_mobilenet_v3_large_fpn`` in train mode, fed a 640x480 image whose box is
[12, 30, 12, 55] (the message prints it resized), with torchvision's compiled ops, built for
CUDA, declared by their schemas only: the target check runs before any of them.
``cuda_bce_gan_nan_after_epochs``, ``cpu_file_not_found_list_space``, ``cpu_unable_to_load_npz``
and ``train_swin_unet_loss_nan_from_start`` rebuild the logs of the seed write-ups 002 (a GAN's
losses growing, then NaN, then BCE's assert) and 003 (a list line with a trailing space;
Swin-Unet's trainer printing ``loss : nan`` from the first iteration).

``cpu_labelguard_*`` were printed by labelguard.torch itself on torch 2.13 (CPU), paths
neutralised: ``guard`` raising LG201 out of a DataLoader worker; ``trace_nonfinite`` raising
LG502 in a training loop whose activations exploded (the setup's LG507 printed at start-up and
named in its hint), in one whose MeanShift, frozen by an attribute that freezes nothing, was
where they exploded, and in ``generate`` over a checkpoint holding a NaN weight; ``watch``
logging LG508 then LG502, through the standard handler and through Rich's (its records wrapped
at 80 columns); ``guard`` noting LG003 on the FileNotFoundError a dataset raised (a list name
with a trailing space); ``preflight`` raising LG507. ``cpu_bert_positions_*`` were printed by
transformers 5.25's BERT fed 600 tokens with 512 positions (with and without token_type_ids),
``cpu_generate_fp16_multinomial`` by its ``generate`` sampling from a float16 GPT-2 whose logits
overflowed.
"""

from __future__ import annotations

import json

import pytest
from explain_fixtures import LOGS, read_log

from labelguard.explain import explain
from labelguard.explain._knowledge import ENTRIES

# log -> (top entry, facts expected from it)
CASES = {
    "cuda_nll2d_torch113.log": ("nll-target-out-of-range", {
        "file": "NLLLoss2d.cu", "line": 103, "function": "nll_loss2d_forward_kernel",
        "condition": "t >= 0 && t < n_classes", "count": 5, "blocks": 2,
        "first_block": "[5,0,0]", "first_thread": "[996,0,0]",
        "user": ("/home/user/Pytorch-UNet/train.py", 118), "torch_call": "cross_entropy",
    }),
    "cuda_nll_reduce_accelerator_error.log": ("nll-target-out-of-range", {
        "file": "Loss.cu", "line": 245, "function": "nll_loss_forward_reduce_cuda_kernel_2d",
        "error_type": "torch.AcceleratorError", "torch_version": "2.9.1+cu128",
        "user": ("/workspace/classifier/train.py", 81), "era": "torch 2.8 or newer",
    }),
    "cuda_nll2d_windows_chinese.log": ("nll-target-out-of-range", {
        "file": "NLLLoss2d.cu", "line": 103, "function": None, "windows": True,
        "path_prefix": "C:\\actions-runner\\_work\\pytorch",
        "user": ("D:\\深度学习\\语义分割\\train.py", 88), "torch_call": "cross_entropy",
    }),
    "cuda_nll_spatial_thcunn_old.log": ("nll-target-out-of-range", {
        "file": "SpatialClassNLLCriterion.cu", "line": 104,
        "function": "void cunn_SpatialClassNLLCriterion_updateOutput_kernel(T *, T *, T *, "
        "long *, T *, int, int, int, int, int, long) [with T = float, AccumT = float]",
        "user": ("/home/user/seg/utils/loss.py", 29), "torch_call": "nll_loss",
        "era": "an old torch 1.x",
    }),
    "cuda_nll_no_reduce_cur_target.log": ("nll-target-out-of-range", {
        "file": "Loss.cu", "line": 194, "function": "nll_loss_forward_no_reduce_cuda_kernel",
        "condition": "cur_target >= 0 && cur_target < n_classes",
    }),
    "cuda_nll_ddp_rank_prefix.log": ("nll-target-out-of-range", {
        "file": "Loss.cu", "line": 250, "error_type": "RuntimeError",
        "user": ("/data/finetune/swift/cli/sft.py", 7),
    }),
    "cuda_nll_old_cpu_th_windows.log": ("nll-target-out-of-range", {
        "file": "ClassNLLCriterion.c", "line": 93,
        "condition": "cur_target >= 0 && cur_target < n_classes",
        "user": ("D:\\SQLNet\\sqlnet\\model\\seq2sql.py", 140),
    }),
    "cpu_cross_entropy_target.log": ("nll-target-out-of-range", {
        "error_type": "IndexError", "values": {"target": "3"}, "torch_version": "2.13.0+cpu",
        "user": ("/home/user/project/train.py", 6), "torch_call": "cross_entropy",
    }),
    "cuda_bce_input_torch21.log": ("bce-input-out-of-range", {
        "file": "Loss.cu", "line": 94, "function": "operator()",
        "condition": "input_val >= zero && input_val <= one",
        "user": ("/home/user/vqa/trainer.py", 148), "torch_call": "binary_cross_entropy",
    }),
    "cuda_bce_blog_chinese_no_backticks.log": ("bce-input-out-of-range", {
        "file": "Loss.cu", "line": 115, "first_block": "[19,0,0]",
        "condition": "input_val >= zero && input_val <= one",
    }),
    "cuda_bce_thcunn_old.log": ("bce-input-out-of-range", {
        "file": "BCECriterion.cu", "line": 57, "condition": "*input >= 0. && *input <= 1.",
    }),
    "cpu_bce_input.log": ("bce-input-out-of-range", {"error_type": "RuntimeError"}),
    "cpu_detection_degenerate_box.log": ("detection-degenerate-box", {
        "error_type": "AssertionError", "user": ("/home/user/project/train.py", 29),
        "values": {"box": "[19.987499237060547, 50.0, 19.987499237060547, 91.66666412353516]",
                   "target_index": "3"},
    }),
    "cuda_bce_target_torch24.log": ("bce-target-out-of-range", {
        "file": "Loss.cu", "line": 95, "condition": "target_val >= zero && target_val <= one",
    }),
    "cpu_bce_target.log": ("bce-target-out-of-range", {"torch_call": "binary_cross_entropy"}),
    "cuda_embedding_index_select_torch20.log": ("index-select-out-of-range", {
        "file": "Indexing.cu", "line": 1146, "function": "indexSelectLargeIndex",
        "torch_version": "2.0.1", "torch_call": "embedding",
        "user": ("/home/user/nlp/run_translation.py", 571),
    }),
    "cuda_embedding_windows.log": ("index-select-out-of-range", {
        "file": "Indexing.cu", "line": 1308, "function": None, "windows": True,
        "user": ("E:\\ComfyUI\\comfy\\sd1_clip.py", 202),
    }),
    "cuda_index_select_thc_old.log": ("index-select-out-of-range", {
        "file": "THCTensorIndex.cu", "line": 325, "era": "an old torch 1.x",
    }),
    "cuda_vectorized_gather_grep_prefix.log": ("index-select-out-of-range", {
        "file": "IndexKernelUtils.cu", "line": 16, "function": "vectorized_gather_kernel",
        "path_prefix": "/pytorch/aten", "count": 3, "error_type": "torch.AcceleratorError",
    }),
    "cpu_embedding.log": ("index-select-out-of-range", {"torch_call": "embedding"}),
    "cuda_indexing_torch21.log": ("indexing-out-of-bounds", {
        "file": "IndexKernel.cu", "line": 92,
        "condition": '-sizes[i] <= index && index < sizes[i] && "index out of bounds"',
        "user": ("/srv/app/vision/inference.py", 77),
    }),
    "cuda_indexing_windows_old.log": ("indexing-out-of-bounds", {
        "file": "IndexKernel.cu", "line": 91,
        "condition": 'index >= -sizes[i] && index < sizes[i] && "index out of bounds"',
    }),
    "cpu_indexing.log": ("indexing-out-of-bounds", {
        "values": {"index": "3", "dim": "0", "size": "3"},
    }),
    "cuda_scatter_one_hot_dice.log": ("scatter-gather-out-of-bounds", {
        "file": "ScatterGatherKernel.cu", "line": 365, "count": 3, "blocks": 3,
        "user": ("/home/user/seg/losses.py", 22),
    }),
    "cuda_scatter_thc_old_no_path.log": ("scatter-gather-out-of-bounds", {
        "file": None, "condition": "indexValue >= 0 && indexValue < tensor.sizes[dim]",
    }),
    "cuda_scatter_interleaved.log": ("scatter-gather-out-of-bounds", {}),
    "cpu_one_hot.log": ("scatter-gather-out-of-bounds", {
        "user": ("/home/user/project/train.py", 3),
    }),
    "cpu_gather.log": ("scatter-gather-out-of-bounds", {
        "values": {"index": "4", "dim": "1", "size": "3"},
    }),
    "cuda_index_add.log": ("index-add-out-of-bounds", {
        "file": "Indexing.cu", "line": 385, "function": "indexAddLargeIndex",
    }),
    "cpu_index_copy.log": ("index-add-out-of-bounds", {"values": {"index": "9", "size": "5"}}),
    "cuda_multinomial_binary_search.log": ("multinomial-invalid-probabilities", {
        "file": "MultinomialKernel.cu", "line": 112, "function": "binarySearchForMultinomial",
        "condition": "cumdist[size - 1] > static_cast<scalar_t>(0)",
    }),
    "cuda_multinomial_once.log": ("multinomial-invalid-probabilities", {
        "function": "sampleMultinomialOnce", "condition": "val >= zero",
    }),
    "cuda_multinomial_thc_old.log": ("multinomial-invalid-probabilities", {
        "file": "THCTensorRandom.cuh", "condition": "THCNumerics<T>::ge(val, zero)",
    }),
    "cpu_multinomial.log": ("multinomial-invalid-probabilities", {}),
    "cuda_bernoulli_from_source.log": ("bernoulli-probability-out-of-range", {
        "file": "DistributionTemplates.h", "condition": "0 <= p4 && p4 <= 1",
    }),
    "cpu_bernoulli.log": ("bernoulli-probability-out-of-range", {}),
    "cuda_multi_margin_from_source.log": ("multi-margin-target-out-of-range", {
        "file": "MultiMarginLoss.cu", "function": "MultiMarginLoss_forward_kernel",
        "torch_call": "multi_margin_loss",
    }),
    "cpu_multi_margin.log": ("multi-margin-target-out-of-range", {}),
    "cuda_ctc_illegal_memory.log": ("ctc-target-out-of-range", {
        "error_type": "RuntimeError", "torch_call": "ctc_loss", "user": ("./main.py", 274),
    }),
    "cpu_ctc_lengths.log": ("ctc-target-out-of-range", {
        "values": {"max_input_length": "50", "input_length": "60"},
    }),
    "cpu_stack_dataloader.log": ("stack-unequal-size", {
        "values": {"first_shape": "[3, 224, 224]", "other_shape": "[3, 448, 448]",
                   "other_entry": "3"},
    }),
    "cuda_illegal_memory_extension.log": ("illegal-memory-access", {
        "user": ("/home/user/det/models/dcn/deform_conv.py", 88),
    }),
    "cuda_generic_bce_frame.log": ("bce-input-out-of-range", {
        "torch_call": "binary_cross_entropy", "user": ("/home/user/edge/train.py", 118),
    }),
    "cuda_error_launch_failure.log": ("cuda-error", {
        "error_type": "torch.AcceleratorError",
        "values": {"cuda_error": "unspecified launch failure"},
        "user": ("/home/user/decode/generate.py", 212), "torch_call": "replay",
    }),
    "cuda_bce_gan_nan_after_epochs.log": ("bce-input-out-of-range", {
        "file": "Loss.cu", "line": 102, "condition": "input_val >= zero && input_val <= one",
        "count": 4, "user": ("/home/user/sr/train.py", 211), "torch_call": "binary_cross_entropy",
    }),
    "cpu_file_not_found_list_space.log": ("data-file-not-loaded", {
        "error_type": "FileNotFoundError",
        "values": {"missing_path": "'../data/Synapse/train_npz/case0005_slice012 .npz'"},
        "user": ("/home/user/Swin-Unet/datasets/dataset_synapse.py", 79),
    }),
    "cpu_unable_to_load_npz.log": ("data-file-not-loaded", {
        "error_type": "RuntimeError", "user": ("/home/user/medseg/data.py", 30),
    }),
    "train_swin_unet_loss_nan_from_start.log": ("loss-nonfinite", {}),
    "cuda_generic_notebook_accelerator.log": ("device-side-assert", {
        "error_type": "AcceleratorError", "user": ("Cell In[8]", 2),
        "user_code": "correct = torch.eq(y_true, y_pred).sum().item()",
    }),
}

CASES.update({
    "cpu_labelguard_sample_error_workers.log": ("labelguard-finding", {
        "error_type": "labelguard.torch.SampleError", "values": {"labelguard_code": "LG201"},
        "user": ("/home/user/project/train_synapse.py", 27),
    }),
    "cpu_labelguard_watch_diverged_freeze_noted.log": ("labelguard-finding", {
        "error_type": None, "values": {"labelguard_code": "LG508"},
    }),
    "cpu_labelguard_tracer_exploded_freeze_noted.log": ("labelguard-finding", {
        "error_type": "labelguard.torch.NonFiniteError", "values": {"labelguard_code": "LG502"},
        "user": ("/home/user/project/train_rcan.py", 45),
    }),
    "cpu_labelguard_tracer_frozen_module_exploded.log": ("labelguard-finding", {
        "error_type": "labelguard.torch.NonFiniteError", "user": ("/home/user/project/train_meanshift.py", 29),
    }),
    "cpu_labelguard_tracer_generate_nan_weights.log": ("labelguard-finding", {
        "error_type": "labelguard.torch.NonFiniteError", "user": ("/home/user/summarize/run_summaries.py", 13),
    }),
    "cpu_labelguard_guard_note_file_not_found.log": ("labelguard-finding", {
        "error_type": "FileNotFoundError",
        "error_message": "[Errno 2] No such file or directory: 'data/cases/case0002.npz '",
        "values": {"labelguard_code": "LG003"}, "user": ("/home/user/kidney/train_cases.py", 7),
    }),
    "cpu_labelguard_preflight_freeze_raised.log": ("labelguard-finding", {
        "error_type": "labelguard.torch.PreflightError", "values": {"labelguard_code": "LG507"},
        "user": ("/home/user/rcan/preflight_rcan.py", 16),
    }),
    "cpu_labelguard_watch_rich_handler.log": ("labelguard-finding", {
        "error_type": "RuntimeError", "values": {"labelguard_code": "LG508"},
        "user": ("/home/user/sr/train_sr.py", 23),
    }),
    "cpu_bert_positions_add.log": ("tensor-size-mismatch", {
        "error_type": "RuntimeError", "values": {"size_a": "600", "size_b": "512", "dimension": "1"},
        "user": ("/home/user/reviews/predict.py", 14),
    }),
    "cpu_bert_positions_expand.log": ("tensor-size-mismatch", {
        "values": {"expanded_size": "600", "existing_size": "512", "dimension": "1"},
    }),
    "cpu_generate_fp16_multinomial.log": ("multinomial-invalid-probabilities", {
        "error_type": "RuntimeError", "user": ("/home/user/chatbot/chat_cli.py", 12),
    }),
})

UNKNOWN = ["unknown_value_error.log", "unknown_cuda_oom.log"]


def test_every_log_in_the_folder_is_checked():
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted([*CASES, *UNKNOWN])


def test_every_entry_has_a_real_log():
    covered = {entry for entry, _ in CASES.values()}
    assert sorted(e.id for e in ENTRIES if e.id not in covered) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_is_matched_to_its_entry(name):
    entry, _ = CASES[name]
    result = explain(read_log(name))
    assert result.recognised
    assert result.matches[0].entry == entry, [m.to_dict() for m in result.matches]
    assert result.causes, "a recognised log always comes with causes"
    json.dumps(result.to_dict(), ensure_ascii=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_facts_are_extracted_as_printed(name):
    _, expected = CASES[name]
    facts = explain(read_log(name)).facts
    site = facts.assertions[0] if facts.assertions else None
    for key, value in expected.items():
        if key in ("file", "line", "function", "condition", "count", "blocks",
                   "first_block", "first_thread"):
            assert site is not None, f"no assertion site parsed, expected {key}={value!r}"
            assert getattr(site, key) == value, key
        elif key == "path_prefix":
            assert site.path.startswith(value)
        elif key == "user":
            assert (facts.user_frame.path, facts.user_frame.line) == value
        elif key == "user_code":
            assert facts.user_frame.code == value
        elif key == "torch_call":
            assert facts.torch_call.function == value
        elif key == "era":
            assert any(hint.startswith(value) for hint in facts.era), facts.era
        elif key == "values":
            assert {k: facts.values.get(k) for k in value} == value
        else:
            assert getattr(facts, key) == value, key


@pytest.mark.parametrize("name", UNKNOWN)
def test_unknown_log_is_not_recognised_and_gets_the_generic_steps(name):
    result = explain(read_log(name))
    assert not result.recognised
    assert result.summary.startswith("Not recognised")
    assert result.matches == () and result.causes == ()
    assert "what failed" in result.unknowns[0]
    steps = " ".join(result.steps)
    for step in ("CUDA_LAUNCH_BLOCKING=1", "on the CPU", "labelguard audit", "torch.guard"):
        assert step in steps


def test_a_specific_assertion_outranks_the_generic_device_side_assert():
    result = explain(read_log("cuda_nll2d_torch113.log"))
    assert [m.entry for m in result.matches] == ["nll-target-out-of-range"]
    assert result.causes[0].likelihood == "likely"


def test_segmentation_kernel_puts_mask_causes_first():
    causes = explain(read_log("cuda_nll2d_torch113.log")).causes
    assert "ignore" in causes[0].title and "LG201" in causes[0].codes
    assert "0/255" in causes[1].title


def test_classification_kernel_puts_the_class_count_first():
    causes = explain(read_log("cuda_nll_reduce_accelerator_error.log")).causes
    assert causes[0].codes[0] == "LG102"


def test_one_hot_in_the_traceback_puts_the_one_hot_cause_first():
    causes = explain(read_log("cuda_scatter_one_hot_dice.log")).causes
    assert causes[0].title.startswith("one_hot(mask, num_classes)")


def test_bare_device_side_assert_claims_no_likely_cause():
    result = explain(read_log("cuda_generic_notebook_accelerator.log"))
    assert {c.likelihood for c in result.causes} == {"possible"}
    assert any("Assertion ... failed" in item for item in result.unknowns)


def test_device_side_assert_with_a_loss_frame_ranks_that_loss_first_but_only_as_possible():
    result = explain(read_log("cuda_generic_bce_frame.log"))
    assert result.matches[0].entry == "bce-input-out-of-range"
    assert result.matches[0].evidence == ("frame: binary_cross_entropy",)
    assert "device-side assert" in result.summary and "binary_cross_entropy" in result.summary
    assert {c.likelihood for c in result.causes} == {"possible"}


def test_ctc_illegal_memory_access_also_lists_the_generic_illegal_access():
    entries = [m.entry for m in explain(read_log("cuda_ctc_illegal_memory.log")).matches]
    assert entries == ["ctc-target-out-of-range", "illegal-memory-access"]
