"""Container features that name another file: HDF5 external storage, OME-TIFF multi-file
sets, NIfTI header/image pairs. A dataset is untrusted, so what such a feature names may be
any file (a secret, a named pipe): the audit reads nothing of it (LG001 naming the feature
and the file), and `fix` refuses the file in the dry run and with --apply before anything is
written anywhere. The "outside" files lie in tmp_path beside the data folder; a named pipe
as the other file would block whoever opened it, so those audits run in a subprocess with a
timeout. HDF5 external links and virtual datasets are tested in tests/fix/test_fix_links.py."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from builders import organic_mask, write_h5, write_tiff
from hostile_builders import write_h5_external_storage, write_nifti_pair, write_ome_tiff, write_ome_tiff_elsewhere
from labelguard import LabelSpec
from labelguard.cli import main
from labelguard.fix import remap

SPEC = LabelSpec(num_classes=2)
# A value no mask of the data holds: found in a report, it came from the outside file.
SECRET_VALUE = 7


def binary_255_mask(seed: int) -> np.ndarray:
    return organic_mask((32, 32), classes=(0, 255), seed=seed)


def audit_json(*paths) -> dict:
    """The JSON report of a ``labelguard audit`` run in a subprocess, killed after 120 s: a
    named pipe opened would block it for ever."""
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *map(str, paths), "--no-config",
                           "--num-classes", "2", "-f", "json"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def unreadable(report: dict, name: str) -> str:
    [message] = [f["message"] for f in report["findings"]
                 if f["code"] == "LG001" and os.path.basename(f["path"]) == name]
    return message


def sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def outside_file(tmp_path, kind: str, data: bytes):
    """The file a hostile container names, outside the data: a regular file holding ``data``
    or a named pipe."""
    path = tmp_path / "elsewhere" / ("secret.pipe" if kind == "pipe" else "secret.bin")
    path.parent.mkdir(exist_ok=True)
    if kind == "pipe":
        os.mkfifo(path)
    else:
        path.write_bytes(data)
    return path


def fix_cli(*args) -> dict[str, tuple[str, str]]:
    """``labelguard fix ARGS --json``: each file's (status, summary) by its name."""
    result = CliRunner().invoke(main, ["fix", *map(str, args), "--json"], catch_exceptions=False)
    return {os.path.basename(c["path"]): (c["status"], c["summary"]) for c in json.loads(result.stdout)["changes"]}


# ---- HDF5 external storage --------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("kind", ["file", "pipe"])
def test_an_hdf5_label_in_external_storage_is_lg001_naming_the_file_and_never_read(tmp_path, kind):
    raw = outside_file(tmp_path, kind, bytes([SECRET_VALUE]) * 1024)
    data = tmp_path / "data"
    write_h5_external_storage(data / "case.h5", raw)
    write_h5(data / "plain.h5", label=binary_255_mask(1))
    report = audit_json(data)
    message = unreadable(report, "case.h5")
    assert "'label' keeps its raw data in external storage" in message and str(raw) in message
    assert "HDF5 external storage" in message and "reads only data stored in the file itself" in message
    assert str(SECRET_VALUE) not in report["summary"]["values"], "a value was read from the outside file"
    assert report["summary"]["values"]["255"]["files"] == 1  # the plain file beside it is audited


def test_a_label_read_through_an_external_link_is_refused_when_it_is_in_external_storage(tmp_path):
    import h5py

    raw = outside_file(tmp_path, "file", bytes([SECRET_VALUE]) * 1024)
    data = tmp_path / "data"
    write_h5_external_storage(data / "store.h5", raw)
    with h5py.File(data / "case.h5", "w") as handle:
        handle["label"] = h5py.ExternalLink("store.h5", "/label")
    report = audit_json(data / "case.h5")
    message = unreadable(report, "case.h5")
    assert "external link 'label'" in message and "external storage" in message and str(raw) in message
    assert str(SECRET_VALUE) not in report["summary"]["values"]


