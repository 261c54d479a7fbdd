"""What is legal: LabelSpec.legal / is_legal against a naive reading of the spec's fields,
ValueSet against Python sets, and the numbers a spec cannot hold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from labelguard.cli import main
from labelguard.core.spec import LabelSpec, ValueSet
from labelguard.core.values import violations
from labelguard.errors import SpecError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
EDGES = [0, 1, 2, 254, 255, 256, -1, -2, -100, INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1]
SPEC_NUMBERS = st.one_of(st.integers(-300, 300), st.sampled_from(EDGES), st.integers(INT64_MIN, INT64_MAX))
COUNTS = st.one_of(st.integers(1, 300), st.sampled_from([255, 256, 100_000_000, INT64_MAX]),
                   st.integers(1, INT64_MAX))


@st.composite
def specs(draw) -> LabelSpec:
    """Specs of every shape: a count, explicit values (non-contiguous, negative, huge), a class
    list alone, or a class list with a count of another length (the count decides)."""
    shape = draw(st.sampled_from(["count", "values", "values and count", "classes", "classes and count"]))
    fields: dict = {}
    if "values" in shape:
        fields["values"] = tuple(draw(st.lists(SPEC_NUMBERS, min_size=1, max_size=8, unique=True)))
    if "classes" in shape:
        fields["classes"] = tuple(f"c{i}" for i in range(draw(st.integers(1, 12))))
    if "count" in shape:
        low = len(fields.get("values", ()))
        fields["num_classes"] = draw(COUNTS.filter(lambda n: n >= low))
    fields["ignore"] = tuple(draw(st.lists(SPEC_NUMBERS, max_size=3, unique=True)))
    fields["reduce_zero_label"] = draw(st.booleans())
    return LabelSpec(**fields)


def naive_legal(value: int, spec: LabelSpec, reduce: bool) -> bool:
    """The spec's rule read straight from its fields, one Python int at a time: explicit
    values, else the count (num_classes, else the class list) from 0; ignore values legal;
    mmsegmentation's reduce_zero_label sends 0 to 255, v to v - 1, and 255 is then ignored."""
    if spec.values is not None:
        classes = set(spec.values)
    else:
        count = spec.num_classes if spec.num_classes is not None else len(spec.classes)
        classes = range(count)  # membership of a range is arithmetic: no list of it is made
    if reduce and spec.reduce_zero_label:
        if value in (0, 255):
            return True
        value -= 1
        if value == 255:
            return True
    return value in classes or value in spec.ignore


def exact(element) -> int | None:
    """A Python scalar of an array as the integer it is; None for a fraction, NaN or infinity."""
    if isinstance(element, float):
        return int(element) if math.isfinite(element) and element.is_integer() else None
    return int(element)


def near(spec: LabelSpec) -> list[int]:
    """The values where a rule would slip: the edges of every number of the spec, and of int64."""
    numbers = list(spec.values or ()) + list(spec.ignore) + [spec.effective_num_classes or 0]
    around = [n + d for n in numbers for d in (-2, -1, 0, 1, 2)]
    wrapped = [n + (1 << 64) for n in around if n < 0]  # the uint64 that an int64 cast turns into n
    return around + wrapped + EDGES + [INT64_MAX + 1, INT64_MAX + 2, (1 << 64) - 1, INT64_MIN - 1, 10 ** 30, -(10 ** 30)]


