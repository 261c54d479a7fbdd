"""The pre-commit hook and the GitHub Actions workflow of ``examples/ci``, run as written.

The hook's ``entry`` (from ``.pre-commit-hooks.yaml``) and every ``labelguard`` step of the
workflow run in a throwaway repository holding a dataset with its contract and baseline; the
``labelguard`` console script is run as ``python -m labelguard`` (the same entry point),
so the test runs this checkout's labelguard.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from builders import organic_mask, rgb_image, write_png

REPO = Path(__file__).resolve().parent.parent
CONTRACT = '[labels]\nvalues = [0, 1]\ndtype = "uint8"\nrequire_pairs = true\nmax_files_unreadable = 0\n'


def _command(line: str) -> list[str]:
    words = shlex.split(line)
    assert words[0] == "labelguard", line  # the console script of pyproject.toml
    return [sys.executable, "-m", "labelguard", *words[1:]]


def _run(line: str, cwd: Path, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_command(line), *files], cwd=cwd, capture_output=True, text=True, timeout=180)


def _pair(root: Path, name: str, bad: int | None = None) -> None:
    mask = organic_mask((32, 32), (0, 1), seed=len(name))
    if bad is not None:
        mask[0, :3] = bad
    write_png(root / "masks" / f"{name}.png", mask)
    write_png(root / "images" / f"{name}.png", rgb_image((32, 32)))


@pytest.fixture
def repository(tmp_path):
    """A repository with data/ (a contract, a baseline accepting one known finding) and docs/."""
    data = tmp_path / "data"
    _pair(data, "a")
    _pair(data, "b", bad=255)  # known: in the baseline
    (data / "labelguard.toml").write_text(CONTRACT, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("notes\n")
    written = _run("labelguard baseline write data -o data/labelguard-baseline.json", tmp_path)
    assert written.returncode == 0, written.stderr
    assert len(json.loads((data / "labelguard-baseline.json").read_text())["findings"]) == 1
    return tmp_path


def _hook() -> dict:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return hook


def _example_repo() -> dict:
    config = yaml.safe_load((REPO / "examples" / "ci" / "pre-commit-config.yaml").read_text(encoding="utf-8"))
    [repo] = config["repos"]
    return repo


def _example_hook() -> dict:
    [hook] = _example_repo()["hooks"]
    return hook


def _example_command() -> str:
    """The hook's command line as the example config runs it: the declared entry and the example's args."""
    return " ".join([_hook()["entry"], *_example_hook().get("args", [])])


def test_the_hook_audits_the_touched_dataset_with_its_baseline(repository):
    hook = _hook()
    assert hook["pass_filenames"] is True and hook["language"] == "python"
    known = _run(_example_command(), repository, "data/masks/a.png", "docs/notes.md")
    assert known.returncode == 0, known.stdout + known.stderr
    assert ("labelguard audit data --no-progress --output-format text --config data/labelguard.toml --baseline "
            "data/labelguard-baseline.json") in known.stderr
    assert "1 known finding of data/labelguard-baseline.json not listed" in known.stdout

    _pair(repository / "data", "c", bad=7)
    new = _run(_example_command(), repository, "data/masks/c.png", "data/images/c.png")
    assert new.returncode == 1
    assert "data/masks/c.png: label value 7" in new.stdout and "masks/b.png" not in new.stdout


def test_a_baseline_found_with_the_data_accepts_nothing_unless_the_hook_asks(repository):
    # The bare entry: the dataset's own baseline (it may have come with a downloaded dataset)
    # does not decide what passes; it is named as not used.
    done = _run(_hook()["entry"], repository, "data/masks/a.png")
    assert done.returncode == 1, done.stdout + done.stderr
    [command] = [line for line in done.stderr.splitlines() if line.startswith("labelguard audit ")]
    assert "--baseline" not in command and "--config" not in command
    assert "data/labelguard-baseline.json was not used" in done.stderr and "--trust-contracts" in done.stderr
    assert "data/masks/b.png: label value 255" in done.stdout


def test_a_contract_applies_whole_only_when_the_hook_trusts_contracts(repository):
    # A contract that loosens the verdict: found with the data it is data (spec only), and
    # its fail_on and severities are named as not applied; --trust-contracts makes them apply.
    loose = repository / "loose"
    _pair(loose, "a", bad=7)
    (loose / "labelguard.toml").write_text(CONTRACT + '\n[audit]\nfail_on = "never"\n\n[severity]\nLG201 = "info"\n',
                                           encoding="utf-8")
    bare = _run(_hook()["entry"], repository, "loose/masks/a.png")
    assert bare.returncode == 1, bare.stdout + bare.stderr
    assert "loose/masks/a.png: label value 7" in bare.stdout and "result:    1 error" in bare.stdout
    assert "audit.fail_on, severity.LG201" in bare.stderr and "not applied" in bare.stderr

    trusted = _run(f"{_hook()['entry']} --trust-contracts", repository, "loose/masks/a.png")
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert "labelguard audit loose --no-progress --output-format text --config loose/labelguard.toml" \
        in trusted.stderr
    assert "result:    0 errors, 0 warnings, 1 info" in trusted.stdout and "warning" not in trusted.stderr


def test_the_hook_leaves_files_outside_every_dataset_alone(repository):
    _pair(repository / "data", "c", bad=7)  # a breach the hook must not see: no data file is touched
    done = _run(_hook()["entry"], repository, "docs/notes.md")
    assert done.returncode == 0 and done.stdout == ""


def test_the_example_pre_commit_config_runs_the_declared_hook():
    # pre-commit installs the hook from labelguard's repository at `rev` (no package index),
    # and runs it as .pre-commit-hooks.yaml declares it: the example overrides nothing but args.
    repo = _example_repo()
    assert repo["repo"] != "local" and repo["rev"]
    assert _example_hook()["id"] == _hook()["id"]
    assert set(_example_hook()) <= {"id", "args"}


# A requirement naming labelguard, with or without extras, and nothing that says where it comes
# from (a path, a wheel, a URL after "@"): pip would look it up on a package index, where it is not.
BARE = re.compile(r"""^['"]?labelguard(\[[\w,]+\])?['"]?$""")


