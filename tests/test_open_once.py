"""Each label and image file is opened once per audit: counted for real, by an audit hook in
the process that runs ``labelguard audit -j 1`` (every ``open`` event: ``open()``, ``io.open``,
``os.open``), on datasets written in ``tmp_path``.

With the result cache on, a file whose result is not cached yet is hashed into the cache entry
(``labelguard.core.cache``): a PNG mask's bytes are hashed from the one read that decodes it
(opened once), while a NIfTI volume and a paired image are opened once more to be hashed
(twice); a cached result opens none. Formats covered: NIfTI (nnU-Net) and PNG masks beside
JPEG images. Not covered here: a TIFF mask and its TIFF image are each opened twice without
the cache and three times with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from builders import write_jpeg, write_png

# Runs the CLI with a hook that counts the opens of every path below the dataset, and writes
# the counts as JSON to the file named by its first argument.
COUNTING = """
import collections, json, os, sys
out, root = sys.argv[1], os.path.realpath(sys.argv[2])
counts = collections.Counter()

def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if path.startswith(root + os.sep):
            counts[os.path.relpath(path, root)] += 1

sys.addaudithook(hook)
from labelguard.cli import main
try:
    main(sys.argv[3:], standalone_mode=False)
finally:
    with open(out, "w") as handle:
        json.dump(counts, handle)
"""


def _opens(tmp_path: Path, root: Path, *arguments: str) -> Counter:
    out = tmp_path / f"opens-{len(list(tmp_path.glob('opens-*')))}.json"
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", COUNTING, str(out), str(root), "audit", str(root), "-j", "1",
                           "--no-progress", *arguments],
                          capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=300)
    assert out.exists(), done.stderr[-3000:]
    return Counter(json.loads(out.read_text()))


def _nnunet(root: Path) -> list[str]:
    """An nnU-Net v2 raw dataset of NIfTI volumes; its label and image files, relative."""
    nib = pytest.importorskip("nibabel")
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    (root / "dataset.json").write_text(json.dumps({
        "channel_names": {"0": "T1", "1": "T2"}, "labels": {"background": 0, "lesion": 1},
        "numTraining": 3, "file_ending": ".nii.gz"}))
    affine = np.diag([1.5, 1.5, 3.0, 1.0])
    rng = np.random.default_rng(0)
    files = []
    for case, channels in (("case_000", 1), ("case_001", 1), ("case_002", 2)):
        volume = rng.random((16, 12, 6)).astype(np.float32)
        for channel in range(channels):
            name = f"imagesTr/{case}_{channel:04d}.nii.gz"
            nib.save(nib.Nifti1Image(volume, affine), str(root / name))
            files.append(name)
        name = f"labelsTr/{case}.nii.gz"
        nib.save(nib.Nifti1Image((volume > 0.7).astype(np.uint8), affine), str(root / name))
        files.append(name)
    return files


def _paired_folders(root: Path) -> list[str]:
    """PNG masks beside JPEG images, in two folders; the files, relative."""
    files = []
    for index in range(3):
        write_jpeg(root / "images" / f"{index:03d}.jpg", np.full((64, 48, 3), 40 * index, np.uint8))
        mask = np.zeros((64, 48), np.uint8)
        mask[10:30, 5:20] = 1
        write_png(root / "masks" / f"{index:03d}.png", mask)
        files += [f"images/{index:03d}.jpg", f"masks/{index:03d}.png"]
    return files


@pytest.mark.parametrize("build", [_nnunet, _paired_folders], ids=["nnunet", "paired-folders"])
def test_each_label_and_image_is_opened_once_without_the_cache(tmp_path, build):
    root = tmp_path / "data"
    files = build(root)
    opens = _opens(tmp_path, root, "--no-cache")
    assert {name: opens[name] for name in files} == {name: 1 for name in files}


@pytest.mark.parametrize("build", [_nnunet, _paired_folders], ids=["nnunet", "paired-folders"])
def test_the_cache_hashes_each_file_once_more_and_a_hit_opens_none(tmp_path, build):
    root = tmp_path / "data"
    files = build(root)
    cache = tmp_path / "cache"
    for name in files:
        # Files modified this very second are never cached ("racily clean"): date them back.
        os.utime(root / name, (1_600_000_000, 1_600_000_000))
    first = _opens(tmp_path, root, "--cache-dir", str(cache))
    hashed_from_the_read = {name for name in files if name.endswith(".png")}
    assert {name: first[name] for name in files} == {name: 1 if name in hashed_from_the_read else 2
                                                    for name in files}
    again = _opens(tmp_path, root, "--cache-dir", str(cache))
    assert {name: again[name] for name in files} == {name: 0 for name in files}
