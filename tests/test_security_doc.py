"""docs/security.md: every threat row names a defence and the tests that cover it, and each
test it names exists."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "security.md"
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def threat_rows() -> list[list[str]]:
    """The rows of the threat tables (a table whose header begins with "threat"); other
    tables (the read limits) are not threats."""
    rows = []
    in_threats = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| "):
            in_threats = False
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if cells[0] == "threat":
            in_threats = True
        elif in_threats and not cells[0].startswith("---"):
            rows.append(cells)
    return rows


def test_every_threat_has_a_defence_and_a_test():
    rows = threat_rows()
    assert rows
    for cells in rows:
        assert len(cells) == 3 and all(cells), cells
        assert TEST.search(cells[2]), f"no `tests/...py::name` in the test column of: {cells[0]}"


def test_every_test_the_page_names_exists():
    named = TEST.findall(DOC.read_text(encoding="utf-8"))
    missing = [f"{path}::{name}" for path, name in named
               if not (REPO / path).is_file() or f"def {name}(" not in (REPO / path).read_text(encoding="utf-8")]
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"
