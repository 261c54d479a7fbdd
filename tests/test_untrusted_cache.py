"""The result cache is a performance aid, never a source of verdicts someone else can forge.

Each test audits 8 masks that each hold a value outside the spec (8 LG201 errors) through
``labelguard audit`` as a user runs it, after an attacker's change to the cache folder: an
entry forged (findings emptied, its checksum computed again), a FIFO or a link to
``/dev/zero`` in an entry's place, an entry copied from another user's cache, a folder of
another user's or one that others may write into. Every time the audit ends with the 8 errors
and exit 1, and what it may not trust it neither reads nor writes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit_helpers import peak_of, run
from builders import organic_mask, write_png
from labelguard.core import cache as cache_module
from labelguard.core.spec import LabelSpec
from test_hostile_dataset import PEAK_RSS, audit_limited

BAD_MASKS = 8
AUDIT_SECONDS = 120
NOBODY = 65534
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="giving a folder to another user needs root")


def bad_masks(root: Path) -> Path:
    """8 masks of values 0..2, each with one pixel of 7, dated an hour back (the cache stores
    no file modified in its last seconds)."""
    root.mkdir(parents=True)
    for index in range(BAD_MASKS):
        mask = organic_mask((32, 32), classes=(0, 1, 2), seed=index)
        mask[0, 0] = 7
        write_png(root / f"m{index}.png", mask)
    then = time.time() - 3600
    for path in [root, *root.iterdir()]:
        os.utime(path, (then, then))
    return root


def audit_args(data: Path, cache: Path) -> list[str]:
    return [str(data), "--num-classes", "3", "-f", "json", "--no-progress", "--no-config", "--workers", "1",
            "--cache-dir", str(cache)]


def audit_cli(data: Path, cache: Path, cwd: Path | None = None) -> tuple[int, dict, str]:
    """(exit code, JSON report, stderr) of ``labelguard audit`` with the cache at ``cache``,
    run from ``cwd`` (the working folder is part of an entry's key), else from beside the
    data; an audit that waits on something past AUDIT_SECONDS fails the test."""
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", *audit_args(data, cache)],
                          capture_output=True, text=True, timeout=AUDIT_SECONDS, cwd=cwd or data.parent,
                          stdin=subprocess.DEVNULL)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def errors_of(report: dict) -> list[str]:
    return sorted(Path(f["path"]).name for f in report["findings"] if f["code"] == "LG201")


EVERY_MASK = [f"m{index}.png" for index in range(BAD_MASKS)]


def stored_entries(cache: Path) -> list[Path]:
    """The entries of files and the packs of blocks, in the shards of the entries' folder."""
    return sorted(p for p in (cache / cache_module.STORE_VERSION).glob("*/*") if not p.name.endswith(".tmp"))


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def forge(entry: Path) -> None:
    """Empty the entry's findings and compute its checksum again, as the format's head gives
    it (the magic, then the checksum of the body), without any key."""
    data = entry.read_bytes()
    if data.startswith(cache_module.PACK_MAGIC):  # a pack: every result's findings emptied
        head = len(cache_module.PACK_MAGIC) + cache_module.CHECKSUM_BYTES
        key, merged, items, results = cache_module._ResultUnpickler(io.BytesIO(data[head:])).load()

        def emptied(blob: bytes) -> bytes:
            _, parts, files = cache_module._load_result(blob)
            return cache_module._result_blob([], parts, files)

        results = pickle.dumps([([], parts, files) for _, parts, files in cache_module._load_results(results)])
        body = pickle.dumps((key, merged and emptied(merged), items, results))
        entry.write_bytes(cache_module.PACK_MAGIC + hashlib.sha256(body).digest() + body)
        return
    head = len(cache_module.MAGIC) + cache_module.CHECKSUM_BYTES
    identity, dependencies, _, summary, files = cache_module._ResultUnpickler(io.BytesIO(data[head:])).load()
    body = pickle.dumps((identity, dependencies, [], summary, files), protocol=pickle.HIGHEST_PROTOCOL)
    checksum = hashlib.sha256(body).digest()[:cache_module.CHECKSUM_BYTES]
    entry.write_bytes(cache_module.MAGIC + checksum + body)


def test_a_forged_entry_is_a_miss_and_the_errors_are_still_reported(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    code, report, _ = audit_cli(data, cache)
    assert (code, errors_of(report)) == (1, EVERY_MASK)
    entries = stored_entries(cache)
    assert entries
    for entry in entries:
        forge(entry)
    code, report, _ = audit_cli(data, cache)
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, 0)


def test_a_fifo_in_the_cache_folder_does_not_stop_the_audit(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    audit_cli(data, cache)
    planted = stored_entries(cache) + [cache / cache_module.STORE_VERSION / name
                                       for name in ("sources", "libraries", "last-sweep")]
    for path in planted:
        if path.exists():
            path.unlink()
        os.mkfifo(path)
    code, report, _ = audit_cli(data, cache)
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, 0)
    # The FIFOs in the entries' places were replaced by the entries written again.
    assert all(path.is_file() for path in stored_entries(cache))
    code, report, _ = audit_cli(data, cache)
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, BAD_MASKS)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_entry_linked_to_dev_zero_is_a_miss_read_within_bounded_memory(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    audit_cli(data, cache, cwd=run_folder)
    entries = stored_entries(cache)
    for entry in entries:
        entry.unlink()
        entry.symlink_to("/dev/zero")
    code, stdout, stderr, peak = audit_limited(audit_args(data, cache), run_folder)
    report = json.loads(stdout)
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, 0), stderr
    assert peak < PEAK_RSS, f"peak RSS {peak / 2**20:.0f} MiB"
    assert not any(entry.is_symlink() for entry in entries)  # written again


