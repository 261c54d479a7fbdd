"""The journal is untrusted input: undo follows none of its paths out of the data, removes only
temporary files it can prove are its own, reports what it cannot use and goes on with the rest;
the journal's paths are relative, so a moved or copied dataset undoes in place."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labelguard.fix._journal import FixError, Run, find_runs, temp_path_for, undo


def make_run(root, names=("a.txt", "b.txt")):
    """A run that rewrote ``names`` under ``root`` (old -> new); its journal path."""
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).write_bytes(b"old " + name.encode())
    with Run(str(root), "test") as run:
        for name in names:
            run.write_bytes(str(root / name), b"new " + name.encode())
    return run.journal_path


def edit_journal(journal, change):
    """Rewrite the journal with ``change(entry)`` applied to each parsed line (None drops it)."""
    entries = [json.loads(line) for line in open(journal)]
    lines = [json.dumps(e) for e in (change(dict(entry)) for entry in entries) if e is not None]
    with open(journal, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def retarget(name, field, value):
    def change(entry):
        if entry.get("event") == "write" and entry["path"] == name:
            entry[field] = value
        return entry

    return change


@pytest.mark.parametrize("path", ["../victim.txt", "{victim}", "sub/../../victim.txt", "link/victim.txt",
                                  ".labelguard/lock", "."])
def test_undo_refuses_an_entry_whose_path_leaves_the_data_and_restores_the_others(tmp_path, path):
    root = tmp_path / "data"
    journal = make_run(root)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"mine")
    os.symlink(tmp_path, root / "link")  # a folder link inside the data that leads out of it
    edit_journal(journal, retarget("a.txt", "path", path.format(victim=victim)))
    result = undo(str(root))
    assert [reason for _, reason in result.conflicts if "outside" in reason or "own folder" in reason]
    assert victim.read_bytes() == b"mine" and (root / "a.txt").read_bytes() == b"new a.txt"
    assert (root / "b.txt").read_bytes() == b"old b.txt"  # the other entry is undone


@pytest.mark.parametrize("backup", ["../../../../victim.txt", "{victim}", "files/../../other/files/x",
                                    "files/../journal.jsonl"])
def test_undo_refuses_a_backup_outside_its_runs_files_folder(tmp_path, backup):
    root = tmp_path / "data"
    journal = make_run(root)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"old a.txt")  # the hash would even match
    edit_journal(journal, retarget("a.txt", "backup", backup.format(victim=victim)))
    result = undo(str(root))
    assert any("backup" in reason and "files/ folder" in reason for _, reason in result.conflicts)
    assert (root / "a.txt").read_bytes() == b"new a.txt" and (root / "b.txt").read_bytes() == b"old b.txt"
    assert victim.read_bytes() == b"old a.txt"


def test_a_missing_backup_is_a_conflict_for_that_file_and_undo_goes_on(tmp_path):
    root = tmp_path / "data"
    journal = make_run(root, ("a.txt", "b.txt", "c.txt"))
    backups = sorted((root / ".labelguard" / "backups").glob("*/files/*"))
    backups[1].unlink()  # b.txt's
    result = undo(str(root))
    assert [(os.path.basename(p), "missing" in r) for p, r in result.conflicts] == [("b.txt", True)]
    assert (root / "a.txt").read_bytes() == b"old a.txt" and (root / "c.txt").read_bytes() == b"old c.txt"
    assert (root / "b.txt").read_bytes() == b"new b.txt"
    assert os.path.exists(journal)


def test_a_damaged_backup_is_not_restored(tmp_path):
    root = tmp_path / "data"
    make_run(root, ("a.txt",))
    [backup] = (root / ".labelguard" / "backups").glob("*/files/*")
    backup.write_bytes(b"tampered")
    result = undo(str(root))
    assert "damaged" in result.conflicts[0][1] and (root / "a.txt").read_bytes() == b"new a.txt"


def test_malformed_journal_lines_are_reported_and_the_rest_is_undone(tmp_path):
    root = tmp_path / "data"
    journal = make_run(root, ("a.txt", "b.txt", "c.txt"))
    lines = open(journal, "rb").read().split(b"\n")
    writes = [i for i, line in enumerate(lines) if b'"event": "write"' in line]
    lines[writes[0]] = b'{"event": "write", "path": "a.txt", "before": "xyz", "after": 3'  # torn mid-file
    lines[writes[1]] = b'{"event": "write", "path": "b.txt", "before": "not-a-hash", "after": null, "backup": null}'
    lines.insert(1, b"[1, 2, 3]")
    lines.insert(2, b"\xff\xfe not utf-8")
    open(journal, "wb").write(b"\n".join(lines))
    result = undo(str(root))
    reasons = [reason for _, reason in result.conflicts]
    assert len(reasons) == 4 and all("not undone" in r for r in reasons)
    assert any("not JSON" in r for r in reasons) and any("no event" in r for r in reasons)
    assert any("SHA-256" in r for r in reasons)
    assert (root / "c.txt").read_bytes() == b"old c.txt"  # the good entry is undone
    assert (root / "a.txt").read_bytes() == b"new a.txt" and (root / "b.txt").read_bytes() == b"new b.txt"


def test_undo_removes_only_temporary_files_named_with_its_run_id(tmp_path):
    root = tmp_path / "data"
    journal = make_run(root, ("a.txt",))
    run_id = os.path.basename(os.path.dirname(journal))
    own = temp_path_for(str(root / "a.txt"), run_id)
    foreign = temp_path_for(str(root / "a.txt"), "20000101T000000000000Z-abcdef")
    precious = root / "notes.txt"
    for path in (own, foreign, precious):
        open(path, "wb").write(b"x")
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"mine")
    for temp in (own, foreign, str(precious), "../victim.txt"):
        with open(journal, "a") as handle:
            handle.write(json.dumps({"event": "temp", "path": os.path.relpath(temp, root)}) + "\n")
    result = undo(str(root))
    assert not os.path.exists(own) and own in result.removed
    assert os.path.exists(foreign) and precious.read_bytes() == b"x" and victim.read_bytes() == b"mine"
    reasons = {os.path.basename(p): r for p, r in result.conflicts}
    assert "without the run id" in reasons[os.path.basename(foreign)] and "without the run id" in reasons["notes.txt"]
    assert "outside" in reasons["victim.txt"]
    assert (root / "a.txt").read_bytes() == b"old a.txt"


def test_undo_does_not_follow_a_link_or_open_a_pipe_put_where_a_fixed_file_was(tmp_path):
    root = tmp_path / "data"
    make_run(root, ("a.txt", "b.txt"))
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"new a.txt")  # what the run wrote: a followed link would look restorable
    (root / "a.txt").unlink()
    os.symlink(victim, root / "a.txt")
    (root / "b.txt").unlink()
    os.mkfifo(root / "b.txt")
    result = subprocess.run([sys.executable, "-m", "labelguard", "fix", "undo", str(root)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "conflict" in result.stdout
    assert "symbolic link" in result.stdout and "named pipe" in result.stdout
    assert victim.read_bytes() == b"new a.txt" and os.path.islink(root / "a.txt")


def test_undo_of_a_moved_dataset_restores_the_moved_files(tmp_path):
    root = tmp_path / "data"
    make_run(root)
    moved = tmp_path / "elsewhere" / "data"
    moved.parent.mkdir()
    os.rename(root, moved)
    result = undo(str(moved))
    assert len(result.restored) == 2 and not result.conflicts
    assert (moved / "a.txt").read_bytes() == b"old a.txt" and not root.exists()


def test_undo_of_a_copied_dataset_restores_the_copy_only(tmp_path):
    root = tmp_path / "data"
    journal = make_run(root)
    assert '"root"' not in open(journal).read()  # no absolute path in the journal
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    undo(str(copy))
    assert (copy / "a.txt").read_bytes() == b"old a.txt"
    assert (root / "a.txt").read_bytes() == b"new a.txt"  # the original is untouched
    assert not find_runs(str(root))[0].undone


def test_a_journal_outside_a_run_folder_is_refused(tmp_path):
    root = tmp_path / "data"
    journal = make_run(root)
    loose = tmp_path / "journal.jsonl"
    shutil.copy(journal, loose)
    with pytest.raises(FixError, match="not a run folder"):
        undo(str(loose))


def test_a_planted_link_for_the_state_folder_is_refused(tmp_path):
    root, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "a.txt").write_bytes(b"old")
    os.symlink(elsewhere, root / ".labelguard")
    with pytest.raises(FixError, match="not a plain folder"):
        Run(str(root), "test")
    assert not any(elsewhere.iterdir()) and (root / "a.txt").read_bytes() == b"old"


PATHS = st.sampled_from(["a.txt", "b.txt", "../victim.txt", "link/victim.txt", "/etc/hostname", ".", "",
                         ".labelguard/lock", "sub/../a.txt", "files/000000-a.txt", "a.txt\x00x"])
VALUES = st.one_of(st.none(), PATHS, st.integers(), st.text(max_size=8), st.just("0" * 64),
                   st.lists(st.integers(), max_size=2))
ENTRY = st.fixed_dictionaries(
    {"event": st.sampled_from(["write", "move", "mkdir", "rmdir", "temp", "undo-temp", "start", "end", "x", 3])},
    optional={"path": VALUES, "source": VALUES, "backup": VALUES, "before": VALUES, "after": VALUES,
              "temp": VALUES})
LINES = st.lists(st.one_of(ENTRY.map(lambda e: json.dumps(e).encode()), st.binary(max_size=20)), max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES)
def test_any_journal_gives_conflicts_never_a_traceback_nor_a_write_outside(tmp_path_factory, lines):
    base = tmp_path_factory.mktemp("hostile")
    root = base / "data"
    journal = make_run(root)
    victim = base / "victim.txt"
    victim.write_bytes(b"old a.txt")
    os.symlink(base, root / "link")
    with open(journal, "ab") as handle:
        handle.write(b"\n".join(lines) + b"\n")
    result = undo(str(root))
    assert all(isinstance(where, str) and reason for where, reason in result.conflicts)
    assert victim.read_bytes() == b"old a.txt"
    assert sorted(p.name for p in base.iterdir()) == ["data", "victim.txt"]
