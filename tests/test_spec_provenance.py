"""Where the spec came from: each dataset's own metadata, named part by part, never leaking
onto another dataset, and labelme2voc's class files read as labelme writes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from audit_helpers import codes, found, run
from builders import organic_mask, rgb_image, write_jpeg, write_list, write_npy, write_png
from detection_builders import write_yolo
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.core.spec import LabelSpec

VOC_NAMES = ["_background_", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car"]
LABELME_EXAMPLE = (Path(__file__).resolve().parents[1].parent / "shared" / "realworld" / "labelme" / "examples"
                   / "semantic_segmentation")


def labelme2voc_output(parent: Path, n: int = 3) -> Path:
    """What ``labelme2voc.py data_annotated out --labels labels.txt`` leaves: the labels.txt
    it was run with (``__ignore__`` first) in ``parent``, and in ``parent/out`` JPEGImages,
    palette PNGs with ``__ignore__`` stored as 255, int32 .npy with it as -1, and
    class_names.txt (the names from ``_background_`` on, joined by newlines)."""
    write_list(parent / "labels.txt", ["__ignore__", *VOC_NAMES])
    out = parent / "out"
    for i in range(n):
        label = organic_mask((40, 48), classes=(0, 2, 7), seed=i).astype(np.int32)
        label[:3, :] = -1  # pixels of a polygon labelled __ignore__
        write_jpeg(out / "JPEGImages" / f"{i:04d}.jpg", rgb_image((40, 48), seed=i))
        write_png(out / "SegmentationClass" / f"{i:04d}.png", label.astype(np.uint8), mode="P")
        write_npy(out / "SegmentationClassNpy" / f"{i:04d}.npy", label)
    (out / "class_names.txt").write_text("\n".join(VOC_NAMES), encoding="utf-8")
    return out


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config"], catch_exceptions=False)


@pytest.mark.code("LG201", "pass")
def test_labelme2voc_output_is_checked_against_its_own_class_names(tmp_path):
    out = labelme2voc_output(tmp_path)
    report = run(out)
    assert report.spec.classes == tuple(VOC_NAMES)  # not the labels.txt one folder up
    assert report.spec.class_name(0) == "_background_" and report.spec.class_name(7) == "car"
    assert 255 in report.spec.ignore and -1 in report.spec.ignore
    assert "LG201" not in codes(report) and report.counts()["error"] == 0
    assert report.spec.origin("classes").endswith("class_names.txt beside the data")
    assert any("cannot vouch for it" in note for note in report.notes)
    one_file = run(out / "SegmentationClass" / "0000.png")
    assert one_file.spec.classes == tuple(VOC_NAMES) and "LG201" not in codes(one_file)


@pytest.mark.code("LG201", "pass")
def test_labelme_labels_txt_makes_ignore_the_ignore_value_not_class_zero(tmp_path):
    out = labelme2voc_output(tmp_path)
    (out / "class_names.txt").unlink()  # only the labels.txt above the output is left
    report = run(out)
    assert report.spec.classes == tuple(VOC_NAMES)  # __ignore__ is not class 0
    assert report.spec.class_name(0) == "_background_"
    assert "LG201" not in codes(report)
    npy_report = run(out / "SegmentationClassNpy")
    assert -1 in npy_report.summary.found_values() and "LG201" not in codes(npy_report)


@pytest.mark.code("LG201", "fail")
def test_a_plain_class_file_above_the_root_is_still_used_when_the_dataset_has_none(tmp_path):
    write_list(tmp_path / "labels.txt", ["background", "road"])
    write_png(tmp_path / "data" / "masks" / "a.png", organic_mask((32, 32), (0, 1, 2)))
    report = run(tmp_path / "data")
    assert report.spec.classes == ("background", "road")
    assert [Path(f.path).name for f in found(report, "LG201")] == ["a.png"]  # value 2 of 2 classes
    write_list(tmp_path / "data" / "labels.txt", ["background", "road", "car"])
    assert run(tmp_path / "data").spec.classes == ("background", "road", "car")


@pytest.mark.code("LG201", "fail")
def test_each_path_gets_the_spec_of_its_own_metadata(tmp_path):
    for name, classes in (("two", ["bg", "road"]), ("three", ["bg", "road", "car"])):
        write_png(tmp_path / name / "masks" / "m.png", organic_mask((32, 32), (0, 1, 2)))
        write_list(tmp_path / name / "labels.txt", classes)
    report = run([tmp_path / "two", tmp_path / "three"])
    assert [Path(f.path).parts[-3] for f in found(report, "LG201")] == ["two"]
    assert [spec.classes for _, spec in report.specs] == [("bg", "road"), ("bg", "road", "car")]
    result = cli("audit", str(tmp_path / "two"), str(tmp_path / "three"), "-f", "json")
    summary = json.loads(result.output)["summary"]
    assert [s["spec"]["classes"] for s in summary["specs"]] == [["bg", "road"], ["bg", "road", "car"]]
    # one value table for both: 0 and 1 are legal in both specs; 2 is outside the spec of the
    # dataset it was found in (an LG201 names it), though legal in the other's
    assert {v: entry["in_spec"] for v, entry in summary["values"].items()} == {"0": True, "1": True, "2": False}
    text = cli("audit", str(tmp_path / "two"), str(tmp_path / "three")).output
    assert text.count("spec:      ") == 2 and "labels.txt beside the data" in text
    # a flag applies to all of them
    flagged = run([tmp_path / "two", tmp_path / "three"], LabelSpec(num_classes=3))
    assert "LG201" not in codes(flagged)


@pytest.mark.code("LG201", "pass")
def test_num_classes_keeps_the_class_names_and_states_the_disagreement(tmp_path):
    write_png(tmp_path / "masks" / "m.png", organic_mask((32, 32), (0, 1, 2)))
    write_list(tmp_path / "labels.txt", ["road", "car"])
    result = cli("audit", str(tmp_path), "--num-classes", "3", "-f", "json")
    summary = json.loads(result.output)["summary"]
    assert result.exit_code == 0 and summary["outside_spec"] == {}
    assert summary["spec"]["classes"] == ["road", "car"] and summary["spec"]["num_classes"] == 3
    [note] = [n for n in summary["notes"] if "class names" in n]
    assert "2 class names" in note and "num_classes=3 (--num-classes 3)" in note
    assert "leave out the background" in note
    assert summary["spec_origins"]["num_classes"] == "--num-classes 3"
    assert summary["spec_origins"]["classes"].endswith("labels.txt beside the data")
    # the same on the flags alone: no usage error, both kept
    flags = cli("audit", str(tmp_path), "--classes", "a,b,c,d", "--num-classes", "3", "-f", "json")
    assert flags.exit_code == 0, flags.output
    assert json.loads(flags.output)["summary"]["spec"]["classes"] == ["a", "b", "c", "d"]
    assert any("4 class names (--classes) but num_classes=3" in n
               for n in json.loads(flags.output)["summary"]["notes"])


def test_the_spec_line_names_the_file_or_flag_of_each_part(tmp_path):
    write_png(tmp_path / "masks" / "m.png", organic_mask((32, 32), (0, 1, 2)))
    write_list(tmp_path / "labels.txt", ["bg", "road", "car"])
    text = cli("audit", str(tmp_path), "--ignore-index", "255").output
    [line] = [line for line in text.splitlines() if line.startswith("spec:")]
    assert "classes from" in line and "labels.txt beside the data" in line
    assert "ignore_index from --ignore-index 255" in line
    # a flag that gives the classes: no "cannot vouch" note
    flagged = cli("audit", str(tmp_path), "--classes", "bg,road,car").output
    assert "cannot vouch" not in flagged and "from --classes" in flagged


@pytest.mark.code("LG102", "pass")
def test_yolo_classes_txt_beside_the_labels_is_marked_as_such(tmp_path):
    root = write_yolo(tmp_path / "y", {"train": {"a": [(1, 0.5, 0.5, 0.2, 0.2)]}}, yaml_name=None)
    (root / "classes.txt").write_text("cat\ndog\n", encoding="utf-8")
    report = run(root)
    assert report.spec.classes == ("cat", "dog") and "LG102" not in codes(report)
    assert report.spec.origin("classes").endswith("classes.txt beside the data")
    assert any("cannot vouch" in note for note in report.notes)


@pytest.mark.skipif(not LABELME_EXAMPLE.is_dir(), reason="../shared/realworld is absent")
@pytest.mark.code("LG201", "pass")
def test_labelme_example_audits_with_its_own_class_file():
    report = run(LABELME_EXAMPLE / "data_dataset_voc", workers=1)
    assert report.spec.class_name(0) == "_background_" and report.spec.class_name(15) == "person"
    assert report.counts()["error"] == 0, [f.message for f in report.findings]
    assert report.summary.value_files[255] == 2  # its __ignore__ pixels, ignored


def test_labelme_ignore_is_read_only_from_labelme_files():
    from labelguard.core.spec import class_list_spec

    written = class_list_spec(["_background_", "cat"], "out/class_names.txt")
    assert (written.classes, written.ignore) == (("_background_", "cat"), (255, -1))
    given = class_list_spec(["__ignore__", "_background_", "cat"], "labels.txt")
    assert (given.classes, given.ignore) == (("_background_", "cat"), (255, -1))
    plain = class_list_spec(["_background_", "cat"], "labels.txt")  # not labelme2voc's output
    assert (plain.classes, plain.ignore) == (("_background_", "cat"), ())
    assert class_list_spec(["__ignore__"], "labels.txt") == LabelSpec()


def test_origins_follow_each_part_through_the_layers(tmp_path):
    write_png(tmp_path / "data" / "masks" / "m.png", organic_mask((32, 32), (0, 1, 2)))
    write_list(tmp_path / "data" / "labels.txt", ["bg", "road"])
    (tmp_path / "labelguard.toml").write_text("[labels]\nnum_classes = 3\nignore_index = [255]\n")
    names = write_list(tmp_path / "names.txt", ["bg", "road", "car", "bike"])
    result = CliRunner().invoke(main, ["audit", str(tmp_path / "data"), "--classes-file", str(names),
                                       "--no-progress", "-f", "json"], catch_exceptions=False)
    summary = json.loads(result.output)["summary"]
    config = str(tmp_path / "labelguard.toml")
    # the flag's class list outranks the config's count: it decides, and the report says so
    assert summary["spec_origins"] == {"classes": f"--classes-file {names}", "ignore_index": config}
    assert summary["spec"]["classes"] == ["bg", "road", "car", "bike"] and "num_classes" not in summary["spec"]
    assert f"num_classes=3 ({config}) replaced by the 4 class names of --classes-file {names}" in summary["notes"]
    assert not any("cannot vouch" in n for n in summary["notes"])
    # the other way round, a count above a class list: both kept, the count decides
    counted = CliRunner().invoke(main, ["audit", str(tmp_path / "data"), "--no-progress", "-f", "json"],
                                 catch_exceptions=False)
    summary = json.loads(counted.output)["summary"]
    assert summary["spec"]["classes"] == ["bg", "road"] and summary["spec"]["num_classes"] == 3
    assert summary["spec_origins"]["num_classes"] == config and summary["outside_spec"] == {}
    assert any(n.startswith("2 class names (") and f"num_classes=3 ({config})" in n for n in summary["notes"])


@pytest.mark.code("LG101", "fail")
def test_a_class_file_beside_a_table_is_marked_as_such(tmp_path):
    from annotation_builders import classification_csv

    classification_csv(tmp_path, {"1.jpg": "cat", "2.jpg": "dog", "3.jpg": "bird"})
    write_list(tmp_path / "labels.txt", ["cat", "dog"])
    report = run(tmp_path)
    assert report.layouts == ["csv"] and [f.data["class"] for f in found(report, "LG101")] == ["bird"]
    assert report.spec.origin("classes").endswith("labels.txt beside the data")
    assert any("cannot vouch" in note for note in report.notes)


@pytest.mark.code("LG203", "pass")
def test_mask_datasets_side_by_side_are_each_decoded_through_their_own_colour_map(tmp_path):
    from builders import datasets_numbering_colours_differently

    datasets_numbering_colours_differently(tmp_path)
    # b's map names green "tree" and red "car", a's the other way round: one map for both
    # would read the other's colours as another class, no map at all as colour masks (LG203).
    report = run(tmp_path)
    assert not codes(report) & {"LG203", "LG201"}, [f.message for f in report.findings]
    assert [spec.classes for _, spec in report.specs] == [("background", "car", "tree"),
                                                           ("background", "tree", "car")]


def test_datasets_side_by_side_each_with_a_labelguard_toml_keep_their_specs(tmp_path):
    """Mask folders side by side, each with its own labelguard.toml, audited from their parent:
    each is checked against its own spec (before, they were merged and no spec was found)."""
    for name, classes, stray in (("binary", 2, 9), ("three", 3, None)):
        mask = np.zeros((16, 16), np.uint8)
        mask[:8] = classes - 1
        if stray is not None:
            mask[0, 0] = stray
        write_png(tmp_path / name / "masks" / "m.png", mask)
        (tmp_path / name / "labelguard.toml").write_text(f"[labels]\nnum_classes = {classes}\n", encoding="utf-8")
    report = audit(str(tmp_path))
    assert sorted(str(spec.num_classes) for _, spec in report.specs) == ["2", "3"]
    assert [(f.code, Path(f.path).parent.parent.name) for f in report.findings if f.code == "LG201"] == [
        ("LG201", "binary")]
    assert (report.value_in_spec(0), report.value_in_spec(2), report.value_in_spec(9)) == (True, None, False)
