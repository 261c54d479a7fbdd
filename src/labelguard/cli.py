"""The ``labelguard`` command line: a thin layer over the library.

Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage or internal error (a
missing optional extra included), 130 interrupted (Ctrl-C). A reader that stops reading
(``labelguard rules | head -1``) changes none of them and gets no message: the command's
output goes nowhere from then on.
"""

from __future__ import annotations

import contextlib
import json
import gc
import logging
import os
import sys
import traceback
from typing import TYPE_CHECKING

import click

from labelguard._cli_options import ImportedChoice, storage_options_of
from labelguard._version import __version__
from labelguard.core import storage
from labelguard.errors import LabelguardError, SpecError
from labelguard.output._style import COLOR_CHOICES

if TYPE_CHECKING:  # imported where used: numpy comes with it, which --version and rules do without
    from labelguard.core.spec import LabelSpec

# The command line does no linear algebra: numpy's OpenBLAS starts one thread instead of one
# per core (its start-up threads cost some 70 ms of CPU and 10-25 ms of a command's start on
# 2 cores), unless the user set the number. The library leaves its caller's process alone.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

FAIL_ON = ("error", "warning", "info", "never")


class LabelguardGroup(click.Group):
    """Turns labelguard's own exceptions into exit 2 with one clear line, never a traceback.

    Commands that live in other packages are imported only when they run, so that
    ``labelguard audit`` does not pay for them at start-up.
    """

    lazy_commands = {
        "explain": ("labelguard.explain._cli", "explain_command"),
        "replay": ("labelguard.explain._cli", "replay_command"),
        "fix": ("labelguard.fix._cli", "fix"),
        "harmonize": ("labelguard.fix._cli", "harmonize_command"),
    }

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx, name):
        if name in self.lazy_commands:
            import importlib

            module, attribute = self.lazy_commands[name]
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            _tell("labelguard: interrupted")
            ctx.exit(130)
        except BrokenPipeError as exc:
            gone = [stream for stream in (sys.stdout, sys.stderr) if _reader_gone(stream)]
            if not gone:  # a pipe of something else (a subprocess, a socket): a failure like any other
                _tell(_printable(f"labelguard: error: {exc}"))
                ctx.exit(2)
            # The reader of the output stopped reading (head -1): what it read is all it wanted.
            # The exit code stays the one the command decided before it wrote (audit: what it
            # found), and is 0 for one that decided none (rules): it did what it was asked.
            for stream in gone:
                _to_devnull(stream)
            ctx.exit(ctx.meta.get(_EXIT_CODE, 0))
        except (LabelguardError, ValueError, OSError) as exc:
            _tell(_printable(f"labelguard: error: {exc}"))
            ctx.exit(2)
        except Exception as exc:  # an internal bug: short message, traceback only on request
            if os.environ.get("LABELGUARD_DEBUG"):
                traceback.print_exc()
            _tell(_printable(f"labelguard: internal error: {type(exc).__name__}: {exc} "
                             "(set LABELGUARD_DEBUG=1 for the traceback)"))
            ctx.exit(2)
        finally:
            # Output still buffered goes out now, while a closed pipe can be told apart: at the
            # interpreter's exit it would print "BrokenPipeError" and exit 120.
            _flush_stdout(ctx)


# Where a command puts the exit code it decided before writing its output (ctx.meta is shared
# by every context of one command line): a reader that stops reading does not change it.
_EXIT_CODE = "labelguard.exit_code"


def _flush_stdout(ctx: click.Context) -> None:
    """Standard output's buffer written out; a reader gone sends the rest to the null device,
    a failed write (a full disk) is an error, exit 2."""
    stream = sys.stdout
    if stream is None:  # no standard output at all (``>&-``): nothing was written
        return
    try:
        stream.flush()
    except BrokenPipeError:
        _to_devnull(stream)
    except ValueError:  # closed by the command: what it wrote was flushed when it was closed
        return
    except OSError as exc:
        _to_devnull(stream)
        _tell(_printable(f"labelguard: error: writing the output: {exc}"))
        ctx.exit(2)


def _tell(message: str) -> None:
    """``message`` on standard error, where a reader that stopped reading it (``2>&1 | head``)
    or a closed standard error is no error: the message goes nowhere, the exit code stays."""
    try:
        click.echo(message, err=True)
    except BrokenPipeError:
        _to_devnull(sys.stderr)
    except ValueError:  # standard error closed by the command
        pass


def _reader_gone(stream) -> bool:
    """Whether ``stream`` writes into a pipe whose reader has closed it; True where that cannot
    be asked of a stream (no poll, no file descriptor): a broken pipe is then taken for its."""
    if stream is None:
        return False
    try:
        import select

        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, ValueError, OSError):
        return True


