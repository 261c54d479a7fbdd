"""Datasets in object storage: audited through ``s3://`` URLs on a real S3 API (moto's
server on loopback) and from a local copy of the same files, with identical findings (their
paths differ by the prefix only); the result cache on objects; the path policies for URLs;
``fix`` never writing the store (a copy under ``--out`` is fixed instead). The object storage layer itself is :mod:`labelguard.core.storage`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from annotation_builders import (
    classes_map, classification_csv, coco_box, coco_categories, coco_dataset, coco_image, imagefolder, write_ade20k,
)
from builders import organic_mask, truncate, write_h5, write_list, write_nifti, write_png
from detection_builders import write_darknet, write_voc, write_yolo
from s3_server import s3_server  # noqa: F401  (the fixture)

from labelguard import audit
from labelguard.core import storage
from labelguard.core.spec import LabelSpec
from labelguard.core.spec import TokenSpec
from labelguard.core.paths import display_path, inside_root

SRC = str(Path(__file__).resolve().parents[1] / "src")


# ---- the datasets, written locally and uploaded as they are ------------------------------------

def masks_dataset(root: Path) -> Path:
    """Images and masks paired by name, with findings: a value outside the spec, a damaged
    PNG, an image of another size than its mask, an image without a mask, masks without
    images (a NIfTI volume and an HDF5 label, both read), and a file list naming a mask that
    does not exist."""
    write_png(root / "masks" / "a.png", organic_mask((16, 16), (0, 1), seed=1))
    write_png(root / "masks" / "b.png", organic_mask((16, 16), (0, 1, 7), seed=2))
    truncate(write_png(root / "masks" / "c.png", organic_mask((16, 16), (0, 2), seed=3)))
    write_png(root / "masks" / "d.png", organic_mask((16, 16), (0, 2), seed=4))
    write_nifti(root / "masks" / "vol.nii.gz", np.array([[[0, 1], [5, 1]], [[0, 0], [2, 1]]], dtype=np.uint8))
    write_h5(root / "masks" / "seg.h5", label=np.array([[0, 2], [9, 1]], dtype=np.uint8))
    for name, size in (("a", 16), ("b", 16), ("c", 16), ("d", 12), ("orphan", 16)):
        write_png(root / "images" / f"{name}.png", np.zeros((size, size, 3), np.uint8))
    write_list(root / "lists" / "train.txt", ["masks/a.png", "masks/b.png", "masks/missing.png"])
    return root


def coco_files(root: Path) -> Path:
    """A COCO file naming an image that is not there, one that leads out of the dataset and
    a category it does not declare."""
    images = [coco_image(1, "000001.jpg"), coco_image(2, "000002.jpg"), coco_image(3, "gone.jpg"),
              coco_image(4, "../../../elsewhere.jpg")]
    annotations = [coco_box(1, 1, 1), coco_box(2, 2, 2), coco_box(3, 3, 9), coco_box(4, 4, 1)]
    coco_dataset(root, images=images, annotations=annotations, categories=coco_categories(["cat", "dog"]))
    (root / "images" / "train" / "gone.jpg").unlink()
    return root


def voc_files(root: Path) -> Path:
    """A VOC folder whose split list names an id without an annotation, with an object of an
    undeclared class."""
    return write_voc(root, {"000001": [("cat", (1, 1, 10, 10))], "000002": [("dog", (2, 2, 8, 8))]},
                     splits={"train": ["000001", "000002", "000003"]}, labels=["cat"])


def normalized(report, root: str) -> list[str]:
    """The report's findings as JSON, with the dataset's root (as the findings show it)
    written ``<root>``, sorted."""
    shown = display_path(root)
    return sorted(json.dumps(f.to_dict(), sort_keys=True, default=str).replace(shown, "<root>")
                  for f in report.findings)


def files_of(report, root: str) -> list[str]:
    shown = display_path(root)
    return [path.replace(shown, "<root>") for path in report.files]


@pytest.fixture(scope="module")
def uploaded(s3_server, tmp_path_factory):
    """The three datasets, written under a local folder and uploaded below ``s3://data``."""
    local = tmp_path_factory.mktemp("object-storage")
    masks_dataset(local / "masks_ds")
    coco_files(local / "coco_ds")
    voc_files(local / "voc_ds")
    classification_csv(local / "csv_ds", {"a.jpg": "cat", "b.jpg": "dog", "c.jpg": "cat"}, missing=("c.jpg",))
    imagefolder(local / "folders_ds", {"train": {"cat": 2, "dog": 1}, "val": {"cat": 1}})
    write_yolo(local / "yolo_ds", {"train": {"1": [(0, 0.5, 0.5, 0.2, 0.2)], "2": [(5, 0.5, 0.5, 0.2, 0.2)]},
                                   "val": {"3": [(1, 0.5, 0.5, 0.2, 0.2)]}}, names=["cat", "dog"])
    write_darknet(local / "darknet_ds" / "data", {"1": [(0, 0.5, 0.5, 0.2, 0.2)], "2": [(3, 0.5, 0.5, 0.2, 0.2)]},
                  names=["cat", "dog"], listed=["1", "2", "9"])
    # ADE20K, found by its x.json beside x_seg.png two folders down (a walk that looks at JSON
    # names); a class past the spec's 3,689.
    write_ade20k(local / "ade_ds", "1", classes_map([401, 1831]))
    write_ade20k(local / "ade_ds", "2", classes_map([401, 3700]))
    bucket = s3_server.bucket("data")
    s3_server.upload(local, bucket)
    return local, bucket


