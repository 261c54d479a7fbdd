"""A missing optional extra never aborts an audit: each file that needs it is an LG001 finding
naming the extra, found where the file is read (in a pool's or a cluster's worker), and every
other file is audited as usual. Such a result is never cached, so the first audit after the
extra is installed reads the file.

The extra is made unimportable through the real import machinery, in a real ``labelguard``
process (:func:`test_without_extras.audit_without`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labelguard._optional import available
from audit_helpers import REALWORLD
from builders import organic_mask, write_nifti, write_png
from nlp_builders import write_jsonl, write_parquet
from test_cache import age
from test_without_extras import SRC, audit_without

NIFTI_CASES = 3
PNG_MASKS = 4
EXTRA = "pip install 'labelguard[nifti]'"


def nifti_beside_png(root: Path) -> Path:
    """A Medical Segmentation Decathlon task (imagesTr/labelsTr of NIfTI volumes and dataset.json,
    as MONAI's DecathlonDataset reads it) beside a folder of PNG masks, one holding value 7."""
    pytest.importorskip("nibabel", reason="nibabel writes the NIfTI files")
    task = root / "Task09_Spleen"
    for index in range(NIFTI_CASES):
        image = np.random.default_rng(index).integers(-100, 200, (16, 16, 3)).astype(np.int16)
        write_nifti(task / "imagesTr" / f"spleen_{index}.nii.gz", image)
        label = organic_mask((16, 16), (0, 1), seed=index)[..., None].repeat(3, axis=2)
        write_nifti(task / "labelsTr" / f"spleen_{index}.nii.gz", label)
    (task / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "spleen"},
                                                   "modality": {"0": "CT"}}))
    for index in range(PNG_MASKS):
        mask = organic_mask((24, 20), (0, 1, 2), seed=index)
        if index == 2:
            mask[3, 4] = 7
        write_png(root / "roads" / "masks" / f"tile{index}.png", mask)
    return root


def audit_with(args: list[str], cwd: Path) -> tuple[int, dict, str]:
    """``labelguard audit`` with every extra of this environment, as :func:`audit_without` runs it."""
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *args, "--output-format", "json",
                           "--no-progress", "--no-config"], cwd=cwd, env=dict(os.environ, PYTHONPATH=SRC),
                          capture_output=True, text=True, timeout=240)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


