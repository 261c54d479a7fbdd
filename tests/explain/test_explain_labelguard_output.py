"""explain reads what labelguard.torch prints today: the tracer's and the watch's LG502, run live.

The evidence of an LG502 (a NaN input, non-finite weights, exploded activations, an unsafe
operation, growth or no growth before it) is read from the sentences labelguard.torch/_nonfinite.py
and rules/lg502.py write (``_NONFINITE_READINGS`` in explain/_evidence.py). These tests run the
tracer and the watch on tiny CPU models until each of those messages is printed, then check that
every reading still matches a message the tools print and that explain reads each one as the
evidence it is: a rewording of the tools fails here instead of silently dropping the evidence.
The watch's messages are read through the standard logging format and through Rich's handler.
"""

from __future__ import annotations

import io
import logging
import traceback
from typing import Callable

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from labelguard.explain import explain  # noqa: E402
from labelguard.explain._evidence import _NONFINITE_READINGS, gather  # noqa: E402
from labelguard.explain._extract import normalise  # noqa: E402
from labelguard.torch import NonFiniteError, trace_nonfinite, watch  # noqa: E402


def raised(run: Callable[[], object]) -> str:
    """The traceback a run that raises NonFiniteError prints."""
    try:
        run()
    except NonFiniteError:
        return traceback.format_exc()
    raise AssertionError("the tracer raised nothing")


def traced(model: nn.Module, batch: torch.Tensor, loss: Callable | None = None) -> str:
    def run():
        with trace_nonfinite(model) as tracer:
            output = model(batch)
            if loss is not None:
                tracer.check(loss(output))
    return raised(run)


def logged(run: Callable[[], object], handler: logging.Handler | None = None) -> str:
    """What the labelguard.torch logger printed while ``run`` ran, in logging's basic format (or
    through ``handler``, writing to the stream returned)."""
    stream = io.StringIO()
    if handler is None:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
    else:
        handler.console.file = stream
    logger = logging.getLogger("labelguard.torch")
    logger.addHandler(handler)
    try:
        run()
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


class Log(nn.Module):
    """log(0) of finite inputs: an unsafe operation in a module of its own."""

    def forward(self, x):
        return torch.log(x - x)


class LogBeforeHead(nn.Module):
    """log(0) in the forward of a module, before it calls its submodule."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.log(x - x))


def batch(nan: bool = False) -> torch.Tensor:
    values = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    if nan:
        values[1, 2] = float("nan")
    return values


def linear(*scales: float) -> nn.Sequential:
    """Linear layers whose weights are scaled, to explode the activations they pass on."""
    torch.manual_seed(0)
    model = nn.Sequential(*(nn.Linear(4, 4) for _ in scales), nn.Linear(4, 2))
    with torch.no_grad():
        for layer, scale in zip(model, scales):
            layer.weight.mul_(scale)
    return model


def nan_weight() -> str:
    model = linear(1.0)
    with torch.no_grad():
        model[1].weight[0, 1] = float("nan")
    return traced(model, batch())


def regression_training(lr: float, steps: int, poison_last: bool = False) -> Callable[[], None]:
    """SGD on a linear regression, watched; with ``poison_last`` one more step on a batch with a NaN."""
    def run():
        generator = torch.Generator().manual_seed(1)
        x = torch.randn(64, 8, generator=generator)
        y = x.sum(1, keepdim=True)
        torch.manual_seed(0)
        model = nn.Linear(8, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        watcher = watch(model, optimizer, every=4).attach()
        batches = [x] * steps + ([torch.where(torch.arange(8) == 2, torch.nan, x)] if poison_last else [])
        for inputs in batches:
            loss = (model(inputs) - y).square().mean()
            watcher.observe(loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        watcher.detach()
        watcher.report()
    return run


# What each run prints, and the evidence its LG502 is.
PRINTED = {
    "nan input": (lambda: traced(linear(1.0), batch(nan=True)), "bad-input-reported"),
    "nan weight": (nan_weight, "nonfinite-weights"),
    "exploded activations": (lambda: traced(linear(1e20, 1e20), batch()), "divergence-reported"),
    "log(0) in a module": (lambda: traced(nn.Sequential(nn.Linear(4, 4), Log()), batch()), "unsafe-op-reported"),
    "log(0) in a forward": (lambda: traced(nn.Sequential(nn.Linear(4, 4), LogBeforeHead()), batch()),
                            "unsafe-op-reported"),
    "log(0) in the loss": (lambda: traced(linear(1.0), batch(), lambda out: torch.log(out - out).sum()),
                           "unsafe-op-reported"),
    "loss of exploded outputs": (lambda: traced(linear(1e20), batch(), lambda out: out.square().sum()),
                                 "divergence-reported"),
    "watch: growth, then overflow": (lambda: logged(regression_training(lr=5.0, steps=40)), "divergence-reported"),
    "watch: no growth, then NaN": (lambda: logged(regression_training(lr=0.01, steps=10, poison_last=True)),
                                   "no-growth-reported"),
}


@pytest.fixture(scope="module")
def printed() -> dict[str, str]:
    return {name: produce() for name, (produce, _) in PRINTED.items()}


def lg502_lines(text: str) -> list[str]:
    return [line for line in normalise(text).split("\n") if "LG502" in line]


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_explain_reads_each_lg502_the_tools_print_as_its_evidence(printed, name):
    (line,) = lg502_lines(printed[name])
    keys = [e.key for e in gather(line)]
    assert PRINTED[name][1] in keys, (keys, line)


def test_every_reading_still_matches_a_message_the_tools_print(printed):
    """Each wording a reading looks for is one the tracer or the watch prints today; one they no
    longer print is a reading that reads nothing (update it to the tools' words)."""
    messages = [line for text in printed.values() for line in lg502_lines(text)]
    for key, words, _ in _NONFINITE_READINGS:
        for word in words:
            assert any(word in message for message in messages), f"{key}: no message says {word!r}"


def test_a_traced_nan_input_ranks_the_sample_first(printed):
    first = explain(printed["nan input"]).causes[0]
    assert (first.id, first.likelihood) == ("nan-in-input", "likely")


def test_the_watch_through_richs_handler_is_read_as_its_reports():
    rich_logging = pytest.importorskip("rich.logging")
    console = pytest.importorskip("rich.console")
    handler = rich_logging.RichHandler(console=console.Console(width=80))
    text = logged(regression_training(lr=5.0, steps=40), handler) + "RuntimeError: Loss is inf, stopping training\n"
    assert "WARNING  LG508" in text and len(text.split("\n")) > 8  # wrapped as Rich prints it
    result = explain(text)
    assert result.matches[0].entry == "labelguard-finding"
    first = result.causes[0]
    assert (first.id, first.likelihood) == ("training-diverged", "likely")
    assert first.support[0].startswith("line 1: labelguard reported LG508: training is diverging (step 2): ")
    (line,) = lg502_lines(text)
    assert "divergence-reported" in [e.key for e in gather(line)]
