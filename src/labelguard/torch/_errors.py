"""The training-time errors of labelguard.torch, all of them :class:`labelguard.LabelError`
(the whole tree is drawn in :mod:`labelguard.errors`).

Why SampleError exists: a DataLoader does not pickle an exception raised in a worker. It
keeps the exception's type and its formatted traceback, and in the main process calls
``type(text)``; a plain LabelError cannot be built from one string, so the DataLoader would
turn it into a RuntimeError and lose every attribute. A SampleError raised in a worker
carries its attributes as a one-line payload in its traceback text and rebuilds itself from
that text, so ``except LabelError as e: e.source`` works with ``num_workers > 0``.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from torch.utils.data import get_worker_info

from labelguard.errors import LabelError

_PAYLOAD_TAG = "labelguard-error-payload"
_PAYLOAD_LINE = re.compile(rf"{_PAYLOAD_TAG} (\{{.*\}})\s*$", re.MULTILINE)


class SampleError(LabelError):
    """A LabelError about one sample or batch; survives a DataLoader worker intact.

    Attributes (besides LabelError's ``code``, ``index``, ``source``, ``values``,
    ``expected``):
        worker_traceback: the worker's traceback text when the error was rebuilt in the main
            process from a DataLoader worker, else None.
    """

    # Set only on the error of a sample the dataset itself failed to load (the exception's
    # text); absent otherwise, so readers use getattr(error, "raised", None).
    raised: str

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        index: int | None = None,
        source: str | None = None,
        values: Any = None,
        expected: str | None = None,
    ) -> None:
        worker_traceback = None
        if code is None:
            # Built by DataLoader's ExceptionWrapper from the worker's traceback text.
            fields = _payload_fields(message)
            if fields is None:
                raise TypeError("SampleError needs code=...; no labelguard payload in the text")  # not a user mistake
            worker_traceback = message
            message = fields["message"]
            code, index, source = fields["code"], fields["index"], fields["source"]
            values, expected = fields["values"], fields["expected"]
        super().__init__(
            message, code=code, index=index, source=source, values=values, expected=expected
        )
        self.worker_traceback = worker_traceback

    def __reduce__(self):
        return (
            _rebuild_sample_error,
            (self.message, self.code, self.index, self.source, self.values, self.expected),
        )

    def worker_cause(self) -> BaseException:
        """The exception to chain this one from when raising inside a DataLoader worker."""
        payload = {
            "message": self.message,
            "code": self.code,
            "index": self.index,
            "source": self.source,
            "values": self.values,
            "expected": self.expected,
        }
        return _WorkerPayload(f"{_PAYLOAD_TAG} {json.dumps(payload, default=_jsonable)}")


def raise_sample_error(error: SampleError, cause: BaseException | None = None) -> NoReturn:
    """Raise ``error`` (from ``cause``) so that it reaches the main process whole, also from
    inside a DataLoader worker, where it is chained from its payload instead."""
    if get_worker_info() is not None:
        raise error from error.worker_cause()
    raise error from cause


class _WorkerPayload(Exception):
    """Carries a SampleError's attributes through the traceback text of a worker."""


def _payload_fields(text: str) -> dict[str, Any] | None:
    from labelguard.readers.base import ReadError, parse_json

    match = _PAYLOAD_LINE.search(text)
    if match is None:
        return None
    try:
        fields = parse_json(match.group(1), "the error payload")
    except ReadError:
        return None
    return fields if isinstance(fields, dict) and "code" in fields else None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def _rebuild_sample_error(message, code, index, source, values, expected) -> SampleError:
    return SampleError(
        message, code=code, index=index, source=source, values=values, expected=expected
    )


class NonFiniteError(LabelError):
    """The first non-finite value (NaN/Inf) in a forward or backward pass (LG502).

    Attributes:
        module: qualified name of the module that produced it ("" for the model itself,
            None when it came from the model's input or the loss).
        module_type: that module's class name.
        step: the forward call (1-based) of the traced model where it appeared.
        stats: statistics of the tensors involved (shape, dtype, NaN/Inf counts, range).
    """

    def __init__(
        self,
        message: str,
        *,
        module: str | None,
        module_type: str | None,
        step: int,
        stats: dict[str, Any],
        code: str = "LG502",
    ) -> None:
        super().__init__(message, code=code, values=stats, expected="finite values")
        self.module = module
        self.module_type = module_type
        self.step = step
        self.stats = stats

    def __reduce__(self):
        return (
            _rebuild_non_finite,
            (self.message, self.module, self.module_type, self.step, self.stats, self.code),
        )


def _rebuild_non_finite(message, module, module_type, step, stats, code) -> NonFiniteError:
    return NonFiniteError(
        message, module=module, module_type=module_type, step=step, stats=stats, code=code
    )


class PreflightError(LabelError):
    """preflight found errors; ``report`` holds every finding, errors and warnings."""

    def __init__(self, message: str, *, code: str, report: Any) -> None:
        super().__init__(message, code=code, expected="no preflight errors")
        self.report = report

    def __reduce__(self):
        return (_rebuild_preflight, (self.message, self.code, self.report))


def _rebuild_preflight(message, code, report) -> PreflightError:
    return PreflightError(message, code=code, report=report)
