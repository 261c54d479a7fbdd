"""The documentation site (mkdocs.yml, docs/) builds with warnings as errors: every page is in
the navigation, every link and anchor between pages resolves, and a link out of docs/ (to a
repository file the site does not hold) fails the build instead of giving a dead page."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("mkdocs", reason="the docs site needs mkdocs and mkdocs-material (the test extra)")
pytest.importorskip("material", reason="the docs site's theme is mkdocs-material (the test extra)")

REPO = Path(__file__).resolve().parents[1]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    # The site goes to tmp_path: nothing is written into the checkout (conftest.py fails a run that does).
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300, env=env)


def _nav_pages(nav: list) -> list[str]:
    pages = []
    for entry in nav:
        for value in (entry.values() if isinstance(entry, dict) else [entry]):
            pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def _copy(tmp_path: Path) -> Path:
    """A copy of the site's sources, to break on purpose."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path / "mkdocs.yml"


def test_the_site_builds_with_warnings_as_errors_and_holds_every_page(tmp_path):
    done = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_pages(config["nav"])
    assert sorted(pages) == sorted(path.name for path in (REPO / "docs").glob("*.md"))
    for page in pages:
        built = tmp_path / "site" / ("index.html" if page == "index.md" else page[:-3] + "/index.html")
        assert built.is_file(), page
    # the pages the suite reads by path keep their place (tests/test_docs.py, tests/test_meta.py)
    assert {"rules.md", "checks.md", "security.md", "performance.md"} <= set(pages)


def test_the_build_needs_no_network():
    # A plugin that fetches (social cards, privacy's downloads) or the theme's web fonts would
    # make the build depend on the network: search is the only plugin and fonts are off.
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["plugins"] == ["search"] and config["theme"]["font"] is False


@pytest.mark.parametrize("link", ["[gone](no-such-page.md)", "[a section](spec.md#no-such-section)",
                                  "[the script](../benchmarks/bench_s3.py)"])
def test_a_broken_link_fails_the_build(tmp_path, link):
    config = _copy(tmp_path)
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + f"\nSee {link}.\n", encoding="utf-8")
    done = _build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "index.md" in done.stdout + done.stderr


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path):
    config = _copy(tmp_path)
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    done = _build(config, tmp_path / "site")
    assert done.returncode != 0 and "orphan.md" in done.stdout + done.stderr
