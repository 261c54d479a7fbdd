"""preflight: a few CPU batches that cross-check model head, loss and data."""

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from builders import swin_unet_dataset, voc_segmentation_dataset  # noqa: E402
from labelguard import LabelError, LabelSpec, Severity  # noqa: E402
from labelguard.torch import PreflightError, guard, preflight  # noqa: E402
from torch_models import RCANLike  # noqa: E402
from torch_datasets import (  # noqa: E402
    SynapseDataset,
    VOCStyleSegmentation,
    synapse_binary,
    synapse_reduce_zero_label,
    synapse_to_tensors,
)


class TinyUnet(nn.Module):
    def __init__(self, num_classes, in_channels=1):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(in_channels, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.output = nn.Conv2d(8, num_classes, 1)

    def forward(self, x):
        return self.output(self.encoder(x))


def synapse_loader(root, num_classes=9, transform=synapse_to_tensors, workers=0, bad=None):
    data, listing = swin_unet_dataset(root, n=8, num_classes=num_classes, bad=bad)
    return DataLoader(SynapseDataset(data, listing.parent, transform=transform), batch_size=4,
                      num_workers=workers)


def voc_loader(root):
    return DataLoader(VOCStyleSegmentation(voc_segmentation_dataset(root, n=4)), batch_size=2)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.code("LG503", "pass")
@pytest.mark.code("LG201", "pass")
def test_clean_setup_reports_no_problem_and_leaves_the_model_as_it_was(tmp_path, workers):
    model = TinyUnet(9).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = preflight(model, nn.CrossEntropyLoss(), synapse_loader(tmp_path, workers=workers),
                       num_classes=9)
    assert report.ok and report.findings == []
    assert report.batches == 2
    assert report.head == {"module": "output", "type": "Conv2d", "outputs": 9}
    assert report.output_shape == [4, 9, 32, 32]
    assert set(report.target_values) == {0, 1, 2, 3}
    assert "no problems found" in str(report)
    assert model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.code("LG503", "fail")
def test_swin_unet_head_of_two_for_labels_zero_one_two(tmp_path):
    """Scenario 3 (Swin-Unet #121): nclass=2 for labels {0, 1, 2}."""
    with pytest.raises(PreflightError) as caught:
        preflight(TinyUnet(2), nn.CrossEntropyLoss(), synapse_loader(tmp_path, num_classes=3))
    error = caught.value
    assert isinstance(error, LabelError) and error.code == "LG503"
    (finding,) = error.report.errors
    assert finding.message.startswith(
        "head 'output' (Conv2d) gives 2 classes but the targets hold 0, 1, 2: value 2 indexes past the logits")
    assert "num_classes must be 3" in finding.hint


def test_head_against_num_classes(tmp_path):
    report = preflight(TinyUnet(2), nn.CrossEntropyLoss(), synapse_loader(tmp_path, num_classes=2),
                       num_classes=3, raise_on_error=False)
    assert [f.code for f in report.errors] == ["LG503"]
    assert "but num_classes=3" in report.errors[0].message


@pytest.mark.code("LG501", "fail")
@pytest.mark.code("LG501", "pass")
def test_bce_after_a_head_without_sigmoid(tmp_path):
    head = TinyUnet(1)
    with torch.no_grad():  # logits of a head with no sigmoid, not all of them inside [0, 1] by chance
        head.output.bias.fill_(-1.0)
    report = preflight(head, nn.BCELoss(), synapse_loader(tmp_path, transform=synapse_binary),
                       raise_on_error=False)
    assert report.errors[0].code == "LG501"
    assert "BCEWithLogitsLoss" in report.errors[0].hint
    clean = preflight(TinyUnet(1), nn.BCEWithLogitsLoss(), synapse_loader(tmp_path / "b", transform=synapse_binary))
    assert clean.ok


def test_class_weight_length_and_ignore_index_against_the_data(tmp_path):
    """Scenario 7 (mmsegmentation #3864): ignore 255 in the data, a 2-entry class weight."""
    loss = nn.CrossEntropyLoss(weight=torch.ones(2))
    report = preflight(TinyUnet(3, in_channels=3), loss, voc_loader(tmp_path), ignore_index=255,
                       raise_on_error=False)
    messages = {f.code: f for f in report.errors}
    assert set(messages) == {"LG503", "LG201"}
    assert "CrossEntropyLoss(weight=...) has 2 entries but head 'output' (Conv2d) gives 3 classes" \
        in messages["LG503"].message
    assert "ignores -100: 255 reaches the loss" in messages["LG201"].message
    assert messages["LG201"].hint == "Build the loss with ignore_index=255."

    fixed = nn.CrossEntropyLoss(weight=torch.ones(3), ignore_index=255)
    assert preflight(TinyUnet(3, in_channels=3), fixed, voc_loader(tmp_path), ignore_index=255).ok


def test_reduce_zero_label_on_binary_data_leaves_one_class(tmp_path):
    """Scenario 7 (mmsegmentation #1714, #2508): reduce_zero_label=True on binary masks."""
    loader = synapse_loader(tmp_path, num_classes=2, transform=synapse_reduce_zero_label)
    report = preflight(TinyUnet(2), nn.CrossEntropyLoss(ignore_index=255), loader,
                       spec=LabelSpec(num_classes=2, reduce_zero_label=True))
    assert report.ok
    (finding,) = report.findings
    assert (finding.code, finding.severity) == ("LG104", Severity.WARNING)
    assert "set reduce_zero_label=False" in finding.hint


class OneHotDice(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes

    def forward(self, logits, target):
        one_hot = F.one_hot(target, self.num_classes).permute(0, 3, 1, 2).float()
        probs = logits.softmax(1)
        return 1 - (2 * (probs * one_hot).sum() + 1) / (probs.sum() + one_hot.sum() + 1)


@pytest.mark.code("LG501", "fail")
def test_one_hot_dice_with_ignore_value_present(tmp_path):
    """Scenario 8 (kornia #839, PaddleSeg #2270): one_hot on a mask holding 255."""
    report = preflight(TinyUnet(3, in_channels=3), OneHotDice(3), voc_loader(tmp_path),
                       ignore_index=255, raise_on_error=False)
    (finding,) = report.errors
    assert finding.code == "LG501"
    assert finding.message.startswith("one_hot with ignore value 255 present")


class TinyBert(nn.Module):
    def __init__(self, vocab_size=100, type_vocab_size=1):
        super().__init__()
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(vocab_size, 8)
        self.embeddings.token_type_embeddings = nn.Embedding(type_vocab_size, 8)
        self.classifier = nn.Linear(8, 2)

    def forward(self, input_ids, token_type_ids=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        hidden = self.embeddings.word_embeddings(input_ids) + self.embeddings.token_type_embeddings(token_type_ids)
        return self.classifier(hidden.mean(1))


def token_loader(ids, token_types=None):
    rows = []
    for i, row in enumerate(ids):
        item = {"input_ids": torch.tensor(row), "labels": torch.tensor(i % 2)}
        if token_types is not None:
            item["token_type_ids"] = torch.tensor(token_types[i])
        rows.append(item)
    return DataLoader(rows, batch_size=2)


@pytest.mark.code("LG601", "fail")
def test_token_ids_past_the_embedding_table():
    """Scenario 16 (transformers #1848): the tokenizer grew, the embedding did not. Token ids are
    LG601, named with their rows before the batch runs."""
    with pytest.raises(PreflightError) as caught:
        preflight(TinyBert(), nn.CrossEntropyLoss(), token_loader([[5, 101, 7], [100, 2, 3]]))
    (finding,) = caught.value.report.errors
    assert finding.code == "LG601"
    assert finding.message.startswith("'input_ids': 2 rows hold token ids outside the embedding's 100 rows "
                                      "(vocab_size from the model's 'embeddings.word_embeddings'): ids 100, 101")
    assert "resize_token_embeddings(len(tokenizer))" in finding.hint


@pytest.mark.code("LG506", "pass")
def test_ids_inside_every_embedding_table():
    report = preflight(TinyBert(type_vocab_size=2), nn.CrossEntropyLoss(),
                       token_loader([[5, 99, 7], [0, 2, 3]], token_types=[[0, 1, 1], [0, 0, 1]]))
    assert report.ok and report.findings == []
    assert report.head == {"module": "classifier", "type": "Linear", "outputs": 2}


@pytest.mark.code("LG603", "fail")
def test_token_type_ids_past_type_vocab_size():
    """Scenario 16 (transformers #1538): token_type_ids=1 with type_vocab_size=1."""
    loader = token_loader([[5, 6, 7], [1, 2, 3]], token_types=[[0, 1, 1], [0, 0, 1]])
    report = preflight(TinyBert(), nn.CrossEntropyLoss(), loader, raise_on_error=False)
    (finding,) = report.errors
    assert finding.code == "LG603" and finding.data["rows"] == [0, 1]
    assert "type_vocab_size from the model's 'embeddings.token_type_embeddings'" in finding.message


class CategoryModel(nn.Module):
    """A model that embeds a category id (no token ids): its table is a generic index table."""

    def __init__(self, categories=5):
        super().__init__()
        self.category = nn.Embedding(categories, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, category):
        return self.head(self.category(category))


@pytest.mark.code("LG506", "fail")
def test_an_index_tensor_past_its_table_is_lg506():
    loader = DataLoader([(torch.tensor(c), torch.tensor(c % 2)) for c in (1, 4, 7, 2)], batch_size=4)
    report = preflight(CategoryModel(), nn.CrossEntropyLoss(), loader, raise_on_error=False)
    (finding,) = report.errors
    assert finding.code == "LG506" and finding.data["module"] == "category" and finding.data["values"] == [7]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_guarded_loader_refusing_a_sample_becomes_a_finding(tmp_path, workers):
    data, listing = swin_unet_dataset(tmp_path, n=4, bad={1: 9})
    dataset = guard(SynapseDataset(data, listing.parent, transform=synapse_to_tensors), num_classes=9)
    loader = DataLoader(dataset, batch_size=2, num_workers=workers)
    report = preflight(TinyUnet(9), nn.CrossEntropyLoss(), loader, raise_on_error=False)
    (finding,) = report.errors
    assert finding.code == "LG201"
    assert finding.path.endswith("case0001_slice001.npz")
    assert report.batches == 0


@pytest.mark.code("LG507", "fail")
def test_preflight_reports_an_attribute_freeze_of_rcan_mean_shift():
    model = RCANLike()
    images = torch.rand(4, 3, 8, 8)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, images.clone()), batch_size=2)
    with pytest.raises(PreflightError) as caught:
        preflight(model, nn.MSELoss(), loader, optimizer=torch.optim.Adam(model.parameters()))
    assert [f.code for f in caught.value.report.errors] == ["LG507"]
    assert "'sub_mean' (RCANMeanShift)" in str(caught.value)
    model.sub_mean.requires_grad_(False)
    model.add_mean.requires_grad_(False)
    report = preflight(model, nn.MSELoss(), loader, frozen=["sub_mean", "add_mean"])
    assert report.findings == []


class TinyDet(nn.Module):
    """A dense detector's two heads: class logits, then the box regressor, run in that order."""

    def __init__(self, num_classes):
        super().__init__()
        self.body = nn.Conv2d(3, 8, 3, padding=1)
        self.cls = nn.Conv2d(8, num_classes, 1)
        self.reg = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        features = self.body(x).relu()
        return self.cls(features), self.reg(features)


@pytest.mark.code("LG503", "fail")
def test_the_head_is_the_layer_that_gave_the_logits_not_the_box_regressor_run_after_it():
    images = torch.rand(4, 3, 8, 8)
    targets = torch.randint(0, 3, (4, 8, 8))
    targets[1, 0, 0] = 7  # past the 6 classes of the head
    loader = DataLoader(list(zip(images, targets)), batch_size=2)
    report = preflight(TinyDet(6), nn.CrossEntropyLoss(), loader, raise_on_error=False,
                       forward=lambda model, batch: model(batch[0]))
    assert report.head == {"module": "cls", "type": "Conv2d", "outputs": 6}
    assert any(f.code == "LG503" and "head 'cls' (Conv2d) gives 6 classes" in f.message for f in report.errors)
