"""The public surface: the exact names of each namespace, no name hiding its own module, and
one error hierarchy that every mistake a caller can make ends up in."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import labelguard
import labelguard.errors
from labelguard import LabelSpec, Severity
from labelguard._optional import available
from labelguard.errors import (
    LabelError,
    LabelguardError,
    MissingDependency,
    SpecError,
    UnsupportedError,
    UsageError,
)

SRC = Path(labelguard.__file__).parent

PUBLIC = {
    "labelguard": [
        "AuditOptions",
        "Finding",
        "LabelError",
        "LabelSpec",
        "LabelguardError",
        "MissingDependency",
        "Report",
        "Severity",
        "SpecError",
        "UnsupportedError",
        "UsageError",
        "__version__",
        "audit",
    ],
    "labelguard.explain": [
        "Assertion",
        "BatchRecord",
        "BatchReplay",
        "Explanation",
        "Facts",
        "FlightRecord",
        "FlightRecordError",
        "Frame",
        "Match",
        "RankedCause",
        "RecordSummary",
        "ReplayReport",
        "SampleReplay",
        "explain",
        "read_record",
        "replay",
    ],
    "labelguard.fix": [
        "FileChange",
        "FixError",
        "FixResult",
        "Harmonization",
        "UndoResult",
        "apply_mapping",
        "clean_list",
        "colors",
        "drop",
        "harmonize",
        "remap",
        "remap_ids",
        "rename",
        "undo",
    ],
    "labelguard.torch": [
        "CheckedLoss",
        "DivergenceWatch",
        "DroppedSample",
        "GuardedDataset",
        "GuardedIterableDataset",
        "NonFiniteError",
        "NonFiniteTracer",
        "PreflightError",
        "PreflightReport",
        "QuarantineRecord",
        "SampleError",
        "TargetMonitor",
        "audit_optimizer",
        "checked",
        "collate",
        "guard",
        "guard_collate",
        "preflight",
        "record",
        "safe_targets",
        "trace_nonfinite",
        "watch",
    ],
}
# labelguard.torch needs the torch extra; the other namespaces are always there.
NAMESPACES = [
    pytest.param(name, marks=pytest.mark.skipif(not available("torch"), reason="torch not installed"))
    if name == "labelguard.torch" else name
    for name in PUBLIC
]
# Submodules that are part of the API, imported on their own; every other implementation
# module of these packages is private (its name starts with "_").
PUBLIC_SUBMODULES = {"labelguard.torch": {"lightning"}, "labelguard.explain": set(), "labelguard.fix": set()}


def loaded_namespaces():
    return [importlib.import_module(name) for name in PUBLIC if name != "labelguard.torch" or available("torch")]


@pytest.mark.parametrize("name", NAMESPACES)
def test_each_namespace_exports_exactly_these_names(name):
    module = importlib.import_module(name)
    assert module.__all__ == PUBLIC[name]
    for attribute in module.__all__:
        assert hasattr(module, attribute), f"{name}.__all__ names {attribute}, which it lacks"


@pytest.mark.skipif(not available("torch"), reason="torch not installed")
def test_torch_names_are_shown_and_pickled_by_their_public_path():
    import labelguard.torch

    for attribute in labelguard.torch.__all__:
        assert getattr(labelguard.torch, attribute).__module__ == "labelguard.torch"


def test_no_public_name_hides_a_module_of_the_same_name():
    shadowed = set()
    for package in loaded_namespaces():
        for submodule in pkgutil.iter_modules(package.__path__):
            attribute = getattr(package, submodule.name, None)
            if attribute is not None and not inspect.ismodule(attribute):
                shadowed.add(f"{package.__name__}.{submodule.name}")
    assert shadowed == set()


def test_explain_is_the_subpackage_and_its_function_lives_in_it():
    import labelguard.explain as explain_package

    assert inspect.ismodule(labelguard.explain)
    assert explain_package is labelguard.explain
    assert callable(explain_package.explain)


@pytest.mark.parametrize("package", sorted(PUBLIC_SUBMODULES))
def test_implementation_modules_are_private(package):
    path = Path(importlib.util.find_spec(package).submodule_search_locations[0])
    public = {info.name for info in pkgutil.iter_modules([str(path)]) if not info.name.startswith("_")}
    assert public == PUBLIC_SUBMODULES[package]


# --- one error hierarchy --------------------------------------------------------------------


def public_errors():
    for package in loaded_namespaces():
        for attribute in package.__all__:
            value = getattr(package, attribute)
            if isinstance(value, type) and issubclass(value, BaseException):
                yield f"{package.__name__}.{attribute}", value


def test_every_public_error_is_a_labelguard_error():
    errors = dict(public_errors())
    assert {"labelguard.UsageError", "labelguard.fix.FixError", "labelguard.explain.FlightRecordError"} <= set(errors)
    assert [name for name, error in errors.items() if not issubclass(error, LabelguardError)] == []


def test_each_error_is_still_the_builtin_a_caller_may_catch():
    from labelguard.explain import FlightRecordError
    from labelguard.fix import FixError

    assert issubclass(UsageError, ValueError)
    assert issubclass(SpecError, UsageError)
    assert issubclass(UnsupportedError, TypeError)
    assert issubclass(MissingDependency, ImportError)
    for error in (LabelError, FixError, FlightRecordError):
        assert issubclass(error, ValueError)


def test_the_error_tree_in_the_docstring_names_every_public_error():
    tree = labelguard.errors.__doc__
    missing = [name for name, _ in public_errors() if not re.search(rf"\b{name.rsplit('.', 1)[1]}\b", tree)]
    assert missing == []


BUILTIN_RAISE = re.compile(r"\braise (ValueError|TypeError|KeyError|IndexError|LookupError|RuntimeError|Exception)\(")


def test_library_code_raises_no_builtin_error_for_a_user_mistake():
    """A user mistake raises a class of labelguard.errors; a broken invariant of labelguard
    itself keeps its built-in error and says ``# not a user mistake`` on the raise line."""
    offenders = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BUILTIN_RAISE.search(line) and "# not a user mistake" not in line
    ]
    assert offenders == []


