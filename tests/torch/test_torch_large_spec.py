"""A spec of 100,000,000 classes costs the guard what the targets cost: the guard asks the
spec (an interval, never a set of its members) whatever num_classes says."""

import tracemalloc

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from builders import write_npz  # noqa: E402
from labelguard import LabelError, LabelSpec  # noqa: E402
from labelguard.torch import guard  # noqa: E402
from labelguard.torch._targets import tensor_target_ok  # noqa: E402
from torch_datasets import NpzStream, drain_loader  # noqa: E402

HUNDRED_MILLION = 100_000_000
PEAK_LIMIT = 64 * 1024 * 1024  # frozenset(range(100_000_000)) alone takes gigabytes


def npz_files(root, labels):
    return [write_npz(root / f"{i}.npz", image=np.zeros((1, 4, 4), np.float32), label=label)
            for i, label in enumerate(labels)]


@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG201", "pass")
def test_a_hundred_million_classes_guard_in_small_memory(tmp_path):
    legal = np.full((4, 4), HUNDRED_MILLION - 1, np.int64)
    legal[0, 0] = 0
    past = np.zeros((4, 4), np.int64)
    past[1, 1] = HUNDRED_MILLION
    paths = npz_files(tmp_path, [legal, past])
    tracemalloc.start()
    try:
        batches = drain_loader(DataLoader(guard(NpzStream(paths[:1]), num_classes=HUNDRED_MILLION), batch_size=1))
        with pytest.raises(LabelError) as caught:
            drain_loader(DataLoader(guard(NpzStream(paths), num_classes=HUNDRED_MILLION), batch_size=1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(batches) == 1
    assert (caught.value.code, caught.value.values) == ("LG201", [HUNDRED_MILLION])
    assert caught.value.expected == "[0, 100000000) (num_classes=100000000, ignore_index=None)"
    assert peak < PEAK_LIMIT, f"peak {peak / 2**20:.0f} MiB"


def test_the_tensor_screen_cuts_the_spec_to_the_dtype():
    """torch compares a uint8 tensor with 100,000,000 as with a wrapped uint8 (all False), and
    an int8 one with 300 as with 44: the bounds are cut to the dtype before comparing."""
    spec = LabelSpec(num_classes=HUNDRED_MILLION)
    assert tensor_target_ok(torch.tensor([0, 7, 255], dtype=torch.uint8), spec)
    assert tensor_target_ok(torch.tensor([0, HUNDRED_MILLION - 1]), spec)
    assert not tensor_target_ok(torch.tensor([0, HUNDRED_MILLION]), spec)
    assert not tensor_target_ok(torch.tensor([-1, 3], dtype=torch.int8), spec)
    assert tensor_target_ok(torch.tensor([0.0, 1e7]), spec)
    assert not tensor_target_ok(torch.tensor([0.5]), spec)
    sparse = LabelSpec(values=tuple(range(300, 400)))
    assert not tensor_target_ok(torch.tensor([44, 100], dtype=torch.int8), sparse)
    assert tensor_target_ok(torch.tensor([300, 399], dtype=torch.int16), sparse)
    reduced = LabelSpec(num_classes=3, reduce_zero_label=True)
    assert tensor_target_ok(torch.tensor([0, 3, 255], dtype=torch.uint8), reduced)
    assert not tensor_target_ok(torch.tensor([4], dtype=torch.uint8), reduced)
