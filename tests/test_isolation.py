"""A layout or a rule whose code crashes costs only what it reads: the crash is an internal
error of the report naming the layout (or the rule) and the folder, and the other datasets,
rules and files are still audited. A user's mistake (a LabelguardError) still stops the audit
with its message."""

from __future__ import annotations

import numpy as np
import pytest

from builders import write_png
from labelguard._audit import audit
from labelguard.core.rules import rule, unregister
from labelguard.core.tasks import FileTask
from labelguard.errors import UsageError
from labelguard.layouts.base import LAYOUTS, LISTS, NAMES, Discovery, Seen, evidence, register_layout
from labelguard.rules._masks import process_mask


def crashing_layout(name: str, marker: str, after: int | None):
    """A layout that takes folders holding ``marker``; its discovery raises at once
    (``after`` None) or its walk raises after ``after`` files."""

    def discover(root, options):
        if after is None:
            raise RuntimeError("boom in discovery")

        def walk():
            import os
            for number, entry in enumerate(sorted(os.listdir(root))):
                if number == after:
                    raise RuntimeError("boom in the walk")
                if entry.endswith(".png"):
                    yield FileTask(process_mask, os.path.join(root, entry), f"{os.path.basename(root)}/{entry}")
        return Discovery(name, root, tasks=walk())

    def detect(root, options):
        import os
        return evidence(0.9 if os.path.exists(os.path.join(root, marker)) else 0.0, Seen(f"a {marker} file", NAMES))

    discover.detect = detect
    register_layout(name, "a layout that crashes", 0.9, (LISTS,))(discover)


@pytest.fixture
def crashes():
    yield crashing_layout
    for name in [n for n in LAYOUTS if n.startswith("crashing")]:
        del LAYOUTS[name]


def two_datasets(tmp_path, marker):
    """good/ (masks with a value 5 for num_classes=3) and bad/ (the crashing layout's)."""
    write_png(tmp_path / "good" / "a.png", np.full((8, 8), 5, np.uint8))
    write_png(tmp_path / "good" / "b.png", np.zeros((8, 8), np.uint8))
    for i in range(3):
        write_png(tmp_path / "bad" / f"{i}.png", np.zeros((8, 8), np.uint8))
    (tmp_path / "bad" / marker).write_text("x")
    return tmp_path


def test_a_layout_that_raises_in_discovery_is_an_internal_error_and_the_other_dataset_is_audited(crashes, tmp_path):
    crashes("crashing_now", "CRASH_NOW", None)
    report = audit(str(two_datasets(tmp_path, "CRASH_NOW")), {"num_classes": 3}, workers=1, cache=False)
    assert any("layout 'crashing_now' crashed while discovering the dataset: RuntimeError: boom in discovery" in e
               and "bad" in e for e in report.errors), report.errors
    assert [f.path.rsplit("/", 2)[-2:] for f in report.findings if f.code == "LG201"] == [["good", "a.png"]]


def test_a_layout_whose_walk_raises_keeps_the_files_it_found_before(crashes, tmp_path):
    crashes("crashing_later", "CRASH_LATER", 2)
    report = audit(str(two_datasets(tmp_path, "CRASH_LATER")), {"num_classes": 3}, workers=1, cache=False)
    assert any("layout 'crashing_later' crashed while walking the dataset, after 2 files" in e
               for e in report.errors), report.errors
    assert {"bad/0.png", "bad/1.png"} <= {"/".join(f.rsplit("/", 2)[-2:]) for f in report.files}
    assert [f.path.rsplit("/", 2)[-2:] for f in report.findings if f.code == "LG201"] == [["good", "a.png"]]


def test_a_users_mistake_in_a_layout_still_stops_the_audit(tmp_path):
    write_png(tmp_path / "a.png", np.zeros((8, 8), np.uint8))
    with pytest.raises(UsageError, match="unknown format"):
        audit(str(tmp_path), {"num_classes": 3}, workers=1, cache=False, format="no-such-layout")


