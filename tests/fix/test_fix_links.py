"""Nothing outside, nothing lost: symbolic links, hard links, read-only files, named pipes, HDF5
files that reach into other files and --out folders that links lead elsewhere. Every
refusal shows in the dry run as it does with --apply. The "outside" victims are files in
tmp_path beside the data folder."""

import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from annotation_builders import imagefolder
from builders import write_list, write_png
from fix_data import binary_255_mask, digests, mask_dataset, write_mask
from labelguard import LabelSpec
from labelguard.cli import main
from labelguard.fix import FixError, clean_list, remap, rename, undo
from labelguard.fix._harmonize import Harmonization

SPEC = LabelSpec(num_classes=2)


def statuses(result):
    return {os.path.basename(c.path): (c.status, c.summary) for c in result.changes}


def both_ways(folder, **kwargs):
    """The dry run and the applied run of a 255:1 remap on ``folder``."""
    return remap(str(folder), "255:1", spec=SPEC, **kwargs), remap(str(folder), "255:1", spec=SPEC, apply=True,
                                                                    **kwargs)


@pytest.mark.parametrize("inside", [False, True])
def test_a_mask_that_is_a_symbolic_link_is_refused_and_its_target_untouched(tmp_path, inside):
    data = tmp_path / "data"
    mask_dataset(data, "png-L", n=2)
    target = data / "masks" / "case_000.png" if inside else write_png(tmp_path / "victim.png", binary_255_mask(7))
    os.symlink(target, data / "masks" / "linked.png")
    kept = digests([target])
    dry, applied = both_ways(data / "masks")
    for result in (dry, applied):
        status, summary = statuses(result)["linked.png"]
        assert status == "refused" and "symbolic link" in summary and str(target) in summary
    assert statuses(applied)["case_001.png"][0] == "written"
    if not inside:
        assert digests([target]) == kept
    assert os.path.islink(data / "masks" / "linked.png")


def test_masks_reached_through_a_folder_link_to_outside_are_refused(tmp_path):
    outside = tmp_path / "outside"
    victims = [write_mask(outside / "masks", "png-L", f"victim_{i}", binary_255_mask(i)) for i in range(2)]
    kept = digests(victims)
    data = tmp_path / "data"
    mask_dataset(data, "png-L", n=1)
    os.symlink(outside / "masks", data / "masks" / "more")
    # The discovery does not walk into folder links; a path named through one is checked.
    paths = [str(data / "masks"), str(data / "masks" / "more" / victims[0].name)]
    for apply in (False, True):
        changes = statuses(remap(paths, "255:1", spec=SPEC, apply=apply))
        status, summary = changes[victims[0].name]
        assert status == "refused" and "outside the data root" in summary and str(outside) in summary
        assert changes["case_000.png"][0] == ("written" if apply else "planned")
    assert digests(victims) == kept


def test_a_hard_linked_mask_is_refused_unless_forced_and_its_other_name_keeps_the_old_bytes(tmp_path):
    data = tmp_path / "data"
    [mask] = mask_dataset(data, "png-L", n=1)
    other = tmp_path / "backup_copy.png"  # a hard link outside the data folder
    os.link(mask, other)
    kept = digests([other])[str(other)]
    dry, applied = both_ways(data / "masks")
    for result in (dry, applied):
        status, summary = statuses(result)["case_000.png"]
        assert status == "refused" and "hard link" in summary and "--force" in summary
    forced = remap(str(data / "masks"), "255:1", spec=SPEC, apply=True, force=True)
    assert statuses(forced)["case_000.png"][0] == "written"
    assert digests([other])[str(other)] == kept and os.stat(mask).st_nlink == 1
    undo(str(data / "masks"))
    assert digests([mask])[str(mask)] == kept


