"""Losses printed with or without ':' or '=', what counts as a steady loss, fp16 loss-scaler
overflows, torchvision's degenerate-box assertion, NaN in a detector's loss, and the causes a
BCE input assertion lists: each on a log shaped as a user pastes it."""

from __future__ import annotations

import pytest
from explain_fixtures import read_log

from labelguard.explain import explain
from labelguard.explain._evidence import gather
from labelguard.explain._render import render_explanation

# Codes of a fault in a target value (id past the classes, NaN label, mask values): none of
# them can put a prediction outside [0, 1].
TARGET_CODES = {"LG201", "LG102", "LG204", "LG209"}

BCE_TRACEBACK = """Traceback (most recent call last):
  File "/home/user/seg/train.py", line 61, in <module>
    loss = criterion(pred, mask)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/loss.py", line 699, in forward
    return F.binary_cross_entropy(
  File "/usr/local/lib/python3.11/site-packages/torch/nn/functional.py", line 3569, in binary_cross_entropy
    return torch._C._nn.binary_cross_entropy(input, target, weight, reduction_enum)
""" + "".join(
    f"/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator(): block: [4,0,0], thread: [{thread},0,0] "
    "Assertion `input_val >= zero && input_val <= one` failed.\n" for thread in (32, 33)
) + """RuntimeError: CUDA error: device-side assert triggered
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""

KERAS_STYLE = "".join(f"Epoch {epoch}/50 - 38s - loss {0.40 - epoch / 10000:.4f} - acc 0.8812\n"
                      for epoch in range(38, 42))
PLAIN = "step 1200 loss 0.41\nstep 1300 loss 0.39\nstep 1400 loss 0.40\n"
HF_TRAINER = "".join(f"{{'loss': {loss}, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': {epoch}}}\n"
                     for loss, epoch in ((0.4011, 2.9), (0.3987, 3.0), (0.3992, 3.1)))
LIGHTNING = "".join(f"Epoch {epoch}: 100%|##########| 250/250 [01:02<00:00,  4.01it/s, train_loss={loss}, v_num=0]\n"
                    for epoch, loss in ((39, 0.401), (40, 0.399), (41, 0.398)))


def _stable_loss_keeps_no_sigmoid_from_ranking_first(training):
    result = explain(training + BCE_TRACEBACK)
    first = result.causes[0]
    assert first.likelihood == "likely" and first.title.startswith("a sample holds NaN/Inf")
    assert first.support[0].endswith("and no non-finite loss was printed: training ran steadily until one "
                                     "step failed")
    logits = next(c for c in result.causes if c.title.startswith("BCELoss is fed logits"))
    diverged = next(c for c in result.causes if c.title.startswith("training diverged"))
    assert logits.likelihood == diverged.likelihood == "less likely"
    assert "stayed finite between" in diverged.against[0]
    text = render_explanation(result)
    assert "1. [likely] a sample holds NaN/Inf" in text and "[less likely] BCELoss is fed logits" in text


@pytest.mark.parametrize("training", [KERAS_STYLE, PLAIN], ids=["keras", "plain"])
def test_a_stable_loss_without_colon_or_equals_keeps_no_sigmoid_from_ranking_first(training):
    _stable_loss_keeps_no_sigmoid_from_ranking_first(training)


@pytest.mark.parametrize("training", [HF_TRAINER, LIGHTNING], ids=["hf-trainer", "lightning"])
def test_a_stable_loss_with_colon_or_equals_keeps_no_sigmoid_from_ranking_first(training):
    _stable_loss_keeps_no_sigmoid_from_ranking_first(training)


def test_the_keras_line_is_read_with_its_values_and_lines():
    result = explain(KERAS_STYLE + BCE_TRACEBACK)
    (stable,) = [e for e in result.evidence if e.key == "loss-stable"]
    assert stable.text.startswith("loss stayed finite between 0.3959 and 0.3962 over 4 printed values (lines 1-4)")


def test_the_bce_input_assertion_lists_causes_of_the_model_output_not_of_the_targets():
    result = explain(BCE_TRACEBACK)
    assert [m.entry for m in result.matches] == ["bce-input-out-of-range"]
    assert result.causes[0].title == "BCELoss is fed logits: the last layer has no sigmoid"
    codes = {code for cause in result.causes for code in cause.codes}
    assert codes <= {"LG501", "LG502", "LG508", "LG509"} and not codes & TARGET_CODES
    assert not any("target" in c.title or "mask" in c.title for c in result.causes)
    assert not any("label that held NaN" in f"{c.title} {c.why}" for c in result.causes)
    (nan_input,) = [c for c in result.causes if "LG509" in c.codes]
    assert nan_input.title.startswith("a sample holds NaN/Inf in its input")


def test_a_nan_loss_still_names_both_halves_of_a_sample():
    result = explain("loss: nan\n")
    (nan_sample,) = [c for c in result.causes if c.title.startswith("a sample holds NaN/Inf")]
    assert nan_sample.codes == ("LG509", "LG204") and "label" in nan_sample.title


# torchvision prints the box after its transform resized the image: [12, 30, 12, 55] of a
# 640x480 image, scaled by 800/480.
PRINTED_BOX = "[19.987499237060547, 50.0, 19.987499237060547, 91.66666412353516]"


def test_torchvision_degenerate_box_assertion_names_the_boxes_and_lg301():
    result = explain(read_log("cpu_detection_degenerate_box.log"))
    assert result.summary == "a detection target holds a box with no positive width or height"
    first = result.causes[0]
    assert first.likelihood == "likely" and first.codes == ("LG301",)
    assert first.title.startswith("degenerate or flipped boxes in the annotations (xmin >= xmax or ymin >= ymax)")
    assert first.fix.startswith("Fix or drop the boxes the audit names")
    assert dict(result.facts.values) == {"box": PRINTED_BOX, "target_index": "3"}
    assert any("after the model's transform resized the image" in u for u in result.unknowns)
    text = render_explanation(result)
    assert f"values:      box={PRINTED_BOX}, target_index=3" in text
    assert "confirm: labelguard audit DATA names each degenerate box" in text


DETECTION_NAN = "".join(
    f"Epoch: [2]  [{step}/917]  eta: 0:06:12  lr: 0.005000  loss: {loss} (0.6402)  "
    "loss_classifier: 0.2120 (0.2222)  loss_box_reg: 0.2311 (0.2402)  loss_objectness: 0.0400 (0.0450)  "
    "loss_rpn_box_reg: 0.0210 (0.0230)  time: 0.4102\n"
    for step, loss in ((100, 0.6120), (120, 0.6350), (140, 0.6511))
) + ("Loss is nan, stopping training\n"
     "{'loss_classifier': tensor(0.2210, device='cuda:0'), 'loss_box_reg': tensor(nan, device='cuda:0'), "
     "'loss_objectness': tensor(0.0390, device='cuda:0'), 'loss_rpn_box_reg': tensor(nan, device='cuda:0')}\n")


def test_a_nan_in_a_detector_whose_loss_did_not_grow_lists_degenerate_boxes_not_divergence_first():
    result = explain(DETECTION_NAN)
    assert result.summary == "the loss became NaN/Inf during training"
    first = result.causes[0]
    assert first.likelihood == "likely" and first.codes == ("LG301",)
    assert first.support == ("line 1 prints a box loss (loss_box_reg): the run trains an object detector, "
                             "whose box targets come from the annotations",)
    diverged = next(c for c in result.causes if c.title.startswith("training diverged"))
    assert diverged.likelihood == "less likely"
    assert diverged.against[0].startswith("loss stayed between 0.612 and 0.6511 over 3 printed values")


def test_a_nan_outside_detection_offers_no_box_cause():
    result = explain("loss 0.9\nloss 0.8\nloss 0.85\nLoss is nan, stopping training\n")
    assert [m.entry for m in result.matches] == ["loss-nonfinite"]
    assert result.summary == "the loss became NaN/Inf during training"
    assert result.causes[0].title.startswith("a sample holds NaN/Inf")
    assert [e.key for e in result.evidence][:2] == ["loss-nonfinite", "loss-steady"]
    assert not any("LG301" in c.codes for c in result.causes)


# The PyTorch MNIST example's line, the loss growing 97x (under GROWTH) before its NaN.
WANDERING = "".join(
    f"Train Epoch: {epoch} [{step}/60000 ({step * 100 // 60000}%)]\tLoss: {loss}\n"
    for epoch, step, loss in ((1, 12800, "0.040000"), (1, 25600, "0.400000"), (1, 38400, "3.900000"),
                              (1, 51200, "nan"))
)


def test_a_loss_that_grew_97x_is_not_steady_and_does_not_weaken_divergence():
    result = explain(WANDERING)
    keys = [e.key for e in result.evidence]
    assert "loss-steady" not in keys and "loss-stable" not in keys and "loss-grew" not in keys
    diverged = next(c for c in result.causes if c.title.startswith("training diverged"))
    assert diverged.likelihood != "less likely" and diverged.against == ()
    assert "no growth the log shows" not in render_explanation(result)


def test_a_loss_that_wandered_97x_without_a_nan_is_not_stable():
    keys = [e.key for e in gather(WANDERING.replace("nan", "2.000000"))]
    assert "loss-stable" not in keys and "trained" in keys


# NVIDIA's apex ImageNet example with amp: steady losses, the loss scaler cutting its scale
# after overflows, then the loop's own check stops on the NaN.
AMP_TRAINING = "".join(
    f"Epoch: [3][{step}/1251]\tTime 0.212 (0.215)\tSpeed 1207.510 (1190.640)\tLoss {loss} (0.7012)\t"
    f"Prec@1 72.100 (71.900)\tPrec@5 90.200 (90.100)\n"
    for step, loss in ((300, "0.6931"), (400, "0.7104"), (500, "0.6987"))
) + (
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0\n"
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 8192.0\n"
    "Traceback (most recent call last):\n"
    '  File "/home/user/imagenet/main_amp.py", line 542, in <module>\n'
    "    main()\n"
    '  File "/home/user/imagenet/main_amp.py", line 318, in train\n'
    "    raise {error}\n"
)
AMP_ERRORS = {
    "detectron2-style": 'FloatingPointError(f"Loss became infinite or NaN at iteration={i}!")\n'
                        "FloatingPointError: Loss became infinite or NaN at iteration=5230!\n",
    "nan-loss": 'ValueError("NaN loss encountered")\nValueError: NaN loss encountered\n',
    "loss-is-nan-period": 'ValueError("Loss is NaN.")\nValueError: Loss is NaN.\n',
}


@pytest.mark.parametrize("error", sorted(AMP_ERRORS))
def test_an_amp_overflow_then_a_nan_loss_is_not_stable_and_ranks_fp16_overflow_first(error):
    head, tail = AMP_ERRORS[error].split("\n", 1)
    result = explain(AMP_TRAINING.format(error=head) + tail)
    assert result.summary == "the loss became NaN/Inf during training"
    keys = [e.key for e in result.evidence]
    assert "loss-stable" not in keys
    assert keys[:3] == ["loss-nonfinite", "loss-steady", "loss-scale-reduced"]
    scaler = next(e for e in result.evidence if e.key == "loss-scale-reduced")
    assert scaler.text == ("line 4: the fp16 loss scaler cut its scale after a gradient overflow during "
                           "training (3 times, to 8192.0 by line 6): fp16 overflowed")
    first = result.causes[0]
    assert first.title.startswith("training diverged") and first.likelihood == "likely"
    assert first.support == (scaler.text,)
    assert not result.causes[0].title.startswith("a sample holds NaN")


def test_a_loss_scale_cut_before_any_printed_loss_is_the_scaler_settling_not_evidence():
    log = ("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"
           + AMP_TRAINING.split("Gradient overflow")[0])
    assert "loss-scale-reduced" not in [e.key for e in gather(log)]


def test_a_nan_loss_message_without_values_before_it_makes_up_no_series():
    assert [e.key for e in gather("ValueError: NaN loss encountered\n")] == []


@pytest.mark.parametrize("line", [
    "Epoch 1/50 loss 1/50", "Epoch 3 loss 2 of 5", "warmup loss 10% done", "losses 12 skipped",
    "lossless 3", "loss_scale 65536.0", "loss scale 1024", "reducing loss scale to 32768.0", "Loss function 3",
])
def test_numbers_after_loss_that_are_not_its_value_are_not_read(line):
    assert gather(f"{line}\n{line}\n{line}\n") == ()


@pytest.mark.parametrize(("line", "value"), [
    ("Epoch 39/50 - 38s - loss 0.3987 - acc 0.8812", "0.3987"),
    ("step 1200 loss 0.41 lr 0.001", "0.41"),
    ("Epoch: [3][400/1251]\tLoss 0.6931 (0.7012)\tPrec@1 72.100", "0.6931"),
])
def test_a_loss_value_without_separator_is_read(line, value):
    (trained,) = gather(f"{line}\n{line}\n")
    assert trained.key == "trained" and trained.text.startswith("loss printed 2 finite values")
    three = gather(f"{line}\n{line}\n{line}\n")
    assert three[0].text.startswith(f"loss stayed finite between {value} and {value}")


def test_loss_is_nan_is_read_as_a_value():
    (nonfinite, from_start) = gather("Loss is nan, stopping training\n")
    assert nonfinite.text == "line 1: loss: nan, the first non-finite loss, its first printed value"
    assert from_start.key == "loss-nan-from-start"
