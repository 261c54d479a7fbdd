"""What a dataset's metadata names stays inside the dataset: a path that leaves it is LG005
naming the field, and is never read, listed or walked.

A downloaded dataset writes its data.yaml, obj.data, lists and class files itself. Each test
plants what an attacker would (a split or a names file naming a credentials file elsewhere, a
list or class file that is a link to it, a ``path`` naming a folder outside, a report edited
to name a list outside) and checks that nothing of the outside file reaches any report
format, nothing outside is audited, and ``fix`` never writes there.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from audit_helpers import found, run
from builders import organic_mask, paired_dataset, write_json, write_png
from detection_builders import write_darknet, write_image, write_voc, write_yolo

from labelguard.cli import main

ROW = (0, 0.5, 0.5, 0.2, 0.3)
# A recognisable fake key: it must appear in no report, in no format.
SECRET = "AKIAFAKESECRETKEY7QX"
CREDENTIALS = f"[default]\naws_access_key_id = {SECRET}\naws_secret_access_key = {SECRET}/wJalrXUtnFEMI\n"
FORMATS = ("text", "json", "sarif", "github", "junit", "html")


def secret_file(tmp_path: Path) -> Path:
    """A credentials file in a folder beside the dataset's, as ``~/.aws/credentials`` is."""
    path = tmp_path / "home" / ".aws" / "credentials"
    path.parent.mkdir(parents=True)
    path.write_text(CREDENTIALS, encoding="utf-8")
    return path


def yolo_dataset(root: Path) -> Path:
    return write_yolo(root, {"train": {"a": [ROW]}}, names=["p"])


def yaml_split_names_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = yolo_dataset(tmp_path / "ds")
    (root / "data.yaml").write_text(f"names: [p]\ntrain: {secret}\nval: images/train\n", encoding="utf-8")
    return root, "train: "


def obj_data_names_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = write_darknet(tmp_path / "ds", {"1": [ROW]}, ["p"])
    (root / "obj.data").write_text(f"classes = 1\ntrain = data/train.txt\nnames = {secret}\n", encoding="utf-8")
    return root, "names: "


def obj_data_train_list_is_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = write_darknet(tmp_path / "ds", {"1": [ROW]}, ["p"])
    (root / "obj.data").write_text(f"classes = 1\ntrain = {secret}\nnames = data/obj.names\n", encoding="utf-8")
    return root, "train: "


def yaml_split_list_links_to_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = yolo_dataset(tmp_path / "ds")
    (root / "train.txt").symlink_to(secret)
    (root / "data.yaml").write_text("names: [p]\ntrain: train.txt\nval: images/train\n", encoding="utf-8")
    return root, "train: 'train.txt'"


def obj_names_links_to_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = write_darknet(tmp_path / "ds", {"1": [ROW]}, ["p"])
    (root / "obj.names").unlink()
    (root / "obj.names").symlink_to(secret)
    return root, "class names: a link to "


def voc_split_list_links_to_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = write_voc(tmp_path / "ds", {"a": [("cat", (1, 1, 9, 9))]}, splits={"train": ["a"]})
    (root / "ImageSets" / "Main" / "trainval.txt").symlink_to(secret)
    return root, "file list: a link to "


def class_file_of_masks_links_to_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = tmp_path / "ds"
    paired_dataset(root, ["a", "b"])
    (root / "classes.txt").symlink_to(secret)
    return root, "a link to "


def nnunet_dataset_json_links_to_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    root = tmp_path / "ds"
    paired_dataset(root, ["a"])
    (root / "images").rename(root / "imagesTr")
    (root / "masks").rename(root / "labelsTr")
    # What the link reaches: any JSON the user keeps, here one whose keys hold the key.
    write_json(secret.parent / "config.json", {"labels": {"background": 0, SECRET: 1, "b": 2}})
    (root / "dataset.json").symlink_to(secret.parent / "config.json")
    return root, "a link to "


def mapillary_config_links_to_the_secret(tmp_path: Path, secret: Path) -> tuple[Path, str]:
    top = tmp_path / "vistas"
    write_png(top / "training" / "v2.0" / "labels" / "a.png", organic_mask((16, 16), classes=(0, 1)))
    write_image(top / "training" / "images" / "a.jpg", (16, 16))
    write_json(secret.parent / "config.json", {"labels": [{"name": "road"}, {"name": SECRET}]})
    (top / "config_v2.0.json").symlink_to(secret.parent / "config.json")
    return top / "training" / "v2.0", "a link to "


