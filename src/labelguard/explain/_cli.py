"""``labelguard explain`` and ``labelguard replay``: thin click layers over the library.

Exit codes: explain 0 (recognised or not), replay 0 when no recorded sample fails and 1 when
one does; both 2 for usage errors (missing file, bad MODULE:FUNCTION, unreadable record).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from typing import Iterator

import click

from labelguard.explain._engine import explain
from labelguard.explain._extract import decode
from labelguard.flight import FlightRecordError

OUTPUT_FORMATS = ("text", "json")
# An argument with no spaces that looks like a file name is a file, even when it is missing.
_LOOKS_LIKE_PATH = re.compile(r"^[^\s]*(?:[\\/][^\s]*|\.(?:log|txt|out|err|json))$")


@click.command("explain")
@click.argument("log", required=False, metavar="[FILE|-]")
@click.option("-t", "--text", help="The log itself, pasted as a string (instead of FILE).")
@click.option(
    "-r", "--record", type=click.Path(dir_okay=False),
    help="A flight record written by labelguard.torch.record: names the samples in flight.",
)
@click.option(
    "-f", "--output-format", type=click.Choice(OUTPUT_FORMATS), default="text",
    show_default=True, help="text for people, json for tools.",
)
@click.option(
    "-v", "--verbose", is_flag=True,
    help="Every cause with its evidence, why, check and fix; what the log cannot tell; the steps "
    "that help whatever the cause.",
)
def explain_command(log: str | None, text: str | None, record: str | None, output_format: str, verbose: bool):
    """Explain a PyTorch error log: what failed, the likely causes, how to confirm them.

    FILE is a log or traceback; - (or nothing, with input piped in) reads standard input.
    A pasted string works too, as FILE or with --text. The text names the most likely
    causes, the checks that confirm them and the first fix; -v gives everything.

    \b
    Examples:
      labelguard explain train.log
      labelguard explain -v train.log
      python train.py 2>&1 | tail -n 200 | labelguard explain -
      labelguard explain 'Assertion `t >= 0 && t < n_classes` failed.'
      labelguard explain crash.log --record flight.json --output-format json
    """
    content = _read_log(log, text)
    if not content.strip():
        source = ("--text" if text is not None else "standard input" if log in (None, "-")
                  else log if os.path.isfile(log) else "the text given")
        raise click.UsageError(f"the log ({source}) is empty: nothing to explain; give the output of the failed "
                               "run, including the lines above the traceback")
    try:
        result = explain(content, record=record)
    except FlightRecordError as exc:
        raise click.BadParameter(str(exc), param_hint="--record") from None
    if output_format == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        from labelguard.explain._render import render_explanation

        click.echo(render_explanation(result, verbose=verbose), nl=False)


@click.command("replay")
@click.argument("record", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--dataset-factory", required=True, metavar="MODULE:FUNCTION",
    help="A function returning the dataset (or the DataLoader) of the crashed run.",
)
@click.option(
    "--loss", metavar="MODULE:FUNCTION",
    help="A function taking one collated batch and computing the loss on the CPU.",
)
@click.option(
    "--collate-fn", metavar="MODULE:FUNCTION",
    help="The collate function of the crashed run's DataLoader, when the factory returns a dataset "
    "(default: the DataLoader's own, else torch's default_collate).",
)
@click.option("--num-classes", type=click.IntRange(min=1),
              help="Check every sample's target through labelguard.torch.guard.")
@click.option("--ignore-index", type=int, multiple=True,
              help="A target value the loss ignores (e.g. 255); repeatable.")
@click.option("--guard-loss", metavar="NAME",
              help="The loss the targets feed, for the guard's checks: cross_entropy, nll, "
              "dice, one_hot, bce, bce_with_logits.")
@click.option("--batches", type=click.IntRange(min=1),
              help="Replay only the newest N recorded batches (default: all kept).")
@click.option(
    "-f", "--output-format", type=click.Choice(OUTPUT_FORMATS), default="text",
    show_default=True, help="text for people, json for tools.",
)
def replay_command(record, dataset_factory, loss, collate_fn, num_classes, ignore_index, guard_loss, batches,
                   output_format):
    """Re-run the samples of a flight RECORD on the CPU to get the precise error.

    The GPUs are hidden from the replay (CUDA_VISIBLE_DEVICES=""), so the dataset and the
    loss run on the CPU, where a bad target raises a Python error naming its value. With
    --num-classes (or --guard-loss) every sample also goes through labelguard.torch.guard.
    Modules are imported from the current directory, as `python -m` would. Exit 1 when a
    recorded sample fails, 2 when no recorded batch could be replayed (torch's default_collate
    cannot collate what the run's loader did: give --collate-fn).

    \b
    Example:
      labelguard replay flight.json --dataset-factory train:make_dataset \\
          --loss train:cpu_loss --num-classes 3 --ignore-index 255
    """
    from labelguard.explain._replay import replay

    ignore = tuple(ignore_index) or None
    with _cpu_only(), _current_directory_importable():
        try:
            report = replay(
                record, dataset_factory, loss=loss, collate_fn=collate_fn, num_classes=num_classes,
                ignore_index=ignore, guard_loss=guard_loss, batches=batches,
            )
        except FlightRecordError as exc:
            raise click.BadParameter(str(exc), param_hint="RECORD") from None
        except (ValueError, ImportError) as exc:
            raise click.UsageError(f"{type(exc).__name__}: {exc}") from None
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        from labelguard.explain._render import render_replay

        click.echo(render_replay(report), nl=False)
    # 1: a recorded sample (or batch) fails; 2: nothing could be replayed (give the collate_fn).
    sys.exit(1 if report.failed else 0 if report.replayed or not report.batches else 2)


def _read_log(log: str | None, text: str | None) -> str:
    if text is not None:
        if log is not None:
            raise click.UsageError("give the log as FILE or with --text, not both")
        return text
    if log is None or log == "-":
        # Its bytes where it has them, so that decode() tells the encoding (UTF-16, GB18030).
        stdin = getattr(sys.stdin, "buffer", sys.stdin)
        if stdin is None:
            raise click.UsageError("no standard input to read the log from: give a log FILE or --text")
        if log is None and stdin.isatty():
            raise click.UsageError("give a log FILE, - to read standard input, or --text")
        data = stdin.read()
        return data if isinstance(data, str) else decode(data)
    if os.path.isfile(log):
        with open(log, "rb") as handle:
            return decode(handle.read())
    if _LOOKS_LIKE_PATH.match(log):
        raise click.BadParameter(f"{log}: no such file", param_hint="FILE")
    return log


@contextlib.contextmanager
def _cpu_only() -> Iterator[None]:
    previous = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = previous


@contextlib.contextmanager
def _current_directory_importable() -> Iterator[None]:
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
