"""guard(): real files, real DataLoaders with and without worker processes."""

import json
import logging
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader, Subset  # noqa: E402

from builders import (  # noqa: E402
    image_folder_dataset,
    organic_mask,
    swin_unet_dataset,
    voc_segmentation_dataset,
    write_npz,
)
from labelguard import LabelError, LabelSpec  # noqa: E402
from labelguard.errors import UnsupportedError, UsageError  # noqa: E402
from labelguard.torch import GuardedDataset, guard  # noqa: E402
from labelguard.torch._guard import MAX_SUBSTITUTES  # noqa: E402
from torch_datasets import (  # noqa: E402
    EndlessStream,
    ImageFolderStyle,
    drain_loader,
    NpzStream,
    TargetStream,
    SynapseDataset,
    VOCStyleSegmentation,
    synapse_to_tensors,
)

WORKERS = [0, 2]


def synapse(root, n=12, num_classes=9, bad=None, split="train"):
    data, listing = swin_unet_dataset(root, n=n, num_classes=num_classes, bad=bad)
    if split != "train":
        listing.rename(listing.with_name(f"{split}.txt"))
    return SynapseDataset(data, listing.parent, split, transform=synapse_to_tensors)


def drain(dataset, workers, batch_size=4, **kwargs):
    return drain_loader(DataLoader(dataset, batch_size=batch_size, num_workers=workers, **kwargs))


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.code("LG201", "fail")
def test_bad_file_raises_label_error_naming_file_and_value(tmp_path, workers):
    dataset = guard(synapse(tmp_path, bad={7: 9}), num_classes=9)

    with pytest.raises(LabelError) as caught:
        drain(dataset, workers)

    error = caught.value
    assert isinstance(error, ValueError)
    assert error.code == "LG201"
    assert error.index == 7
    assert error.source.endswith("train_npz/case0003_slice001.npz")
    assert error.values == [9]
    assert error.expected == "[0, 9) (num_classes=9, ignore_index=None)"
    assert str(error).startswith(f"LG201 sample 7 ({error.source}): label value 9 in 100 pixels")
    assert "outside [0, 9) (num_classes=9, ignore_index=None)" in str(error)
    assert '"device-side assert triggered" in cross_entropy. Hint: ' in str(error)


@pytest.mark.parametrize("workers", WORKERS)
def test_error_from_worker_keeps_message_and_attributes_through_pickle(tmp_path, workers):
    dataset = guard(synapse(tmp_path, bad={2: 12}), num_classes=9)
    with pytest.raises(LabelError) as caught:
        drain(dataset, workers)

    copy = pickle.loads(pickle.dumps(caught.value))

    assert type(copy) is type(caught.value)
    assert str(copy) == str(caught.value)
    assert (copy.code, copy.index, copy.source, copy.values, copy.expected) == (
        "LG201", 2, caught.value.source, [12], caught.value.expected)
    if workers:
        assert "DataLoader worker process" in caught.value.worker_traceback


def test_swin_unet_nclass_two_on_three_valued_labels(tmp_path):
    """Scenario 3: two-class data labelled {0, 1, 2} trained with num_classes=2."""
    dataset = guard(synapse(tmp_path, n=3, num_classes=3), num_classes=2)

    with pytest.raises(LabelError) as caught:
        drain(dataset, 0)

    assert caught.value.code == "LG201"
    assert caught.value.values == [2]
    assert "num_classes must be 3" in str(caught.value)


