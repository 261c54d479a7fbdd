"""Cost of labelguard.torch in a CPU training loop, measured in one run.

1. ``guard()``: a small conv net trained on real Swin-Unet style ``.npz`` slices through a
   DataLoader with 2 workers, with the plain dataset, with the guarded one and with a second
   plain one (whose figure is the noise floor of the method). Their epochs take turns so that
   all see the same machine state. Each epoch's figure is its median step time (data wait +
   forward + backward + optimizer step); the overhead is the median over rounds of
   guarded/plain, and the best epoch of each is shown too (other load on the machine only
   ever adds time). Also the guard's own cost per sample, timed in the
   main process: the CPU it adds, wherever it runs.
2. ``checked(CrossEntropyLoss)``: in-memory batches, with the loss checked.
3. ``trace_nonfinite`` (a float32 sum of the output of each module that can make a NaN/Inf,
   one sync a step) against ``torch.autograd.detect_anomaly`` and against a naive
   ``isfinite`` forward hook on every module (a sync on each), on in-memory batches. Every
   variant runs on each batch in turn; the figure is the median of the per-batch ratios to
   the plain step, and for trace_nonfinite also its own work, timed inside its hooks, over
   the plain steps' time (as for 4.).
4. ``watch(model, optimizer)`` (LG508: loss, gradient norm and activation magnitudes kept on
   the device), its steps taking turns with a plain step and a second plain one (the noise
   floor) on each batch; its hooks stay attached across its steps, as in training. Its cost
   has two phases, measured apart: close (the first 16 steps and those after growth: each
   step read back, every output measured) and calm (one read per 16 steps, outputs measured
   on every 4th step). Two figures for each, both over the plain steps of the same batches:
   the watch's own work, timed inside its hooks (what it adds, which on a shared machine the
   noise of whole steps hides), and whole steps, as the median over blocks of 4 consecutive
   watched steps (one measuring step each: a median of single steps would leave it out) of a
   block's time over its plain steps' time.

5. The audit of tokenized datasets (the token rules that ``guard(model=...)`` and preflight
   also run): rows/s against a plain pyarrow scan of the same columns, through
   ``benchmarks/bench_tokens.py`` (which also measures peak memory; run it alone for more).
6. ``guard()`` on a detection set, its class ids and boxes checked (LG102, LG301), through
   ``benchmarks/bench_guard_detection.py`` (run it alone for more rounds).

The targets: guard <= 3 % of step time (segmentation, 1., and detection with its box checks,
6.), trace_nonfinite <= 5 %, watch (calm) <= 2 %, the token audit >= 0.5x the pyarrow scan.

Usage::

    python benchmarks/bench_guard.py            # one to two minutes on 2 cores
    python benchmarks/bench_guard.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from labelguard.torch import DivergenceWatch, NonFiniteTracer, checked, guard

import _docs  # noqa: E402  (the module beside this script)
import bench_guard_detection  # noqa: E402  (the script beside this one)

NUM_CLASSES = 9


class SynapseSlices(Dataset):
    """Swin-Unet's Synapse_dataset: ``sample_list`` names under ``data_dir``, dict samples,
    float32 labels (as its RandomGenerator returns them), a random flip."""

    def __init__(self, data_dir: Path, names: list[str]):
        self.data_dir = str(data_dir)
        self.sample_list = names

    def __len__(self):
        return len(self.sample_list)

    def __getitem__(self, index):
        data = np.load(f"{self.data_dir}/{self.sample_list[index]}.npz")
        image, label = data["image"], data["label"]
        if np.random.rand() < 0.5:
            image, label = image[:, ::-1], label[:, ::-1]
        return {
            "image": torch.from_numpy(image.astype(np.float32)).unsqueeze(0),
            "label": torch.from_numpy(label.astype(np.float32)),
        }


def write_slices(root: Path, count: int, size: int) -> list[str]:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size]
    names = []
    for i in range(count):
        label = np.zeros((size, size), np.uint8)
        for value in range(1, NUM_CLASSES):
            cy, cx, r = rng.uniform(0.2, 0.8, 2).tolist() + [rng.uniform(0.05, 0.2)]
            label[((yy / size - cy) ** 2 + (xx / size - cx) ** 2) < r * r] = value
        image = rng.random((size, size), dtype=np.float32)
        name = f"case{i // 50:04d}_slice{i % 50:03d}"
        np.savez(root / f"{name}.npz", image=image, label=label)
        names.append(name)
    return names


def small_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Upsample(scale_factor=2), nn.Conv2d(32, NUM_CLASSES, 1),
    )


def train_epoch(loader, model, optimizer, loss_fn) -> list[float]:
    """Step times (seconds) of one epoch: data wait + forward + backward + step."""
    times = []
    started = time.perf_counter()
    for batch in loader:
        loss = loss_fn(model(batch["image"]), batch["label"].long())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        now = time.perf_counter()
        times.append(now - started)
        started = now
    return times[1:]  # the first step waits for the workers' first batches


def bench_guard(root: Path, names: list[str], rounds: int, batch_size: int) -> dict[str, float]:
    plain = SynapseSlices(root, names)
    guarded = guard(SynapseSlices(root, names), num_classes=NUM_CLASSES)
    # "again" is a second plain loader: its ratio to "plain" is the noise floor of the method.
    loaders = {
        name: DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=2,
                         persistent_workers=True, drop_last=True)
        for name, dataset in (("plain", plain), ("again", SynapseSlices(root, names)),
                              ("guarded", guarded))
    }
    model = small_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    result = bench_guard_detection.epochs_in_turn(
        loaders, lambda loader: train_epoch(loader, model, optimizer, loss_fn), rounds)
    result.update(bench_guard_detection.per_sample(plain, guarded, len(names)))
    return result


def memory_batches(root: Path, names: list[str], batch_size: int, count: int) -> list[dict]:
    dataset = SynapseSlices(root, names)
    loader = DataLoader(dataset, batch_size=batch_size, drop_last=True)
    return [batch for batch, _ in zip(loader, range(count))]


def one_step(batch, model, optimizer, loss_fn, context=contextlib.nullcontext,
             check_loss=None) -> float:
    started = time.perf_counter()
    with context():
        loss = loss_fn(model(batch["image"]), batch["label"].long())
        if check_loss is not None:
            check_loss(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - started


class NaiveHooks:
    """What not to do: an isfinite check in a forward hook on every module."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        def check(module, inputs, output):
            if isinstance(output, torch.Tensor) and not bool(torch.isfinite(output).all()):
                raise FloatingPointError(type(module).__name__)

        self.handles = [m.register_forward_hook(check) for m in self.model.modules()]

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()