HOSTILE: dict[str, Callable[[Path, Path], tuple[Path, str]]] = {
    "data.yaml split names it": yaml_split_names_the_secret,
    "obj.data names names it": obj_data_names_the_secret,
    "obj.data train names it": obj_data_train_list_is_the_secret,
    "data.yaml split list is a link to it": yaml_split_list_links_to_the_secret,
    "obj.names is a link to it": obj_names_links_to_the_secret,
    "VOC split list is a link to it": voc_split_list_links_to_the_secret,
    "class file of masks is a link to it": class_file_of_masks_links_to_the_secret,
    "nnU-Net dataset.json is a link to it": nnunet_dataset_json_links_to_the_secret,
    "Mapillary config is a link to it": mapillary_config_links_to_the_secret,
}


def audit_cli(*args: str):
    return CliRunner().invoke(main, ["audit", *args, "--no-progress", "--workers", "1", "--no-config"],
                              catch_exceptions=False)


@pytest.mark.code("LG005", "fail")
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_file_outside_that_metadata_names_is_lg005_and_its_content_is_in_no_report(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    root, field = HOSTILE[case](tmp_path, secret_file(tmp_path))
    results = {fmt: audit_cli(str(root), "-f", fmt) for fmt in FORMATS}
    reports = {fmt: result.output for fmt, result in results.items()}  # stdout and stderr
    leaked = [fmt for fmt, text in reports.items() if SECRET in text or "aws_access_key_id" in text]
    assert leaked == [], f"the outside file's content is in the {leaked} report"
    outside = [f for f in json.loads(results["json"].stdout)["findings"] if f["code"] == "LG005"]
    assert any(field in f["message"] and "outside the dataset root" in f["message"] for f in outside), outside
    for fmt in FORMATS:
        assert "LG005" in reports[fmt], fmt


@pytest.mark.code("LG005", "fail")
@pytest.mark.parametrize("filesystem_root", [False, True], ids=["path names the folder", "path: /"])
def test_a_yaml_path_outside_the_dataset_is_lg005_and_nothing_there_is_listed_or_read(tmp_path, filesystem_root):
    # The attack was `path: /` with `train: usr/share`: 4,949 images of /usr/share audited.
    outside = write_yolo(tmp_path / "elsewhere", {"x": {f"o{i}": [ROW] for i in range(3)}}, names=["p"],
                         yaml_name=None)
    root = yolo_dataset(tmp_path / "ds")
    path, train = ("/", str(outside / "images" / "x").lstrip("/")) if filesystem_root else (outside, "images/x")
    (root / "data.yaml").write_text(f"names: [p]\npath: {path}\ntrain: {train}\n", encoding="utf-8")
    report = run(root, workers=1)
    assert not [p for p in report.files if "elsewhere" in str(p)]
    [leaves] = found(report, "LG005", "data.yaml")
    assert leaves.message.startswith(f"path: '{path}' points outside the dataset root")
    assert any("path: " in note and "leaves the dataset" in note for note in report.notes)


def test_a_yaml_in_another_folder_whose_path_climbs_out_of_it_names_no_dataset(tmp_path):
    # Ultralytics' own YAMLs (coco8.yaml: `path: ../datasets/coco8`) lie outside their data:
    # audited as PATH they name a dataset outside the YAML's folder, which is not read.
    data = yolo_dataset(tmp_path / "datasets" / "shapes")
    (tmp_path / "project").mkdir()
    yaml_path = tmp_path / "project" / "shapes.yaml"
    yaml_path.write_text("path: ../datasets/shapes\ntrain: images/train\nnames: [p]\n", encoding="utf-8")
    report = run(yaml_path, workers=1)
    assert list(report.files) == []
    [leaves] = found(report, "LG005", "shapes.yaml")
    assert leaves.message.startswith("path: '../datasets/shapes' points outside the dataset root")
    assert "data.yaml" in leaves.hint and (data / "labels" / "train" / "a.txt").is_file()


@pytest.mark.code("LG005", "fail")
def test_a_split_folder_that_links_out_of_the_dataset_is_not_walked(tmp_path):
    outside = write_yolo(tmp_path / "elsewhere", {"x": {f"o{i}": [ROW] for i in range(3)}}, names=["p"],
                         yaml_name=None)
    root = yolo_dataset(tmp_path / "ds")
    (root / "shared").symlink_to(outside / "images" / "x")
    (root / "data.yaml").write_text("names: [p]\ntrain: images/train\nval: shared\n", encoding="utf-8")
    report = run(root, workers=1)
    assert [Path(p).name for p in report.files] == ["a.txt"]
    [leaves] = found(report, "LG005", "data.yaml")
    assert leaves.message.startswith("val: 'shared' points outside the dataset root")
    assert "(a link to " in leaves.message


@pytest.mark.code("LG003", "fail")
def test_a_key_file_inside_the_dataset_named_as_a_split_is_quoted_short(tmp_path):
    root = yolo_dataset(tmp_path / "ds")
    key = "MII" + "B" * 5000
    (root / "key.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{key}\n-----END PRIVATE KEY-----\n",
                                  encoding="utf-8")
    (root / "data.yaml").write_text("names: [p]\ntrain: key.pem\nval: images/train\n", encoding="utf-8")
    report = run(root, workers=1)
    missing = found(report, "LG003", "key.pem")
    assert any(f.data["entry"].startswith("MIIBBB") for f in missing)
    # The 5,003-character line is cut to a path's length, and its length said.
    assert all(key not in f.message and len(f.data["entry"]) < 300 for f in missing)
    assert all(len(f.message) < 300 + len(str(root)) + 100 for f in missing)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fix_list_from_a_report_never_writes_a_list_outside_the_dataset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = write_darknet(tmp_path / "ds", {"1": [ROW], "2": [ROW]}, ["p"])
    listed = root / "train.txt"
    listed.write_bytes(b"data/obj_train_data/1.jpg\r\ndata/obj_train_data/2.jpg\r\n")
    outside = tmp_path / "elsewhere" / "train.txt"
    outside.parent.mkdir()
    outside.write_bytes(b"a.jpg\r\n\r\nb.jpg  \r\n")
    before = sha256(outside)
    audit_cli("ds", "-f", "json", "-o", "r.json")
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    [unclean] = [f for f in report["findings"] if f["code"] == "LG004"]
    assert unclean["path"] == os.path.join("ds", "train.txt")
    # The report, edited (or written by an audit that trusted a data.yaml naming that list):
    report["findings"].append({**unclean, "path": str(outside)})
    report["findings"].append({**unclean, "path": os.path.join("ds", "obj.data")})
    (tmp_path / "r.json").write_text(json.dumps(report), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "list", "--from-report", "r.json", "--apply"], catch_exceptions=False)
    assert sha256(outside) == before
    assert listed.read_bytes() == b"data/obj_train_data/1.jpg\ndata/obj_train_data/2.jpg\n"
    assert (root / "obj.data").read_text(encoding="utf-8").startswith("classes = 1\n")
    assert str(outside) in result.output and "not cleaned" in result.output


