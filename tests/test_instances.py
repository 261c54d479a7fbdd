"""Instance-id masks (StarDist, Cellpose, MONAI): recognised by their own evidence, declared
with --instances / --semantic (or masks_hold), and judged by LG212 rather than as classes."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from builders import organic_mask, write_png, write_tiff
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from labelguard import audit
from labelguard.cli import main
from labelguard.core.summary import Summary
from labelguard.rules._instances import count_regions

CLASS_CODES = ("LG201", "LG207", "LG401", "LG104", "LG208", "LG209", "LG006")


def cell_mask(objects: int, seed: int, size: int = 96, dtype=np.uint16) -> np.ndarray:
    """Round cells numbered 1..``objects`` at random places, each apart from the others, as
    StarDist's and Cellpose's masks hold them."""
    rng = np.random.default_rng(seed)
    mask = np.zeros((size, size), np.int64)
    yy, xx = np.mgrid[0:size, 0:size]
    placed = 0
    while placed < objects:
        cy, cx, radius = rng.uniform(4, size - 4), rng.uniform(4, size - 4), rng.uniform(2.0, 3.5)
        disc = (yy - cy) ** 2 + (xx - cx) ** 2 <= radius ** 2
        grown = (yy - cy) ** 2 + (xx - cx) ** 2 <= (radius + 2) ** 2
        if mask[grown].any():
            continue
        placed += 1
        mask[disc] = placed
    return mask.astype(dtype)


def stardist_like(root, counts=(40, 65, 31, 52)):
    """StarDist's training layout: images/ and masks/ of one name each, uint16 instance masks."""
    for i, objects in enumerate(counts):
        write_tiff(root / "images" / f"img_{i}.tif", np.full((96, 96), 40 + i, np.uint8))
        write_tiff(root / "masks" / f"img_{i}.tif", cell_mask(objects, seed=i))
    return root


def codes(report) -> list[str]:
    return sorted(f.code for f in report.findings)


def run(*args):
    return CliRunner().invoke(main, ["audit", *map(str, args), "--no-progress", "--no-cache", "--workers", "1"])


@pytest.mark.code("LG212", "pass")
def test_stardist_like_masks_are_read_as_instances_and_judged_by_no_class_rule(tmp_path):
    report = audit(stardist_like(tmp_path), cache=False)
    assert not set(codes(report)) & {*CLASS_CODES, "LG212"}, [f.message for f in report.findings]
    note = next(n for n in report.notes if "read as instance masks" in n)
    assert "4 masks" in note and "31 to 65 ids, varying from mask to mask" in note
    assert "every id one connected region" in note and "uint16" in note and "--semantic" in note
    assert not report.summary.value_files  # ids are no classes


@pytest.mark.code("LG212", "pass")
def test_semantic_flag_is_final_no_lg212_no_region_count_and_the_values_are_classes(tmp_path, monkeypatch):
    import labelguard.rules._instances as instances

    def never(labels):
        raise AssertionError("regions counted after --semantic")

    monkeypatch.setattr(instances, "count_regions", never)
    report = audit(stardist_like(tmp_path), {"masks_hold": "classes", "num_classes": 2}, cache=False)
    # Ids outside the declared classes crash the loss: the verdict stays an error (LG201).
    assert "LG212" not in codes(report) and codes(report).count("LG201") == 4
    assert not report.summary.instances and 65 in report.summary.value_files


@pytest.mark.code("LG212", "fail")
def test_num_classes_without_semantic_is_lg212_a_once_for_the_folder_with_its_hint(tmp_path):
    result = run(stardist_like(tmp_path), "--num-classes", "2")
    assert result.exit_code == 1, result.output
    assert result.output.count("look like instance ids") == 1
    assert "4 masks of" in result.output and "31 to 65 ids per mask" in result.output
    assert "every id one connected region" in result.output
    assert "4 of them hold values the spec does not allow (LG201)" in result.output
    assert "pass --semantic" in result.output


@pytest.mark.code("LG212", "fail")
def test_num_classes_on_instance_masks_is_lg212_a(tmp_path):
    report = audit(stardist_like(tmp_path), {"num_classes": 3}, cache=False)
    # Read as classes where the spec expects them, they are judged as classes too (LG201, LG207).
    assert set(codes(report)) == {"LG201", "LG207", "LG212"}
    assert codes(report).count("LG212") == 1 and codes(report).count("LG201") == 4
    assert 65 in report.summary.value_files  # and counted in the class statistics
    explained = next(f for f in report.findings if f.code == "LG212")
    assert "where class ids are expected (the spec [0, 3)" in explained.message


@pytest.mark.code("LG212", "pass")
def test_instances_flag_reads_masks_of_few_objects_as_instances_too(tmp_path):
    stardist_like(tmp_path, counts=(40, 3, 5))
    assert "LG207" in codes(audit(tmp_path, cache=False))  # a 3-object uint16 mask alone looks like classes
    result = run(tmp_path, "--instances")
    assert "No findings." in result.output, result.output
    assert "3 masks" in result.output and "read as instance masks, as declared (--instances)" in result.output