class TimedTracer(NonFiniteTracer):
    """trace_nonfinite's tracer, adding up the time spent in its hooks and ``check``
    (``spent``): its own work, which the noise of whole steps hides on a shared machine."""

    spent = 0.0

    def _timed(self, work, *args):
        started = time.perf_counter()
        try:
            work(*args)
        finally:
            self.spent += time.perf_counter() - started

    def check(self, value, what="loss"):
        self._timed(super().check, value, what)

    def _before(self, module, args, kwargs):
        self._timed(super()._before, module, args, kwargs)

    def _after_module(self, module, args, output):
        self._timed(super()._after_module, module, args, output)

    def _after(self, module, args, kwargs, output):
        self._timed(super()._after, module, args, kwargs, output)


def bench_step_tools(batches, rounds: int) -> tuple[dict[str, tuple[float, float]], float]:
    """2./3.: each variant's median step and median per-batch ratio to the plain step; and the
    tracer's own work over the plain steps' time."""
    model = small_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    plain_loss, checked_loss = nn.CrossEntropyLoss(), checked(nn.CrossEntropyLoss())
    tracer = TimedTracer(model)
    variants = {
        "plain": dict(loss_fn=plain_loss),
        "plain again (noise floor)": dict(loss_fn=plain_loss),
        "checked loss": dict(loss_fn=checked_loss),
        "trace_nonfinite": dict(loss_fn=plain_loss, context=lambda: tracer, check_loss=tracer.check),
        "isfinite hook on every module": dict(loss_fn=plain_loss, context=lambda: NaiveHooks(model)),
        "detect_anomaly": dict(loss_fn=plain_loss, context=torch.autograd.detect_anomaly),
    }
    for batch in batches[:2]:  # warm-up
        one_step(batch, model, optimizer, plain_loss)
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    with warnings_off():
        for _ in range(rounds):
            for batch in batches:  # every variant on every batch, in turn
                order.append(order.pop(0))
                for name in order:
                    times[name].append(one_step(batch, model, optimizer, **variants[name]))
    # Steps of one batch ran back to back: their ratio to the plain step is what noise spares.
    return ({name: (statistics.median(values), statistics.median(v / p for v, p in zip(values, times["plain"])))
             for name, values in times.items()}, tracer.spent / sum(times["plain"]))


