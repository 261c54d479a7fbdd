"""Write the quick start's outputs into README.md and docs/quickstart.md (and the sample report
into docs/reports.md).

    python docs/quickstart.py           # run every command, rewrite the blocks that changed
    python docs/quickstart.py --check   # exit 1 and print a diff when a block differs from a fresh run

Each block lies between ``<!-- quickstart:begin NAME -->`` and ``<!-- quickstart:end NAME -->``
and is written by this script alone: the command as a reader types it and what it printed, run
for real in a temporary folder with relative paths, on the datasets ``labelguard demo`` writes
(``tests/test_readme.py`` runs ``--check``, so a change of output fails the suite until the blocks
are written again). Long outputs are cut, and the cut says how many lines it left out.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

GUARD_SCRIPT = '''\
import glob

import numpy as np
import torch
from PIL import Image

from labelguard.torch import guard


class VocMasks(torch.utils.data.Dataset):
    def __init__(self, files):
        self.files = files  # the guard names a sample's file from here
    def __len__(self):
        return len(self.files)
    def __getitem__(self, index):
        mask = np.asarray(Image.open(self.files[index]), dtype=np.int64)
        return torch.zeros(3, *mask.shape), torch.from_numpy(mask)


files = sorted(glob.glob("labelguard-demo/voc_seg/SegmentationClass/*.png"))
train = guard(VocMasks(files), num_classes=3)  # checked in the workers
for images, masks in torch.utils.data.DataLoader(train, batch_size=2, num_workers=2):
    pass  # the training step
'''

EXPLAINED_LOG = ("Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] "
                 "Assertion `t >= 0 && t < n_classes` failed.")


@dataclass(frozen=True)
class Block:
    """One command of a page: ``name`` its markers, ``keep`` the most lines of output shown
    from its start and ``tail`` from its end (the lines between are counted)."""

    name: str
    page: str
    command: str
    keep: int | None = None
    tail: int = 0
    also: tuple[str, ...] = ()  # other pages that show the same block
    script: str | None = None  # a Python file the command runs, shown above it


# The README's quick start is also the site's (docs/quickstart.md): one run writes both.
QUICK = ("docs/quickstart.md",)
BLOCKS = (
    Block("demo", "README.md", "labelguard demo labelguard-demo", keep=1, tail=2, also=QUICK),
    Block("audit", "README.md", "labelguard audit labelguard-demo/voc_seg", keep=17, also=QUICK),
    Block("concise", "README.md", "labelguard audit labelguard-demo/voc_seg -f concise", keep=16, also=QUICK),
    Block("ignore-index", "README.md", "labelguard audit labelguard-demo/voc_seg --ignore-index 255 -f concise",
          keep=16, also=QUICK),
    Block("rule", "README.md", "labelguard rule LG201", keep=10, also=QUICK),
    Block("explain", "README.md", f"labelguard explain {shlex.quote(EXPLAINED_LOG)}", keep=12, also=QUICK),
    Block("guard", "README.md", "python train.py", script=GUARD_SCRIPT, also=QUICK),
    Block("sample-report", "docs/reports.md",
          "labelguard audit labelguard-demo/swin_unet --list labelguard-demo/swin_unet/lists/train.txt", keep=48),
)


def environment(folder: Path, name: str) -> dict[str, str]:
    """The commands' environment: this checkout's labelguard, no colour, a fixed width, and a
    result cache of the command's own (a shared one would answer the later commands and add a
    ``cache:`` line that depends on how fast the earlier ones ran)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("FORCE_COLOR", "CLICOLOR_FORCE", "LABELGUARD_CACHE_DIR")}
    source = str(REPO / "src")
    env.update(PYTHONPATH=os.pathsep.join(filter(None, (source, env.get("PYTHONPATH")))),
               PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", TERM="dumb", COLUMNS="100",
               LABELGUARD_CACHE_DIR=str(folder / ".cache" / name))
    return env


def run(block: Block, folder: Path) -> str:
    """The block's text: the command, what it printed (cut to ``keep`` lines), and its script."""
    words = shlex.split(block.command)
    if block.script is not None:
        (folder / words[-1]).write_text(block.script, encoding="utf-8")
    program = [sys.executable, "-m", "labelguard"] if words[0] == "labelguard" else [sys.executable]
    done = subprocess.run([*program, *words[1:]], cwd=folder, env=environment(folder, block.name),
                          capture_output=True, text=True, timeout=300)
    lines = (done.stdout + done.stderr).rstrip("\n").splitlines()
    if block.script is not None:
        if not lines or not lines[0].startswith("Traceback"):
            raise SystemExit(f"{block.name}: expected a traceback, got:\n" + "\n".join(lines))
        # the frames between depend on the Python and torch versions: cut, without a count
        lines = [lines[0], "  ... (the frames in between)", lines[-1]]
    elif block.keep is not None and len(lines) > block.keep + block.tail + 1:
        cut = len(lines) - block.keep - block.tail
        lines = [*lines[:block.keep], f"... ({cut} more lines)", *lines[len(lines) - block.tail:]]
    shown = [f"$ {block.command}", *lines]
    text = "```console\n" + "\n".join(shown) + "\n```\n"
    if block.script is not None:
        text = f"```python\n# {words[-1]}\n{block.script}```\n\n" + text
    return text


def markers(name: str) -> tuple[str, str]:
    return f"<!-- quickstart:begin {name} -->", f"<!-- quickstart:end {name} -->"


def filled(page: str, blocks: dict[str, str]) -> str:
    """``page`` with each named block's body replaced."""
    for name, body in blocks.items():
        begin, end = markers(name)
        found = re.search(re.escape(begin) + r"\n.*?" + re.escape(end), page, flags=re.S)
        if found is None:
            raise SystemExit(f"the markers {begin} ... {end} are missing")
        page = page[:found.start()] + f"{begin}\n{body}{end}" + page[found.end():]
    return page


def generate() -> dict[str, str]:
    """Every page with its blocks written from a fresh run."""
    with tempfile.TemporaryDirectory(prefix="labelguard-quickstart-") as temporary:
        folder = Path(temporary)
        outputs: dict[str, dict[str, str]] = {}
        for block in BLOCKS:
            text = run(block, folder)
            for page in (block.page, *block.also):
                outputs.setdefault(page, {})[block.name] = text
    return {page: filled((REPO / page).read_text(encoding="utf-8"), blocks) for page, blocks in outputs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when a block differs")
    args = parser.parse_args(argv)
    stale = 0
    for page, text in generate().items():
        current = (REPO / page).read_text(encoding="utf-8")
        if text == current:
            continue
        stale += 1
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                       f"{page} (as committed)", f"{page} (as run now)"))
        else:
            (REPO / page).write_text(text, encoding="utf-8")
            print(f"wrote {page}")
    if args.check and stale:
        print(f"\n{stale} page(s) differ from the commands' output: run `python docs/quickstart.py`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