@pytest.mark.parametrize("workers", WORKERS)
def test_skip_trains_through_and_quarantine_lists_exactly_the_bad_samples(tmp_path, workers):
    quarantine = tmp_path / "out" / "quarantine.jsonl"
    dataset = guard(synapse(tmp_path, bad={3: 9, 7: 200}), num_classes=9,
                    on_error="skip", quarantine=quarantine)
    model = torch.nn.Conv2d(1, 9, 3, padding=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(2):
        for batch in DataLoader(dataset, batch_size=4, num_workers=workers, shuffle=True):
            assert len(batch["label"]) == 4
            assert int(batch["label"].max()) < 9
            loss = torch.nn.functional.cross_entropy(model(batch["image"]), batch["label"].long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    lines = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert sorted((r["index"], r["code"], r["values"]) for r in lines) == [
        (3, "LG201", [9]), (7, "LG201", [200])]
    assert all(r["action"] == "skipped" for r in lines)
    assert {r["source"].rsplit("/", 1)[-1] for r in lines} == {
        "case0002_slice000.npz", "case0003_slice001.npz"}
    assert [(r.index, r.source) for r in sorted(dataset.records, key=lambda r: r.index)] == [
        (r["index"], r["source"]) for r in sorted(lines, key=lambda r: r["index"])]


def test_records_without_quarantine_path_collect_from_workers(tmp_path):
    dataset = guard(synapse(tmp_path, bad={5: 9}), num_classes=9, on_error="skip")
    drain(dataset, 2)
    assert [(r.index, r.code) for r in dataset.records] == [(5, "LG201")]
    written = dataset.write_quarantine(tmp_path / "copy.jsonl")
    assert json.loads(written.read_text())["index"] == 5


def test_warn_logs_and_passes_the_sample_through(tmp_path, caplog):
    dataset = guard(synapse(tmp_path, n=4, bad={1: 9}), num_classes=9, on_error="warn")
    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        batches = drain(dataset, 0)
    assert int(batches[0]["label"].max()) == 9
    assert any("LG201 sample 1" in r.getMessage() for r in caplog.records)
    assert [r.action for r in dataset.records] == ["warned"]


def test_voc_borders_need_the_ignore_index(tmp_path):
    root = voc_segmentation_dataset(tmp_path, n=3)
    with pytest.raises(LabelError) as caught:
        drain(guard(VOCStyleSegmentation(root), num_classes=3), 0)
    assert caught.value.values == [255]
    assert caught.value.source.endswith("SegmentationClass/2007000.png")
    assert "ignore_index=255" in str(caught.value)

    assert len(drain(guard(VOCStyleSegmentation(root), num_classes=3, ignore_index=255), 2, 3)) == 1


def test_ignore_index_is_read_from_the_declared_loss(tmp_path):
    root = voc_segmentation_dataset(tmp_path, n=3, bad={2: 7})
    dataset = guard(VOCStyleSegmentation(root), num_classes=3,
                    loss=torch.nn.CrossEntropyLoss(ignore_index=255))
    with pytest.raises(LabelError) as caught:
        drain(dataset, 0, batch_size=1)
    assert (caught.value.index, caught.value.values) == (2, [7])
    assert "ignore_index=255" in caught.value.expected


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.code("LG102", "fail")
def test_one_based_class_ids_of_an_image_folder(tmp_path, workers):
    root = image_folder_dataset(tmp_path, classes=("cat", "dog"), per_class=2)
    dataset = guard(ImageFolderStyle(root, target_offset=1), num_classes=2)
    with pytest.raises(LabelError) as caught:
        drain(dataset, workers, batch_size=2)
    assert caught.value.code == "LG102"
    assert caught.value.values == [2]
    assert caught.value.source.endswith("dog/000.png")
    assert "class id 2 is >= num_classes=2: ids must be 0..1 (position 1)" in str(caught.value)


@pytest.mark.code("LG103", "fail")
@pytest.mark.code("LG103", "pass")
def test_negative_class_id_that_is_not_ignored(tmp_path):
    samples = [(torch.zeros(3), torch.tensor(1)), (torch.zeros(3), torch.tensor(-1))]
    with pytest.raises(LabelError) as caught:
        drain(guard(samples, num_classes=3), 0, batch_size=2)
    assert caught.value.code == "LG103"
    assert "ignore_index=-1" in str(caught.value)
    assert len(drain(guard(samples, num_classes=3, ignore_index=-1), 0, batch_size=2)) == 1


@pytest.mark.code("LG204", "fail")
def test_interpolated_float_mask_is_not_integer(tmp_path):
    mask = organic_mask((16, 16), classes=(0, 1)).astype(np.float32)
    mask[4:6, 4:6] = 0.5
    mask[0, 0] = np.nan
    write_npz(tmp_path / "train_npz" / "a.npz", image=np.zeros((16, 16), np.float32), label=mask)
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "train.txt").write_text("a\n")
    dataset = guard(SynapseDataset(tmp_path / "train_npz", tmp_path / "lists",
                                   transform=synapse_to_tensors), num_classes=2)
    with pytest.raises(LabelError) as caught:
        drain(dataset, 0)
    assert caught.value.code == "LG204"
    assert "4 pixels hold non-integer values (e.g. 0.5)" in str(caught.value)
    assert "1 pixel" in str(caught.value) and "NaN" in str(caught.value)


@pytest.mark.code("LG505", "fail")
@pytest.mark.code("LG501", "fail")
@pytest.mark.code("LG501", "pass")
def test_declared_losses_check_the_dtype_and_one_hot_ignore(tmp_path):
    ints = [(torch.zeros(1, 4, 4), torch.zeros(4, 4, dtype=torch.long))]
    with pytest.raises(LabelError) as caught:
        drain(guard(ints, loss="bce"), 0)
    assert caught.value.code == "LG505"
    assert ".float" in str(caught.value) or "float32" in str(caught.value)

    floats = [(torch.zeros(1, 4, 4), torch.zeros(4, 4))]
    with pytest.raises(LabelError) as caught:
        drain(guard(floats, num_classes=2, loss=torch.nn.functional.cross_entropy), 0)
    assert caught.value.code == "LG505"
    assert "torch.long" in str(caught.value)

    bordered = [(torch.zeros(1, 4, 4), torch.tensor([[0, 1, 255, 255]] * 4))]
    assert len(drain(guard(bordered, num_classes=2, ignore_index=255), 0)) == 1
    with pytest.raises(LabelError) as caught:
        drain(guard(bordered, num_classes=2, ignore_index=255, loss="dice"), 0)
    assert caught.value.code == "LG501"
    assert "one_hot with ignore value 255 present" in str(caught.value)


def test_binary_targets_for_bce(tmp_path):
    scaled = [(torch.zeros(1, 4, 4), torch.tensor([[0.0, 255.0, 0.0, 255.0]] * 4))]
    with pytest.raises(LabelError) as caught:
        drain(guard(scaled, loss=torch.nn.BCEWithLogitsLoss()), 0)
    assert caught.value.code == "LG201"
    assert "divide by 255" in str(caught.value)
    soft = [(torch.zeros(1, 4, 4), torch.full((4, 4), 0.3))]
    assert len(drain(guard(soft, loss="bce_with_logits"), 0)) == 1


@pytest.mark.code("LG206", "fail")
def test_image_and_mask_of_different_sizes(tmp_path):
    pairs = [(torch.zeros(3, 32, 32), torch.zeros(16, 16, dtype=torch.long))]
    with pytest.raises(LabelError) as caught:
        drain(guard(pairs, num_classes=2), 0)
    assert caught.value.code == "LG206"
    assert "(3, 32, 32)" in str(caught.value) and "(16, 16)" in str(caught.value)


def test_subset_maps_index_to_the_underlying_file(tmp_path):
    subset = Subset(synapse(tmp_path, bad={7: 9}), [5, 6, 7])
    dataset = guard(subset, num_classes=9)
    with pytest.raises(LabelError) as caught:
        drain(dataset, 0, batch_size=3)
    assert caught.value.index == 2
    assert caught.value.source.endswith("case0003_slice001.npz")


@pytest.mark.parametrize("workers", WORKERS)
def test_iterable_dataset_names_the_file_from_the_sample(tmp_path, workers):
    paths = []
    for i in range(6):
        label = organic_mask((16, 16), classes=(0, 1, 2), seed=i)
        if i == 4:
            label[0, :5] = 3
        paths.append(write_npz(tmp_path / f"s{i}.npz", image=np.zeros((16, 16), np.float32), label=label))
    with pytest.raises(LabelError) as caught:
        drain(guard(NpzStream(paths), num_classes=3), workers, batch_size=1)
    assert caught.value.source.endswith("s4.npz")
    assert caught.value.values == [3]

    skipping = guard(NpzStream(paths), num_classes=3, on_error="skip")
    seen = [b["path"][0] for b in drain(skipping, workers, batch_size=1)]
    assert sorted(p.rsplit("/", 1)[-1] for p in seen) == ["s0.npz", "s1.npz", "s2.npz", "s3.npz", "s5.npz"]
    assert [r.source.rsplit("/", 1)[-1] for r in skipping.records] == ["s4.npz"]


@pytest.mark.parametrize("workers", WORKERS)
def test_quarantine_keeps_every_skipped_sample_of_an_iterable_dataset(tmp_path, workers):
    # 100 samples naming no file, half of them bad class ids (in pairs, so that each worker's
    # share alternates): each worker's stream counts its own positions, so only the worker
    # tells two workers' sample 3 apart.
    targets = [torch.tensor(9 if i // 2 % 2 else 1) for i in range(100)]
    quarantine = tmp_path / "quarantine.jsonl"
    dataset = guard(TargetStream(targets), num_classes=3, on_error="skip", quarantine=quarantine)

    for epoch in range(2):
        assert sum(len(labels) for _, labels in drain(dataset, workers, batch_size=5)) == 50

    records = dataset.records
    assert len(records) == 50 == len(quarantine.read_text().splitlines())
    assert {(r.code, r.action, r.values[0]) for r in records} == {("LG102", "skipped", 9)}
    assert len({(r.worker, r.index) for r in records}) == 50
    assert {r.worker for r in records} == ({0, 1} if workers else {None})


@pytest.mark.parametrize("workers", WORKERS)
def test_skip_on_a_stream_of_only_bad_samples_stops_after_the_bound(workers):
    dataset = guard(EndlessStream(torch.tensor(7)), num_classes=3, on_error="skip")

    with pytest.raises(LabelError) as caught:
        drain(dataset, workers, batch_size=2)

    error = caught.value
    assert (error.code, error.index, error.values) == ("LG102", 0, [7])
    assert f"it and the {MAX_SUBSTITUTES} samples after it are all bad" in str(error)
    assert f"at most {MAX_SUBSTITUTES} bad samples in a row are skipped" in str(error)
    first_worker = [r for r in dataset.records if r.worker == (0 if workers else None)]
    if not workers:  # with workers, the other worker may still be skipping when the loader stops
        assert [r.action for r in first_worker] == ["skipped"] * MAX_SUBSTITUTES + ["raised"]


def test_skip_takes_as_many_bad_samples_in_a_row_as_the_bound():
    targets = [torch.tensor(7)] * MAX_SUBSTITUTES + [torch.tensor(1)]
    dataset = guard(TargetStream(targets), num_classes=3, on_error="skip")
    (batch,) = drain(dataset, 0, batch_size=2)
    assert batch[1].tolist() == [1]
    assert len(dataset.records) == MAX_SUBSTITUTES


@pytest.mark.parametrize("workers", WORKERS)
def test_skip_on_a_dataset_of_only_bad_samples_ends_with_a_sample_error(workers):
    samples = [(torch.zeros(2), torch.tensor(5))] * 40
    with pytest.raises(LabelError) as caught:
        drain(guard(samples, num_classes=3, on_error="skip"), workers, batch_size=4)
    error = caught.value
    assert (error.code, error.values) == ("LG102", [5])
    assert 0 <= error.index < 40
    assert f"it and the {MAX_SUBSTITUTES} samples after it are all bad" in str(error)


def test_a_loader_that_raised_is_shut_down_before_its_error_is_kept(tmp_path):
    """A DataLoader iterator left to the cyclic garbage collector corrupts the process's file
    descriptors (see torch_datasets.drain_loader): this broke later tests' workers at random."""
    dataset = guard(synapse(tmp_path, n=4, bad={1: 9}), num_classes=9)
    with pytest.raises(LabelError) as caught:
        drain(dataset, 2)  # one batch: the second worker's index queue is never used
    (frame,) = [entry.frame for entry in caught.traceback if entry.frame.code.name == "drain_loader"]
    assert frame.f_locals["iterator"]._shutdown


def test_validation_loader_is_guarded_too(tmp_path):
    """Scenario 17: the validation split holds the bad file, training does not."""
    train = guard(synapse(tmp_path / "train", n=6), num_classes=9)
    val = guard(synapse(tmp_path / "val", n=6, bad={4: 11}, split="val"), num_classes=9)
    assert len(drain(train, 2)) == 2
    with pytest.raises(LabelError) as caught:
        drain(val, 2)
    assert caught.value.index == 4
    assert "/val/train_npz/case0002_slice001.npz" in caught.value.source


def test_custom_target_and_source(tmp_path):
    samples = [{"x": torch.zeros(2), "cls": torch.tensor(c)} for c in (0, 1, 5)]
    dataset = guard(samples, LabelSpec(num_classes=3), target="cls",
                    source=lambda i: f"row {i} of table.csv")
    with pytest.raises(LabelError) as caught:
        drain(dataset, 0, batch_size=3)
    assert caught.value.source == "row 2 of table.csv"
    assert caught.value.values == [5]


def test_spec_mapping_wrapper_attributes_and_argument_errors(tmp_path):
    base = synapse(tmp_path, n=3)
    dataset = guard(base, {"num_classes": 9})
    assert isinstance(dataset, GuardedDataset)
    assert dataset.sample_list == base.sample_list
    assert len(dataset) == 3
    with pytest.raises(UsageError, match="already guarded"):
        guard(dataset, num_classes=9)
    with pytest.raises(UsageError, match="on_error"):
        guard(base, num_classes=9, on_error="ignore")
    with pytest.raises(UnsupportedError, match="__getitem__ or __iter__"):
        guard(object(), num_classes=2)


def test_spawned_workers_unpickle_the_guard_and_share_the_records(tmp_path):
    """spawn (and forkserver, Python 3.14's default) pickle the dataset into each worker."""
    dataset = guard(synapse(tmp_path, n=8, bad={5: 9}), num_classes=9, on_error="skip")
    loader = DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="spawn")
    assert sum(len(b["label"]) for b in drain_loader(loader)) == 8
    assert [(r.index, r.code) for r in dataset.records] == [(5, "LG201")]

    strict = guard(synapse(tmp_path / "strict", n=8, bad={6: 9}), num_classes=9)
    with pytest.raises(LabelError) as caught:
        drain_loader(DataLoader(strict, batch_size=4, num_workers=2, multiprocessing_context="spawn"))
    assert (caught.value.index, caught.value.values) == (6, [9])


def test_pil_targets_as_torchvision_returns_them_without_transforms(tmp_path):
    class PilPairs(VOCStyleSegmentation):
        def __getitem__(self, index):
            from PIL import Image

            return Image.open(self.images[index]), Image.open(self.masks[index])

    root = voc_segmentation_dataset(tmp_path, n=3, bad={1: 9})
    dataset = guard(PilPairs(root), num_classes=3, ignore_index=255)
    assert dataset[0][1].mode == "P"
    with pytest.raises(LabelError) as caught:
        dataset[1]
    assert (caught.value.code, caught.value.values) == ("LG201", [9])
    assert caught.value.source.endswith("SegmentationClass/2007001.png")


def test_detection_target_dict_gives_its_labels():
    samples = [(torch.zeros(3, 8, 8), {"boxes": torch.tensor([[0.0, 0, 4, 4]] * 2), "labels": torch.tensor([1, 5])})]
    with pytest.raises(LabelError) as caught:
        guard(samples, num_classes=3)[0]
    assert caught.value.code == "LG102"
    assert "class id 5 is >= num_classes=3: ids must be 0..2 (position 2)" in str(caught.value)


class NanImageSynapse(SynapseDataset):
    """Swin-Unet's dataset with a per-slice normalisation that divides by the slice's std: a
    constant slice (all air) gives 0 / 0 = NaN in every pixel of its image."""

    def __getitem__(self, idx):
        sample = super().__getitem__(idx)
        image = sample["image"]
        sample["image"] = (image - image.mean()) / image.std()
        return sample


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.code("LG509", "fail")
def test_nan_image_from_a_normalisation_is_lg509_naming_the_file(tmp_path, workers):
    data, listing = swin_unet_dataset(tmp_path, n=8, num_classes=9)
    constant = data / "case0002_slice002.npz"  # index 5
    with np.load(constant) as arrays:
        write_npz(constant, image=np.full((32, 32), 0.25, np.float32), label=arrays["label"])
    dataset = guard(NanImageSynapse(data, listing.parent, transform=synapse_to_tensors), num_classes=9)
    with pytest.raises(LabelError) as caught:
        drain(dataset, workers)
    error = caught.value
    assert (error.code, error.index) == ("LG509", 5)
    assert error.source.endswith("case0002_slice002.npz")
    assert "the input ('image', float32 (1, 32, 32)) holds 1,024 NaN and 0 Inf of 1,024 values" in str(error)


@pytest.mark.code("LG509", "pass")
def test_finite_images_in_their_declared_range_pass_and_a_range_is_checked(tmp_path):
    dataset = guard(synapse(tmp_path, n=6), num_classes=9, input_range=(0.0, 1.0))
    assert len(drain(dataset, 0)) == 2
    scaled = guard(synapse(tmp_path / "scaled", n=6), num_classes=9, input_range=(0.0, 0.5))
    with pytest.raises(LabelError, match=r"outside the declared input_range \[0, 0.5\]") as caught:
        scaled[0]
    assert caught.value.code == "LG509"
    # check_inputs=False: a constant slice's NaN image (LG509 when checked) goes through.
    data, listing = swin_unet_dataset(tmp_path / "off", n=2, num_classes=9)
    first = sorted(data.glob("*.npz"))[0]
    with np.load(first) as arrays:
        write_npz(first, image=np.full((32, 32), 0.25, np.float32), label=arrays["label"])
    checked = guard(NanImageSynapse(data, listing.parent, transform=synapse_to_tensors), num_classes=9)
    with pytest.raises(LabelError, match="NaN"):
        checked[0]
    unchecked = guard(NanImageSynapse(data, listing.parent, transform=synapse_to_tensors), num_classes=9,
                      check_inputs=False)
    assert unchecked[0]["image"].isnan().all()
    with pytest.raises(UsageError, match="input_range must be"):
        guard(synapse(tmp_path / "bad-range", n=2), num_classes=9, input_range=(1, 0))


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.code("LG003", "fail")
def test_file_not_found_from_a_list_line_with_a_trailing_space_is_skipped_and_recorded(tmp_path, workers):
    data, listing = swin_unet_dataset(tmp_path, n=8, num_classes=9)
    lines = listing.read_text().splitlines()
    lines[3] += " "  # seed 003: "case_001.npz " saved by a Windows editor
    listing.write_text("\n".join(lines) + "\n")
    dataset = guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors),
                    num_classes=9, on_error="skip")
    batches = drain(dataset, workers)
    assert sum(len(b["label"]) for b in batches) == 8  # the missing sample was replaced
    (record,) = dataset.records
    assert (record.index, record.code, record.action) == (3, "LG003", "skipped")
    assert record.source == str(data / "case0002_slice000 .npz")
    assert record.error.startswith("FileNotFoundError: ")
    assert "has whitespace at the end of a name or before its extension" in record.message
    assert "labelguard fix list LIST --apply" in record.message