@pytest.mark.code("LG212", "fail")
def test_an_id_on_two_separate_objects_is_named_with_its_regions(tmp_path):
    mask = cell_mask(40, seed=3)
    mask[mask == 9] = 7
    write_tiff(tmp_path / "masks" / "a.tif", mask)
    report = audit(tmp_path, cache=False)
    found = [f for f in report.findings if f.code == "LG212"]
    assert len(found) == 1, [f.message for f in report.findings]
    message = found[0].message
    assert "1 instance id of 39 is used by separate objects" in message
    assert "id 7 on 2 separate regions (first pixels at (" in message
    first = [tuple(int(n) for n in p) for p in zip(*np.nonzero(mask == 7))][0]
    assert f"({first[1]}, {first[0]})" in message


@pytest.mark.code("LG212", "fail")
def test_ids_reaching_the_top_of_uint8_are_lg212(tmp_path):
    mask = np.zeros((40, 40), np.int64)
    ids = np.zeros(400, np.int64)
    ids[:255] = np.arange(1, 256)
    mask[::2, ::2] = ids.reshape(20, 20)
    write_png(tmp_path / "masks" / "a.png", mask.astype(np.uint8))
    result = run(tmp_path, "--instances")
    assert "instance mask stored as uint8: ids reach 255, the largest uint8 holds" in result.output, result.output


@pytest.mark.code("LG212", "fail")
def test_a_background_other_than_0_is_lg212_when_instances_are_declared(tmp_path):
    mask = cell_mask(30, seed=1)
    mask[mask == 0] = 100
    write_tiff(tmp_path / "masks" / "a.tif", mask)
    result = run(tmp_path, "--instances")
    assert "no pixel is 0 in an instance mask (instances declared (--instances)): value 100 covers" in result.output
    assert "expected background 0" in result.output
    assert "LG212" not in run(tmp_path).output  # undeclared, a mask without 0 is not read as instances


@pytest.mark.parametrize("classes", [3, 8, 20])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_class_masks_are_never_taken_for_instances(tmp_path, classes, dtype):
    for i in range(4):
        write_png(tmp_path / "masks" / f"m{i}.png", organic_mask((64, 64), tuple(range(classes)), seed=i)
                  .astype(dtype), mode="I;16" if dtype == np.uint16 else None)
    report = audit(tmp_path, cache=False)
    assert not report.summary.instances
    assert not any("instance" in note for note in report.notes)
    assert "LG212" not in codes(audit(tmp_path, {"num_classes": classes}, cache=False))


def test_twenty_classes_each_one_blob_in_uint16_stay_classes(tmp_path):
    """Each class one connected region, numbered 1..20 densely, 16 bits: still too few ids."""
    mask = np.kron(np.arange(21, dtype=np.uint16).reshape(3, 7), np.ones((8, 8), np.uint16))
    write_tiff(tmp_path / "masks" / "a.tif", mask)
    report = audit(tmp_path, cache=False)
    assert not report.summary.instances and 20 in report.summary.value_files


def test_a_config_with_the_data_cannot_say_what_masks_hold(tmp_path):
    data = stardist_like(tmp_path / "data", counts=(40, 3))
    (data / "labelguard.toml").write_text('[labels]\nmasks_hold = "instances"\n', encoding="utf-8")
    report = audit(data, cache=False)
    assert "LG207" in codes(report)  # the 3-object mask is judged as classes: the data cannot loosen
    assert any("masks_hold" in note for note in report.notes)
    # "classes" is final (no LG212 doubt): the data cannot say it either.
    (data / "labelguard.toml").write_text('[labels]\nmasks_hold = "classes"\nnum_classes = 2\n', encoding="utf-8")
    report = audit(data, cache=False)
    assert "LG212" in codes(report), [f.message for f in report.findings]
    assert any("masks_hold" in note for note in report.notes)
    own = tmp_path / "mine.toml"
    own.write_text('[labels]\nmasks_hold = "instances"\n', encoding="utf-8")
    assert codes(audit(data, config_file=str(own), cache=False)) == []


def test_the_api_takes_masks_hold_in_the_spec(tmp_path):
    stardist_like(tmp_path, counts=(40, 3))
    assert codes(audit(tmp_path, {"masks_hold": "instances"}, cache=False)) == []
    assert "LG212" not in codes(audit(tmp_path, {"masks_hold": "semantic"}, cache=False))


def test_instance_counts_merge_the_same_in_any_grouping():
    parts = []
    for i, (ids, highest) in enumerate([(40, 44), (3, 3), (65, 90)]):
        part = Summary()
        part.add_instance_mask(f"masks/m{i}.tif", "instances", ids, highest, "uint16", split=i == 2)
        parts.append(part)
    left = Summary().update(parts[0]).update(Summary().update(parts[1]).update(parts[2]))
    right = Summary().update(Summary().update(parts[0]).update(parts[1])).update(parts[2])
    assert left.instances == right.instances and left.instance_extent == right.instance_extent
    assert left.instance_extent[("masks", "instances")] == [3, 65, 90]
    assert left.instances[("masks", "instances", "split")] == 1