# --- each mistake a caller can make, through the public API ---------------------------------


def test_an_unknown_layout_is_a_usage_error(tmp_path):
    from labelguard.layouts.base import AuditOptions

    with pytest.raises(UsageError, match="unknown format 'nope'; known: .*voc"):
        labelguard.audit(tmp_path, options=AuditOptions(format="nope"))


def test_a_spec_may_be_a_mapping_as_a_labels_table_is(tmp_path):
    from builders import write_png
    import numpy as np

    mask = np.zeros((8, 8), np.uint8)
    mask[1:3, 1:3] = 5
    write_png(tmp_path / "masks" / "a.png", mask)
    by_mapping = labelguard.audit(tmp_path, {"num_classes": 3, "ignore_index": [255]}, use_project_config=False,
                                  cache=False)
    by_spec = labelguard.audit(tmp_path, LabelSpec(num_classes=3, ignore=(255,)), use_project_config=False,
                               cache=False)
    assert [f.to_dict() for f in by_mapping.findings] == [f.to_dict() for f in by_spec.findings]
    assert [f.code for f in by_mapping.findings if f.code == "LG201"] == ["LG201"]


@pytest.mark.parametrize("spec, message", [
    ({"num_clases": 3}, "unknown label spec key num_clases"),
    ({"num_classes": "three"}, "num_classes must be an integer"),
    (3, "spec must be a LabelSpec or a mapping"),
])
def test_a_wrong_spec_argument_is_a_spec_error_not_a_builtin_one(tmp_path, spec, message):
    """``audit(p, {"num_classes": 3})`` raised a bare AttributeError."""
    with pytest.raises(SpecError, match=message):
        labelguard.audit(tmp_path, spec)


def test_options_may_be_a_mapping_of_their_fields_and_an_unknown_one_is_a_usage_error(tmp_path):
    from builders import write_png
    import numpy as np

    write_png(tmp_path / "a.png", np.zeros((8, 8), np.uint8))
    report = labelguard.audit(tmp_path, {"num_classes": 2}, options={"format": "masks"}, use_project_config=False,
                              cache=False)
    assert report.layouts == ["masks"]
    assert labelguard.AuditOptions(format="masks") == labelguard.AuditOptions(**{"format": "masks"})
    with pytest.raises(UsageError, match="unknown audit option fromat; known layout options: .*format"):
        labelguard.audit(tmp_path, options={"fromat": "voc"})


