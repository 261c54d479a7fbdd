"""Every fixable code proves its fix on its own examples (before -> fix -> after), as
sqlfluff's ``fix_str`` cases do: the files are written, the audit reports the code, the fix
is applied, the changed files are what the example says and the audit no longer reports it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import labelguard.fix
import labelguard.rules  # noqa: F401  (registers every code)
from labelguard._audit import audit
from labelguard.core.registry import FIX_SAFETY, REGISTRY
from labelguard.core.spec import LabelSpec
from rule_examples import write_example_file

CASES = [pytest.param(check, example, id=f"{code}-{i}")
         for code, check in sorted(REGISTRY.items()) for i, example in enumerate(check.fix_examples)]
assert CASES, "no registered code has a fix example"  # (an empty parametrization would pass unseen)


def read_back(path: Path, expected):
    if isinstance(expected, str):
        return path.read_text(encoding="utf-8")
    if path.suffix == ".npy":
        return np.load(path)
    return np.asarray(Image.open(path))


def codes_of(root: Path, example) -> list[str]:
    options = dict(example.options)
    if "lists" in options:
        options["lists"] = [str(root / name) for name in options["lists"]]
    report = audit(str(root), LabelSpec(**example.spec), options=options, use_project_config=False, workers=1,
                   cache=False)
    assert report.errors == []
    return [f.code for f in report.findings]


@pytest.mark.parametrize("check, example", CASES)
def test_a_fix_example_is_fixed_as_it_says(check, example, tmp_path):
    root = tmp_path / "data"
    for relative, content in example.before().items():
        write_example_file(root / relative, content)
    assert check.code in codes_of(root, example), f"{check.code}: {example.description}: not reported before the fix"
    arguments = dict(example.arguments)
    if example.call == "clean_list":
        arguments["lists"] = [str(root / name) for name in arguments["lists"]]
        result = labelguard.fix.clean_list(root=str(root), apply=True, **arguments)
    else:
        result = getattr(labelguard.fix, example.call)(str(root), apply=True, **arguments)
    assert result.changes, f"{check.code}: {example.description}: the fix changed nothing"
    for relative, expected in example.after().items():
        found = read_back(root / relative, expected)
        if isinstance(expected, str):
            assert found == expected, relative
        else:
            assert np.array_equal(found, expected), (relative, np.unique(found))
    assert check.code not in codes_of(root, example), f"{check.code}: {example.description}: still reported"


def test_every_code_with_a_fix_command_proves_it_and_no_other_code_claims_one():
    for code, check in REGISTRY.items():
        assert check.fix_safety in FIX_SAFETY
        if check.fix_safety in ("safe", "unsafe"):
            assert check.fix_command.startswith("labelguard fix "), code
            assert check.fix_examples, f"{code}: a fixable code without a fix example"
        else:
            assert not check.fix_examples and not check.fix_command, code