SPEC = LabelSpec(num_classes=3)
# The tokenized datasets' spec: an embedding of 100 rows, which their id 500 passes.
TOKEN_SPEC = LabelSpec(tokens=TokenSpec(vocab_size=100, origins=(("vocab_size", "the test"),)))


@pytest.mark.parametrize("name, spec, lists", [
    ("masks_ds", SPEC, ()),
    ("masks_ds", SPEC, ("lists/train.txt",)),
    ("coco_ds", None, ()),
    ("voc_ds", None, ()),
    ("csv_ds", None, ()),
    ("folders_ds", None, ()),
    ("yolo_ds", None, ()),
    ("darknet_ds", None, ()),
    ("ade_ds", LabelSpec(num_classes=3689), ()),
])
def test_an_audit_through_s3_finds_what_the_local_copy_has(s3_server, uploaded, name, spec, lists):
    local, bucket = uploaded
    local_root, remote_root = str(local / name), f"{bucket}/{name}"
    local_report = audit(local_root, spec, use_project_config=False, cache=False,
                         options=_options(local_root, lists))
    remote_report = audit(remote_root, spec, use_project_config=False, cache=False,
                          options=_options(remote_root, lists), storage_options=s3_server.options)
    assert normalized(remote_report, remote_root) == normalized(local_report, local_root)
    assert files_of(remote_report, remote_root) == files_of(local_report, local_root)
    assert remote_report.summary.samples == local_report.summary.samples > 0
    assert remote_report.layouts == local_report.layouts
    assert name != "ade_ds" or local_report.layouts == ["ade20k"]
    assert not remote_report.errors and not local_report.errors
    # The findings name the objects by their URLs.
    named = {f.path for f in remote_report.findings if f.path}
    assert named and all(path.startswith(remote_root + "/") for path in named), named


@pytest.fixture(scope="module")
def tokens_uploaded(s3_server, tmp_path_factory):
    """Tokenized datasets in each layout (Hub Parquet and Arrow files, JSON lines, a
    ``save_to_disk`` folder), a token id past the vocabulary in each, uploaded below ``s3://tokens``."""
    from nlp_builders import save_dataset, write_arrow_file, write_jsonl, write_parquet

    local = tmp_path_factory.mktemp("tokens-storage")
    rows = {"input_ids": [[1, 2, 3], [4, 500, 6], [7, 8, 9]], "attention_mask": [[1, 1, 1]] * 3}
    for shard in range(3):  # with the Arrow file, enough files for a pool of workers
        write_parquet(local / "hub" / "data" / f"train-0000{shard}-of-00003.parquet", rows, row_group_size=2)
    write_arrow_file(local / "hub" / "data" / "validation.arrow", rows, batch_rows=2)
    write_jsonl(local / "lines" / "train.jsonl", rows)
    save_dataset(local / "saved", rows)
    bucket = s3_server.bucket("tokens")
    s3_server.upload(local, bucket)
    return local, bucket


@pytest.mark.parametrize("name", ["hub", "lines", "saved"])
def test_tokenized_data_through_s3_has_the_findings_of_the_local_copy(s3_server, tokens_uploaded, name):
    """The token layout finds its files by the storage layer and the reader streams an
    object in ranges (a Parquet footer, then its row groups)."""
    local, bucket = tokens_uploaded
    spec = TOKEN_SPEC
    local_root, remote_root = str(local / name), f"{bucket}/{name}"
    local_report = audit(local_root, spec, use_project_config=False, cache=False)
    remote_report = audit(remote_root, spec, use_project_config=False, cache=False,
                          storage_options=s3_server.options)
    assert remote_report.layouts == local_report.layouts == ["tokens"]
    assert normalized(remote_report, remote_root) == normalized(local_report, local_root)
    assert files_of(remote_report, remote_root) == files_of(local_report, local_root)
    assert not remote_report.errors and not local_report.errors
    assert {f.code for f in remote_report.findings} >= {"LG601"}
    assert remote_report.summary.samples == local_report.summary.samples > 0
    if name == "hub":  # four files: worker processes stream the objects with the audit's access
        two = audit(remote_root, spec, use_project_config=False, cache=False, storage_options=s3_server.options,
                    workers=2)
        assert normalized(two, remote_root) == normalized(remote_report, remote_root) and not two.errors