def test_a_dataset_error_in_raise_mode_is_the_original_error_with_a_note(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=4, num_classes=9)
    (data / "case0001_slice001.npz").unlink()
    dataset = guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), num_classes=9)
    with pytest.raises(FileNotFoundError) as caught:
        dataset[1]
    assert any("LG003 sample 1" in note and "case0001_slice001.npz" in note for note in caught.value.__notes__)
    assert [(r.index, r.action) for r in dataset.records] == [(1, "raised")]


def test_an_unreadable_file_in_warn_mode_is_skipped_with_a_warning(tmp_path, caplog):
    data, listing = swin_unet_dataset(tmp_path, n=4, num_classes=9)
    (data / "case0001_slice002.npz").write_bytes(b"PK\x03\x04 truncated")
    dataset = guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors),
                    num_classes=9, on_error="warn")
    with caplog.at_level(logging.WARNING, logger="labelguard.torch"):
        sample = dataset[2]
    assert sample["case_name"] == "case0002_slice000"
    (record,) = dataset.records
    assert (record.index, record.code) == (2, "LG001")
    assert "skipped LG001 sample 2" in caplog.text


def test_ssd_style_voc_detection_names_the_annotation_of_a_sample_that_raised(tmp_path):
    from detection_builders import write_voc

    from torch_datasets import SSDVOCDetection

    classes = ["cat", "dog"]
    root = write_voc(tmp_path / "VOC2007", {
        "000001": [("cat", (1, 1, 8, 8))], "000002": [("dgo", (2, 2, 9, 9))], "000003": [("dog", (0, 0, 5, 5))],
    }, splits={"trainval": ["000001", "000002", "000003"]})
    dataset = guard(SSDVOCDetection(root, classes), num_classes=2, target=lambda s: s[1][:, 4].long(),
                    on_error="skip")
    assert [int(dataset[i][1][0, 4]) for i in range(3)] == [0, 1, 1]
    (record,) = dataset.records
    assert (record.index, record.code) == (1, "LG001")
    assert record.source == str(root / "Annotations" / "000002.xml")
    assert record.error == "KeyError: 'dgo'"
    assert dataset.source(2) == str(root / "Annotations" / "000003.xml")


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.code("LG204", "fail")
def test_nan_label_cast_to_long_in_the_dataset_is_named_a_cast_nan(tmp_path, workers):
    def to_long(sample):
        tensors = synapse_to_tensors(sample)
        label = tensors["label"]
        if sample["label"].max() == 3:  # a lookup that misses: NaN, then .long()
            label[0, :5] = float("nan")
        return {"image": tensors["image"], "label": label.long()}

    data, listing = swin_unet_dataset(tmp_path, n=6, num_classes=9)
    dataset = guard(SynapseDataset(data, listing.parent, transform=to_long), num_classes=9)
    with pytest.raises(LabelError) as caught:
        drain(dataset, workers, batch_size=2)
    assert caught.value.code == "LG204"
    assert "5 target values are -9223372036854775808, what NaN and +-Inf become when cast to int64" in str(caught.value)
    assert "remap" not in str(caught.value)