def test_a_report_writes_itself_in_every_format_to_a_string_a_path_or_a_stream(tmp_path):
    import io
    import json

    from builders import write_png
    import numpy as np

    write_png(tmp_path / "data" / "a.png", np.full((8, 8), 7, np.uint8))
    report = labelguard.audit(tmp_path / "data", {"num_classes": 2}, use_project_config=False, cache=False)
    assert json.loads(report.write("json"))["summary"]["codes"]["LG201"] == 1
    assert "LG201" in report.write()
    report.write("sarif", tmp_path / "report.sarif")
    assert json.loads((tmp_path / "report.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]
    stream = io.StringIO()
    assert report.write("junit", stream) is None and "<testsuite" in stream.getvalue()
    with pytest.raises(UsageError, match="unknown output format 'xml'"):
        report.write("xml")


def test_an_unknown_severity_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown severity 'loud': expected one of error, warning, info"):
        Severity.parse("loud")


def test_an_unknown_output_format_is_a_usage_error():
    from labelguard.output import get_formatter

    with pytest.raises(UsageError, match="unknown output format 'xml'; known: .*json"):
        get_formatter("xml")


def test_every_built_in_format_is_found_by_its_name():
    from labelguard.output import BUILTIN_FORMATS, format_names, get_formatter

    assert set(BUILTIN_FORMATS) <= set(format_names())
    for name in BUILTIN_FORMATS:
        assert get_formatter(name).name == name


def test_a_contradictory_spec_and_a_missing_config_are_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="num_classes=2"):
        LabelSpec(num_classes=2, values=(0, 1, 5))
    with pytest.raises(SpecError, match="cannot read config"):
        labelguard.audit(tmp_path, config_file=str(tmp_path / "missing.toml"))


def test_replay_with_a_reference_that_names_nothing_is_a_usage_error(tmp_path):
    from labelguard.explain import FlightRecordError, read_record, replay
    from labelguard.flight import FlightRecordWriter

    with pytest.raises(FlightRecordError, match="no flight record"):
        read_record(tmp_path / "missing.json")
    path = tmp_path / "flight.json"
    FlightRecordWriter(path, sync=True).handed(0, 0, [4], None)
    with pytest.raises(UsageError, match="expected MODULE:FUNCTION, got 'make_dataset'"):
        replay(path, "make_dataset")
    with pytest.raises(UsageError, match="no such file"):
        replay(path, str(tmp_path / "train.py") + ":make_dataset")
    (tmp_path / "train.py").write_text("make_dataset = 3\n")
    with pytest.raises(UsageError, match="is not callable"):
        replay(path, str(tmp_path / "train.py") + ":make_dataset")
    with pytest.raises(UsageError, match="has no attribute 'build'"):
        replay(path, str(tmp_path / "train.py") + ":build")


def test_fix_mistakes_are_fix_errors(tmp_path):
    from labelguard.fix import FixError, colors, remap

    with pytest.raises(FixError, match="not FROM:TO"):
        remap(tmp_path, "garbage")
    with pytest.raises(FixError, match="mode must be P or L"):
        colors(tmp_path, mode="X")


@pytest.mark.skipif(not available("torch"), reason="torch not installed")
def test_torch_mistakes_are_usage_or_unsupported_errors(tmp_path):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from labelguard.torch import checked, guard, record, watch

    dataset = TensorDataset(torch.zeros(4, 2), torch.zeros(4, dtype=torch.long))
    with pytest.raises(UnsupportedError, match="needs a dataset with __getitem__ or __iter__, got object"):
        guard(object(), num_classes=2)
    with pytest.raises(UsageError, match="on_error must be one of raise, skip, warn, got 'ignore'"):
        guard(dataset, num_classes=2, on_error="ignore")
    with pytest.raises(UsageError, match="already guarded"):
        guard(guard(dataset, num_classes=2), num_classes=2)
    with pytest.raises(UnsupportedError, match="unknown loss name 'dice_focal'"):
        guard(dataset, num_classes=2, loss="dice_focal")
    with pytest.raises(UnsupportedError, match="labelguard does not know the loss MSELoss"):
        checked(torch.nn.MSELoss())
    with pytest.raises(UsageError, match="input_range must be \\(low, high\\)"):
        guard(dataset, num_classes=2, input_range=(1.0,))
    with pytest.raises(UsageError, match="growth must be above 1"):
        watch(torch.nn.Linear(2, 2), growth=0.5)
    with pytest.raises(UsageError, match="keep must be at least 1, got 0"):
        record(DataLoader(dataset), tmp_path / "flight.json", keep=0)