def test_an_entry_past_the_size_bound_is_a_miss_never_read(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    spec = LabelSpec(num_classes=3)
    run(data, spec, cache=str(cache))
    for entry in stored_entries(cache):
        with open(entry, "r+b") as handle:  # sparse: no disk space, but its size
            handle.truncate(cache_module.MAX_ENTRY_BYTES + 1)
    report, peak = peak_of(lambda: run(data, spec, cache=str(cache)))
    assert report.from_cache == 0 and len([f for f in report.findings if f.code == "LG201"]) == BAD_MASKS
    assert peak < cache_module.MAX_ENTRY_BYTES // 4, f"peak {peak / 2**20:.0f} MiB"
    assert all(entry.stat().st_size < 1 << 20 for entry in stored_entries(cache))  # written again


def test_an_entry_copied_from_another_users_cache_is_a_miss(tmp_path):
    data = bad_masks(tmp_path / "data")
    theirs, mine = tmp_path / "their-cache", tmp_path / "my-cache"
    audit_cli(data, theirs)
    audit_cli(data, mine)  # this user's own key and entries
    assert [p.relative_to(mine) for p in stored_entries(mine)] == [p.relative_to(theirs)
                                                                   for p in stored_entries(theirs)]
    for entry in stored_entries(theirs):
        shutil.copyfile(entry, mine / entry.relative_to(theirs))
    code, report, _ = audit_cli(data, mine)
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, 0)
    code, report, _ = audit_cli(data, mine)  # written again with this user's key
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, BAD_MASKS)


def test_the_key_is_private_and_made_once(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    audit_cli(data, cache)
    key = cache / cache_module.STORE_VERSION / "key"
    made = key.stat()
    assert stat.S_IMODE(made.st_mode) == 0o600 and made.st_size == cache_module.KEY_BYTES
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    first = key.read_bytes()
    code, report, _ = audit_cli(data, cache)
    assert report["summary"]["from_cache"] == BAD_MASKS
    assert (key.read_bytes(), key.stat().st_ino) == (first, made.st_ino)


def assert_refused(data: Path, cache: Path, reason: str) -> None:
    """The audit is complete, says it did not use ``cache`` (in the report, where it is named
    from the folder the audit ran in, and on stderr) and wrote nothing there."""
    before = listing(cache) if cache.is_dir() else None
    code, report, stderr = audit_cli(data, cache)
    assert (code, errors_of(report), report["summary"]["from_cache"]) == (1, EVERY_MASK, 0)
    note = (f"the result cache {os.path.relpath(cache, data.parent)} was not used, so every file was read and "
            f"checked: {reason}")
    assert note in report["summary"]["notes"]
    assert f"labelguard: WARNING: {note}" in stderr
    assert (listing(cache) if cache.is_dir() else None) == before


def test_a_cache_folder_others_may_write_into_is_refused(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    assert_refused(data, cache, f"other users may write into it (mode 0777; `chmod go-w {cache}` makes it "
                                "this user's alone)")


def test_a_key_others_may_read_is_refused(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    audit_cli(data, cache)
    key = cache / cache_module.STORE_VERSION / "key"
    key.chmod(0o644)
    assert_refused(data, cache, f"other users may read or write its key {key} (mode 0644); "
                                "`labelguard cache clear` deletes it with the entries")


@needs_root
def test_a_cache_folder_of_another_user_is_refused(tmp_path):
    data, cache = bad_masks(tmp_path / "data"), tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, NOBODY, NOBODY)
    assert_refused(data, cache, f"it belongs to user {NOBODY}, not to this user (0)")


@needs_root
def test_a_link_of_another_user_to_the_cache_folder_is_not_followed(tmp_path):
    data, target, link = bad_masks(tmp_path / "data"), tmp_path / "target", tmp_path / "cache"
    target.mkdir(mode=0o700)
    link.symlink_to(target)
    os.lchown(link, NOBODY, NOBODY)
    assert_refused(data, link, f"it is a symbolic link of user {NOBODY}'s")
