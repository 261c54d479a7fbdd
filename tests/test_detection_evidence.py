"""Detection as evidence: a layout's confidence is what it saw, weighed, and near-ties are said.

Each layout has a level (how specific its format is); what it sees for a folder confirms that
level more or less: a file read of the format more than a folder's name, two things seen more
than one. When another layout's evidence comes within ``NEAR`` of the one taken, the audit and
``labelguard detect`` say so, with both layouts' reasons and the flag that reads the folder as
the other.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, strategies as st

from labelguard import LabelSpec, audit
from labelguard._detect import detect, render_text
from labelguard.layouts.base import (
    CONTENT, DECLARED, GIVEN, LAYOUTS, NAMES, NEAR, SHAPE, SPREAD, AuditOptions, Seen, candidates, evidence,
)
from tests.builders import write_png
from tests.detection_builders import voc_xml

KINDS = [GIVEN, CONTENT, DECLARED, NAMES, SHAPE]


@given(st.floats(0.05, 1.0), st.lists(st.sampled_from(KINDS), min_size=1, max_size=5), st.sampled_from(KINDS))
def test_each_thing_seen_more_confirms_more_and_no_evidence_passes_its_level(level, kinds, more):
    seen = [Seen(f"seen {i}", kind) for i, kind in enumerate(kinds)]
    before = evidence(level, *seen).confidence
    after = evidence(level, *seen, Seen("one more", more)).confidence
    assert level * (1 - SPREAD) - 1e-9 <= before <= after <= level + 1e-9


def test_a_file_read_of_the_format_says_more_than_a_folder_name():
    assert evidence(0.5, Seen("x", CONTENT)).confidence > evidence(0.5, Seen("x", NAMES)).confidence \
        > evidence(0.5, Seen("x", SHAPE)).confidence
    assert evidence(0.5, Seen("flag", GIVEN)).confidence == 0.5


def _nnunet(root: Path, described: bool) -> Path:
    write_png(root / "labelsTr" / "case_001.png", np.zeros((8, 8), np.uint8))
    write_png(root / "imagesTr" / "case_001_0000.png", np.zeros((8, 8), np.uint8))
    if described:
        (root / "dataset.json").write_text(json.dumps({"labels": {"background": 0, "a": 1},
                                                        "channel_names": {"0": "CT"}, "file_ending": ".png"}))
    return root


def _confidence(root: Path, layout: str) -> float:
    return LAYOUTS[layout].detect(str(root), AuditOptions()).confidence


def test_nnunet_with_its_dataset_json_is_more_confident_than_labels_tr_alone(tmp_path):
    alone = _confidence(_nnunet(tmp_path / "a", False), "nnunet")
    described = _confidence(_nnunet(tmp_path / "b", True), "nnunet")
    assert 0 < alone < described <= LAYOUTS["nnunet"].ceiling


def test_an_annotation_folder_of_voc_xml_is_more_confident_than_one_of_other_xml(tmp_path):
    voc, other = tmp_path / "voc" / "Annotations", tmp_path / "other" / "Annotations"
    voc.mkdir(parents=True)
    other.mkdir(parents=True)
    (voc / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 8, 8))], size=(16, 16)))
    (other / "a.xml").write_text("<svg><rect/></svg>")
    seen_voc = LAYOUTS["voc"].detect(str(voc.parent), AuditOptions())
    seen_other = LAYOUTS["voc"].detect(str(other.parent), AuditOptions())
    assert seen_voc.confidence > seen_other.confidence > 0
    assert "with an <annotation> root" in seen_voc.reasons and len(seen_other.reasons) == 1


def test_a_yolo_folder_with_its_data_yaml_is_more_confident_than_its_labels_alone(tmp_path):
    for folder in ("a", "b"):
        write_png(tmp_path / folder / "images" / "x.png", np.zeros((8, 8, 3), np.uint8))
        (tmp_path / folder / "labels").mkdir(parents=True)
        (tmp_path / folder / "labels" / "x.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (tmp_path / "b" / "data.yaml").write_text("names: [cat]\nnc: 1\n")
    assert 0 < _confidence(tmp_path / "a", "yolo") < _confidence(tmp_path / "b", "yolo")


def _images_masks_and_a_table(root: Path) -> Path:
    """Image and mask folders side by side, and a table of paths and labels beside them:
    two layouts' evidence, within NEAR of each other."""
    mask = np.zeros((8, 8), np.uint8)
    mask[1:3, 1:3] = 1
    write_png(root / "masks" / "a.png", mask)
    write_png(root / "images" / "a.png", np.zeros((8, 8, 3), np.uint8))
    (root / "train.csv").write_text("image,label\nimages/a.png,cat\n")
    return root


def test_a_near_tie_is_decided_by_the_evidence_and_said_in_the_audit_and_in_detect(tmp_path):
    root = _images_masks_and_a_table(tmp_path / "set")
    found = [c for c in candidates(str(root), AuditOptions()) if c.evidence]
    assert [c.layout.name for c in found[:2]] == ["paired", "csv"]
    assert 0 < found[0].evidence.confidence - found[1].evidence.confidence <= NEAR
    report = audit(str(root), LabelSpec(num_classes=2), use_project_config=False, cache=False)
    assert report.layouts == ["paired"]
    [note] = [note for note in report.notes if "was taken over" in note]
    assert "paired (0.31: images/ and masks/ side by side) was taken over csv (0.28: " in note
    assert "--format csv" in note
    # The table the paired layout does not read is accounted for: a label file not audited.
    assert [(f.code, Path(f.path).name) for f in report.findings if f.code == "LG007"] == [("LG007", "train.csv")]
    assert "was taken over csv" in render_text(detect([str(root)]))
    # The user's word decides otherwise.
    forced = audit(str(root), LabelSpec(num_classes=2), options=AuditOptions(format="csv"),
                   use_project_config=False, cache=False)
    assert forced.layouts == ["csv"] and not [n for n in forced.notes if "was taken over" in n]


def test_a_clear_winner_gets_no_near_tie_note(tmp_path):
    """A VOC folder's JPEGImages/ and SegmentationClass/ read as image and mask folders too,
    far below the VOC XML's evidence: nothing to say."""
    root = tmp_path / "VOC"
    (root / "Annotations").mkdir(parents=True)
    (root / "Annotations" / "a.xml").write_text(voc_xml("a.png", [("cat", (1, 1, 8, 8))], size=(16, 16)))
    write_png(root / "JPEGImages" / "a.png", np.zeros((16, 16, 3), np.uint8))
    write_png(root / "SegmentationClass" / "a.png", np.zeros((16, 16), np.uint8))
    found = [c for c in candidates(str(root), AuditOptions()) if c.evidence]
    assert found[0].layout.name == "voc" and found[0].evidence.confidence - found[1].evidence.confidence > NEAR
    report = audit(str(root), LabelSpec(classes=("background", "cat")), use_project_config=False, cache=False)
    assert report.layouts == ["voc"] and not [n for n in report.notes if "was taken over" in n]