@st.composite
def value_arrays(draw, spec: LabelSpec) -> np.ndarray:
    """Arrays of every numeric dtype holding values near the spec's edges and anywhere else:
    negatives, uint64 past int64, Python ints past any dtype (object arrays), fractions, NaN."""
    dtype = np.dtype(draw(st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                           np.int64, np.uint64, np.float32, np.float64, np.bool_, object])))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=6))
    candidates = near(spec)
    if dtype == object:
        elements = st.one_of(st.sampled_from(candidates), st.integers())
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        inside = [v for v in candidates if info.min <= v <= info.max]
        elements = st.one_of(st.sampled_from(inside), st.integers(int(info.min), int(info.max)))
    elif dtype.kind == "f":
        width = dtype.itemsize * 8
        representable = [dtype.type(v).item() for v in candidates]
        elements = st.one_of(st.sampled_from(representable + [0.5, -1.5, 254.5]),
                             st.floats(width=width, allow_nan=True, allow_infinity=True))
    else:
        elements = st.booleans()
    return draw(hnp.arrays(dtype, shape, elements=elements))


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_legal_agrees_with_a_naive_reading_of_the_spec(data):
    spec = data.draw(specs(), label="spec")
    reduce = data.draw(st.booleans(), label="reduce")
    array = data.draw(value_arrays(spec), label="values")
    got = spec.legal(array, reduce=reduce)
    assert got.shape == array.shape and got.dtype == np.bool_
    expected = [exact(v) is not None and naive_legal(exact(v), spec, reduce) for v in array.reshape(-1).tolist()]
    assert got.reshape(-1).tolist() == expected
    assert [spec.is_legal(v, reduce=reduce) for v in array.reshape(-1)] == expected


@settings(max_examples=300, deadline=None)
@given(specs(), st.lists(st.integers(), max_size=12))
def test_is_legal_on_any_python_int(spec, values):
    values += near(spec)
    for reduce in (True, False):
        assert [spec.is_legal(v, reduce=reduce) for v in values] == [naive_legal(v, spec, reduce) for v in values]


@settings(max_examples=300, deadline=None)
@given(specs(), st.lists(st.integers(-300, 300), max_size=12))
def test_ignored_values_are_legal_and_are_what_the_loss_ignores(spec, values):
    for value in values + near(spec):
        seen = spec.loss_value(value)
        assert spec.is_ignored(value) == (seen in spec.ignore or (spec.reduce_zero_label and seen == 255))
        if spec.is_ignored(value):
            assert spec.is_legal(value)
        assert spec.is_ignored(value, reduce=False) == (value in spec.ignore)


def test_a_spec_that_says_nothing_forbids_nothing():
    spec = LabelSpec()
    assert not spec.is_known and spec.allowed_values() is None and spec.legal_values() is None
    assert spec.is_legal(-7) and spec.legal(np.array([[-7, 10 ** 9]])).all()


# ---- ValueSet ------------------------------------------------------------------------------

SMALL = st.integers(-40, 40)


@settings(max_examples=300, deadline=None)
@given(st.lists(SMALL, max_size=12), SMALL, SMALL, st.lists(SMALL, max_size=4), st.integers(-3, 3))
def test_a_value_set_is_the_set_it_describes(values, start, stop, more, by):
    members = set(values) | set(range(start, stop))
    value_set = ValueSet.of(values, start=start, stop=stop)
    assert list(value_set) == sorted(members)
    assert value_set.size == len(value_set) == len(members) and bool(value_set) == bool(members)
    assert value_set == members and value_set == ValueSet.of(sorted(members))
    assert value_set.is_interval == (not members or members == set(range(min(members), max(members) + 1)))
    assert (value_set.lowest, value_set.highest) == ((min(members), max(members)) if members else (None, None))
    assert all((v in value_set) == (v in members) for v in range(-45, 46))
    assert value_set.contains(np.arange(-45, 46)).tolist() == [v in members for v in range(-45, 46)]
    assert value_set | more == members | set(more) and set(more) | value_set == members | set(more)
    assert value_set.shifted(by) == {v + by for v in members}


def test_a_value_set_of_a_huge_interval_is_two_numbers():
    value_set = ValueSet.of((255, -1), start=0, stop=100_000_000)
    assert value_set == ValueSet(-1, 100_000_000, frozenset())
    assert value_set.size == 100_000_001 and value_set.highest == 99_999_999
    assert 99_999_999 in value_set and 100_000_000 not in value_set and 1.5 not in value_set
    assert 3.0 in value_set and "3" not in value_set and None not in value_set


