"""Streaming discovery and flat memory: discovery yields tasks as it walks, the engine takes
them as it needs them (never ``len``), the report keeps counts and the flagged files, its
list of every file spills to disk and streams into the JSON report. Peak memory itself is
measured by ``benchmarks/bench_memory.py``."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import organic_mask, write_png
from detection_builders import write_voc

from labelguard import audit
from labelguard.core import storage
from labelguard.core.engine import BATCH_FILES, BATCHES_PER_WORKER, run_batches, run_tasks
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.layouts.base import discover_datasets
from labelguard.layouts.folders import walk_files
from labelguard.layouts.pairing import (
    _NUMBER_TOKEN, _ROLE_HINT, _pair_in_folder, _role_templates, may_pair, name_key,
)
from labelguard.output import write_report
from labelguard.report import FileList
from labelguard.rules._masks import process_mask

SPEC = LabelSpec(num_classes=3)


def tiny_masks(folder: Path, count: int, bad_every: int = 0) -> Path:
    """``count`` 4x4 masks (a value outside SPEC in every ``bad_every``-th)."""
    for index in range(count):
        mask = organic_mask((4, 4), (0, 1), seed=index % 7)
        if bad_every and index % bad_every == 0:
            mask[0, 0] = 9
        write_png(folder / f"m{index:05d}.png", mask)
    return folder


def test_discovery_yields_the_first_masks_before_it_lists_the_next_folder(tmp_path):
    tiny_masks(tmp_path / "a", 2)
    tiny_masks(tmp_path / "b", 1)
    (discovery,) = discover_datasets(str(tmp_path), AuditOptions(format="masks"), stream=True)
    assert not isinstance(discovery.tasks, list)
    tasks = iter(discovery.tasks)
    first = next(tasks)
    assert Path(first.path).parent.name == "a"
    # Folder b is listed only now: a file put there after the first task came is found.
    write_png(tmp_path / "b" / "late.png", organic_mask((4, 4), (0, 1)))
    rest = [Path(task.path).relative_to(tmp_path).as_posix() for task in tasks]
    assert rest == ["a/m00001.png", "b/late.png", "b/m00000.png"]


def test_a_list_of_tasks_is_what_discover_gives_without_streaming(tmp_path):
    tiny_masks(tmp_path / "masks", 3)
    (discovery,) = discover_datasets(str(tmp_path / "masks"), AuditOptions())
    assert isinstance(discovery.tasks, list) and len(discovery.tasks) == 3


def test_paired_masks_stream_with_their_orphans_found_at_the_end(tmp_path):
    for name in ("a", "b"):
        write_png(tmp_path / "masks" / f"{name}.png", organic_mask((4, 4), (0, 1)))
    for name in ("a", "c"):
        write_png(tmp_path / "images" / f"{name}.png", organic_mask((4, 4), (0, 1)))
    (discovery,) = discover_datasets(str(tmp_path), AuditOptions(), stream=True)
    assert discovery.layout == "paired" and discovery.findings == []
    tasks = list(discovery.tasks)
    assert [(Path(t.path).name, t.image and Path(t.image).name) for t in tasks] == [("a.png", "a.png"),
                                                                                   ("b.png", None)]
    assert sorted((f.code, Path(f.path).name) for f in discovery.findings) == [("LG002", "b.png"),
                                                                               ("LG002", "c.png")]


def counted(tasks, pulled: list[int]):
    for task in tasks:
        pulled[0] += 1
        yield task


def test_the_engine_takes_tasks_as_it_needs_them_and_never_asks_their_number(tmp_path):
    folder = tiny_masks(tmp_path / "masks", 8)
    (discovery,) = discover_datasets(str(folder), AuditOptions())
    many = [discovery.tasks[i % 8] for i in range(3000)]
    pulled = [0]
    results = run_tasks(counted(many, pulled), SPEC, workers=1)
    first = next(results)
    # The batches are sized from a first look at the tasks, then taken one batch at a time.
    assert pulled[0] <= BATCHES_PER_WORKER * BATCH_FILES + BATCH_FILES
    assert first.files + sum(result.files for result in results) == 3000
    assert pulled[0] == 3000


def test_run_batches_gives_each_result_with_its_tasks(tmp_path):
    folder = tiny_masks(tmp_path / "masks", 40, bad_every=9)
    (discovery,) = discover_datasets(str(folder), AuditOptions())
    for workers in (1, 2):
        seen = []
        for batch, result in run_batches(iter(discovery.tasks), SPEC, workers):
            assert result.files == len(batch)
            assert {f.path for f in result.findings} <= {task.display for task in batch}
            seen.extend(task.display for task in batch)
        assert sorted(seen) == sorted(task.display for task in discovery.tasks)


def test_progress_has_no_total_while_discovery_walks_and_the_total_at_the_end(tmp_path):
    count = BATCHES_PER_WORKER * BATCH_FILES + 40  # more than the engine's first look
    tiny_masks(tmp_path / "masks", count)
    seen = []
    report = audit(str(tmp_path / "masks"), SPEC, workers=1, use_project_config=False, cache=False,
                   progress=lambda done, total: seen.append((done, total)))
    assert seen[0][1] is None and seen[-1] == (count, count)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert len(report.files) == count


def test_the_report_keeps_the_tasks_of_flagged_files_only(tmp_path):
    tiny_masks(tmp_path / "masks", 30, bad_every=10)
    report = audit(str(tmp_path / "masks"), SPEC, workers=2, use_project_config=False, cache=False)
    bad = {f.path for f in report.findings if f.code == "LG201"}
    assert len(bad) == 3 and bad <= set(report.flagged_tasks) == {f.path for f in report.findings if f.path}
    assert len(report.flagged_tasks) < len(report.files)
    assert all(task.processor is process_mask for task in report.flagged_tasks.values())


def test_the_list_of_files_spills_to_disk_and_the_json_report_is_unchanged(tmp_path, monkeypatch):
    tiny_masks(tmp_path / "masks", 12, bad_every=5)
    in_memory = audit(str(tmp_path / "masks"), SPEC, use_project_config=False, cache=False)
    monkeypatch.setattr(FileList, "IN_MEMORY", 5)
    spilled = audit(str(tmp_path / "masks"), SPEC, use_project_config=False, cache=False)
    assert spilled.files._rest is not None and len(spilled.files) == 12
    assert spilled.files == in_memory.files == list(in_memory.files)
    assert list(in_memory.files)[-1] in spilled.files and "nothing" not in spilled.files
    for report in (in_memory, spilled):
        out = tmp_path / "report.json"
        with open(out, "w", encoding="utf-8") as handle:
            write_report(report, "json", handle)
        written = out.read_text(encoding="utf-8")
        assert written == json.dumps(report.to_dict(), indent=2, default=str) + "\n"
        assert json.loads(written)["summary"]["files"] == list(report.files)


def junit_of(report, path) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        write_report(report, "junit", handle)
    return path.read_text(encoding="utf-8")


def test_junit_written_a_case_at_a_time_is_whole_with_the_list_of_files_spilled(tmp_path, monkeypatch):
    """The JUnit writer streams its cases from the report's list of files (its bytes against
    the writer of the whole tree: tests/golden/*.junit.xml): spilled to disk or not, the
    output is the same, a case per file in the report's order, counts that match the cases."""
    tiny_masks(tmp_path / "masks", 12, bad_every=5)
    write_png(tmp_path / "masks" / "big" / "bright.png", np.full((8, 8), 200, dtype=np.uint8))
    in_memory = audit(str(tmp_path / "masks"), SPEC, use_project_config=False, cache=False)
    monkeypatch.setattr(FileList, "IN_MEMORY", 5)
    spilled = audit(str(tmp_path / "masks"), SPEC, use_project_config=False, cache=False)
    assert spilled.files._rest is not None
    written = junit_of(spilled, tmp_path / "spilled.xml")
    assert written == junit_of(in_memory, tmp_path / "in-memory.xml")
    suite = ElementTree.fromstring(written).find("testsuite")
    cases = suite.findall("testcase")
    # The files' cases, then the dataset-level findings' (a dataset of 0/1 masks and one 200).
    assert [case.get("name") for case in cases] == [*spilled.files, "(dataset)"] and len(cases) == 14
    failures = [f for case in cases for f in case.findall("failure")]
    errors = [f for f in spilled.findings if f.severity >= Severity.ERROR]
    assert int(suite.get("tests")) == 14 and int(suite.get("failures")) == len(failures) == len(errors) >= 4
    assert {f.get("type") for f in failures} >= {"LG201"}


def test_junit_of_an_audit_of_nothing_is_one_error_case(tmp_path):
    (tmp_path / "empty").mkdir()
    report = audit(str(tmp_path / "empty"), SPEC, use_project_config=False, cache=False)
    suite = ElementTree.fromstring(junit_of(report, tmp_path / "report.xml")).find("testsuite")
    [case] = suite.findall("testcase")
    assert case.find("error") is not None and (suite.get("tests"), suite.get("errors")) == ("1", "1")


def test_an_empty_list_of_files_is_written_as_json_writes_it(tmp_path):
    (tmp_path / "empty").mkdir()
    report = audit(str(tmp_path / "empty"), SPEC, use_project_config=False, cache=False)
    out = tmp_path / "report.json"
    with open(out, "w", encoding="utf-8") as handle:
        write_report(report, "json", handle)
    assert out.read_text(encoding="utf-8") == json.dumps(report.to_dict(), indent=2, default=str) + "\n"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\x00/", blacklist_categories=("Cs",)),
                        min_size=1, max_size=6), unique=True, max_size=40),
       st.integers(min_value=1, max_value=7))
def test_sorted_names_give_the_names_in_sorted_order_again_and_again(names, run):
    original = storage.SORT_RUN
    storage.SORT_RUN = run
    try:
        collected = storage.SortedNames()
        for name in names:
            collected.add(name)
        done = collected.done()
    finally:
        storage.SORT_RUN = original
    assert list(done) == sorted(names) and list(done) == sorted(names)


def test_sorted_names_keep_names_that_are_no_utf8(monkeypatch):
    monkeypatch.setattr(storage, "SORT_RUN", 2)
    names = [os.fsdecode(b"b\xff.png"), "a.png", os.fsdecode(b"\xfe.png"), "c.png"]
    collected = storage.SortedNames()
    for name in names:
        collected.add(name)
    assert list(collected.done()) == sorted(names)


def test_the_walk_gives_what_a_sorted_os_walk_gives(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "SORT_RUN", 3)  # large folders' names are packed in runs
    for relative in ("b/2.png", "b/1.png", "a/z/9.png", "a/3.png", "top.png", ".hidden/x.png", "a/.dot.png",
                     "c/4.png", "c/5.png", "c/6.png", "c/7.png", "c/8.png"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(b"x")
    (tmp_path / "linked").symlink_to(tmp_path / "b", target_is_directory=True)  # listed, not walked
    expected = []
    for directory, dirs, files in os.walk(tmp_path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        expected.extend(os.path.join(directory, name) for name in sorted(files) if not name.startswith("."))
    assert walk_files(str(tmp_path)) == expected
    assert list(storage.iter_files(str(tmp_path), skip_dirs=frozenset({"c"}))) == [
        p for p in expected if "/c/" not in p]


ROLE_NAMES = st.lists(st.builds(lambda a, b, ext: f"{a}{b}{ext}",
                                st.sampled_from(["x", "img_", "mask_", "case", "image", "data_"]),
                                st.sampled_from(["1", "_mask", "_label", "_img", "2d", "_0000", ""]),
                                st.sampled_from([".png", ".nii.gz", ".npy"])), unique=True, max_size=8)


@settings(max_examples=200, deadline=None)
@given(ROLE_NAMES)
def test_files_that_may_not_pair_never_pair(names):
    files = [f"/data/{name}" for name in names]
    if not may_pair(files):
        found = _pair_in_folder(files)
        assert not found.pairs and not found.ambiguous


NAME_PARTS = st.lists(st.sampled_from(["mask", "img", "leftImg8bit", "gtFine", "labelIds", "2d", "_", "-", ".",
                                        "0", "17", "0000", "case", "x", "label", "image", "seg", "ct"]),
                      min_size=1, max_size=7).map("".join)


@settings(max_examples=300, deadline=None)
@given(NAME_PARTS, st.integers(0, 99999))
def test_names_that_differ_only_in_whole_numbers_have_the_same_roles(stem, number):
    """What lets may_pair look at one name per shape: a number that is a whole token never
    changes a name's role, nor its role words."""
    other = _NUMBER_TOKEN.sub(str(number), stem)
    assert name_key(stem)[1] == name_key(other)[1]
    assert sorted(role for _, role in _role_templates(stem)) == sorted(role for _, role in _role_templates(other))
    assert may_pair([f"/d/{stem}.png", "/d/a.png"]) == may_pair([f"/d/{other}.png", "/d/a.png"])


def _label_or_image(stem: str) -> tuple[bool, bool]:
    """Whether a name is a label, and whether it may be an image, as may_pair tells (no memo)."""
    if not _ROLE_HINT.search(stem):
        return False, True
    role = name_key(stem)[1]
    label, image = role == "label", role != "label"
    for _, token_role in _role_templates(stem):
        label, image = label or token_role == "label", image or token_role == "image"
    return label, image


NUMBERED_STEMS = st.lists(st.tuples(NAME_PARTS, st.sampled_from(["", "_", "-", "a", "\u0663"]),
                                    st.one_of(st.just(""), st.integers(0, 999).map(str))).map("".join),
                          max_size=12)


@settings(max_examples=300, deadline=None)
@given(NUMBERED_STEMS, st.sampled_from([1, 2, 4096]))
def test_may_pair_is_whether_one_name_is_a_label_and_one_may_be_an_image(stems, looks_kept):
    """may_pair looks once at names that differ in their last number, and once per shape:
    its answer is the one of looking at every name."""
    import labelguard.layouts.pairing as pairing

    roles = [_label_or_image(stem) for stem in stems]
    expected = any(label for label, _ in roles) and any(image for _, image in roles)
    old = pairing._LOOKS_KEPT
    pairing._LOOKS_KEPT = looks_kept
    try:
        assert may_pair([f"/d/{stem}.png" for stem in stems]) == expected
    finally:
        pairing._LOOKS_KEPT = old


def test_many_masks_of_one_role_cost_no_pairing_index():
    files = [f"/data/mask_{i:05d}.png" for i in range(1000)]
    assert not may_pair(files)
    assert may_pair([*files, "/data/img_00001.png"])


def test_the_files_of_several_paths_come_in_their_order(tmp_path):
    tiny_masks(tmp_path / "one", 2)
    tiny_masks(tmp_path / "two", 1)
    report = audit([str(tmp_path / "two"), str(tmp_path / "one")], SPEC, use_project_config=False, cache=False)
    assert [Path(p).relative_to(tmp_path).as_posix() for p in report.files] == [
        "two/m00000.png", "one/m00000.png", "one/m00001.png"]


def test_progress_never_gives_a_total_below_the_files_done_across_datasets_of_two_specs(tmp_path):
    tiny_masks(tmp_path / "a" / "masks", 5)
    (tmp_path / "a" / "labels.txt").write_text("background\nthing\n", encoding="utf-8")
    tiny_masks(tmp_path / "b" / "masks", 7)
    (tmp_path / "b" / "labels.txt").write_text("background\nthing\nother\n", encoding="utf-8")
    seen = []
    report = audit([str(tmp_path / "a"), str(tmp_path / "b")], workers=1, use_project_config=False, cache=False,
                   progress=lambda done, total: seen.append((done, total)))
    assert len(report.specs) == 2  # one group of tasks per spec, run one after the other
    assert all(total is None or total >= done for done, total in seen), seen
    assert seen[-1] == (12, 12)


def test_voc_tasks_are_made_as_they_are_taken_and_equal_the_listed_ones(tmp_path):
    """A VOC folder's tasks come from an iterator (a task and its display paths are made when
    the engine takes it); a caller that asks for a list gets the same tasks."""
    ids = {f"{i:06d}": [("cat", (1, 1, 10, 10))] for i in range(5)}
    write_voc(tmp_path / "voc", ids, splits={"train": sorted(ids)}, labels=["cat"])
    (streamed,) = discover_datasets(str(tmp_path / "voc"), AuditOptions(), stream=True)
    assert streamed.layout == "voc" and not isinstance(streamed.tasks, list)
    (listed,) = discover_datasets(str(tmp_path / "voc"), AuditOptions())
    assert list(streamed.tasks) == listed.tasks and len(listed.tasks) == 5
    assert all(task.image_display and task.image_display.endswith(".jpg") for task in listed.tasks)


def test_progress_of_a_sample_counts_to_the_sample_not_the_whole_set(tmp_path):
    tiny_masks(tmp_path / "masks", 10)
    seen = []
    report = audit(str(tmp_path / "masks"), SPEC, use_project_config=False, cache=False, sample=3,
                   progress=lambda done, total: seen.append((done, total)))
    assert len(report.files) == 3 and report.sampled["of"] == 10
    assert seen and seen[-1] == (3, 3) and all(total == 3 for _, total in seen)


def test_the_layouts_probes_of_a_local_folder_scan_it_once(tmp_path, monkeypatch):
    """Detection asks a folder for its sub-folders a dozen times (one per layout); while one
    discovery runs, a local folder's are kept after the first scan. The tasks are the same
    with nothing kept."""
    root = tiny_masks(tmp_path / "data", 60)
    for name in ("train", "val", ".cache"):
        tiny_masks(root / name, 3)
    scans: dict[str, int] = {}
    real = os.scandir

    def counted(path=".", *args):
        scans[os.path.abspath(path)] = scans.get(os.path.abspath(path), 0) + 1
        return real(path, *args)

    monkeypatch.setattr(os, "scandir", counted)

    def discovered() -> tuple[list, int]:
        scans.clear()
        found = discover_datasets(str(root), AuditOptions(), stream=True)
        return [(d.layout, task.path) for d in found for task in d.tasks], scans.get(str(root.resolve()), 0)

    kept_tasks, kept_scans = discovered()
    monkeypatch.setattr(storage, "KEPT_ENTRIES", 0)  # nothing of a folder kept
    tasks, scanned = discovered()
    assert kept_tasks == tasks and len(tasks) == 66  # the hidden folder's masks are not audited
    # Kept: the probes' one scan (storage._FolderIndex), the token layout's peek at a few
    # entries, and the walk that makes the tasks; else a scan per probe.
    assert kept_scans <= 3 and scanned >= 8, (kept_scans, scanned)
    assert all(".cache" not in path for _, path in tasks)


ENTRY_NAMES = st.sampled_from(["a.json", "b.JSON", ".hidden.json", "c.xml", "d.Xml", "e.txt", "f.TXT", "g.csv",
                               "h.png", "i.png", "j.PNG", "k", "l.tar.gz", "m.json.txt", "n.tsv", "o_seg.png"])
ENTRY_KINDS = st.sampled_from(["file", "folder", "link to a file", "link to a folder", "broken link"])
SUFFIX_SETS = st.sampled_from([(".json",), (".xml",), (".txt",), (".csv", ".tsv", ".txt"), (".png",), (".gz",)])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(ENTRY_NAMES, ENTRY_KINDS, min_size=0, max_size=12), st.integers(0, 12),
       st.lists(SUFFIX_SETS, min_size=1, max_size=4), st.booleans())
def test_a_folders_index_answers_as_a_scan_of_it_does(entries, kept_entries, asked, files_only):
    """While a discovery keeps listings, a local folder's probes are answered from one scan of
    it, whatever of it the budget of names kept dropped: the same names as a scan each time."""
    import tempfile

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "data"
        (folder / "sub" / "deeper").mkdir(parents=True)
        (folder / "sub" / "x.json").write_text("{}")
        for name, kind in entries.items():
            path = folder / name
            if kind == "file":
                path.write_bytes(b"x")
            elif kind == "folder":
                path.mkdir()
            elif kind == "link to a file":
                path.symlink_to(folder / "sub" / "x.json")
            elif kind == "link to a folder":
                path.symlink_to(folder / "sub", target_is_directory=True)
            else:
                path.symlink_to(folder / "nowhere")

        def answers() -> list:
            found = [storage.folder_names(str(folder)), storage.folder_names(str(folder), hidden=False)]
            for suffixes in asked:
                found.append(storage.names_with_suffix(str(folder), suffixes, files_only))
                found.append([(prefix, list(names)) for prefix, names in storage.iter_folders(str(folder),
                                                                                              suffixes=suffixes)])
            return found

        scanned = answers()
        old = storage.KEPT_ENTRIES
        storage.KEPT_ENTRIES = kept_entries
        try:
            with storage.listings_kept():
                kept = answers()
                again = answers()
        finally:
            storage.KEPT_ENTRIES = old
        assert kept == scanned == again
        for suffixes, names in zip(asked, scanned[2::2]):
            assert all(name.lower().endswith(suffixes) for name in names)
            assert all((folder / name).is_file() for name in names) if files_only else True


def test_folders_of_many_masks_keep_their_few_json_files_and_drop_their_masks(tmp_path, monkeypatch):
    """Past the budget of names a discovery keeps, the largest group of any folder is dropped,
    not the few names the probes ask for: those are still answered without a scan."""
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
        for index in range(40):
            (folder / f"mask_{index:03d}.png").write_bytes(b"x")
        (folder / "instances.json").write_text("{}")
        (folder / "sub").mkdir()
    monkeypatch.setattr(storage, "KEPT_ENTRIES", 50)
    scans = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": scans.append(path) or real(path))
    with storage.listings_kept():
        for folder in folders:
            assert storage.names_with_suffix(str(folder), (".json",)) == ["instances.json"]
        for folder in folders:
            assert storage.names_with_suffix(str(folder), (".json",)) == ["instances.json"]
            assert storage.names_with_suffix(str(folder), (".xml",), files_only=True) == []
            assert storage.folder_names(str(folder)) == ["sub"]
        assert len(scans) == 2
        assert len(storage.names_with_suffix(str(folders[0]), (".png",))) == 40  # dropped: scanned again
        assert len(scans) == 3