def numbered(bad=(13,), n=16):
    """(the sample's own index as its input, a class id) pairs; the ``bad`` ones hold 9."""
    return [(torch.tensor([float(i)]), torch.tensor(9 if i in bad else 1)) for i in range(n)]


def served(batches):
    return [[int(v) for v in inputs.flatten()] for inputs, _ in batches]


def test_skip_serves_the_next_good_index_by_default_and_says_which(caplog):
    dataset = guard(numbered(), num_classes=3, on_error="skip")
    with caplog.at_level(logging.INFO, logger="labelguard.torch"):
        batches = served(drain(dataset, 0))
    assert batches[3] == [12, 14, 14, 15]  # batches keep their size; the neighbour is served twice
    assert [(r.index, r.action, r.replaced_by) for r in dataset.records] == [(13, "skipped", 14)]
    assert dataset.substitutions == {13: 14}
    assert "Sample 14 is served in its place (substitute='next')." in caplog.text


@pytest.mark.parametrize("workers", WORKERS)
def test_skip_with_substitute_random_serves_a_good_index_drawn_under_torch_seed(workers):
    def run():
        torch.manual_seed(5)
        dataset = guard(numbered(bad=(4, 13)), num_classes=3, on_error="skip", substitute="random")
        return served(drain(dataset, workers)), dataset.substitutions

    batches, substitutions = run()
    assert set(substitutions) == {4, 13}
    assert all(other not in (4, 13) for other in substitutions.values())
    flat = [index for batch in batches for index in batch]
    assert len(flat) == 16 and 4 not in flat and 13 not in flat
    assert run() == (batches, substitutions)  # the same draws under the same torch seed