def test_fix_list_from_a_report_cleans_only_lists_inside_the_dataset_given_with_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = write_darknet(tmp_path / "ds", {"1": [ROW]}, ["p"])
    (root / "train.txt").write_bytes(b"data/obj_train_data/1.jpg\r\n")
    other = write_darknet(tmp_path / "other", {"1": [ROW]}, ["p"])
    (other / "train.txt").write_bytes(b"data/obj_train_data/1.jpg\r\n")
    before = sha256(other / "train.txt")
    audit_cli("ds", "other", "-f", "json", "-o", "r.json")
    result = CliRunner().invoke(main, ["fix", "list", "--from-report", "r.json", "--root", "ds", "--apply"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (root / "train.txt").read_bytes() == b"data/obj_train_data/1.jpg\n"
    assert sha256(other / "train.txt") == before


def test_fix_list_from_a_report_whose_paths_leave_the_current_folder_needs_root(tmp_path, monkeypatch):
    elsewhere = write_darknet(tmp_path / "elsewhere", {"1": [ROW]}, ["p"])
    (elsewhere / "train.txt").write_bytes(b"data/obj_train_data/1.jpg\r\n")
    before = sha256(elsewhere / "train.txt")
    project = tmp_path / "project"
    write_darknet(project / "ds", {"1": [ROW]}, ["p"])
    monkeypatch.chdir(project)
    audit_cli(str(elsewhere), "-f", "json", "-o", "r.json")
    # A report audited elsewhere (or edited to say so) never leads the fix out of this folder.
    result = CliRunner().invoke(main, ["fix", "list", "--from-report", "r.json", "--apply"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "--root" in result.output and "outside the current folder" in result.output
    assert sha256(elsewhere / "train.txt") == before
