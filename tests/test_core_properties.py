"""Property tests of the value rules (histogram, violations) and of Summary merging."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from labelguard.core.spec import LabelSpec
from labelguard.core.summary import EXAMPLES_KEPT, Summary
from labelguard.core.values import histogram, reduce_zero_label, violations

INTEGER_DTYPES = st.sampled_from([np.uint8, np.uint16, np.int8, np.int16, np.int32, np.int64, np.uint32, np.bool_])


@st.composite
def label_arrays(draw):
    """Integer arrays as masks come: long runs of few values, or noise over a wide range."""
    dtype = np.dtype(draw(INTEGER_DTYPES))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=24))
    if dtype == np.bool_:
        return draw(hnp.arrays(dtype, shape))
    info = np.iinfo(dtype)
    if draw(st.booleans()):
        palette = draw(st.lists(st.integers(info.min, info.max), min_size=1, max_size=5))
        runs = draw(st.lists(st.tuples(st.sampled_from(palette), st.integers(1, 40)), min_size=1, max_size=30))
        flat = np.concatenate([np.full(n, v, dtype=dtype) for v, n in runs])
        size = int(np.prod(shape))
        flat = np.resize(flat, size) if size else flat[:0]
        return flat.reshape(shape)
    return draw(hnp.arrays(dtype, shape, elements=st.integers(info.min, info.max)))


@settings(max_examples=300, deadline=None)
@given(label_arrays())
def test_histogram_matches_a_plain_count(array):
    values, counts = histogram(array)
    expected = Counter(int(v) for v in array.reshape(-1).tolist())
    assert values.dtype == np.int64 and counts.dtype == np.int64
    assert values.tolist() == sorted(expected)
    assert counts.tolist() == [expected[v] for v in sorted(expected)]


SPECS = st.builds(
    LabelSpec,
    num_classes=st.integers(1, 12),
    ignore=st.lists(st.sampled_from([255, -1, -100, 7]), max_size=2, unique=True).map(tuple),
    reduce_zero_label=st.booleans(),
) | st.builds(
    LabelSpec,
    values=st.lists(st.integers(-5, 300), min_size=1, max_size=6, unique=True).map(lambda v: tuple(sorted(v))),
    ignore=st.lists(st.sampled_from([255, -1]), max_size=1).map(tuple),
)


def legal(value: int, spec: LabelSpec) -> bool:
    """The spec's rule, as mmsegmentation applies reduce_zero_label: 0 -> 255, v -> v - 1,
    and 255 after the shift is what the loss ignores."""
    if spec.reduce_zero_label:
        value = 255 if value in (0, 255) else value - 1
        if value == 255:
            return True
    return value in spec.allowed_values() or value in spec.ignore


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.integers(-300, 1000), st.integers(1, 10_000), max_size=20), SPECS)
def test_violations_are_exactly_the_illegal_values(histo, spec):
    values = np.array(sorted(histo), dtype=np.int64)
    counts = np.array([histo[v] for v in sorted(histo)], dtype=np.int64)
    bad = violations(values, counts, spec)
    illegal = [v for v in sorted(histo) if not legal(v, spec)]
    if not illegal:
        assert bad is None
        return
    seen = [v + 1 for v in bad.values] if spec.reduce_zero_label else list(bad.values)
    assert seen == illegal
    assert list(bad.counts) == [histo[v] for v in illegal]
    assert bad.total == sum(histo[v] for v in illegal)
    assert all(v < 0 for v in bad.negative) and set(bad.negative) <= set(bad.values)


def test_violations_without_a_spec_or_values():
    assert violations(np.array([0, 900]), np.array([1, 1]), LabelSpec()) is None
    assert violations(np.zeros(0, np.int64), np.zeros(0, np.int64), LabelSpec(num_classes=2)) is None


@given(st.lists(st.integers(0, 300), max_size=30))
def test_reduce_zero_label_maps_zero_and_255_to_ignore(values):
    reduced = reduce_zero_label(np.array(values, dtype=np.int64)).tolist()
    assert reduced == [255 if v in (0, 255) else v - 1 for v in values]


# ---- Summary ------------------------------------------------------------------------------

PATHS = st.text(alphabet="abcdef/", min_size=1, max_size=6)


@st.composite
def summaries(draw):
    summary = Summary()
    for _ in range(draw(st.integers(0, 4))):
        path = draw(PATHS)
        values = draw(st.lists(st.integers(-2, 300), max_size=5, unique=True))
        counts = draw(st.lists(st.integers(1, 1000), min_size=len(values), max_size=len(values)))
        summary.samples += 1
        summary.add_values(path, values, counts)
        summary.add_classes(path, Counter(draw(st.lists(st.sampled_from(["cat", "dog", "Dog "]), max_size=4))))
        summary.colors.update(draw(st.lists(st.sampled_from(["0,0,0", "128,0,0"]), max_size=3)))
        summary.empty += draw(st.integers(0, 1))
        summary.unreadable += draw(st.integers(0, 1))
        summary.kinds[draw(st.sampled_from(["mask", "voc"]))] += 1
        summary.dtypes[draw(st.sampled_from(["L", "uint16"]))] += 1
        for remark in draw(st.lists(st.sampled_from(["read through a link", "other"]), max_size=2)):
            summary.add_remark(remark, path)
        summary.add_shape(path, draw(SHAPES))
    return summary


SHAPES = st.sampled_from([(32, 32), (64, 64), (1, 32, 32), (512, 512)])


def state(summary: Summary) -> dict:
    return {**summary.to_dict(), "value_examples": summary.value_examples,
            "class_examples": summary.class_examples, "colors": dict(summary.colors),
            "value_files": dict(summary.value_files), "value_pixels": dict(summary.value_pixels),
            "remarks": dict(summary.remarks), "remark_examples": summary.remark_examples,
            "shapes": dict(summary.shapes), "shape_examples": summary.shape_examples,
            "shapes_varied": summary.shapes_varied}


@settings(max_examples=150, deadline=None)
@given(summaries(), summaries(), summaries())
def test_summary_merge_is_associative(a, b, c):
    assert state(a.merged(b).merged(c)) == state(a.merged(b.merged(c)))


@settings(max_examples=150, deadline=None)
@given(summaries(), summaries())
def test_summary_merge_is_commutative_and_counts_add(a, b):
    ab, ba = a.merged(b), b.merged(a)
    assert state(ab) == state(ba)
    assert ab.samples == a.samples + b.samples
    assert ab.value_pixels == a.value_pixels + b.value_pixels
    for value, paths in ab.value_examples.items():
        assert len(paths) <= EXAMPLES_KEPT
        assert set(paths) <= set(a.value_examples.get(value, [])) | set(b.value_examples.get(value, []))


@given(summaries())
def test_merging_with_an_empty_summary_keeps_the_totals(a):
    merged = a.merged(Summary())
    assert merged.to_dict() == a.to_dict()
    assert state(merged) == state(Summary().merged(a))


# ---- the cap on distinct values ------------------------------------------------------------

from unittest import mock  # noqa: E402

import labelguard.core.summary as summary_module  # noqa: E402

SMALL_CAP = 3
FILES = st.lists(st.tuples(PATHS, st.dictionaries(st.integers(-2**63, 2**63 - 1) | st.integers(-40, 40),
                                                   st.integers(1, 1000), max_size=12)),
                 max_size=4)


def build(files) -> Summary:
    summary = Summary()
    for path, histogram_ in files:
        summary.samples += 1
        summary.add_values(path, list(histogram_), list(histogram_.values()))
    return summary


@settings(max_examples=200, deadline=None)
@given(FILES, FILES, FILES)
def test_capped_counts_merge_associatively_and_stay_exact(a, b, c):
    with mock.patch.object(summary_module, "VALUES_KEPT", SMALL_CAP):
        left = build(a).merged(build(b)).merged(build(c))
        right = build(a).merged(build(b).merged(build(c)))
        one_by_one = build(a + b + c)
    assert state(left) == state(right) == state(one_by_one)
    assert left.capped_pixels == right.capped_pixels == one_by_one.capped_pixels
    files, pixels = Counter(), Counter()
    for _, histogram_ in a + b + c:
        files.update(histogram_.keys())
        pixels.update(histogram_)
    ordered = sorted(files, key=lambda v: (abs(v), v < 0))
    kept = ordered if len(ordered) <= 2 * SMALL_CAP else ordered[:SMALL_CAP] + ordered[-SMALL_CAP:]
    assert set(left.value_files) == set(kept)
    assert all(left.value_files[v] == files[v] and left.value_pixels[v] == pixels[v] for v in kept)
    assert left.values_capped == (len(ordered) > 2 * SMALL_CAP)
    assert left.capped_pixels == sum(pixels.values()) - sum(pixels[v] for v in kept)


SHAPE_FILES = st.lists(st.tuples(PATHS, st.tuples(st.integers(1, 6), st.integers(1, 6))), max_size=5)


def shaped(files) -> Summary:
    summary = Summary()
    for path, shape in files:
        summary.add_shape(path, shape)
    return summary


@settings(max_examples=200, deadline=None)
@given(SHAPE_FILES, SHAPE_FILES, SHAPE_FILES)
def test_shapes_merge_associatively_and_a_dataset_past_the_cap_varies(a, b, c):
    """LG213's counts: exact up to SHAPES_KEPT distinct shapes, then none (sizes vary by
    design), whatever the grouping of the merges."""
    with mock.patch.object(summary_module, "SHAPES_KEPT", SMALL_CAP):
        left = shaped(a).merged(shaped(b)).merged(shaped(c))
        right = shaped(a).merged(shaped(b).merged(shaped(c)))
        one_by_one = shaped(a + b + c)
    assert state(left) == state(right) == state(one_by_one)
    distinct = {(os.path.dirname(path), shape) for path, shape in a + b + c}
    assert left.shapes_varied == (len(distinct) > SMALL_CAP)
    if not left.shapes_varied:
        assert sum(left.shapes.values()) == len(a + b + c)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=40, unique=True), st.booleans())
def test_one_files_histogram_is_cut_as_its_values_added_one_by_one(values, unsigned):
    if unsigned:
        values = [v + 2**63 for v in values]
    counts = list(range(1, len(values) + 1))
    array = np.array(values, dtype=np.uint64 if unsigned else np.int64)
    with mock.patch.object(summary_module, "VALUES_KEPT", SMALL_CAP):
        from_array, from_list = Summary(), Summary()
        from_array.add_values("a", array, np.array(counts))
        for value, count in zip(values, counts):
            from_list.add_values("a", [value], [count])
    assert state(from_array) == state(from_list)
    assert from_array.capped_pixels == from_list.capped_pixels


@given(st.text("0123456789", min_size=1, max_size=6000), st.text("0123456789", min_size=1, max_size=6000))
def test_findings_sort_numbers_in_messages_by_value_however_long(a, b):
    import sys

    from labelguard.core.findings import Finding, Severity

    def finding(digits: str) -> Finding:
        return Finding("LG003", Severity.ERROR, "list.txt", f"line {digits}: missing")

    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # the reference converts; the sort key must not need to
    try:
        expected = int(a) < int(b)
    finally:
        sys.set_int_max_str_digits(limit)
    assert (finding(a).sort_key() < finding(b).sort_key()) == expected


@settings(max_examples=80, deadline=None)
@given(
    entries=st.lists(st.tuples(st.text(st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)),
                                       min_size=1, max_size=12), st.booleans()), max_size=40),
    chunk=st.integers(1, 40),
    spill_at=st.one_of(st.none(), st.integers(0, 40)),
)
def test_a_packed_listing_gives_back_its_entries_in_memory_or_spilled_in_any_pieces(entries, chunk, spill_at):
    """A long listing kept packed, in memory or in a temporary file read back in pieces that
    cut names anywhere, iterates as the entries it was given."""
    from labelguard.core import storage

    saved = storage.SPILL_CHUNK
    storage.SPILL_CHUNK = chunk
    listing = storage._PackedListing("s3://bucket/prefix/")
    try:
        for index, (name, folder) in enumerate(entries):
            if index == spill_at:
                listing.spill()
            listing.add(storage.RemoteEntry(name, "s3://bucket/prefix/" + name, folder))
        for _ in range(2):  # iterated again, as each probe walks it
            assert [(e.name, e.path, e.is_dir()) for e in listing] == \
                [(name, "s3://bucket/prefix/" + name, folder) for name, folder in entries]
    finally:
        listing.close()
        storage.SPILL_CHUNK = saved
