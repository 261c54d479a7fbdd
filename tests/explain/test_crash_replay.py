"""A training process dies mid-epoch; the flight record names the batch, replay the sample.

The training script runs in a real subprocess with two DataLoader workers and a shuffled
sampler. Mask 13 holds the value 7 in a 3-class dataset. Three deaths:

* ``kill``: the step with that batch runs for 200 ms, then the process is killed
  (``os._exit``: no cleanup, no exit handlers); the record is written in the background;
* ``kill-sync``: killed the moment the batch arrives, the record written in the loop;
* ``raise``: the CPU loss raises its real error (an exception, as a device-side assert is).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner
from explain_fixtures import read_log

torch = pytest.importorskip("torch")

from labelguard.cli import main  # noqa: E402
from labelguard.explain import explain, read_record, replay  # noqa: E402

BAD_INDEX = 13
BAD_FILE = "masks/case_013.png"

DATASET_MODULE = '''
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset


class Masks(Dataset):
    """Twenty 4x4 masks of classes 0..2; mask 13 also holds a 7."""

    def __init__(self):
        self.files = [f"masks/case_{i:03d}.png" for i in range(20)]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        image = torch.full((3, 4, 4), float(index))
        mask = torch.full((4, 4), index % 3, dtype=torch.long)
        if index == 13:
            mask[1, 2] = 7
        return image, mask


def make_dataset():
    return Masks()


def cpu_loss(batch):
    images, masks = batch
    logits = torch.zeros(images.shape[0], 3, 4, 4)
    return F.cross_entropy(logits, masks)
'''

TRAIN_SCRIPT = '''
import os
import sys
import time

import torch
from torch.utils.data import DataLoader

from crashdata import cpu_loss, make_dataset
from labelguard.torch import record

mode, path = sys.argv[1], sys.argv[2]
loader = DataLoader(make_dataset(), batch_size=4, shuffle=True, num_workers=2,
                    generator=torch.Generator().manual_seed(5))
recorded = record(loader, path, sync=mode == "kill-sync")
for epoch in range(3):
    for images, masks in recorded:
        if mode.startswith("kill") and (masks == 7).any():
            if mode == "kill":
                time.sleep(0.2)
            os._exit(134)
        loss = cpu_loss((images, masks))
'''


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """Both crashed runs: (folder, {mode: (record path, completed process)})."""
    folder = tmp_path_factory.mktemp("crash")
    (folder / "crashdata.py").write_text(textwrap.dedent(DATASET_MODULE))
    (folder / "train.py").write_text(textwrap.dedent(TRAIN_SCRIPT))
    runs = {}
    for mode in ("kill", "kill-sync", "raise"):
        path = folder / f"{mode}.json"
        # A killed parent leaves its DataLoader workers to notice it is gone (they poll every
        # few seconds); they hold inherited pipes, so only the raising run's output is kept.
        output = subprocess.PIPE if mode == "raise" else subprocess.DEVNULL
        done = subprocess.run(
            [sys.executable, "train.py", mode, str(path)], cwd=folder, stdout=output,
            stderr=output, text=True, timeout=120,
        )
        runs[mode] = (path, done)
    return folder, runs


@pytest.fixture
def in_crash_folder(crashed, monkeypatch):
    folder, runs = crashed
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "crashdata", raising=False)
    yield folder, runs
    sys.modules.pop("crashdata", None)


@pytest.mark.parametrize("mode", ["kill", "kill-sync", "raise"])
def test_the_process_died_mid_epoch_with_the_bad_batch_in_flight(crashed, mode):
    _, runs = crashed
    path, done = runs[mode]
    assert done.returncode == (1 if mode == "raise" else 134), done.stderr
    flight = read_record(path)
    assert not flight.epoch_complete
    assert BAD_INDEX in flight.in_flight.indices
    assert BAD_FILE in flight.in_flight.sources
    assert all(BAD_INDEX not in batch.indices for batch in flight.previous)
    assert flight.loader["num_workers"] == 2


def test_explain_with_the_record_names_the_samples_of_a_killed_run(crashed):
    _, runs = crashed
    path, _ = runs["kill"]
    result = explain(read_log("cuda_nll2d_torch113.log"), record=path)
    assert (BAD_INDEX, BAD_FILE) in result.record.in_flight.samples()
    out = CliRunner().invoke(
        main, ["explain", "-", "--record", str(path)], input=read_log("cuda_nll2d_torch113.log")
    ).output
    assert BAD_FILE in out and "batch in flight" in out


def test_explain_reads_the_real_cpu_traceback_of_the_raising_run(crashed):
    _, runs = crashed
    path, done = runs["raise"]
    result = explain(done.stderr, record=path)
    assert result.matches[0].entry == "nll-target-out-of-range"
    assert result.facts.values == {"target": "7"}
    assert result.facts.user_frame.path.endswith("crashdata.py")
    assert BAD_INDEX in result.record.in_flight.indices


def test_replay_names_the_sample_and_its_cpu_error(in_crash_folder):
    folder, runs = in_crash_folder
    path, _ = runs["kill"]
    result = CliRunner().invoke(main, [
        "replay", str(path), "--dataset-factory", "crashdata:make_dataset",
        "--loss", "crashdata:cpu_loss",
    ])
    assert result.exit_code == 1, result.output
    out = result.output
    assert out.startswith("labelguard replay: 1 sample fails on the CPU: index 13")
    assert f"index 13 ({BAD_FILE}): loss: IndexError: Target 7 is out of bounds." in out
    assert "whole batch: loss: IndexError: Target 7 is out of bounds." in out


def test_replay_through_the_guard_gives_the_check_code(in_crash_folder):
    folder, runs = in_crash_folder
    path, _ = runs["kill"]
    result = CliRunner().invoke(main, [
        "replay", str(path), "--dataset-factory", "crashdata:make_dataset",
        "--num-classes", "3", "--guard-loss", "cross_entropy", "--batches", "1",
        "--output-format", "json",
    ])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["checks"] == ["load", "collate", "guard"]
    assert len(data["batches"]) == 1 and data["batches"][0]["role"] == "batch in flight"
    failing = [s for s in data["batches"][0]["samples"] if s["problems"]]
    assert [s["index"] for s in failing] == [BAD_INDEX]
    assert failing[0]["problems"][0].startswith("guard: LG201")


def test_replay_of_clean_batches_passes_and_says_where_else_to_look(in_crash_folder, tmp_path):
    folder, runs = in_crash_folder
    path, _ = runs["kill"]
    flight = read_record(path)
    report = replay(flight, "crashdata:make_dataset", loss="crashdata:cpu_loss", batches=None)
    previous = [b for b in report.batches if b.role != "batch in flight"]
    assert previous and not any(b.failed for b in previous)
    clean = tmp_path / "clean.json"
    data = json.loads(path.read_text())
    data["batches"] = data["batches"][:-1]
    clean.write_text(json.dumps(data))
    report = replay(clean, "crashdata:make_dataset", loss="crashdata:cpu_loss")
    assert not report.failed
    assert report.summary == "no recorded sample fails on the CPU"
    assert any("from the model" in note for note in report.notes)


def test_replay_finds_unequal_sizes_per_sample(tmp_path, monkeypatch):
    """Random crops of unequal sizes fail the loader's own default_collate at replay."""
    (tmp_path / "sizes_data.py").write_text(textwrap.dedent('''
        import torch

        def make():
            return [torch.zeros(3, 8, 8), torch.zeros(3, 8, 8), torch.zeros(3, 16, 16)]
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    from labelguard.flight import FlightRecordWriter

    FlightRecordWriter(tmp_path / "f.json", sync=True).handed(0, 0, [0, 1, 2], None)
    # without the loader's collate_fn, torch's default stands in: its failure blames no sample
    batch, = replay(tmp_path / "f.json", "sizes_data:make").batches
    assert batch.batch_error.startswith("not replayed: torch's default_collate (no collate_fn given)")
    assert all(s.ok for s in batch.samples)
    report = replay(tmp_path / "f.json", "sizes_data:make", collate_fn=torch.utils.data.default_collate)
    batch, = report.batches
    assert batch.batch_error.startswith("collate: RuntimeError: stack expects each tensor")
    assert [s.index for s in batch.samples if not s.ok] == [2]
    assert batch.samples[2].problems[0] == (
        "LG206: shapes (3, 16, 16) differ from most of the batch: (3, 8, 8)"
    )


@pytest.mark.parametrize("args, message", [
    (["--dataset-factory", "nonexistent_module_xyz:make"], "No module named"),
    (["--dataset-factory", "no-colon"], "MODULE:FUNCTION"),
    (["--dataset-factory", "crashdata:missing"], "has no attribute 'missing'"),
])
def test_replay_usage_errors_exit_2(in_crash_folder, args, message):
    _, runs = in_crash_folder
    path, _ = runs["kill"]
    result = CliRunner().invoke(main, ["replay", str(path), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_replay_hides_the_gpus_only_while_it_runs(in_crash_folder, monkeypatch):
    _, runs = in_crash_folder
    path, _ = runs["kill"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    CliRunner().invoke(main, ["replay", str(path), "--dataset-factory", "crashdata:make_dataset"])
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"