def _regions_by_search(labels: np.ndarray) -> dict[int, int]:
    """The reference: a breadth-first search from every unvisited non-zero pixel, its
    neighbours by face, edge or corner."""
    seen = np.zeros(labels.shape, bool)
    offsets = [tuple(x - 1 for x in o) for o in np.ndindex(*(3,) * labels.ndim) if any(x != 1 for x in o)]
    found: dict[int, int] = {}
    for start in np.ndindex(*labels.shape):
        value = int(labels[start])
        if value == 0 or seen[start]:
            continue
        found[value] = found.get(value, 0) + 1
        seen[start] = True
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for offset in offsets:
                there = tuple(p + o for p, o in zip(here, offset))
                if all(0 <= p < n for p, n in zip(there, labels.shape)) and not seen[there] \
                        and labels[there] == value:
                    seen[there] = True
                    queue.append(there)
    return found


@settings(max_examples=150, deadline=None)
@given(arrays(np.uint16, st.one_of(st.tuples(st.integers(1, 12), st.integers(1, 12)),
                                   st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 6))),
              elements=st.integers(0, 4)))
def test_region_counts_match_a_breadth_first_search(labels):
    values, regions, first = count_regions(labels)
    assert dict(zip(values.tolist(), regions.tolist())) == _regions_by_search(labels)
    assert (labels.reshape(-1)[first] == np.repeat(values, regions)).all()


def _voronoi(shape, seeds, seed):
    """Regions that tile ``shape``: each pixel takes the number (1..``seeds``) of its nearest
    of ``seeds`` random points."""
    rng = np.random.default_rng(seed)
    points = rng.random((seeds, len(shape))) * np.array(shape)
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), -1).reshape(-1, len(shape))
    nearest = np.argmin(((grid[:, None, :] - points[None]) ** 2).sum(-1), axis=1) + 1
    return nearest.reshape(shape)


def test_an_ade_like_scene_of_30_of_150_classes_one_blob_each_stays_classes(tmp_path):
    """uint16 masks whose 30 classes of 150 each cover one blob, tiling the photo: ids fill
    a fifth of 1..150 and no background holds them apart."""
    for i in range(3):
        rng = np.random.default_rng(10 + i)
        classes = np.sort(np.concatenate([[0], rng.choice(np.arange(1, 151), 30, replace=False)]))
        write_png(tmp_path / "annotations" / f"img{i}.png", classes[_voronoi((48, 64), 31, i) - 1].astype(np.uint16),
                  mode="I;16")
    report = audit(tmp_path, cache=False)
    assert not report.summary.instances and "LG212" not in codes(report)
    assert len(report.summary.value_files) > 30  # the classes are counted


def test_an_int16_atlas_of_100_parcels_stays_classes(tmp_path):
    """Parcellations: int16 volumes of some 100 of ids 1..120, each one region, tiling a ball."""
    nib = pytest.importorskip("nibabel")
    z, y, x = np.mgrid[:24, :24, :24]
    ball = (z - 12) ** 2 + (y - 12) ** 2 + (x - 12) ** 2 < 11 ** 2
    (tmp_path / "labels").mkdir()
    for i in range(2):
        atlas = _voronoi((24, 24, 24), 120, i)
        atlas[~ball] = 0
        nib.save(nib.Nifti1Image(atlas.astype(np.int16), np.eye(4)), str(tmp_path / "labels" / f"sub{i}.nii.gz"))
    report = audit(tmp_path, cache=False)
    assert not report.summary.instances and "LG212" not in codes(report)
    assert not any("instance" in note for note in report.notes)


def test_a_crop_of_cells_keeps_ids_with_gaps_and_is_still_instances(tmp_path):
    """A crop keeps 40 of ids 1..100 (StarDist's 3-D test crop keeps 51 of 1..162), the cells
    apart on background."""
    mask = cell_mask(100, seed=5)
    kept = np.isin(mask, np.arange(1, 101, 5)) | np.isin(mask, np.arange(2, 101, 5))
    mask[~kept] = 0
    write_tiff(tmp_path / "masks" / "crop.tif", mask)
    report = audit(tmp_path, cache=False)
    assert report.summary.instances, report.notes
    assert any("read as instance masks" in note and "40 ids" in note for note in report.notes), report.notes


@pytest.mark.code("LG212", "pass")
def test_uint8_ids_below_255_with_a_split_id_claim_no_wrap(tmp_path):
    """140 uint8 ids, one of them on two cells: LG212 names the split, never a wrap-around it
    did not see."""
    mask = cell_mask(140, seed=2, size=200, dtype=np.uint8)
    mask[mask == 9] = 7
    write_png(tmp_path / "masks" / "a.png", mask)
    result = run(tmp_path, "--instances")
    assert "id 7 on 2 separate regions" in result.output
    assert "wrap around" not in result.output and "stored as uint8" not in result.output


def test_instances_declared_with_num_classes_says_the_classes_do_not_apply(tmp_path):
    result = run(stardist_like(tmp_path), "--instances", "--num-classes", "2")
    assert "LG201" not in result.output
    assert "the spec's classes ([0, 2)" in result.output and "do not apply to masks read as instance ids" \
        in result.output
