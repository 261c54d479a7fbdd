"""The flight record file: written atomically, bounded, read back, and added to explain()."""

from __future__ import annotations

import json
import logging
import time

import pytest

from labelguard.explain import FlightRecordError, explain, read_record
from labelguard.flight import FlightRecordWriter


def test_writer_keeps_the_last_batches_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "flight.json"
    writer = FlightRecordWriter(path, keep=3, dataset="pkg.Masks", dataset_len=100)
    for step in range(10):
        writer.handed(0, step, [step * 2, step * 2 + 1], [f"m{step}a.png", f"m{step}b.png"])
    writer.flush()
    record = read_record(path)
    assert [b.step for b in record.batches] == [7, 8, 9]
    assert record.in_flight.samples() == [(18, "m9a.png"), (19, "m9b.png")]
    assert [b.step for b in record.previous] == [8, 7]
    assert (record.dataset, record.dataset_len, record.epoch_complete) == ("pkg.Masks", 100, False)
    assert [p.name for p in tmp_path.iterdir()] == ["flight.json"]


def test_sync_writer_writes_in_the_call(tmp_path):
    writer = FlightRecordWriter(tmp_path / "f.json", sync=True)
    writer.handed(0, 0, [4], None)
    assert read_record(tmp_path / "f.json").in_flight.indices == (4,)


def test_background_writer_catches_up_without_a_flush(tmp_path):
    writer = FlightRecordWriter(tmp_path / "f.json")
    for step in range(50):
        writer.handed(0, step, [step], None)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if read_record(tmp_path / "f.json").in_flight.indices == (49,):
                break
        except FlightRecordError:
            pass
        time.sleep(0.01)
    assert read_record(tmp_path / "f.json").in_flight.indices == (49,)


def test_epoch_complete_is_recorded(tmp_path):
    writer = FlightRecordWriter(tmp_path / "f.json")
    writer.handed(0, 0, [1], None)
    writer.epoch_complete()
    record = read_record(tmp_path / "f.json")
    assert record.epoch_complete and record.in_flight.sources is None


def test_a_failed_write_is_logged_once_and_never_raised(tmp_path, caplog):
    writer = FlightRecordWriter(tmp_path / "missing-dir" / "f.json")
    with caplog.at_level(logging.WARNING):
        writer.handed(0, 0, [1], None)
        writer.flush()
        writer.handed(0, 1, [2], None)
        writer.flush()
    assert len([r for r in caplog.records if "flight record" in r.getMessage()]) == 1


@pytest.mark.parametrize("content, message", [
    (None, "no flight record"),
    ("{not json", "cannot read"),
    ('{"format": "something-else"}', "not a labelguard flight record"),
    ('{"format": "labelguard-flight-record", "version": 99}', "version 99"),
    ('{"format": "labelguard-flight-record", "version": 1, "batches": [{"step": 1}]}',
     "malformed"),
])
def test_bad_record_files_raise_a_clear_error(tmp_path, content, message):
    path = tmp_path / "f.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(FlightRecordError, match=message):
        read_record(path)


def test_explain_adds_the_batch_in_flight_and_the_one_before(tmp_path, log_text):
    path = tmp_path / "f.json"
    writer = FlightRecordWriter(path)
    writer.handed(2, 40, [5, 6], ["a/5.png", "a/6.png"])
    writer.handed(2, 41, [13, 14], ["a/13.png", "a/14.png"])
    writer.flush()
    result = explain(log_text("cuda_nll2d_torch113.log"), record=path)
    assert result.record.in_flight.samples() == [(13, "a/13.png"), (14, "a/14.png")]
    assert [b.indices for b in result.record.previous] == [(5, 6)]
    assert any("batch before it" in note for note in result.record.notes)
    assert not any("which samples" in item for item in result.unknowns)
    assert json.loads(json.dumps(result.to_dict()))["record"]["in_flight"]["indices"] == [13, 14]
