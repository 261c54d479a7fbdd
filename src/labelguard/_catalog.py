"""What ``labelguard`` lists about itself, shipped as a file generated from its registries.

``labelguard rules``, ``rule`` and ``formats`` print every check code with its documentation
and every dataset layout. Both registries are filled by importing the modules that define
them (every rule module, every layout module), and those import numpy, Pillow and the
readers: a quarter of a second before one line is printed. So the listings are read from
:data:`CATALOG`, a JSON file generated from the registries and shipped in the package::

    python -m labelguard._catalog --write     # the catalog, then docs/rules.md from it

(``python -m labelguard._catalog`` alone prints the catalog.) ``tests/test_docs.py`` keeps both
files equal to the registries: a new rule or layout that leaves them stale fails there with
the command above. Nothing reads the catalog to run a
check; the audit always uses the registries themselves.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, fields
from typing import Any

from labelguard.core.findings import Severity
from labelguard.core.registry import Check

# Check fields the catalog leaves out: the code is its key; the fix examples are functions
# (their descriptions ship as ``fix_example``).
NOT_SHIPPED = ("code", "fix_examples")
CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "catalog.json")


@dataclass(frozen=True)
class LayoutEntry:
    """A dataset layout as ``labelguard formats`` lists it."""

    name: str
    ceiling: float  # the highest confidence its detection gives
    capabilities: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class Catalog:
    """Every check code (code -> :class:`Check`) and every layout, most specific evidence first."""

    checks: dict[str, Check]
    layouts: list[LayoutEntry]


def catalog_text() -> str:
    """The catalog of the live registries as the JSON text :data:`CATALOG` holds (imports
    every rule and layout)."""
    import labelguard.rules  # noqa: F401  (registers every code)
    from labelguard.core.registry import REGISTRY
    from labelguard.layouts import LAYOUTS

    document: dict[str, Any] = {
        "checks": {code: {f.name: str(getattr(check, f.name)) for f in fields(Check) if f.name not in NOT_SHIPPED}
                   for code, check in sorted(REGISTRY.items())},
        "layouts": [{"name": layout.name, "ceiling": layout.ceiling, "capabilities": sorted(layout.capabilities),
                     "description": layout.description}
                    for layout in sorted(LAYOUTS.values(), key=lambda item: (-item.ceiling, item.name))],
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def shipped_catalog() -> Catalog:
    """The catalog as the package ships it, read without importing a rule or a layout."""
    with open(CATALOG, encoding="utf-8") as handle:
        document = json.load(handle)
    checks = {code: Check(code=code, **dict(entry, severity=Severity.parse(entry["severity"])))
              for code, entry in document["checks"].items()}
    return Catalog(checks, [LayoutEntry(**{**entry, "capabilities": tuple(entry["capabilities"])})
                             for entry in document["layouts"]])


def write_generated() -> list[str]:
    """Regenerate, in the checkout this package lies in, the two files generated from the
    registries: :data:`CATALOG`, then ``docs/rules.md`` from it (what ``labelguard rules
    --markdown`` prints); the paths written."""
    from labelguard.core.registry import rules_markdown

    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(CATALOG))))  # src/labelguard/data/
    docs = os.path.join(checkout, "docs", "rules.md")
    if not os.path.isdir(os.path.dirname(docs)):
        raise SystemExit(f"no docs/ folder at {os.path.dirname(docs)}: --write regenerates a checkout's files")
    for path, text in ((CATALOG, catalog_text), (docs, lambda: rules_markdown(shipped_catalog().checks))):
        content = text()
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
    return [CATALOG, docs]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        print("\n".join(write_generated()))
    else:
        sys.stdout.write(catalog_text())
