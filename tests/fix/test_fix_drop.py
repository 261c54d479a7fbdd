"""`fix drop` on the seed scenario: one VOC XML from another dataset sits in Annotations/ (its
class is unknown to the spec: LG101, a KeyError in an SSD data loader) and the split lists name
its id. The file goes with the list lines that name it, every other byte of the lists stays,
and `fix undo` restores the file and the lists byte for byte; nothing outside the dataset root
is touched, and a list that cannot be rewritten holds the file back."""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit_helpers import found, run
from detection_builders import voc_xml, write_voc
from fix_data import digests
from labelguard import LabelSpec
from labelguard.cli import main
from labelguard.fix import undo
from labelguard.fix import drop
from labelguard.fix._journal import PAUSE_ENV, Run, find_runs

IDS = ["2008_000001", "2008_000002", "2008_000003", "2008_000004"]
FOREIGN = "foreign_0001"
SPEC = LabelSpec(classes=("dog", "cat"))


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def voc_with_a_foreign_xml(root: Path) -> Path:
    """A VOC folder of dogs and cats whose train list names a stray XML of another dataset (a
    traffic cone): ImageSets/Main/train.txt as the devkit writes it, val.txt with a BOM and CRLF
    endings as a Windows editor leaves it, the per-class list dog_train.txt ("<id>  1" lines,
    CRLF, no newline at the end)."""
    write_voc(root, {i: [("dog" if n % 2 else "cat", (2, 2, 10, 10))] for n, i in enumerate(IDS)},
              splits={"train": [IDS[0], FOREIGN, IDS[1]]})
    main_lists = root / "ImageSets" / "Main"
    (main_lists / "val.txt").write_bytes(b"\xef\xbb\xbf" + f"{FOREIGN}\r\n{IDS[2]}\r\n{IDS[3]}\r\n".encode())
    (main_lists / "dog_train.txt").write_bytes(f"{IDS[0]} -1\r\n{FOREIGN}  1\r\n{IDS[1]}  1".encode())
    (root / "Annotations" / f"{FOREIGN}.xml").write_text(
        voc_xml(f"{FOREIGN}.jpg", [("traffic_cone", (1, 1, 5, 5))]), encoding="utf-8")
    return root / "Annotations" / f"{FOREIGN}.xml"


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".labelguard" not in p.parts)


@pytest.mark.code("LG101", "fail")
def test_the_foreign_xml_is_what_the_audit_names(tmp_path):
    foreign = voc_with_a_foreign_xml(tmp_path / "VOC2012")
    [finding] = found(run(tmp_path / "VOC2012", SPEC), "LG101")
    assert Path(finding.path) == foreign and "traffic_cone" in finding.message