def _pip_requirements(text: str) -> list[str]:
    """The words after `pip install` on each line of ``text`` that are no option."""
    found = []
    for line in text.splitlines():
        _, pip, rest = line.partition("pip install ")
        if pip:
            rest = rest.replace("`", " ")
            try:
                words = shlex.split(rest, comments=True)
            except ValueError:  # a quote that the line does not close: prose, not a command
                words = rest.split()
            ends = [at for at, word in enumerate(words) if word in ("&&", "||", ";", "|")]
            found.extend(word for word in words[:min(ends, default=len(words))] if not word.startswith("-"))
    return found


def test_no_example_installs_labelguard_from_a_package_index():
    texts = {path: path.read_text(encoding="utf-8")
             for path in [*(REPO / "examples" / "ci").iterdir(), REPO / "README.md", *(REPO / "docs").glob("*.md")]}
    bare = [(path.name, word) for path, text in texts.items() for word in _pip_requirements(text) if BARE.match(word)]
    assert not bare, f"labelguard is installed from a package index, where it is not published: {bare}"
    assert not BARE.match("labelguard[html] @ git+<labelguard-git-url>@<tag>")
    assert BARE.match('"labelguard[html]"') and BARE.match("labelguard")
    for hook in _example_repo()["hooks"]:
        assert not any(BARE.match(dependency) for dependency in hook.get("additional_dependencies", []))


def _workflow_steps() -> list[str]:
    workflow = yaml.safe_load((REPO / "examples" / "ci" / "labelguard.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["audit"]["steps"]
    return [step["run"] for step in steps if str(step.get("run", "")).startswith("labelguard ")]


def test_the_workflow_passes_on_known_findings_and_writes_its_reports(repository):
    pytest.importorskip("matplotlib", reason="the workflow installs labelguard[html] for its HTML report")
    steps = _workflow_steps()
    assert len(steps) == 4
    for line in steps:
        done = _run(line, repository)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
    sarif = json.loads((repository / "labelguard.sarif").read_text())
    assert [r["baselineState"] for r in sarif["runs"][0]["results"]] == ["unchanged"]
    assert (repository / "labelguard-junit.xml").read_text().count("<failure") == 0
    assert "labelguard label audit report" in (repository / "labelguard-report.html").read_text()


def test_the_workflow_fails_a_pull_request_that_adds_a_finding(repository):
    data = repository / "data"
    _pair(data, "c", bad=7)
    write_png(data / "masks" / "wide.png", np.eye(32, dtype=np.uint16), mode="I;16")  # no image, 16-bit
    first, *_ = _workflow_steps()
    done = _run(first, repository)
    assert done.returncode == 1
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert any("file=data/masks/c.png" in line and "LG201" in line for line in errors)
    assert any("file=data/masks/wide.png" in line and "LG002" in line for line in errors)
    assert any("file=data/masks/wide.png" in line for line in done.stdout.splitlines() if "LG207" in line)
    assert not any("masks/b.png" in line for line in errors)


def test_a_mistyped_option_of_the_hook_is_a_usage_error_not_a_file(repository):
    done = _run(f"{_hook()['entry']} --trust-contract", repository, "data/masks/a.png")
    assert done.returncode == 2 and "no such option: --trust-contract" in done.stderr


def test_the_workflow_and_the_hook_give_one_verdict_on_a_contract_that_sets_severities(repository):
    """The repository's own contract applies whole in both gates: one that makes LG201 a warning
    passes a new 255 in CI as it does in the pre-commit hook (before, CI found the contract with the
    data, applied its spec only, and failed what the hook passed)."""
    data = repository / "data"
    (data / "labelguard.toml").write_text(CONTRACT + '\n[severity]\nLG201 = "warning"\n', encoding="utf-8")
    _pair(data, "c", bad=255)
    first, *_ = _workflow_steps()
    workflow = _run(first, repository)
    hook = _run(_example_command(), repository, "data/masks/c.png")
    assert workflow.returncode == hook.returncode == 0, (workflow.stdout, workflow.stderr, hook.stdout, hook.stderr)
    assert "was not applied" not in workflow.stderr + hook.stderr
