"""guard() on targets of every shape a dataset can return: sparse, quantized, half precision,
float8, complex, MKL-DNN, meta, None, dicts without a target, lists of annotation dicts (nested
tensors: test_torch_nested_targets.py). Each one is checked, or is a SampleError (LG505) naming
the sample; never an internal error, never passed unchecked."""

import pytest

torch = pytest.importorskip("torch")

from labelguard import LabelError  # noqa: E402
from labelguard.torch import guard  # noqa: E402
from torch_datasets import drain_loader  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

IMAGE = torch.zeros(1, 2, 2)
# Torch warns about targets datasets still return: quantized tensors are deprecated, sparse
# CSR is beta, sparse tensors are built without checking their indices, complex32 is experimental.
pytestmark = [
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor"),
    pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
]


def quantized(values):
    return torch.quantize_per_tensor(torch.tensor(values, dtype=torch.float32), 1.0, 0, torch.quint8)


def coco_objects(*category_ids):
    """Annotations as torchvision's CocoDetection returns them: COCO's own dicts."""
    return [{"id": i, "image_id": 1, "category_id": c, "bbox": [0.0, 0.0, 1.0, 1.0], "area": 1.0,
             "iscrowd": 0, "segmentation": [[0.0, 0.0, 1.0, 0.0, 1.0, 1.0]]}
            for i, c in enumerate(category_ids)]


def first_error(samples, workers=0, **kwargs):
    """The LabelError a real DataLoader over the guarded samples raises."""
    with pytest.raises(LabelError) as caught:
        drain_loader(DataLoader(guard(samples, **kwargs), batch_size=None, num_workers=workers))
    return caught.value


def good(ids):
    return (IMAGE, torch.tensor(ids))


# Targets are built in the test (a function each), where the warnings above are filtered.
@pytest.mark.parametrize("target, kwargs, code, message, values", [
    pytest.param(lambda: torch.tensor([[0, 1], [2, 9]]).to_sparse(), {}, "LG201",
                 "label value 9 in 1 pixel is outside [0, 3)", [9], id="sparse-coo"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 9]]).to_sparse_csr(), {}, "LG201",
                 "label value 9 in 1 pixel is outside [0, 3)", [9], id="sparse-csr"),
    pytest.param(lambda: torch.sparse_coo_tensor(torch.tensor([[0], [0]]), torch.tensor([1]), (1 << 13, 1 << 12)),
                 {}, "LG505", "a sparse target (torch.sparse_coo) of shape (8192, 4096): 33554432 elements, "
                 "too many to check as dense", None, id="sparse-too-large"),
    pytest.param(lambda: torch.sparse_coo_tensor(torch.tensor([[0, 5000000], [0, 1]]), torch.tensor([1, 9]), (2, 2)),
                 {}, "LG505", "a sparse target (torch.sparse_coo) of shape (2, 2) is malformed: size is "
                 "inconsistent with indices: for dim 0, size is 2 but found index 5000000", None,
                 id="sparse-coo-index-outside-its-shape"),
    pytest.param(lambda: torch.sparse_csr_tensor(torch.tensor([0, 1, 2]), torch.tensor([0, 7]), torch.tensor([1, 9]),
                                                 (2, 2)),
                 {}, "LG505", "a sparse target (torch.sparse_csr) of shape (2, 2) is malformed: "
                 "`0 <= col_indices < ncols` is not satisfied.", None, id="sparse-csr-index-outside-its-shape"),
    pytest.param(lambda: quantized([[0, 1], [2, 9]]), {}, "LG201", "label value 9 in 1 pixel is outside [0, 3)",
                 [9], id="quantized"),
    pytest.param(lambda: quantized([[0, 1], [2, 1]]), {"loss": "cross_entropy"}, "LG505",
                 "target dtype quint8 for cross_entropy: cross_entropy takes no quantized tensor",
                 ["quint8"], id="quantized-for-cross-entropy"),
    pytest.param(lambda: torch.zeros(2, 2, dtype=torch.bfloat16), {"loss": "cross_entropy"}, "LG505",
                 "target dtype bfloat16 for cross_entropy: cross_entropy reads float targets as class "
                 "probabilities", ["bfloat16"], id="bfloat16-for-cross-entropy"),
    pytest.param(lambda: torch.zeros(2, 2, dtype=torch.float16), {"loss": "cross_entropy"}, "LG505",
                 "target dtype float16 for cross_entropy", ["float16"], id="float16-for-cross-entropy"),
    pytest.param(lambda: torch.tensor([1.0, 0.5], dtype=torch.bfloat16), {}, "LG204",
                 "1 class id not whole (e.g. 0.5) in a bfloat16 target", [0.5], id="bfloat16-ids"),
    pytest.param(lambda: None, {}, "LG505", "the target is None: the dataset gave this sample no label", None,
                 id="none"),
    pytest.param(lambda: {"boxes": torch.zeros(1, 4)}, {}, "LG505",
                 "no target in a sample dict with keys boxes: expected one of label, labels", None,
                 id="detection-dict-without-labels"),
    pytest.param(lambda: coco_objects(1, 91), {"num_classes": 91}, "LG102",
                 "class id 91 is >= num_classes=91: ids must be 0..90 (position 2)", [91], id="coco-objects"),
    pytest.param(lambda: [*coco_objects(1), {"bbox": [0.0, 0.0, 1.0, 1.0]}], {}, "LG505",
                 "object 1 of 2 in the target has no class: a dict with keys bbox, none of category_id",
                 None, id="coco-object-without-class"),
    pytest.param(lambda: torch.empty(2, 2, dtype=torch.long, device="meta"), {}, "LG505",
                 "a target on the meta device (int64 (2, 2)) holds no values to check or to train on", None,
                 id="meta"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 1]], dtype=torch.complex64).to(torch.complex32), {}, "LG505",
                 "target dtype complex32 holds no real numbers", ["complex32"], id="complex32"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 1]], dtype=torch.complex64).conj(), {}, "LG505",
                 "target dtype complex64 holds no real numbers", ["complex64"], id="complex-conjugate-view"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 9]], dtype=torch.float32).to(torch.float8_e4m3fn), {}, "LG201",
                 "label value 9 in 1 pixel is outside [0, 3)", [9], id="float8"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 9]], dtype=torch.float32).to_mkldnn(), {}, "LG201",
                 "label value 9 in 1 pixel is outside [0, 3)", [9], id="mkldnn"),
])
@pytest.mark.code("LG505", "fail")
def test_each_kind_of_target_is_checked_or_named(target, kwargs, code, message, values):
    kwargs = {"num_classes": 3, **kwargs}
    error = first_error([good([0, 1]), (IMAGE, target())], **kwargs)
    assert (error.code, error.index, error.values) == (code, 1, values)
    assert str(error).startswith(f"{code} sample 1: {message}"), str(error)