@pytest.mark.parametrize("name", ["masks_ds", "voc_ds", "coco_ds"])
def test_discovery_lists_each_prefix_once_or_twice_not_once_per_probe(s3_server, uploaded, monkeypatch, name):
    """The layouts' probes ask about the same prefixes again and again (32 listings and 111
    looks at names for a masks prefix before): a discovery keeps what the store answered."""
    from collections import Counter

    from labelguard.layouts import AuditOptions
    from labelguard.layouts.base import discover_datasets

    _, bucket = uploaded
    storage.grant(storage.access_for([bucket], s3_server.options))
    asked: Counter = Counter()
    for function in ("_listed_entries", "_info"):
        real = getattr(storage, function)

        def counted(url, *args, _real=real, _function=function, **kwargs):
            asked[_function, storage.normpath(url).rstrip("/")] += 1
            return _real(url, *args, **kwargs)

        monkeypatch.setattr(storage, function, counted)
    found = discover_datasets(f"{bucket}/{name}", AuditOptions())
    assert sum(len(d.tasks) for d in found) > 0
    listings = Counter({url: n for (function, url), n in asked.items() if function == "_listed_entries"})
    looks = sum(n for (function, _), n in asked.items() if function == "_info")
    assert max(listings.values()) <= 2, listings
    assert looks <= 12, asked


@pytest.mark.parametrize("name", ["masks_ds", "voc_ds", "coco_ds"])
def test_a_listing_too_long_to_look_names_up_in_is_kept_packed(s3_server, uploaded, monkeypatch, name):
    """Past KEPT_ENTRIES a prefix's listing is kept packed for the probes that walk it (a
    flat prefix of a million masks is listed once by detection, not once per probe); past
    KEPT_BYTES, in a temporary file, closed when discovery is done; past SPILLED_BYTES too,
    it is listed again per probe. The tasks are the same every way."""
    import tempfile
    from collections import Counter

    from labelguard.layouts import AuditOptions
    from labelguard.layouts.base import discover_datasets

    _, bucket = uploaded
    storage.grant(storage.access_for([bucket], s3_server.options))
    asked: Counter = Counter()
    real = storage._listed_entries

    def counted(url, *args, **kwargs):
        asked[storage.normpath(url).rstrip("/")] += 1
        return real(url, *args, **kwargs)

    monkeypatch.setattr(storage, "_listed_entries", counted)

    def discovered():
        asked.clear()
        found = discover_datasets(f"{bucket}/{name}", AuditOptions())
        return [(task.path, task.image) for d in found for task in d.tasks], Counter(asked)

    files = []
    real_file = tempfile.TemporaryFile

    def recorded(*args, **kwargs):
        files.append(real_file(*args, **kwargs))
        return files[-1]

    monkeypatch.setattr(tempfile, "TemporaryFile", recorded)
    kept_tasks, kept = discovered()
    monkeypatch.setattr(storage, "KEPT_ENTRIES", 2)
    packed_tasks, packed = discovered()
    monkeypatch.setattr(storage, "KEPT_BYTES", 0)
    monkeypatch.setattr(storage, "SPILL_CHUNK", 16)  # written and read back in many pieces
    spilled_tasks, spilled = discovered()
    assert files and all(file.closed for file in files)
    monkeypatch.setattr(storage, "SPILLED_BYTES", 0)
    listed_tasks, listed = discovered()
    assert kept_tasks == packed_tasks == spilled_tasks == listed_tasks and kept_tasks
    assert max(packed.values()) == max(spilled.values()) == 1, (packed, spilled)  # each prefix listed once
    assert sum(listed.values()) > sum(spilled.values()), (listed, spilled)


def _options(root: str, lists: tuple[str, ...]):
    from labelguard.layouts import AuditOptions

    return AuditOptions(lists=tuple(f"{root}/{entry}" for entry in lists))


def test_the_masks_dataset_through_s3_has_its_findings(s3_server, uploaded):
    _, bucket = uploaded
    root = f"{bucket}/masks_ds"
    report = audit(root, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options)
    codes = {(f.code, f.path) for f in report.findings}
    assert ("LG201", f"{root}/masks/b.png") in codes  # value 7 of 3 classes
    assert ("LG201", f"{root}/masks/vol.nii.gz") in codes  # NIfTI read from its bytes
    assert ("LG201", f"{root}/masks/seg.h5") in codes  # HDF5 read from its bytes
    assert ("LG001", f"{root}/masks/c.png") in codes  # damaged
    assert ("LG206", f"{root}/masks/d.png") in codes  # its image has another size
    assert ("LG002", f"{root}/images/orphan.png") in codes
    listed = audit(root, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options,
                   options=_options(root, ("lists/train.txt",)))
    missing = [f for f in listed.findings if f.code == "LG003"]
    assert [f.path for f in missing] == [f"{root}/lists/train.txt"] and "masks/missing.png" in missing[0].message


