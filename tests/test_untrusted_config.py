"""A config found with the data is data: it sets the label spec and layout hints, never where
code runs, how strict the verdict is, or what is read and written outside the dataset.

A ``labelguard.toml`` inside a downloaded dataset, or in a shared folder above it, is written
by whoever shipped the data. Each test plants one, with the settings an attacker would make,
and checks that the audit runs on the trusted settings (the command line, ``--config``), that
every refused setting is a warning naming the file and the setting, and that every report
names the configs it read. The same file given with ``--config`` is the user's: it applies.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import colorize, organic_mask, paired_dataset, write_json, write_label_colors, write_png

from labelguard._audit import audit
from labelguard._optional import available
from labelguard.cli import main
from labelguard.config import OUTSIDE, ConfigFinder
from labelguard.core.findings import Severity
from labelguard.core.spec import LabelSpec
from labelguard.errors import ClusterError

needs_dask = pytest.mark.skipif(not available("distributed"), reason="the dask extra is not installed")
NOBODY = 65534
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="giving a file to another user needs root")
SECRET = "https://alice:ghp_SECRETTOKEN123456@github.com"


def bad_masks(folder: Path, count: int) -> Path:
    """``count`` masks of values 0..2, each with a 9 (an LG201 error under num_classes 3)."""
    for index in range(count):
        mask = organic_mask((16, 16), classes=(0, 1, 2), seed=index)
        mask[0, :2] = 9
        write_png(folder / f"{index}.png", mask)
    return folder


def good_masks(folder: Path, count: int) -> Path:
    for index in range(count):
        write_png(folder / f"{index}.png", organic_mask((16, 16), classes=(0, 1, 2), seed=index))
    return folder


def run(*args: str):
    return CliRunner().invoke(main, ["audit", *args, "--no-progress"], catch_exceptions=False)


def use_of(report, name: str):
    [use] = [use for use in report.configs if use.path.endswith(name)]
    return use


# ---- where code runs ------------------------------------------------------------------------

@pytest.fixture
def recording_scheduler():
    """A Dask scheduler on loopback (no worker) and the list of clients that connected to it."""
    from distributed import LocalCluster
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Connections(SchedulerPlugin):
        def __init__(self) -> None:
            self.clients: list[str] = []

        def add_client(self, scheduler, client: str) -> None:
            self.clients.append(client)

    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", scheduler_port=0,
                      dashboard_address=None, silence_logs=logging.CRITICAL) as cluster:
        connections = Connections()
        cluster.scheduler.add_plugin(connections, name="connections")
        yield cluster.scheduler_address, connections.clients


@needs_dask
def test_a_datasets_config_never_connects_the_audit_to_its_scheduler(recording_scheduler, tmp_path, monkeypatch):
    from labelguard.core import dask_engine

    address, clients = recording_scheduler
    data = bad_masks(tmp_path / "download" / "masks", 3).parent
    config = data / "labelguard.toml"
    config.write_text(f'[labels]\nnum_classes = 3\n\n[audit]\nengine = "dask"\nscheduler = "{address}"\n',
                      encoding="utf-8")
    result = run(str(data), "-f", "json", "--workers", "1")
    assert result.exit_code == 1, result.output
    assert clients == []  # nothing connected: the per-file work ran here
    summary = json.loads(result.stdout)["summary"]
    assert not any("per-file work ran on" in note for note in summary["notes"])
    assert summary["findings"]["error"] == 3
    [warning] = [note for note in summary["notes"] if "audit.engine" in note]
    assert str(config) in warning and "audit.scheduler" in warning and "--config" in warning
    assert f"labelguard: warning: {warning}" in result.stderr
    [entry] = summary["configs"]
    assert entry == {"path": str(config), "trusted": False, "applied": ["labels.num_classes"],
                     "refused": ["audit.engine", "audit.scheduler"]}

    # The same file given with --config is the user's own: the audit goes to that scheduler
    # (which has no worker, so it stops there, after connecting).
    monkeypatch.setattr(dask_engine, "WORKER_WAIT_SECONDS", 1)
    with pytest.raises(ClusterError, match=f"{address} has no worker"):
        audit(data, config_file=str(config), cache=False)
    assert len(clients) == 1


def test_the_refusal_never_advises_applying_the_found_file(tmp_path):
    """The warning once said "to apply them, pass the file with --config <that file>": advice
    to connect to the scheduler of whoever wrote it. It names what was not applied and how to
    make such settings oneself, never the found file as the way."""
    data = good_masks(tmp_path / "download" / "masks", 2).parent
    config = data / "labelguard.toml"
    config.write_text('[labels]\nnum_classes = 3\n\n[audit]\nengine = "dask"\nscheduler = "tcp://203.0.113.9:8786"\n'
                      'fail_on = "never"\n', encoding="utf-8")
    result = run(str(data), "-f", "json")
    assert result.exit_code == 0, result.output
    [warning] = json.loads(result.stdout)["summary"]["notes"]
    assert f"--config {config}" not in warning and f"--config {config}" not in result.stderr
    assert warning.count(str(config)) == 1  # named once, as the file refused
    assert warning.startswith(f"{config} was found with the data")
    assert "audit.engine, audit.scheduler, audit.fail_on, which were not applied" in warning
    assert "the flags (--engine, --scheduler, --fail-on)" in warning
    assert "a config file of their own passed with --config" in warning


# ---- how strict the verdict is ----------------------------------------------------------------

def test_a_config_above_the_data_neither_loosens_fail_on_nor_lowers_severities(tmp_path):
    shared = tmp_path / "shared"
    data = bad_masks(shared / "downloads" / "dataset" / "masks", 8).parent
    config = shared / "labelguard.toml"
    config.write_text('[labels]\nnum_classes = 3\n\n[audit]\nfail_on = "never"\n\n[severity]\nLG201 = "info"\n',
                      encoding="utf-8")
    text = run(str(data))
    assert text.exit_code == 1, text.output
    assert "result:    8 errors" in text.stdout
    assert (f"config:    {config} (found with the data): applied labels.num_classes; not applied: audit.fail_on, "
            "severity.LG201") in text.stdout
    assert "--fail-on, --severity CODE=LEVEL" in text.stderr

    as_json = run(str(data), "-f", "json")
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)
    assert {f["severity"] for f in report["findings"] if f["code"] == "LG201"} == {"error"}
    assert len([f for f in report["findings"] if f["code"] == "LG201"]) == 8
    assert report["summary"]["configs"] == [{"path": str(config), "trusted": False, "applied": ["labels.num_classes"],
                                            "refused": ["audit.fail_on", "severity.LG201"]}]


def test_sample_in_a_datasets_config_audits_every_file(tmp_path):
    data = good_masks(tmp_path / "dataset" / "masks", 5).parent
    (data / "labelguard.toml").write_text("[labels]\nnum_classes = 3\n\n[audit]\nsample = 1\n", encoding="utf-8")
    result = run(str(data), "-f", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert summary["samples"] == 5 and summary["sampled"] is None and len(summary["files"]) == 5
    assert any("audit.sample" in note and "--sample" in note for note in summary["notes"])


# ---- what is read and written outside the dataset ---------------------------------------------

def test_cache_dir_read_limits_and_workers_of_a_found_config_are_not_applied(tmp_path, monkeypatch):
    data = good_masks(tmp_path / "dataset" / "masks", 3).parent
    config = data / "labelguard.toml"
    config.write_text('[labels]\nnum_classes = 3\n\n[audit]\ncache_dir = "../planted-cache"\ncache_max_bytes = 100\n'
                      "max_file_bytes = 16\nmax_pixels = 4\nworkers = 64\n", encoding="utf-8")
    result = run(str(data), "-f", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert summary["codes"] == {} and summary["samples"] == 3  # the limits would make every mask LG001
    assert not (tmp_path / "planted-cache").exists()
    assert not any("64 workers" in note for note in summary["notes"])
    refused = ["audit.cache_dir", "audit.cache_max_bytes", "audit.max_file_bytes", "audit.max_pixels", "audit.workers"]
    assert summary["configs"][0]["refused"] == refused
    [warning] = [note for note in summary["notes"] if "audit.cache_dir" in note]
    assert all(setting in warning for setting in refused) and str(config) in warning
    assert "--cache-dir, --max-file-bytes, --max-pixels, --workers" in warning

    # `labelguard cache` run where such a config is found: the same, with the warning on stderr.
    monkeypatch.chdir(data)
    info = CliRunner().invoke(main, ["cache", "info"])
    assert info.exit_code == 0, info.output
    assert "planted-cache" not in info.stdout and "bound:    100 bytes" not in info.stdout
    assert "audit.cache_dir" in info.stderr and "labelguard.toml" in info.stderr
    given = CliRunner().invoke(main, ["cache", "info", "--config", "labelguard.toml"])
    assert f"location: {tmp_path / 'planted-cache'}" in given.stdout and "bound:    100 bytes" in given.stdout


def test_a_found_config_naming_a_file_outside_its_folder_is_not_read(tmp_path):
    """[tokens] files and [audit] color_map: a path that leaves the config's folder (up, absolute,
    or a link inside it that points out) is refused, named by its setting, and never opened."""
    outside = write_json(tmp_path / "outside.json", {"model": {"vocab": {"a": 0, "b": 1}}})
    write_label_colors(tmp_path / "colours.txt", ["background", "road"], [(0, 0, 0), (128, 64, 128)])
    data = good_masks(tmp_path / "dataset" / "masks", 2).parent
    os.symlink(outside, data / "tokenizer.json")
    cases = {
        "tokens.tokenizer": ['[tokens]\ntokenizer = "../outside.json"\n', f'[tokens]\ntokenizer = "{outside}"\n',
                             '[tokens]\ntokenizer = "tokenizer.json"\n'],
        "audit.color_map": ['[audit]\ncolor_map = "../colours.txt"\n'],
    }
    for setting, texts in cases.items():
        for text in texts:
            (data / "labelguard.toml").write_text("[labels]\nnum_classes = 3\n\n" + text, encoding="utf-8")
            report = audit(data, workers=1)
            assert report.spec.tokens is None and not report.findings, text
            use = use_of(report, "labelguard.toml")
            assert use.applied == ("labels.num_classes",) and [r.setting for r in use.refused] == [setting], text
            [warning] = [note for note in report.notes if setting in note]
            assert "outside the config's folder" in warning and "not read" in warning


def test_labels_and_layout_hints_of_a_found_config_apply_and_are_named(tmp_path, monkeypatch):
    colours = [(0, 0, 0), (128, 64, 128), (0, 0, 142)]
    data = tmp_path / "dataset"
    for index in range(2):
        write_png(data / "masks" / f"{index}.png", colorize(organic_mask((16, 16), seed=index), colours))
    write_label_colors(data / "palette" / "colours.txt", ["background", "road", "car"], colours)
    config = data / "labelguard.toml"
    config.write_text('[labels]\nnum_classes = 2\n\n[audit]\ncolor_map = "palette/colours.txt"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the colour map is found relative to the config, not to here
    report = audit("dataset/masks", workers=1)
    # 2 is outside num_classes 2, and the colour map's third name disagrees with the config's count
    assert report.outside_spec() and {f.code for f in report.findings} == {"LG201", "LG214"}
    assert report.summary.found_values() == [0, 1, 2]  # the colours decoded by the config's map
    use = use_of(report, "labelguard.toml")
    assert (use.path, use.trusted, use.applied, use.refused) == (
        os.path.join("dataset", "labelguard.toml"), False, ("labels.num_classes", "audit.color_map"), ())
    assert not any("found with the data" in note for note in report.notes)  # nothing refused, nothing to warn of

    result = run("dataset/masks")
    assert "config:    dataset/labelguard.toml (found with the data): applied labels.num_classes, " \
           "audit.color_map\n" in result.stdout and "warning" not in result.stderr


# ---- a config above the data: read only when it is this user's own -----------------------------

def shared_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A shared folder holding alice's private file and her dataset (two masks with a 9 each),
    and a config planted in the shared folder, above her data, that hides the 9s
    (ignore_index) and names her private file as its colour map (in its own folder)."""
    shared = tmp_path / "shared"
    private = shared / "alice" / "private" / "label_colors.txt"
    private.parent.mkdir(parents=True)
    private.write_text(SECRET + "\n", encoding="utf-8")
    data = bad_masks(shared / "alice" / "ds" / "masks", 2).parent
    config = shared / "labelguard.toml"
    config.write_text('[labels]\nignore_index = [9]\n\n[audit]\ncolor_map = "alice/private/label_colors.txt"\n',
                      encoding="utf-8")
    return data, config


