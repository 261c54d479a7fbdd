"""The source is lint-clean by the rules pyproject.toml selects (ruff: pycodestyle, pyflakes,
bugbear), checked by the suite so that `.ci/run` runs it with the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_source_passes_ruff():
    # --no-cache: a run leaves no file in the checkout (conftest.py fails one that does).
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
