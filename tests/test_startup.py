"""What each command imports: the commands that read no data start without numpy, and an
audit imports what its files need and no more.

Each case runs the command in a fresh interpreter (this one has numpy loaded long ago) and
reads ``sys.modules`` once the command is done. Start-up times themselves are measured by
``benchmarks/bench_masks.py``, never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from builders import write_png

# Runs the command as `labelguard ...` does, then prints the modules it imported.
DRIVER = """
import json, sys
from labelguard.cli import main
try:
    main(sys.argv[1:], prog_name="labelguard")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


# What the interpreter imports before any labelguard code: the standard start-up and whatever
# the environment's ``.pth`` files import (a site-wide one may load certifi, which loads
# zipfile and urllib.parse). Those are not labelguard's doing, so they are subtracted.
BARE = "import json, sys; print(json.dumps(sorted(sys.modules)), file=sys.stderr)"


def modules_after(code: str, args: list[str], cwd) -> set[str]:
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                            timeout=120)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def imported_by(args: list[str], cwd) -> set[str]:
    """The modules the command imported beyond those of a bare interpreter in this environment."""
    return modules_after(DRIVER, args, cwd) - modules_after(BARE, [], cwd)


HEAVY = ("numpy", "PIL", "labelguard.rules", "labelguard.layouts", "labelguard.readers")


def heavy(modules: set[str]) -> list[str]:
    """numpy, Pillow, and labelguard's rules, layouts and readers among ``modules``."""
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [
    ["--version"],
    ["rules"],
    ["rules", "--markdown"],
    ["rule", "LG201"],
    ["formats"],
])
def test_commands_that_read_no_data_import_no_numpy(args, tmp_path):
    assert heavy(imported_by(args, tmp_path)) == []


def test_explain_imports_no_numpy(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("RuntimeError: CUDA error: device-side assert triggered\n"
                   "Assertion `t >= 0 && t < n_classes` failed.\n")
    assert heavy(imported_by(["explain", str(log)], tmp_path)) == []


def test_a_png_audit_on_one_worker_imports_no_reader_it_does_not_use(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.eye(4, dtype=np.uint8))
    modules = imported_by(["audit", str(tmp_path / "masks"), "--num-classes", "2", "--workers", "1",
                           "--no-config", "--no-progress", "-o", str(tmp_path / "report.txt")], tmp_path)
    assert "labelguard.rules._masks" in modules and "numpy" in modules  # it did audit the mask
    unused = {
        "zipfile",  # NPZ archives
        "concurrent.futures.process", "multiprocessing",  # a pool of workers
        "PIL.TiffImagePlugin", "PIL.JpegImagePlugin", "PIL.WebPImagePlugin",  # other image formats
        "xml.etree.ElementTree",  # VOC annotations
        "tomllib",  # a config file (--no-config)
        "importlib.metadata",  # the cache reads the decoding libraries' versions without it
        "urllib.parse", "html",  # the SARIF and HTML formats
        "tempfile", "shutil",  # a long file list, the cache's clean-up
        "PIL.PngImagePlugin",  # an 8-bit grey PNG is decoded from the chunks labelguard checked
    }
    assert sorted(unused & modules) == []


@pytest.mark.parametrize("given, expected", [(None, "1"), ("4", "4")])
def test_the_command_line_starts_openblas_with_one_thread_unless_told(tmp_path, given, expected):
    """The command line does no linear algebra: numpy's OpenBLAS starts one thread, not one per
    core, unless the user set the number; the library leaves its caller's process alone."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    # The variable only counts if it is set before numpy is first imported: then, with one
    # OpenBLAS thread, the process runs no thread but its own once numpy is loaded.
    show = ("import os, {0}, numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'), "
            "len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else 1)")
    for module, shown in (("labelguard.cli", expected), ("labelguard", str(given))):
        done = subprocess.run([sys.executable, "-c", show.format(module)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        variable, threads = done.stdout.split()
        assert variable == shown, (module, done.stderr)
        if variable == "1":
            assert threads == "1", (module, threads)