def test_a_read_only_mask_is_refused_unless_forced_and_stays_read_only(tmp_path):
    data = tmp_path / "data"
    [mask, writable] = mask_dataset(data, "npy", n=2)
    os.chmod(mask, 0o444)
    kept = digests([mask])
    dry, applied = both_ways(data / "masks")
    for result in (dry, applied):
        status, summary = statuses(result)["case_000.npy"]
        assert status == "refused" and "read-only" in summary and "--force" in summary
    assert statuses(applied)["case_001.npy"][0] == "written" and digests([mask]) == kept
    forced = invoke("fix", "remap", data / "masks", "--map", "255:1", "--num-classes", "2", "--apply", "--force")
    assert forced.exit_code == 0, forced.output
    assert np.load(mask).max() == 1 and stat.S_IMODE(os.stat(mask).st_mode) == 0o444
    undo(str(data / "masks"))
    assert digests([mask]) == kept


def test_a_named_pipe_among_masks_is_skipped_without_hanging(tmp_path):
    data = tmp_path / "data"
    mask_dataset(data, "png-L", n=1)
    os.mkfifo(data / "masks" / "pipe.png")
    result = subprocess.run([sys.executable, "-m", "labelguard", "fix", "remap", str(data / "masks"), "--map",
                             "255:1", "--num-classes", "2", "--apply", "--json"],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    changes = statuses_json(result.stdout)
    assert changes["case_000.png"] == "written" and changes["pipe.png"] in ("skipped", "refused")
    assert stat.S_ISFIFO(os.stat(data / "masks" / "pipe.png").st_mode)


def statuses_json(text):
    return {os.path.basename(c["path"]): c["status"] for c in json.loads(text)["changes"]}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


# ---- HDF5 files that reach into other files -------------------------------------------------

def hdf5_with_links(folder, outside):
    import h5py

    outside.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(outside, "w") as handle:
        handle["label"] = binary_255_mask(3)
    folder.mkdir(parents=True, exist_ok=True)
    linked = folder / "linked.h5"
    with h5py.File(linked, "w") as handle:
        handle["image"] = np.zeros((32, 32))
        handle["label"] = h5py.ExternalLink(str(outside), "/label")
    virtual = folder / "virtual.h5"
    with h5py.File(virtual, "w") as handle:
        handle["label_own"] = binary_255_mask(4)
        layout = h5py.VirtualLayout(shape=(32, 32), dtype=np.uint8)
        layout[:] = h5py.VirtualSource(str(outside), "label", shape=(32, 32))
        handle.create_virtual_dataset("label", layout)
    return linked, virtual


def test_fix_refuses_hdf5_files_with_external_links_or_virtual_datasets_from_other_files(tmp_path):
    import h5py

    outside = tmp_path / "elsewhere" / "source.h5"
    linked, virtual = hdf5_with_links(tmp_path / "data" / "masks", outside)
    plain = write_mask(tmp_path / "data" / "masks", "hdf5", "plain", binary_255_mask(5))
    kept = digests([outside, linked, virtual])
    for apply in (False, True):
        result = remap(str(tmp_path / "data" / "masks"), "255:1", spec=SPEC, apply=apply, options=None)
        changes = statuses(result)
        assert changes["plain.h5"][0] == ("written" if apply else "planned")
        for name in ("linked.h5", "virtual.h5"):
            assert changes[name][0] in ("refused", "skipped"), changes[name]
    forced = remap(str(virtual), "255:1", spec=SPEC, apply=True, force=True)
    status, summary = statuses(forced)["virtual.h5"]
    assert status == "refused" and "virtual dataset mapped from" in summary and str(outside) in summary
    assert digests([outside, linked, virtual]) == kept
    with h5py.File(outside) as handle:
        assert handle["label"][()].max() == 255
    assert plain.exists()


def test_the_audit_does_not_read_a_label_stored_outside_the_files_folder(tmp_path):
    outside = tmp_path / "elsewhere" / "source.h5"
    linked, virtual = hdf5_with_links(tmp_path / "data", outside)
    os.unlink(outside)
    os.mkfifo(outside)  # following the link would block on the pipe
    result = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(linked), str(virtual), "--no-config",
                             "-f", "json"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    findings = json.loads(result.stdout)["findings"]
    messages = [f["message"] for f in findings if f["code"] == "LG001"]
    assert any("external link" in m and "reads nothing outside" in m for m in messages)
    assert any("virtual dataset" in m for m in messages)


@pytest.mark.code("LG001", "pass")
def test_the_audit_reads_a_label_linked_from_a_file_beside_it_and_says_so(tmp_path):
    import h5py

    from labelguard._audit import audit

    data = tmp_path / "data"
    data.mkdir()
    with h5py.File(data / "labels_store.h5", "w") as handle:
        handle["label"] = binary_255_mask(1)
    with h5py.File(data / "case.h5", "w") as handle:
        handle["label"] = h5py.ExternalLink("labels_store.h5", "/label")
    report = audit(str(data / "case.h5"), SPEC, workers=1, use_project_config=False)
    assert "LG001" not in {f.code for f in report.findings}, [f.message for f in report.findings]
    assert report.summary.value_pixels[255] > 0  # the label was read, through the link
    assert any("HDF5 external link" in note and "case.h5" in note for note in report.notes), report.notes
    # fix refuses the linking file all the same: it would write into the other file
    result = remap(str(data / "case.h5"), "255:1", spec=SPEC, apply=True)
    assert statuses(result)["case.h5"][0] == "refused"
    with h5py.File(data / "labels_store.h5") as handle:
        assert handle["label"][()].max() == 255


def test_a_virtual_dataset_of_the_file_itself_is_fixed(tmp_path):
    import h5py

    path = tmp_path / "masks" / "self.h5"
    path.parent.mkdir()
    with h5py.File(path, "w") as handle:
        handle["label"] = binary_255_mask(1)
        handle["image"] = np.ones((32, 32), np.float32)
        layout = h5py.VirtualLayout(shape=(32, 32), dtype=np.float32)
        layout[:] = h5py.VirtualSource(".", "image", shape=(32, 32))
        handle.create_virtual_dataset("image_view", layout)
    result = remap(str(path.parent), "255:1", spec=SPEC, apply=True)
    assert statuses(result)["self.h5"][0] == "written"


# ---- --out ------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["inside", "holding", "link"])
def test_out_must_lie_outside_the_data(tmp_path, where):
    data = tmp_path / "data"
    files = mask_dataset(data, "png-L", n=1)
    out = {"inside": data / "masks" / "fixed", "holding": data, "link": tmp_path / "alias"}[where]
    if where == "link":
        os.symlink(data / "masks", out)
    kept = digests(files)
    with pytest.raises(FixError, match="--out"):
        remap(str(data / "masks"), "255:1", spec=SPEC, apply=True, out=str(out))
    assert digests(files) == kept


def test_out_never_writes_through_a_link_into_the_input(tmp_path):
    data = tmp_path / "data" / "site"
    files = mask_dataset(data, "png-L", n=2)
    kept = digests(files)
    out = tmp_path / "fixed"
    out.mkdir()
    os.symlink(data / "masks", out / "masks")  # a link left in the output folder, back into the input
    for apply in (False, True):
        result = remap(str(data), "255:1", spec=SPEC, apply=apply, out=str(out))
        assert {c.status for c in result.changes} == {"refused"}
        assert all("leads outside --out" in c.summary for c in result.changes)
    assert digests(files) == kept


def test_out_replaces_a_hard_link_to_the_input_without_touching_the_input(tmp_path):
    data = tmp_path / "data"
    [mask] = mask_dataset(data, "png-L", n=1)
    kept = digests([mask])
    out = tmp_path / "fixed"
    (out / "masks").mkdir(parents=True)
    os.link(mask, out / "masks" / mask.name)
    result = remap(str(data), "255:1", spec=SPEC, apply=True, out=str(out))
    assert [c.status for c in result.changes] == ["written"]
    assert digests([mask]) == kept and digests([out / "masks" / mask.name]) != {str(out / "masks" / mask.name):
                                                                                 kept[str(mask)]}


def test_fix_list_out_leaves_the_input_and_never_writes_through_a_link(tmp_path):
    data = tmp_path / "data"
    write_png(data / "images" / "a.png", binary_255_mask(1))
    listing = write_list(data / "lists" / "train.txt", ["images/a.png ", "images/a.png"], newline="\r\n")
    kept = digests([listing])
    out = tmp_path / "fixed"
    result = clean_list(str(listing), root=str(data), apply=True, out=str(out))
    assert [c.status for c in result.changes] == ["written"]
    assert (out / "train.txt").read_bytes() == b"images/a.png\n" and digests([listing]) == kept
    linked = tmp_path / "fixed2"
    linked.mkdir()
    os.symlink(data / "lists" / "train.txt", linked / "train.txt")
    for apply in (False, True):
        result = clean_list(str(listing), root=str(data), apply=apply, out=str(linked))
        assert [c.status for c in result.changes] == ["refused"]
    assert digests([listing]) == kept
    with pytest.raises(FixError, match="--out"):
        clean_list(str(listing), root=str(data), apply=True, out=str(data / "lists" / "clean"))


# ---- names and mapping files -----------------------------------------------------------------

@pytest.mark.parametrize("new", ["../escaped", "a/b", ".", "..", "", " ", "/abs/olute"])
def test_a_class_folder_name_must_be_one_folder_name(tmp_path, new):
    root = imagefolder(tmp_path / "data", {"Dog": 1, "cat": 1})
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(FixError, match="one folder name"):
        rename(str(root), {"Dog": new}, apply=True)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    result = invoke("fix", "rename", root, "--map-file", write_map(tmp_path, {"Dog": new}), "--apply")
    assert result.exit_code == 2, result.output
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "map.json" not in p.name) == before


