"""Losses printed without ':' or '=', torchvision's degenerate-box assertion, NaN in a detector's
loss, and the causes a BCE input assertion lists: each on a log shaped as a user pastes it."""

from __future__ import annotations

import pytest

from labelguard.explain import explain
from labelguard.explain._render import render_explanation

BCE_TRACEBACK = """Traceback (most recent call last):
  File "/home/ana/seg/train.py", line 61, in <module>
    loss = criterion(pred, mask)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/loss.py", line 699, in forward
    return F.binary_cross_entropy(
  File "/usr/local/lib/python3.11/site-packages/torch/nn/functional.py", line 3569, in binary_cross_entropy
    return torch._C._nn.binary_cross_entropy(input, target, weight, reduction_enum)
/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator(): block: [4,0,0], thread: [32,0,0] Assertion `input_val >= zero && input_val <= one` failed.
/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator(): block: [4,0,0], thread: [33,0,0] Assertion `input_val >= zero && input_val <= one` failed.
RuntimeError: CUDA error: device-side assert triggered
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""

KERAS_STYLE = "".join(f"Epoch {epoch}/50 - 38s - loss {0.40 - epoch / 10000:.4f} - acc 0.8812\n"
                      for epoch in range(38, 42))
PLAIN = "step 1200 loss 0.41\nstep 1300 loss 0.39\nstep 1400 loss 0.40\n"
HF_TRAINER = "".join(f"{{'loss': {loss}, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': {epoch}}}\n"
                     for loss, epoch in ((0.4011, 2.9), (0.3987, 3.0), (0.3992, 3.1)))
LIGHTNING = "".join(f"Epoch {epoch}: 100%|##########| 250/250 [01:02<00:00,  4.01it/s, train_loss={loss}, v_num=0]\n"
                    for epoch, loss in ((39, 0.401), (40, 0.399), (41, 0.398)))


@pytest.mark.parametrize("training", [KERAS_STYLE, PLAIN, HF_TRAINER, LIGHTNING],
                         ids=["keras", "plain", "hf-trainer", "lightning"])
def test_a_stable_loss_without_colon_or_equals_keeps_no_sigmoid_from_ranking_first(training):
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


def test_the_keras_line_is_read_with_its_values_and_lines():
    result = explain(KERAS_STYLE + BCE_TRACEBACK)
    (stable,) = [e for e in result.evidence if e.key == "loss-stable"]
    assert stable.text.startswith("loss stayed finite between 0.3959 and 0.3962 over 4 printed values (lines 1-4)")


def test_the_bce_input_assertion_lists_causes_of_the_model_output_not_of_the_targets():
    result = explain(BCE_TRACEBACK)
    assert [m.entry for m in result.matches] == ["bce-input-out-of-range"]
    assert result.causes[0].title == "BCELoss is fed logits: the last layer has no sigmoid"
    codes = {code for cause in result.causes for code in cause.codes}
    assert codes <= {"LG501", "LG502", "LG508", "LG509", "LG204"} and "LG209" not in codes
    assert not any("target" in c.title or "mask" in c.title for c in result.causes)


DETECTION_TRACEBACK = """Epoch: [0]  [ 40/917]  eta: 0:06:12  lr: 0.004400  loss: 1.0214 (1.2051)  loss_classifier: 0.3120 (0.3922)  loss_box_reg: 0.3311 (0.3102)  time: 0.4101
Traceback (most recent call last):
  File "/home/ana/det/train.py", line 88, in <module>
    loss_dict = model(images, targets)
  File "/opt/conda/lib/python3.10/site-packages/torchvision/models/detection/generalized_rcnn.py", line 94, in forward
    torch._assert(
  File "/opt/conda/lib/python3.10/site-packages/torch/__init__.py", line 1404, in _assert
    assert condition, message
AssertionError: All bounding boxes should have positive height and width. Found invalid box [12.0, 30.0, 12.0, 55.0] for target at index 3.
"""


def test_torchvision_degenerate_box_assertion_names_the_boxes_and_lg301():
    result = explain(DETECTION_TRACEBACK)
    assert result.summary == "a detection target holds a box with no positive width or height"
    first = result.causes[0]
    assert first.likelihood == "likely" and first.codes == ("LG301",)
    assert first.title.startswith("degenerate or flipped boxes in the annotations (xmin >= xmax or ymin >= ymax)")
    assert first.fix.startswith("Fix or drop the boxes the audit names")
    assert dict(result.facts.values) == {"box": "[12.0, 30.0, 12.0, 55.0]", "target_index": "3"}
    text = render_explanation(result)
    assert "values:      box=[12.0, 30.0, 12.0, 55.0], target_index=3" in text
    assert "confirm: labelguard audit DATA names each degenerate box" in text


DETECTION_NAN = "".join(
    f"Epoch: [2]  [{step}/917]  eta: 0:06:12  lr: 0.005000  loss: {loss} (0.6402)  loss_classifier: 0.2120 (0.2222)  "
    f"loss_box_reg: 0.2311 (0.2402)  loss_objectness: 0.0400 (0.0450)  loss_rpn_box_reg: 0.0210 (0.0230)  time: 0.4102\n"
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
    assert not any("LG301" in c.codes for c in result.causes)
