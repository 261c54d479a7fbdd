"""CSV label tables and ImageFolder class folders: rename / remap round trips
(fix -> audit clean -> undo -> byte-identical original)."""

import os
from pathlib import Path

from click.testing import CliRunner

from annotation_builders import imagefolder, write_image, write_table
from fix_data import digests
from labelguard import LabelSpec
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.fix import remap_ids, rename, undo


def error_codes(path, spec) -> list[str]:
    return [f.code for f in audit(str(path), spec, use_project_config=False).findings if str(f.severity) == "error"]


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (outside .labelguard) -> its hash; folders as ``dir/``."""
    found = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".labelguard"]
        relative = os.path.relpath(directory, root)
        found[relative + "/"] = ""
        found.update({os.path.join(relative, k): v for k, v in digests(
            [os.path.join(directory, f) for f in files]).items()})
    return {k.replace(str(root), ""): v for k, v in found.items()}


def csv_dataset(root: Path, labels: list[str], header=("image_name", "label_name"), line_end="\r\n") -> Path:
    for k in range(len(labels)):
        write_image(root / "images" / f"{k}.jpg", (16, 16), seed=k)
    return write_table(root / "train.csv", [(f'{k}.jpg', label) for k, label in enumerate(labels)],
                       header=header, line_end=line_end)


def test_csv_rename_round_trip(tmp_path):
    table = csv_dataset(tmp_path, ["Dog", "cat", "dgo", " Dog", "cat"])
    original = table.read_bytes()
    spec = LabelSpec(classes=("cat", "dog"))
    assert error_codes(tmp_path, spec)
    planned = rename(str(tmp_path), "Dog=dog,dgo=dog", spec=spec)
    assert [c.status for c in planned.changes] == ["planned"] and table.read_bytes() == original
    result = rename(str(tmp_path), "Dog=dog,dgo=dog", spec=spec, apply=True)
    assert result.changes[0].status == "written", result.changes
    assert result.changes[0].details["renamed"] == {"Dog": 2, "dgo": 1}
    # ' Dog' is written as exactly 'dog': csv.DictReader would keep the space.
    assert table.read_bytes() == original.replace(b" Dog", b"dog").replace(b"Dog", b"dog").replace(b"dgo", b"dog")
    assert error_codes(tmp_path, spec) == []
    undo(str(tmp_path))
    assert table.read_bytes() == original


def test_csv_remap_ids_round_trip_and_quoted_cells(tmp_path):
    for k in range(3):
        write_image(tmp_path / "images" / f"{k}.jpg", (16, 16), seed=k)
    table = tmp_path / "labels.csv"
    data = b'\xef\xbb\xbfimage_name,label_id,note\n0.jpg,3,"a, b"\n1.jpg,0,plain\n"2.jpg",3,x\n'
    table.write_bytes(data)
    spec = LabelSpec(num_classes=3)
    assert error_codes(tmp_path, spec)
    result = remap_ids(str(tmp_path), "3:2", spec=spec, apply=True)
    assert [c.status for c in result.changes] == ["written"], result.changes
    written = table.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") and b'0.jpg,2,"a, b"\n' in written and b"1.jpg,0,plain" in written
    assert error_codes(tmp_path, spec) == []
    undo(str(tmp_path))
    assert table.read_bytes() == data


def test_csv_remap_refused_when_worse(tmp_path):
    table = csv_dataset(tmp_path, ["0", "1", "1"], header=("image_name", "label_id"))
    original = table.read_bytes()
    result = remap_ids(str(tmp_path), "1:7", spec=LabelSpec(num_classes=2), apply=True)
    assert result.changes[0].status == "refused" and "LG10" in result.changes[0].summary
    assert table.read_bytes() == original and not result.ok


def test_imagefolder_rename_and_merge_round_trip(tmp_path):
    root = imagefolder(tmp_path / "data", {"train": {"Dog": 2, "cat": 2, "dog": 1, "dgo": 1},
                                           "val": {"cat": 1, "Dog": 1}})
    original = tree(root)
    spec = LabelSpec(classes=("cat", "dog"))
    dry = rename(str(root), "Dog=dog,dgo=dog", spec=spec)
    assert sorted(c.status for c in dry.changes) == ["planned"] * 3 and tree(root) == original
    result = rename(str(root), "Dog=dog,dgo=dog", spec=spec, apply=True)
    assert [c.status for c in result.changes] == ["written"] * 3, result.changes
    assert sorted(os.listdir(root / "train")) == ["cat", "dog"]
    assert sorted(os.listdir(root / "train" / "dog")) == ["Dog_000.jpg", "Dog_001.jpg", "dgo_000.jpg", "dog_000.jpg"]
    assert sorted(os.listdir(root / "val")) == ["cat", "dog"]
    assert error_codes(root, spec) == []
    undone = undo(str(root))
    assert not undone.conflicts
    assert tree(root) == original


def test_imagefolder_merge_clash_is_skipped(tmp_path):
    root = imagefolder(tmp_path / "data", {"Dog": 1, "dog": 1, "cat": 1})
    os.rename(root / "Dog" / "Dog_000.jpg", root / "Dog" / "dog_000.jpg")
    result = rename(str(root), "Dog=dog", apply=True)
    assert result.changes[0].status == "skipped" and "dog_000.jpg" in result.changes[0].summary
    assert os.path.isdir(root / "Dog")


def test_imagefolder_interrupted_merge_undoes(tmp_path):
    import subprocess
    import sys
    import time

    root = imagefolder(tmp_path / "data", {"Dog": 6, "dog": 1, "cat": 1})
    original = tree(root)
    env = dict(os.environ, LABELGUARD_FIX_PAUSE="0.3")
    process = subprocess.Popen([sys.executable, "-m", "labelguard", "fix", "rename", str(root), "--map",
                                "Dog=dog", "--apply"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline and len(os.listdir(root / "dog")) < 3:
        time.sleep(0.05)
    process.kill()
    process.wait()
    assert 0 < len(os.listdir(root / "Dog")) < 6
    undo(str(root))
    assert tree(root) == original


def test_cli_rename_imagefolder(tmp_path):
    root = imagefolder(tmp_path / "data", {"Dog": 1, "cat": 1})
    result = CliRunner().invoke(main, ["fix", "rename", str(root), "--map", "Dog=dog", "--apply"])
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(root)) == [".labelguard", "cat", "dog"]
    out = CliRunner().invoke(main, ["fix", "rename", str(root), "--map", "cat=kitten", "--out", str(tmp_path / "o")])
    assert out.exit_code == 2 and "--out" in out.output


def test_table_rename_keeps_every_other_cell(tmp_path_factory):
    """Property: after a rename the table reads back with the same paths and rows, the labels
    mapped, and every row without a mapped label byte-identical."""
    import csv as csv_module
    import io

    from hypothesis import given, settings, strategies as st

    from labelguard.layouts.tables.editor import rename as table_rename
    from labelguard.layouts.tables.reader import read_table

    names = st.sampled_from(["Dog", "dog", "cat", "big cat", "a,b", 'say "hi"', "dgo"])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(names, min_size=1, max_size=8), st.sampled_from([",", "\t"]), st.sampled_from(["\n", "\r\n"]))
    def check(labels, separator, line_end):
        buffer = io.StringIO()
        writer = csv_module.writer(buffer, delimiter=separator, lineterminator=line_end)
        writer.writerow(["image_name", "label_name"])
        writer.writerows([(f"{k}.jpg", label) for k, label in enumerate(labels)])
        path = tmp_path_factory.mktemp("t") / ("t.tsv" if separator == "\t" else "t.csv")
        path.write_bytes(buffer.getvalue().encode())
        mapping = {"Dog": "dog", "dgo": "dog", "big cat": "cat, big"}
        new, _, _ = table_rename(mapping)(str(path), path.read_bytes())
        if not any(label in mapping for label in labels):
            assert new is None
            return
        old_lines = path.read_bytes().split(b"\n")
        path.write_bytes(new)
        table = read_table(str(path))
        assert table.paths == [f"{k}.jpg" for k in range(len(labels))]
        assert table.labels == [mapping.get(label, label) for label in labels]
        for k, label in enumerate(labels):
            if label not in mapping:
                assert new.split(b"\n")[k + 1] == old_lines[k + 1]

    check()
