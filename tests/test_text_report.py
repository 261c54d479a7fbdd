"""The text report hides no distinct problem: one example per distinct class, value and hint,
quoted names, the proposed colour map, and every long list capped with a count."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from annotation_builders import write_image, write_table
from audit_helpers import found, run
from builders import colorize, organic_mask, with_border, write_npy, write_png
from detection_builders import write_voc
from labelguard.cli import main
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.core.text import LISTED
from labelguard.output import write_report
from labelguard.output.text import MESSAGE_CHARS


def text_of(report) -> str:
    stream = io.StringIO()
    write_report(report, "text", stream)
    return stream.getvalue()


def section(text: str, code: str) -> list[str]:
    """The lines of one code group, from its heading to the blank line after it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{code} "))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def examples(group: list[str]) -> list[str]:
    return [line for line in group if line.startswith("  - ")]


@pytest.mark.code("LG101", "fail")
def test_a_class_found_only_in_the_last_file_is_shown_with_its_own_hint(tmp_path):
    # Eight annotations of the training split carry "dgo"; the one stray "caat" sorts last.
    annotations = {f"train_{k:02d}": [("dgo", (1, 1, 5, 5))] for k in range(8)}
    annotations["val_00"] = [("caat", (1, 1, 5, 5))]
    write_voc(tmp_path, annotations)
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    assert len(found(report, "LG101")) == 9
    group = section(text_of(report), "LG101")
    shown = examples(group)
    assert any("val_00.xml" in line and "'caat'" in line for line in shown)
    assert len(shown) == 5
    assert "  in all: 2 classes: 'dgo' (8 files), 'caat' (1 file)" in group
    assert "  ... and 4 more findings (--output-format json lists every finding)" in group
    # each example carries its own hint: one rename for all would be wrong for one of them
    hints = [line.strip() for line in group if line.strip().startswith("hint:")]
    assert any("Rename it to 'cat'" in hint for hint in hints)
    assert any("Rename it to 'dog'" in hint for hint in hints)
    assert len(hints) == len(shown)


@pytest.mark.code("LG201", "fail")
def test_a_value_found_in_one_mask_only_is_shown(tmp_path):
    for k in range(7):
        write_png(tmp_path / "masks" / f"a{k}.png", with_border(organic_mask((24, 24), (0, 1), seed=k)))
    write_png(tmp_path / "masks" / "z_val.png", organic_mask((24, 24), (0, 1, 7)))
    report = run(tmp_path, LabelSpec(num_classes=2))
    group = section(text_of(report), "LG201")
    assert any("z_val.png" in line and "label value 7 " in line for line in examples(group))
    assert any("a0.png" in line and "255" in line for line in examples(group))


@pytest.mark.code("LG201", "fail")
def test_one_hint_is_printed_once_when_every_finding_shares_it(tmp_path):
    for k in range(3):
        write_png(tmp_path / "masks" / f"{k}.png", with_border(organic_mask((24, 24), (0, 1), seed=k)))
    group = section(text_of(run(tmp_path, LabelSpec(num_classes=2))), "LG201")
    assert [line for line in group if "hint:" in line] == [group[-1]]
    assert group[-1].startswith("  hint: If 255 marks borders")


def test_names_with_blanks_are_quoted_in_the_class_table(tmp_path):
    write_table(tmp_path / "train.csv", [("1.jpg", "dog"), ("2.jpg", "dog "), ("3.jpg", "cat")],
                header=("filename", "label"))
    for k in (1, 2, 3):
        write_image(tmp_path / f"{k}.jpg")
    text = text_of(run(tmp_path, LabelSpec(classes=("cat", "dog"))))
    rows = text.split("Classes\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert any(row.split()[0] == "'dog" and row.split()[1] == "'" for row in rows)
    assert any(row.split()[0] == "dog" for row in rows)
    assert "  not in the spec: 'dog ' (1 object)" in rows


@pytest.mark.code("LG203", "fail")
def test_the_proposed_colour_map_is_printed(tmp_path):
    colours = [(0, 0, 0), (200, 10, 10), (10, 200, 10)]
    for k in range(2):
        write_png(tmp_path / "masks" / f"{k}.png", colorize(organic_mask((32, 32), (0, 1, 2), seed=k), colours))
    report = run(tmp_path, LabelSpec(num_classes=3))
    assert report.suggested_color_map
    # colours as every report writes them: "(200, 10, 10) -> 1"
    mapping = ", ".join(f"({k.replace(',', ', ')}) -> {v}" for k, v in report.suggested_color_map.items())
    assert f"  proposed colour -> index map: {mapping}" in text_of(report).splitlines()


@pytest.mark.code("LG201", "fail")
def test_a_mask_of_thousands_of_ids_gives_short_lines_and_the_json_keeps_every_value(tmp_path):
    # instance ids in 5x5 blocks (StarDist-style masks): 1600 distinct values, no photo
    ids = np.arange(1600, dtype=np.uint16).reshape(40, 40)
    write_npy(tmp_path / "masks" / "instances.npy", np.kron(ids, np.ones((5, 5), np.uint16)))
    write_npy(tmp_path / "masks" / "label.npy", organic_mask((100, 100), (0, 1)))
    report = run(tmp_path, LabelSpec(num_classes=3))
    distinct = len(report.summary.value_files)
    assert distinct > 1000
    lines = text_of(report).splitlines()
    assert max(len(line) for line in lines) < 1000
    table = lines[lines.index("Found values") + 2:]
    rows = [line for line in table[: LISTED + 1] if line.split()[0].isdigit()]
    assert len(rows) == LISTED
    assert table[LISTED].startswith(f"  ... {distinct - LISTED:,} more values, each in at most 1 file")
    outside = next(line for line in lines if line.startswith("  outside the spec: "))
    assert outside.endswith(f"; and {len(report.outside_spec()) - LISTED:,} more values")
    assert len(json.loads(_json(report))["summary"]["values"]) == distinct


def _json(report) -> str:
    stream = io.StringIO()
    write_report(report, "json", stream)
    return stream.getvalue()


def test_an_uncapped_message_is_cut_in_the_text_and_whole_in_the_json(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((16, 16), (0, 1)))
    report = run(tmp_path, LabelSpec(num_classes=2))
    message = "values " + ", ".join(str(v) for v in range(20000))
    report = replace(report, findings=[Finding("LG201", Severity.ERROR, "masks/a.png", message)])
    [line] = [line for line in text_of(report).splitlines() if line.startswith("  - masks/a.png")]
    assert len(line) < MESSAGE_CHARS + 200
    assert line.endswith(f"({len(message):,} characters: --output-format json has all of it)")
    assert json.loads(_json(report))["findings"][0]["message"] == message


@pytest.mark.code("LG104", "fail")
def test_never_seen_classes_of_a_large_spec_are_capped(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((16, 16), (0, 1)))
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--num-classes", "500", "--no-config",
                                       "--no-progress", "-f", "json"])
    [finding] = [f for f in json.loads(result.output)["findings"] if f["code"] == "LG104"]
    assert len(finding["data"]["missing"]) == 498
    assert "and 478 more" in finding["message"] and len(finding["message"]) < 400
