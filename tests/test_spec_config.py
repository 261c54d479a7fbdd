"""The label spec and its layers: dataset metadata < project config < --config < CLI flags."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import organic_mask, write_json, write_list, write_nifti, write_npy, write_png
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.config import load_config
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.errors import SpecError


def dataset(root: Path, values=(0, 1, 2, 3)) -> Path:
    for i in range(2):
        write_png(root / "masks" / f"{i}.png", organic_mask((32, 32), values, seed=i))
    return root


def outside(report) -> list[int]:
    return sorted(report.outside_spec())


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# ---- each layer wins over the one below ---------------------------------------------------

def test_layers_in_priority_order(tmp_path):
    data = dataset(tmp_path / "project" / "data")
    write_json(data / "dataset.json", {"labels": {"background": 0, "liver": 1}})
    assert outside(audit(data, use_project_config=False)) == [2, 3]

    (tmp_path / "project" / "labelguard.toml").write_text("[labels]\nnum_classes = 3\n")
    report = audit(data)
    assert outside(report) == [3]
    assert report.spec.sources[-1].endswith("labelguard.toml")

    other = tmp_path / "other.toml"
    other.write_text("[labels]\nnum_classes = 4\n")
    assert outside(audit(data, config_file=str(other))) == []

    assert outside(audit(data, LabelSpec(num_classes=2), config_file=str(other))) == [2, 3]


def test_dataset_metadata_is_the_spec_when_nothing_else_is_given(tmp_path):
    data = dataset(tmp_path / "a")
    write_list(data / "labels.txt", ["background", "road", "car"])
    report = audit(data, use_project_config=False)
    assert report.spec.classes == ("background", "road", "car")
    assert outside(report) == [3]


def test_nnunet_dataset_json_names_the_classes(tmp_path):
    write_nifti(tmp_path / "labelsTr" / "c_001.nii.gz", np.arange(4, dtype=np.uint8).reshape(1, 2, 2))
    write_json(tmp_path / "dataset.json", {"labels": {"background": 0, "liver": 1, "tumour": 2}})
    report = audit(tmp_path, use_project_config=False)
    assert report.spec.classes == ("background", "liver", "tumour")
    assert outside(report) == [3]


def test_pyproject_tool_table_is_found_walking_up(tmp_path):
    data = dataset(tmp_path / "repo" / "data" / "train")
    (tmp_path / "repo" / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.labelguard.labels]\nnum_classes = 3\n')
    report = audit(data)
    assert outside(report) == [3]
    assert audit(data, use_project_config=False).spec.is_known is False


def test_nearest_project_config_wins(tmp_path):
    data = dataset(tmp_path / "repo" / "data")
    (tmp_path / "repo" / "labelguard.toml").write_text("[labels]\nnum_classes = 2\n")
    (data / "labelguard.toml").write_text("[labels]\nnum_classes = 4\n")
    assert outside(audit(data)) == []


def test_cli_flags_win_over_config_files(tmp_path):
    data = dataset(tmp_path / "data")
    (data / "labelguard.toml").write_text("[labels]\nnum_classes = 4\nignore_index = [255]\n")
    result = cli("audit", str(data), "--num-classes", "3", "-f", "json", "--no-progress")
    report = json.loads(result.output)
    assert result.exit_code == 1
    assert report["summary"]["spec"]["num_classes"] == 3
    assert report["summary"]["spec"]["ignore_index"] == [255]  # kept from the lower layer
    assert list(report["summary"]["outside_spec"]) == ["3"]
    assert cli("audit", str(data), "--no-config", "--no-progress").exit_code == 0


def test_merged_spec_keeps_a_class_list_of_another_length_and_states_it():
    base = LabelSpec.from_source("labels.txt", classes=("a", "b"))
    merged = base.merged(LabelSpec.from_source("cli", num_classes=3, ignore=(255,)))
    assert (merged.classes, merged.num_classes, merged.ignore) == (("a", "b"), 3, (255,))
    assert merged.allowed_values() == {0, 1, 2}
    assert merged.sources == ("labels.txt", "cli")
    assert dict(merged.origins) == {"classes": "labels.txt", "num_classes": "cli", "ignore_index": "cli"}
    [note] = merged.provenance_notes()
    assert "2 class names (labels.txt) but num_classes=3 (cli)" in note and "leave out the background" in note
    assert base.merged(LabelSpec(num_classes=2)).classes == ("a", "b")
    counted = LabelSpec(num_classes=2)
    assert counted.merged(LabelSpec(values=(0, 1, 5))).allowed_values() == {0, 1, 5}
    assert counted.merged(LabelSpec(classes=("a", "b", "c"))).effective_num_classes == 3


def test_cli_num_classes_overrides_a_class_list_of_another_length(tmp_path):
    data = dataset(tmp_path / "data", values=(0, 1, 2))
    write_list(data / "labels.txt", ["background", "road"])
    result = cli("audit", str(data), "--no-config", "--no-progress", "-f", "json")
    assert result.exit_code == 1 and list(json.loads(result.output)["summary"]["outside_spec"]) == ["2"]
    assert cli("audit", str(data), "--num-classes", "3", "--no-config", "--no-progress").exit_code == 0


# ---- config errors -----------------------------------------------------------------------

@pytest.mark.parametrize("text, named", [
    ("[labels]\nnum_classes = 3\n[label]\nx = 1\n", "label"),
    ("[labels]\nnum_class = 3\n", "num_class"),
    ("[audit]\nfail = 'error'\n", "audit.fail"),
    ("[severity]\nLG999 = 'info'\n", "LG999"),
    ("[severity]\nLG205 = 'loud'\n", "loud"),
    ("[labels\n", "invalid TOML"),
])
def test_config_errors_name_the_key(tmp_path, text, named):
    path = tmp_path / "labelguard.toml"
    path.write_text(text)
    with pytest.raises(SpecError, match=named):
        load_config(str(path))


def test_unknown_config_key_is_exit_2_naming_the_key(tmp_path):
    data = dataset(tmp_path / "data")
    (tmp_path / "labelguard.toml").write_text("[labels]\nnum_classes = 3\nignore_indx = 255\n")
    result = CliRunner().invoke(main, ["audit", str(data), "--no-progress"])
    assert result.exit_code == 2
    assert "ignore_indx" in result.output and "Traceback" not in result.output


def test_severity_table_and_flag_change_severities(tmp_path):
    data = dataset(tmp_path / "data", values=(0,))
    config = data / "labelguard.toml"
    config.write_text('[labels]\nnum_classes = 2\n[severity]\nLG205 = "error"\n')
    report = audit(data, config_file=str(config))
    assert {f.severity for f in report.findings if f.code == "LG205"} == {Severity.ERROR}
    report = audit(data, severity={"LG205": Severity.WARNING}, config_file=str(config))
    assert {f.severity for f in report.findings if f.code == "LG205"} == {Severity.WARNING}


def test_audit_table_sets_fail_on(tmp_path):
    data = dataset(tmp_path / "data", values=(0,))
    assert cli("audit", str(data), "--num-classes", "2", "--no-progress").exit_code == 0
    config = data / "labelguard.toml"
    config.write_text('[audit]\nfail_on = "info"\n')
    assert cli("audit", str(data), "--num-classes", "2", "--no-progress", "--config", str(config)).exit_code == 1
    assert cli("audit", str(data), "--num-classes", "2", "--fail-on", "never", "--no-progress",
               "--config", str(config)).exit_code == 0


# ---- reduce_zero_label ---------------------------------------------------------------------

def test_reduce_zero_label_shifts_values_and_ignores_zero(tmp_path):
    data = dataset(tmp_path / "ok", values=(0, 1, 2, 3))
    report = audit(data, LabelSpec(num_classes=3, reduce_zero_label=True), use_project_config=False)
    assert report.outside_spec() == {}
    assert not [f for f in report.findings if f.code in ("LG201", "LG208")]


def test_reduce_zero_label_names_the_stored_value(tmp_path):
    data = dataset(tmp_path / "bad", values=(0, 1, 2, 3, 4))
    report = audit(data, LabelSpec(num_classes=3, reduce_zero_label=True), use_project_config=False)
    lg201 = [f for f in report.findings if f.code == "LG201"]
    assert lg201 and all(f.data["values"] == [4] for f in lg201)
    assert "4 (3 after reduce_zero_label)" in lg201[0].message
    assert "num_classes must be 4" in lg201[0].hint
    assert list(report.outside_spec()) == [4]


def test_reduce_zero_label_on_binary_data_leaves_one_class(tmp_path):
    data = dataset(tmp_path / "binary", values=(0, 1))
    report = audit(data, LabelSpec(num_classes=2, reduce_zero_label=True), use_project_config=False)
    # 0 -> 255 (ignored) and 1 -> 0: class 1 of the spec never occurs
    [unused] = [f for f in report.findings if f.code == "LG104"]
    assert unused.data["missing"] == [1]


def test_cli_reduce_zero_label_flag(tmp_path):
    data = dataset(tmp_path / "d", values=(0, 1, 2, 3))
    assert cli("audit", str(data), "--num-classes", "3", "--no-config", "--no-progress").exit_code == 1
    assert cli("audit", str(data), "--num-classes", "3", "--reduce-zero-label", "--no-config",
               "--no-progress").exit_code == 0


# ---- labelguard init -----------------------------------------------------------------------

def test_init_writes_a_config_that_later_audits_use(tmp_path):
    data = dataset(tmp_path / "data", values=(0, 1, 2))
    write_png(data / "masks" / "border.png", np.pad(organic_mask((8, 8), (0, 1)), 4, constant_values=255))
    result = CliRunner().invoke(main, ["init", str(data)])
    assert result.exit_code == 0, result.output
    written = load_config(str(data / "labelguard.toml")).spec
    assert (written.num_classes, written.ignore) == (3, (255,))

    assert cli("audit", str(data), "--no-progress").exit_code == 0
    write_png(data / "masks" / "new.png", organic_mask((32, 32), (0, 1, 2, 3)))
    result = cli("audit", str(data), "-f", "json", "--no-progress")
    report = json.loads(result.output)
    assert result.exit_code == 1
    assert list(report["summary"]["outside_spec"]) == ["3"]
    assert report["summary"]["spec_sources"] == [str(data / "labelguard.toml")]


def test_init_flags_a_stray_value_and_asks_before_writing_it_into_the_spec(tmp_path):
    """Seed 000's situation in masks: one mask of forty holds a 3 among 0..2; a spec written
    from the data would make num_classes 4 and bless the stray value."""
    data = tmp_path / "data"
    for i in range(40):
        mask = organic_mask((16, 16), (0, 1, 2), seed=i)
        if i == 17:
            mask[:2, :2] = 3
        write_png(data / "masks" / f"{i:02d}.png", mask)
    result = CliRunner().invoke(main, ["init", str(data)])
    assert result.exit_code == 1
    assert "value 3 is in 1 of 40 masks (4 pixels; " in result.output and "17.png" in result.output
    assert "nothing written" in result.output and not (data / "labelguard.toml").exists()

    result = CliRunner().invoke(main, ["init", str(data), "--yes"])
    assert result.exit_code == 0, result.output
    text = (data / "labelguard.toml").read_text()
    assert "# FLAGGED: the data holds 1 fault" in text and "value 3 is in 1 of 40 masks" in text
    assert load_config(str(data / "labelguard.toml")).spec.num_classes == 4


def test_init_flags_fractional_values_and_writes_clean_data_without_asking(tmp_path):
    data = tmp_path / "data"
    for i in range(4):
        mask = organic_mask((16, 16), (0, 1), seed=i).astype(np.float32)
        if i == 2:
            mask[4:6, 4:6] = 0.5  # a mask resized with bilinear interpolation
        write_npy(data / "labels" / f"{i}.npy", mask)
    result = CliRunner().invoke(main, ["init", str(data)])
    assert result.exit_code == 1 and "LG204" in result.output and "2.npy" in result.output
    (data / "labels" / "2.npy").unlink()
    result = CliRunner().invoke(main, ["init", str(data)])
    assert result.exit_code == 0, result.output
    assert "FLAGGED" not in (data / "labelguard.toml").read_text()


def test_init_keeps_what_the_user_gave_and_lists_only_faults_of_values_and_names(tmp_path):
    """A rare value is the user's to judge once a class count is given; findings that do not
    change the spec inferred (missing images, a list's blank lines) are the audit's, not init's;
    the given size relation is audited with and written, with a note on where it applies."""
    data = tmp_path / "data"
    for i in range(40):
        mask = organic_mask((16, 16), (0, 1), seed=i)
        if i == 3:
            mask[:2, :2] = 2
        write_png(data / "masks" / f"{i:02d}.png", mask)
        write_png(data / "images" / f"{i:02d}.png", np.zeros((8, 8, 3), np.uint8))  # masks twice the size
    write_list(data / "train.txt", [f"masks/{i:02d}.png" for i in range(40)] + [""])
    result = CliRunner().invoke(main, ["init", str(data), "--num-classes", "3", "--sizes", "2"])
    assert result.exit_code == 0, result.output
    text = (data / "labelguard.toml").read_text()
    assert "FLAGGED" not in text and "sizes = 2.0" in text and "sizes applies only where this file is given" in text
    assert load_config(str(data / "labelguard.toml")).spec.num_classes == 3


def test_init_refuses_to_overwrite_without_force(tmp_path):
    data = dataset(tmp_path / "data", values=(0, 1))
    (data / "labelguard.toml").write_text("[labels]\nnum_classes = 9\n")
    result = CliRunner().invoke(main, ["init", str(data)])
    assert result.exit_code == 2 and "--force" in result.output
    assert cli("init", str(data), "--force").exit_code == 0
    assert load_config(str(data / "labelguard.toml")).spec.num_classes == 2


def test_init_keeps_the_given_class_names(tmp_path):
    data = dataset(tmp_path / "data", values=(0, 1, 2))
    out = tmp_path / "spec.toml"
    assert cli("init", str(data), "--classes", "bg,road,car", "-o", str(out)).exit_code == 0
    assert load_config(str(out)).spec.classes == ("bg", "road", "car")


def test_init_on_data_with_no_values_or_classes_writes_nothing_and_says_why(tmp_path):
    """A COCO file with no categories and no annotations implies no spec: init refuses to write
    one that would hold nothing (and the audit does not suggest init for it)."""
    data = tmp_path / "data"
    write_png(data / "images" / "a.png", np.zeros((8, 8), np.uint8))
    write_json(data / "annotations.json", {"images": [{"id": 1, "file_name": "images/a.png", "width": 8,
                                                      "height": 8}], "annotations": [], "categories": []})
    result = CliRunner().invoke(main, ["init", str(data)])
    assert result.exit_code == 2
    assert "found no label values or class names" in result.output and "nothing written" in result.output
    assert not (data / "labelguard.toml").exists()
    assert "labelguard init" not in cli("audit", str(data), "--no-progress", "--no-cache").output


def test_the_spec_constructor_takes_the_users_fields_and_provenance_is_set_by_labelguard():
    """``LabelSpec(...)`` names what is legal; where each part came from is labelguard's to
    record (read-only properties, set by from_source / with_origins / merged)."""
    import inspect

    public = [name for name in inspect.signature(LabelSpec).parameters if not name.startswith("_")]
    assert public == ["classes", "values", "num_classes", "ignore", "background", "reduce_zero_label", "tokens",
                      "dtype", "require_pairs", "max_files_unreadable", "sizes", "masks_hold"]
    with pytest.raises(TypeError):
        LabelSpec(num_classes=3, sources=("x",))  # type: ignore[call-arg]
    spec = LabelSpec.from_source("labels.txt", classes=("a", "b"))
    assert spec.sources == ("labels.txt",) and spec.origin("classes") == "labels.txt"
    given = LabelSpec(num_classes=3).with_origins([("num_classes", "--num-classes 3")])
    assert given.origins == (("num_classes", "--num-classes 3"),) and given.sources == ("--num-classes 3",)
    with pytest.raises(AttributeError):
        spec.sources = ()  # type: ignore[misc]