def test_layout_options_are_keywords_of_audit_too_and_an_unknown_one_is_a_usage_error(tmp_path):
    write_png(tmp_path / "a.png", np.full((8, 8), 5, np.uint8))
    by_keyword = audit(str(tmp_path), {"num_classes": 3}, workers=1, cache=False, format="masks")
    by_mapping = audit(str(tmp_path), {"num_classes": 3}, workers=1, cache=False, options={"format": "masks"})
    assert [f.code for f in by_keyword.findings] == [f.code for f in by_mapping.findings]
    assert "LG201" in [f.code for f in by_keyword.findings]
    with pytest.raises(UsageError, match="unknown audit option colour_map"):
        audit(str(tmp_path), {"num_classes": 3}, workers=1, cache=False, colour_map="x.json")
    # Paths as Path objects, in keywords and in AuditOptions alike.
    pathed = audit(tmp_path, {"num_classes": 3}, workers=1, cache=False, masks=tmp_path, format="paired",
                   images=tmp_path)
    assert pathed.errors == []


def test_an_entries_rule_that_raises_is_an_internal_error_and_the_list_is_still_judged(tmp_path):
    from labelguard.rules.lg003 import MISSING

    @rule(MISSING, "entries")
    def crashing_entries_rule(record, spec):
        raise KeyError("a bug")

    write_png(tmp_path / "a.png", np.zeros((8, 8), np.uint8))
    (tmp_path / "train.txt").write_bytes(b"a.png \r\nc.png\r\n")
    try:
        report = audit(str(tmp_path), {"num_classes": 3}, workers=1, cache=False, lists=[str(tmp_path / "train.txt")])
    finally:
        unregister(crashing_entries_rule)
    assert any("rule LG003" in e and "crashing_entries_rule" in e and "KeyError" in e for e in report.errors)
    assert {"LG003", "LG004"} <= {f.code for f in report.findings}  # the real rules still ran


def test_a_layout_whose_detection_raises_is_an_internal_error_and_another_layout_reads_the_folder(tmp_path):
    def discover(root, options):
        return Discovery("crashing_detect", root)

    def detect(root, options):
        raise ZeroDivisionError("boom in detection")

    discover.detect = detect
    register_layout("crashing_detect", "a layout whose detection crashes", 0.99)(discover)
    try:
        write_png(tmp_path / "a.png", np.full((8, 8), 5, np.uint8))
        report = audit(str(tmp_path), {"num_classes": 3}, workers=1, cache=False)
    finally:
        del LAYOUTS["crashing_detect"]
    assert any("layout 'crashing_detect' crashed while detecting the dataset: ZeroDivisionError: boom in detection"
               in e for e in report.errors), report.errors
    assert [f.code for f in report.findings if f.code == "LG201"] == ["LG201"]  # the masks layout read it


def test_a_crashed_layout_stays_in_the_report_when_a_list_selects_the_other_dataset(crashes, tmp_path):
    crashes("crashing_now", "CRASH_NOW", None)
    root = two_datasets(tmp_path, "CRASH_NOW")
    listing = root / "good" / "train.txt"
    listing.write_text("a.png\n")
    report = audit(str(root), {"num_classes": 3}, workers=1, cache=False, lists=[str(listing)])
    assert any("layout 'crashing_now' crashed" in e for e in report.errors), (report.errors, report.notes)
    assert report.exit_code("never") == 2


def test_a_fix_refuses_to_plan_on_data_whose_discovery_crashed(crashes, tmp_path):
    import labelguard.fix

    crashes("crashing_now", "CRASH_NOW", None)
    root = two_datasets(tmp_path, "CRASH_NOW")
    before = (root / "good" / "a.png").read_bytes()
    with pytest.raises(labelguard.fix.FixError, match="layout 'crashing_now' crashed"):
        labelguard.fix.remap(str(root), {5: 1}, apply=True)
    assert (root / "good" / "a.png").read_bytes() == before


def test_detect_names_a_crashed_layout(crashes, tmp_path):
    from labelguard._detect import detect, render_text

    crashes("crashing_now", "CRASH_NOW", None)
    text = render_text(detect([str(two_datasets(tmp_path, "CRASH_NOW"))]))
    assert "internal error:" in text and "layout 'crashing_now' crashed while discovering the dataset" in text