def assert_not_read(result, config: Path, why: str) -> None:
    """The audit ran as if ``config`` were absent, and every channel says why."""
    assert result.exit_code == 1, result.output
    assert SECRET not in result.stdout and SECRET not in result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["codes"] == {"LG201": 2}  # the 9s: the planted ignore_index was not applied
    [entry] = summary["configs"]
    assert entry == {"path": str(config), "trusted": False, "applied": [], "refused": [], "not_read": why}
    [warning] = [note for note in summary["notes"] if str(config) in note]
    assert warning.startswith(f"{config} was not read, and the audit ran as if it were absent: it lies above the "
                              f"audited data and {why}")
    assert f"labelguard: warning: {warning}" in result.stderr


@needs_root
def test_a_config_of_another_user_above_the_data_is_not_read(tmp_path):
    data, config = shared_folder(tmp_path)
    os.chown(config, NOBODY, NOBODY)
    result = run(str(data), "--num-classes", "3", "-f", "json")
    assert_not_read(result, config, f"it belongs to user {NOBODY}, not to this user (0 or root)")
    text = run(str(data), "--num-classes", "3")
    assert f"config:    {config} (found with the data): not read: it belongs to user {NOBODY}" in text.stdout

    # The dataset's own config (at PATH) is data whoever wrote it: read, its label spec applied.
    own = data / "labelguard.toml"
    own.write_text("[labels]\nignore_index = [9]\n", encoding="utf-8")
    os.chown(own, NOBODY, NOBODY)
    report = audit(data, LabelSpec(num_classes=3), workers=1, cache=False)
    assert not report.findings and use_of(report, "ds/labelguard.toml").applied == ("labels.ignore_index",)


