"""collate / guard_collate: the samples torch.stack cannot join, named."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader, default_collate  # noqa: E402

from builders import swin_unet_dataset, write_npz  # noqa: E402
from labelguard import LabelError  # noqa: E402
from labelguard.torch import collate, guard, guard_collate  # noqa: E402
from torch_datasets import SynapseDataset, drain_loader, synapse_to_tensors  # noqa: E402


def resized_synapse(root):
    """Six 32x32 slices, with slice 4 re-exported at 32x24 (image and label both)."""
    data, listing = swin_unet_dataset(root, n=6)
    odd = np.load(data / "case0002_slice001.npz")
    write_npz(data / "case0002_slice001.npz", image=odd["image"][:, :24], label=odd["label"][:, :24])
    return SynapseDataset(data, listing.parent, transform=synapse_to_tensors)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.code("LG206", "fail")
def test_shape_mismatch_names_both_samples_and_shapes(tmp_path, workers):
    dataset = guard(resized_synapse(tmp_path), num_classes=9)
    loader = DataLoader(dataset, batch_size=6, num_workers=workers, collate_fn=collate)

    with pytest.raises(LabelError) as caught:
        drain_loader(loader)

    error = caught.value
    assert error.code == "LG206"
    assert error.index == 4
    assert error.source.endswith("case0002_slice001.npz")
    assert error.values == [[1, 32, 32], [1, 32, 24]]
    message = str(error)
    assert message.startswith("LG206 batch: field 'image' has shape (1, 32, 32) in sample 0 (")
    assert "case0001_slice000.npz) but (1, 32, 24) in sample 4 (" in message
    assert "stack expects each tensor to be equal size" in message


def test_guard_collate_wraps_a_custom_collate_and_names_positions_without_guard(tmp_path):
    def keep_labels(batch):
        return default_collate([sample["label"] for sample in batch])

    loader = DataLoader(resized_synapse(tmp_path), batch_size=6, collate_fn=guard_collate(keep_labels))
    with pytest.raises(LabelError) as caught:
        drain_loader(loader)
    assert caught.value.index is None
    assert "(1, 32, 32) in batch position 0 but (1, 32, 24) in batch position 4" in str(caught.value)


@pytest.mark.code("LG206", "pass")
def test_good_batches_are_the_default_collate_result(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=4)
    dataset = guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), num_classes=9)
    ours = next(iter(DataLoader(dataset, batch_size=4, collate_fn=collate)))
    default = next(iter(DataLoader(dataset, batch_size=4)))
    assert torch.equal(ours["label"], default["label"])
    assert ours["case_name"] == default["case_name"]


def test_other_collate_errors_pass_through_unchanged():
    with pytest.raises(TypeError, match="default_collate"):
        collate([object(), object()])
