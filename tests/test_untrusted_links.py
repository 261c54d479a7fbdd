"""Symbolic links that leave the data the audit was given are never followed: a label file,
an image, a role folder or a colour map shipped as a link to a file elsewhere (a zip or tar
restores links) is LG005 naming the link and where it leads, and nothing there is opened,
listed, hashed or shown in a report. Links that stay inside what the audit was given (a
git-annex checkout audited from its repository, a role folder linked to a folder beside it)
are read as before.

The "outside" files are in tmp_path beside the dataset folder, as a home folder's files are
beside a downloaded dataset.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from audit_helpers import found, run
from builders import organic_mask, paired_dataset, rgb_image, write_list, write_png
from detection_builders import write_yolo

from labelguard.cli import main
from labelguard.core.spec import LabelSpec

# A recognisable fake token: it must appear in no report, in no format.
SECRET = "ghp_FAKESECRETTOKEN7QX"
CREDENTIALS = f"https://someone:{SECRET}@github.com\n"
FORMATS = ("text", "json", "sarif", "github", "junit", "html")
SPEC = LabelSpec(num_classes=2)
# The colour of the private photo: no picture of the report may hold it.
PHOTO_COLOUR = (13, 201, 77)


def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".git-credentials"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CREDENTIALS, encoding="utf-8")
    return path


def audit_cli(*args: str, workers: int = 1):
    return CliRunner().invoke(main, ["audit", *args, "--no-progress", "--workers", str(workers), "--no-config"],
                              catch_exceptions=False)


def reports_of(root: Path, *args: str, workers: int = 1) -> tuple[dict[str, str], list[dict]]:
    """Every format's report of an audit of ``root`` (stdout and stderr), and the findings of
    the JSON one."""
    results = {fmt: audit_cli(str(root), *args, "-f", fmt, workers=workers) for fmt in FORMATS}
    return {fmt: result.output for fmt, result in results.items()}, json.loads(results["json"].stdout)["findings"]


def lg005_about(findings: list[dict], name: str) -> list[dict]:
    return [f for f in findings if f["code"] == "LG005" and f["path"] and Path(f["path"]).name == name]


@pytest.mark.code("LG005", "fail")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_label_file_that_links_out_of_the_dataset_is_lg005_and_its_content_is_in_no_report(tmp_path, monkeypatch,
                                                                                            workers):
    """Attack A: YOLO label files that are links to a credentials file; 6 files, so that two
    workers audit them in a pool of processes."""
    monkeypatch.chdir(tmp_path)
    secret = secret_file(tmp_path)
    root = write_yolo(tmp_path / "ds", {"train": {f"a{i}": [(0, 0.5, 0.5, 0.2, 0.2)] for i in range(6)}}, names=["p"])
    for label in (root / "labels" / "train").iterdir():
        label.unlink()
        label.symlink_to(os.path.relpath(secret, label.parent))
    reports, findings = reports_of(root, workers=workers)
    leaked = [fmt for fmt, text in reports.items() if SECRET in text]
    assert leaked == [], f"the outside file's content is in the {leaked} report"
    refused = lg005_about(findings, "a0.txt")
    assert len(refused) == 1 and "a link to home/.git-credentials, outside the audited data (ds): " \
        "not read" in refused[0]["message"], findings
    assert sum(f["code"] == "LG005" for f in findings) == 6


@pytest.mark.code("LG005", "fail")
def test_an_image_that_links_out_is_not_read_and_no_picture_of_it_is_in_the_html_report(tmp_path, monkeypatch):
    """Attack B: an image linked to a private photo, beside a mask of another size: reading its
    size would make LG206, whose picture in the HTML report shows the photo."""
    monkeypatch.chdir(tmp_path)
    photo = write_png(tmp_path / "private" / "photo.png", np.full((32, 32, 3), PHOTO_COLOUR, dtype=np.uint8))
    write_png(tmp_path / "ds" / "masks" / "a.png", organic_mask((16, 16), classes=(0, 1)))
    (tmp_path / "ds" / "images").mkdir()
    (tmp_path / "ds" / "images" / "a.png").symlink_to(os.path.relpath(photo, tmp_path / "ds" / "images"))
    result = audit_cli("ds", "--num-classes", "2", "-f", "html", "-o", "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    pictures = [Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
                for data in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)]
    assert not [p for p in pictures if (np.asarray(p) == PHOTO_COLOUR).all(axis=-1).any()]
    assert "32x32" not in html and "LG206" not in html
    assert "a link to private/photo.png, outside the audited data (ds): not read" in html
    report = run(tmp_path / "ds", SPEC, cache=False)
    assert [f.code for f in found(report, "LG005", "a.png")] == ["LG005"] and not found(report, "LG206")
    assert result.exit_code == 1


@pytest.mark.code("LG005", "fail")
def test_a_role_folder_that_links_out_is_neither_walked_nor_its_class_file_read(tmp_path, monkeypatch):
    """Attack C: ``ds/masks`` is a link to a private folder: its files are not listed or read,
    and its classes.txt is not taken for the dataset's class list."""
    monkeypatch.chdir(tmp_path)
    write_png(tmp_path / "private" / "a.png", np.full((16, 16), 9, dtype=np.uint8))
    (tmp_path / "private" / "classes.txt").write_text(f"background\n{SECRET}\n", encoding="utf-8")
    write_png(tmp_path / "ds" / "images" / "a.png", rgb_image((16, 16)))
    (tmp_path / "ds" / "masks").symlink_to("../private")
    reports, findings = reports_of(tmp_path / "ds")
    assert [fmt for fmt, text in reports.items() if SECRET in text] == []
    [folder] = lg005_about(findings, "masks")
    assert folder["message"] == ("a link to private, outside the audited data (ds): its files were not "
                                 "listed or read")
    assert lg005_about(findings, "classes.txt") and not [f for f in findings if f["code"] == "LG201"]
    assert all("private/a.png" not in f["path"] for f in findings if f["path"])
    # Nothing else was there to audit: the error says the labels were refused, not absent.
    assert "2 paths under it led outside the audited data through a link and were not read (LG005)" \
        in reports["text"]


