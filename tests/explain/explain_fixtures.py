"""Paths and readers shared by the explain tests."""

from pathlib import Path

LOGS = Path(__file__).parent / "logs"


def read_log(name: str) -> str:
    """A log of tests/explain/logs, decoded the way the CLI decodes files."""
    from labelguard.explain._extract import decode

    return decode((LOGS / name).read_bytes())