def _to_devnull(stream) -> None:
    """``stream`` written to the null device from now on, at the level of its file descriptor:
    the output still buffered, and the flush at the interpreter's exit, go there without an
    error."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, ValueError, OSError):  # a stream in memory (a test's runner): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


@click.group(cls=LabelguardGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="labelguard")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """Find the labels that trigger "CUDA error: device-side assert triggered"."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="labelguard: %(levelname)s: %(message)s")
    cluster_logs = _ClusterLogs((logging.CRITICAL, logging.WARNING, logging.NOTSET)[min(verbose, 2)])
    for handler in logging.getLogger().handlers:
        handler.addFilter(cluster_logs)
        handler.addFilter(_printable_log)


def _printable(text: str) -> str:
    """Text from the data as every report shows it (:func:`labelguard.core.text.printable`),
    imported when something is said: ``--version`` and ``--help`` do without it."""
    from labelguard.core.text import printable

    return printable(text)


def _printable_log(record: logging.LogRecord) -> bool:
    """A log line names files of the data: shown escaped, as the report shows them."""
    try:
        message = record.getMessage()
    except Exception:  # a record its handler cannot format either: it says so itself
        return True
    record.msg, record.args = _printable(message), ()
    return True


class _ClusterLogs(logging.Filter):
    """A Dask cluster's own log (its start, connections, restarts) only when asked for: -v
    for its warnings, -vv for all of it. A filter on the handlers, since Dask sets its loggers'
    levels when it is imported, after this."""

    LOGGERS = ("distributed", "tornado", "bokeh")

    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level or not record.name.startswith(self.LOGGERS)


def _int_list(values: tuple[str, ...] | str | None) -> tuple[int, ...]:
    if not values:
        return ()
    if isinstance(values, str):
        values = (values,)
    out = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if part:
                try:
                    out.append(int(part))
                except ValueError:
                    raise click.BadParameter(f"{part!r} is not an integer") from None
    return tuple(out)


def _cli_spec(num_classes, values, classes, classes_file, ignore_index, reduce_zero_label, background,
              sizes=None, masks_hold=None) -> LabelSpec:
    from labelguard.core.spec import LabelSpec

    names = None
    if classes_file:
        try:
            with open(classes_file, encoding="utf-8-sig") as handle:
                names = tuple(line.strip() for line in handle if line.strip())
        except OSError as exc:
            raise click.BadParameter(f"cannot read {classes_file}: {exc.strerror}", param_hint="--classes-file") \
                from None
    if classes is not None:
        parts = [c.strip() for c in classes.split(",")]
        if len(parts) > 1 and not parts[-1]:
            parts.pop()  # "a,b," as shells and editors leave it
        empty = [i for i, part in enumerate(parts) if not part]
        if empty:
            # Dropping an empty name would shift every later class to another index.
            raise click.BadParameter(
                f"{classes!r} holds {len(empty)} empty class {'name' if len(empty) == 1 else 'names'} "
                f"(position {', '.join(str(i) for i in empty[:5])}); give one name per class index, "
                "comma separated", param_hint="--classes")
        names = tuple(parts)
    origins = []
    if names:
        origins.append(("classes", "--classes" if classes else f"--classes-file {classes_file}"))
    if values:
        origins.append(("values", "--values"))
    if num_classes is not None:
        origins.append(("num_classes", f"--num-classes {num_classes}"))
    if ignore_index:
        origins.append(("ignore_index", "--ignore-index " + ",".join(str(v) for v in _int_list(ignore_index))))
    if background is not None:
        origins.append(("background", f"--background {background}"))
    if reduce_zero_label:
        origins.append(("reduce_zero_label", "--reduce-zero-label"))
    if sizes is not None:
        origins.append(("sizes", f"--sizes {sizes}"))
    if masks_hold is not None:
        origins.append(("masks_hold", "--instances" if masks_hold == "instances" else "--semantic"))
    try:
        return LabelSpec(
            classes=names, values=_int_list(values) or None, num_classes=num_classes,
            ignore=_int_list(ignore_index), background=background if background is not None else 0,
            reduce_zero_label=reduce_zero_label, sizes=sizes, masks_hold=masks_hold,
        ).with_origins(origins)
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None


