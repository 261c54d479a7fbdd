"""guard() on nested (jagged) tensors, strided and ``torch.jagged`` layouts: no array holds one
whole, so each component is checked by the same rules and named in the error; a bad one is
skipped under on_error="skip" like any bad sample, inside DataLoader workers too."""

import math

import pytest

torch = pytest.importorskip("torch")

from labelguard import LabelError  # noqa: E402
from labelguard.torch import guard  # noqa: E402
from torch_datasets import drain_loader  # noqa: E402
from torch.utils.data import DataLoader, IterableDataset  # noqa: E402

# The strided layout of nested tensors is a prototype torch warns about on every construction.
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")

LAYOUTS = [pytest.param(torch.strided, id="strided"), pytest.param(torch.jagged, id="jagged")]
WORKERS = [pytest.param(0, id="main-process"), pytest.param(2, id="two-workers")]
IMAGE = torch.zeros(3)


def nested(*components, layout):
    return torch.nested.nested_tensor([torch.tensor(c) for c in components], layout=layout)


def samples_with_bad_ids(layout):
    """Five (input, nested class ids) samples; sample 3's second component holds id 5 (num_classes=3)."""
    samples = [(IMAGE, nested([0, 1], [2, 1, 0], layout=layout)) for _ in range(5)]
    samples[3] = (IMAGE, nested([0, 1], [2, 5, 0], layout=layout))
    return samples


def loader(dataset, workers):
    return DataLoader(dataset, batch_size=None, num_workers=workers)


@pytest.mark.code("LG102", "fail")
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_bad_component_is_an_error_naming_the_sample_and_the_component(layout, workers):
    with pytest.raises(LabelError) as caught:
        drain_loader(loader(guard(samples_with_bad_ids(layout), num_classes=3), workers))
    error = caught.value
    assert (error.code, error.index, error.values) == ("LG102", 3, [5])
    assert str(error).startswith("LG102 sample 3: nested target component 1 (of 2, counted from 0): "
                                 "class id 5 is >= num_classes=3: ids must be 0..2 (position 2)"), str(error)
    if workers:
        assert "DataLoader worker process" in error.worker_traceback


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_on_error_skip_skips_the_sample_and_the_good_ones_flow(layout, workers):
    dataset = guard(samples_with_bad_ids(layout), num_classes=3, on_error="skip")
    targets = [target for _, target in drain_loader(loader(dataset, workers))]
    assert len(targets) == 5  # sample 3 replaced by sample 4, whole
    assert all(t.is_nested and [c.tolist() for c in t.unbind()] == [[0, 1], [2, 1, 0]] for t in targets)
    assert [(r.index, r.code, r.action) for r in dataset.records] == [(3, "LG102", "skipped")]


@pytest.mark.code("LG201", "fail")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mask_values_outside_the_classes_in_a_component_are_named(layout):
    masks = [[[0, 1, 2]] * 2, [[0, 9, 9]] * 4]  # two masks of different heights
    with pytest.raises(LabelError) as caught:
        drain_loader(loader(guard([(IMAGE, nested(*masks, layout=layout))], num_classes=3), 0))
    assert (caught.value.code, caught.value.values) == ("LG201", [9])
    assert str(caught.value).startswith("LG201 sample 0: nested target component 1 (of 2, counted from 0): "
                                        "label value 9 in 8 pixels is outside [0, 3)"), str(caught.value)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_iterable_dataset_skips_a_sample_with_a_bad_component(layout):
    class Stream(IterableDataset):
        def __iter__(self):
            yield from samples_with_bad_ids(layout)

    dataset = guard(Stream(), num_classes=3, on_error="skip")
    assert len(drain_loader(loader(dataset, 0))) == 4
    assert [(r.index, r.code) for r in dataset.records] == [(3, "LG102")]


@pytest.mark.code("LG509", "fail")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_in_a_component_of_a_nested_input_is_named(layout):
    image = nested([0.0, 1.0], [1.0, math.nan, 2.0], layout=layout)
    with pytest.raises(LabelError) as caught:
        drain_loader(loader(guard([(image, torch.tensor(1))], num_classes=3), 0))
    assert caught.value.code == "LG509"
    assert str(caught.value).startswith("LG509 sample 0: the input (element 0, nested component 1 (of 2, counted "
                                        "from 0), float32 (3,)) holds 1 NaN and 0 Inf of 3 values"), str(caught.value)


@pytest.mark.code("LG601", "fail")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_packed_token_ids_in_a_nested_tensor_are_checked_per_row(layout):
    pytest.importorskip("transformers")
    from nlp_builders import bert_config, build_model

    model = build_model(bert_config(100, num_labels=2))
    packed = {"input_ids": nested([2, 5, 3], [2, 130, 6, 3], layout=layout)}
    with pytest.raises(LabelError) as caught:
        drain_loader(loader(guard([packed], model=model), 0))
    assert (caught.value.code, caught.value.values) == ("LG601", [130])
    assert "row 1" in str(caught.value)
    legal = {"input_ids": nested([2, 5, 3], [2, 13, 6, 3], layout=layout)}
    assert guard([legal], model=model)[0] is legal