def test_two_workers_read_s3_as_one_does(s3_server, uploaded):
    # The workers are new processes (a fork server: s3fs runs a thread): each task brings
    # the audit's access to the bucket, and the worker opens its own filesystem.
    _, bucket = uploaded
    root = f"{bucket}/masks_ds"
    one = audit(root, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options, workers=1)
    two = audit(root, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options, workers=2)
    assert normalized(two, root) == normalized(one, root)
    assert not two.errors


@pytest.mark.parametrize("datasets, name", [
    ("uploaded", "masks_ds"), ("uploaded", "coco_ds"), ("uploaded", "voc_ds"),
    ("tokens_uploaded", "hub"),  # token files streamed from the objects in ranges
])
def test_a_dask_cluster_reads_s3_as_the_local_copy_is_read(s3_server, request, datasets, name):
    """The workers of a LocalCluster (processes of their own) open the bucket with the audit's
    access that each task carries: the findings are the local copy's."""
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    local, bucket = request.getfixturevalue(datasets)
    local_root, remote_root = str(local / name), f"{bucket}/{name}"
    spec = {"masks_ds": SPEC, "hub": TOKEN_SPEC}.get(name)
    local_report = audit(local_root, spec, use_project_config=False, cache=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        remote_report = audit(remote_root, spec, use_project_config=False, cache=False, client=client,
                              storage_options=s3_server.options)
    assert normalized(remote_report, remote_root) == normalized(local_report, local_root)
    assert remote_report.summary.samples == local_report.summary.samples > 0
    assert not remote_report.errors


def test_the_cache_keys_an_object_on_its_etag_and_sees_it_change(s3_server, tmp_path):
    bucket = s3_server.bucket("cached")
    local = masks_dataset(tmp_path / "ds")
    root = s3_server.upload(local, f"{bucket}/ds")
    cache = tmp_path / "cache"

    def run():
        return audit(root, SPEC, use_project_config=False, cache=str(cache), storage_options=s3_server.options)

    first = run()
    second = run()
    assert first.from_cache == 0
    assert second.from_cache == len(second.files) > 0
    assert normalized(second, root) == normalized(first, root)
    # One object rewritten (same size: a timestamp would not tell): exactly it is read again.
    fixed = np.where(organic_mask((16, 16), (0, 1, 7), seed=2) == 7, 2, organic_mask((16, 16), (0, 1, 7), seed=2))
    write_png(tmp_path / "b.png", fixed.astype(np.uint8))
    s3_server.put(f"{root}/masks/b.png", (tmp_path / "b.png").read_bytes())
    third = run()
    assert third.from_cache == len(third.files) - 1
    assert ("LG201", f"{root}/masks/b.png") not in {(f.code, f.path) for f in third.findings}


def test_an_object_without_a_content_tag_is_keyed_on_a_hash_of_its_bytes(tmp_path):
    # fsspec's in-memory filesystem lists no ETag: the cache hashes the bytes it reads.
    pytest.importorskip("fsspec")
    import fsspec

    memory = fsspec.filesystem("memory")
    root = "memory://lg-hashed/ds"
    local = tmp_path / "ds"
    write_png(local / "masks" / "a.png", organic_mask((8, 8), (0, 1), seed=1))
    write_png(local / "masks" / "b.png", organic_mask((8, 8), (0, 5), seed=2))
    for path in local.rglob("*.png"):
        memory.pipe(f"{root}/{path.relative_to(local).as_posix()}", path.read_bytes())
    try:
        cache = tmp_path / "cache"
        first = audit(root, SPEC, use_project_config=False, cache=str(cache))
        second = audit(root, SPEC, use_project_config=False, cache=str(cache))
        assert storage.validator(storage.info(f"{root}/masks/a.png")) is None
        assert storage.content_digest(f"{root}/masks/a.png").startswith(b"h:")
        assert (first.from_cache, second.from_cache) == (0, 2)
        # A hit looks at the object again and rewrites nothing (an object has no signature to refresh).
        entries = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in cache.rglob("*") if p.is_file()}
        assert audit(root, SPEC, use_project_config=False, cache=str(cache)).from_cache == 2
        assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in cache.rglob("*") if p.is_file()} == entries
        write_png(tmp_path / "b.png", organic_mask((8, 8), (0, 1), seed=2))
        memory.pipe(f"{root}/masks/b.png", (tmp_path / "b.png").read_bytes())
        third = audit(root, SPEC, use_project_config=False, cache=str(cache))
        assert third.from_cache == 1 and not [f for f in third.findings if f.code == "LG201"]
    finally:
        memory.rm("memory://lg-hashed", recursive=True)


# ---- path policies: what the data names never leaves the dataset -----------------------------

