import json
import os

import pytest

from labelguard.fix._journal import FixError, Run, atomic_write, find_runs, undo


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    atomic_write(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]


def test_run_journals_before_replace_and_undo_restores_bytes(tmp_path):
    files = {tmp_path / f"f{i}.bin": bytes([i]) * 100 for i in range(3)}
    for path, data in files.items():
        path.write_bytes(data)
    with Run(str(tmp_path), "test") as run:
        for path in files:
            run.write_bytes(str(path), b"changed")
    lines = [json.loads(line) for line in open(run.journal_path)]
    assert [entry["event"] for entry in lines] == ["start"] + ["temp", "write", "committed"] * 3 + ["end"]
    assert all(entry["before"] != entry["after"] for entry in lines if entry["event"] == "write")
    assert all(path.read_bytes() == b"changed" for path in files)

    result = undo(str(tmp_path))
    assert len(result.restored) == 3 and not result.conflicts
    assert all(path.read_bytes() == data for path, data in files.items())
    again = undo(str(tmp_path))  # idempotent: nothing left to restore
    assert not again.restored and len(again.unchanged) == 3
    assert all(path.read_bytes() == data for path, data in files.items())


def test_undo_leaves_files_changed_after_the_run_unless_forced(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"v1")
    with Run(str(tmp_path), "test") as run:
        run.write_bytes(str(path), b"v2")
    path.write_bytes(b"v3 edited by hand")
    result = undo(str(tmp_path))
    assert result.conflicts and path.read_bytes() == b"v3 edited by hand"
    forced = undo(str(tmp_path), force=True)
    assert forced.restored and path.read_bytes() == b"v1"


def test_undo_ignores_a_torn_last_journal_line(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"v1")
    run = Run(str(tmp_path), "test")
    run.write_bytes(str(path), b"v2")
    run._journal.write('{"event": "write", "path": "g.t')  # a kill while appending
    run._journal.close()
    run._lock.release()  # as the kill would
    result = undo(str(tmp_path))
    assert path.read_bytes() == b"v1" and len(result.restored) == 1


def test_undo_removes_files_a_run_created_and_finds_runs_from_a_subfolder(tmp_path):
    (tmp_path / "sub").mkdir()
    with Run(str(tmp_path), "test") as run:
        run.write_bytes(str(tmp_path / "sub" / "new.txt"), b"x")
    assert len(find_runs(str(tmp_path / "sub"))) == 1
    result = undo(str(tmp_path / "sub"))
    assert result.removed and not (tmp_path / "sub" / "new.txt").exists()


def test_run_without_writes_leaves_nothing(tmp_path):
    Run(str(tmp_path), "test").close()
    assert not any((tmp_path / ".labelguard" / "backups").iterdir())


def test_undo_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(FixError, match="no fix runs"):
        undo(str(tmp_path))


def test_a_run_writes_only_inside_its_root(tmp_path):
    root, outside = tmp_path / "data", tmp_path / "elsewhere.txt"
    root.mkdir()
    outside.write_bytes(b"keep")
    with Run(str(root), "test") as run:
        with pytest.raises(FixError, match="outside the data root"):
            run.write_bytes(str(outside), b"changed")
        with pytest.raises(FixError, match="outside the data root"):
            run.write_bytes(str(root / ".." / "data-other" / "x.txt"), b"changed")
    assert outside.read_bytes() == b"keep"
    assert sorted(os.listdir(tmp_path)) == ["data", "elsewhere.txt"]  # nothing created outside the root


def test_undo_refuses_a_journal_entry_that_names_a_path_outside_its_root(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "a.txt").write_bytes(b"old")
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"mine")
    with Run(str(root), "test") as run:
        run.write_bytes(str(root / "a.txt"), b"new")
    lines = open(run.journal_path).read().splitlines()
    tampered = [line.replace('"path": "a.txt"', '"path": "../victim.txt"') if '"event": "write"' in line else line
                for line in lines]
    with open(run.journal_path, "w") as handle:
        handle.write("\n".join(tampered) + "\n")
    result = undo(str(root))
    [(where, reason)] = result.conflicts
    assert where == "../victim.txt" and "outside the data root" in reason
    assert victim.read_bytes() == b"mine" and (root / "a.txt").read_bytes() == b"new"
