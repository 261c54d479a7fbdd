"""The generated rule reference in docs/ must match the registry (the tests docs/security.md
names are checked by test_security_doc.py)."""

import re
from pathlib import Path

from labelguard.core.registry import rules_markdown
import labelguard.checks  # noqa: F401

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_rules_reference_is_current():
    assert DOCS.read_text(encoding="utf-8") == rules_markdown(), (
        "docs/rules.md is stale: regenerate it with `labelguard rules --markdown > docs/rules.md`"
    )

