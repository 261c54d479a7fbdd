"""LG004 list-entry-unclean: a file-list entry with stray whitespace, CRLF, a BOM, a comment,
or a blank or duplicated line; the entries still resolve (the list's other tests are in
``tests/test_lists.py``; ``python tests/code_markers.py LG004`` lists them all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit_helpers import found
from builders import swin_unet_dataset, write_list
from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from rule_cases import examples_of, proves


def run_list(data: Path, listing: Path):
    return audit(data, LabelSpec(num_classes=9), options=AuditOptions(lists=(str(listing),)), use_project_config=False)


@pytest.mark.code("LG004", "fail")
@pytest.mark.parametrize("lines, newline, bom, problem", [
    (["case0001_slice000", "case0001_slice001 "], "\n", False, "whitespace"),
    (["case0001_slice000", "case0001_slice001"], "\r\n", False, "crlf"),
    (["case0001_slice000", "case0001_slice001"], "\n", True, "bom"),
    (["case0001_slice000", "", "case0001_slice001"], "\n", False, "blank"),
    (["case0001_slice000", "case0001_slice000"], "\n", False, "duplicate"),
])
def test_unclean_list_entries(tmp_path, lines, newline, bom, problem):
    data, listing = swin_unet_dataset(tmp_path, n=3)
    write_list(listing, lines, newline=newline, bom=bom)
    report = run_list(data, listing)
    assert [f.data["problem"] for f in found(report, "LG004")] == [problem]
    assert report.summary.samples == len(set(lines) - {""})  # the entries still resolve
    assert not found(report, "LG003")


@pytest.mark.code("LG004", "fail")
def test_comment_line_is_unclean(tmp_path):
    # Swin-Unet's loader opens every line of the list, the comment included.
    data, listing = swin_unet_dataset(tmp_path, n=3)
    write_list(listing, ["# fold 1.npz", "case0001_slice000", "case0001_slice001"])
    report = run_list(data, listing)
    [finding] = found(report, "LG004")
    assert finding.data["problem"] == "comment" and finding.data["lines"] == [1]
    assert "'# fold 1.npz'" in finding.message
    assert report.summary.samples == 2 and not found(report, "LG003")


@examples_of("LG004")
def test_lg004_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