@pytest.mark.parametrize("target", [
    pytest.param(lambda: torch.tensor([[0, 1], [2, 0]]).to_sparse(), id="sparse"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 0]]).to_sparse_bsc((1, 1)), id="sparse-bsc"),
    pytest.param(lambda: quantized([[0, 1], [2, 0]]), id="quantized"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 0]], dtype=torch.bfloat16), id="bfloat16"),
    pytest.param(lambda: coco_objects(0, 2, 2), id="coco-objects"),
    pytest.param(lambda: [], id="no-objects"),
])
@pytest.mark.code("LG505", "pass")
def test_legal_targets_of_each_kind_pass(target):
    batches = drain_loader(DataLoader(guard([(IMAGE, target())], num_classes=3), batch_size=None))
    assert len(batches) == 1


def test_a_sample_without_its_target_key_is_named_and_skippable(tmp_path):
    samples = [{"x": IMAGE, "cls": torch.tensor(c)} for c in (0, 1)] + [{"x": IMAGE}]
    error = first_error(samples, num_classes=3, target="cls")
    assert (error.code, error.index) == ("LG505", 2)
    assert str(error).startswith("LG505 sample 2: no target at 'cls' in a sample of type dict with keys x")

    error = first_error([{"image": IMAGE, "meta": 1}], num_classes=3)
    assert str(error).startswith("LG505 sample 0: no target in a sample dict with keys image, meta: expected "
                                 "one of label, labels, mask, target, targets, y, segmentation, cls; pass "
                                 "target='<key>' or a function")

    skipping = guard(samples, num_classes=3, target="cls", on_error="skip")
    assert len(drain_loader(DataLoader(skipping, batch_size=None))) == 3  # the last replaced by sample 0
    assert [(r.index, r.code, r.action) for r in skipping.records] == [(2, "LG505", "skipped")]


@pytest.mark.parametrize("target", [
    pytest.param(lambda: None, id="none"),
    pytest.param(lambda: torch.tensor([[0, 1], [2, 9]]).to_sparse(), id="sparse"),
    pytest.param(lambda: {"boxes": torch.zeros(1, 4)}, id="dict-without-target"),
])
def test_the_error_about_a_target_survives_dataloader_workers(target):
    samples = [good([0, 1])] * 5 + [(IMAGE, target())] + [good([0, 1])] * 2
    error = first_error(samples, workers=2, num_classes=3)
    assert error.index == 5 and error.code in ("LG201", "LG505")
    assert "DataLoader worker process" in error.worker_traceback
