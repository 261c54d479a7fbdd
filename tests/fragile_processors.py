"""Mask processors that kill or starve their own worker process on chosen files, for the tests
of an audit whose pool loses a worker.

The file's name says what happens: ``kill*`` is SIGKILLed every time it is checked,
``flaky*`` the first time only (a marker beside it remembers), ``hungry*`` allocates until a
memory limit stops it, ``stall*`` sleeps for minutes (an audit that cannot end before it is
interrupted), ``unpicklable*`` returns a result that cannot be sent back to the main process.
Outside a worker process (an in-process audit, which these would kill or stop) they refuse.
Pickled by name: the test modules import this module, and so do workers.

:func:`fragile_cli` runs the real command line with these processors as ``--format
fragile-masks``, in a subprocess, optionally under an address-space limit its workers inherit.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.rules._masks import process_mask

FRAGILE_LAYOUT = "fragile-masks"


def process_fragile(task: FileTask, spec: LabelSpec) -> FileResult:
    """``process_mask``, after the misfortune the file's name asks for."""
    name = Path(task.path).name
    if name.startswith(("kill", "flaky", "hungry", "stall")) and multiprocessing.parent_process() is None:
        raise AssertionError(f"{name} would end the test process itself: audit it with workers")
    if name.startswith("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    if name.startswith("flaky"):
        marker = Path(task.path).with_suffix(".died")
        if not marker.exists():
            marker.write_text("")
            os.kill(os.getpid(), signal.SIGKILL)
    if name.startswith("hungry"):
        _allocate_until_the_limit()
    if name.startswith("stall"):
        time.sleep(300)
    result = process_mask(task, spec)
    if name.startswith("unpicklable"):
        result.errors.append(lambda: "a function defined here cannot be pickled")
    return result


def _allocate_until_the_limit() -> None:
    import resource  # POSIX only, like the tests that ask for this

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        raise AssertionError("no address-space limit is set: this would take the machine's memory")
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def fragile(tasks: Iterable[FileTask]) -> list[FileTask]:
    return [replace(task, processor=process_fragile) for task in tasks]


# The CLI with the fragile layout registered, under an address-space limit of the process's
# size now plus the headroom given, when one is given.
_CLI = """
import resource, sys
import fragile_processors
from labelguard.cli import main

fragile_processors.register_fragile_layout()
headroom = int(sys.argv.pop(1))
if headroom:
    status = open("/proc/self/status").read()
    size = int(status.split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + headroom, resource.getrlimit(resource.RLIMIT_AS)[1]))
main(sys.argv[1:], prog_name="labelguard")
"""


def fragile_cli(args: list[str], memory_headroom: int = 0) -> tuple[list[str], dict[str, str]]:
    """The command and environment of ``labelguard audit ARGS --format fragile-masks``."""
    tests = str(Path(__file__).resolve().parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])))
    env.pop("LABELGUARD_DEBUG", None)
    return [sys.executable, "-c", _CLI, str(memory_headroom), "audit", *args, "--format", FRAGILE_LAYOUT], env


def register_fragile_layout() -> None:
    """The masks layout with these processors, as ``--format fragile-masks`` (for a CLI run in
    a subprocess; the test process keeps its layouts as they are)."""
    from labelguard.layouts.base import LAYOUTS, no, register_layout

    masks = LAYOUTS["masks"]

    def discover(root, options):
        found = masks.discover(root, options)
        found.tasks = fragile(found.tasks)  # a layout may give its tasks as an iterator
        return found

    discover.detect = lambda root, options: no()  # only ever forced with --format
    register_layout(FRAGILE_LAYOUT, "masks whose worker dies on chosen files (tests)", 0.0)(discover)
