"""LG214 spec-sources-disagree: a class list and a class count of different lengths.

Its rules' own examples (``src/labelguard/rules/lg214.py``), audited on real files;
``python tests/code_markers.py LG214`` lists its other tests."""

import json
import subprocess
import sys

import pytest
from PIL import Image

from rule_cases import examples_of, proves


@examples_of("LG214")
def test_lg214_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)


def seed_000_dataset(root, names):
    """Seed 000's VOC set: XMLs whose classes are digits, one of them '5' from another dataset,
    and a labels.txt written by scanning them."""
    (root / "Annotations").mkdir(parents=True)
    (root / "JPEGImages").mkdir()
    for i, objects in enumerate([["0", "1"], ["2", "3"], ["5", "0"]]):
        Image.new("RGB", (64, 48)).save(root / "JPEGImages" / f"{i}.jpg")
        body = "".join(f"<object><name>{n}</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>20</xmax>"
                       f"<ymax>20</ymax></bndbox></object>" for n in objects)
        (root / "Annotations" / f"{i}.xml").write_text(
            f"<annotation><filename>{i}.jpg</filename><size><width>64</width><height>48</height>"
            f"<depth>3</depth></size>{body}</annotation>")
    (root / "labels.txt").write_text("".join(f"{n}\n" for n in names))
    return root


def audit_cli(*args):
    return subprocess.run([sys.executable, "-m", "labelguard", "audit", *map(str, args), "--no-config", "--no-cache",
                           "-f", "json"], capture_output=True, text=True, timeout=120)


@pytest.mark.code("LG214", "fail")
def test_seed_000_a_scanned_labels_txt_and_num_classes_4_is_an_error_naming_both_sources(tmp_path):
    data = seed_000_dataset(tmp_path / "voc", ["0", "1", "2", "3", "5"])
    done = audit_cli(data, "--num-classes", "4")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    found = [f for f in report["findings"] if f["code"] == "LG214"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    message = found[0]["message"]
    assert "labels.txt" in message and "--num-classes 4" in message
    assert "'5'" in message and "outside [0, 4)" in message and "the data uses" in message
    assert found[0]["data"]["used"] == ["5"]


@pytest.mark.code("LG214", "pass")
def test_seed_000_with_classes_that_match_the_count_has_no_lg214(tmp_path):
    data = seed_000_dataset(tmp_path / "voc", ["0", "1", "2", "3", "5"])
    done = audit_cli(data, "--num-classes", "5")
    report = json.loads(done.stdout)
    assert not [f for f in report["findings"] if f["code"] == "LG214"]


@pytest.mark.code("LG214", "fail")
def test_the_class_table_says_a_name_past_the_count_is_not_in_the_spec(tmp_path):
    data = seed_000_dataset(tmp_path / "voc", ["0", "1", "2", "3", "5"])
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(data), "--num-classes", "4",
                           "--no-config", "--no-cache"], capture_output=True, text=True, timeout=120)
    rows = {line.split()[0]: line.split()[-1] for line in done.stdout.splitlines()
            if line.startswith("  ") and len(line.split()) == 4 and line.split()[-1] in ("yes", "NO")}
    assert rows["5"] == "NO" and rows["3"] == "yes"
    assert "LG214" in done.stdout


@pytest.mark.code("LG214", "fail")
def test_a_mask_value_past_the_count_is_named_with_its_class_name(tmp_path):
    import numpy as np

    masks = tmp_path / "seg" / "masks"
    masks.mkdir(parents=True)
    Image.fromarray(np.array([[0, 1], [2, 2]], np.uint8)).save(masks / "a.png")
    (tmp_path / "seg" / "labels.txt").write_text("background\nroad\ncar\n")
    report = json.loads(audit_cli(tmp_path / "seg", "--num-classes", "2").stdout)
    [found] = [f for f in report["findings"] if f["code"] == "LG214"]
    assert "the masks hold value 2 ('car')" in found["message"] and found["data"]["used"] == ["car"]
    assert "LG201" in {f["code"] for f in report["findings"]}
