import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
LOGS = HERE / "logs"

sys.path.insert(0, str(HERE))


def read_log(name: str) -> str:
    """A log of tests/explain/logs, decoded the way the CLI decodes files."""
    from labelguard.explain.extract import decode

    return decode((LOGS / name).read_bytes())


@pytest.fixture
def log_text():
    return read_log
