"""Find the ``@pytest.mark.code(CODE, KIND)`` markers in test sources by reading them.

``python tests/code_markers.py LG201`` lists every test of a code: its file of examples and
own tests (``tests/rules/test_lg201.py``) and the tests elsewhere marked for it.

Reading the sources (rather than collecting tests) gives the meta-test the same answer
whether it runs alone or in the whole suite.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import Iterable

KINDS = ("fail", "pass")


def _is_code_marker(func: ast.expr) -> bool:
    """True for ``pytest.mark.code`` and ``mark.code`` (``from pytest import mark``)."""
    if not (isinstance(func, ast.Attribute) and func.attr == "code"):
        return False
    owner = func.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (
        isinstance(owner, ast.Name) and owner.id == "mark")


def markers_in_source(source: str, filename: str = "<test>") -> list[tuple[str, str, str]]:
    """(code, kind, "file:line") for every code marker call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call) and _is_code_marker(node.func):
            args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
            if len(args) == 2 and all(isinstance(a, str) for a in args):
                found.append((args[0], args[1], f"{filename}:{node.lineno}"))
    return found


def scan(files: Iterable[Path]) -> dict[str, dict[str, list[str]]]:
    """code -> kind -> places, over the given test files."""
    table: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in files:
        try:
            # From the last "tests" of the path: a parent folder may be called so too.
            last = len(path.parts) - 1 - path.parts[::-1].index("tests") if "tests" in path.parts else None
            shown = "/".join(path.parts[last:]) if last is not None else path.name
            markers = markers_in_source(path.read_text(encoding="utf-8"), shown)
        except SyntaxError:  # pytest reports that file's own collection error
            continue
        for code, kind, place in markers:
            table[code][kind].append(place)
    return table


def find_test_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("test_*.py") if "__pycache__" not in p.parts)


if __name__ == "__main__":
    import sys

    tests = Path(__file__).resolve().parent
    table = scan(find_test_files(tests))
    for code in (c.upper() for c in sys.argv[1:]):
        own = tests / "rules" / f"test_{code.lower()}.py"
        print(f"{code}: {own.relative_to(tests.parent) if own.exists() else 'no tests/rules file'}")
        for kind in KINDS:
            for place in table.get(code, {}).get(kind, []):
                print(f"  {kind}: {place}")