@pytest.mark.code("LG005", "fail")
def test_a_colour_map_found_beside_the_data_that_links_out_is_not_read(tmp_path, monkeypatch):
    """Attack D: ``label_colors.txt`` (read by convention) is a link to a file elsewhere: its
    lines would be quoted in an LG001 about the colour map."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "x").write_text(CREDENTIALS, encoding="utf-8")
    paired_dataset(tmp_path / "ds", ["a"], masks=[np.zeros((16, 16, 3), dtype=np.uint8)])
    (tmp_path / "ds" / "label_colors.txt").symlink_to("../private/x")
    reports, findings = reports_of(tmp_path / "ds")
    assert [fmt for fmt, text in reports.items() if SECRET in text] == []
    [refused] = lg005_about(findings, "label_colors.txt")
    assert refused["message"] == "a link to private/x, outside the dataset root ds: not read"


def test_a_colour_map_line_is_quoted_short(tmp_path):
    """A colour map inside the dataset whose line is a 100,000-character dump: the LG001
    about it quotes the line cut, with its length."""
    paired_dataset(tmp_path, ["a"], masks=[np.zeros((16, 16, 3), dtype=np.uint8)])
    (tmp_path / "label_colors.txt").write_text("x" * 100_000 + "\n", encoding="utf-8")
    report = run(tmp_path, cache=False)
    [problem] = [f for f in report.findings if f.code == "LG001" and "label_colors.txt" in f.message]
    assert len(problem.message) < 400 and "(100,000 characters)" in problem.message


@pytest.mark.code("LG005", "fail")
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")
def test_a_link_to_a_pipe_outside_is_never_opened(tmp_path):
    """A mask that is a link to a named pipe outside the data: the audit (result cache on)
    finishes, and the finding says the link was not read, not what the pipe is: it was never
    opened to be told."""
    os.mkfifo(tmp_path / "fifo")
    write_png(tmp_path / "ds" / "masks" / "b.png", organic_mask((16, 16), classes=(0, 1)))
    (tmp_path / "ds" / "masks" / "a.png").symlink_to("../../fifo")
    env = {**os.environ, "LABELGUARD_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "labelguard", "audit", "ds", "--no-progress", "--no-config", "-f",
                           "json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    findings = json.loads(done.stdout)["findings"]
    [refused] = [f for f in findings if f["path"] == "ds/masks/a.png"]
    assert refused["code"] == "LG005" and refused["message"] == "a link to fifo, outside the audited data (ds): not read"
    assert "pipe" not in done.stdout


@pytest.mark.code("LG005", "pass")
def test_links_inside_the_data_are_read_as_before(tmp_path, monkeypatch):
    """A mask linked to a file elsewhere in the dataset (a git-annex checkout: every file a
    link into the repository's store), and a role folder linked to a folder beside it: both
    are read, their values checked."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "repo" / ".store"
    write_png(store / "key1.png", np.full((16, 16), 9, dtype=np.uint8))
    write_png(tmp_path / "repo" / "ds" / "images" / "a.png", rgb_image((16, 16)))
    (tmp_path / "repo" / "ds" / "masks").mkdir()
    (tmp_path / "repo" / "ds" / "masks" / "a.png").symlink_to("../../.store/key1.png")
    report = run(tmp_path / "repo", SPEC, cache=False)
    assert found(report, "LG201", "a.png") and not found(report, "LG005")
    write_png(tmp_path / "other" / "real_masks" / "a.png", np.full((16, 16), 7, dtype=np.uint8))
    write_png(tmp_path / "other" / "images" / "a.png", rgb_image((16, 16)))
    (tmp_path / "other" / "masks").symlink_to("real_masks")
    report = run(tmp_path / "other", SPEC, cache=False)
    assert found(report, "LG201", "a.png") and not found(report, "LG005")


@pytest.mark.code("LG005", "pass")
def test_a_list_given_as_path_reads_links_inside_its_dataset(tmp_path, monkeypatch):
    """A list given as PATH audits the dataset around it: a link inside that dataset (but
    outside the list's own folder) is read."""
    monkeypatch.chdir(tmp_path)
    write_png(tmp_path / "ds" / "store" / "a.png", np.full((16, 16), 9, dtype=np.uint8))
    write_png(tmp_path / "ds" / "images" / "a.png", rgb_image((16, 16)))
    (tmp_path / "ds" / "masks").mkdir()
    (tmp_path / "ds" / "masks" / "a.png").symlink_to("../store/a.png")
    write_list(tmp_path / "ds" / "lists" / "train.txt", ["masks/a.png"])
    report = run(tmp_path / "ds" / "lists" / "train.txt", SPEC, cache=False)
    assert found(report, "LG201", "a.png") and not found(report, "LG005")


@pytest.mark.code("LG005", "fail")
def test_a_result_cached_by_an_audit_of_the_parent_is_not_reused_for_a_link_out_of_the_child(tmp_path, monkeypatch):
    """An audit of ``top`` reads ``top/ds/a.png``, a link into ``top/elsewhere``, and caches its
    result; an audit of ``top/ds`` alone must not take that result: the link leaves it."""
    monkeypatch.chdir(tmp_path)
    write_png(tmp_path / "top" / "ds" / "b.png", organic_mask((16, 16), classes=(0, 1)))
    write_png(tmp_path / "top" / "elsewhere" / "a.png", np.full((16, 16), 9, dtype=np.uint8))
    (tmp_path / "top" / "ds" / "a.png").symlink_to("../elsewhere/a.png")
    for path in (tmp_path / "top" / "ds" / "b.png", tmp_path / "top" / "elsewhere" / "a.png"):
        os.utime(path, (1_600_000_000, 1_600_000_000))  # not modified in the last seconds: cached
    cache = tmp_path / "cache"
    parent = run("top", SPEC, cache=str(cache))
    assert found(parent, "LG201", "a.png") and not found(parent, "LG005")
    child = run(os.path.join("top", "ds"), SPEC, cache=str(cache))
    assert [f.path for f in found(child, "LG005")] == [os.path.join("top", "ds", "a.png")]
    assert not found(child, "LG201")
    # The child's own audit is cached (its block differs from the parent's: packs are per
    # block of the files an audit checks), and its result still names the link.
    again = run(os.path.join("top", "ds"), SPEC, cache=str(cache))
    assert [f.path for f in found(again, "LG005")] == [os.path.join("top", "ds", "a.png")]
    assert not found(again, "LG201") and again.from_cache == 1


def test_a_linked_folder_is_reported_under_the_dataset_it_lies_in(tmp_path):
    """Two datasets under one PATH, a link out of the data in the second: its LG005 belongs
    to the second dataset, whichever dataset's walk ended first."""
    from builders import write_png
    from labelguard.cli import main as cli_main

    outside = tmp_path / "outside"
    write_png(outside / "x.png", np.zeros((4, 4), np.uint8))
    top = tmp_path / "t"
    for name in ("ds1", "ds2"):
        write_png(top / name / "m.png", np.zeros((4, 4), np.uint8))
        (top / name / "classes.txt").write_text("bg\nfg\n")
    (top / "ds2" / "ext").symlink_to(outside, target_is_directory=True)
    result = CliRunner().invoke(cli_main, ["audit", str(top), "-f", "json", "--no-cache", "--no-progress",
                                           "--no-config"])
    report = json.loads(result.output)
    [refused] = [f for f in report["findings"] if f["code"] == "LG005"]
    assert refused["path"].endswith(os.path.join("ds2", "ext")) and refused["dataset"].endswith("ds2")