@pytest.mark.parametrize("workers", WORKERS)
def test_skip_with_substitute_drop_shortens_the_batch_through_the_guard_collate(workers):
    from labelguard.torch import collate

    dataset = guard(numbered(), num_classes=3, on_error="skip", substitute="drop")
    batches = served(drain(dataset, workers, collate_fn=collate))
    assert batches[3] == [12, 14, 15]
    assert [(r.index, r.action, r.replaced_by) for r in dataset.records] == [(13, "dropped", None)]
    assert dataset.substitutions == {}


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("substitute", ["next", "random", "drop"])
def test_substitutions_name_what_was_really_served_in_each_bad_sample_place(substitute, workers):
    from labelguard.torch import collate

    bad = (5, 12, 13)  # 13 is met while looking for 12's replacement before it is asked for
    torch.manual_seed(0)
    dataset = guard(numbered(bad=bad, n=20), num_classes=3, on_error="skip", substitute=substitute)
    flat = [i for batch in served(drain(dataset, workers, collate_fn=collate)) for i in batch]
    substitutions = dataset.substitutions
    expected = [substitutions.get(i, i) for i in range(20) if substitute != "drop" or i not in bad]
    assert flat == expected
    assert set(substitutions) == (set() if substitute == "drop" else set(bad))
    assert sorted(r.index for r in dataset.records) == list(bad)  # one record per bad sample


