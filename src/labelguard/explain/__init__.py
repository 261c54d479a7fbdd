"""Explain a PyTorch error log: what failed, the ranked likely causes, how to confirm them.

Public API::

    explain(text, record=None) -> Explanation
    read_record(path) -> FlightRecord       the file written by labelguard.torch.record
    replay(record, dataset_factory, ...) -> ReplayReport
                                            re-run the recorded batches on the CPU

Errors: :class:`FlightRecordError` (a :class:`labelguard.LabelguardError`) for a record file
that is missing or damaged; :class:`labelguard.UsageError` for a ``MODULE:FUNCTION``
reference that names nothing callable.
"""

from labelguard.explain._engine import Explanation, Match, RankedCause, RecordSummary, explain
from labelguard.explain._extract import Assertion, Facts, Frame
from labelguard.flight import BatchRecord, FlightRecord, FlightRecordError, read_record
from labelguard.explain._replay import BatchReplay, ReplayReport, SampleReplay, replay

__all__ = [
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
]
