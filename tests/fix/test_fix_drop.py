"""`fix drop` on the seed scenario: one VOC XML from another dataset sits in Annotations/ (its
class is unknown to the spec: LG101, a KeyError in an SSD data loader) and the split lists name
its id. The file goes with the list lines that name it, every other byte of the lists stays,
and `fix undo` restores the file and the lists byte for byte; nothing outside the dataset root
is touched, and a list that cannot be rewritten holds the file back."""

import json
import os
import signal
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
from labelguard.fix._journal import PAUSE_ENV, find_runs

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
