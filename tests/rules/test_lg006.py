"""LG006 no-label-spec: an audit with no spec lists values and classes but checks none."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from builders import write_png
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from audit_helpers import codes, found, run
from rule_cases import examples_of, proves


def masks(root, values=(0, 1, 2, 7)):
    array = np.array(values, np.uint8).reshape(2, 2)
    for name in ("a", "b"):
        write_png(root / "masks" / f"{name}.png", array)


@pytest.mark.code("LG006", "fail")
def test_masks_audited_without_a_spec_say_nothing_was_checked(tmp_path):
    masks(tmp_path)
    [finding] = found(run(tmp_path), "LG006")
    assert finding.path is None and str(finding.severity) == "warning"
    assert finding.data["values"] == [0, 1, 2, 7] and finding.data["samples"] == 2
    assert "4 mask values (0, 1, 2, 7) in 2 samples were listed, not checked" in finding.message


@pytest.mark.code("LG006", "fail")
def test_class_names_audited_without_a_spec_are_listed_in_lg006(tmp_path):
    (tmp_path / "Annotations").mkdir()
    for name, label in (("a", "dog"), ("b", "cat")):
        (tmp_path / "Annotations" / f"{name}.xml").write_text(
            f"<annotation><filename>{name}.jpg</filename><size><width>10</width><height>10</height>"
            f"<depth>3</depth></size><object><name>{label}</name><bndbox><xmin>1</xmin><ymin>1</ymin>"
            "<xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>", encoding="utf-8")
    [finding] = found(run(tmp_path), "LG006")
    assert finding.data["classes"] == ["cat", "dog"]


@pytest.mark.code("LG006", "fail")
@pytest.mark.parametrize("labels, said", [
    (["train"], "1 class ('train') in 1 sample was listed, not checked"),
    (["train", "dog"], "2 classes ('dog', 'train') in 1 sample were listed, not checked"),
])
def test_the_verb_of_lg006_agrees_with_what_was_listed(tmp_path, labels, said):
    objects = "".join(f"<object><name>{label}</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax>"
                      "<ymax>5</ymax></bndbox></object>" for label in labels)
    (tmp_path / "Annotations").mkdir()
    (tmp_path / "Annotations" / "a.xml").write_text(
        "<annotation><filename>a.jpg</filename><size><width>10</width><height>10</height><depth>3</depth>"
        f"</size>{objects}</annotation>", encoding="utf-8")
    [finding] = found(run(tmp_path), "LG006")
    assert said in finding.message


@pytest.mark.code("LG006", "pass")
@pytest.mark.parametrize("spec", [LabelSpec(num_classes=8), LabelSpec(values=(0, 1, 2, 7)),
                                  LabelSpec(classes=tuple("abcdefgh"))], ids=["num_classes", "values", "classes"])
def test_any_spec_silences_lg006(tmp_path, spec):
    masks(tmp_path)
    assert "LG006" not in codes(run(tmp_path, spec))


@pytest.mark.code("LG006", "pass")
def test_a_spec_declared_by_the_dataset_silences_lg006(tmp_path):
    masks(tmp_path)
    (tmp_path / "labels.txt").write_text("\n".join("abcdefgh") + "\n", encoding="utf-8")
    report = run(tmp_path)
    assert report.spec.is_known and "LG006" not in codes(report)


@pytest.mark.code("LG006", "pass")
def test_nothing_audited_is_no_lg006(tmp_path):
    (tmp_path / "masks").mkdir()
    assert "LG006" not in codes(run(tmp_path))


def test_lg006_is_a_warning_that_keeps_exit_code_0(tmp_path):
    masks(tmp_path)
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--no-config", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "LG006" in result.output


def test_the_hint_names_the_config_table_the_config_reads(tmp_path):
    """LG006's fix names the [labels] table; a config written as it says gives the spec."""
    from labelguard.config import TOP_KEYS, load_config
    from labelguard.rules.lg006 import NO_SPEC

    assert "[labels] table in labelguard.toml" in NO_SPEC.fix and "labels" in TOP_KEYS
    config = tmp_path / "labelguard.toml"
    config.write_text("[labels]\nnum_classes = 3\nignore_index = [255]\n")
    assert load_config(str(config)).spec.num_classes == 3


@examples_of("LG006")
def test_lg006_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