def test_url_paths_are_normalised_inside_their_bucket():
    assert storage.normpath("s3://b/ds/./x/../y.png") == "s3://b/ds/y.png"
    assert storage.normpath("s3://b/ds/../../../x") == "s3://x"  # never above the bucket: another bucket
    assert inside_root("s3://b/ds/masks/a.png", "s3://b/ds")
    assert not inside_root("s3://b/ds-other/a.png", "s3://b/ds")
    assert not inside_root(storage.normpath("s3://b/ds/../other/a.png"), "s3://b/ds")
    assert not inside_root("/b/ds/a.png", "s3://b/ds") and not inside_root("s3://b/ds/a.png", "/b/ds")
    assert storage.relpath("s3://b/ds/masks/a.png", "s3://b/ds") == "masks/a.png"
    assert display_path("s3://b/ds/a.png") == "s3://b/ds/a.png"


def test_a_url_that_was_not_given_is_a_path_that_does_not_exist(s3_server, uploaded, tmp_path):
    # The bucket exists and holds the file, but nothing granted it to this audit: a list of a
    # local dataset that names it selects nothing, and nothing is read from it.
    _, bucket = uploaded
    url = f"{bucket}/masks_ds/masks/a.png"
    storage.revoke(storage.access_for([url], s3_server.options))
    assert not storage.is_granted_url(url) and not storage.exists(url) and not storage.isfile(url)
    write_png(tmp_path / "masks" / "x.png", organic_mask((8, 8), (0, 1)))
    write_list(tmp_path / "lists" / "train.txt", ["masks/x.png", url])
    report = audit(str(tmp_path), SPEC, use_project_config=False, cache=False,
                   options=_options(str(tmp_path), ("lists/train.txt",)))
    assert [Path(p).name for p in report.files] == ["x.png"]
    assert {f.code for f in report.findings if f.path and f.path.endswith("train.txt")} <= {"LG003", "LG005"}
    from labelguard.readers.base import ReadError, read_bytes

    with pytest.raises(ReadError, match="outside the locations this audit was given"):
        read_bytes(url)


def test_names_in_remote_files_that_leave_the_prefix_are_flagged_not_read(s3_server, tmp_path):
    bucket = s3_server.bucket("escapes")
    local = tmp_path / "ds"
    write_png(local / "masks" / "a.png", organic_mask((8, 8), (0, 1)))
    write_png(tmp_path / "outside" / "b.png", organic_mask((8, 8), (0, 1)))
    write_list(local / "lists" / "train.txt", ["masks/a.png", "../outside/b.png", "/etc/hostname"])
    s3_server.upload(tmp_path, bucket)
    root = f"{bucket}/ds"
    report = audit(root, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options,
                   options=_options(root, ("lists/train.txt",)))
    assert list(report.files) == [f"{root}/masks/a.png"]  # the file outside the prefix is never audited
    escaping = [f for f in report.findings if f.code == "LG005"]
    assert [f.data["entry"] for f in escaping] == ["../outside/b.png"], report.findings
    # An absolute local path in a remote list is looked for under the prefix only.
    assert any(f.code == "LG003" and f.data.get("entry") == "/etc/hostname" for f in report.findings)


def test_a_saved_dataset_in_s3_naming_data_outside_its_prefix_is_flagged_not_read(s3_server, tmp_path):
    """state.json's data file names go through the one resolution: one leaving the prefix is
    LG005 and never read, even though an object is there."""
    from nlp_builders import save_dataset, write_arrow_file

    rows = {"input_ids": [[1, 2], [3, 4]]}
    save_dataset(tmp_path / "ds" / "saved", rows)
    write_arrow_file(tmp_path / "outside" / "data-00000-of-00001.arrow", {"input_ids": [[999]]})
    state = tmp_path / "ds" / "saved" / "state.json"
    recorded = json.loads(state.read_text(encoding="utf-8"))
    recorded["_data_files"].append({"filename": "../../outside/data-00000-of-00001.arrow"})
    state.write_text(json.dumps(recorded), encoding="utf-8")
    bucket = s3_server.bucket("tokenescapes")
    s3_server.upload(tmp_path, bucket)
    root = f"{bucket}/ds/saved"
    spec = TOKEN_SPEC
    report = audit(root, spec, use_project_config=False, cache=False, storage_options=s3_server.options)
    assert all(path.startswith(root + "/") for path in report.files) and len(report.files) == 1
    assert [f.data["entry"] for f in report.findings if f.code == "LG005"] == ["../../outside/data-00000-of-00001.arrow"]
    assert not [f for f in report.findings if f.code == "LG601"]  # the id 999 outside was never read


def test_a_stream_of_an_object_outside_the_locations_given_is_refused_unread():
    from labelguard.readers.base import ReadError, open_stream

    with pytest.raises(ReadError, match="outside the locations this audit was given"):
        open_stream("s3://a-bucket-never-granted/data/train.parquet", "data file")


# ---- readers: bytes, never a local path -------------------------------------------------------