def spec_options(func):
    """The label spec flags shared by audit and init."""
    options = [
        click.option("--num-classes", type=click.IntRange(min=1), help="Number of classes, background included."),
        click.option("--values", help="Legal values, e.g. 0,1,2 (when they are not 0..N-1)."),
        click.option("--classes", help="Class names in index order, comma separated."),
        click.option("--classes-file", type=click.Path(dir_okay=False), help="Class names, one per line."),
        click.option("--ignore-index", multiple=True, help="A value the loss ignores (e.g. 255); repeatable."),
        click.option("--reduce-zero-label", is_flag=True,
                     help="mmsegmentation's option: 0 becomes 255 (ignored), other values shift down by one."),
        click.option("--background", type=int, default=None, help="The background value (default 0)."),
        click.option("--sizes", metavar="equal|any|FACTOR",
                     help="How a mask's size relates to its image's and to the other samples': 'equal' (the "
                          "default: LG206, LG213), 'any' (sizes differ on purpose: neither is checked), or a "
                          "scale factor (2: the mask is twice its image's size, as super-resolution pairs)."),
        click.option("--instances", "masks_hold", flag_value="instances", default=None,
                     help="Masks hold instance ids (one id per object, 0 background: StarDist, Cellpose): each "
                          "object is checked (LG212), no class rule judges the ids. Without --instances or "
                          "--semantic, each mask's own evidence decides."),
        click.option("--semantic", "masks_hold", flag_value="classes",
                     help="Masks hold class ids: masks that look like instance ids are LG212."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
                     help="Your labelguard.toml / pyproject.toml: all its settings apply, above the project "
                          "config (one found at or above the data sets the label spec and layout hints only)."),
        click.option("--no-config", is_flag=True,
                     help="Ignore labelguard.toml / pyproject.toml found at or above the data."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def limit_options(func):
    """The read limits shared by audit and init."""
    from labelguard.core.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_PIXELS

    options = [
        click.option("--max-pixels", type=click.IntRange(min=1),
                     help=f"Most elements one array may declare (pixels, voxels); a file over it is LG001 "
                          f"(default {DEFAULT_MAX_PIXELS:,}, or [audit] max_pixels)."),
        click.option("--max-file-bytes", type=click.IntRange(min=1),
                     help=f"Most bytes one file may be read or decoded into; a file over it is LG001 "
                          f"(default {DEFAULT_MAX_FILE_BYTES:,}, or [audit] max_file_bytes)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


class PathOrUrl(click.Path):
    """A local path, checked as :class:`click.Path` checks it (a ``file://`` URL is one), or
    a URL of object storage (``s3://bucket/prefix``), checked when the audit grants it."""

    def convert(self, value, param, ctx):
        if storage.in_object_storage(value):
            return value
        return super().convert(storage.local_path(value), param, ctx)


def layout_options(func):
    options = [
        click.option("--format", "layout", help="Force a layout (see `labelguard formats`)."),
        click.option("--images", type=PathOrUrl(file_okay=False),
                     help="Folder of images to pair (with a PATH: a folder inside it, relative to it)."),
        click.option("--masks", type=PathOrUrl(file_okay=False),
                     help="Folder of masks to pair (with a PATH: a folder inside it, relative to it)."),
        click.option("--list", "lists", multiple=True, type=PathOrUrl(exists=True, dir_okay=False),
                     help="A file list (train.txt); only listed files are audited. Repeatable."),
        click.option("--key", help="Array key of the label in NPZ/HDF5 files."),
        click.option("--color-map", type=PathOrUrl(exists=True, dir_okay=False),
                     help="Colour map file (dataset_meta.json, label_colors.txt, labelmap.txt, CSV)."),
        click.option("--path-column", help="CSV column holding the file path."),
        click.option("--label-column", help="CSV column holding the label."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _options(layout, images, masks, lists, key, color_map, path_column, label_column, image_key=None):
    from labelguard.layouts import AuditOptions

    return AuditOptions(format=layout, images=images, masks=masks, lists=tuple(lists), key=key,
                        color_map=color_map, path_column=path_column, label_column=label_column,
                        image_key=image_key)


@contextlib.contextmanager
def _progress(enabled: bool):
    """A rich progress bar on stderr when it is a terminal; yields a (done, total) callback or None.

    The bar is redrawn from the callback, not by a refresh thread: with no other thread
    running, the worker pool can start by a plain fork.
    """
    if not enabled:
        yield None
        return
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("audit", total=None)
        last = [0.0]

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)
            now = time.monotonic()
            if now - last[0] > 0.1 or done == total:
                last[0] = now
                bar.refresh()

        yield update


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@spec_options
@layout_options
@click.option("--image-key",
              help="Array key of the image in NPZ/HDF5 files (its shape is checked against the label's).")
@click.option("-f", "--output-format", default="text", show_default=True,
              help="Report format: text, concise (one line per finding), json, sarif, junit, github, html or "
                   "baseline (see `labelguard formats`). On a terminal the text report's long lines wrap to its "
                   "width; piped or written with -o, each stays one line.")
@click.option("-q", "--quiet", is_flag=True,
              help="text: only the findings and one result line (no header, tables, notes or next steps); concise: "
                   "only the findings. In every format: no progress bar and no 'report written to' on stderr "
                   "(warnings and errors still show); the exit code is the same.")
@click.option("--color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
              help="Severities and codes in colour (text and concise): 'auto' on a terminal unless NO_COLOR is set, "
                   "'always' (also piped or written with -o), 'never'.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False),
              help="Findings this file holds (`labelguard baseline write`, or a JSON report) are known: "
                   "reported, never failing the run; new ones fail it.")
@click.option("--html-thumbnails", type=click.IntRange(min=0), default=None,
              help="Most pictures of flagged files per code in the HTML report (default 6).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the report to this file.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default=None,
              help="Exit 1 when a finding is at or above this severity (default: error).")
@click.option("--sample", type=click.IntRange(min=1), help="Audit a seeded random subset of N files.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample.")
@click.option("-j", "--workers", type=click.IntRange(min=1), help="Processes (default: all cores).")
@click.option("--write-classes", type=click.Path(dir_okay=False),
              help="Write the class names found, one per line, sorted (a file that exists needs --force).")
@click.option("--force", is_flag=True, help="Let --write-classes replace a file that exists.")
@click.option("--severity", "severity_overrides", multiple=True, metavar="CODE=LEVEL",
              help="Change a code's severity, e.g. LG205=warning. Repeatable.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--check-images", type=ImportedChoice("labelguard.readers.integrity", "CHECK_MODES"), default=None,
              help="How the images and volumes the data references are checked to be whole (LG008): 'structure' "
                   "(the default: each file's own structure, end markers, chunk checksums, no pixel decoded), "
                   "'full' (a complete decode, slower) or 'off' (default: [audit] check_images of a --config file).")
@limit_options
@click.option("--cache-dir", type=click.Path(file_okay=False),
              help="Folder of the per-file result cache (default: [audit] cache_dir, else the user's cache folder; "
                   "see `labelguard cache info`).")
@click.option("--no-cache", is_flag=True, help="Read and check every file; use and store no cached result.")
@click.option("--model-config", type=click.Path(exists=True),
              help="A model's config.json (or its folder): token ids, lengths, token types and labels are "
                   "checked against its tables (tokenized datasets).")
@click.option("--tokenizer", type=click.Path(exists=True),
              help="A tokenizer.json or vocab.txt (or its folder): its size is compared with the model's embedding.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default=None,
              help="Where the per-file work runs: this machine (local, the default) or a Dask cluster "
                   "(dask: needs labelguard[dask]; --scheduler, else a local cluster of --workers processes).")
@click.option("--scheduler", metavar="tcp://HOST:PORT",
              help="The Dask scheduler of an existing cluster, for --engine dask (default: [audit] scheduler).")
@click.option("--storage-options", "storage_options_json", metavar="JSON",
              help="fsspec storage options for PATHs that are URLs (s3://bucket/prefix, gs://...), e.g. "
                   "'{\"endpoint_url\": \"http://localhost:9000\"}'; by default the backend's own configuration "
                   "(for S3: the AWS_* environment variables, ~/.aws).")
def audit(paths, num_classes, values, classes, classes_file, ignore_index, reduce_zero_label, background, sizes,
          masks_hold,
          config_file, no_config, layout, images, masks, lists, key, color_map, path_column, label_column,
          image_key, output_format, quiet, color, baseline_file, html_thumbnails, output_file, fail_on, sample, seed,
          workers, write_classes, force, severity_overrides, no_progress, check_images, max_pixels, max_file_bytes,
          cache_dir, no_cache, model_config, tokenizer, engine, scheduler, storage_options_json):
    """Audit the datasets at PATHS against the label spec.

    \b
    Examples:
      labelguard audit data/Synapse --list lists/train.txt --num-classes 9
      labelguard audit VOCdevkit/VOC2012 --ignore-index 255
      labelguard audit --images data/imgs --masks data/masks --num-classes 2
      labelguard audit tokenized/ --model-config model/ --tokenizer model/tokenizer.json
      labelguard audit s3://bucket/dataset --num-classes 21
    """
    # The cyclic collector would run dozens of times while the audit's modules load (numpy's
    # among them), finding nothing to free: it waits until they are loaded, which then stay
    # out of its later passes (gc.freeze). Some 5 ms of the start-up.
    gc.disable()
    try:
        from labelguard._audit import audit as run_audit
        from labelguard.config import known_code
        from labelguard.core.findings import Severity
        from labelguard.output import get_formatter

        get_formatter(output_format).check_available()
    finally:
        gc.freeze()
        gc.enable()
    if not paths:
        if not masks:
            raise click.UsageError("give a dataset PATH (or --masks DIR)")
        paths = (masks,)
    storage_options = storage_options_of(storage_options_json)
    paths = tuple(storage.local_path(path) for path in paths)
    access = storage.access_for([p for p in (*paths, images, masks, *lists, color_map) if p], storage_options)
    if access is not None:
        storage.grant(access)
    for path in (*paths, *lists, color_map):
        if path and storage.url_scheme(path):
            why = storage.missing_reason(path)
            if why:
                raise click.UsageError(f"{path}: {why}")
        elif path and not os.path.exists(path):
            raise click.UsageError(f"{path}: no such file or directory")
    if cache_dir and no_cache:
        raise click.UsageError("--cache-dir and --no-cache contradict each other: give one")
    if scheduler and workers is not None:
        raise click.UsageError("--workers sizes the local cluster that --engine dask starts; with --scheduler the "
                               "cluster's own workers run the audit: drop --workers")
    if write_classes and os.path.lexists(write_classes) and not force:
        raise click.UsageError(f"--write-classes {write_classes}: the file exists; pass --force to replace it")
    images, masks = _folders_in(paths, images, masks)
    spec = _cli_spec(num_classes, values, classes, classes_file, ignore_index, reduce_zero_label, background, sizes,
                     masks_hold)
    if model_config or tokenizer:
        from dataclasses import replace

        from labelguard.readers.tokens import token_spec_from_files

        spec = replace(spec, tokens=token_spec_from_files(model_config, tokenizer))
    overrides = {}
    for item in severity_overrides:
        code, _, level = item.partition("=")
        try:
            overrides[known_code(code, f"--severity {item}")] = Severity.parse(level)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--severity") from None
    show_progress = not no_progress and not quiet and sys.stderr.isatty()
    with _progress(show_progress) as progress:
        report = run_audit(
            list(paths), spec, options=_options(layout, images, masks, lists, key, color_map, path_column,
                                                label_column, image_key),
            config_file=config_file, use_project_config=not no_config,
            workers=workers if workers is not None else "config", sample=sample, seed=seed,
            severity=overrides, progress=progress, max_pixels=max_pixels, max_file_bytes=max_file_bytes,
            cache=False if no_cache else cache_dir, engine=engine, scheduler=scheduler,
            storage_options=storage_options, check_images=check_images,
        )
    _warn_of_configs(report.configs)
    seed_given = click.get_current_context().get_parameter_source("seed") is not click.core.ParameterSource.DEFAULT
    if seed_given and report.sampled is None:
        report.notes.append(f"--seed {seed} was not used: nothing was sampled "
                            + ("(--sample covers every file)" if sample or report.settings.get("sample")
                               else "(it seeds --sample N)"))
    names = sorted(report.summary.class_objects)
    if write_classes and not names:
        why = " (masks hold values, not names)" if report.summary.kinds.get("mask") else ""
        report.notes.append(f"--write-classes: {write_classes} not written: no class names were found{why}")
    elif write_classes:
        from labelguard.core.text import plural
        from labelguard.fix._journal import atomic_write

        atomic_write(write_classes, "".join(f"{name}\n" for name in names).encode("utf-8"))
        if not quiet:
            _tell(f"wrote {plural(len(names), 'class name')} to {write_classes}")
    if force and not write_classes:
        report.notes.append("--force was not used: it lets --write-classes replace a file that exists")
    if baseline_file:
        from labelguard.baseline import match_baseline, read_baseline

        match_baseline(report, read_baseline(baseline_file))
    fail_on = fail_on or report.settings.get("fail_on", "error")
    format_options = {"fail_on": fail_on}
    if html_thumbnails is not None:
        format_options["thumbnails"] = html_thumbnails
        if "thumbnails" not in get_formatter(output_format).options:
            report.notes.append(f"--html-thumbnails {html_thumbnails} was not used: it sets the pictures of "
                                "--output-format html")
    from labelguard.output._style import terminal_width, wants_color

    # Decided before a word is written: a reader that stops reading (``2>&1 | head -1``) does not change it.
    code = report.exit_code(fail_on)
    click.get_current_context().meta[_EXIT_CODE] = code
    stream = None if output_file else sys.stdout
    format_options.update(color=wants_color(color, stream), quiet=quiet)
    if stream is not None and (width := terminal_width(stream)):
        format_options["width"] = width
    if output_file:
        report.write(output_format, output_file, **format_options)
    elif stream is not None:  # None: standard output is closed (``>&-``), the exit code says it all
        try:
            report.write(output_format, stream, **format_options)
            stream.flush()
        except BrokenPipeError:
            if not _reader_gone(stream):
                raise
            _to_devnull(stream)  # the reader stopped reading (head -1): the exit code still says what was found
    if output_file and not quiet:
        _tell(f"report written to {output_file}")
    if report.audited_nothing:
        _tell(_printable(f"labelguard: error: {report.audited_nothing}"))
    sys.exit(code)


@main.group()
def baseline() -> None:
    """Accept the findings a dataset has today; later audits fail only on new ones."""


@baseline.command("write", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("-o", "--output-file", default="labelguard-baseline.json", show_default=True,
              type=click.Path(dir_okay=False), help="The baseline file to write (commit it beside labelguard.toml).")
@click.argument("audit_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def baseline_write(ctx, output_file: str, audit_args: tuple[str, ...]) -> None:
    """Audit PATHS (with any `labelguard audit` option) and write every finding's identity.

    \b
    Then gate new data on it:
      labelguard baseline write data/ -o labelguard-baseline.json
      labelguard audit data/ --baseline labelguard-baseline.json
    """
    taken = {"-f", "--output-format", "-o", "--output-file", "--baseline", "--fail-on"}
    given = sorted(arg.split("=", 1)[0] for arg in audit_args if arg.split("=", 1)[0] in taken)
    if given:
        raise click.UsageError(f"{', '.join(given)}: baseline write chooses the format and file itself "
                               "(give the file with its own -o)")
    args = [*audit_args, "--output-format", "baseline", "--output-file", output_file, "--fail-on", "never"]
    with audit.make_context("audit", args, parent=ctx) as audit_context:
        audit.invoke(audit_context)


@main.command("audit-touched", context_settings={"ignore_unknown_options": True})
@click.argument("files", nargs=-1, type=click.UNPROCESSED)
@click.option("-f", "--output-format", default="text", show_default=True,
              help="Report format of each dataset's audit (see `labelguard formats`).")
@click.option("--trust-contracts", is_flag=True,
              help="The datasets' contracts are this repository's own: each labelguard.toml is passed as --config "
                   "(all its settings apply: fail_on, severities...) and the labelguard-baseline.json beside it as "
                   "--baseline. Without it a contract, found with the data, sets the label spec and layout hints "
                   "only, and no baseline is used.")
@click.pass_context
def audit_touched(ctx, files: tuple[str, ...], output_format: str, trust_contracts: bool) -> None:
    """Audit the datasets FILES belong to (the pre-commit hook's entry).

    A dataset is the folder of the nearest labelguard.toml (its contract) at or above a
    file, up to the current folder. With --trust-contracts the contract applies whole and its
    labelguard-baseline.json is used when present. Exits with the highest exit code of the
    audits (0 when no file belongs to a dataset).
    """
    from labelguard.precommit import touched_datasets

    # Unknown options reach FILES (pre-commit passes names that may start with "-"): one that
    # names no file is a mistyped option, never silently taken for a file that is not there.
    unknown = [name for name in files if name.startswith("-") and not os.path.lexists(name)]
    if unknown:
        raise click.UsageError(f"no such option: {', '.join(unknown)} (audit-touched takes -f/--output-format "
                               "and --trust-contracts)")
    worst = 0
    for root, contract, baseline in touched_datasets(files):
        args = [root, "--no-progress", "--output-format", output_format]
        if trust_contracts:
            args += ["--config", contract, *(["--baseline", baseline] if baseline else [])]
        elif baseline:
            click.echo(f"labelguard: {_printable(baseline)} was not used: a baseline found with the data accepts "
                       "findings only when the hook's args say --trust-contracts", err=True)
        click.echo(f"labelguard audit {' '.join(args)}", err=True)
        try:
            with audit.make_context("audit", args, parent=ctx) as audit_context:
                audit.invoke(audit_context)
        except SystemExit as exit_:
            worst = max(worst, exit_.code if isinstance(exit_.code, int) else 2)
    sys.exit(worst)


def _warn_of_configs(uses) -> None:
    """Each setting a config found with the data may not make, on stderr (the report's notes
    say it too): an audit run with other settings than a config says is never silent."""
    for use in uses:
        for warning in use.warnings():
            click.echo(_printable(f"labelguard: warning: {warning}"), err=True)


def _folders_in(paths: tuple[str, ...], images: str | None, masks: str | None) -> tuple[str | None, str | None]:
    """``--images``/``--masks`` checked against the PATH they pair in.

    With a PATH, a relative folder is taken inside it when it exists there (else from the
    current directory), and must lie inside it: pairing folders of another dataset under
    this PATH's name would audit other files than the ones named. ``--images`` alone (where
    COCO, CSV and VOC look for images) may lie anywhere."""
    from labelguard.layouts.paired import flag_folder
    from labelguard.core.paths import inside_root

    given = [(flag, value) for flag, value in (("--images", images), ("--masks", masks)) if value]
    if not given:
        return images, masks
    root = paths[0]
    alone = masks is not None and len(paths) == 1 and storage.abspath(root) == storage.abspath(masks)
    if len(paths) > 1:
        raise click.UsageError(f"{' and '.join(f for f, _ in given)} pair the folders of one dataset; "
                               f"give one PATH with them, not {len(paths)}")
    resolved = {}
    for flag, value in given:
        folder = flag_folder(root, value) if storage.isdir(root) else value
        assert folder is not None  # not a user mistake: only an empty value has no folder, and given has none
        if not storage.isdir(folder):
            raise click.UsageError(f"{flag} {value}: no such folder (looked in {root} and in the current directory)")
        if masks and not alone and not inside_root(folder, root) and not storage.isfile(root):
            raise click.UsageError(f"{flag} {value} is not inside the dataset PATH {root}: give a folder inside "
                                   f"PATH, or leave PATH out to pair --images and --masks alone")
        resolved[flag] = folder
    return resolved.get("--images", images), resolved.get("--masks", masks)


@main.command()
@click.argument("path", type=click.Path(exists=True))
@spec_options
@layout_options
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Config file to write (default: PATH/labelguard.toml).")
@click.option("--force", is_flag=True, help="Overwrite an existing config file.")
@click.option("--yes", "accept_faults", is_flag=True,
              help="Write the spec although the data holds faults it was inferred over (they are written "
                   "into the file as comments); without it, init asks, or writes nothing when it cannot ask.")
@click.option("-j", "--workers", type=click.IntRange(min=1), help="Processes (default: all cores).")
@limit_options
def init(path, num_classes, values, classes, classes_file, ignore_index, reduce_zero_label, background, sizes,
         masks_hold,
         config_file, no_config, layout, images, masks, lists, key, color_map, path_column, label_column,
         output, force, accept_faults, workers, max_pixels, max_file_bytes):
    """Infer a label spec from the data at PATH and write it as labelguard.toml.

    A spec written from the data would take its faults for the truth: init lists what it
    found (fractional values, JPEG damage, a value in one mask of forty...) and asks before
    writing, or writes nothing without --yes when it cannot ask. Commit the file: later
    audits check new data against it.
    """
    from labelguard.core.text import clipped
    from labelguard.init import infer_spec_file

    target = output or os.path.join(path if os.path.isdir(path) else os.path.dirname(path) or ".",
                                    "labelguard.toml")
    if os.path.exists(target) and not force:
        raise click.UsageError(f"{target} exists; pass --force to overwrite it")
    spec = _cli_spec(num_classes, values, classes, classes_file, ignore_index, reduce_zero_label, background, sizes,
                     masks_hold)
    text, inferred, faults = infer_spec_file(
        path, spec, options=_options(layout, images, masks, lists, key, color_map, path_column, label_column),
        workers=workers, config_file=config_file, use_project_config=not no_config, max_pixels=max_pixels,
        max_file_bytes=max_file_bytes)
    if faults and not accept_faults:
        click.echo(f"the data under {path} holds {len(faults)} fault{'s' if len(faults) > 1 else ''} that the "
                   f"inferred spec ({inferred.describe()}) would take for the truth:", err=True)
        for fault in faults[:20]:
            click.echo(f"  - {clipped(fault, 300)}", err=True)
        if len(faults) > 20:
            click.echo(f"  ... and {len(faults) - 20} more (labelguard audit lists them)", err=True)
        asking = sys.stdin is not None and sys.stdin.isatty()
        if not asking or not click.confirm(f"write {target} anyway, with the faults marked in it?", err=True):
            click.echo(f"nothing written: fix the data (labelguard audit {path}), give the spec yourself "
                       "(--num-classes, --classes), or pass --yes to write it with the faults marked", err=True)
            sys.exit(1)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(text)
    click.echo(text, nl=False)
    click.echo(f"wrote {target}: {inferred.describe()}", err=True)


@main.command()
@click.option("--markdown", is_flag=True, help="Print the full reference as Markdown (docs/rules.md).")
def rules(markdown: bool) -> None:
    """List every check code."""
    from labelguard._catalog import shipped_catalog
    from labelguard.core.registry import rules_markdown

    checks = shipped_catalog().checks
    if markdown:
        click.echo(rules_markdown(checks), nl=False)
        return
    for code in sorted(checks):
        check = checks[code]
        click.echo(f"{code}  {str(check.severity):<7}  {check.name:<34} {check.summary}")


@main.command()
@click.argument("code", metavar="CODE_OR_NAME")
def rule(code: str) -> None:
    """Explain one check: what, why it breaks training, example, fix.

    CODE_OR_NAME is its code (LG201, lg201) or its name as `labelguard rules` lists it
    (mask-value-outside-spec).
    """
    from labelguard._catalog import shipped_catalog

    checks = shipped_catalog().checks
    wanted = code.strip()
    by_name = {check.name: check for check in checks.values()}
    check = checks.get(wanted.upper()) or by_name.get(wanted.lower())
    if check is None:
        close = _closest_checks(wanted, list(checks), list(by_name))
        guess = f"; did you mean {_either(close)}?" if close else ""
        raise click.UsageError(f"unknown check {code!r}{guess} (`labelguard rules` lists every code and name)")
    click.echo(f"{check.code} {check.name} (default severity: {check.severity}, {check.scope}-level)")
    click.echo("")
    click.echo(f"What it means:\n  {check.summary}")
    click.echo("")
    click.echo("Why it breaks training:\n" + _indent(check.why))
    click.echo("")
    click.echo("Bad:\n" + _indent(check.bad))
    click.echo("Good:\n" + _indent(check.good))
    click.echo("")
    click.echo("Fix:\n" + _indent(check.fix))
    click.echo("")
    click.echo("Fix safety:\n" + _indent(check.fix_safety_text))
    if check.fix_cases:
        click.echo("Fixed examples (tested):\n" + _indent("\n".join(check.fix_cases)))


def _indent(text: str, width: int = 100) -> str:
    """``text`` indented by two blanks, a line longer than ``width`` wrapped under its own
    indent (the why/bad/good texts are wrapped already; a fix and its safety are one line)."""
    import textwrap

    lines = []
    for line in text.strip().splitlines():
        hang = " " * (2 + len(line) - len(line.lstrip()))
        lines.append(textwrap.fill(line, width, initial_indent="  ", subsequent_indent=hang,
                                   break_long_words=False, break_on_hyphens=False)
                     if len(line) + 2 > width else "  " + line)
    return "\n".join(lines)


# Letters typed for the digits they look like, in the number of a code (LG2O1, LG2l0).
_DIGIT_LOOKALIKES = str.maketrans("oOlLiI", "001111")


def _closest_checks(wanted: str, codes: list[str], names: list[str]) -> list[str]:
    """Up to three codes or names closest to ``wanted``: for a code (LG2O1, lg2011, lg-201),
    the codes one edit away at most, a letter O read as 0 and l or I as 1, the fewest edits
    first, then the longest start in common, then the nearest in number; for a name, the
    names most alike."""
    import difflib
    import re

    typed = re.fullmatch(r"(?i)lg[\s_-]*([0-9oli]{1,6})", wanted)
    if typed is None:
        known = {name.lower(): name for name in (*names, *codes)}
        return [known[name] for name in difflib.get_close_matches(wanted.lower(), known, n=3, cutoff=0.6)]
    number = typed.group(1).translate(_DIGIT_LOOKALIKES)
    ranked = sorted((_edits(number, code[2:]), -len(os.path.commonprefix([number, code[2:]])),
                     abs(int(number) - int(code[2:])), code) for code in codes if code[2:].isdigit())
    return [code for edits, _, _, code in ranked if edits <= 1][:3]


def _edits(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two neighbours that turn ``a`` into ``b``."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, previous2[j - 2] + 1)
            row.append(cost)
        previous2, previous = previous, row
    return previous[-1]


def _either(items: list[str]) -> str:
    """"A", "A or B", "A, B or C"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


@main.command()
@click.argument("paths", nargs=-1, required=True, type=PathOrUrl(exists=True))
@layout_options
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="Your labelguard.toml / pyproject.toml: its [audit] format, key and color_map apply, as for audit.")
@click.option("--no-config", is_flag=True, help="Ignore labelguard.toml / pyproject.toml found at or above the data.")
@click.option("-f", "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def detect(paths, layout, images, masks, lists, key, color_map, path_column, label_column, config_file, no_config,
           output_format) -> None:
    """Show what the audit takes each PATH for: every layout's evidence, then the datasets found.

    Reads no label's values; use it when a dataset is read as the wrong layout or not at all.
    The configs an audit would read apply (a layout hint of one found with the data included).
    """
    from labelguard._detect import detect as detect_paths, render_text
    from labelguard.core.text import printable_data

    found = detect_paths(paths, _options(layout, images, masks, lists, key, color_map, path_column, label_column),
                         config_file=config_file, use_project_config=not no_config)
    if output_format == "json":
        click.echo(json.dumps(printable_data([d.to_dict() for d in found]), indent=1))
    else:
        click.echo(render_text(found), nl=False)


@main.command()
def formats() -> None:
    """List the dataset layouts and report formats."""
    from labelguard._catalog import shipped_catalog
    from labelguard.output import FORMAT_DESCRIPTIONS, format_names

    click.echo("dataset layouts (--format):")
    for layout in shipped_catalog().layouts:
        click.echo(f"  {layout.name:<18} {layout.description}")
    click.echo("report formats (--output-format):")
    for name in format_names():
        click.echo(f"  {name:<18} {FORMAT_DESCRIPTIONS.get(name, '')}".rstrip())


@main.group()
def cache() -> None:
    """Show or empty the per-file result cache of `labelguard audit`."""


def _cache_here(cache_dir: str | None, config_file: str | None = None):
    """The cache an audit from this folder would use: --cache-dir, else --config's [audit]
    cache_dir and cache_max_bytes, else the user's cache folder. A config found from here is
    data, as for an audit: it does not choose the cache, and a warning says so."""
    from labelguard._audit import cache_settings, config_uses
    from labelguard.config import ConfigFinder
    from labelguard.core.cache import default_cache_dir, open_cache

    settings: dict = {}
    configs = ConfigFinder(config_file).configs(os.getcwd())
    for config in configs:
        settings.update(config.audit)
    _warn_of_configs(config_uses(configs))
    chosen = cache_settings(cache_dir or settings.get("cache_dir") or default_cache_dir(), settings)
    assert chosen is not None  # not a user mistake: a cache folder is always given here, so one is used
    return open_cache(chosen)


CACHE_CONFIG = click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
                            help="The config whose [audit] cache_dir and cache_max_bytes apply, as for `audit`.")


@cache.command("info")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="The cache folder (default: as `audit` uses).")
@CACHE_CONFIG
def cache_info(cache_dir: str | None, config_file: str | None) -> None:
    """Where the cache is, how many entries it holds, its size and its bound."""
    info = _cache_here(cache_dir, config_file).info()
    click.echo(f"location: {info.directory}")
    click.echo(f"entries:  {info.entries:,} files' results, {info.batches:,} batches' results")
    click.echo(f"size:     {info.size:,} bytes")
    click.echo(f"bound:    {info.max_bytes:,} bytes (least recently used entries are deleted past it; "
               "[audit] cache_max_bytes)")


@cache.command("clear")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="The cache folder (default: as `audit` uses).")
@CACHE_CONFIG
def cache_clear(cache_dir: str | None, config_file: str | None) -> None:
    """Delete every cached result (the next audit reads and checks every file)."""
    store = _cache_here(cache_dir, config_file)
    deleted = store.clear()
    click.echo(f"deleted {deleted:,} cached results from {store.info().directory}")


@main.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
def demo(directory: str | None) -> None:
    """Write three small datasets with planted faults to DIRECTORY and audit them."""
    from labelguard.demo import run_demo

    run_demo(directory, sys.stdout)