def test_the_dry_run_shows_the_plan_and_changes_nothing(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    before = digests(data_files(root))

    result = invoke("fix", "drop", foreign, "--json")
    assert result.exit_code == 0, result.output
    changes = {Path(c["path"]).name: c for c in json.loads(result.stdout)["changes"]}
    assert {name: c["status"] for name, c in changes.items()} == {
        "train.txt": "planned", "val.txt": "planned", "dog_train.txt": "planned", f"{FOREIGN}.xml": "planned"}
    assert changes["train.txt"]["details"]["removed"] == [
        {"list": changes["train.txt"]["path"], "line": 2, "text": FOREIGN, "names": changes[f"{FOREIGN}.xml"]["path"]}]
    assert changes["dog_train.txt"]["details"]["removed"][0]["text"] == f"{FOREIGN}  1"
    assert "3 list lines naming it removed" in changes[f"{FOREIGN}.xml"]["summary"]
    assert "fix undo" in changes[f"{FOREIGN}.xml"]["summary"]
    assert digests(data_files(root)) == before
    assert not (root / ".labelguard").exists()


def test_apply_removes_the_file_and_only_the_lines_naming_it(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    main_lists = root / "ImageSets" / "Main"

    result = invoke("fix", "drop", foreign, "--apply")
    assert result.exit_code == 0, result.output
    assert not foreign.exists()
    assert (main_lists / "train.txt").read_bytes() == f"{IDS[0]}\n{IDS[1]}\n".encode()
    # The BOM, the CRLF endings and the missing last newline stay as they were.
    assert (main_lists / "val.txt").read_bytes() == b"\xef\xbb\xbf" + f"{IDS[2]}\r\n{IDS[3]}\r\n".encode()
    assert (main_lists / "dog_train.txt").read_bytes() == f"{IDS[0]} -1\r\n{IDS[1]}  1".encode()
    report = run(root, SPEC)
    assert not found(report, "LG101") and not found(report, "LG003")
    # The bytes went into the run's backup, journaled as a write of "no file".
    [info] = find_runs(str(root))
    [removal] = [e for e in info.entries if e["path"] == os.path.join("Annotations", f"{FOREIGN}.xml")]
    assert removal["after"] is None and (Path(info.dir) / removal["backup"]).is_file()


def test_undo_restores_the_file_and_the_lists_byte_for_byte(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    files = data_files(root)
    before = digests(files)

    applied = drop(str(foreign), apply=True)
    assert applied.ok and applied.run_id
    assert digests(data_files(root)) != before
    undone = undo(str(root))
    assert not undone.conflicts and len(undone.restored) == 4
    assert data_files(root) == files and digests(files) == before
    again = undo(str(root))
    assert not again.restored and not again.conflicts and digests(files) == before


def test_a_file_reached_through_a_link_or_outside_the_root_is_not_dropped(tmp_path):
    root = tmp_path / "VOC2012"
    voc_with_a_foreign_xml(root)
    outside = tmp_path / "elsewhere" / "other.xml"
    outside.parent.mkdir()
    outside.write_text(voc_xml("other.jpg", [("dog", (1, 1, 5, 5))]), encoding="utf-8")
    link = root / "Annotations" / "other.xml"
    link.symlink_to(outside)
    before = digests(data_files(tmp_path))

    result = invoke("fix", "drop", link, root / "Annotations" / f"{FOREIGN}.xml", "--apply", "--json")
    assert result.exit_code == 1
    changes = {Path(c["path"]).name: c for c in json.loads(result.stdout)["changes"]}
    assert changes["other.xml"]["status"] == "refused" and "symbolic link" in changes["other.xml"]["summary"]
    # All or nothing: the file that could go stays too, and no list is touched.
    assert changes[f"{FOREIGN}.xml"]["status"] == "skipped" and set(changes) == {"other.xml", f"{FOREIGN}.xml"}
    result = invoke("fix", "drop", outside, "--root", root, "--apply", "--json")
    assert result.exit_code == 1
    [change] = json.loads(result.stdout)["changes"]
    assert change["status"] == "refused" and "outside the data root" in change["summary"]
    assert link.is_symlink() and digests(data_files(tmp_path)) == before


def test_a_list_that_cannot_be_rewritten_holds_the_file_back(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    train = root / "ImageSets" / "Main" / "train.txt"
    train.chmod(0o444)
    before = digests(data_files(root))

    for apply in (False, True):
        result = drop(str(foreign), apply=apply)
        status = {Path(c.path).name: (c.status, c.summary) for c in result.changes}
        assert status["train.txt"][0] == "refused" and "read-only" in status["train.txt"][1]
        assert status["val.txt"][0] == "skipped" and "train.txt cannot be rewritten" in status["val.txt"][1]
        assert status[f"{FOREIGN}.xml"][0] == "skipped" and "not dropped" in status[f"{FOREIGN}.xml"][1]
        assert not result.ok and foreign.exists() and result.run_id is None
    assert digests(data_files(root)) == before and not find_runs(str(root))
    forced = drop(str(foreign), apply=True, force=True)
    assert forced.ok and not foreign.exists()
    undo(str(root))
    assert digests(data_files(root)) == before


def test_ids_of_another_dataset_beside_it_are_left_alone(tmp_path):
    first, second = tmp_path / "VOC2007", tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(first)
    voc_with_a_foreign_xml(second)
    before = digests(data_files(second))

    result = drop(str(foreign), root=str(tmp_path), apply=True)
    assert result.ok and not foreign.exists()
    assert (first / "ImageSets" / "Main" / "train.txt").read_bytes() == f"{IDS[0]}\n{IDS[1]}\n".encode()
    assert digests(data_files(second)) == before


def test_a_list_given_with_list_loses_the_lines_naming_the_file_by_path(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    extra = root / "lists" / "annotations.txt"
    extra.parent.mkdir()
    extra.write_text(f"Annotations/{IDS[0]}.xml\nAnnotations/{FOREIGN}.xml\nAnnotations/{FOREIGN}_2.xml\n",
                     encoding="utf-8")
    result = invoke("fix", "drop", foreign, "--list", extra, "--apply")
    assert result.exit_code == 0, result.output
    assert extra.read_text(encoding="utf-8") == f"Annotations/{IDS[0]}.xml\nAnnotations/{FOREIGN}_2.xml\n"


@pytest.mark.slow
def test_kill_9_during_drop_leaves_old_or_new_and_undo_restores_all(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    files = data_files(root)
    before = digests(files)
    command = [sys.executable, "-m", "labelguard", "fix", "drop", str(foreign), "--apply"]
    env = {**os.environ, PAUSE_ENV: "0.3"}
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    whole = time.perf_counter() - start
    after = {path: digest for path, digest in digests([p for p in files if p.exists()]).items()}
    undo(str(root))
    assert digests(files) == before
    interrupted = 0
    for fraction in (0.55, 0.7, 0.8, 0.9):
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(whole * fraction)
        child.send_signal(signal.SIGKILL)
        child.wait()
        for path in files:
            now = digests([path]) if path.exists() else {}
            assert now.get(str(path)) in (before[str(path)], after.get(str(path))), f"{path} is neither old nor new"
        if digests([p for p in files if p.exists()]) != before or not foreign.exists():
            interrupted += 1
        if not all(info.undone for info in find_runs(str(root))):
            undo(str(root))
        assert digests(files) == before and data_files(root) == files
    assert interrupted, "no kill landed after the run had started writing"


def numbered_voc(root: Path, ids) -> None:
    """A VOC folder of images numbered as some exports number them (1, 2, 12, 21...), with the
    devkit's per-class lists: "<id>  1" and "<id> -1" lines, whose flags are numbers too."""
    write_voc(root, {i: [("dog" if n % 2 else "cat", (2, 2, 10, 10))] for n, i in enumerate(ids)},
              splits={"train": ids})
    main_lists = root / "ImageSets" / "Main"
    for name, present in (("cat", 0), ("dog", 1)):
        (main_lists / f"{name}_train.txt").write_text(
            "".join(f"{i} {' 1' if n % 2 == present else '-1'}\n" for n, i in enumerate(ids)), encoding="utf-8")


def test_a_bare_id_is_matched_in_the_first_field_only(tmp_path):
    """The 1 of "2  1" is a flag, the 1 of "4.jpg 1" a label: dropping 1.xml or images/1.jpg
    removes the lines of id 1 and no other."""
    root = tmp_path / "VOC"
    ids = ["1", "2", "3", "4", "12", "21"]
    numbered_voc(root, ids)
    result = drop(str(root / "Annotations" / "1.xml"), apply=True)
    assert result.ok
    main_lists = root / "ImageSets" / "Main"
    assert (main_lists / "train.txt").read_text(encoding="utf-8").split() == ids[1:]
    for name in ("cat_train.txt", "dog_train.txt"):
        assert [line.split()[0] for line in (main_lists / name).read_text(encoding="utf-8").splitlines()] == ids[1:]

    table = tmp_path / "imagenet"
    (table / "images").mkdir(parents=True)
    for number in range(6):
        (table / "images" / f"{number}.jpg").write_bytes(b"jpeg")
    (table / "train.txt").write_text("".join(f"{n}.jpg {n % 3}\n" for n in range(6)), encoding="utf-8")
    (table / "synsets.txt").write_text("".join(f"label_{n}\n" for n in range(3)), encoding="utf-8")
    result = drop(str(table / "images" / "1.jpg"), lists=[str(table / "train.txt")], apply=True)
    assert result.ok
    assert (table / "train.txt").read_text(encoding="utf-8") == "0.jpg 0\n2.jpg 2\n3.jpg 0\n4.jpg 1\n5.jpg 2\n"


def test_a_list_outside_the_root_stops_the_drop_unless_forced(tmp_path):
    """A list the data reads that lies outside the root (a link out of ImageSets, or a root
    given below the lists) cannot be searched: nothing is dropped, in the dry run too, and the
    result never says that no list names the file. --force drops it and names the list."""
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    outside = tmp_path / "elsewhere" / "list.txt"
    outside.parent.mkdir()
    outside.write_text(f"{FOREIGN}\n", encoding="utf-8")
    (root / "ImageSets" / "Main" / "linked_list.txt").symlink_to(outside)
    before = digests(data_files(tmp_path))
    for apply in (False, True):
        result = drop(str(foreign), apply=apply)
        status = {Path(c.path).name: (c.status, c.summary) for c in result.changes}
        assert status["linked_list.txt"][0] == "refused" and "outside the dataset root" in status["linked_list.txt"][1]
        assert status[f"{FOREIGN}.xml"][0] == "skipped" and "could not be searched" in status[f"{FOREIGN}.xml"][1]
        assert not result.ok and result.run_id is None
    assert digests(data_files(tmp_path)) == before and foreign.exists()

    (root / "ImageSets" / "Main" / "linked_list.txt").unlink()
    for apply in (False, True):
        result = drop(str(foreign), root=str(root / "Annotations"), apply=apply)
        status = {Path(c.path).name: (c.status, c.summary) for c in result.changes}
        assert status["train.txt"][0] == "refused" and "give --root a folder that holds it" in status["train.txt"][1]
        assert not result.ok and foreign.exists()
        assert not any("no list names it" in c.summary for c in result.changes)
    forced = drop(str(foreign), root=str(root / "Annotations"), force=True)
    [change] = forced.changes
    assert change.status == "planned" and "no list names it" not in change.summary
    assert "no list searched names it; not searched: " in change.summary and "train.txt" in change.summary


def test_a_file_and_its_lists_reached_through_a_linked_folder_are_planned_once(tmp_path):
    """A/ and Alink -> A: the file named twice is dropped once, each list rewritten once (a
    second plan of the same list was refused while writing and left the drop half-done), and
    undo restores everything."""
    voc_with_a_foreign_xml(tmp_path / "A")
    (tmp_path / "Alink").symlink_to("A")
    files = data_files(tmp_path / "A")
    before = digests(files)
    result = drop([str(tmp_path / "A" / "Annotations" / f"{FOREIGN}.xml"),
                   str(tmp_path / "Alink" / "Annotations" / f"{FOREIGN}.xml")], root=str(tmp_path), apply=True)
    assert result.ok, [(c.path, c.status, c.summary) for c in result.changes]
    assert sorted(Path(c.path).name for c in result.changes) == sorted(
        ["train.txt", "val.txt", "dog_train.txt", f"{FOREIGN}.xml"])
    assert not (tmp_path / "A" / "Annotations" / f"{FOREIGN}.xml").exists()
    assert (tmp_path / "A" / "ImageSets" / "Main" / "train.txt").read_bytes() == f"{IDS[0]}\n{IDS[1]}\n".encode()
    assert any("dropped once" in note for note in result.notes)
    undo(str(tmp_path))
    assert digests(files) == before


def test_a_label_table_the_dataset_reads_loses_the_rows_naming_the_file(tmp_path):
    """ImageNet's train.txt ("1.jpg 1") and a path,label CSV are the lists of their datasets:
    the rows naming the file go. An OpenMMLab JSON naming it cannot be rewritten: refused."""
    imagenet = tmp_path / "imagenet"
    (imagenet / "images").mkdir(parents=True)
    for number in range(6):
        (imagenet / "images" / f"{number}.jpg").write_bytes(b"jpeg")
    (imagenet / "train.txt").write_text("".join(f"{n}.jpg {n % 3}\n" for n in range(6)), encoding="utf-8")
    (imagenet / "synsets.txt").write_text("".join(f"label_{n}\n" for n in range(3)), encoding="utf-8")
    before = digests(data_files(imagenet))
    result = drop(str(imagenet / "images" / "1.jpg"), apply=True)
    assert result.ok
    changes = {Path(c.path).name: c for c in result.changes}
    assert changes["train.txt"].details["removed"][0]["text"] == "1.jpg 1"
    assert "1 list line naming it removed" in changes["1.jpg"].summary
    assert (imagenet / "train.txt").read_text(encoding="utf-8") == "0.jpg 0\n2.jpg 2\n3.jpg 0\n4.jpg 1\n5.jpg 2\n"
    undo(str(imagenet))
    assert digests(data_files(imagenet)) == before

    table = tmp_path / "csv"
    (table / "images").mkdir(parents=True)
    for name in ("a", "b", "c"):
        (table / "images" / f"{name}.jpg").write_bytes(b"jpeg")
    (table / "labels.csv").write_bytes(b"filename,label\r\na.jpg,cat\r\nb.jpg,dog\r\nc.jpg,cat\r\n")
    assert drop(str(table / "images" / "b.jpg"), apply=True).ok
    assert (table / "labels.csv").read_bytes() == b"filename,label\r\na.jpg,cat\r\nc.jpg,cat\r\n"

    mmpretrain = tmp_path / "mmpretrain"
    (mmpretrain / "images").mkdir(parents=True)
    for name in ("a", "b"):
        (mmpretrain / "images" / f"{name}.jpg").write_bytes(b"jpeg")
    (mmpretrain / "ann.json").write_text(json.dumps({"metainfo": {"classes": ["cat", "dog"]}, "data_list": [
        {"img_path": "a.jpg", "gt_label": 0}, {"img_path": "b.jpg", "gt_label": 1}]}), encoding="utf-8")
    before = digests(data_files(mmpretrain))
    result = drop(str(mmpretrain / "images" / "b.jpg"), apply=True)
    status = {Path(c.path).name: (c.status, c.summary) for c in result.changes}
    assert status["ann.json"][0] == "refused" and "data_list[1]" in status["ann.json"][1]
    assert status["b.jpg"][0] == "skipped" and digests(data_files(mmpretrain)) == before


def test_undo_gives_a_dropped_file_back_its_mode_and_time(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    foreign.chmod(0o640)
    os.utime(foreign, ns=(1_000_000_000_000_000_000, 981_173_106_123_456_789))
    assert drop(str(foreign), apply=True).ok and not foreign.exists()
    undone = undo(str(root))
    assert not undone.conflicts
    status = foreign.stat()
    assert stat.S_IMODE(status.st_mode) == 0o640 and status.st_mtime_ns == 981_173_106_123_456_789


def test_a_journal_cannot_make_a_restored_file_setuid(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    foreign.chmod(0o644)
    assert drop(str(foreign), apply=True).ok
    [info] = find_runs(str(root))
    journal = Path(info.dir) / "journal.jsonl"
    journal.write_text(journal.read_text(encoding="utf-8").replace('"mode": 420', '"mode": 2541'), encoding="utf-8")
    undone = undo(str(root))
    assert any("'mode' that is no permission mode" in reason for _, reason in undone.conflicts)
    assert not foreign.exists()


def test_a_list_with_cr_only_line_endings_loses_only_the_line_naming_the_file(tmp_path):
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    train = root / "ImageSets" / "Main" / "train.txt"
    train.write_bytes(f"{IDS[0]}\r{FOREIGN}\r{IDS[1]}\r{IDS[2]}".encode())
    assert drop(str(foreign), apply=True).ok
    assert train.read_bytes() == f"{IDS[0]}\r{IDS[1]}\r{IDS[2]}".encode()


def test_a_list_changed_while_the_drop_writes_undoes_what_it_wrote(tmp_path, monkeypatch):
    """All or nothing at writing: val.txt changes after train.txt was rewritten (another program
    wrote it), so val.txt is refused, the file stays, and train.txt gets its line back."""
    root = tmp_path / "VOC2012"
    foreign = voc_with_a_foreign_xml(root)
    main_lists = root / "ImageSets" / "Main"
    replace = Run.replace

    def replace_then_touch_val(run, target, temp):
        replace(run, target, temp)
        if Path(target).name == "train.txt":
            with open(main_lists / "val.txt", "ab") as handle:
                handle.write(b"2008_000005\r\n")

    monkeypatch.setattr(Run, "replace", replace_then_touch_val)
    train_before = (main_lists / "train.txt").read_bytes()
    result = drop(str(foreign), apply=True)
    status = {Path(c.path).name: (c.status, c.summary) for c in result.changes}
    assert status["val.txt"][0] == "refused" and "changed since" in status["val.txt"][1]
    assert status["train.txt"][0] == "skipped" and "written, then undone" in status["train.txt"][1]
    assert status[f"{FOREIGN}.xml"][0] == "skipped" and foreign.exists()
    assert (main_lists / "train.txt").read_bytes() == train_before
