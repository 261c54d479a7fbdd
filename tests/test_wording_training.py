"""Wording of what labelguard.torch, fix, init, explain and the class-balance check write,
read from real runs: a real model and loss on the CPU, the CLI on datasets built here. One
thing is said in the singular, counts of thousands are grouped, a list is said once, a colour
is written one way, and no number comes in scientific notation."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import colorize, organic_mask, paired_dataset, rgb_image, write_dataset_meta, write_png
from labelguard.cli import main

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from labelguard.errors import LabelError  # noqa: E402
from labelguard.torch import checked, guard, guard_collate, preflight, trace_nonfinite, watch  # noqa: E402


class Masks(Dataset):
    """``n`` samples of a 3-channel input and a mask of 0 with a 2x2 square of 1; ``bad`` samples
    hold 2 or 7 and one 255 instead, ``nan`` puts one NaN in every input."""

    def __init__(self, n: int = 8, size: int = 8, bad=(), nan: bool = False, fill: int | None = None):
        self.n, self.size, self.bad, self.nan, self.fill = n, size, set(bad), nan, fill

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        image = torch.rand(3, self.size, self.size)
        if self.nan:
            image[0, 0, 0] = float("nan")
        if self.fill is not None:
            mask = torch.full((self.size, self.size), self.fill, dtype=torch.long)
            mask[:3, :3] = 0
            return image, mask
        mask = torch.zeros(self.size, self.size, dtype=torch.long)
        mask[:2, :2] = 1
        if index in self.bad:
            mask[:, :] = 7 if index % 2 else 2
            mask[0, 0] = 255
        return image, mask


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.output


# ---- labelguard.torch ------------------------------------------------------------------------

def test_preflight_header_says_no_loss_and_num_classes_not_given():
    text = str(preflight(nn.Conv2d(3, 2, 1), None, DataLoader(Masks(), batch_size=2), batches=1,
                         raise_on_error=False))
    assert text.startswith("preflight: 1 batch, no loss, the model (a Conv2d) with 2 outputs, ")
    assert "num_classes not given" in text
    assert "loss None" not in text and "num_classes None" not in text
    text = str(preflight(nn.Conv2d(3, 2, 1), nn.CrossEntropyLoss(), DataLoader(Masks(), batch_size=2),
                         num_classes=2, batches=1, raise_on_error=False))
    assert "1 batch, loss CrossEntropyLoss, " in text and "num_classes 2," in text


def test_one_frozen_or_missing_parameter_is_said_in_the_singular():
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.Conv2d(4, 2, 1))
    model[0].bias.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    text = str(preflight(model, nn.CrossEntropyLoss(), DataLoader(Masks(), batch_size=2), num_classes=2,
                         optimizer=optimizer, batches=1, raise_on_error=False))
    assert "LG504 warning: 1 frozen parameter (requires_grad=False) is in the optimizer: 0.bias (Conv2d)" in text

    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.Conv2d(4, 2, 1))
    optimizer = torch.optim.SGD([model[0].weight, model[1].weight, model[1].bias], lr=0.1)
    text = str(preflight(model, nn.CrossEntropyLoss(), DataLoader(Masks(), batch_size=2), num_classes=2,
                         optimizer=optimizer, batches=1, raise_on_error=False))
    assert "1 trainable parameter is in no param group, so it never changes: 0.bias (Conv2d)" in text
    assert "Add it to the optimizer" in text and "freeze it with" in text

    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.Conv2d(4, 2, 1))
    optimizer = torch.optim.SGD([model[0].weight], lr=0.1)
    text = str(preflight(model, nn.CrossEntropyLoss(), DataLoader(Masks(), batch_size=2), num_classes=2,
                         optimizer=optimizer, batches=1, raise_on_error=False))
    assert "3 trainable parameters are in no param group, so they never change" in text


def test_input_counts_are_grouped():
    with pytest.raises(LabelError) as caught:
        for _ in guard(Masks(size=64, nan=True), num_classes=2):
            pass
    assert "holds 1 NaN and 0 Inf of 12,288 values;" in str(caught.value)
    with pytest.raises(LabelError) as caught:
        for _ in guard(Masks(size=64), num_classes=2, input_range=(0, 0.5)):
            pass
    assert caught.value.code == "LG509"
    assert " of 12,288 values are outside the declared input_range [0, 0.5]" in str(caught.value)
    outside = str(caught.value).split("; ")[1].split(" of ")[0]
    assert "," in outside  # about 6,100 of them


def test_loss_input_counts_are_grouped():
    inputs = torch.full((1, 2000), 0.5)
    inputs[0, :1500] = float("nan")
    with pytest.raises(LabelError) as caught:
        checked(nn.BCELoss())(inputs, torch.zeros(1, 2000))
    assert caught.value.code == "LG502"
    assert "input holds 1,500 NaN, 0 +Inf and 0 -Inf of 2,000 values" in str(caught.value)


def test_one_batch_and_one_weight_entry_are_singular():
    loader = DataLoader(Masks(n=4, fill=255), batch_size=2)
    text = str(preflight(nn.Conv2d(3, 2, 1), nn.CrossEntropyLoss(ignore_index=255, weight=torch.ones(1)), loader,
                         batches=1, raise_on_error=False))
    assert "LG503 error: CrossEntropyLoss(weight=...) has 1 entry but the model (a Conv2d) gives 2 classes" in text
    assert "besides the ignore value 255 in 1 batch, while the model has 2 classes" in text


def test_targets_past_the_logits_are_listed_once():
    model = nn.Conv2d(3, 2, 1)
    text = str(preflight(model, nn.CrossEntropyLoss(), DataLoader(Masks(bad=[0, 1, 2, 3]), batch_size=2),
                         batches=1, raise_on_error=False))
    assert "gives 2 classes but the targets hold 2, 7, 255, all past the logits (on a GPU" in text
    text = str(preflight(model, nn.CrossEntropyLoss(), DataLoader(Masks(bad=[1]), batch_size=4),
                         batches=1, raise_on_error=False))
    assert "the targets hold 0, 1, 7, 255: values 7, 255 index past the logits" in text


def test_a_skip_that_finds_no_good_sample_nests_no_parentheses():
    with pytest.raises(LabelError) as caught:
        for _ in guard(Masks(bad=range(8)), num_classes=2, on_error="skip"):
            pass
    text = str(caught.value)
    tail = text[text.index("on_error='skip'"):]
    assert tail == ("on_error='skip' (substitute='next') found no good sample to serve in its place: it and "
                    "the 7 samples after it are all bad, and at most 32 bad samples in a row are skipped. "
                    "Fix the data or the spec.")


# ---- fix, init -------------------------------------------------------------------------------

def colour_dataset(root, stray: bool = True):
    colours = [(0, 0, 0), (200, 0, 0), (0, 200, 0)]
    for i in range(3):
        rgb = colorize(organic_mask((128, 128), classes=(0, 1, 2), seed=i), colours)
        if i == 0 and stray:
            rgb[:40, :40] = (9, 9, 9)
        write_png(root / "masks" / f"s{i}.png", rgb)
        write_png(root / "images" / f"s{i}.png", rgb_image((128, 128), seed=i))
    return colours


def test_fix_colors_writes_colours_as_the_audit_does_with_pixels_counted(tmp_path):
    write_dataset_meta(tmp_path / "dataset_meta.json", ["bg", "a", "b"], colour_dataset(tmp_path))
    audit = cli("audit", str(tmp_path), "--no-config", "--no-progress")
    assert "colour (9, 9, 9) in 1,600 pixels" in audit
    out = cli("fix", "colors", str(tmp_path))
    assert ("s0.png: colour not in the map: (9, 9, 9) in 1,600 pixels; add it to the map or pass "
            "--unmapped VALUE") in out
    assert ("s1.png: (0, 0, 0) -> 0 in 14,009 pixels, (0, 200, 0) -> 2 in 1,964 pixels, (200, 0, 0) -> 1 "
            "in 411 pixels") in out
    assert " px" not in out


def test_fix_remap_lists_values_without_brackets(tmp_path):
    masks = [np.zeros((40, 40), np.uint8) for _ in range(3)]
    masks[1][:, :] = 2
    masks[2][0, 0] = 3
    paired_dataset(tmp_path, ["a", "b", "c"], masks)
    out = cli("fix", "remap", str(tmp_path), "--map", "2:1,3:0")
    assert "a.png: no value of the map occurs (value 0)" in out
    assert "b.png: 2 -> 1 in 1,600 pixels; values 2 -> 1" in out
    assert "c.png: 3 -> 0 in 1 pixel; values 0, 3 -> 0" in out
    assert "[" not in out and " px" not in out


def test_init_names_a_stray_value_with_its_pixels_counted(tmp_path):
    masks = []
    for i in range(40):
        mask = organic_mask((32, 32), classes=(0, 1), seed=i)
        if i == 5:
            mask[0, 0] = 3
        if i == 7:
            mask[:, :] = 2
        masks.append(mask)
    paired_dataset(tmp_path, [f"s{i:02d}" for i in range(40)], masks)
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert "value 3 is in 1 of 40 masks (1 pixel; " in result.output
    assert "s05.png), while the most common class is in 39: a stray value" in result.output
    assert "value 2 is in 1 of 40 masks (1,024 pixels; " in result.output


# ---- audit: class balance, colour proposal -----------------------------------------------------

def test_class_imbalance_says_one_pixel_for_every_n(tmp_path):
    masks = [np.zeros((128, 128), np.uint8) for _ in range(3)]
    masks[0][0, 0] = 1
    paired_dataset(tmp_path, ["a", "b", "c"], masks)
    out = cli("audit", str(tmp_path), "--no-config", "--no-progress", "--num-classes", "2", "-f", "json")
    message, = [f["message"] for f in json.loads(out)["findings"] if f["code"] == "LG401"]
    assert message.endswith("the rarest class has 1 pixel for every 49,200 of the commonest")
    assert "e-0" not in message and "e+0" not in message

    big = np.zeros((1000, 1100), np.uint8)
    big[0, 0] = 1
    paired_dataset(tmp_path / "big", ["a"], [big])
    out = cli("audit", str(tmp_path / "big"), "--no-config", "--no-progress", "--num-classes", "2", "-f", "json")
    message, = [f["message"] for f in json.loads(out)["findings"] if f["code"] == "LG401"]
    assert message == ("class frequencies (pixels) are extremely imbalanced: 0: 100%, 1: 0.0000909%; the rarest "
                       "class has 1 pixel for every 1,100,000 of the commonest")


def test_no_colour_map_is_proposed_from_a_photograph(tmp_path):
    photo = tmp_path / "photo"
    for i in range(4):
        write_png(photo / "masks" / f"s{i}.png", organic_mask((64, 64), classes=(0, 1, 2), seed=i))
        write_png(photo / "images" / f"s{i}.png", rgb_image((64, 64), seed=i))
    write_png(photo / "masks" / "s4.png", rgb_image((128, 128), seed=20))
    write_png(photo / "images" / "s4.png", rgb_image((128, 128), seed=9))
    out = cli("audit", str(photo), "--no-config", "--no-progress")
    assert "this looks like a photograph, not a label" in out
    assert "proposed colour" not in out
    report = json.loads(cli("audit", str(photo), "--no-config", "--no-progress", "-f", "json"))
    assert report["summary"]["suggested_color_map"] is None
    assert [d["suggested_color_map"] for d in report["datasets"]] == [None]

    colours = tmp_path / "colours"
    colour_dataset(colours, stray=False)
    write_png(colours / "masks" / "s9.png", rgb_image((128, 128), seed=21))
    write_png(colours / "images" / "s9.png", rgb_image((128, 128), seed=22))
    out = cli("audit", str(colours), "--no-config", "--no-progress")
    proposal = next(line for line in out.splitlines() if "proposed colour" in line)
    assert "-> 2" in proposal and "-> 3" not in proposal and "more colours" not in proposal


# ---- explain --record, replay ----------------------------------------------------------------

def test_a_one_sample_batch_is_one_sample(tmp_path, monkeypatch):
    from labelguard.flight import FlightRecordWriter

    (tmp_path / "one_sample_data.py").write_text(textwrap.dedent('''
        import torch

        def make():
            return [(torch.zeros(3), torch.tensor(0))] * 4
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    record = tmp_path / "flight.json"
    FlightRecordWriter(record, sync=True).handed(0, 2, [2], None)
    out = CliRunner().invoke(main, ["explain", "-", "--record", str(record)],
                             input="RuntimeError: CUDA error: device-side assert triggered\n").output
    assert "batch in flight: epoch 0, batch 2 of the epoch (step 0), 1 sample" in out
    assert "1 samples" not in out
    out = CliRunner().invoke(main, ["replay", str(record), "--dataset-factory", "one_sample_data:make"]).output
    assert "Batch in flight: epoch 0, batch 2 of the epoch (step 0), 1 sample, taken " in out
    assert "  1 of 1 sample passed" in out and "1 samples" not in out


# ---- items of a new user's reading: batches, the loss, watch, explain ------------------------

class Pairs(Dataset):
    """dict samples of an 'image' whose size changes at index 1 and a 'label'."""

    def __len__(self):
        return 2

    def __getitem__(self, index):
        size = 8 if index == 0 else 6
        return {"image": torch.zeros(1, size, size), "label": torch.zeros(size, size, dtype=torch.long)}


def test_a_batch_names_its_field_as_a_sentence_does_not_as_a_list():
    with pytest.raises(LabelError) as caught:
        next(iter(DataLoader(Pairs(), batch_size=2, collate_fn=guard_collate())))
    assert str(caught.value).startswith("LG206 batch: field 'image' has shape (1, 8, 8) in batch position 0 "
                                        "but (1, 6, 6) in batch position 1;"), str(caught.value)
    with pytest.raises(LabelError) as caught:
        next(iter(DataLoader([(torch.zeros(2), [torch.zeros(3)]), (torch.zeros(2), [torch.zeros(4)])],
                             batch_size=2, collate_fn=guard_collate())))
    assert "batch: element 1[0] has shape (3,) in batch position 0 but (4,)" in str(caught.value)


def test_a_non_finite_scalar_loss_is_a_scalar_and_names_only_what_it_holds():
    model = nn.Linear(3, 2)
    with trace_nonfinite(model) as tracer, pytest.raises(LabelError) as caught:
        tracer.check((model(torch.ones(4, 3)) * 0).sum().log())
    text = str(caught.value)
    assert "the loss (a float32 scalar) holds 1 -Inf while " in text, text
    assert "()" not in text and "0 NaN" not in text and " of 1" not in text


def test_watch_ends_the_message_with_a_full_stop_before_its_hint(caplog):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    x, y = torch.randn(16, 4) * 3, torch.randn(16, 1)
    with caplog.at_level("WARNING", logger="labelguard.torch"), watch(model, optimizer) as watcher:
        for _ in range(30):
            loss = ((model(x) - y) ** 2).mean()
            watcher.observe(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if not torch.isfinite(loss):
                break
    said = {record.getMessage()[:5]: record.getMessage() for record in caplog.records}
    assert set(said) == {"LG508", "LG502"}, said
    for text in said.values():
        assert "Optimizer SGD: lr=0.5, momentum=0, weight_decay=0. Hint: " in text, text
        assert ".. Hint" not in text


def test_guards_without_num_classes_warn_once_a_process(tmp_path):
    script = textwrap.dedent("""
        import torch
        from labelguard.torch import guard
        data = [(torch.zeros(3, 4, 4), torch.zeros(4, 4, dtype=torch.long))] * 2
        guard(data)
        guard(data)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("no num_classes or label spec given") == 1, result.stderr