def test_readers_give_the_same_arrays_from_an_object_as_from_the_file(s3_server, uploaded):
    from labelguard.readers.masks import image_shape, read_mask

    local, bucket = uploaded
    storage.grant(storage.access_for([bucket], s3_server.options))
    for name in ("masks/a.png", "masks/vol.nii.gz", "masks/seg.h5"):
        here = read_mask(str(local / "masks_ds" / name))
        there = read_mask(f"{bucket}/masks_ds/{name}")
        assert np.array_equal(here.array, there.array) and here.container == there.container
    assert image_shape(f"{bucket}/masks_ds/masks/vol.nii.gz") == image_shape(str(local / "masks_ds/masks/vol.nii.gz"))


def test_a_paired_image_in_object_storage_is_fetched_only_as_far_as_its_header(s3_server, tmp_path, monkeypatch):
    """A pair check needs the image's shape, and images outweigh their masks: a PNG's header
    is in its first bytes; a JPEG whose metadata segments pass the first fetch is fetched whole."""
    from PIL import Image

    from labelguard.readers import masks as masks_module
    from labelguard.readers.base import ReadError

    rng = np.random.default_rng(0)
    photo = Image.fromarray(rng.integers(0, 256, (300, 400, 3), dtype=np.uint8))
    photo.save(tmp_path / "noise.png")  # some 360 KB, incompressible
    photo.save(tmp_path / "big_icc.jpg", icc_profile=bytes(rng.integers(0, 256, 200_000, dtype=np.uint8)))
    (tmp_path / "damaged.png").write_bytes((tmp_path / "noise.png").read_bytes()[:20])
    assert (tmp_path / "noise.png").stat().st_size > 4 * masks_module.REMOTE_HEADER_BYTES
    bucket = s3_server.bucket("headers")
    for name in ("noise.png", "big_icc.jpg", "damaged.png"):
        s3_server.put(f"{bucket}/{name}", (tmp_path / name).read_bytes())
    storage.grant(storage.access_for([bucket], s3_server.options))
    fetched: list = []
    real = storage.read_object

    def counted(url, limit=None, size=None):
        data = real(url, limit, size)
        fetched.append((url.rsplit("/", 1)[-1], size, len(data)))
        return data

    monkeypatch.setattr(storage, "read_object", counted)
    for name in ("noise.png", "big_icc.jpg"):
        assert masks_module.image_shape(f"{bucket}/{name}") == masks_module.image_shape(str(tmp_path / name)) \
            == (300, 400, 3)
    assert all(size is not None for name, size, _ in fetched if name == "noise.png"), fetched
    assert sum(length for name, _, length in fetched if name == "noise.png") <= 2 * masks_module.REMOTE_HEADER_BYTES
    assert ("big_icc.jpg", None, (tmp_path / "big_icc.jpg").stat().st_size) in fetched  # its header did not fit
    with pytest.raises(ReadError, match="cannot read image header"):
        masks_module.image_shape(f"{bucket}/damaged.png")


def test_an_hdf5_external_link_in_an_object_is_not_followed(s3_server, tmp_path):
    h5py = pytest.importorskip("h5py")
    bucket = s3_server.bucket("linked")
    write_h5(tmp_path / "target.h5", label=np.zeros((2, 2), np.uint8))
    with h5py.File(tmp_path / "link.h5", "w") as handle:
        handle["label"] = h5py.ExternalLink("target.h5", "/label")
    s3_server.upload(tmp_path, bucket)
    storage.grant(storage.access_for([bucket], s3_server.options))
    from labelguard.readers.base import ReadError
    from labelguard.readers.masks import read_mask

    with pytest.raises(ReadError, match="links between objects of object storage are not followed"):
        read_mask(f"{bucket}/link.h5")


# ---- the command line --------------------------------------------------------------------------

