"""labelguard.torch on a CUDA machine: the assert it prevents, and what it costs there.

One short, self-contained run (well under two minutes):

a. a bad sample without the guard, in a subprocess (the assert kills the CUDA context):
   the plain "device-side assert triggered", naming neither file nor value;
b. the same data through ``guard()``: a LabelError naming the file and the value, raised in
   a DataLoader worker before anything reaches the GPU;
c. ``checked(CrossEntropyLoss)`` on CUDA tensors: a LabelError before the kernel, and the CUDA
   context still usable afterwards;
d. costs on the GPU, each in one run with the plain variant alternating: the guard in a
   training loop (DataLoader with 8 workers), ``checked`` per step (one reduction and one
   sync), ``trace_nonfinite`` against ``torch.autograd.detect_anomaly``;
e. ``safe_targets`` on CUDA (in a subprocess, so that a failure cannot take this run's
   context down): the planted bad label is masked, the CUDA context survives the epoch, the
   sample is named one step later from the flight record, and neither ``safe_targets`` nor
   ``watch`` synchronises (``torch.cuda.set_sync_debug_mode("error")`` around their steps);
f. costs of steps that never sync, measured as throughput (50 steps, one synchronize at the
   end, variants alternating): an unchecked step, ``safe_targets``, a check that reads a flag
   back with ``.item()`` every step, ``checked`` (one sync per call) and ``watch``.

Without a CUDA device it says so and exits 0.

Usage::

    python benchmarks/gpu_check.py
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from labelguard import LabelError
from labelguard.torch import TargetMonitor, checked, guard, record, trace_nonfinite, watch

import _docs  # the module beside this script

NUM_CLASSES = 9
BAD_INDEX = 37
BAD_NAME = f"case{BAD_INDEX // 32 + 1:04d}_slice{BAD_INDEX % 32:03d}"
SIZE = 128
WORKERS = 8


class SynapseSlices(Dataset):
    """Swin-Unet's Synapse_dataset shape: ``sample_list`` names under ``data_dir``."""

    def __init__(self, data_dir: str, names: list[str]):
        self.data_dir = data_dir
        self.sample_list = names

    def __len__(self):
        return len(self.sample_list)

    def __getitem__(self, index):
        data = np.load(f"{self.data_dir}/{self.sample_list[index]}.npz")
        return {
            "image": torch.from_numpy(data["image"]).unsqueeze(0),
            "label": torch.from_numpy(data["label"].astype(np.float32)),
        }


def write_slices(root: Path, count: int = 96) -> list[str]:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE] / SIZE
    names = []
    for i in range(count):
        label = np.zeros((SIZE, SIZE), np.uint8)
        for value in range(1, NUM_CLASSES):
            cy, cx, r = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.05, 0.15)
            label[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = value
        if i == BAD_INDEX:
            label[:10, :10] = NUM_CLASSES
        name = f"case{i // 32 + 1:04d}_slice{i % 32:03d}"
        np.savez(root / f"{name}.npz", image=rng.random((SIZE, SIZE), dtype=np.float32), label=label)
        names.append(name)
    return names


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, padding=1, stride=2), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Upsample(scale_factor=2), nn.Conv2d(128, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, NUM_CLASSES, 1),
    ).cuda()