def write_map(folder, mapping):
    path = folder / "map.json"
    path.write_text(json.dumps(mapping))
    return path


def test_a_class_folder_that_is_a_link_out_of_the_data_is_not_renamed(tmp_path):
    outside = imagefolder(tmp_path / "outside", {"Dog": 1})
    root = imagefolder(tmp_path / "data", {"dog": 1, "cat": 1})
    os.symlink(outside / "Dog", root / "Dog")
    result = rename(str(root), "Dog=dog", apply=True)
    [change] = result.changes
    assert change.status == "refused" and "symbolic link" in change.summary
    assert (outside / "Dog" / "Dog_000.jpg").exists() and os.path.islink(root / "Dog")


def mapping_file(tmp_path, names_file):
    data = tmp_path / "site_a"
    data.mkdir(exist_ok=True)
    (data / "classes.txt").write_text("dog\ncat\n")
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps({
        "format": "labelguard-harmonize", "version": 1, "spec": {"classes": ["cat", "dog"]},
        "datasets": [{"path": "site_a", "layout": "yolo", "kind": "ids", "labels": {"dog": 1}, "map": {"0": 1},
                      "names_file": names_file}]}))
    return path


@pytest.mark.parametrize("names_file", ["victim.txt", "site_a/../victim.txt", "/etc/hostname", "site_a/link.txt"])
def test_a_mapping_files_names_file_must_lie_inside_its_dataset(tmp_path, names_file):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    path = mapping_file(tmp_path, names_file)
    os.symlink(victim, tmp_path / "site_a" / "link.txt")
    with pytest.raises(FixError, match="not inside its dataset"):
        Harmonization.load(str(path))
    assert victim.read_text() == "mine\n"
    assert Harmonization.load(str(mapping_file(tmp_path, "site_a/classes.txt"))).datasets[0].names_file.endswith(
        "classes.txt")


def test_a_dataset_reached_through_a_linked_root_is_fixed_and_undone(tmp_path):
    """A link to the whole dataset (data kept on another disk) is where the user points: its
    files lie inside that root once resolved, so they are fixed, and undo finds the run there."""
    files = mask_dataset(tmp_path / "disk", "png-L", n=2)
    original = digests(files)
    os.symlink(tmp_path / "disk" / "masks", tmp_path / "data")
    result = remap(str(tmp_path / "data"), "255:1", spec=SPEC, apply=True)
    assert [c.status for c in result.changes] == ["written", "written"]
    assert undo(str(tmp_path / "data")).restored and digests(files) == original
