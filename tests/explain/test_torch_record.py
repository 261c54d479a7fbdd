"""labelguard.torch.record on real DataLoaders: the indices recorded are the batches received."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, Dataset, IterableDataset, Subset  # noqa: E402

from labelguard.explain import explain, read_record  # noqa: E402
from labelguard.torch import record  # noqa: E402


class Numbered(Dataset):
    """Sample i is the tensor [i]; its file is files[i]."""

    def __init__(self, size: int = 40) -> None:
        self.files = [f"data/case_{i:03d}.png" for i in range(size)]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int):
        return torch.tensor([index])


class Stream(IterableDataset):
    def __iter__(self):
        return iter(torch.arange(6).unsqueeze(1))


@pytest.mark.parametrize("workers, persistent", [(0, False), (2, False), (2, True)])
def test_recorded_indices_are_the_batches_the_loop_receives(tmp_path, workers, persistent):
    path = tmp_path / "flight.json"
    loader = DataLoader(
        Numbered(), batch_size=4, shuffle=True, num_workers=workers,
        persistent_workers=persistent, generator=torch.Generator().manual_seed(0),
    )
    recorded = record(loader, path, sync=True)
    for _ in range(2):
        for batch in recorded:
            in_flight = read_record(path).in_flight
            assert list(in_flight.indices) == batch.squeeze(1).tolist()
            assert list(in_flight.sources) == [f"data/case_{i:03d}.png" for i in in_flight.indices]
    final = read_record(path)
    assert final.epoch_complete
    last = final.in_flight
    assert (last.epoch, last.step_in_epoch, last.step) == (1, 9, 19)
    assert final.loader["num_workers"] == workers and final.index_order == "exact"


def test_the_background_writer_has_the_last_batch_when_the_pass_ends(tmp_path):
    path = tmp_path / "flight.json"
    recorded = record(DataLoader(Numbered(), batch_size=4, num_workers=2), path)
    received = [batch.squeeze(1).tolist() for batch in recorded]
    final = read_record(path)
    assert final.epoch_complete and list(final.in_flight.indices) == received[-1]
    assert [list(b.indices) for b in reversed(final.previous)] == received[-4:-1]


def test_subset_indices_are_recorded_and_sources_resolved_through_the_subset(tmp_path):
    path = tmp_path / "flight.json"
    subset = Subset(Numbered(), list(range(20, 40)))
    for batch in record(DataLoader(subset, batch_size=5), path, sync=True):
        break
    in_flight = read_record(path).in_flight
    assert in_flight.indices == (0, 1, 2, 3, 4)  # positions in loader.dataset, what replay uses
    assert in_flight.sources[0] == "data/case_020.png"
    assert batch.squeeze(1).tolist() == [20, 21, 22, 23, 24]


def test_batch_size_none_records_single_indices_and_a_custom_source(tmp_path):
    path = tmp_path / "flight.json"
    recorded = record(DataLoader(Numbered(5), batch_size=None), path, source=lambda i: f"s{i}")
    assert [int(sample) for sample in recorded] == [0, 1, 2, 3, 4]
    in_flight = read_record(path).in_flight
    assert (in_flight.indices, in_flight.sources) == ((4,), ("s4",))


def test_iterable_dataset_is_recorded_without_indices(tmp_path):
    path = tmp_path / "flight.json"
    assert len(list(record(DataLoader(Stream(), batch_size=2), path))) == 3
    final = read_record(path)
    assert final.index_order == "unavailable" and final.in_flight.indices is None
    assert explain("", record=path).record.index_order == "unavailable"


def test_the_record_is_bounded(tmp_path):
    path = tmp_path / "flight.json"
    for _ in record(DataLoader(Numbered(400), batch_size=4), path, keep=2):
        pass
    assert len(read_record(path).batches) == 2
    assert path.stat().st_size < 2000


def test_the_wrapper_behaves_like_the_loader(tmp_path):
    loader = DataLoader(Numbered(10), batch_size=3, drop_last=True)
    recorded = record(loader, tmp_path / "f.json")
    assert len(recorded) == 3
    assert recorded.dataset is loader.dataset and recorded.batch_size == 3
    assert loader.batch_sampler.batch_size == 3 and len(loader.batch_sampler) == 3


def test_rank_placeholder(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    recorded = record(DataLoader(Numbered(4), batch_size=2), tmp_path / "flight-{rank}.json")
    list(recorded)
    assert read_record(tmp_path / "flight-3.json").in_flight.indices == (2, 3)
