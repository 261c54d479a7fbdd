"""Golden files: the text report of ``labelguard demo`` and the JSON report of each demo set.

The expected outputs are in ``tests/golden/``. A change to what a report says shows up here
as a diff; when the change is intended, regenerate every golden file with one command and
review the diff before committing it::

    LABELGUARD_REGEN_GOLDEN=1 PYTHONPATH=src python -m pytest -q -p no:cacheprovider tests/test_golden.py tests/test_ci_formats.py

The demo is written into a temporary folder and audited from inside it, so report paths are
relative ("demo/voc_seg/..."); absolute paths of that folder are replaced by ``<tmp>`` and
the tool version by ``<version>``, so the files hold only what the report itself decides.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from labelguard._version import __version__
from labelguard.cli import main

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("LABELGUARD_REGEN_GOLDEN") == "1"
# The demo sets and the audit command the demo runs on each.
SETS = {
    "swin_unet": ["demo/swin_unet", "--list", "demo/swin_unet/lists/train.txt"],
    "voc_seg": ["demo/voc_seg"],
    "binary": ["demo/binary"],
}


def _normalised(text: str, tmp_path: Path) -> str:
    for folder in {str(tmp_path), os.path.realpath(tmp_path)}:
        text = text.replace(folder, "<tmp>")
    return text


def _compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
        pytest.skip(f"regenerated {path.relative_to(Path(__file__).parent.parent)}")
    if not path.exists():
        pytest.fail(f"{path} is missing: run with LABELGUARD_REGEN_GOLDEN=1 (see this module's docstring)")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(list(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            f"golden/{name}", "actual"))[:80])
        pytest.fail(f"the report differs from golden/{name} (regenerate with LABELGUARD_REGEN_GOLDEN=1 "
                    f"if the change is intended):\n{diff}", pytrace=False)


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """The demo datasets written under ``tmp_path/demo``, with ``tmp_path`` as the current folder."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["demo", "demo"])
    assert result.exit_code == 0, result.output
    return result.output


def test_demo_text_report(demo, tmp_path):
    pytest.importorskip("matplotlib", reason="the demo's text ends naming its HTML report (labelguard[html])")
    _compare("demo.txt", _normalised(demo, tmp_path))


@pytest.mark.parametrize("name", sorted(SETS))
def test_demo_json_report(demo, tmp_path, name):
    result = CliRunner().invoke(main, ["audit", *SETS[name], "-f", "json", "--no-progress", "--workers", "1"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["tool"]["version"] == __version__
    report["tool"]["version"] = "<version>"
    _compare(f"demo_{name}.json", _normalised(json.dumps(report, indent=2) + "\n", tmp_path))