def explained(name: str, *args: str) -> str:
    log = Path(__file__).parent / "explain" / "corpus" / name
    return cli("explain", *args, str(log))


def test_explain_says_on_the_cpu_once_with_one_example():
    result = CliRunner().invoke(main, ["explain", "-"], input="RuntimeError: CUDA error: device-side assert "
                                "triggered\n", catch_exceptions=False)
    shown = " ".join(result.output.split())
    assert ("on the CPU: the same step raises a Python exception with the value, such as 'IndexError: Target 3 is "
            "out of bounds.'") in shown, shown
    assert "e.g. the same" not in shown and "step on the CPU raises" not in shown
    # An error as torch prints it is an example of what the CPU says.
    shown = " ".join(explained("seg_unet_grayscale_masks_target_192.log").split())
    assert "on the CPU: e.g. IndexError: Target 3 is out of bounds." in shown


def test_explain_names_only_what_the_log_did_not_tell_and_fixes_the_value_it_showed():
    text = " ".join(explained("seg_unet_grayscale_masks_target_192.log", "-v").split())
    assert "values: target=192" in text
    unknowns = text.split("What the log cannot tell")[1].split("Steps that help")[0]
    assert "the offending target value" not in unknowns and "- n_classes: the error names the target" in unknowns
    assert "Remap 255 to 1" not in text.split("less likely")[0]
    assert "Map the mask's values to class ids (192 is no class id: " in text
    short = " ".join(explained("seg_unet_grayscale_masks_target_192.log").split())
    assert "Fix, if it is cause 1 Map the mask's values to class ids (192 is no class id" in short
    # The same log with a target of 255 keeps the fix that names it.
    log = (Path(__file__).parent / "explain" / "corpus" / "seg_unet_grayscale_masks_target_192.log").read_text()
    shown = CliRunner().invoke(main, ["explain", "-v", "-"], input=log.replace("192", "255"),
                               catch_exceptions=False).output
    assert "Remap 255 to 1 for binary masks" in shown and "Map the mask's values" not in shown