@needs_root
def test_another_users_link_above_the_data_is_not_read_even_to_a_file_of_this_user(tmp_path):
    """The link is judged as itself: another user's link to root's (or this user's) file
    would otherwise borrow that file's owner, and make every audit below it fail or obey it."""
    data, config = shared_folder(tmp_path)
    target = tmp_path / "mine.toml"
    config.rename(target)
    config.symlink_to(target)
    os.lchown(config, NOBODY, NOBODY)
    result = run(str(data), "--num-classes", "3", "-f", "json")
    assert_not_read(result, config, f"it belongs to user {NOBODY}, not to this user (0 or root)")


def test_a_config_above_the_data_that_others_may_write_is_not_read(tmp_path):
    data, config = shared_folder(tmp_path)
    config.chmod(0o666)
    result = run(str(data), "--num-classes", "3", "-f", "json")
    assert_not_read(result, config, f"other users may write into it (mode 0666; `chmod o-w {config}` makes it this "
                                    "user's alone)")

    # This user's own, and only its group may write it (umask 002, a group of one's own): read,
    # as data (its label spec applies).
    config.chmod(0o664)
    config.write_text("[labels]\nignore_index = [9]\n", encoding="utf-8")
    report = audit(data, LabelSpec(num_classes=3), workers=1, cache=False)
    assert not report.findings and use_of(report, "labelguard.toml").applied == ("labels.ignore_index",)