def _cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    return subprocess.run([sys.executable, "-m", "labelguard", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=240)


def test_the_cli_audits_a_url_with_the_endpoint_from_the_environment(s3_server, uploaded, tmp_path):
    _, bucket = uploaded
    root = f"{bucket}/masks_ds"
    done = _cli("audit", root, "--list", f"{root}/lists/train.txt", "--num-classes", "3", "-f", "json",
                "--no-progress", "--no-config", "--no-cache", cwd=tmp_path,
                env={"AWS_ENDPOINT_URL": s3_server.endpoint})
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["files"] == [f"{root}/masks/a.png", f"{root}/masks/b.png"]
    assert any(f["code"] == "LG003" and f["path"] == f"{root}/lists/train.txt" for f in report["findings"])


def test_the_cli_takes_storage_options_as_json(s3_server, uploaded, tmp_path):
    _, bucket = uploaded
    done = _cli("audit", f"{bucket}/voc_ds", "-f", "json", "--no-progress", "--no-config", "--no-cache",
                "--storage-options", json.dumps(s3_server.options), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert {f["code"] for f in json.loads(done.stdout)["findings"]} >= {"LG003", "LG101"}
    bad = _cli("audit", f"{bucket}/voc_ds", "--storage-options", "[1]", cwd=tmp_path)
    assert bad.returncode == 2 and "JSON object" in bad.stderr
    nothing = _cli("audit", f"{bucket}/no-such-prefix", "--storage-options", json.dumps(s3_server.options),
                   cwd=tmp_path)
    assert nothing.returncode == 2 and "no object or prefix there" in nothing.stderr


def _objects(s3_server, bucket: str, prefix: str) -> dict[str, bytes]:
    """Every object below ``prefix`` of ``bucket`` (``s3://name``), key -> bytes."""
    name = bucket[len("s3://"):]
    listed = s3_server.client.list_objects_v2(Bucket=name, Prefix=prefix).get("Contents", [])
    return {item["Key"]: s3_server.client.get_object(Bucket=name, Key=item["Key"])["Body"].read() for item in listed}


def test_fix_refuses_to_write_object_storage_and_says_what_to_do(s3_server, uploaded, tmp_path):
    _, bucket = uploaded
    root = f"{bucket}/masks_ds"
    options = ["--storage-options", json.dumps(s3_server.options)]
    for args in (["fix", "remap", root, "--map", "7:0", *options],
                 ["fix", "list", f"{root}/lists/train.txt", "--root", root, *options], ["fix", "undo", root]):
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "no atomic rename" in done.stderr and "aws s3 sync" in done.stderr, done.stderr
        assert "--out LOCAL_FOLDER" in done.stderr
    out = _cli("fix", "remap", str(tmp_path), "--map", "7:0", "--out", "s3://data/out", cwd=tmp_path)
    assert out.returncode == 2 and "no atomic rename" in out.stderr
    mixed = _cli("fix", "remap", root, str(tmp_path), "--map", "7:0", "--out", str(tmp_path / "o"), *options,
                 cwd=tmp_path)
    assert mixed.returncode == 2 and "not both" in mixed.stderr and not (tmp_path / "o").exists()


def test_fix_with_out_copies_the_remote_dataset_and_fixes_the_copy(s3_server, uploaded, tmp_path):
    local, bucket = uploaded
    root = f"{bucket}/masks_ds"
    before = _objects(s3_server, bucket, "masks_ds/")
    options = ["--storage-options", json.dumps(s3_server.options)]
    out = tmp_path / "fixed"

    dry = _cli("fix", "remap", root, "--map", "7:0", "--num-classes", "3", "--out", str(out), *options,
               "--json", cwd=tmp_path)
    assert dry.returncode in (0, 1), dry.stderr
    planned = json.loads(dry.stdout)
    changes = {c["path"]: c for c in planned["changes"]}
    assert changes[f"{root}/masks/b.png"]["status"] == "planned"  # named by its URL
    assert changes[f"{root}/masks/b.png"]["target"] == str(out / "masks" / "b.png")
    assert not out.exists()  # a dry run writes nothing there

    done = _cli("fix", "remap", root, "--map", "7:0", "--num-classes", "3", "--out", str(out), "--apply",
                *options, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert f"copied to {out}" in done.stderr and "aws s3 sync" in done.stderr
    # The copy is the whole dataset, the fixed mask changed, every other file byte for byte.
    copied = {path.relative_to(out).as_posix(): path.read_bytes() for path in out.rglob("*")
              if path.is_file() and ".labelguard" not in path.parts}
    originals = {key[len("masks_ds/"):]: data for key, data in before.items()}
    assert copied.keys() == originals.keys()
    assert [key for key in copied if copied[key] != originals[key]] == ["masks/b.png"]
    fixed = audit(str(out / "masks" / "b.png"), SPEC, use_project_config=False, cache=False)
    assert not [f for f in fixed.findings if f.code == "LG201"]
    assert _objects(s3_server, bucket, "masks_ds/") == before  # the store is only read
    # The copy is journaled: undo gives back the copied bytes.
    undone = _cli("fix", "undo", str(out), cwd=tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert (out / "masks" / "b.png").read_bytes() == originals["masks/b.png"]
    # A second copy into the same folder is refused: it holds files.
    again = _cli("fix", "remap", root, "--map", "7:0", "--out", str(out), "--apply", *options, cwd=tmp_path)
    assert again.returncode == 2 and "already holds files" in again.stderr


def test_fix_list_cleans_a_remote_list_in_a_local_copy_of_its_root(s3_server, uploaded, tmp_path):
    _, bucket = uploaded
    root = f"{bucket}/masks_ds"
    options = ["--storage-options", json.dumps(s3_server.options)]
    no_root = _cli("fix", "list", f"{root}/lists/train.txt", "--out", str(tmp_path / "o"), *options, cwd=tmp_path)
    assert no_root.returncode == 2 and "give --root" in no_root.stderr
    out = tmp_path / "copy"
    done = _cli("fix", "list", f"{root}/lists/train.txt", "--root", root, "--out", str(out), "--apply", *options,
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # masks/missing.png names no object: dropped from the copy's list; the store keeps its own.
    assert (out / "lists" / "train.txt").read_text(encoding="utf-8") == "masks/a.png\nmasks/b.png\n"
    assert b"missing.png" in _objects(s3_server, bucket, "masks_ds/lists/")["masks_ds/lists/train.txt"]


def test_a_key_that_leads_outside_the_copy_is_never_given_a_local_place(tmp_path):
    from labelguard.fix._remote import Staging, _local

    staging = Staging([], str(tmp_path / "copy"), "s3://data/ds", temporary=False)
    assert _local("s3://data/ds", staging) == str(tmp_path / "copy")
    assert _local("s3://data/ds/masks/a.png", staging) == str(tmp_path / "copy" / "masks" / "a.png")
    for url in ("s3://data/ds/../other/a.png", "s3://data/dsx/a.png", "s3://other/ds/a.png",
                "s3://data/ds/.."):
        assert _local(url, staging) is None, url


def test_a_copy_that_cannot_be_made_whole_is_an_error_and_leaves_nothing(s3_server, uploaded, tmp_path):
    """S3 lets x be an object and a prefix at once; no local folder holds both."""
    _, bucket = uploaded
    s3_server.put(f"{bucket}/clash/x", b"a file")
    s3_server.put(f"{bucket}/clash/x/y.png", b"below it")
    out = tmp_path / "copy"
    done = _cli("fix", "remap", f"{bucket}/clash", "--map", "7:0", "--out", str(out), "--apply",
                "--storage-options", json.dumps(s3_server.options), cwd=tmp_path)
    assert done.returncode == 2 and "cannot copy" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not out.exists()


def test_fix_colors_of_a_remote_dataset_proposes_its_map_from_the_copy(s3_server, uploaded, tmp_path):
    _, bucket = uploaded
    colours = np.zeros((8, 8, 3), np.uint8)
    colours[2:5, 2:5] = (128, 0, 0)
    write_png(tmp_path / "local" / "a.png", colours)
    s3_server.put(f"{bucket}/colors_ds/masks/a.png", (tmp_path / "local" / "a.png").read_bytes())
    out = tmp_path / "indexed"
    done = _cli("fix", "colors", f"{bucket}/colors_ds", "--out", str(out), "--apply", "--json",
                "--storage-options", json.dumps(s3_server.options), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [change] = json.loads(done.stdout)["changes"]
    assert change["status"] == "written" and (tmp_path / change["path"]).resolve() == out / "masks" / "a.png"
    from PIL import Image

    with Image.open(out / "masks" / "a.png") as fixed:
        assert fixed.mode == "P" and sorted(np.unique(np.asarray(fixed)).tolist()) == [0, 1]


def test_the_fix_api_copies_one_remote_object_into_out(s3_server, uploaded, tmp_path):
    from labelguard.fix import FixError, remap

    _, bucket = uploaded
    with pytest.raises(FixError, match="no atomic rename"):
        remap(f"{bucket}/masks_ds", {7: 0}, storage_options=s3_server.options)
    result = remap(f"{bucket}/masks_ds/masks/b.png", {7: 0}, spec=SPEC, apply=True, out=str(tmp_path / "one"),
                   storage_options=s3_server.options)
    assert [c.status for c in result.changes] == ["written"]
    assert sorted(p.name for p in (tmp_path / "one").iterdir() if p.name != ".labelguard") == ["b.png"]
    with pytest.raises(FixError, match="no object or prefix there"):
        remap(f"{bucket}/masks_ds/nothing-here", {7: 0}, out=str(tmp_path / "none"), apply=True,
              storage_options=s3_server.options)


def test_without_the_s3_extra_a_url_asks_for_it(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "s3fs.py").write_text("raise ImportError(\"No module named 's3fs'\")\n")
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", "s3://data/masks_ds", "--no-config"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), SRC])},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "pip install 'labelguard[s3]'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_storage_options_are_never_shown():
    access = storage.access_for(["s3://data/ds"], {"key": "AKIA-SECRET-ID", "secret": "very-secret"})
    from labelguard.core.tasks import FileTask
    from labelguard.rules._masks import process_mask

    task = FileTask(process_mask, "s3://data/ds/a.png", "s3://data/ds/a.png", options=(("storage", access),))
    assert "secret" not in repr(access) and "AKIA" not in repr(task)
    assert json.loads(access.options)["secret"] == "very-secret"  # kept, for the workers


def test_images_and_masks_flags_may_be_urls(s3_server, uploaded):
    from labelguard.layouts import AuditOptions

    local, bucket = uploaded
    local_root, remote_root = str(local / "masks_ds"), f"{bucket}/masks_ds"
    reports = [audit(root, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options,
                     options=AuditOptions(images=f"{root}/images", masks=f"{root}/masks"))
               for root in (local_root, remote_root)]
    assert reports[1].layouts == ["paired"]
    assert normalized(reports[1], remote_root) == normalized(reports[0], local_root)