@pytest.mark.parametrize("seed", range(8))
def test_a_random_substitute_recorded_is_the_one_served_when_indexed_directly(seed):
    bad = {1, 2, 3}
    torch.manual_seed(seed)
    dataset = guard(numbered(bad=bad, n=6), num_classes=3, on_error="skip", substitute="random")
    served_at = {i: int(dataset[i][0]) for i in range(6)}
    assert dataset.substitutions == {i: served_at[i] for i in bad}


def test_a_bad_sample_met_on_the_way_has_a_substitute_only_once_asked_for():
    dataset = guard(numbered(bad=(12, 13)), num_classes=3, on_error="skip")
    dataset[12]  # meets 13 on the way to 14
    assert [(r.index, r.replaced_by) for r in dataset.records] == [(13, None), (12, 14)]
    assert dataset.substitutions == {12: 14}
    dataset[13]
    assert [(r.index, r.replaced_by) for r in dataset.records] == [(13, 14), (12, 14)]
    assert dataset.substitutions == {12: 14, 13: 14}


def test_a_batch_of_nothing_but_dropped_samples_gets_the_next_good_one():
    from labelguard.torch import guard_collate

    dataset = guard(numbered(), num_classes=3, on_error="skip", substitute="drop")
    batches = served(drain(dataset, 0, batch_size=1, collate_fn=guard_collate()))
    assert batches[12:15] == [[12], [14], [14]]


