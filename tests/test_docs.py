"""The generated rule reference in docs/ must match the registry; the tests docs/security.md
names must exist."""

import re
from pathlib import Path

from labelguard.core.registry import rules_markdown
import labelguard.checks  # noqa: F401

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_rules_reference_is_current():
    assert DOCS.read_text(encoding="utf-8") == rules_markdown(), (
        "docs/rules.md is stale: regenerate it with `labelguard rules --markdown > docs/rules.md`"
    )


def test_every_test_named_in_the_security_document_exists():
    root = DOCS.parent.parent
    named = re.findall(r"(tests/[\w/]+\.py)::(\w+)", (DOCS.parent / "security.md").read_text(encoding="utf-8"))
    assert named
    missing = [f"{path}::{name}" for path, name in named
               if not (root / path).is_file() or f"def {name}(" not in (root / path).read_text(encoding="utf-8")]
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"
