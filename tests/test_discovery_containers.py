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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labelguard import LabelSpec, audit
from labelguard._detect import detect
from labelguard.layouts.base import discover_datasets, AuditOptions
from tests.builders import write_jpeg, write_png
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
        alone = {d.root: (d.layout, sorted(t.path for t in d.tasks))
                 for d in discover_datasets(dataset.root, AuditOptions())}
        assert alone.get(dataset.root) == (dataset.layout, sorted(t.path for t in dataset.tasks)), dataset.root


def test_detect_as_json_lists_every_layouts_evidence(tmp_path):
    from click.testing import CliRunner
    from labelguard.cli import main

    root = _exports(tmp_path / "download")
    result = CliRunner().invoke(main, ["detect", str(root), "-f", "json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.output)
    assert {c["layout"] for c in entry["candidates"]} >= {"voc", "yolo", "coco", "csv"}
    assert sorted(d["layout"] for d in entry["datasets"]) == ["masks", "voc", "yolo"]


def test_a_class_file_above_a_voc_folder_leaves_the_voc_folder_its_own_dataset(tmp_path):
    """labelme's examples: labels.txt in semantic_segmentation/ above the data_dataset_voc/
    folder labelme2voc wrote. From any parent, the VOC folder is read as when it is the PATH."""
    top = tmp_path / "examples" / "semantic_segmentation"
    voc = top / "data_dataset_voc"
    (top / "labels.txt").parent.mkdir(parents=True)
    (top / "labels.txt").write_text("__ignore__\n_background_\ncat\n")
    mask = np.zeros((8, 8), np.uint8)
    mask[1:3, 1:3] = 1
    write_png(voc / "SegmentationClass" / "a.png", mask)
    write_png(voc / "JPEGImages" / "a.png", np.zeros((8, 8, 3), np.uint8))
    (voc / "class_names.txt").write_text("_background_\ncat\n")
    alone = discover_datasets(str(voc), AuditOptions())
    for start in (tmp_path, tmp_path / "examples", top):
        found = discover_datasets(str(start), AuditOptions())
        assert [(d.root, d.layout) for d in found] == [(d.root, d.layout) for d in alone], start


def test_folders_of_masks_side_by_side_below_other_datasets_are_one_dataset(tmp_path):
    """LEVIR-CD below a folder of other datasets: A/, B/ and label/ are one dataset, not three."""
    top = tmp_path / "data"
    _yolo(top / "other" / "yolo", {"a": "0 0.5 0.5 0.2 0.2\n"})
    pair = top / "levircd" / "levircd"
    for folder in ("A", "B", "label"):
        mask = np.zeros((8, 8), np.uint8)
        mask[2:4, 2:4] = 1
        write_png(pair / folder / "x.png", mask)
    found = discover_datasets(str(top), AuditOptions())
    assert sorted((Path(d.root).relative_to(top).as_posix(), d.layout) for d in found) == [
        ("levircd/levircd", "masks"), ("other", "yolo")]


def _landcover(root: Path, tile_value: int = 3) -> Path:
    """LandCover.ai's shape: a scene in images/ beside its mask in masks/, and output/ with
    the tiles cut from it, x.jpg beside x_m.png, named by train.txt without folder or
    extension."""
    scene = np.zeros((16, 16), np.uint8)
    scene[4:8, 4:8] = 2
    write_png(root / "masks" / "M-1.png", scene)
    write_png(root / "images" / "M-1.png", np.zeros((16, 16, 3), np.uint8))
    for index in (0, 1):
        tile = np.zeros((8, 8), np.uint8)
        tile[1:3, 1:3] = tile_value if index else 1
        write_png(root / "output" / f"M-1_{index}_m.png", tile)
        write_jpeg(root / "output" / f"M-1_{index}.jpg", np.full((8, 8, 3), 90, np.uint8))
    (root / "train.txt").write_text("M-1_0\nM-1_1\n")
    return root


def _errors(report) -> list[tuple[str, str]]:
    return sorted((f.code, Path(f.path).name) for f in report.findings if str(f.severity) == "error")


def test_tiles_beside_their_photos_inside_a_paired_dataset_are_a_dataset_of_their_own(tmp_path):
    """LandCover.ai: output/*_m.png were left unaudited (LG007) under the images/ + masks/
    dataset; x.jpg beside x_m.png is a naming convention, and the tiles are audited as when
    output/ is the PATH, their photos as their images."""
    root = _landcover(tmp_path / "landcoverai")
    whole = audit(str(root), LabelSpec(num_classes=3), use_project_config=False, cache=False)
    assert sorted((Path(d.root).name, d.layout) for d in discover_datasets(str(root), AuditOptions())) == [
        ("landcoverai", "paired"), ("output", "masks")]
    alone = audit(str(root / "output"), LabelSpec(num_classes=3), use_project_config=False, cache=False)
    assert _errors(whole) == _errors(alone) == [("LG201", "M-1_1_m.png")]
    assert not [f for f in whole.findings if f.code == "LG007"]
    assert sorted(Path(f).name for f in alone.files) == ["M-1_0_m.png", "M-1_1_m.png"]


def test_pngs_that_pair_with_no_photo_by_name_stay_unaudited_inside_a_dataset(tmp_path):
    """Only masks named as the label of a photo beside them make a folder a dataset of its
    own: colour renderings with names of their own stay what no layout read (LG007)."""
    root = _landcover(tmp_path / "landcoverai")
    for index in (0, 1):
        (root / "output" / f"M-1_{index}_m.png").rename(root / "output" / f"render_{index}.png")
    found = discover_datasets(str(root), AuditOptions())
    assert [(Path(d.root).name, d.layout) for d in found] == [("landcoverai", "paired")]
    report = audit(str(root), LabelSpec(num_classes=3), use_project_config=False, cache=False)
    assert [(f.code, f.data.get("count")) for f in report.findings if f.code == "LG007"] == [("LG007", 2)]


def test_a_list_naming_files_of_one_dataset_audits_that_one_and_says_the_other_was_not(tmp_path):
    """torchgeo reads the tiles train.txt names; the scene in masks/ got an LG003 per line
    (and exit 2) because the list was resolved against the images/ + masks/ dataset."""
    root = _landcover(tmp_path / "landcoverai")
    report = audit(str(root), LabelSpec(num_classes=3), options=AuditOptions(lists=(str(root / "train.txt"),)),
                   use_project_config=False, cache=False)
    assert _errors(report) == [("LG201", "M-1_1_m.png")]
    assert sorted(Path(f).name for f in report.files) == ["M-1_0_m.png", "M-1_1_m.png"]
    assert any("names no file of the paired dataset" in note for note in report.notes)
    # A stale list, which names no file of any dataset, is still one LG003 per line.
    (root / "train.txt").write_text("M-9_0\nM-9_1\n")
    stale = audit(str(root), LabelSpec(num_classes=3), options=AuditOptions(lists=(str(root / "train.txt"),)),
                  use_project_config=False, cache=False)
    assert [f.code for f in stale.findings if f.code == "LG003"] == ["LG003"] * 4


def test_photos_named_with_a_size_suffix_are_never_labels(tmp_path):
    """x_m.jpg (a medium-size copy, as photo sites name them) beside x.jpg: JPEGs stay photos
    whatever their name, so a folder of them holds no mask dataset."""
    for index in range(3):
        write_jpeg(tmp_path / "gallery" / f"p{index}.jpg", np.full((8, 8, 3), 90, np.uint8))
        write_jpeg(tmp_path / "gallery" / f"p{index}_m.jpg", np.full((4, 4, 3), 90, np.uint8))
    mask = np.zeros((8, 8), np.uint8)
    write_png(tmp_path / "masks" / "a.png", mask)
    report = audit(str(tmp_path), LabelSpec(num_classes=3), use_project_config=False, cache=False)
    assert sorted(Path(f).name for f in report.files) == ["a.png"]
    assert not _errors(report)


# ---- the property on generated trees -------------------------------------------------------

def _voc_set(root: Path) -> None:
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "Annotations" / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 8, 8))], size=(16, 16)))