@pytest.mark.parametrize("external", ["label", "image"])
def test_fix_remap_refuses_hdf5_external_storage_and_the_outside_file_keeps_its_bytes(tmp_path, external):
    """The attack: `fix remap --map 255:1 DIR`, dry run then --apply then undo, changed bytes of
    a file outside the data. A dataset of the file other than the label counts too: the
    rewrite copies the whole file and compares every dataset."""
    raw = outside_file(tmp_path, "file", bytes(binary_255_mask(3)))
    masks = tmp_path / "data" / "masks"
    others = {"image": np.zeros((32, 32), np.float32)} if external == "label" else {"label": binary_255_mask(4)}
    write_h5_external_storage(masks / "stored_elsewhere.h5", raw, key=external, others=others)
    plain = write_h5(masks / "plain.h5", label=binary_255_mask(5))
    before, plain_before = sha256(raw), sha256(plain)
    dry = fix_cli("remap", "--map", "255:1", masks, "--num-classes", "2")
    assert sha256(raw) == before
    applied = fix_cli("remap", "--map", "255:1", masks, "--num-classes", "2", "--apply")
    assert sha256(raw) == before
    for changes, fixed in ((dry, "planned"), (applied, "written")):
        status, summary = changes["stored_elsewhere.h5"]
        assert status == "refused" and "external storage" in summary and str(raw) in summary
        assert changes["plain.h5"][0] == fixed
    undone = CliRunner().invoke(main, ["fix", "undo", str(masks)], catch_exceptions=False)
    assert undone.exit_code == 0, undone.output
    assert sha256(raw) == before and sha256(plain) == plain_before


# ---- OME-TIFF multi-file ----------------------------------------------------------------------

@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("kind", ["file", "pipe"])
def test_an_ome_tiff_placing_planes_in_another_file_is_lg001_and_that_file_is_never_read(tmp_path, kind):
    tifffile = pytest.importorskip("tifffile")
    other = tmp_path / "elsewhere" / "secret.tif"
    other.parent.mkdir()
    if kind == "pipe":
        os.mkfifo(other)
    else:
        tifffile.imwrite(other, np.full((32, 32), SECRET_VALUE, np.uint8))
    data = tmp_path / "data"
    write_ome_tiff_elsewhere(data / "case.ome.tif", np.zeros((32, 32), np.uint8), other)
    report = audit_json(data)
    message = unreadable(report, "case.ome.tif")
    assert "OME-TIFF multi-file" in message and str(other) in message
    assert "reads only data stored in the file itself" in message
    assert str(SECRET_VALUE) not in report["summary"]["values"]


@pytest.mark.code("LG001", "pass")
def test_an_ome_tiff_whose_planes_are_all_its_own_is_read(tmp_path):
    pytest.importorskip("tifffile")
    planes = np.stack([binary_255_mask(1), binary_255_mask(2)]) // 255
    write_ome_tiff(tmp_path / "data" / "case.ome.tif", planes.astype(np.uint8))
    report = audit_json(tmp_path / "data")
    assert not [f for f in report["findings"] if f["code"] == "LG001"], report["findings"]
    assert report["summary"]["values"]["1"]["pixels"] == int(planes.sum())


@pytest.mark.parametrize("mode", ["structure", "full"])
def test_an_image_whose_ome_xml_names_a_pipe_outside_is_refused_or_checked_by_its_own_bytes(tmp_path, mode):
    """An image (not a label) whose OME-XML places planes in a named pipe outside the data: a
    paired image is refused by its header (LG001), a YOLO image checked by its own bytes, and
    neither audit blocks on the pipe."""
    pytest.importorskip("tifffile")
    other = tmp_path / "elsewhere" / "secret.tif"
    other.parent.mkdir()
    os.mkfifo(other)
    data = tmp_path / "data"
    write_ome_tiff_elsewhere(data / "images" / "case.tif", np.zeros((32, 32), np.uint8), other)
    write_tiff(data / "masks" / "case.tif", organic_mask((32, 32), classes=(0, 1)))
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(data), "--no-config", "--no-cache",
                           "--num-classes", "2", "-f", "json", "--check-images", mode],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(done.stdout)
    assert "OME-TIFF multi-file" in unreadable(report, "case.tif"), done.stderr
    assert not [f for f in report["findings"] if f["code"] == "LG008"]
    # A YOLO image is checked by its bytes alone (no header read first): it ends too.
    yolo = tmp_path / "yolo"
    (yolo / "images").mkdir(parents=True)
    (yolo / "images" / "case.tif").write_bytes((data / "images" / "case.tif").read_bytes())
    (yolo / "labels").mkdir()
    (yolo / "labels" / "case.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (yolo / "data.yaml").write_text("path: .\ntrain: images\nval: images\nnames: [a]\n")
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(yolo), "--no-config", "--no-cache",
                           "-f", "json", "--check-images", mode],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr


