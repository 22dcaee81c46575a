"""Device-clock events, shaped like ``torch.cuda.Event``."""

from __future__ import annotations

import torch

from . import _C
from ._device import _check, _index


class Event:
    """A point in the device's stream; two recorded events give device time between them.

    ``record()`` places a GPU timestamp after all work queued so far on the device;
    ``elapsed_time(end)`` waits for both and returns milliseconds, as ``torch.cuda.Event``.
    Each vkml device has one in-order stream, so ``stream`` arguments are accepted and
    ignored and ``wait()`` is a no-op. ``enable_timing=False`` events still work for
    ``query()``/``synchronize()``; ``blocking`` and ``interprocess`` are not supported.
    """

    def __init__(
        self,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
        device: int | torch.device | str | None = None,
    ) -> None:
        if interprocess:
            raise NotImplementedError("vkml events cannot be shared between processes")
        self.enable_timing = enable_timing
        self._device = _check(_index(device))
        self._native = _C._Event(self._device)
        self._recorded = False

    @property
    def device(self) -> torch.device:
        return torch.device("vkml", self._device)

    def record(self, stream=None) -> None:
        self._native.record()
        self._recorded = True

    def wait(self, stream=None) -> None:
        """Make later work wait for this event: always true on the single in-order stream."""

    def query(self) -> bool:
        """True when the work before the event has finished (or it was never recorded)."""
        return bool(self._native.query())

    def synchronize(self) -> None:
        self._native.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds of device time between this event and ``end_event``."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(self._native.elapsed_ns(end_event._native)) / 1e6

    def __repr__(self) -> str:
        return f"<torch_vkml.Event device={self._device} recorded={self._recorded}>"
