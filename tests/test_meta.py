"""The code table is complete: every registered code is in the catalog, documented and tested."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import labelguard.rules  # noqa: F401  (registers every code)
from code_markers import KINDS, find_test_files, markers_in_source, scan
from labelguard.core.registry import REGISTRY

TESTS = Path(__file__).resolve().parent
# The project's copy of the code catalog: an issue that implements a reserved code moves it
# into the table there.
CATALOG = TESTS.parent / "docs" / "checks.md"
CODES = sorted(REGISTRY)
MARKERS = scan(find_test_files(TESTS))


def catalog_rows() -> dict[str, str]:
    """code -> default severity, from the catalog's table."""
    rows = {}
    for line in CATALOG.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\|\s*(LG\d{3})\s*\|\s*(\w+)\s*\|", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


needs_catalog = pytest.mark.skipif(not CATALOG.is_file(), reason="docs/checks.md is absent")


@needs_catalog
@pytest.mark.parametrize("code", CODES)
def test_registered_code_is_in_the_catalog_with_its_severity(code):
    rows = catalog_rows()
    assert code in rows, f"{code} is registered but not in {CATALOG.name}: codes come from the catalog"
    assert str(REGISTRY[code].severity) == rows[code]


@needs_catalog
def test_every_catalog_code_is_registered():
    assert sorted(set(catalog_rows()) - set(REGISTRY)) == []


@pytest.mark.parametrize("code", CODES)
def test_code_is_documented(code):
    check = REGISTRY[code]
    for part in ("summary", "why", "bad", "good", "fix"):
        assert getattr(check, part).strip(), f"{code} has no {part}"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", check.name), f"{code} name {check.name!r} is not kebab-case"
    assert check.scope in ("file", "dataset", "runtime")


def example_kinds() -> dict[str, set[str]]:
    """code -> the kinds ("fail", "pass") its rules' own ``Example``s show: each is audited on
    real files by its code's ``tests/rules/test_lgNNN.py``, so it counts as a case."""
    from labelguard.core.rules import all_rules

    kinds: dict[str, set[str]] = {}
    for registered in all_rules():
        for example in registered.examples:
            kinds.setdefault(registered.code, set()).add("fail" if example.fails else "pass")
    return kinds


EXAMPLE_KINDS = example_kinds()


def missing_kinds(code: str, markers: dict, examples: dict[str, set[str]]) -> list[str]:
    """The kinds ("fail", "pass") of which ``code`` has neither a marked test nor an Example."""
    return [kind for kind in KINDS if not markers.get(code, {}).get(kind) and kind not in examples.get(code, set())]


@pytest.mark.parametrize("code", CODES)
def test_code_has_a_failing_and_a_passing_case(code):
    """A test marked with the code and the kind, or a rule's own Example of that kind."""
    missing = missing_kinds(code, MARKERS, EXAMPLE_KINDS)
    assert not missing, (
        f"{code} has no test marked @pytest.mark.code({code!r}, {missing[0]!r})"
        + (f" nor @pytest.mark.code({code!r}, {missing[1]!r})" if len(missing) > 1 else "")
        + ": add a test on real files that shows the code "
        + " and ".join({"fail": "firing on bad data", "pass": "silent on good data"}[k] for k in missing)
        + " (see tests/conftest.py), and no rule of it has an Example of that kind"
    )


def test_markers_name_registered_codes_and_known_kinds():
    wrong = [f"{place}: ({code!r}, {kind!r})" for code, kinds in MARKERS.items()
             for kind, places in kinds.items() for place in places
             if code not in REGISTRY or kind not in KINDS]
    assert wrong == []


def test_marker_scan_reads_every_form_of_marker():
    source = '''
import pytest
from pytest import mark

pytestmark = [pytest.mark.code("LG001", "fail")]

@pytest.mark.code("LG201", "fail")
@mark.code("LG201", "pass")
def test_a():
    pass

@pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.code("LG205", "pass"))])
def test_b(x):
    pass

@pytest.mark.slow
def test_c():
    pytest.mark.other("LG999", "fail")
'''
    found = sorted((code, kind) for code, kind, _ in markers_in_source(source))
    assert found == [("LG001", "fail"), ("LG201", "fail"), ("LG201", "pass"), ("LG205", "pass")]


def test_a_rules_examples_count_as_its_cases():
    """The meta-test used to ignore a rule's own examples: with no marked test at all, a code
    whose rules show both kinds by example misses nothing, one whose examples show only the
    failing kind misses "pass", and one with neither misses both."""
    both = next(code for code, kinds in EXAMPLE_KINDS.items() if kinds >= set(KINDS))
    assert missing_kinds(both, {}, EXAMPLE_KINDS) == []
    assert missing_kinds(both, {}, {both: {"fail"}}) == ["pass"]
    assert missing_kinds(both, {}, {}) == ["fail", "pass"]
    assert missing_kinds(both, {both: {"pass": ["a test"]}}, {both: {"fail"}}) == []


def runs_examples_of(code: str, source: str) -> bool:
    """Whether ``source`` has a test function decorated ``@examples_of(code)`` (a decorator,
    not the text in a comment or a string)."""
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
               and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "examples_of" and d.args
                       and isinstance(d.args[0], ast.Constant) and d.args[0].value == code
                       for d in node.decorator_list)
               for node in ast.walk(ast.parse(source)))


def test_runs_examples_of_needs_a_real_decorator():
    assert runs_examples_of("LG209", '@examples_of("LG209")\ndef test_a(example):\n    pass\n')
    assert not runs_examples_of("LG209", '# @examples_of("LG209")\ndef test_a(example):\n    pass\n')
    assert not runs_examples_of("LG209", 'NOTE = \'@examples_of("LG209")\'\n')
    assert not runs_examples_of("LG209", '@examples_of("LG201")\ndef test_a(example):\n    pass\n')


def test_every_code_of_a_rule_has_its_test_file_and_every_test_file_its_code():
    """``tests/rules/test_lgNNN.py`` holds a code's own tests (its examples first); the runtime
    codes of labelguard.torch (LG5xx), reported by no rule, are tested in ``tests/torch/``."""
    files = {p.stem[len("test_"):].upper() for p in (TESTS / "rules").glob("test_lg*.py")}
    from labelguard.core.rules import all_rules

    with_examples = {r.code for r in all_rules() if r.examples}
    unproved = sorted(code for code in with_examples & files
                      if not runs_examples_of(code, (TESTS / "rules" / f"test_{code.lower()}.py").read_text()))
    assert unproved == [], f"tests/rules files that do not run their code's examples: {unproved}"
    assert files <= set(REGISTRY), sorted(files - set(REGISTRY))
    assert sorted(code for code in REGISTRY if REGISTRY[code].scope != "runtime" and code not in files) == []