def command_without(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A ``labelguard`` command other than an audit, ``module`` blocked as :func:`audit_without` blocks it."""
    blocked = cwd / "blocked"
    blocked.mkdir(exist_ok=True)
    (blocked / f"{module}.py").write_text(f"raise ImportError({f'No module named {module!r}'!r})\n")
    return subprocess.run([sys.executable, "-m", "labelguard", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocked), SRC])), timeout=120)


def needs_extra(report: dict) -> list[dict]:
    return [f for f in report.get("findings", []) if f["code"] == "LG001" and "extra" in (f["data"] or {})]


def per_file(report: dict, leave_out: set[str]) -> list[str]:
    """The findings about one file, but those of the files ``leave_out``, comparable."""
    return sorted(json.dumps(f, sort_keys=True) for f in report["findings"]
                  if f["path"] is not None and f["path"] not in leave_out)


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("workers", ["1", "2"])
def test_without_nibabel_each_nifti_label_is_lg001_and_the_png_dataset_is_audited(tmp_path, workers):
    nifti_beside_png(tmp_path / "data")
    args = ["data", "--num-classes", "3", "--workers", workers, "--no-cache"]
    status, report, err = audit_without("nibabel", args, tmp_path)
    assert status == 1, err
    assert "Traceback" not in err and not report["summary"]["errors"], (err, report["summary"]["errors"])
    unread = needs_extra(report)
    assert sorted(f["path"] for f in unread) == [f"data/Task09_Spleen/labelsTr/spleen_{i}.nii.gz"
                                                  for i in range(NIFTI_CASES)]
    for finding in unread:
        assert finding["data"] == {"extra": "nifti"} and EXTRA in finding["message"], finding
        assert EXTRA in finding["hint"] and "Re-export" not in finding["hint"], finding
    assert report["summary"]["unreadable"] == NIFTI_CASES and report["summary"]["samples"] == PNG_MASKS
    [outside] = [f for f in report["findings"] if f["code"] == "LG201"]
    assert outside["path"] == "data/roads/masks/tile2.png" and outside["data"]["values"] == [7]
    # The PNG dataset's findings are those of an audit with nibabel.
    with_status, with_report, with_err = audit_with(args, tmp_path)
    assert with_status == 1 and not needs_extra(with_report), with_err
    nifti = {f["path"] for f in unread}
    assert per_file(report, nifti) == per_file(with_report, nifti)


@pytest.mark.code("LG001", "fail")
def test_a_result_read_without_its_extra_is_not_cached_and_installing_it_reads_the_file(tmp_path):
    age(nifti_beside_png(tmp_path / "data"))  # files just written are not cached (too recent to tell apart)
    args = ["data", "--num-classes", "3", "--workers", "1"]  # the test's own cache folder (conftest)
    first = audit_without("nibabel", args, tmp_path)
    again = audit_without("nibabel", args, tmp_path)
    assert first[0] == again[0] == 1, first[2] + again[2]
    assert len(needs_extra(first[1])) == len(needs_extra(again[1])) == NIFTI_CASES
    # Only the PNG masks came from the cache: the files that needed the extra were tried again.
    assert (first[1]["summary"]["from_cache"], again[1]["summary"]["from_cache"]) == (0, PNG_MASKS)
    status, report, err = audit_with(args, tmp_path)
    assert status == 1 and not needs_extra(report), err
    assert report["summary"]["from_cache"] == PNG_MASKS  # the same cache, and the NIfTI files read now
    assert report["summary"]["samples"] == PNG_MASKS + NIFTI_CASES and report["summary"]["unreadable"] == 0


@pytest.mark.skipif(not available("distributed"), reason="the dask extra is not installed")
def test_on_a_dask_cluster_the_worker_that_lacks_the_extra_gives_the_finding(tmp_path):
    nifti_beside_png(tmp_path / "data")
    status, report, err = audit_without("nibabel", ["data", "--num-classes", "3", "--engine", "dask", "--workers",
                                                    "1", "--no-cache"], tmp_path)
    assert status == 1, err
    assert len(needs_extra(report)) == NIFTI_CASES
    assert [f["path"] for f in report["findings"] if f["code"] == "LG201"] == ["data/roads/masks/tile2.png"]


def test_init_infers_no_spec_from_the_files_it_could_read(tmp_path):
    """A spec inferred without the NIfTI labels could miss their classes: refused, naming the extra."""
    nifti_beside_png(tmp_path / "data")
    done = command_without("nibabel", ["init", "data", "--output", "labelguard.toml"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert EXTRA in done.stderr and "no label spec was inferred" in done.stderr, done.stderr
    assert f"{NIFTI_CASES} files of the data" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "labelguard.toml").exists()


def test_harmonize_maps_no_classes_it_could_not_read(tmp_path):
    nifti_beside_png(tmp_path / "a")
    nifti_beside_png(tmp_path / "b")
    done = command_without("nibabel", ["harmonize", "a/Task09_Spleen", "b/Task09_Spleen"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert EXTRA in done.stderr and "no class map was inferred" in done.stderr, done.stderr


@pytest.mark.skipif(not (REALWORLD / "monai").is_dir(), reason="../shared/realworld/monai is absent")
def test_realworld_without_nibabel_audits_every_other_dataset_as_with_it(tmp_path):
    """The issue's case: ``audit realworld`` without nibabel exited 2 with no report. Now MONAI's
    NIfTI labels are LG001 naming the extra and every finding about another file is as with
    nibabel. (Findings about no one file, LG006 and LG401, count the values of all datasets
    together, so they differ by the NIfTI labels' values.)"""
    status, report, err = audit_without("nibabel", [str(REALWORLD), "--no-cache"], tmp_path)
    assert status == 1 and "Traceback" not in err, err
    with_status, with_report, with_err = audit_with([str(REALWORLD), "--no-cache"], tmp_path)
    assert with_status == 1, with_err
    unread = needs_extra(report)
    paths = {f["path"] for f in unread}
    assert paths and all(p.endswith((".nii", ".nii.gz")) and "/monai/" in p for p in paths), paths
    assert not needs_extra(with_report)
    # With nibabel each of them was read as a sample.
    assert with_report["summary"]["samples"] - report["summary"]["samples"] == len(paths)
    assert per_file(report, paths) == per_file(with_report, paths)
    assert report["summary"]["layouts"] == with_report["summary"]["layouts"]


def test_fix_skips_a_nifti_mask_naming_the_extra_and_rewrites_the_others(tmp_path):
    """`fix` plans file by file: a NIfTI mask without nibabel is skipped with the extra named
    (not a usage error: the command was given a folder, and its PNG masks are fixed)."""
    nifti_beside_png(tmp_path / "data")
    done = command_without("nibabel", ["fix", "remap", "data", "--map", "7:0", "--apply"], tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    skipped = [line for line in lines if line.startswith("skipped") and ".nii.gz" in line]
    assert len(skipped) == NIFTI_CASES and all(EXTRA in line for line in skipped), done.stdout
    assert any(line.startswith("fixed") and "tile2.png" in line for line in lines), done.stdout


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("how", ["beside JSON lines of token ids", "--format tokens"])
def test_without_pyarrow_the_parquet_files_of_a_token_dataset_are_lg001_naming_the_extra(tmp_path, how):
    """Without pyarrow a Parquet file's columns cannot be told: in a dataset taken for tokens it
    is audited and named, not left out unseen."""
    rows = {"input_ids": [[1, 5, 2], [1, 7, 2]], "label": [0, 1]}
    write_parquet(tmp_path / "data" / "train-00000-of-00001.parquet", rows)
    args = ["data", "--no-cache"]
    if how == "--format tokens":
        args += ["--format", "tokens"]
    else:
        write_jsonl(tmp_path / "data" / "validation.jsonl", rows)
    status, report, err = audit_without("pyarrow", args, tmp_path)
    assert status == 1, err
    [unread] = needs_extra(report)
    assert unread["path"] == "data/train-00000-of-00001.parquet" and unread["data"] == {"extra": "nlp"}, unread
    assert "pip install 'labelguard[nlp]'" in unread["message"]
    assert report["summary"]["samples"] == (0 if how == "--format tokens" else 2)
