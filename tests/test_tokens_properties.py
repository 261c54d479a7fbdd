"""Property tests of the token readers and rules: whatever the rows, the batch size and the
file format, the audit names exactly the rows a plain loop over the data finds, counts every
offending token, and lists the lowest offending values."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labelguard.readers.tokens as token_reader
from audit_helpers import found, run
from labelguard.core.spec import LabelSpec
from labelguard.core.spec import TokenSpec
from labelguard.layouts.base import AuditOptions

VOCAB = 100
LONGEST = 6
SPEC = LabelSpec(tokens=TokenSpec(vocab_size=VOCAB, max_position_embeddings=LONGEST, num_labels=3))

ROWS = st.lists(st.tuples(st.lists(st.integers(-3, VOCAB + 30), max_size=9), st.integers(-101, 4)),
                min_size=1, max_size=40)


def expected(rows):
    """What a plain loop finds: (rows with a bad id, bad ids, distinct bad ids), long rows with
    their lengths, rows with a bad label."""
    bad_ids = [(row, i) for row, (ids, _) in enumerate(rows) for i in ids if not 0 <= i < VOCAB]
    long_rows = [(row, len(ids)) for row, (ids, _) in enumerate(rows) if len(ids) > LONGEST]
    bad_labels = [row for row, (_, label) in enumerate(rows) if not (0 <= label < 3 or label == -100)]
    return bad_ids, long_rows, bad_labels


def check(report, rows):
    bad_ids, long_rows, bad_labels = expected(rows)
    assert report.errors == []
    ids = found(report, "LG601")
    if bad_ids:
        [finding] = ids
        assert finding.data["rows"] == sorted({row for row, _ in bad_ids})
        assert finding.data["count"] == len(bad_ids)
        assert finding.data["values"] == sorted({i for _, i in bad_ids})[:20]
        assert finding.data["highest"] == max(i for _, i in bad_ids)
    else:
        assert ids == []
    lengths = found(report, "LG602")
    assert [f.data["rows"] for f in lengths] == ([[row for row, _ in long_rows]] if long_rows else [])
    labels = found(report, "LG604")
    assert [f.data["rows"] for f in labels] == ([bad_labels] if bad_labels else [])
    assert report.summary.samples == len(rows)


@settings(max_examples=60, deadline=None)
@given(ROWS, st.integers(1, 7), st.lists(st.integers(0, 2), min_size=40, max_size=40))
def test_json_lines_in_batches_of_any_size_report_exactly_the_bad_rows_and_their_lines(rows, batch_rows, blanks):
    """Blank lines before some rows: each finding names the rows and, for each, the line of
    the file that holds it."""
    import json

    text, line_of = "", []
    for (ids, label), blank in zip(rows, blanks):
        text += "\n" * blank
        line_of.append(text.count("\n") + 1)
        text += json.dumps({"input_ids": ids, "label": label}) + "\n"
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(token_reader, "BATCH_ROWS", batch_rows):
        path = Path(folder) / "train.jsonl"
        path.write_text(text)
        report = run(path, SPEC)
        check(report, rows)
        for finding in report.findings:
            assert finding.data["lines"] == [line_of[row] for row in finding.data["rows"]]


@settings(max_examples=40, deadline=None)
@given(ROWS, st.integers(1, 7), st.sampled_from(["arrow", "parquet"]))
def test_arrow_and_parquet_in_batches_of_any_size_report_exactly_the_bad_rows(rows, batch_rows, kind):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"input_ids": pa.array([ids for ids, _ in rows], pa.list_(pa.int32())),
                      "label": pa.array([label for _, label in rows], pa.int64())})
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(token_reader, "BATCH_ROWS", batch_rows):
        path = Path(folder) / f"train.{kind}"
        if kind == "parquet":
            pq.write_table(table, str(path), row_group_size=max(1, batch_rows - 1))
        else:
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
                for batch in table.to_batches(max_chunksize=batch_rows + 2):
                    writer.write_batch(batch)
        check(run(path, SPEC, options=AuditOptions(format="tokens")), rows)


CELLS = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={"input_ids": CELLS, "label": CELLS, "token_type_ids": CELLS}),
                min_size=1, max_size=6))
def test_any_json_values_are_findings_never_a_crash(records):
    """Text, nested lists, nulls, booleans, floats and integers past int64 in the token
    columns: the audit reports them (LG001 or a value out of range) and never crashes."""
    import json

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.jsonl"
        lines = [json.dumps({"input_ids": [1], **record}) for record in records]
        path.write_text("\n".join(lines) + "\n")
        report = run(path, SPEC, options=AuditOptions(format="tokens"))
        assert report.errors == []
        assert report.summary.samples == len(records)
