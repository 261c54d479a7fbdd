"""The generated files must match the registries: the rule reference in docs/ and the catalog
the package ships for `labelguard rules`/`rule`/`formats` (the tests docs/security.md names
are checked by test_security_doc.py)."""

from pathlib import Path

from labelguard._catalog import CATALOG, catalog_text, shipped_catalog
from labelguard.core.registry import REGISTRY, rules_markdown
from labelguard.layouts import LAYOUTS
import labelguard.rules  # noqa: F401

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_rules_reference_is_current():
    assert DOCS.read_text(encoding="utf-8") == rules_markdown(), (
        "docs/rules.md is stale: regenerate it with `PYTHONPATH=src python -m labelguard._catalog --write`"
    )


def test_shipped_catalog_is_current():
    assert Path(CATALOG).read_text(encoding="utf-8") == catalog_text(), (
        "src/labelguard/data/catalog.json is stale: regenerate it (and docs/rules.md) with "
        "`PYTHONPATH=src python -m labelguard._catalog --write`"
    )


def test_shipped_catalog_reads_back_as_the_registries():
    catalog = shipped_catalog()
    assert catalog.checks == REGISTRY
    assert [(entry.name, entry.ceiling, entry.capabilities, entry.description) for entry in catalog.layouts] == sorted(
        ((layout.name, layout.ceiling, tuple(sorted(layout.capabilities)), layout.description)
         for layout in LAYOUTS.values()),
        key=lambda entry: (-entry[1], entry[0]))


def test_one_command_regenerates_both_files(tmp_path, monkeypatch):
    """`python -m labelguard._catalog --write` writes the catalog, then docs/rules.md from it:
    in a checkout laid out as this one, the same two files the repository holds."""
    import labelguard._catalog as catalog_module

    catalog = tmp_path / "src" / "labelguard" / "data" / "catalog.json"
    catalog.parent.mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    monkeypatch.setattr(catalog_module, "CATALOG", str(catalog))
    written = catalog_module.write_generated()
    assert written == [str(catalog), str(tmp_path / "docs" / "rules.md")]
    assert catalog.read_text(encoding="utf-8") == Path(CATALOG).read_text(encoding="utf-8")
    assert (tmp_path / "docs" / "rules.md").read_text(encoding="utf-8") == DOCS.read_text(encoding="utf-8")