def test_a_dropped_sample_in_a_plain_collate_says_which_collate_to_pass():
    dataset = guard(numbered(), num_classes=3, on_error="skip", substitute="drop")
    with pytest.raises(UsageError, match="sample 13 was dropped by guard.*pass collate_fn=labelguard.torch.collate"):
        drain(dataset, 0)


def test_substitute_is_refused_where_it_cannot_apply():
    with pytest.raises(UsageError, match="substitute must be one of next, random, drop, got 'first'"):
        guard(numbered(), num_classes=3, on_error="skip", substitute="first")
    with pytest.raises(UsageError, match="on_error='raise' skips none"):
        guard(numbered(), num_classes=3, substitute="drop")
    with pytest.raises(UsageError, match="substitute='random' needs a map-style dataset"):
        guard(TargetStream([torch.tensor(1)]), num_classes=3, on_error="skip", substitute="random")


def test_no_good_sample_to_serve_names_the_substitute():
    dataset = guard(numbered(bad=range(4), n=4), num_classes=3, on_error="skip", substitute="random")
    with pytest.raises(LabelError) as caught:
        dataset[0]
    assert ("on_error='skip' (substitute='random') found no good sample to serve in its place: it and the 3 "
            "samples drawn at random in its place are all bad") in str(caught.value)
