"""harmonize: several datasets labelled their own way -> one mapping file -> fix applies it ->
a re-audit against the common spec is clean -> undo restores the bytes."""

import json
import os

import numpy as np
from click.testing import CliRunner

from annotation_builders import write_image, write_table
from detection_builders import write_voc, write_yolo
from fix_data import binary_255_mask, digests, write_mask
from labelguard import LabelSpec
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.fix import FixError, Harmonization, apply_mapping, harmonize, undo


def files_of(root):
    return [os.path.join(d, f) for d, dirs, fs in os.walk(root) if ".labelguard" not in d for f in fs]


def error_codes(path, spec):
    return [f.code for f in audit(str(path), spec, use_project_config=False).findings if str(f.severity) == "error"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_masks_numbered_differently(tmp_path):
    for i in range(2):
        mask = binary_255_mask(i)
        write_mask(tmp_path / "site_a", "png-L", f"a{i}", np.where(mask == 255, 1, 0).astype(np.uint8))
        write_mask(tmp_path / "site_b", "npy", f"b{i}", mask)
    original = digests(files_of(tmp_path / "site_b"))
    plan = harmonize([tmp_path / "site_a", tmp_path / "site_b"])
    assert plan.spec.num_classes == 2
    assert [d.kind for d in plan.datasets] == ["values", "values"]
    assert plan.datasets[0].map == {} and plan.datasets[1].map == {"255": 1}

    mapping = tmp_path / "mapping.json"
    result = invoke("harmonize", tmp_path / "site_a", tmp_path / "site_b", "-o", mapping)
    assert result.exit_code == 0, result.output
    assert "255 -> 1" in result.output
    saved = json.loads(mapping.read_text())
    assert saved["spec"] == {"num_classes": 2} and saved["datasets"][1]["path"] == "site_b"

    applied = invoke("fix", "remap", "--from-mapping", mapping, "--apply")
    assert applied.exit_code == 0, applied.output
    spec = LabelSpec(num_classes=2)
    assert error_codes(tmp_path / "site_a", spec) == [] and error_codes(tmp_path / "site_b", spec) == []
    assert invoke("fix", "undo", tmp_path / "site_b").exit_code == 0
    assert digests(files_of(tmp_path / "site_b")) == original


def named_sites(tmp_path):
    voc = write_voc(tmp_path / "voc", {"1": [("Dog", (1, 1, 9, 9)), ("cat", (2, 2, 8, 8))],
                                      "2": [("dog", (1, 1, 9, 9))]}, labels=["Dog", "cat"])
    yolo = write_yolo(tmp_path / "yolo", {"train": {"a": [(0, .5, .5, .2, .2), (1, .3, .3, .1, .1)],
                                                     "b": [(1, .5, .5, .2, .2)]}}, yaml_name=None)
    (yolo / "classes.txt").write_text("cat\ndog\n")
    for k in range(4):
        write_image(tmp_path / "csv" / "images" / f"{k}.jpg", (16, 16), seed=k)
    write_table(tmp_path / "csv" / "train.csv", [("0.jpg", "dog"), ("1.jpg", "Cat"), ("2.jpg", "dgo"),
                                                 ("3.jpg", "cat")], header=("image_name", "label_name"))
    return [voc, yolo, tmp_path / "csv"]


def test_named_sites_voc_yolo_csv(tmp_path):
    sites = named_sites(tmp_path)
    original = {str(s): digests(files_of(s)) for s in sites}
    plan = harmonize(sites)
    assert plan.spec.classes == ("dog", "cat")
    voc, yolo, table = plan.datasets
    assert (voc.kind, voc.map) == ("names", {"Dog": "dog"})
    assert (yolo.kind, yolo.map, yolo.classes) == ("ids", {"0": 1, "1": 0}, ["cat", "dog"])
    assert yolo.names_file.endswith("classes.txt")
    assert (table.kind, table.map) == ("names", {"Cat": "cat", "dgo": "dog"})
    mapping = tmp_path / "mapping.json"
    plan.save(mapping)
    assert Harmonization.load(str(mapping)).datasets[1].map == {"0": 1, "1": 0}

    dry = apply_mapping(str(mapping))
    assert all(not r.applied for r in dry) and {str(s): digests(files_of(s)) for s in sites} == original
    assert invoke("fix", "remap", "--from-mapping", mapping, "--apply").exit_code == 0
    renamed = invoke("fix", "rename", "--from-mapping", mapping, "--apply")
    assert renamed.exit_code == 0, renamed.output
    assert (yolo_root := sites[1]).joinpath("classes.txt").read_text() == "dog\ncat\n"
    assert sites[0].joinpath("labels.txt").read_text() == "dog\ncat\n"
    assert (yolo_root / "labels" / "train" / "b.txt").read_text().startswith("0 ")
    spec = LabelSpec(classes=("dog", "cat"))
    for site in sites:
        assert error_codes(site, spec) == [], site
    for site in sites:
        undo(str(site))
    assert {str(s): digests(files_of(s)) for s in sites} == original


def test_imagefolder_sites(tmp_path):
    from annotation_builders import imagefolder

    a = imagefolder(tmp_path / "a", {"cat": 2, "dog": 2})
    b = imagefolder(tmp_path / "b", {"Cat": 1, "Dog": 1, "dog": 1})
    original = digests(files_of(b))
    plan = harmonize([a, b])
    assert plan.spec.classes == ("cat", "dog") and plan.datasets[1].map == {"Cat": "cat", "Dog": "dog"}
    plan.save(tmp_path / "m.json")
    results = apply_mapping(str(tmp_path / "m.json"), apply=True)
    assert [c.status for c in results[0].changes] == ["written", "written"]
    assert sorted(os.listdir(b)) == [".labelguard", "cat", "dog"]
    assert error_codes(b, LabelSpec(classes=("cat", "dog"))) == []
    undo(str(b))
    assert digests(files_of(b)) == original and sorted(os.listdir(b)) == [".labelguard", "Cat", "Dog", "dog"]


def test_harmonize_errors(tmp_path):
    write_mask(tmp_path / "m", "png-L", "a", binary_255_mask())
    sites = named_sites(tmp_path)
    try:
        harmonize([tmp_path / "m", sites[0]])
    except FixError as exc:
        assert "class-name file" in str(exc)
    else:
        raise AssertionError("mixed kinds must be refused")
    assert invoke("harmonize", sites[0]).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = invoke("fix", "rename", "--from-mapping", bad)
    assert result.exit_code == 2 and "mapping file" in result.output


def test_invalid_yolo_ids_never_become_common_classes(tmp_path):
    a = write_yolo(tmp_path / "a", {"train": {"x": [(0, .5, .5, .2, .2), (1, .3, .3, .1, .1)]}}, names=["dog", "cat"])
    b = write_yolo(tmp_path / "b", {"train": {"y": [(0, .5, .5, .2, .2), (1, .3, .3, .1, .1), (5, .4, .4, .1, .1),
                                                    (-1, .6, .6, .1, .1)]}}, yaml_name=None)
    (b / "classes.txt").write_text("cat\ndog\n")
    plan = harmonize([a, b])
    assert plan.spec.classes == ("dog", "cat")
    site = plan.datasets[1]
    assert site.map == {"0": 1, "1": 0} and set(site.invalid) == {"5", "-1"}
    assert any("class id 5" in note and "left out of the map" in note for note in plan.notes)
    plan.save(tmp_path / "m.json")
    assert Harmonization.load(str(tmp_path / "m.json")).datasets[1].invalid == site.invalid
    label = b / "labels" / "train" / "y.txt"
    original = digests([label])
    results = apply_mapping(str(tmp_path / "m.json"), apply=True)
    assert all(r.ok for r in results), [r.changes for r in results]
    assert [line.split()[0] for line in label.read_text().splitlines()] == ["1", "0", "5", "-1"]
    undo(str(b))
    assert digests([label]) == original


def test_ids_outside_the_declared_class_count_and_negative_values_are_left_alone(tmp_path):
    a = write_yolo(tmp_path / "a", {"train": {"x": [(0, .5, .5, .2, .2), (1, .3, .3, .1, .1)]}}, nc=2)
    b = write_yolo(tmp_path / "b", {"train": {"y": [(1, .5, .5, .2, .2), (0, .3, .3, .1, .1), (4, .4, .4, .1, .1)]}},
                   nc=2)
    plan = harmonize([a, b])
    assert plan.spec.num_classes == 2 and plan.datasets[1].map == {}
    assert "outside the dataset's own spec" in plan.datasets[1].invalid["4"]

    mask = binary_255_mask(0).astype(np.int16)
    mask[0, :5] = -1  # an ignore label some tools write
    write_mask(tmp_path / "m1", "npy", "a", mask)
    write_mask(tmp_path / "m2", "png-L", "a", np.where(binary_255_mask(1) == 255, 1, 0).astype(np.uint8))
    values = harmonize([tmp_path / "m1", tmp_path / "m2"])
    assert values.spec.num_classes == 2
    assert values.datasets[0].map == {"255": 1} and list(values.datasets[0].invalid) == ["-1"]
