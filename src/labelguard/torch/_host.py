"""Small device tensors read on the host without stopping the device.

A ``.item()`` or ``bool(tensor)`` on a CUDA tensor waits for every kernel queued before it:
the host stops feeding the GPU. :class:`HostCopy` copies into pinned (page-locked) memory
with ``non_blocking=True`` and records a CUDA event after the copy; the host asks the event
later (``ready`` never blocks) and reads the values once the copy is done, typically one step
later, when the GPU has long finished it.

Pinned memory is a CUDA feature: a CPU tensor is its own copy (ready at once), and on other
accelerators the copy is made when the value is read (one blocking copy, one step late).
"""

from __future__ import annotations

import torch


class HostCopy:
    """A copy of ``tensor`` on the host, made without blocking the caller."""

    def __init__(self, tensor: torch.Tensor) -> None:
        tensor = tensor.detach()
        self._device_tensor: torch.Tensor | None = None
        self._host: torch.Tensor | None  # None until value() copies a tensor of another device
        self._event = None
        if tensor.device.type == "cuda":
            self._host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
            self._host.copy_(tensor, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record(torch.cuda.current_stream(tensor.device))
        elif tensor.device.type == "cpu":
            self._host = tensor.clone()
        else:
            self._device_tensor = tensor.clone()
            self._host = None

    def ready(self) -> bool:
        """True when :meth:`value` will not wait for the device."""
        return self._event is None or bool(self._event.query())

    def value(self) -> torch.Tensor:
        """The host tensor; waits for the copy when it is not done yet."""
        if self._event is not None:
            self._event.synchronize()
        if self._host is None:
            # not a user mistake: a tensor of another device is kept here until this first copy
            assert self._device_tensor is not None
            self._host = self._device_tensor.to("cpu")
            self._device_tensor = None
        return self._host
