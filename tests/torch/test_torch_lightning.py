"""LabelGuardCallback in a real Lightning Trainer (skipped when Lightning is not installed)."""

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from builders import swin_unet_dataset  # noqa: E402
from labelguard import LabelError  # noqa: E402
from labelguard.torch import PreflightError  # noqa: E402
from labelguard.torch.lightning import LabelGuardCallback  # noqa: E402
from torch_datasets import SynapseDataset, synapse_to_tensors  # noqa: E402


class SegModule(pl.LightningModule):
    def __init__(self, num_classes, train_loader, val_loader=None):
        super().__init__()
        self.net = nn.Conv2d(1, num_classes, 3, padding=1)
        self.criterion = nn.CrossEntropyLoss()
        self.loaders = (train_loader, val_loader)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        return self.criterion(self(batch["image"]), batch["label"].long())

    def validation_step(self, batch, batch_idx):
        self.criterion(self(batch["image"]), batch["label"].long())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return self.loaders[0]

    def val_dataloader(self):
        return self.loaders[1] or []


def loader(root, num_classes=9, bad=None):
    data, listing = swin_unet_dataset(root, n=4, num_classes=num_classes, bad=bad)
    return DataLoader(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), batch_size=2)


def trainer(callback):
    return pl.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])


def test_preflight_at_fit_start_stops_a_head_too_small(tmp_path):
    module = SegModule(2, loader(tmp_path, num_classes=3))
    with pytest.raises(PreflightError) as caught:
        trainer(LabelGuardCallback()).fit(module)
    assert caught.value.code == "LG503"
    assert "num_classes must be 3" in str(caught.value)


def test_clean_fit_and_a_bad_validation_batch(tmp_path):
    callback = LabelGuardCallback(num_classes=9)
    trainer(callback).fit(SegModule(9, loader(tmp_path / "a")))
    assert callback.report.ok and callback.report.head["module"] == "net"

    module = SegModule(9, loader(tmp_path / "b"), val_loader=loader(tmp_path / "c", bad={1: 12}))
    with pytest.raises(LabelError) as caught:
        trainer(LabelGuardCallback(num_classes=9)).fit(module)
    assert caught.value.code == "LG201"
    assert str(caught.value).startswith("LG201 validation batch 0 of loader 0: label value 12 in 100 pixels")


def test_a_bfloat16_target_is_checked_by_value(tmp_path):
    from torch.utils.data import default_collate

    def bfloat16_labels(samples):
        batch = default_collate(samples)
        return {**batch, "label": batch["label"].to(torch.bfloat16)}

    data, listing = swin_unet_dataset(tmp_path, n=4, num_classes=9, bad={1: 12})
    bad = DataLoader(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), batch_size=2,
                     collate_fn=bfloat16_labels)
    with pytest.raises(LabelError) as caught:
        trainer(LabelGuardCallback(num_classes=9)).fit(SegModule(9, bad))
    assert caught.value.code == "LG201" and "label value 12" in str(caught.value)


def test_a_nested_target_is_checked_component_by_component(tmp_path):
    from torch.utils.data import default_collate

    def nested_labels(samples):
        batch = default_collate(samples)
        return {**batch, "label": torch.nested.nested_tensor([s["label"] for s in samples], layout=torch.jagged)}

    data, listing = swin_unet_dataset(tmp_path, n=4, num_classes=9, bad={1: 12})
    bad = DataLoader(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), batch_size=2,
                     collate_fn=nested_labels)
    with pytest.raises(LabelError) as caught:
        trainer(LabelGuardCallback(num_classes=9, preflight=False)).fit(SegModule(9, bad))
    assert str(caught.value).startswith("LG201 training batch 0: nested target component 1 (of 2, counted "
                                        "from 0): label value 12 in 100 pixels"), str(caught.value)


class RegressionModule(pl.LightningModule):
    """A trainable first layer before two fixed ones (as tests/torch/test_torch_watch.py): SGD
    past the stable learning rate makes the error grow by a fixed factor per step."""

    def __init__(self, lr_factor):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 4, bias=False), nn.Linear(4, 4), nn.Linear(4, 1))
        self.net[1].requires_grad_(False)
        self.net[2].requires_grad_(False)
        generator = torch.Generator().manual_seed(1)
        self.x = torch.randn(64, 8, generator=generator)
        self.y = self.x.sum(1, keepdim=True)
        head = self.net[2].weight @ self.net[1].weight
        curvature = float(2 / 64 * torch.linalg.eigvalsh(self.x.T @ self.x).max() * head.square().sum())
        self.lr = lr_factor / curvature

    def training_step(self, batch, batch_idx):
        x, y = batch
        return (self.net(x) - y).square().mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)

    def train_dataloader(self):
        return DataLoader(torch.utils.data.TensorDataset(self.x, self.y), batch_size=64)


def regression_trainer(callback, epochs):
    return pl.Trainer(max_epochs=epochs, accelerator="cpu", logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])


@pytest.mark.code("LG508", "fail")
def test_the_callback_watches_a_diverging_fit():
    callback = LabelGuardCallback(preflight=False, check_batches=False, watch=True, watch_every=8)
    regression_trainer(callback, epochs=40).fit(RegressionModule(lr_factor=2.3))
    (finding,) = callback.findings
    assert finding.code == "LG508" and finding.data["module"] == "net.0"
    assert "Optimizer SGD: lr=" in finding.message
    assert callback.watcher.step == 40


@pytest.mark.code("LG508", "pass")
def test_the_callback_watches_a_stable_fit_quietly():
    callback = LabelGuardCallback(preflight=False, check_batches=False, watch=True, watch_every=8)
    regression_trainer(callback, epochs=40).fit(RegressionModule(lr_factor=0.5))
    assert callback.findings == [] and callback.watcher.step == 40
