"""labelguard.torch: stop "CUDA error: device-side assert triggered" before it happens.

Needs the ``torch`` extra (``pip install 'labelguard[torch]'``, torch >= 2.0); the rest of
labelguard never imports torch.

Public API::

    guard(dataset, spec=None, *, num_classes=..., ignore_index=..., on_error=..., substitute=...,
          quarantine=..., model=...)
                        check each sample's target where it is produced (DataLoader workers);
                        on_error="skip" serves the next good sample in a bad one's place, or
                        substitute="random" / "drop"; with model=, tokenized samples against
                        the model's tables (LG601-LG604)
    collate, guard_collate
                        name the two samples whose shapes torch.stack cannot join (LG206);
                        leave out the DroppedSamples of substitute="drop"
    checked(loss_fn, num_classes=None, on_device="check")
                        a loss that raises a LabelError instead of a device-side assert;
                        any loss when told num_classes; on_device="mask": no sync
    safe_targets(target, num_classes, ignore_index=-100) -> the target, bad values masked
                        replaces invalid class indices with ignore_index on the device, reads
                        nothing back; reports them a step later (safe_targets.report());
                        TargetMonitor(...) for a monitor of one's own
    trace_nonfinite(model, optimizer=None)
                        name the module that produced a NaN/Inf (LG502) when the output or loss
                        goes non-finite, and where it began (a value a later layer absorbed is
                        logged once, not raised), and the first whose magnitude had exploded
    watch(model, optimizer) -> DivergenceWatch
                        loss, gradient norm and activations growing by orders of magnitude
                        before any NaN (LG508); kept on the device, read step by step at the
                        start and after a doubling, else once per window
    audit_optimizer(model, optimizer, frozen=None)
                        frozen parameters optimised, trainable ones missing (LG504); freezes
                        that freeze nothing (LG507)
    preflight(model, loss_fn, loader)
                        a few CPU batches cross-checking head, loss and data (token batches
                        against the model's embedding, positions, token types and head)
    labelguard.torch.lightning.LabelGuardCallback
                        preflight and batch checks in PyTorch Lightning (imported on its own)

Errors: a sample, batch or step that breaks the spec raises a :class:`labelguard.LabelError`
(``SampleError``, ``NonFiniteError``, ``PreflightError``); a wrong call raises a
:class:`labelguard.UsageError`, :class:`labelguard.SpecError` or
:class:`labelguard.UnsupportedError`. The whole tree is drawn in :mod:`labelguard.errors`.
"""

from labelguard._optional import require

require("torch", "use labelguard.torch")

from labelguard.torch._collate import DroppedSample, collate, guard_collate  # noqa: E402
from labelguard.torch._errors import NonFiniteError, PreflightError, SampleError  # noqa: E402
from labelguard.torch._guard import (  # noqa: E402
    GuardedDataset,
    GuardedIterableDataset,
    QuarantineRecord,
    guard,
)
from labelguard.torch._losses import CheckedLoss, checked  # noqa: E402
from labelguard.torch._nonfinite import NonFiniteTracer, trace_nonfinite  # noqa: E402
from labelguard.torch._optim import audit_optimizer  # noqa: E402
from labelguard.torch._preflight import PreflightReport, preflight  # noqa: E402
from labelguard.torch._record import record  # noqa: E402
from labelguard.torch._safe import TargetMonitor, safe_targets  # noqa: E402
from labelguard.torch._watch import DivergenceWatch, watch  # noqa: E402

__all__ = [
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
]

# Tracebacks and reprs name the public path (labelguard.torch.SampleError), not the module
# that happens to define the name; pickling resolves through the same path.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