def test_files_a_datasets_own_config_names_stay_inside_the_data(tmp_path):
    """A dataset's own config (at or under PATH) names files of the data only: a folder of the
    dataset that is a link elsewhere does not bring a file there inside, even beside the config."""
    elsewhere = tmp_path / "elsewhere" / "city"
    good_masks(elsewhere / "masks", 2)
    write_json(elsewhere / "tokenizer.json", {"model": {"vocab": {"a": 0, "b": 1}}})
    (elsewhere / "labelguard.toml").write_text('[labels]\nnum_classes = 3\n\n[tokens]\ntokenizer = "tokenizer.json"\n',
                                               encoding="utf-8")
    data = good_masks(tmp_path / "data" / "road" / "masks", 2).parent.parent
    os.symlink(elsewhere, data / "city")

    report = audit(data, workers=1, cache=False)
    assert all(own.tokens is None for _, own in report.specs) and report.spec.tokens is None
    # (where the linked folder is walked, its config is reported with the file refused)
    assert all([r.setting for r in use.refused] == ["tokens.tokenizer"] for use in report.configs)
    [found] = ConfigFinder(None).configs(str(data / "city"), str(data))
    assert found.spec.tokens is None and found.use.applied == ("labels.num_classes",)
    [refusal] = found.use.refused
    assert (refusal.setting, refusal.kind) == ("tokens.tokenizer", OUTSIDE)
    assert "names a file outside the audited data, once links are resolved" in refusal.why
    # Audited as its own PATH, the linked folder is the data: the same config reads its file.
    [given_path] = ConfigFinder(None).configs(str(data / "city"))
    assert given_path.spec.tokens is not None and given_path.use.refused == ()


