"""The result cache (labelguard.core.cache): reused only when nothing a result depends on
changed, shared safely, bounded, and the same findings as an audit without it.

Files are written, then aged past the cache's racy window (a file modified in the last
seconds is never stored), as a dataset is some time after it was written; an edit made by a
test is fresh again, so the audit after it reads the edited file."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation_builders import coco_box, coco_document, coco_image, write_image, write_json, write_table
from audit_helpers import found, run
from builders import organic_mask, rgb_image, write_h5, write_png
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.core import cache as cache_module
from labelguard.core.cache import (
    MAGIC, PACK_MAGIC, PACK_SUFFIX, STORE_VERSION, CacheSettings, ResultCache, _parts_view, _summary_parts, blocks,
    canonical, default_cache_dir, open_cache,
)
from labelguard.core.rules import all_rules, rule, unregister
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileResult
from labelguard.errors import SpecError
from labelguard.rules.lg201 import VALUE_OUTSIDE_SPEC
from rule_examples import write_example_file

SRC = Path(__file__).resolve().parents[1] / "src"


def age(root: Path, seconds: float = 3600) -> None:
    """Every file under ``root`` last modified ``seconds`` ago."""
    then = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then))


def masks_dataset(root: Path, count: int = 6, bad: int | None = None) -> Path:
    """``count`` masks of values 0..2; mask ``bad`` holds a 7."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        mask = organic_mask((32, 32), classes=(0, 1, 2), seed=index)
        if index == bad:
            mask[0, 0] = 7
        write_png(root / f"m{index}.png", mask)
    age(root)
    return root


def cached_run(path, cache_dir: Path, spec: LabelSpec | None = None, **kwargs):
    return run(path, spec if spec is not None else LabelSpec(num_classes=3), cache=str(cache_dir), **kwargs)


def comparable(report) -> dict:
    """The JSON report without what tells the cache was used."""
    data = json.loads(json.dumps(report.to_dict(), default=str))
    data["summary"].pop("from_cache")
    return data


# ---- where the cache lives ------------------------------------------------------------------

def test_the_suite_never_defaults_to_the_users_cache_folder(tmp_path):
    """The session points the cache into a folder of its own (conftest.py), in this process
    and in the commands a test starts, so that no test writes into the user's real cache and
    no other labelguard process writing there can fail a good run."""
    user = os.environ["LABELGUARD_TEST_USER_CACHE"]
    show = "from labelguard.core.cache import default_cache_dir; print(default_cache_dir())"
    started = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, check=True, cwd=tmp_path)
    for folder in (default_cache_dir(), started.stdout.strip()):
        assert folder != user and not folder.startswith(os.path.join(user, "")), folder
    assert Path(os.environ["LABELGUARD_TEST_SESSION_CACHE"]).is_dir()


