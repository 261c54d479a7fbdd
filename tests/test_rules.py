"""The rule layer: the registry by scope, and isolation of a crashing rule (a real rule
registered here that raises). Each rule's own examples are tested in ``tests/rules/``."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import labelguard.rules
from builders import write_jpeg, write_png
from labelguard.rules.lg201 import VALUE_OUTSIDE_SPEC
from labelguard.core.registry import REGISTRY, Check
from labelguard.core.rules import RULES, SCOPES, all_rules, rule, unregister
from labelguard.core.spec import LabelSpec
from labelguard.rules._masks import process_mask
from audit_helpers import codes, run
from rule_examples import audit_example
from labelguard.rules._examples import coco_box, coco_json, csv_table, image

def test_every_code_has_one_module_named_after_it_with_its_definition_and_rules():
    modules = [m.name for m in pkgutil.iter_modules(labelguard.rules.__path__) if not m.name.startswith("_")]
    assert modules
    for name in modules:
        module = importlib.import_module(f"labelguard.rules.{name}")
        assert name == name.lower() and name[:2] == "lg", f"rule module {name} is not named by its code"
        code = name.upper()
        defined = [v for v in vars(module).values() if isinstance(v, Check) and v.code == code]
        assert defined and REGISTRY[code] is defined[0], f"{name} does not define {code}"
        codes_of_module = {r.code for r in all_rules() if r.apply.__module__ == module.__name__}
        if REGISTRY[code].scope == "runtime":
            assert not codes_of_module, f"{name} registers rules of {codes_of_module}"
        else:
            assert codes_of_module == {code}, f"{name} registers rules of {codes_of_module or 'no code'}"
    assert {m.upper() for m in modules} == set(REGISTRY), "a code is defined outside labelguard.rules.lgNNN"


def test_every_scope_has_rules_and_examples_come_in_both_kinds():
    assert all(RULES[scope] for scope in SCOPES)
    for code in {r.code for r in all_rules() if r.examples}:
        kinds = {e.fails for r in all_rules() if r.code == code for e in r.examples}
        assert kinds == {True, False}, f"{code} has examples of one kind only"


@pytest.mark.code("LG201", "fail")
def test_a_crashing_rule_is_an_internal_error_and_the_others_still_run(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.array([[0, 1], [2, 5]], np.uint8))

    @rule(VALUE_OUTSIDE_SPEC, "mask")
    def divides_by_the_missing_class(sample, spec):
        return [1 // int(sample.values.min())]

    try:
        report = run(tmp_path, LabelSpec(num_classes=3))
    finally:
        unregister(divides_by_the_missing_class)
    assert "LG201" in codes(report)
    [error] = report.errors
    assert "a.png" in error and "divides_by_the_missing_class" in error and "LG201" in error
    assert "ZeroDivisionError" in error
    assert report.summary.samples == 1


def test_a_crashing_rule_fails_alone_in_a_batch(tmp_path):
    from labelguard.core.tasks import FileTask

    for name in ("a.png", "b.png"):
        write_png(tmp_path / name, np.array([[0, 1], [1, 7]], np.uint8))

    @rule(VALUE_OUTSIDE_SPEC, "mask")
    def raises_on_b(sample, spec):
        if sample.display.endswith("b.png"):
            raise RuntimeError("broken rule")
        return []

    tasks = [FileTask(process_mask, str(tmp_path / n), n) for n in ("a.png", "b.png")]
    try:
        result = process_mask.batch(tasks, LabelSpec(num_classes=3))
    finally:
        unregister(raises_on_b)
    assert [f.path for f in result.findings if f.code == "LG201"] == ["a.png", "b.png"]
    assert len(result.errors) == 1 and result.errors[0].startswith("b.png: rule LG201")
    assert result.summary.samples == 2


def test_a_crashing_dataset_rule_is_reported_and_the_others_still_run(tmp_path):
    write_png(tmp_path / "masks" / "a.png", np.eye(4, dtype=np.uint8) * 255)

    @rule(VALUE_OUTSIDE_SPEC, "dataset")
    def reads_a_missing_key(summary, spec):
        return [summary.value_files["missing"] + {}["key"]]

    try:
        report = run(tmp_path, LabelSpec(num_classes=2))
    finally:
        unregister(reads_a_missing_key)
    assert "LG209" in codes(report)
    assert any("reads_a_missing_key" in e and "KeyError" in e for e in report.errors)


@pytest.mark.code("LG101", "fail")
def test_a_crashing_annotation_rule_is_an_internal_error_and_the_others_still_run(tmp_path):
    from labelguard.rules.lg101 import UNKNOWN_CLASS
    from detection_builders import voc_xml

    folder = tmp_path / "Annotations"
    folder.mkdir()
    (folder / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 9, 9)), ("dgo", (2, 2, 8, 8))]))

    @rule(UNKNOWN_CLASS, "annotation")
    def indexes_past_the_objects(record, spec):
        return [record.labels[10]]

    try:
        report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    finally:
        unregister(indexes_past_the_objects)
    [unknown] = [f for f in report.findings if f.code == "LG101"]
    assert "'dgo'" in unknown.message and "'dog'" in unknown.message
    [error] = report.errors
    assert "a.xml" in error and "indexes_past_the_objects" in error and "IndexError" in error
    assert report.summary.samples == 1


def test_one_annotation_rule_serves_every_format(tmp_path):
    """A rule registered once reads VOC objects, YOLO rows, COCO annotations (a mistyped
    category not labelled), table lines and class folders alike: the record, not the layout."""
    from labelguard.rules.lg303 import DUPLICATE_BOX
    from detection_builders import voc_xml

    voc = tmp_path / "voc" / "Annotations"
    voc.mkdir(parents=True)
    (voc / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 9, 9)), ("dog", (2, 2, 8, 8))]))
    yolo = tmp_path / "yolo" / "labels"
    yolo.mkdir(parents=True)
    (yolo / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n1 0.4 0.4 0.1 0.1\n")
    seen = []
    coco = tmp_path / "coco" / "annotations"
    coco.mkdir(parents=True)
    (coco / "instances_train.json").write_text(coco_json(
        [coco_box(7, 2), {"id": 8, "image_id": 1, "category_id": "cat", "bbox": [1, 1, 2, 2]}, coco_box(9, 1)]))
    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "train.csv").write_text(csv_table([("a.jpg", "cat"), ("b.jpg", "dog")]))
    for name in ("a.jpg", "b.jpg"):
        write_jpeg(csv / name, image())
        write_jpeg(tmp_path / "folders" / "train" / name[0] / name, image())

    @rule(DUPLICATE_BOX, "annotation")
    def records_what_it_sees(record, spec):
        objects = record.objects()
        labelled = [o.label for o in objects] if record.labelled is None else \
            [int(o.label) for o, known in zip(objects, record.labelled) if known]
        seen.append((record.format, record.unit, labelled, [o.place for o in objects],
                     record.folder.name if record.folder else None))
        return []

    try:
        run(tmp_path / "voc", LabelSpec(classes=("cat", "dog")))
        run(tmp_path / "yolo", LabelSpec(num_classes=2))
        run(tmp_path / "coco", LabelSpec())
        run(tmp_path / "csv", LabelSpec())
        run(tmp_path / "folders", LabelSpec())
    finally:
        unregister(records_what_it_sees)
    assert seen == [("voc", "object", ["cat", "dog"], [1, 2], None), ("yolo", "row", [0, 1], [1, 2], None),
                    ("coco", "annotation", [2, 1], [1, 2, 3], None), ("csv", "line", ["cat", "dog"], [2, 3], None),
                    ("folder", "image", [], [], "a"), ("folder", "image", [], [], "b")]


@pytest.mark.code("LG101", "fail")
def test_a_crashing_rule_on_a_coco_file_costs_only_its_own_findings(tmp_path):
    from labelguard.rules.lg303 import DUPLICATE_BOX

    folder = tmp_path / "annotations"
    folder.mkdir()
    (folder / "instances_train.json").write_text(coco_json([coco_box(1, 1), coco_box(2, 9)]))

    @rule(DUPLICATE_BOX, "annotation")
    def reads_a_column_the_file_lacks(record, spec):
        return [record.mask_sizes.T[5]]

    try:
        report = run(tmp_path, LabelSpec())
    finally:
        unregister(reads_a_column_the_file_lacks)
    [undeclared] = [f for f in report.findings if f.code == "LG101"]
    assert "category id 9" in undeclared.message
    [error] = report.errors
    assert "instances_train.json" in error and "reads_a_column_the_file_lacks" in error and "IndexError" in error
    assert report.summary.samples == 1 and report.summary.class_objects == {"cat": 1}


def test_a_rule_that_reads_a_field_runs_only_on_records_that_fill_it(tmp_path):
    from labelguard.rules.lg003 import MISSING
    from detection_builders import voc_xml

    (tmp_path / "voc" / "Annotations").mkdir(parents=True)
    (tmp_path / "voc" / "Annotations" / "a.xml").write_text(voc_xml("a.jpg", [("cat", (1, 1, 9, 9))]))
    (tmp_path / "coco" / "annotations").mkdir(parents=True)
    (tmp_path / "coco" / "annotations" / "instances_train.json").write_text(coco_json([coco_box(1, 1)]))
    seen = []

    @rule(MISSING, "annotation", reads="images")
    def counts_the_images(record, spec):
        seen.append((record.format, len(record.images)))
        return []

    try:
        run(tmp_path / "voc", LabelSpec(classes=("cat",)))
        run(tmp_path / "coco", LabelSpec())
    finally:
        unregister(counts_the_images)
    assert seen == [("coco", 1)]