# ---- a layout hint from the data --------------------------------------------------------------

def test_detect_takes_the_layout_hint_of_a_found_config_as_the_audit_does(tmp_path):
    """`labelguard detect` said what the audit takes a folder for without the configs the
    audit reads: a found config's format hint that the audit applied went unseen."""
    from labelguard._detect import detect, render_text

    data = tmp_path / "ds"
    masks = [organic_mask((16, 16), classes=(0, 1), seed=index) for index in range(2)]
    paired_dataset(data, ["0", "1"], masks)
    (data / "train.csv").write_text("image,label\nimages/0.png,cat\nimages/1.png,dog\n", encoding="utf-8")
    [plain] = detect([str(data)])
    assert [d.layout for d in plain.datasets] == ["paired"] and plain.configs == []
    config = data / "labelguard.toml"
    config.write_text('[audit]\nformat = "csv"\n', encoding="utf-8")
    [hinted] = detect([str(data)])
    assert [d.layout for d in hinted.datasets] == ["csv"]
    assert hinted.configs == [f"{config} (found with the data): applied audit.format"]
    assert f"config: {config} (found with the data): applied audit.format" in render_text([hinted])
    report = json.loads(run(str(data), "-f", "json").stdout)
    assert report["summary"]["layouts"] == ["csv"]
    # A hint detection does not take is refused, in detect as in the audit.
    config.write_text('[audit]\nformat = "imagefolder"\n', encoding="utf-8")
    [refused] = detect([str(data)])
    assert [d.layout for d in refused.datasets] == ["paired"]
    assert refused.configs == [f"{config} (found with the data): applied nothing; not applied: audit.format"]
    [ignored] = detect([str(data)], use_project_config=False)
    assert ignored.configs == [] and [d.layout for d in ignored.datasets] == ["paired"]


def test_detect_on_the_command_line_takes_the_users_config_and_no_config_ignores_the_datas(tmp_path):
    data = tmp_path / "ds"
    masks = [organic_mask((16, 16), classes=(0, 1), seed=index) for index in range(2)]
    paired_dataset(data, ["0", "1"], masks)
    (data / "train.csv").write_text("image,label\nimages/0.png,cat\nimages/1.png,dog\n", encoding="utf-8")
    mine = tmp_path / "mine.toml"
    mine.write_text('[audit]\nformat = "csv"\n', encoding="utf-8")
    given = CliRunner().invoke(main, ["detect", str(data), "--config", str(mine), "-f", "json"])
    assert given.exit_code == 0, given.output
    [entry] = json.loads(given.output)
    assert [d["layout"] for d in entry["datasets"]] == ["csv"] and str(mine) in entry["configs"][0]
    (data / "labelguard.toml").write_text('[audit]\nformat = "csv"\n', encoding="utf-8")
    ignored = CliRunner().invoke(main, ["detect", str(data), "--no-config", "-f", "json"])
    [entry] = json.loads(ignored.output)
    assert [d["layout"] for d in entry["datasets"]] == ["paired"] and entry["configs"] == []