# ---- the spec's legality, by example -------------------------------------------------------

def test_reduce_zero_label_shifts_the_legal_values():
    spec = LabelSpec(num_classes=3, reduce_zero_label=True)
    assert [v for v in range(-3, 300) if spec.is_legal(v)] == [0, 1, 2, 3, 255, 256]
    assert [v for v in range(-3, 300) if spec.is_legal(v, reduce=False)] == [0, 1, 2]
    assert spec.legal_values() == {0, 1, 2, 3, 255, 256}


def test_the_count_decides_when_a_class_list_disagrees():
    longer = LabelSpec(classes=("a", "b", "c", "d"), num_classes=2)
    shorter = LabelSpec(classes=("a",), num_classes=3)
    assert longer.legal(np.array([0, 1, 2, 3])).tolist() == [True, True, False, False]
    assert shorter.legal(np.array([0, 1, 2, 3])).tolist() == [True, True, True, False]
    assert longer.describe().startswith("[0, 2)") and shorter.describe().startswith("[0, 3)")


def test_explicit_values_keep_their_description_and_contiguity():
    assert LabelSpec(values=(0, 1, 2)).is_contiguous()
    sparse = LabelSpec(values=(0, 1, 5), ignore=(255,))
    assert not sparse.is_contiguous()
    assert sparse.describe() == "{0, 1, 5} (num_classes=3, ignore_index=255)"
    assert sparse.allowed_values() == {0, 1, 5} and sparse.legal_values() == {0, 1, 5, 255}
    assert not LabelSpec(values=(1, 2, 3)).is_contiguous()


def test_violations_name_stored_and_seen_values_exactly_past_int64():
    values = np.array([1, 2, (1 << 64) - 1], dtype=np.uint64)
    bad = violations(values, np.array([5, 6, 7]), LabelSpec(num_classes=1, reduce_zero_label=True))
    assert bad.stored == (2, (1 << 64) - 1)
    assert bad.values == (1, (1 << 64) - 2) and bad.counts == (6, 7) and bad.negative == ()


def test_the_top_of_int64_is_a_legal_count():
    spec = LabelSpec(num_classes=INT64_MAX)
    assert spec.is_legal(INT64_MAX - 1) and not spec.is_legal(INT64_MAX)
    assert spec.legal(np.array([INT64_MAX - 1, INT64_MAX, -1], np.int64)).tolist() == [True, False, False]
    reduced = LabelSpec(num_classes=INT64_MAX, reduce_zero_label=True)
    assert reduced.legal(np.array([INT64_MAX, 1 << 63], np.uint64)).tolist() == [True, False]


# ---- numbers a spec cannot hold ----------------------------------------------------------

@pytest.mark.parametrize("fields, part", [
    ({"num_classes": 1 << 63}, "num_classes"),
    ({"num_classes": 10 ** 30}, "num_classes"),
    ({"values": (0, 1 << 64)}, "values"),
    ({"ignore": (INT64_MIN - 1,)}, "ignore_index"),
    ({"num_classes": 3, "background": 1 << 63}, "background"),
])
def test_a_number_past_int64_is_a_spec_error(fields, part):
    with pytest.raises(SpecError, match=f"^{part} .* past what a label can hold"):
        LabelSpec(**fields)


def test_a_config_number_past_int64_is_a_spec_error():
    with pytest.raises(SpecError, match="values 18446744073709551616"):
        LabelSpec.from_mapping({"values": [0, 1 << 64]}, source="labelguard.toml")


def test_a_count_past_int64_on_the_command_line_is_a_usage_error(tmp_path):
    (tmp_path / "masks").mkdir()
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--num-classes", str(10 ** 20), "--no-config"])
    assert result.exit_code == 2
    assert "num_classes 100000000000000000000 is past what a label can hold" in result.output
    assert "Traceback" not in result.output
