"""Honest refusals: a dry run shows what --apply would refuse, each dataset is re-audited
against its own spec, a run without a spec says what its re-audit cannot judge,
--write-classes replaces a file only with --force, and `fix list` never drops an entry whose
file exists nor re-encodes a list."""

import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import organic_mask, write_list, write_png
from fix_data import digests, mask_dataset
from labelguard import LabelSpec
from labelguard.cli import main
from labelguard.fix import clean_list, remap, undo


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def by_site(result):
    return {Path(c.path).parts[-3]: (c.status, c.summary) for c in result.changes}


@pytest.mark.code("LG201", "fail")
def test_each_dataset_is_re_audited_against_its_own_spec_and_the_dry_run_says_so_first(tmp_path):
    sites = {"two": ["bg", "road"], "three": ["bg", "road", "car"]}
    masks = []
    for name, classes in sites.items():
        masks.append(write_png(tmp_path / name / "masks" / "m.png", organic_mask((32, 32), (0, 1))))
        write_list(tmp_path / name / "labels.txt", classes)
    original = digests(masks)
    paths = [str(tmp_path / name) for name in sites]
    dry = by_site(remap(paths, "1:2"))
    # value 2 is no class of "two": its own spec refuses the remap there, and only there
    assert dry["two"][0] == "refused" and "would not be written" in dry["two"][1] and "LG201" in dry["two"][1]
    assert dry["three"][0] == "planned"
    applied = remap(paths, "1:2", apply=True)
    assert by_site(applied)["two"][0] == "refused" and by_site(applied)["three"][0] == "written"
    assert not applied.ok and digests(masks[:1]) == {str(masks[0]): original[str(masks[0])]}
    cli = invoke("fix", "remap", *paths, "--map", "1:2")
    assert cli.exit_code == 1 and "refused" in cli.output  # the dry run exits as --apply would
    undo(str(tmp_path / "three"))
    assert digests(masks) == original


def test_a_remap_without_a_spec_says_its_re_audit_cannot_judge_values(tmp_path):
    mask_dataset(tmp_path, "png-L", n=1)
    result = remap(str(tmp_path / "masks"), "255:7")
    assert [c.status for c in result.changes] == ["planned"]
    assert any("no label spec is known" in note and "cannot say the fix made nothing worse" in note
               for note in result.notes)
    specified = remap(str(tmp_path / "masks"), "255:1", spec=LabelSpec(num_classes=2))
    assert not any("no label spec" in note for note in specified.notes)


def test_a_dry_run_shows_what_apply_would_refuse_for_annotations(tmp_path):
    from annotation_builders import write_table

    table = write_table(tmp_path / "data" / "labels.csv", [("a.jpg", "cat"), ("b.jpg", "dog")])
    spec = LabelSpec(classes=("cat", "dog"))
    for apply in (False, True):
        [change] = invoke_rename(table.parent, "dog=wolf", spec, apply).changes
        assert change.status == "refused" and "LG101" in change.summary
    [change] = invoke_rename(table.parent, "dog=cat", spec, False).changes
    assert change.status == "planned"


def invoke_rename(folder, mapping, spec, apply):
    from labelguard.fix import rename

    return rename(str(folder), mapping, spec=spec, apply=apply)


def test_write_classes_replaces_an_existing_file_only_with_force(tmp_path):
    from detection_builders import write_voc

    write_voc(tmp_path / "voc", {"a": [("dog", (2, 2, 10, 10))], "b": [("cat", (1, 1, 5, 5))]})
    classes = tmp_path / "classes.txt"
    classes.write_text("my curated list\n")
    refused = invoke("audit", tmp_path / "voc", "--no-config", "--write-classes", classes)
    assert refused.exit_code == 2 and "exists" in refused.output and "--force" in refused.output
    assert classes.read_text() == "my curated list\n"
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.symlink(victim, tmp_path / "link.txt")
    invoke("audit", tmp_path / "voc", "--no-config", "--write-classes", tmp_path / "link.txt", "--force")
    assert victim.read_text() == "mine\n" and (tmp_path / "link.txt").read_text() == "cat\ndog\n"
    forced = invoke("audit", tmp_path / "voc", "--no-config", "--write-classes", classes, "--force")
    assert "wrote 2 class names" in forced.output and classes.read_text() == "cat\ndog\n"
    unused = invoke("audit", tmp_path / "voc", "--no-config", "--force")
    assert "--force was not used" in unused.output


# ---- fix list: nothing lost ------------------------------------------------------------------

def image_folder(root, names):
    for name in names:
        write_png(root / "images" / name, np.zeros((4, 4), np.uint8))


def test_fix_list_keeps_a_hash_named_file_and_drops_real_comments(tmp_path):
    root = tmp_path / "data"
    image_folder(root, ["a.png", "#hash.png"])
    listing = write_list(root / "train.txt", ["# split of 2021", "images/a.png", "#hash.png", "images/#hash.png",
                                              "  ", "images/a.png"])
    for apply in (False, True):
        [change] = clean_list(str(listing), root=str(root), apply=apply).changes
        assert change.status == ("written" if apply else "planned")
    assert listing.read_text() == "images/a.png\n#hash.png\nimages/#hash.png\n"
    assert "names a file; kept" in change.summary


def test_fix_list_keeps_a_file_name_with_spaces_around_it(tmp_path):
    root = tmp_path / "data"
    image_folder(root, ["a.png", " b.png"])
    listing = write_list(root / "train.txt", ["images/a.png ", " b.png", "images/missing.png", "images/a.png"])
    for drop_missing in (True, False):
        result = clean_list(str(listing), root=str(root / "images"), drop_missing=drop_missing)
        [change] = result.changes
        assert change.status == "planned", change.summary
    clean_list(str(listing), root=str(root / "images"), apply=True)
    assert listing.read_text() == "images/a.png\n b.png\n"


def test_fix_list_refuses_to_re_encode_a_latin1_list(tmp_path):
    root = tmp_path / "data"
    folder = root / "images"
    folder.mkdir(parents=True)
    open(os.path.join(os.fsencode(folder), b"caf\xe9.png"), "wb").write(b"\x89PNG")  # a Latin-1 file name
    listing = root / "train.txt"
    listing.write_bytes(b"images/caf\xe9.png\r\nimages/caf\xe9.png\r\n")
    original = listing.read_bytes()
    for apply in (False, True):
        [change] = clean_list(str(listing), root=str(root), apply=apply).changes
        assert change.status == "refused" and "not UTF-8" in change.summary and "0xe9" in change.summary
    assert listing.read_bytes() == original
