"""A code's own examples as the tests of ``tests/rules/test_lgNNN.py``: each ``Example`` of the
code's rules is written to real files and audited; for a ``mask`` rule the guard runs too (one
that is not ``files_only``), the example's label array is also checked as the target tensor
``guard()`` sees, and must give the same verdict. (The class-id rules the guard runs, LG102 and
LG103, are checked on tensors in ``tests/torch/``.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import labelguard.rules  # noqa: F401  (registers every code)
from labelguard.core.rules import Example, Rule, all_rules
from labelguard.core.spec import LabelSpec
from rule_examples import audit_example


def examples_of(code: str):
    """``@examples_of("LG201")``: parametrize a test over (rule, example) of every rule of the code."""
    cases = [pytest.param(r, e, id=f"{r.apply.__name__}-{'fail' if e.fails else 'pass'}-{i}")
             for r in all_rules() if r.code == code for i, e in enumerate(r.examples)]
    assert cases, f"{code} has no rule with examples"  # (an empty parametrization would pass unseen)
    return pytest.mark.parametrize("registered, example", cases)


def proves(registered: Rule, example: Example, tmp_path: Path) -> None:
    """The example's verdict holds in the audit of its files and, where the guard runs the
    rule, on its label array as a target."""
    report = audit_example(example, tmp_path)
    assert report.errors == []
    reported = [f for f in report.findings if f.code == registered.code]
    if example.fails:
        assert reported, f"{registered.__name__}: {example.description}: no {registered.code}"
    else:
        assert not reported, f"{registered.__name__}: {example.description}: {[f.message for f in reported]}"
    array = _target_of(registered, example)
    if array is not None:
        from labelguard.torch._targets import TargetRules

        at_run_time = [f for f in TargetRules(LabelSpec(**example.spec)).check("sample 0", array)
                       if f.code == registered.code]
        assert bool(at_run_time) == example.fails, (registered.__name__, example.description, at_run_time)


def _target_of(registered: Rule, example: Example) -> np.ndarray | None:
    """The label array of an example of one mask file, when the guard runs the rule (and torch
    is installed); None otherwise."""
    if registered.scope != "mask" or registered.files_only or example.options:
        return None
    pytest.importorskip("torch")
    files = example.files()
    if len(files) != 1:
        return None
    content = next(iter(files.values()))
    if isinstance(content, tuple):
        content = content[1]
    return content if isinstance(content, np.ndarray) and content.ndim == 2 else None