def test_fix_refuses_an_ome_tiff_placing_planes_in_another_file(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    other = tmp_path / "elsewhere" / "secret.tif"
    other.parent.mkdir()
    tifffile.imwrite(other, np.full((32, 32), 255, np.uint8))
    masks = tmp_path / "data" / "masks"
    case = write_ome_tiff_elsewhere(masks / "case.ome.tif", binary_255_mask(1), other)
    write_tiff(masks / "plain.tif", binary_255_mask(2))
    kept = sha256(case), sha256(other)
    for apply in (False, True):
        changes = {os.path.basename(c.path): (c.status, c.summary)
                   for c in remap(str(masks), "255:1", spec=SPEC, apply=apply).changes}
        status, summary = changes["case.ome.tif"]
        assert status == "refused" and "OME-TIFF multi-file" in summary and str(other) in summary
        assert changes["plain.tif"][0] == ("written" if apply else "planned")
    assert (sha256(case), sha256(other)) == kept


# ---- NIfTI header/image pairs -----------------------------------------------------------------

def pair_with_other_half(tmp_path, kind: str):
    """A NIfTI pair data/case.hdr whose case.img is ``kind``: beside it, a link to a file
    outside, a named pipe, a link to a named pipe outside. Returns (header, the outside file)."""
    header, image = write_nifti_pair(tmp_path / "data" / "case.hdr", np.zeros((8, 8, 2), np.uint8))
    outside = tmp_path / "elsewhere" / "secret.img"
    outside.parent.mkdir()
    if kind == "beside":
        return header, None
    os.unlink(image)
    if kind == "pipe":
        os.mkfifo(image)
        return header, None
    if kind == "link to a pipe":
        os.mkfifo(outside)
    else:
        outside.write_bytes(bytes([SECRET_VALUE]) * 128)
    os.symlink(outside, image)
    return header, outside


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("kind", ["link out", "pipe", "link to a pipe"])
def test_a_nifti_pair_whose_image_file_is_no_regular_file_beside_it_is_lg001_and_not_read(tmp_path, kind):
    pytest.importorskip("nibabel")
    header, outside = pair_with_other_half(tmp_path, kind)
    report = audit_json(header)
    message = unreadable(report, "case.hdr")
    assert "NIfTI header/image pair" in message and "case.img" in message and "not read" in message
    if outside is not None:
        assert str(outside) in message  # where the link leads
    assert str(SECRET_VALUE) not in report["summary"]["values"]


@pytest.mark.code("LG001", "pass")
def test_a_nifti_pair_side_by_side_is_read(tmp_path):
    pytest.importorskip("nibabel")
    volume = np.zeros((8, 8, 2), np.uint8)
    volume[2:4, 2:4] = 1
    header, _ = write_nifti_pair(tmp_path / "data" / "case.hdr", volume)
    report = audit_json(header)
    assert not report["findings"] and report["summary"]["values"]["1"]["pixels"] == 8


@pytest.mark.parametrize("kind", ["beside", "link out"])
def test_fix_refuses_a_nifti_pair_and_writes_nothing(tmp_path, kind):
    pytest.importorskip("nibabel")
    header, outside = pair_with_other_half(tmp_path, kind)
    with open(header.with_suffix(".img") if outside is None else outside, "r+b") as handle:
        handle.write(b"\xff" * 8)  # a value to remap
    folder = sorted(os.listdir(header.parent))
    kept = {path: sha256(path) for path in (header, header.with_suffix(".img"))}
    for apply in (False, True):
        [change] = remap(str(header), "255:1", spec=SPEC, apply=apply).changes
        assert change.status == "refused" and "header/image pair" in change.summary, change.summary
    assert {path: sha256(path) for path in kept} == kept
    assert sorted(name for name in os.listdir(header.parent) if name != ".labelguard") == folder