def test_the_default_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("LABELGUARD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == str(tmp_path / "xdg" / "labelguard")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "labelguard")
    monkeypatch.setenv("LABELGUARD_CACHE_DIR", str(tmp_path / "chosen"))
    assert default_cache_dir() == str(tmp_path / "chosen")


def test_an_audit_without_a_cache_argument_uses_the_default_folder(tmp_path):
    masks_dataset(tmp_path / "data")
    run(tmp_path / "data")
    assert open_cache(CacheSettings(default_cache_dir())).info().entries == 6


# ---- reuse, and the same findings ----------------------------------------------------------

def test_a_second_audit_takes_every_unchanged_file_from_the_cache(tmp_path):
    data = masks_dataset(tmp_path / "data", bad=2)
    cache = tmp_path / "cache"
    first = cached_run(data, cache)
    second = cached_run(data, cache)
    without = run(data, LabelSpec(num_classes=3), cache=False)
    assert (first.from_cache, second.from_cache, without.from_cache) == (0, 6, 0)
    assert comparable(second) == comparable(first) == comparable(without)
    assert [f.path for f in found(second, "LG201")] == [str(data / "m2.png")]


def test_workers_of_a_pool_read_and_write_the_cache(tmp_path):
    data = masks_dataset(tmp_path / "data", count=12, bad=5)
    cache = tmp_path / "cache"
    first = cached_run(data, cache, workers=2)
    second = cached_run(data, cache, workers=2)
    assert (first.from_cache, second.from_cache) == (0, 12)
    assert comparable(second) == comparable(first)


def test_rule_examples_give_the_same_report_with_and_without_the_cache(tmp_path):
    """Every rule's examples, audited without the cache, into an empty one and from it: the
    same report each time, and the second audit takes every stored result."""
    for index, example in enumerate(e for r in all_rules() for e in r.examples):
        root, cache = tmp_path / f"e{index}", tmp_path / f"c{index}"
        for relative, content in example.files().items():
            write_example_file(root / relative, content)
        age(root)
        arguments = dict(spec=LabelSpec(**example.spec), options=_options(example), use_project_config=False,
                         workers=1)
        without = audit(root, cache=False, **arguments)
        first = audit(root, cache=str(cache), **arguments)
        second = audit(root, cache=str(cache), **arguments)
        where = f"{example.description} ({root.name})"
        assert comparable(first) == comparable(without), where
        assert comparable(second) == comparable(without), where
        assert first.from_cache == 0, where
        assert second.from_cache == open_cache(CacheSettings(str(cache))).info().entries, where


def _options(example):
    from labelguard.layouts.base import AuditOptions

    return AuditOptions(**example.options)


@pytest.mark.code("LG201", "fail")
@pytest.mark.code("LG201", "pass")
def test_editing_one_byte_of_one_mask_re_audits_exactly_that_mask(tmp_path):
    data = masks_dataset(tmp_path / "data", count=8)
    cache = tmp_path / "cache"
    assert not found(cached_run(data, cache), "LG201")
    mask = organic_mask((32, 32), classes=(0, 1, 2), seed=3)
    mask[5, 5] = 9
    write_png(data / "m3.png", mask)
    after = cached_run(data, cache)
    assert after.from_cache == 7
    assert [Path(f.path).name for f in found(after, "LG201")] == ["m3.png"]


def test_a_file_touched_or_copied_back_unchanged_is_reused_after_one_hash(tmp_path):
    data = masks_dataset(tmp_path / "data", count=4)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    copy = tmp_path / "copy.png"
    shutil.copyfile(data / "m1.png", copy)
    os.replace(copy, data / "m1.png")  # a new inode, a new ctime, the same bytes
    age(data)
    assert cached_run(data, cache).from_cache == 4


def test_a_changed_spec_re_audits_every_file(tmp_path):
    data = masks_dataset(tmp_path / "data", count=4, bad=1)
    cache = tmp_path / "cache"
    assert found(cached_run(data, cache), "LG201")
    wider = cached_run(data, cache, LabelSpec(num_classes=8))
    assert wider.from_cache == 0 and not found(wider, "LG201")
    assert cached_run(data, cache, LabelSpec(num_classes=8)).from_cache == 4


def test_a_class_names_file_is_part_of_the_spec(tmp_path):
    data = masks_dataset(tmp_path / "data", count=3, bad=0)
    (data / "classes.txt").write_text("a\nb\nc\n", encoding="utf-8")
    age(data)
    cache = tmp_path / "cache"
    assert found(run(data, cache=str(cache)), "LG201")
    (data / "classes.txt").write_text("".join(f"c{i}\n" for i in range(8)), encoding="utf-8")
    after = run(data, cache=str(cache))
    assert after.from_cache == 0 and not found(after, "LG201")


def test_a_changed_colour_map_re_audits_the_colour_masks(tmp_path):
    data = tmp_path / "data"
    colors = [(0, 0, 0), (128, 0, 0), (0, 128, 0)]
    indices = organic_mask((24, 24), classes=(0, 1, 2), seed=1)
    rgb = np.array(colors, dtype=np.uint8)[indices]
    for index in range(3):
        write_png(data / "masks" / f"m{index}.png", rgb)
    color_map = tmp_path / "label_colors.txt"
    color_map.write_text("0 0 0 background\n128 0 0 a\n0 128 0 b\n", encoding="utf-8")
    age(tmp_path)
    cache = tmp_path / "cache"
    from labelguard.layouts.base import AuditOptions

    options = AuditOptions(color_map=str(color_map))
    assert not found(run(data / "masks", options=options, cache=str(cache)), "LG201")
    color_map.write_text("0 0 0 background\n128 0 0 a\n", encoding="utf-8")  # (0,128,0) no longer mapped
    after = run(data / "masks", options=options, cache=str(cache))
    assert after.from_cache == 0 and found(after, "LG201")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_among_masks_is_not_read_to_hash_it(tmp_path):
    data = masks_dataset(tmp_path / "data", count=2)
    os.mkfifo(data / "pipe.png")
    age(data)
    cache = tmp_path / "cache"
    for _ in range(2):  # a blocking read would never return
        report = cached_run(data, cache)
        assert [Path(f.path).name for f in found(report, "LG001")] == ["pipe.png"]
    assert report.from_cache == 3


def test_a_changed_read_limit_re_audits(tmp_path):
    data = masks_dataset(tmp_path / "data", count=2)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    limited = cached_run(data, cache, max_pixels=100)
    assert limited.from_cache == 0 and len(found(limited, "LG001")) == 2


# ---- what a task reads beyond its own file --------------------------------------------------

@pytest.mark.code("LG206", "fail")
@pytest.mark.code("LG206", "pass")
def test_editing_the_paired_image_re_checks_the_pair(tmp_path):
    data = tmp_path / "data"
    for index in range(3):
        write_png(data / "images" / f"s{index}.png", rgb_image((32, 32), seed=index))
        write_png(data / "masks" / f"s{index}.png", organic_mask((32, 32), seed=index))
    write_png(data / "images" / "s1.png", rgb_image((40, 32), seed=1))  # the wrong size
    age(data)
    cache = tmp_path / "cache"
    assert [Path(f.path).name for f in found(cached_run(data, cache), "LG206")] == ["s1.png"]
    write_png(data / "images" / "s1.png", rgb_image((32, 32), seed=1))
    after = cached_run(data, cache)
    assert after.from_cache == 2 and not found(after, "LG206")


def coco_with_missing_image(root: Path) -> Path:
    images = [coco_image(1, "a.jpg", 64, 48), coco_image(2, "b.jpg", 64, 48)]
    write_json(root / "annotations" / "instances_train.json",
               coco_document(images, [coco_box(1, 1, 1), coco_box(2, 2, 1)], [{"id": 1, "name": "cat"}]))
    write_image(root / "images" / "train" / "a.jpg")
    age(root)
    return root


@pytest.mark.code("LG003", "fail")
@pytest.mark.code("LG003", "pass")
def test_adding_the_image_a_coco_file_misses_removes_lg003(tmp_path):
    data = coco_with_missing_image(tmp_path / "data")
    cache = tmp_path / "cache"
    assert found(run(data, cache=str(cache)), "LG003")
    assert run(data, cache=str(cache)).from_cache == 1
    write_image(data / "images" / "train" / "b.jpg")
    after = run(data, cache=str(cache))
    assert after.from_cache == 0 and not found(after, "LG003")
    (data / "images" / "train" / "a.jpg").unlink()
    assert found(run(data, cache=str(cache)), "LG003")


def test_a_name_leading_out_of_the_image_folder_is_looked_up_again(tmp_path):
    data = tmp_path / "data"
    images = [coco_image(1, "../extra/a.jpg", 64, 48)]
    write_json(data / "annotations" / "instances_train.json",
               coco_document(images, [coco_box(1, 1, 1)], [{"id": 1, "name": "cat"}]))
    (data / "images" / "train").mkdir(parents=True)
    age(data)
    cache = tmp_path / "cache"
    assert found(run(data, cache=str(cache)), "LG003")
    write_image(data / "extra" / "a.jpg")  # ../ from the image folder data/images
    after = run(data, cache=str(cache))
    assert after.from_cache == 0 and not found(after, "LG003")


def test_adding_the_image_a_table_misses_removes_lg003(tmp_path):
    data = tmp_path / "data"
    write_table(data / "train.csv", [("a.jpg", "cat"), ("sub/b.jpg", "dog")], header=("image", "label"))
    write_image(data / "a.jpg")
    age(data)
    cache = tmp_path / "cache"
    assert found(run(data, cache=str(cache)), "LG003")
    assert run(data, cache=str(cache)).from_cache == 1
    write_image(data / "sub" / "b.jpg")
    after = run(data, cache=str(cache))
    assert after.from_cache == 0 and not found(after, "LG003")


def test_adding_a_panoptic_png_removes_lg003(tmp_path):
    from labelguard.rules._examples import coco_json

    data = tmp_path / "data"
    annotation = {"id": 1, "image_id": 1, "file_name": "a.png",
                  "segments_info": [{"id": 3, "category_id": 1, "bbox": [1, 1, 4, 4], "iscrowd": 0, "area": 16}]}
    write_example_file(data / "annotations" / "panoptic_train.json", coco_json([annotation]))
    write_png(data / "annotations" / "panoptic_train" / "b.png", rgb_image((8, 8)))
    age(data)
    cache = tmp_path / "cache"
    assert found(run(data, cache=str(cache)), "LG003")
    write_png(data / "annotations" / "panoptic_train" / "a.png", rgb_image((8, 8)))
    after = run(data, cache=str(cache))
    assert after.from_cache == 0 and not found(after, "LG003")


def test_an_hdf5_label_behind_an_external_link_is_never_cached(tmp_path):
    h5py = pytest.importorskip("h5py")
    data = tmp_path / "data"
    data.mkdir()
    write_h5(data / "store.h5", label=np.zeros((8, 8), np.uint8))
    with h5py.File(data / "case.h5", "w") as handle:
        handle["label"] = h5py.ExternalLink("store.h5", "/label")
    age(data)
    cache = tmp_path / "cache"
    first = run(data / "case.h5", LabelSpec(num_classes=3), cache=str(cache))
    assert not found(first, "LG201")
    with h5py.File(data / "store.h5", "r+") as handle:
        handle["label"][0, 0] = 9
    after = run(data / "case.h5", LabelSpec(num_classes=3), cache=str(cache))
    assert after.from_cache == 0 and found(after, "LG201")


def test_a_nifti_pair_is_never_cached(tmp_path):
    nib = pytest.importorskip("nibabel")
    data = tmp_path / "data"
    data.mkdir()
    image = nib.Nifti1Pair(np.zeros((4, 4, 2), np.uint8), np.eye(4))
    nib.save(image, str(data / "case.hdr"))
    age(data)
    cache = tmp_path / "cache"
    run(data / "case.hdr", LabelSpec(num_classes=3), cache=str(cache))
    volume = np.zeros((4, 4, 2), np.uint8)
    volume[0, 0, 0] = 9
    nib.save(nib.Nifti1Pair(volume, np.eye(4)), str(data / "other.hdr"))
    shutil.copyfile(data / "other.img", data / "case.img")  # new voxels, the same header
    after = run(data / "case.hdr", LabelSpec(num_classes=3), cache=str(cache))
    assert after.from_cache == 0 and found(after, "LG201")


# ---- the code and the environment ---------------------------------------------------------

def test_a_registered_rule_changes_every_key(tmp_path):
    data = masks_dataset(tmp_path / "data", count=3)
    cache = tmp_path / "cache"
    cached_run(data, cache)

    @rule(VALUE_OUTSIDE_SPEC, "mask")
    def every_mask_is_wrong(sample, spec):
        yield VALUE_OUTSIDE_SPEC.finding(sample.display, "planted by the test")

    try:
        with_rule = cached_run(data, cache)
    finally:
        unregister(every_mask_is_wrong)
    assert with_rule.from_cache == 0 and len(found(with_rule, "LG201")) == 3
    assert cached_run(data, cache).from_cache == 3  # the entries of the rules as they were


def test_entries_do_not_depend_on_which_rule_modules_a_process_imported():
    """A process that imported only the rules of the files it checks (a Dask worker handed a
    batch of masks) and one that imported every rule (the audit's own process) key entries
    alike: the package's rules are keyed by its sources, not by what is loaded, nor in which
    order it was."""
    script = ("import sys, importlib\n"
              "for name in sys.argv[1:]: importlib.import_module(name)\n"
              "from labelguard.core.cache import rules_digest\n"
              "print(rules_digest().hex())")
    digests = {subprocess.run([sys.executable, "-c", script, *modules], capture_output=True, text=True,
                              check=True).stdout.strip()
               for modules in (["labelguard.rules._masks"], ["labelguard.rules"],
                               ["labelguard.rules.lg301", "labelguard.rules", "labelguard.torch"])}
    assert len(digests) == 1, digests


def test_editing_a_rule_source_file_invalidates_without_a_version_bump(tmp_path):
    """A developer edits a rule (an editable install): the package's sources are hashed, so
    every entry computed by the old rule is out of reach."""
    package = tmp_path / "src"
    shutil.copytree(SRC / "labelguard", package / "labelguard", ignore=shutil.ignore_patterns("__pycache__"))
    data = masks_dataset(tmp_path / "data", count=3)
    env = {**os.environ, "PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "labelguard", "audit", str(data), "--num-classes", "3", "-f", "json",
               "--no-progress", "--no-config", "--cache-dir", str(tmp_path / "cache")]

    def from_cache() -> int:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout)["summary"]["from_cache"]

    assert from_cache() == 0
    assert from_cache() == 3
    rule_file = package / "labelguard" / "rules" / "lg205.py"
    rule_file.write_text(rule_file.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert from_cache() == 0
    # The same size, one letter changed: the sources' kept digest is not taken for it.
    rule_file.write_text(rule_file.read_text(encoding="utf-8").replace("# edited", "# EDITED"), encoding="utf-8")
    assert from_cache() == 0


def test_the_version_and_the_decoding_libraries_are_in_the_environment(monkeypatch):
    import labelguard._version

    before = cache_module.environment_digest()
    monkeypatch.setattr(cache_module, "_ENVIRONMENT", None)
    monkeypatch.setattr(labelguard._version, "__version__", "99.0.0")
    assert cache_module.environment_digest() != before
    monkeypatch.setattr(cache_module, "_ENVIRONMENT", None)
    monkeypatch.setattr(labelguard._version, "__version__", labelguard._version.__version__)
    monkeypatch.setattr(cache_module, "DECODING_LIBRARIES", ("numpy",))
    assert cache_module.environment_digest() != before


def test_installed_versions_read_what_importlib_metadata_reads(tmp_path, monkeypatch):
    from importlib import metadata

    (tmp_path / "Py_Yaml_Fork-2.1.dist-info").mkdir()  # a wheel's folder, its name spelled otherwise
    (tmp_path / "Py_Yaml_Fork-2.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: py-yaml.fork\nVersion: 2.1\n\nVersion: 9 in the description\n")
    (tmp_path / "legacy_lib.egg-info").mkdir()  # a development install: no version in the name
    (tmp_path / "legacy_lib.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 1.0\nName: legacy-lib\nVersion: 0.3\n")
    (tmp_path / "flat-1.0-py3.11.egg-info").write_text("Metadata-Version: 1.0\nName: flat\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = (*cache_module.DECODING_LIBRARIES, "py-yaml.fork", "legacy-lib", "flat", "no-such-library")
    versions = cache_module.installed_versions(names)
    for name in names:
        try:
            expected = metadata.version(name)
        except metadata.PackageNotFoundError:
            expected = None
        assert versions.get(name) == expected, name
    assert versions["py-yaml.fork"] == "2.1" and versions["legacy-lib"] == "0.3" and versions["flat"] == "1.0"
    assert "no-such-library" not in versions


def test_the_working_folder_is_part_of_the_key(tmp_path, monkeypatch):
    data = masks_dataset(tmp_path / "data", count=2, bad=0)
    cache = tmp_path / "cache"
    monkeypatch.chdir(tmp_path)
    first = cached_run(data, cache)
    monkeypatch.chdir(data)
    elsewhere = cached_run(data, cache)
    assert elsewhere.from_cache == 0  # its paths are shown relative to another folder
    assert found(first, "LG201")[0].path != found(elsewhere, "LG201")[0].path


# ---- the store --------------------------------------------------------------------------------

def store_files(cache: Path) -> list[Path]:
    """The packs and the files' own entries (not the key and memo files beside them)."""
    return sorted(p for p in (cache / STORE_VERSION).glob("*/*") if p.is_file() and not p.name.endswith(".tmp"))


def packs(cache: Path) -> list[Path]:
    return [p for p in store_files(cache) if p.name.endswith(PACK_SUFFIX)]


def own_entries(cache: Path) -> list[Path]:
    """The files' own entries: written for a file checked outside a whole block."""
    return [p for p in store_files(cache) if not p.name.endswith(PACK_SUFFIX)]


def mask_tasks(data: Path) -> list:
    from labelguard.layouts.base import AuditOptions, discover_datasets

    [dataset] = discover_datasets(str(data), AuditOptions())
    return list(dataset.tasks)


def whole_blocks(data: Path) -> list[list]:
    """The blocks of the dataset's tasks that get a pack (a block of one file has its own entry)."""
    return [block for block in blocks(mask_tasks(data)) if len(block) > 1]


def file_by_file(data: Path, cache: Path, monkeypatch) -> None:
    """Audit ``data`` through the cache with every file a block of its own, as the files of a
    pool's batch of slow files (a part of a block) are checked: each result in an entry of
    its own."""
    with monkeypatch.context() as patched:
        patched.setattr(cache_module, "BLOCK_FILES", 1)
        cached_run(data, cache)


def valid_store_file(cache: Path, path: Path) -> bool:
    """Whether ``path`` is a whole pack or entry signed with the cache's key."""
    import hmac

    key = (cache / STORE_VERSION / "key").read_bytes()
    data = path.read_bytes()
    for magic in (MAGIC, PACK_MAGIC):
        head = len(magic) + 32
        if data.startswith(magic) and len(data) > head:
            return hmac.compare_digest(hmac.digest(key, data[head:], "sha256"), data[len(magic):head])
    return False


@pytest.mark.parametrize("damage", ["truncated", "flipped", "emptied"])
def test_a_truncated_or_damaged_pack_is_a_miss_and_rewritten(tmp_path, damage):
    data = masks_dataset(tmp_path / "data", count=40, bad=1)
    cache = tmp_path / "cache"
    reference = cached_run(data, cache)
    stored = packs(cache)
    assert len(stored) == len(whole_blocks(data)) >= 1
    target = max(stored, key=lambda p: int(p.name.split(".")[-2]))  # the pack of the most files
    count = int(target.name.split(".")[-2])
    content = target.read_bytes()
    if damage == "truncated":
        target.write_bytes(content[:len(content) // 2])
    elif damage == "flipped":
        flipped = bytearray(content)
        flipped[-5] ^= 0xFF
        target.write_bytes(bytes(flipped))
    else:
        target.write_bytes(b"")
    after = cached_run(data, cache)
    assert after.from_cache == 40 - count
    assert comparable(after) == comparable(reference)
    assert valid_store_file(cache, target)  # rewritten whole
    assert cached_run(data, cache).from_cache == 40


def test_truncated_and_damaged_entries_of_files_are_ignored_and_rebuilt(tmp_path, monkeypatch):
    data = masks_dataset(tmp_path / "data", count=5, bad=1)
    cache = tmp_path / "cache"
    reference = run(data, LabelSpec(num_classes=3), cache=False)
    file_by_file(data, cache, monkeypatch)
    stored = own_entries(cache)
    assert len(stored) == 5 and not packs(cache)
    stored[0].write_bytes(stored[0].read_bytes()[:40])  # truncated
    damaged = bytearray(stored[1].read_bytes())
    damaged[-5] ^= 0xFF  # one flipped byte
    stored[1].write_bytes(bytes(damaged))
    stored[2].write_bytes(b"")
    after = cached_run(data, cache)  # no pack yet: each file's own entry answers
    assert after.from_cache == 2
    assert comparable(after) == comparable(reference)
    assert cached_run(data, cache).from_cache == 5  # now from packs (and entries of one-file blocks)


def test_a_block_of_unchanged_files_is_read_from_its_pack_and_an_edit_re_checks_one_file(tmp_path):
    data = masks_dataset(tmp_path / "data", count=64, bad=40)
    cache = tmp_path / "cache"
    reference = cached_run(data, cache)
    assert open_cache(CacheSettings(str(cache))).info().batches == len(whole_blocks(data))
    assert open_cache(CacheSettings(str(cache))).info().entries == 64
    second = cached_run(data, cache)
    assert second.from_cache == 64 and comparable(second) == comparable(reference)
    write_png(data / "m5.png", organic_mask((32, 32), classes=(0, 1, 2), seed=50))
    after = cached_run(data, cache)  # m5's pack answers for the other files of its block
    assert after.from_cache == 63 and comparable(after)["summary"]["findings"] == reference.to_dict()["summary"][
        "findings"]


def test_a_pack_rewritten_after_an_edit_keeps_the_results_of_the_other_files(tmp_path):
    # The entries' results are pickled together: the pack written after an edit holds the
    # results read from the pack before, as they were, beside the edited file's new one.
    data = masks_dataset(tmp_path / "data", count=64, bad=40)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    write_png(data / "m5.png", organic_mask((32, 32), classes=(0, 1, 2), seed=50))
    age(data)  # older than a racy write, so that its new result is stored
    edited = cached_run(data, cache)
    assert edited.from_cache == 63
    again = cached_run(data, cache)
    assert again.from_cache == 64 and comparable(again) == comparable(edited)
    assert open_cache(CacheSettings(str(cache))).info().entries == 64


def test_a_file_added_re_checks_its_own_block_only(tmp_path):
    data = masks_dataset(tmp_path / "data", count=300)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    before = {tuple(t.path for t in block) for block in blocks(mask_tasks(data))}
    write_png(data / "m150a.png", organic_mask((32, 32), classes=(0, 1, 2), seed=7))
    age(data)
    changed = [block for block in blocks(mask_tasks(data)) if tuple(t.path for t in block) not in before]
    # The block that takes the file; and, when the file's path hashes to a block's end, the
    # rest of the block it cut in two (the paths of tmp_path decide: 1 time in 64).
    assert any(t.path.endswith("m150a.png") for t in changed[0]) and len(changed) <= 2
    after = cached_run(data, cache)
    assert after.from_cache == 301 - sum(len(block) for block in changed)


def test_packs_written_by_one_process_are_read_by_another(tmp_path):
    data = masks_dataset(tmp_path / "data", count=120, bad=3)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "labelguard", "audit", str(data), "--num-classes", "3", "-f", "json",
               "--no-progress", "--no-config", "--cache-dir", str(cache)]
    first = subprocess.run([*command, "--workers", "2"], capture_output=True, text=True, cwd=tmp_path, timeout=240)
    assert json.loads(first.stdout)["summary"]["from_cache"] == 0, first.stderr
    assert packs(cache) and all(valid_store_file(cache, p) for p in store_files(cache))
    second = subprocess.run([*command, "--workers", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=240)
    assert json.loads(second.stdout)["summary"]["from_cache"] == 120, second.stderr
    report = json.loads(second.stdout)
    reference = json.loads(first.stdout)
    for each in (report, reference):
        each["summary"].pop("from_cache")
    assert _by_name(report) == _by_name(reference)


def test_batches_sized_by_time_still_find_the_results_of_the_batches_before_them(tmp_path):
    """A pool's batches grow with the speed of their files (a cached audit's are larger than
    the first audit's); a batch of slow files may be a part of a block, whose files get
    entries of their own. A later audit with other batches finds every result: the blocks
    depend on the files' paths only, and a block without a pack is looked up file by file.

    The batches' times are given (``took``), not measured: on a loaded machine, measured
    times made batches smaller than a block, and the test counted on the machine's speed."""
    from labelguard.core.engine import BlockPart, TimedBatches, run_batch

    root = tmp_path / "data"
    for index in range(300):
        write_png(root / f"m{index:04d}.png", np.full((4, 4), index % 3, dtype=np.uint8))
    age(root)
    tasks = mask_tasks(root)
    spec = LabelSpec(num_classes=3)
    settings = CacheSettings(str(tmp_path / "cache"))

    def audit_in_batches(per_file_seconds: list[float]) -> tuple[list[int], int, FileResult, int]:
        """Batches of ``tasks`` as a pool cuts them when each batch's files took the next
        of ``per_file_seconds`` each: (the batches' sizes, the files from the cache, the
        merge, the parts of blocks)."""
        timed = TimedBatches(iter(tasks), 20, most=1024, aligned=True)
        sizes, cached, merged, parts = [], 0, Summary(), 0
        for number, batch in enumerate(timed):
            result = run_batch(batch, spec, settings, not isinstance(batch, BlockPart))
            sizes.append(len(batch))
            parts += isinstance(batch, BlockPart)
            cached += result.cached
            merged.update(result.summary)
            timed.took(len(batch), per_file_seconds[min(number, len(per_file_seconds) - 1)] * len(batch))
        return sizes, cached, merged, parts

    # Fast files (batches of whole blocks), then slow ones (parts of a block), then fast again.
    first_sizes, first_cached, first, first_parts = audit_in_batches([0.001, 0.2, 0.2, 0.2, 0.0001])
    assert first_cached == 0 and first_parts > 0 and own_entries(tmp_path / "cache")
    sizes, cached, again, parts = audit_in_batches([0.00002])
    # Other batches (the blocks' sizes follow the temporary folder's path: the first batch may
    # already be the largest block), none a part of a block.
    assert sizes != first_sizes and len(sizes) < len(first_sizes) and parts == 0
    assert cached == 300
    counted = (300, Counter({value: 100 for value in range(3)}), Counter({value: 100 * 16 for value in range(3)}))
    assert (first.samples, first.value_files, first.value_pixels) == counted
    assert (again.samples, again.value_files, again.value_pixels) == counted


def test_an_entry_cannot_make_the_audit_call_a_function(tmp_path):
    data = masks_dataset(tmp_path / "data", count=1)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    [stored] = own_entries(cache)
    marker = tmp_path / "called"
    planted = pickle.dumps(_Planted(str(marker)))
    import hmac

    # Signed with the user's own key: the unpickler is what stands in the way.
    key = (cache / STORE_VERSION / "key").read_bytes()
    stored.write_bytes(MAGIC + hmac.digest(key, planted, "sha256") + planted)
    after = cached_run(data, cache)
    assert after.from_cache == 0 and not marker.exists()


@pytest.mark.parametrize("where", ["body", "result"])
def test_a_pack_cannot_make_the_audit_call_a_function(tmp_path, where):
    import hmac

    data = masks_dataset(tmp_path / "data", count=40)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    key = (cache / STORE_VERSION / "key").read_bytes()
    marker = tmp_path / "called"
    planted = pickle.dumps(_Planted(str(marker)))
    for pack in packs(cache):
        name = pack.parent.name[1:] + pack.name
        if where == "body":
            body = planted
        else:
            kept = pickle.loads(pack.read_bytes()[len(PACK_MAGIC) + 32:])
            body = pickle.dumps((name, planted, [(identity, []) for identity, _ in kept[2]], planted))
        pack.write_bytes(PACK_MAGIC + hmac.digest(key, body, "sha256") + body)
    after = cached_run(data, cache)
    assert not marker.exists()
    assert after.from_cache == 40 - sum(len(block) for block in whole_blocks(data))


class _Planted:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_two_audits_sharing_the_cache_at_once_are_both_correct(tmp_path):
    data = masks_dataset(tmp_path / "data", count=200, bad=7)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "labelguard", "audit", str(data), "--num-classes", "3", "-f", "json",
               "--no-progress", "--no-config", "--workers", "1", "--cache-dir", str(cache)]
    started = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
               for _ in range(2)]
    outputs = [process.communicate(timeout=240) for process in started]
    assert [process.returncode for process in started] == [1, 1], [err for _, err in outputs]
    reference = comparable(run(data, LabelSpec(num_classes=3), cache=False))
    for stdout, _ in outputs:
        report = json.loads(stdout)
        report["summary"].pop("from_cache")
        report = json.loads(json.dumps(report))
        reference_here = json.loads(json.dumps(reference))
        # The subprocesses ran from tmp_path; this process runs elsewhere: compare paths by name.
        assert _by_name(report) == _by_name(reference_here)
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=240)
    assert json.loads(again.stdout)["summary"]["from_cache"] == 200
    assert not [p for p in (cache / STORE_VERSION).rglob("*.tmp")]
    assert all(valid_store_file(cache, p) for p in store_files(cache))


def _by_name(report: dict) -> list:
    return sorted((f["code"], Path(f["path"]).name if f["path"] else None, f["message"].split(": ", 1)[-1])
                  for f in report["findings"])


def test_a_kill_9_while_packs_are_written_leaves_no_damaged_result(tmp_path):
    data = masks_dataset(tmp_path / "data", count=1500, bad=11)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "labelguard", "audit", str(data), "--num-classes", "3", "--no-progress",
               "--no-config", "--workers", "1", "-f", "json"]
    process = subprocess.Popen([*command, "--cache-dir", str(cache)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(packs(cache)) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.005)
    process.kill()
    process.wait(timeout=60)
    written = store_files(cache)
    assert written and all(valid_store_file(cache, p) for p in written)

    def report(*caching: str) -> dict:
        done = subprocess.run([*command, *caching], capture_output=True, text=True, cwd=tmp_path, timeout=240)
        return json.loads(done.stdout)

    reference = report("--no-cache")
    after = report("--cache-dir", str(cache))
    assert after["summary"]["from_cache"] >= 1 and _by_name(after) == _by_name(reference)
    assert report("--cache-dir", str(cache))["summary"]["from_cache"] == 1500


def test_an_unwritable_cache_is_said_and_the_audit_is_complete(tmp_path):
    data = masks_dataset(tmp_path / "data", count=2, bad=0)
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    report = cached_run(data, blocker)
    assert found(report, "LG201") and report.from_cache == 0
    assert f"the result cache {blocker} was not used, so every file was read and checked: it is not a folder" \
        in report.notes


def test_the_sweep_deletes_the_least_recently_used_packs_and_entries(tmp_path, monkeypatch):
    data = masks_dataset(tmp_path / "data", count=60)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    file_by_file(data, cache, monkeypatch)
    stored = store_files(cache)
    assert packs(cache) and own_entries(cache)
    size = sum(p.stat().st_size for p in stored)
    for rank, path in enumerate(stored):
        os.utime(path, (1_000_000 + rank, 1_000_000 + rank))
    temporary = stored[0].parent / "left.by.a.dead.writer.tmp"
    temporary.write_bytes(b"x")
    os.utime(temporary, (1_000_000, 1_000_000))
    bounded = ResultCache(CacheSettings(str(cache), max_bytes=size // 2))
    deleted = bounded.sweep(force=True)
    kept = store_files(cache)
    assert deleted >= 1 and set(kept) == set(stored[deleted:]) and not temporary.exists()
    assert bounded.info().size <= size // 2
    assert bounded.sweep() == 0  # not again so soon


def test_cache_info_and_clear(tmp_path):
    data = masks_dataset(tmp_path / "data", count=3)
    cache = tmp_path / "cache"
    cached_run(data, cache)
    mine = cache / "my-notes.txt"
    mine.write_text("not labelguard's", encoding="utf-8")
    info = CliRunner().invoke(main, ["cache", "info", "--cache-dir", str(cache)])
    assert info.exit_code == 0
    assert f"location: {cache}" in info.output
    assert f"entries:  3 files' results, {len(whole_blocks(data))} batches' results" in info.output
    assert "bound:    1,073,741,824 bytes" in info.output
    cleared = CliRunner().invoke(main, ["cache", "clear", "--cache-dir", str(cache)])
    assert cleared.exit_code == 0 and "deleted 3 cached results" in cleared.output
    assert mine.exists() and not (cache / STORE_VERSION).exists()
    assert cached_run(data, cache).from_cache == 0


def test_cache_info_reads_the_config_given(tmp_path, monkeypatch):
    (tmp_path / "labelguard.toml").write_text('[audit]\ncache_dir = "here"\ncache_max_bytes = 5000\n',
                                              encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    info = CliRunner().invoke(main, ["cache", "info", "--config", "labelguard.toml"])
    assert f"location: {tmp_path / 'here'}" in info.output and "bound:    5,000 bytes" in info.output


# ---- flags and config ---------------------------------------------------------------------

def test_no_cache_writes_nothing_and_the_flags_exclude_each_other(tmp_path):
    data = masks_dataset(tmp_path / "data", count=2)
    result = CliRunner().invoke(main, ["audit", str(data), "--no-progress", "--no-config", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert not os.path.exists(default_cache_dir())
    both = CliRunner().invoke(main, ["audit", str(data), "--no-cache", "--cache-dir", str(tmp_path / "c")])
    assert both.exit_code == 2 and "contradict" in both.output


def test_the_text_report_says_how_many_files_came_from_the_cache(tmp_path):
    data = masks_dataset(tmp_path / "data", count=3)
    arguments = ["audit", str(data), "--no-progress", "--no-config", "--num-classes", "3",
                 "--cache-dir", str(tmp_path / "cache")]
    first = CliRunner().invoke(main, arguments)
    assert "cache:" not in first.output
    second = CliRunner().invoke(main, arguments)
    assert "cache:     3 of 3 files unchanged since an earlier audit: their results came from the cache" \
        in second.output


def test_the_config_chooses_the_cache(tmp_path):
    data = masks_dataset(tmp_path / "data", count=2)
    config = tmp_path / "data" / "labelguard.toml"
    config.write_text('[audit]\ncache_dir = "../project-cache"\n', encoding="utf-8")
    age(data)
    run_with_config = lambda **kwargs: audit(data, LabelSpec(num_classes=3), config_file=str(config),  # noqa: E731
                                             **kwargs)
    run_with_config()
    assert open_cache(CacheSettings(str(tmp_path / "project-cache"))).info().entries == 2
    assert run_with_config().from_cache == 2
    config.write_text("[audit]\ncache = false\n", encoding="utf-8")
    age(data)
    assert run_with_config().from_cache == 0
    assert run_with_config(cache=str(tmp_path / "project-cache")).from_cache == 2  # the argument wins


@pytest.mark.parametrize("line, message", [
    ("cache = 1", "must be true or false"),
    ("cache_dir = 3", "must be a non-empty string"),
    ("cache_max_bytes = 0", "must be a whole number >= 1"),
])
def test_cache_keys_of_the_wrong_type_are_errors_naming_the_key(tmp_path, line, message):
    from labelguard.config import load_config

    config = tmp_path / "labelguard.toml"
    config.write_text(f"[audit]\n{line}\n", encoding="utf-8")
    with pytest.raises(SpecError, match=message):
        load_config(str(config))


# ---- racy files, fixes ----------------------------------------------------------------------

def test_a_file_written_moments_ago_is_read_again_next_time(tmp_path):
    data = tmp_path / "data"
    write_png(data / "m.png", organic_mask((16, 16), seed=1))
    cache = tmp_path / "cache"
    cached_run(data, cache)
    # Its mtime may not move if it is written again within the file system's tick.
    assert cached_run(data, cache).from_cache == 0


def test_fix_rewrites_are_seen_by_the_next_audit(tmp_path):
    from labelguard.fix import remap

    data = masks_dataset(tmp_path / "data", count=4, bad=2)
    cache = tmp_path / "cache"
    assert found(cached_run(data, cache), "LG201")
    remap(str(data), {7: 0}, spec=LabelSpec(num_classes=3), apply=True)
    after = cached_run(data, cache)
    assert not found(after, "LG201") and after.from_cache == 3


# ---- the parts that make it exact ---------------------------------------------------------

def test_canonical_form_is_the_same_in_processes_with_other_hash_seeds():
    value = (frozenset({"cat", "dog", "bird"}), {"b": 1, "a": (2.5, None)}, LabelSpec(classes=("x", "y")))
    script = ("import sys; from labelguard.core.cache import canonical; from labelguard.core.spec import LabelSpec;"
              "sys.stdout.write(canonical((frozenset({'cat', 'dog', 'bird'}), {'b': 1, 'a': (2.5, None)}, "
              "LabelSpec(classes=('x', 'y')))).hex())")
    outputs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert outputs == {canonical(value).hex()}
    assert canonical(1) != canonical(True) != canonical(1.0) != canonical("1")
    assert canonical((1, 2)) != canonical([1, 2]) != canonical(((1, 2),))
    with pytest.raises(TypeError):
        canonical(object())


paths = st.sampled_from(["a.png", "b.png", "c.png", "d.png"])


@st.composite
def summaries(draw) -> Summary:
    summary = Summary()
    for _ in range(draw(st.integers(0, 3))):
        values = draw(st.lists(st.integers(-3, 300), min_size=1, max_size=5, unique=True))
        summary.add_values(draw(paths), values, [draw(st.integers(1, 50)) for _ in values])
    for _ in range(draw(st.integers(0, 2))):
        summary.add_classes(draw(paths), Counter(draw(st.lists(st.sampled_from(["cat", "dog"]), max_size=4))))
    summary.samples = draw(st.integers(0, 5))
    summary.unreadable = draw(st.integers(0, 2))
    summary.kinds.update(draw(st.lists(st.sampled_from(["mask", "coco"]), max_size=3)))
    if draw(st.booleans()):
        summary.add_remark("read through a link", draw(paths))
    return summary


@settings(max_examples=60, deadline=None)
@given(st.lists(summaries(), min_size=1, max_size=4))
def test_a_cached_summary_merges_as_the_summary_it_was_stored_from(parts):
    direct, cached = Summary(), Summary()
    for summary in parts:
        direct.update(summary)
        stored = pickle.loads(pickle.dumps(_summary_parts(summary)))
        cached.update(_parts_view(stored))
    assert cached == direct


def test_the_digest_of_the_libraries_is_kept_until_one_is_installed_upgraded_or_edited(tmp_path, monkeypatch):
    site, memo = tmp_path / "site", tmp_path / "memo"
    metadata = site / "fakelib-1.0.dist-info" / "METADATA"
    metadata.parent.mkdir(parents=True)
    memo.mkdir()
    metadata.write_text("Metadata-Version: 2.1\nName: fakelib\nVersion: 1.0\n", encoding="utf-8")
    for path in (metadata, metadata.parent, site):
        os.utime(path, (time.time() - 60, time.time() - 60))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(site)  # sys.path's "" is the working folder: one written just now is not kept
    monkeypatch.setattr(cache_module, "DECODING_LIBRARIES", ("fakelib",))
    plain = cache_module._libraries_digest()
    assert cache_module._libraries_digest(str(memo)) == plain
    kept = memo / cache_module.LIBRARIES_FILE
    record = json.loads(kept.read_text(encoding="utf-8"))
    assert record["digest"] == plain.hex() and [path for path, _ in record["files"]] == [str(metadata)]
    record["digest"] = "ab" * 32  # proves the next call reads the memo
    kept.write_text(json.dumps(record), encoding="utf-8")
    assert cache_module._libraries_digest(str(memo)) == b"\xab" * 32

    metadata.write_text("Metadata-Version: 2.1\nName: fakelib\nVersion: 2.0\n", encoding="utf-8")  # same size
    edited = cache_module._libraries_digest(str(memo))
    assert edited == cache_module._libraries_digest() != plain
    upgraded = site / "fakelib-3.0.dist-info"
    metadata.parent.rename(upgraded)  # moves the site folder's signature
    (upgraded / "METADATA").write_text("Metadata-Version: 2.1\nName: fakelib\nVersion: 3.0\n", encoding="utf-8")
    os.utime(upgraded / "METADATA", (time.time() - 60, time.time() - 60))
    assert cache_module._libraries_digest(str(memo)) == cache_module._libraries_digest() not in (plain, edited)
    assert json.loads(kept.read_text(encoding="utf-8"))["digest"] == "ab" * 32  # modified just now: not kept


def test_the_digest_of_the_sources_is_kept_by_their_signatures_and_rehashed_after_an_edit(tmp_path):
    package, memo = tmp_path / "package", tmp_path / "memo"
    (package / "sub").mkdir(parents=True)
    memo.mkdir()
    for relative in ("a.py", "sub/b.py"):
        (package / relative).write_text(f"X = {relative!r}\n", encoding="utf-8")
        os.utime(package / relative, (time.time() - 60, time.time() - 60))
    plain = cache_module._source_digest(str(package))
    assert cache_module._source_digest(str(package), str(memo)) == plain
    (kept,) = memo.iterdir()
    assert kept.name == cache_module.SOURCES_FILE and kept.read_bytes()[32:] == plain
    assert cache_module._source_digest(str(package), str(memo)) == plain  # read from the memo
    (package / "sub" / "b.py").write_text("X = 'sub/c.py'\n", encoding="utf-8")  # same size, now
    edited = cache_module._source_digest(str(package), str(memo))
    assert edited == cache_module._source_digest(str(package)) != plain
    assert kept.read_bytes()[32:] == plain  # modified in the racy window: not kept


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh0123456789_", min_size=1, max_size=12), min_size=1, max_size=400,
                unique=True), st.data())
def test_blocks_depend_on_the_paths_alone_and_an_insertion_changes_one_block(names, data):
    """Blocks cover the tasks in order, each ends at a cut of its last path (or the bound, or the
    end); a path inserted anywhere leaves every block before it, and every one after the
    block it joins, as it was (the packs a later audit finds)."""
    from labelguard.core.tasks import FileTask

    def tasks_of(paths: list[str]) -> list:
        return [FileTask(processor=print, path=f"/data/{name}.png", display=name) for name in paths]

    cut = [[task.path for task in block] for block in blocks(tasks_of(names))]
    assert [path for block in cut for path in block] == [f"/data/{name}.png" for name in names]
    assert all(len(block) <= cache_module.MAX_BLOCK_FILES for block in cut)
    inserted = data.draw(st.text(alphabet="xyz", min_size=13, max_size=14))  # never among the names
    where = data.draw(st.integers(0, len(names)))
    after = [[task.path for task in block] for block in blocks(tasks_of(names[:where] + [inserted] + names[where:]))]
    if all(len(block) < cache_module.MAX_BLOCK_FILES for block in cut + after):
        assert len([block for block in after if block not in cut]) <= 2  # its block, maybe split in two
        assert len([block for block in cut if block not in after]) <= 1
