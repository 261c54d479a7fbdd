"""`fix list` on split lists written the way the tools write them: it never drops an entry that
a file answers to, refuses a plan that would, and journals where `fix undo` finds it."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import swin_unet_dataset, write_list
from detection_builders import write_voc
from fix_data import digests
from labelguard import LabelSpec
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.fix import clean_list, undo
from labelguard.layouts.base import AuditOptions

IDS = [f"2008_{k:06d}" for k in range(1, 37)]


def voc_split(root: Path) -> Path:
    """A VOC2012-style folder: every id has Annotations/<id>.xml and JPEGImages/<id>.jpg, and
    ImageSets/Main/train.txt names the 36 ids without extension (as the devkit writes it)."""
    write_voc(root, {i: [("dog", (2, 2, 10, 10))] for i in IDS}, splits={"train": IDS})
    return root / "ImageSets" / "Main" / "train.txt"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_a_clean_voc_split_list_keeps_all_36_entries(tmp_path):
    listing = voc_split(tmp_path / "VOC-1205")
    original = listing.read_bytes()
    result = invoke("fix", "list", listing, "--root", tmp_path / "VOC-1205", "--apply")
    assert result.exit_code == 0, result.output
    assert "unchanged" in result.output and "clean (36 entries)" in result.output
    assert listing.read_bytes() == original
    assert not (tmp_path / "VOC-1205" / ".labelguard").exists()


def test_an_unclean_voc_split_list_loses_only_its_dirt(tmp_path):
    root = tmp_path / "VOC-1205"
    listing = voc_split(root)
    write_list(listing, ["# fold 1", IDS[0] + " ", ""] + IDS[1:] + [IDS[5], "2008_999999"], newline="\r\n")
    for with_root in (True, False):
        dry = clean_list(str(listing), root=str(root) if with_root else None)
        [change] = dry.changes
        assert change.status == "planned", change.summary
        assert change.details["entries"] == 36 and change.details["removed"] == ["2008_999999"]
        assert {"comment", "blank", "whitespace", "crlf", "duplicate", "missing"} <= set(change.details["problems"])

    result = invoke("fix", "list", listing, "--root", root, "--apply")
    assert result.exit_code == 0, result.output
    assert listing.read_bytes() == "".join(i + "\n" for i in IDS).encode()


def test_entries_are_kept_however_many_files_share_their_stem(tmp_path):
    root = tmp_path / "VOC"
    listing = voc_split(root)
    # a segmentation mask too: three files answer to the first id
    (root / "SegmentationClass").mkdir()
    (root / "SegmentationClass" / f"{IDS[0]}.png").write_bytes((root / "JPEGImages" / f"{IDS[0]}.jpg").read_bytes())
    per_class = write_list(root / "ImageSets" / "Main" / "dog_train.txt", [f"{i} {'-1' if k % 2 else ' 1'}"
                                                                        for k, i in enumerate(IDS[:6])] + [""])
    result = clean_list([str(listing), str(per_class)], apply=True)
    assert [c.status for c in result.changes] == ["unchanged", "written"], result.changes
    assert per_class.read_text().splitlines() == [f"{i} {'-1' if k % 2 else ' 1'}".strip()
                                                  for k, i in enumerate(IDS[:6])]


def test_a_plan_that_would_drop_existing_entries_is_refused(tmp_path):
    root = tmp_path / "VOC"
    listing = voc_split(root)
    write_list(listing, IDS + [""])
    original = listing.read_bytes()
    wrong = tmp_path / "VOC" / "SegmentationObject"
    wrong.mkdir()
    result = invoke("fix", "list", listing, "--root", wrong, "--apply")
    assert result.exit_code == 1
    assert "refused" in result.output and f"line 1 '{IDS[0]}'" in result.output and "--root" in result.output
    assert listing.read_bytes() == original
    assert not (root / ".labelguard").exists() and not (wrong / ".labelguard").exists()


def test_a_plan_that_would_empty_the_list_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    listing = write_list(tmp_path / "lists" / "train.txt", ["a", "b "])
    result = clean_list(str(listing), root=str(data), apply=True)
    assert result.changes[0].status == "refused" and "every one of the 2 entries" in result.changes[0].summary
    assert listing.read_bytes() == b"a\nb \n"


@pytest.mark.parametrize("undo_from", ["root", "list folder"])
def test_undo_finds_the_journal_from_the_root_and_from_the_list_folder(tmp_path, undo_from):
    root = tmp_path / "VOC"
    listing = voc_split(root)
    write_list(listing, ["\ufeff" + IDS[0]] + IDS[1:] + ["", "# old ids", IDS[3]], newline="\r\n")
    original = digests([listing])
    result = invoke("fix", "list", listing, "--apply")
    assert result.exit_code == 0 and f"undo with: labelguard fix undo {root}" in result.output
    assert listing.read_bytes() == "".join(i + "\n" for i in IDS).encode()
    where = root if undo_from == "root" else listing.parent
    undone = invoke("fix", "undo", where)
    assert undone.exit_code == 0, undone.output
    assert digests([listing]) == original


@pytest.mark.code("LG004", "fail")
def test_fix_list_removes_comment_lines_the_loader_would_open(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=3)
    names = [p.stem for p in sorted(data.glob("*.npz"))]
    write_list(listing, ["# fold 1.npz"] + names)
    options = AuditOptions(lists=(str(listing),))

    def problems():
        report = audit(str(data), LabelSpec(num_classes=9), options=options, use_project_config=False)
        return [f.data["problem"] for f in report.findings if f.code == "LG004"]

    assert problems() == ["comment"]
    result = clean_list(str(listing), apply=True)
    assert result.changes[0].status == "written"
    assert listing.read_text().splitlines() == names and problems() == []
    undo(str(data.parent))
    assert listing.read_text().splitlines()[0] == "# fold 1.npz"