def _masks_set(root: Path) -> None:
    mask = np.zeros((8, 8), np.uint8)
    mask[1:3, 1:3] = 2
    write_png(root / "masks" / "a.png", mask)
    write_png(root / "images" / "a.png", np.zeros((8, 8, 3), np.uint8))


def _coco_set(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "annotations.json").write_text(json.dumps({
        "images": [{"id": 1, "file_name": "a.jpg", "width": 8, "height": 8}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]}],
        "categories": [{"id": 1, "name": "cat"}]}))


LABEL_FILE = {"yolo": "a.txt", "voc": "Annotations/a.xml", "masks": "masks/a.png", "coco": "annotations.json"}
BUILDERS = {"yolo": lambda root: _yolo(root, {"a": "0 0.5 0.5 0.2 0.2\n"}), "voc": _voc_set,
            "masks": _masks_set, "coco": _coco_set}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(sorted(BUILDERS)),
                          st.lists(st.sampled_from(["x", "y", "data", "sets", "v1"]), min_size=0, max_size=3)),
                min_size=1, max_size=4))
def test_every_dataset_of_a_generated_tree_is_found_alike_from_any_folder_above_it(tmp_path_factory, plan):
    """Datasets of several layouts placed at random depths under one folder: each one that
    discovery finds from the top is found with the same layout and label files when the
    audit starts at any folder between the top and it, and when it is the PATH."""
    top = tmp_path_factory.mktemp("tree")
    for index, (kind, folders) in enumerate(plan):
        BUILDERS[kind](top.joinpath(*folders, f"{kind}{index}"))
    whole = discover_datasets(str(top), AuditOptions())
    for dataset in whole:
        expected = (dataset.layout, sorted(t.path for t in dataset.tasks))
        start = Path(dataset.root)
        while True:
            found = {d.root: (d.layout, sorted(t.path for t in d.tasks))
                     for d in discover_datasets(str(start), AuditOptions())}
            assert found.get(dataset.root) == expected, (plan, dataset.root, str(start))
            if start == top:
                break
            start = start.parent
    # every dataset planted is found: each one's label file is audited by some dataset
    audited = {str(Path(t.path).resolve()) for d in whole for t in d.tasks}
    for index, (kind, folders) in enumerate(plan):
        label = top.joinpath(*folders, f"{kind}{index}", LABEL_FILE[kind])
        assert str(label.resolve()) in audited, (plan, label)
