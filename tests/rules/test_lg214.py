"""LG214 spec-sources-disagree: a class list and a class count of different lengths, with the
data using a name past the count.

Its rules' own examples (``src/labelguard/rules/lg214.py``), audited on real files;
``python tests/code_markers.py LG214`` lists its other tests."""

import numpy as np
import pytest
from click.testing import CliRunner

from audit_helpers import codes, found, run
from builders import write_list, write_png
from detection_builders import write_voc
from labelguard.cli import main
from labelguard.core.spec import LabelSpec
from rule_cases import examples_of, proves

# Seed 000: VOC XMLs whose classes are digits, one of them '5' from another dataset.
SEED_000 = {"0": [("0", (1, 1, 20, 20)), ("1", (2, 2, 20, 20))], "1": [("2", (1, 1, 20, 20)), ("3", (1, 1, 9, 9))],
            "2": [("5", (1, 1, 20, 20)), ("0", (3, 3, 30, 30))]}


@examples_of("LG214")
def test_lg214_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)


@pytest.mark.code("LG214", "fail")
def test_seed_000_a_scanned_labels_txt_and_num_classes_4_is_an_error_naming_both_sources(tmp_path):
    data = write_voc(tmp_path / "voc", SEED_000, size=(64, 48), labels=["0", "1", "2", "3", "5"])
    result = CliRunner().invoke(main, ["audit", str(data), "--num-classes", "4", "--no-config", "--no-cache"])
    assert result.exit_code == 1, result.output
    assert "LG214 error spec-sources-disagree" in result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("  - ") and "class names (" in line]
    assert "labels.txt" in line and "(--num-classes 4)" in line
    # the file that carries the stray class is named: the one to drop or fix
    assert f"the data uses '5' (1 object; in {data / 'Annotations' / '2.xml'})" in line
    assert "`labelguard fix drop FILE`" in result.output
    # the class table says a name past the count is not in the spec
    rows = {parts[0]: parts[-1] for parts in map(str.split, result.output.splitlines())
            if len(parts) == 4 and parts[-1] in ("yes", "NO")}
    assert rows["5"] == "NO" and rows["3"] == "yes"


@pytest.mark.code("LG214", "pass")
def test_seed_000_with_a_count_that_covers_the_names_has_no_lg214(tmp_path):
    data = write_voc(tmp_path / "voc", SEED_000, size=(64, 48), labels=["0", "1", "2", "3", "5"])
    assert "LG214" not in codes(run(data, LabelSpec(num_classes=5)))


@pytest.mark.code("LG214", "pass")
def test_a_list_and_a_count_that_only_differ_are_a_note_not_an_error(tmp_path):
    data = write_voc(tmp_path / "voc", {"a": [("0", (1, 1, 20, 20))]}, size=(64, 48), labels=["0", "1", "2", "3", "5"])
    report = run(data, LabelSpec(num_classes=4))
    assert "LG214" not in codes(report)
    assert any("5 class names" in note and "num_classes=4" in note for note in report.notes)


@pytest.mark.code("LG214", "fail")
def test_a_mask_value_past_the_count_is_named_with_its_class_name(tmp_path):
    write_png(tmp_path / "seg" / "masks" / "a.png", np.array([[0, 1], [2, 2]], np.uint8))
    write_list(tmp_path / "seg" / "labels.txt", ["background", "road", "car"])
    report = run(tmp_path / "seg", LabelSpec(num_classes=2))
    [disagree] = found(report, "LG214")
    assert f"the masks hold value 2 ('car') (in {tmp_path / 'seg' / 'masks' / 'a.png'})" in disagree.message
    assert disagree.data["used"] == ["car"]
    assert "LG201" in codes(report)


@pytest.mark.code("LG214", "pass")
@pytest.mark.parametrize("spec, stored", [
    # the list's last entry is declared ignored: its value is legal, not a class past the count
    (dict(num_classes=3, ignore=(3,)), 3),
    # reduce_zero_label: stored 3 is class 2, inside the count
    (dict(num_classes=3, reduce_zero_label=True), 3),
])
def test_ignored_values_and_reduced_values_are_read_as_the_loss_reads_them(tmp_path, spec, stored):
    write_png(tmp_path / "seg" / "masks" / "a.png", np.array([[0, 1], [2, stored]], np.uint8))
    write_list(tmp_path / "seg" / "labels.txt", ["background", "road", "car", "void"])
    assert "LG214" not in codes(run(tmp_path / "seg", LabelSpec(**spec)))


@pytest.mark.code("LG214", "pass")
def test_explicit_values_decide_and_coco_categories_of_sparse_ids_with_a_larger_count_pass(tmp_path):
    write_png(tmp_path / "seg" / "masks" / "a.png", np.array([[0, 7], [2, 2]], np.uint8))
    write_list(tmp_path / "seg" / "labels.txt", ["a", "b", "c", "d"])
    assert "LG214" not in codes(run(tmp_path / "seg", LabelSpec(values=(0, 2, 7), num_classes=3)))
