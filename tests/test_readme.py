"""README.md is a front page that stays true: its quick start is the real output of its commands
(docs/quickstart.py writes it and fails here when it drifts), its set-up command is the one
`.ci/run` runs, its links lead to files of the checkout, and it stays short."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MOST_LINES = 260  # a front page: the rest lives in docs/


def _quickstart():
    spec = importlib.util.spec_from_file_location("quickstart", REPO / "docs" / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def _needs_the_quickstart_extras():
    # the guard block runs torch; the demo writes its HTML report with matplotlib
    pytest.importorskip("torch", reason="the quick start's guard example runs torch")
    pytest.importorskip("matplotlib", reason="the demo's HTML report needs labelguard[html]")


def test_the_quick_start_shows_what_its_commands_print_now():
    _needs_the_quickstart_extras()
    done = subprocess.run([sys.executable, str(REPO / "docs" / "quickstart.py"), "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, ("the quick start drifted; run `python docs/quickstart.py`:\n"
                                  + done.stdout + done.stderr)


def test_a_block_that_drifted_fails_the_check_with_a_diff(tmp_path, monkeypatch, capsys):
    _needs_the_quickstart_extras()
    quickstart = _quickstart()
    (tmp_path / "docs").mkdir()
    for page in {page for block in quickstart.BLOCKS for page in (block.page, *block.also)} - {"README.md"}:
        shutil.copy(REPO / page, tmp_path / page)
    edited = README.read_text(encoding="utf-8").replace("$ labelguard rule LG201\n", "$ labelguard rule LG201\nstale\n")
    (tmp_path / "README.md").write_text(edited, encoding="utf-8")
    monkeypatch.setattr(quickstart, "REPO", tmp_path)
    assert quickstart.main(["--check"]) == 1
    shown = capsys.readouterr().out
    assert "-stale" in shown and "README.md (as committed)" in shown
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == edited  # --check writes nothing


def test_blocks_are_replaced_between_their_markers_and_a_missing_marker_is_an_error():
    quickstart = _quickstart()
    page = "before\n<!-- quickstart:begin x -->\nold\n<!-- quickstart:end x -->\nafter\n"
    assert quickstart.filled(page, {"x": "new\n"}) == page.replace("old", "new")
    with pytest.raises(SystemExit, match="quickstart:begin y"):
        quickstart.filled(page, {"y": "new\n"})
    names = [block.name for block in quickstart.BLOCKS]
    for block in quickstart.BLOCKS:
        begin, end = quickstart.markers(block.name)
        for page in (block.page, *block.also):
            text = (REPO / page).read_text(encoding="utf-8")
            assert text.count(begin) == 1 and text.count(end) == 1, (block.name, page)
    assert len(names) == len(set(names))


def test_the_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MOST_LINES, f"README.md has {len(lines)} lines: move detail into docs/"


def test_every_relative_link_of_the_readme_leads_to_a_file_of_the_checkout():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [target.split("#")[0] for target in targets if not re.match(r"[a-z]+:|#", target)]
    assert relative, "the README links no page of docs/"
    missing = [target for target in relative if not (REPO / target).exists()]
    assert not missing, f"README.md links files that do not exist: {missing}"
    linked = {target for target in relative if target.startswith("docs/")}
    pages = {f"docs/{page.name}" for page in (REPO / "docs").glob("*.md")} - {"docs/index.md"}
    assert pages <= linked, f"README.md links no page {sorted(pages - linked)}"


def _code_lines(text: str) -> list[str]:
    return [line for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S) for line in block.splitlines()]


def test_the_two_set_up_commands_are_the_ones_ci_runs():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Set-up: the two commands"):]
    section = section[:section.index("\n## ", 1)]
    demo, tests = _code_lines(section)[:2]
    # with the html extra: the demo's HTML report, as the quick start shows it
    assert demo == "python -m pip install -e '.[html]' && labelguard demo"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert tests == ci


def test_the_common_causes_table_is_the_same_in_the_readme_and_on_the_site():
    def table(text: str) -> list[str]:
        section = text[text.index("## The common causes, and what to run"):]
        return [line for line in section.splitlines() if line.startswith("|")]

    readme = table(README.read_text(encoding="utf-8"))
    assert len(readme) > 5
    assert readme == table((REPO / "docs" / "index.md").read_text(encoding="utf-8"))