def test_a_layout_hint_of_the_data_never_makes_the_audit_skip_the_labels(tmp_path):
    data = tmp_path / "ds"
    masks = [organic_mask((16, 16), classes=(0, 1), seed=index) for index in range(4)]
    for mask in masks:
        mask[:3] = 9
    paired_dataset(data, [str(index) for index in range(4)], masks)
    before = run(str(data), "--num-classes", "2", "-f", "json")
    assert before.exit_code == 1 and json.loads(before.stdout)["summary"]["codes"]["LG201"] == 4

    # An ImageFolder hint would audit images/ and masks/ as two classes: "No findings".
    config = data / "labelguard.toml"
    config.write_text('[audit]\nformat = "imagefolder"\n', encoding="utf-8")
    result = run(str(data), "--num-classes", "2", "-f", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["summary"]["codes"]["LG201"] == 4 and report["summary"]["layouts"] == ["paired"]
    assert report["summary"]["configs"] == [{"path": str(config), "trusted": False, "applied": [],
                                             "refused": ["audit.format"]}]
    [warning] = report["summary"]["notes"]
    assert warning.startswith(f"{config}: audit.format = 'imagefolder' was not applied to {data}: the imagefolder "
                              "layout's detection does not take it")
    assert f"the layout detected there was used instead ({data}: paired)" in warning
    assert f"labelguard: warning: {warning}" in result.stderr

    # The catch-all mask layout takes any folder: as a hint it only agrees with detection.
    config.write_text('[audit]\nformat = "masks"\n', encoding="utf-8")
    masks_hint = audit(data, LabelSpec(num_classes=2), workers=1, cache=False)
    assert masks_hint.layouts == ["paired"] and len([f for f in masks_hint.findings if f.code == "LG201"]) == 4
    assert [r.setting for r in use_of(masks_hint, "labelguard.toml").refused] == ["audit.format"]

    # A hint that the layout's detection takes applies; the user's own choice forces.
    config.write_text('[audit]\nformat = "paired"\n', encoding="utf-8")
    agreed = audit(data, LabelSpec(num_classes=2), workers=1, cache=False)
    assert agreed.layouts == ["paired"] and use_of(agreed, "labelguard.toml").applied == ("audit.format",)
    assert not any("audit.format" in note for note in agreed.notes)
    forced = run(str(data), "--num-classes", "2", "--format", "imagefolder", "-f", "json")
    assert json.loads(forced.stdout)["summary"]["layouts"] == ["imagefolder"]
    mine = tmp_path / "mine.toml"
    mine.write_text('[audit]\nformat = "imagefolder"\n', encoding="utf-8")
    given = audit(data, LabelSpec(num_classes=2), config_file=str(mine), workers=1, cache=False)
    assert given.layouts == ["imagefolder"]


# ---- the user's own config ------------------------------------------------------------------

def test_a_config_given_with_config_applies_and_every_format_names_it(tmp_path):
    data = bad_masks(tmp_path / "dataset" / "masks", 2).parent
    own = tmp_path / "mine.toml"
    own.write_text('[labels]\nnum_classes = 3\n\n[audit]\nfail_on = "never"\n\n[severity]\nLG201 = "warning"\n',
                   encoding="utf-8")
    text = run(str(data), "--config", str(own))
    assert text.exit_code == 0, text.output  # fail_on = "never" is the user's choice
    assert "result:    0 errors, 2 warnings" in text.stdout
    assert (f"config:    {own} (given with --config): applied labels.num_classes, audit.fail_on, "
            "severity.LG201\n") in text.stdout and "warning:" not in text.stderr
    entry = {"path": str(own), "trusted": True, "applied": ["labels.num_classes", "audit.fail_on", "severity.LG201"],
             "refused": []}
    assert json.loads(run(str(data), "--config", str(own), "-f", "json").stdout)["summary"]["configs"] == [entry]
    sarif = json.loads(run(str(data), "--config", str(own), "-f", "sarif").stdout)
    assert sarif["runs"][0]["properties"]["configs"] == [entry]
    junit = run(str(data), "--config", str(own), "-f", "junit").stdout
    assert f'<property name="config {own}" value="{own} (given with --config): applied' in junit

    # A found config's refusals are warnings in each format too.
    (data / "labelguard.toml").write_text('[audit]\nfail_on = "never"\n', encoding="utf-8")
    sarif = json.loads(run(str(data), "--num-classes", "3", "-f", "sarif").stdout)
    [notice] = [n for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"] if n["level"] == "warning"]
    assert "audit.fail_on" in notice["message"]["text"]
    github = run(str(data), "--num-classes", "3", "-f", "github").stdout
    assert "::warning title=labelguard config::" in github and "audit.fail_on" in github
    if available("matplotlib"):
        html = run(str(data), "--num-classes", "3", "-f", "html").stdout
        assert "<td>config</td>" in html and "not applied: audit.fail_on" in html


def test_the_library_trusts_config_file_and_not_the_config_it_finds(tmp_path):
    data = bad_masks(tmp_path / "dataset" / "masks", 2).parent
    config = data / "labelguard.toml"
    config.write_text('[severity]\nLG201 = "info"\n', encoding="utf-8")
    found = audit(data, LabelSpec(num_classes=3), workers=1)
    assert {f.severity for f in found.findings} == {Severity.ERROR}
    assert [(u.trusted, u.refused[0].setting) for u in found.configs] == [(False, "severity.LG201")]
    given = audit(data, LabelSpec(num_classes=3), config_file=str(config), workers=1)
    assert {f.severity for f in given.findings} == {Severity.INFO}
    assert [(u.trusted, u.applied) for u in given.configs] == [(True, ("severity.LG201",))]
    assert not any("found with the data" in note for note in given.notes)
