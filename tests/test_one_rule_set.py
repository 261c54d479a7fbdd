"""One rule set for the audit and the guard: a rule is one module of ``labelguard.rules``, and
the audit of files and ``labelguard.torch.guard`` both run it; a mask tensor and the same mask
in a file get the same findings."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import labelguard
from builders import write_png
from labelguard._audit import audit
from labelguard.core.findings import Finding
from labelguard.core.registry import define, REGISTRY
from labelguard.core.rules import rule, screened, unregister
from labelguard.core.spec import LabelSpec

torch = pytest.importorskip("torch")
from labelguard.torch import SampleError, guard  # noqa: E402
from labelguard.torch._targets import TargetRules  # noqa: E402

# The trial of CONTRIBUTING.md: a rule written as one new module, nothing else edited.
TRIAL_RULE = '''"""LG299 (a trial): a mask that holds one value only."""

from labelguard.core.registry import define
from labelguard.core.rules import Example, rule

SINGLE_VALUE = define(
    "LG299", "mask-single-value", "error",
    summary="a mask holds a single value",
    why="A trial rule.", bad="a mask of 2s only", good="a mask of 0s and 2s", fix="Re-export the mask.",
)


@rule(SINGLE_VALUE, "mask", (
    Example(True, "a mask of 2s", lambda: {"a.png": __import__("numpy").full((8, 8), 2, "uint8")}),
    Example(False, "a mask of 0s and 2s", lambda: {"a.png": __import__("numpy").eye(8, dtype="uint8") * 2}),
))
def single_value(sample, spec):
    if sample.values is None or len(sample.values) != 1:
        return ()
    return (SINGLE_VALUE.finding(sample.display, f"every pixel holds {int(sample.values[0])}"),)
'''

# Run in a fresh interpreter on the copy of the package: the audit of a folder, and the guard
# of a dataset of tensors; prints what each reported.
BOTH = '''
import json, subprocess, sys
import torch
from labelguard.torch import SampleError, guard
folder = sys.argv[1]
done = subprocess.run([sys.executable, "-m", "labelguard", "audit", folder, "--num-classes", "3", "-f", "json",
                       "--no-cache", "--no-config", "--no-progress"], capture_output=True, text=True)
audited = sorted(f["path"].rsplit("/", 1)[-1] for f in json.loads(done.stdout)["findings"] if f["code"] == "LG299")
dataset = [(torch.zeros(3, 8, 8), torch.full((8, 8), 2)), (torch.zeros(3, 8, 8), torch.eye(8, dtype=torch.long) * 2)]
guarded = []
for i in range(2):
    try:
        guard(dataset, num_classes=3)[i]
        guarded.append(None)
    except SampleError as error:
        guarded.append(error.code)
print(json.dumps({"audit": audited, "guard": guarded}))
'''


def test_a_rule_written_as_one_module_fires_in_the_audit_and_in_the_guard(tmp_path):
    copy = tmp_path / "src" / "labelguard"
    shutil.copytree(Path(labelguard.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rules" / "lg299.py").write_text(TRIAL_RULE, encoding="utf-8")
    data = tmp_path / "masks"
    write_png(data / "single.png", np.full((8, 8), 2, np.uint8))
    write_png(data / "mixed.png", np.eye(8, dtype=np.uint8) * 2)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(copy.parent), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", BOTH, str(data)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["audit"] == ["single.png"]
    assert found["guard"] == ["LG299", None]


@pytest.fixture
def trial_rule():
    """A rule of a test registered for the length of one test (its code too)."""
    check = define("LG298", "mask-single-value", "warning", summary="a mask holds a single value",
                   why="A test rule.", bad="2s only", good="0s and 2s", fix="Re-export the mask.")

    @rule(check, "mask")
    def single_value(sample, spec):
        if sample.values is None or len(sample.values) != 1:
            return ()
        return (check.finding(sample.display, f"every pixel holds {int(sample.values[0])}"),)

    try:
        yield check
    finally:
        unregister(single_value)
        del REGISTRY[check.code]


def test_a_rule_of_any_severity_is_run_on_the_guards_targets_and_turns_its_pre_screen_off(trial_rule):
    """The guard's target check (what ``guard()`` calls per target) runs the new rule: its
    pre-screen, which proves values legal, no longer skips a mask whose values are all legal."""
    rules = TargetRules(LabelSpec(num_classes=3))
    single = np.full((8, 8), 2, np.int64)
    assert screened("mask") is False and rules.clearly_legal(single) is False
    assert [(f.code, f.message) for f in rules.check("sample 0", single)] == [("LG298", "every pixel holds 2")]
    assert rules.check("sample 1", np.eye(8, dtype=np.int64) * 2) == []


def test_without_such_a_rule_the_pre_screen_passes_a_legal_mask():
    rules = TargetRules(LabelSpec(num_classes=3))
    assert screened("mask") is True
    assert rules.clearly_legal(np.full((8, 8), 2, np.int64)) is True
    assert rules.clearly_legal(np.full((8, 8), 3, np.int64)) is False


@pytest.mark.parametrize("array, spec", [
    (np.array([[0, 1], [2, 3]], np.uint8), {"num_classes": 3}),
    (np.array([[0, 255], [1, 1]], np.uint8), {"num_classes": 2}),
    (np.array([[0, 255], [1, 1]], np.uint8), {"num_classes": 2, "ignore_index": [255]}),
    (np.array([[0.0, 0.5], [1.0, np.nan]], np.float32), {"num_classes": 2}),
    (np.array([[1, 2], [2, 3]], np.int64), {"num_classes": 3}),
])
def test_a_mask_tensor_and_the_same_mask_in_a_file_get_the_same_value_findings(array, spec, tmp_path):
    """The guard runs the audit's rules: the codes and messages of the value rules are the same
    for a target tensor as for the file that holds it, and the guard raises the first error."""
    path = tmp_path / "data" / "a.npy"
    path.parent.mkdir()
    np.save(path, array)
    report = audit(str(tmp_path / "data"), spec, workers=1, cache=False)
    from_file = sorted((f.code, f.message) for f in report.findings if f.code in ("LG201", "LG204"))
    label_spec = LabelSpec(num_classes=spec["num_classes"], ignore=tuple(spec.get("ignore_index", ())))
    from_tensor = sorted((f.code, f.message) for f in TargetRules(label_spec).check(None, array)
                         if f.code in ("LG201", "LG204"))
    assert from_tensor == from_file
    assert bool(from_file) == ("ignore_index" not in spec)
    guarded = guard([(torch.zeros(1, 2, 2), torch.from_numpy(array))], **spec)
    if from_file:
        with pytest.raises(SampleError) as raised:
            guarded[0]
        assert any(code == raised.value.code and message in raised.value.message for code, message in from_file)
    else:
        guarded[0]


def finding_builders(relative: str, source: str, runtime_homes: dict[str, str]) -> list[str]:
    """Where the module at ``relative`` (under ``src/labelguard``) builds or rewrites a finding
    although it may not: outside ``rules/``, a call of ``Finding`` (under any name it is
    imported as, or as an attribute: ``findings.Finding(...)``), any use of a check's
    ``.finding`` (called, or handed on as in ``partial(CHECK.finding, ...)``) and a dataclass
    ``replace`` that sets a finding's fields; inside ``rules/``, a LG5xx check's ``.finding``
    used outside that code's own module (its owner looked up by its last name, so that
    ``lg502.NON_FINITE.finding`` counts as ``NON_FINITE.finding``)."""
    tree = ast.parse(source)
    in_rules = relative.startswith("rules/")
    finding_names = {"Finding"} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                                   for alias in node.names if alias.name == "Finding" and alias.asname}
    replace_names = {alias.asname or alias.name for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module == "dataclasses"
                     for alias in node.names if alias.name == "replace"}
    dataclass_modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                         for alias in node.names if alias.name == "dataclasses"}
    fields = {f.name for f in dataclasses.fields(Finding)}
    offenders = []
    for node in ast.walk(tree):
        where = f"{relative}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and node.attr == "finding" and isinstance(node.ctx, ast.Load):
            owner = ast.unparse(node.value)
            if not in_rules or runtime_homes.get(owner.rpartition(".")[2], relative) != relative:
                offenders.append(f"{where}: {owner}.finding")
        if not isinstance(node, ast.Call) or in_rules:
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in finding_names) or (
                isinstance(func, ast.Attribute) and func.attr == "Finding"):
            offenders.append(f"{where}: {ast.unparse(func)}(...)")
        is_replace = (isinstance(func, ast.Name) and func.id in replace_names) or (
            isinstance(func, ast.Attribute) and func.attr == "replace" and isinstance(func.value, ast.Name)
            and func.value.id in dataclass_modules)
        named = {k.arg for k in node.keywords if k.arg is not None}
        # A replace setting only a finding's fields rewrites a finding; ``path`` alone is left
        # out, since other records have one too (a config's use, an audit's task).
        if is_replace and named and named <= fields and named != {"path"}:
            offenders.append(f"{where}: {ast.unparse(func)}(..., {', '.join(sorted(named))}=...)")
    return offenders


def test_findings_are_made_by_rules_only():
    """A finding is built (``CHECK.finding(...)``, ``Finding(...)``) or rewritten
    (``replace(finding, message=...)``) only in ``labelguard.rules`` (and by ``Check.finding``
    and ``Finding``'s own methods); discovery, readers, fix, output and labelguard.torch build
    none. labelguard.torch measures the loss, the model and the optimizer and hands what it
    measured to the functions of ``rules/lg5NN.py``, so each LG5xx finding is built in the module
    of its code."""
    import labelguard as package

    root = Path(package.__file__).parent
    runtime_homes: dict[str, str] = {}  # each LG5xx check, as its module names it -> that module
    for path in sorted((root / "rules").glob("lg5*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        runtime_homes.update({node.targets[0].id: path.relative_to(root).as_posix() for node in tree.body
                              if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                              and getattr(node.value.func, "id", "") == "define"})
    assert len(runtime_homes) == 9
    offenders = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative not in ("core/registry.py", "core/findings.py"):
            offenders.extend(finding_builders(relative, path.read_text(encoding="utf-8"), runtime_homes))
    assert offenders == []


@pytest.mark.parametrize("relative, source", [
    ("torch/a.py", "from labelguard.core.findings import Finding as Made\nMade('LG201', 3, None, 'x')\n"),
    ("torch/a.py", "from labelguard.core import findings\nfindings.Finding('LG201', 3, None, 'x')\n"),
    ("torch/a.py", "import functools\nfrom labelguard.rules.lg201 import VALUE_OUTSIDE_SPEC as V\n"
                   "make = functools.partial(V.finding, 'a.png')\n"),
    ("torch/a.py", "import dataclasses\ndef f(finding):\n    return dataclasses.replace(finding, message='x')\n"),
    ("fix/a.py", "from dataclasses import replace as r\ndef f(finding):\n    return r(finding, code='LG1')\n"),
    ("rules/lg201.py", "from labelguard.rules import lg502\nlg502.NON_FINITE.finding(None, 'x')\n"),
    ("rules/lg201.py", "from labelguard.rules.lg502 import NON_FINITE\nNON_FINITE.finding(None, 'x')\n"),
])
def test_a_finding_built_outside_its_rule_is_found_however_it_is_written(relative, source):
    assert finding_builders(relative, source, {"NON_FINITE": "rules/lg502.py"}) != []


def test_a_rules_own_finding_and_a_replace_of_other_records_are_not_offences():
    assert finding_builders("rules/lg502.py", "NON_FINITE.finding(None, 'x')\n", {"NON_FINITE": "rules/lg502.py"}) == []
    assert finding_builders("_audit.py", "from dataclasses import replace\nreplace(config.use, path='a')\n"
                            "replace(options, format=None)\n", {}) == []


def test_a_new_rule_on_class_ids_is_seen_by_the_guard_on_a_vector_target():
    """The pre-screen of id vectors is the annotation rules' own: a rule without
    ``only_bad_values`` turns it off, and the guard's check runs it."""
    check = define("LG297", "repeated-id", "warning", summary="an id repeats", why="A test rule.", bad="1 1",
                   good="1 2", fix="None.")

    @rule(check, "annotation")
    def repeated_id(record, spec):
        labels = list(record.labels)
        return (check.finding(record.display, "an id repeats"),) if len(set(labels)) < len(labels) else ()

    rules = TargetRules(LabelSpec(num_classes=3))
    try:
        assert screened("annotation") is False
        assert rules.clearly_legal(np.array([1, 1])) is False
        assert [f.code for f in rules.check("sample 0", np.array([1, 1]))] == ["LG297"]
    finally:
        unregister(repeated_id)
        del REGISTRY[check.code]
    assert screened("annotation") is True and rules.clearly_legal(np.array([1, 1])) is True
