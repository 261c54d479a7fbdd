"""`labelguard demo`: the README's first set-up command writes its datasets and finds every planted fault."""

import os
import re

from click.testing import CliRunner

from audit_helpers import found
from labelguard._audit import audit
from labelguard._optional import available
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from labelguard.demo import write_demo
from labelguard.layouts import AuditOptions


def test_demo_command_writes_and_audits_the_sets(tmp_path):
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    html = ["report.html"] if available("matplotlib") else []  # the HTML report needs labelguard[html]
    assert sorted(os.listdir(tmp_path / "demo")) == ["binary", *html, "swin_unet", "voc_seg"]
    assert result.output.count("labelguard label audit report") == 3
    assert "label value 9 in 100 pixels is outside [0, 9)" in result.output


def test_every_planted_fault_is_found(tmp_path):
    sets = write_demo(str(tmp_path))
    listing = os.path.join(sets["swin_unet"], "lists", "train.txt")
    swin = audit(sets["swin_unet"], options=AuditOptions(lists=(listing,)))
    [bad_value] = found(swin, "LG201")
    assert bad_value.path.endswith("case0002_slice001.npz") and bad_value.data["values"] == [9]
    assert [f.data["entry"] for f in found(swin, "LG003")] == ["case0009_slice000"]
    assert found(swin, "LG004")[0].data["lines"] == [1]
    assert found(swin, "LG206")[0].path.endswith("case0003_slice002.npz")

    voc = audit(sets["voc_seg"])
    [renamed_jpeg] = found(voc, "LG202")
    assert renamed_jpeg.path.endswith("2007_000004.png") and renamed_jpeg.data["renamed"] is True
    assert {255} <= {v for f in found(voc, "LG201") for v in f.data["values"]}

    binary = audit(sets["binary"])
    assert found(binary, "LG209")[0].data["remap"] == {"255": 1}
    assert binary.suggested_remap == {255: 1}
    assert len(found(binary, "LG206")) == 1
    [fringe] = found(binary, "LG202")
    assert fringe.path.endswith("img_002_mask.png")


def test_declaring_the_border_value_accepts_the_voc_borders(tmp_path):
    sets = write_demo(str(tmp_path))
    report = audit(sets["voc_seg"], LabelSpec(ignore=(255,)))
    clean = [f for f in found(report, "LG201") if not f.path.endswith("2007_000004.png")]
    assert clean == []  # only the JPEG-smeared mask still holds values outside the spec


def test_the_closing_line_and_the_html_report_count_what_the_three_audits_found(tmp_path):
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    results = re.findall(r"^result: +(\d+) errors?, (\d+) warnings?, (\d+) info$", result.output, re.M)
    errors, warnings, info = (sum(int(r[i]) for r in results) for i in range(3))
    assert len(results) == 3 and (errors, warnings) == (18, 2)
    assert f"labelguard found {errors} errors, {warnings} warnings, {info} info in the three demo datasets." \
        in result.output
    if available("matplotlib"):
        page = (tmp_path / "demo" / "report.html").read_text(encoding="utf-8")
        assert f"{errors} errors, {warnings} warnings, {info} info" in page
