"""Explain a PyTorch error log: what failed, the ranked likely causes, how to confirm them.

Public API::

    explain(text, record=None) -> Explanation
    read_record(path) -> FlightRecord       the file written by labelguard.torch.record
    replay(record, dataset_factory, ...)     re-run the recorded batches on the CPU
"""

from labelguard.explain.engine import Explanation, Match, RankedCause, RecordSummary, explain
from labelguard.explain.extract import Assertion, Facts, Frame
from labelguard.explain.flight import BatchRecord, FlightRecord, FlightRecordError, read_record

__all__ = [
    "Assertion",
    "BatchRecord",
    "Explanation",
    "Facts",
    "FlightRecord",
    "FlightRecordError",
    "Frame",
    "Match",
    "RankedCause",
    "RecordSummary",
    "explain",
    "read_record",
]
