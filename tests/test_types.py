"""The package's type annotations hold: mypy (pinned in the test extras, configured in
pyproject.toml) finds no error in src/, so `.ci/run` checks them with the tests. py.typed
ships: a user's type checker reads the same annotations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mypy_finds_no_error_in_the_package(tmp_path):
    # Its cache in tmp_path: a run leaves no file in the checkout (conftest.py fails one that does).
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), "src/labelguard"],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
