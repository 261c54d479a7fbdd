"""Discovery of every dataset under a folder, wherever the audit starts.

A folder of exports (Datumaro's test assets, a Kaggle download of several formats) holds
datasets of different layouts side by side. When a layout's only evidence for the folder lies
in one sub-folder, the folder is a container: each dataset below it is found and audited on
its own, with the same findings as when it is audited alone. A dataset whose own sub-folders
carry its evidence (a YOLO set's train/ and valid/) stays one dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labelguard import LabelSpec, audit
from labelguard._detect import detect
from labelguard.layouts.base import discover_datasets, AuditOptions
from tests.builders import write_png
from tests.detection_builders import voc_xml

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SETS = [SHARED / "corpus" / "datumaro", SHARED / "realworld", SHARED / "realworld2"]


def _yolo(folder: Path, rows: dict[str, str]) -> None:
    """YOLO label files beside images of their names (no data.yaml)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem, text in rows.items():
        write_png(folder / f"{stem}.png", np.zeros((16, 16, 3), np.uint8))
        (folder / f"{stem}.txt").write_text(text)


def _exports(root: Path) -> Path:
    """A download of one dataset in three formats: YOLO rows, VOC XMLs and PNG masks, each a
    sub-folder, each with one fault of its own."""
    _yolo(root / "as_yolo", {"a": "0 0.5 0.5 0.2 0.2\n", "b": "0 0.5 0.5 1.8 0.2\n"})  # b: box leaves the image
    voc = root / "as_voc" / "Annotations"
    voc.mkdir(parents=True)
    (voc / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 8, 8))], size=(16, 16)))
    (voc / "b.xml").write_text(voc_xml("b.jpg", [("cat", (1, 1, 30, 8))], size=(16, 16)))  # box beyond the image
    masks = root / "as_masks" / "masks"
    mask = np.zeros((16, 16), np.uint8)
    write_png(masks / "a.png", mask)
    mask[2:4, 2:4] = 9
    write_png(masks / "b.png", mask)
    return root


def _by_dataset(report, root: Path) -> dict[str, list[tuple]]:
    """Each finding's (code, file) grouped by the top folder of ``root`` it lies in."""
    grouped: dict[str, list[tuple]] = {}
    for finding in report.findings:
        if finding.path is None:
            continue
        relative = Path(finding.path).resolve().relative_to(root.resolve())
        grouped.setdefault(relative.parts[0], []).append((finding.code, relative.as_posix(), finding.message))
    return {key: sorted(value) for key, value in grouped.items()}


def test_a_folder_of_exports_is_every_dataset_in_it_each_as_when_audited_alone(tmp_path):
    root = _exports(tmp_path / "download")
    whole = audit(str(root), LabelSpec(num_classes=3), use_project_config=False, cache=False)
    assert sorted(layout.split()[0] for layout in whole.layouts) == ["masks", "voc", "yolo"]
    together = _by_dataset(whole, root)
    for part in ("as_yolo", "as_voc", "as_masks"):
        alone = audit(str(root / part), LabelSpec(num_classes=3), use_project_config=False, cache=False)
        assert _by_dataset(alone, root).get(part) == together.get(part), part
        assert together.get(part), f"{part}'s fault was not found when its parent was audited"


def test_a_dataset_whose_evidence_lies_in_its_split_folders_stays_one_dataset(tmp_path):
    root = tmp_path / "set"
    _yolo(root / "train", {"a": "0 0.5 0.5 0.2 0.2\n"})
    _yolo(root / "valid", {"b": "0 0.5 0.5 0.2 0.2\n"})
    found = discover_datasets(str(root), AuditOptions())
    assert [(Path(d.root).name, d.layout) for d in found] == [("set", "yolo")]


def test_detect_names_the_sub_folder_a_layouts_evidence_lies_in(tmp_path):
    root = _exports(tmp_path / "download")
    [detection] = detect([str(root)])
    yolo = next(c for c in detection.candidates if c.layout.name == "yolo")
    assert yolo.evidence.below is not None and Path(yolo.evidence.below).name == "as_yolo"
    assert sorted((Path(d.root).relative_to(root).as_posix(), d.layout) for d in detection.datasets) == [
        ("as_masks/masks", "masks"), ("as_voc", "voc"), ("as_yolo", "yolo")]


@pytest.mark.parametrize("top", SETS, ids=lambda p: p.name)
def test_each_dataset_found_under_a_real_set_is_found_alike_when_audited_alone(top):
    """The parent-vs-child property on data nobody here wrote: each dataset discovery finds
    under the set's top folder has the same layout and label files when it is the PATH."""
    if not top.is_dir():
        pytest.skip(f"{top} is absent")
    whole = discover_datasets(str(top), AuditOptions())
    assert len(whole) > 1
    for dataset in whole:
        alone = discover_datasets(dataset.root, AuditOptions())
        assert [(d.layout, sorted(t.path for t in d.tasks)) for d in alone] == [
            (dataset.layout, sorted(t.path for t in dataset.tasks))], dataset.root


def test_detect_as_json_lists_every_layouts_evidence(tmp_path):
    from click.testing import CliRunner
    from labelguard.cli import main

    root = _exports(tmp_path / "download")
    result = CliRunner().invoke(main, ["detect", str(root), "-f", "json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.output)
    assert {c["layout"] for c in entry["candidates"]} >= {"voc", "yolo", "coco", "csv"}
    assert sorted(d["layout"] for d in entry["datasets"]) == ["masks", "voc", "yolo"]
