import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from explain_fixtures import read_log  # noqa: E402


@pytest.fixture
def log_text():
    return read_log