def train(loader, model, optimizer, loss_fn, steps: list[float] | None = None) -> None:
    started = time.perf_counter()
    for batch in loader:
        image = batch["image"].cuda(non_blocking=True)
        label = batch["label"].cuda(non_blocking=True).long()
        loss = loss_fn(model(image), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()  # the loss is logged every step in most loops: a sync
        now = time.perf_counter()
        if steps is not None:
            steps.append(now - started)
        started = now


def unguarded_child(data_dir: str) -> None:
    """Runs in a subprocess: train on the bad data without labelguard until CUDA asserts."""
    names = sorted(p.stem for p in Path(data_dir).glob("*.npz"))
    loader = DataLoader(SynapseSlices(data_dir, names), batch_size=8, num_workers=2)
    model = make_model()
    train(loader, model, torch.optim.SGD(model.parameters(), lr=0.01), nn.CrossEntropyLoss())
    torch.cuda.synchronize()
    print("no assert: the bad sample went through")


def check_a(data_dir: Path) -> bool:
    print("\na. without the guard (subprocess)")
    result = subprocess.run([sys.executable, __file__, "--unguarded", str(data_dir)],
                            capture_output=True, text=True, timeout=120)
    text = result.stdout + result.stderr
    lines = [line.strip() for line in text.splitlines()
             if "device-side assert" in line or "Assertion" in line]
    for line in lines[:4]:
        print(f"   {line[:200]}")
    names_file = any(BAD_NAME in line for line in text.splitlines())
    asserted = result.returncode != 0 and any("device-side assert" in line for line in lines)
    print(f"   exit code {result.returncode}; device-side assert: {asserted}; "
          f"message names the file: {names_file}")
    return asserted


def check_b(data_dir: Path, names: list[str]) -> bool:
    print("\nb. with guard(), DataLoader with 2 workers")
    dataset = guard(SynapseSlices(str(data_dir), names), num_classes=NUM_CLASSES)
    model = make_model()
    batches = iter(DataLoader(dataset, batch_size=8, num_workers=2))
    try:
        train(batches, model, torch.optim.SGD(model.parameters(), lr=0.01), nn.CrossEntropyLoss())
    except LabelError as error:
        # DataLoader's shutdown after a worker exception waits 5 s per worker; end them now.
        for worker in getattr(batches, "_workers", ()):
            worker.terminate()
        print(f"   {type(error).__name__}: {error}")
        ok = error.index == BAD_INDEX and BAD_NAME in (error.source or "") and error.values == [NUM_CLASSES]
        print(f"   code {error.code}, index {error.index}, values {error.values}: "
              f"{'names the file' if ok else 'DOES NOT name the file'}")
        return ok
    print("   no LabelError: FAILED")
    return False


def check_c() -> bool:
    print("\nc. checked(CrossEntropyLoss) on CUDA tensors")
    logits = torch.randn(4, NUM_CLASSES, 32, 32, device="cuda")
    target = torch.zeros(4, 32, 32, dtype=torch.long, device="cuda")
    target[2, :3, :3] = NUM_CLASSES
    try:
        checked(nn.CrossEntropyLoss())(logits, target)
    except LabelError as error:
        print(f"   {error}")
        alive = float((torch.ones(3, device="cuda") * 2).sum()) == 6.0
        print(f"   CUDA context still usable: {alive}")
        return alive and error.values == [NUM_CLASSES]
    print("   no LabelError: FAILED")
    return False


def loader_alone(loader, rounds: int = 3) -> float:
    """Median time per batch of iterating ``loader`` with no training: the workers' pace."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        count = sum(1 for _ in loader)
        times.append((time.perf_counter() - started) / count)
    return statistics.median(times)


def overhead_guard(data_dir: Path, names: list[str], rounds: int = 4) -> tuple[float, ...]:
    clean = [n for n in names if n != BAD_NAME]
    loaders = {
        kind: DataLoader(dataset, batch_size=16, shuffle=True, num_workers=WORKERS, pin_memory=True,
                         persistent_workers=True, drop_last=True)
        for kind, dataset in (
            ("plain", SynapseSlices(str(data_dir), clean)),
            ("guarded", guard(SynapseSlices(str(data_dir), clean), num_classes=NUM_CLASSES)),
        )
    }
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for loader in loaders.values():
        train(loader, model, optimizer, loss_fn)  # warm-up
    steps: dict[str, list[float]] = {"plain": [], "guarded": []}
    for round_number in range(rounds):
        order = ("plain", "guarded") if round_number % 2 == 0 else ("guarded", "plain")
        for kind in order:
            train(loaders[kind], model, optimizer, loss_fn, steps[kind])
    return (statistics.median(steps["plain"]), statistics.median(steps["guarded"]),
            loader_alone(loaders["plain"]), loader_alone(loaders["guarded"]))


def overhead_per_step(batches, rounds: int = 5) -> dict[str, float]:
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    plain = nn.CrossEntropyLoss()
    tracer = trace_nonfinite(model)
    variants = {
        "plain": (plain, contextlib.nullcontext, None),
        "checked loss": (checked(nn.CrossEntropyLoss()), contextlib.nullcontext, None),
        "trace_nonfinite": (plain, lambda: tracer, tracer.check),
        "detect_anomaly": (plain, torch.autograd.detect_anomaly, None),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for round_number in range(rounds + 1):
            for image, label in batches:
                order.append(order.pop(0))
                for name in order:
                    loss_fn, context, check = variants[name]
                    torch.cuda.synchronize()
                    started = time.perf_counter()
                    with context():
                        loss = loss_fn(model(image), label)
                        if check is not None:
                            check(loss)
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                    loss.item()
                    if round_number:  # the first round warms up every variant
                        times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}



def masked_child(data_dir: str) -> None:
    """Runs in a subprocess: train on the bad data through safe_targets; prints what it saw."""
    names = sorted(p.stem for p in Path(data_dir).glob("*.npz"))
    loader = record(DataLoader(SynapseSlices(data_dir, names), batch_size=8, num_workers=2),
                    Path(data_dir) / "flight.json")
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    monitor = TargetMonitor(num_classes=NUM_CLASSES, ignore_index=255, on_error="warn")
    watcher = watch(model, optimizer, every=4).attach()
    loss_fn = nn.CrossEntropyLoss(ignore_index=255)
    synced = None
    for step, batch in enumerate(loader):
        image = batch["image"].cuda(non_blocking=True)
        label = batch["label"].cuda(non_blocking=True).long()
        debug = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")  # any synchronising call in the step raises
        try:
            loss = loss_fn(model(image), monitor(label, samples=loader))
            watcher.observe(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        except RuntimeError as exc:
            synced = synced or f"step {step}: {exc}"
        finally:
            torch.cuda.set_sync_debug_mode(debug)
    torch.cuda.synchronize()  # raises when a kernel asserted: the context would be dead
    errors = monitor.report()
    watcher.report()
    alive = float((torch.ones(3, device="cuda") * 2).sum()) == 6.0
    named = [e for e in errors if e.index == BAD_INDEX and BAD_NAME in (e.source or "")]
    print(f"context alive after the epoch: {alive}")
    print(f"reported: {len(errors)} error(s); names the sample and file: {bool(named)}")
    for error in errors[:1]:
        print(f"  {error}")
    print(f"no synchronising call in safe_targets/watch steps: {synced is None}" + (f" ({synced})" if synced else ""))


def check_e(data_dir: Path) -> bool:
    print("\ne. safe_targets on CUDA (subprocess): the bad label masked, reported a step later")
    try:
        result = subprocess.run([sys.executable, __file__, "--masked", str(data_dir)],
                                capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print("   the subprocess ran past 120 s: FAILED")
        return False
    text = result.stdout + result.stderr
    for line in text.splitlines()[-6:]:
        print(f"   {line[:300]}")
    return (result.returncode == 0 and "context alive after the epoch: True" in text
            and "names the sample and file: True" in text
            and "no synchronising call in safe_targets/watch steps: True" in text)


def throughput_per_step(batches, steps: int = 50, rounds: int = 3) -> dict[str, float]:
    """Median over rounds of (time of ``steps`` steps with one synchronize at the end) / steps,
    for steps that read nothing back unless the variant does."""
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    plain = nn.CrossEntropyLoss(ignore_index=255)
    monitor = TargetMonitor(num_classes=NUM_CLASSES, ignore_index=255, on_error="warn")
    checked_loss = checked(nn.CrossEntropyLoss(ignore_index=255))
    watcher = watch(model, optimizer)

    def item_check(label):
        if bool(((label < 0) | (label >= NUM_CLASSES)).any().item()):  # the sync every step
            raise ValueError("bad label")
        return label

    variants = {
        "unchecked": (plain, lambda y: y, None),
        "safe_targets (no sync)": (plain, monitor, None),
        ".item() flag every step": (plain, item_check, None),
        "checked (one sync)": (checked_loss, lambda y: y, None),
        "watch (no sync)": (plain, lambda y: y, watcher),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for round_number in range(rounds + 1):
        for name, (loss_fn, prepare, attached) in variants.items():
            if attached is not None:
                attached.attach()
            torch.cuda.synchronize()
            started = time.perf_counter()
            for step in range(steps):
                image, label = batches[step % len(batches)]
                loss = loss_fn(model(image), prepare(label))
                if attached is not None:
                    attached.observe(loss)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            torch.cuda.synchronize()
            if attached is not None:
                attached.detach()
            if round_number:  # the first round warms every variant up
                times[name].append((time.perf_counter() - started) / steps)
    monitor.report()
    watcher.report()
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--unguarded":
        unguarded_child(sys.argv[2])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--masked":
        masked_child(sys.argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    report = _docs.Report("gpu_check", parser)
    report.start(parser.parse_args())
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check here (labelguard.torch itself needs no GPU)")
        report.note("Not measured: this machine has no CUDA device.")
        report.finish()
        return 0
    print(f"labelguard gpu_check: torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name(0)}")
    with tempfile.TemporaryDirectory(prefix="lg-gpu-check-") as tmp:
        data_dir = Path(tmp)
        names = write_slices(data_dir)
        print(f"data: {len(names)} Synapse-style slices {SIZE}x{SIZE}, num_classes={NUM_CLASSES}; "
              f"{BAD_NAME}.npz holds the value {NUM_CLASSES}")
        a, b, c = check_a(data_dir), check_b(data_dir, names), check_c()

        print("\nd. costs on the GPU (medians, plain and labelguard alternating)")
        plain, guarded, load_plain, load_guarded = overhead_guard(data_dir, names)
        print(f"   training loop, DataLoader {WORKERS} workers, batch 16: plain {plain * 1e3:.2f} "
              f"ms/step, guarded {guarded * 1e3:.2f} ms/step, overhead {(guarded / plain - 1) * 100:+.1f} %")
        report.row(f"baseline: training loop, DataLoader {WORKERS} workers, batch 16, plain",
                   f"{plain * 1e3:.2f} ms a step")
        report.row("the same, `guard()`ed", f"{guarded * 1e3:.2f} ms a step", f"{(guarded / plain - 1) * 100:+.1f} %")
        print(f"   the loader alone (no training): plain {load_plain * 1e3:.2f} ms/batch, guarded "
              f"{load_guarded * 1e3:.2f} ms/batch (a loop slower than this is not data-bound)")
        rng = torch.Generator().manual_seed(0)
        batches = [(torch.randn(16, 1, SIZE, SIZE, generator=rng).cuda(),
                    torch.randint(0, NUM_CLASSES, (16, SIZE, SIZE), generator=rng).cuda())
                   for _ in range(8)]
        steps = overhead_per_step(batches)
        for name, value in steps.items():
            print(f"   {name:16s} {value * 1e3:7.2f} ms/step  {value / steps['plain']:5.2f}x")
            report.row(f"step on the GPU: {name}", f"{value * 1e3:.2f} ms", f"{value / steps['plain']:.2f}x")

        e = check_e(data_dir)
        print("\nf. steps that never sync: 50 steps back to back, one synchronize at the end "
              "(median of 3 rounds, variants alternating)")
        flows = throughput_per_step(batches)
        for name, value in flows.items():
            print(f"   {name:26s} {value * 1e3:7.3f} ms/step  {(value / flows['unchecked'] - 1) * 100:+6.1f} %")
            report.row(f"50 steps without a sync: {name}", f"{value * 1e3:.3f} ms a step",
                       f"{(value / flows['unchecked'] - 1) * 100:+.1f} %")

    print(f"\nsummary: assert reproduced without guard: {a}; guard named the file: {b}; "
          f"checked() stopped before the kernel: {c}; safe_targets masked it, kept the context "
          f"and named the sample without a sync: {e}")
    report.note(f"Assert reproduced without the guard: {a}; the guard named the file: {b}; `checked()` stopped "
                f"before the kernel: {c}; `safe_targets` masked it without a sync: {e}.")
    report.finish()
    return 0 if (a and b and c and e) else 1


if __name__ == "__main__":
    sys.exit(main())