class TimedWatch(DivergenceWatch):
    """The watch, adding up the time spent in its hooks and ``observe`` (``spent``): its own
    work, which the noise of a shared machine hides in whole-step times."""

    spent = 0.0

    def _timed(self, work, *args):
        started = time.perf_counter()
        work(*args)
        self.spent += time.perf_counter() - started

    def observe(self, loss):
        self._timed(super().observe, loss)

    def _after_module(self, position, output):
        self._timed(super()._after_module, position, output)

    def _before_step(self, optimizer, args, kwargs):
        self._timed(super()._before_step, optimizer, args, kwargs)

    def _after_step(self, optimizer, args, kwargs):
        self._timed(super()._after_step, optimizer, args, kwargs)


def bench_watch(batches, rounds: int) -> dict[str, tuple[float, ...]]:
    """4.: the watch's cost per phase: its own work and the whole step, each over the plain
    step (and the second plain step's, the noise floor), with the steps measured."""
    model = small_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    watcher = TimedWatch(model, optimizer)
    for batch in batches[:2]:  # warm-up
        one_step(batch, model, optimizer, loss_fn)
    times: dict[str, list[float]] = {"plain": [], "again": [], "watch": []}
    own: list[float] = []
    order = list(times)
    for _ in range(rounds):
        for batch in batches:  # the three on every batch, in turn
            order.append(order.pop(0))
            for name in order:
                if name == "watch":
                    watcher.attach()  # hooks on, as in training: attaching is not timed
                    watcher.spent = 0.0
                    times[name].append(one_step(batch, model, optimizer, loss_fn, check_loss=watcher.observe))
                    own.append(watcher.spent)
                    watcher.detach()
                else:
                    times[name].append(one_step(batch, model, optimizer, loss_fn))
    watcher.report()
    # Watched step n (from 1) was read back alone in the close phase.
    close = {h["steps"][0] for h in watcher.history if h["steps"][0] == h["steps"][1]}
    plain, watched, again = times["plain"], times["watch"], times["again"]
    result: dict[str, tuple[float, ...]] = {"plain step": (statistics.median(plain), len(plain))}
    phases = {"close": [i for i in range(len(watched)) if i + 1 in close],
              "calm": [i for i in range(len(watched)) if i + 1 not in close]}
    for phase, steps in phases.items():
        if not steps:
            continue
        # its own work, over the plain steps of the same batches
        work = sum(own[i] for i in steps) / sum(plain[i] for i in steps)
        # whole steps: blocks of sample_every consecutive watched steps (one measuring step
        # each), each block's time over its plain steps'; the median of the blocks
        blocks: dict[int, list[int]] = {}
        for i in steps:
            blocks.setdefault(i // watcher.sample_every, []).append(i)
        full = [b for b in blocks.values() if len(b) == watcher.sample_every] or list(blocks.values())
        whole = [statistics.median(sum(variant[i] for i in b) / sum(plain[i] for i in b) for b in full)
                 for variant in (watched, again)]
        result[phase] = (work, whole[0], whole[1], len(steps))
    return result


@contextlib.contextmanager
def warnings_off():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # detect_anomaly warns on every use
        yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--size", type=int, default=128, help="slice size in pixels")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--token-rows", type=int, default=300_000, help="rows of the token audit (5.)")
    report = _docs.Report("bench_guard", parser)
    args = parser.parse_args()
    report.start(args)
    files, rounds = (32, 2) if args.quick else (56, 15)

    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        root = Path(tmp)
        names = write_slices(root, files, args.size)
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
        print(f"labelguard.torch benchmark: torch {torch.__version__}, "
              f"{torch.get_num_threads()} intra-op threads, CPU, load average {load} at start")
        print(f"data: {files} Swin-Unet style .npz slices {args.size}x{args.size} (float32 labels, "
              f"{NUM_CLASSES} classes), batch {args.batch_size}, small conv net")

        guard_result = bench_guard(root, names, rounds, args.batch_size)
        overhead = guard_result["ratio guarded"] - 1
        noise = guard_result["ratio again"] - 1
        print("\n1. guard(): training loop, DataLoader with 2 workers, plain, guarded and a second "
              f"plain loader's epochs in turn ({rounds} each)")
        print(f"   plain dataset     {guard_result['plain'] * 1e3:8.2f} ms/step (best epoch median)")
        print(f"   guarded dataset   {guard_result['guarded'] * 1e3:8.2f} ms/step (best epoch median)   "
              f"{(guard_result['guarded'] / guard_result['plain'] - 1) * 100:+.1f} %")
        print(f"   overhead {overhead * 100:+.1f} % (median of the per-round guarded/plain ratios; "
              "target <= 3 %)")
        print(f"   noise floor {noise * 100:+.1f} % (the same ratio for a second plain loader)")
        report.row("baseline: plain dataset, DataLoader with 2 workers", f"{guard_result['plain'] * 1e3:.2f} ms a step")
        report.row("`guard()`ed dataset (median of the per-round ratios)",
                   f"{guard_result['guarded'] * 1e3:.2f} ms a step", f"{overhead * 100:+.1f} %")
        report.row("a second plain loader (the noise floor)", "", f"{noise * 100:+.1f} %")
        report.row("the guard's check per sample, in the main process", f"{guard_result['check'] * 1e6:.0f} us")
        print(f"   check per sample  {guard_result['check'] * 1e6:8.0f} us, timed in the main process "
              f"(loading the sample: {guard_result['load'] * 1e6:.0f} us); in the training process it "
              f"would be {guard_result['check'] * args.batch_size / guard_result['plain'] * 100:.2f} % "
              "of a step")

        batches = memory_batches(root, names, args.batch_size, count=4 if args.quick else 10)
        steps, tracer_work = bench_step_tools(batches, rounds=1 if args.quick else 4)
        print("\n2./3. per-step tools on in-memory batches, every variant on each batch in turn "
              "(median step time; median of the per-batch ratios to the plain step)")
        for name, (value, ratio) in steps.items():
            print(f"   {name:30s} {value * 1e3:8.2f} ms/step   {ratio:5.2f}x")
            report.row(f"in-memory step: {name}", f"{value * 1e3:.2f} ms", f"{ratio:.2f}x")
        trace, anomaly = steps["trace_nonfinite"][1] - 1, steps["detect_anomaly"][1] - 1
        floor = steps["plain again (noise floor)"][1] - 1
        print(f"\n   trace_nonfinite overhead {trace * 100:+.1f} % (target <= 5 %; noise floor {floor * 100:+.1f} %), "
              f"its own work {tracer_work * 100:.1f} % of a plain step; detect_anomaly {anomaly * 100:+.1f} %")

        watched = bench_watch(batches, rounds=2 if args.quick else 15)
        plain, count = watched["plain step"]
        print(f"\n4. watch(model, optimizer): plain, a second plain and watched steps on each batch in turn "
              f"({count:.0f} each; plain step {plain * 1e3:.2f} ms, median)")
        for phase, what in (("calm", "one read per 16 steps, outputs measured on every 4th"),
                            ("close", "every step read back and all outputs measured")):
            if phase in watched:
                work, whole, floor, steps_measured = watched[phase]
                target = " (target <= 2 %)" if phase == "calm" else ""
                print(f"   {phase:5s} ({what}; {steps_measured:.0f} steps): its own work {work * 100:.1f} % of a "
                      f"plain step{target}; whole steps {(whole - 1) * 100:+.1f} % (noise floor "
                      f"{(floor - 1) * 100:+.1f} %)")
                report.row(f"`watch`, {phase} phase: its own work timed in its hooks", "",
                           f"{work * 100:.1f} % of a plain step")
                report.row(f"`watch`, {phase} phase: whole steps (noise floor {(floor - 1) * 100:+.1f} %)", "",
                           f"{(whole - 1) * 100:+.1f} %")
        bench_token_audit(root, 20_000 if args.quick else args.token_rows, repeat=2 if args.quick else 5)
    detection = bench_guard_detection.report(args.quick)
    report.row("`guard()` on a detection set (class ids and boxes)", "", f"{detection * 100:+.1f} %")
    report.finish()


def bench_token_audit(root: Path, rows: int, repeat: int) -> None:
    """5.: the token audit's rows/s against a pyarrow scan of the same columns, best of ``repeat``."""
    try:
        import pyarrow  # noqa: F401
        import bench_tokens
    except ImportError as exc:  # pyarrow/datasets absent: the nlp and test extras
        print(f"\n5. token audit: not measured ({exc})")
        return
    path = bench_tokens.write_dataset(root / "tokens", rows)
    scans, audits = [], []
    for _ in range(repeat):
        scans.append(bench_tokens.timed(bench_tokens.scan, path)[0])
        audits.append(bench_tokens.timed(bench_tokens.audit, root / "tokens")[0])
    scan_rate, audit_rate = rows / min(scans), rows / min(audits)
    print(f"\n5. token audit of {rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB), best of {repeat}")
    print(f"   pyarrow scan      {scan_rate:12,.0f} rows/s")
    print(f"   labelguard audit  {audit_rate:12,.0f} rows/s   {audit_rate / scan_rate:.2f}x the scan "
          f"(target >= {bench_tokens.GOAL}x)")


if __name__ == "__main__":
    main()
