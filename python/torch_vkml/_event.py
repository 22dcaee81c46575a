"""Device-clock events: ``torch.Event`` on a vkml device, shaped like ``torch.cuda.Event``."""

from __future__ import annotations

import torch

from . import _C
from ._device import _check, _index


class EventError(RuntimeError, ValueError):
    """A misused event: a RuntimeError as ``torch.cuda.Event`` raises, and the ValueError
    that ``torch.Event`` raises."""


class Event(torch.Event):
    """A point in a vkml device's queue; two recorded timed events give device time between.

    A ``torch.Event`` (the guard's event hooks do the work) with ``torch.cuda.Event``'s
    signature and a fixed device (default: the current one). ``record(stream=None)``
    marks the point after all work queued so far (on the device's current stream when
    no stream is given); ``elapsed_time(end)`` waits for both events, unlike
    ``torch.cuda.Event``, and returns milliseconds of device time. ``wait(stream)`` on the
    event's own device makes the stream's later work wait on the GPU (no host wait).
    ``blocking`` is accepted and has no effect; ``interprocess`` is not supported.
    """

    def __new__(
        cls,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
        device: int | torch.device | str | None = None,
    ) -> Event:
        if interprocess:
            raise NotImplementedError("vkml events cannot be shared between processes")
        index = _check(_index(device))
        self = super().__new__(
            cls, torch.device("vkml", index), enable_timing=enable_timing, blocking=blocking
        )
        self._index = index
        self.enable_timing = enable_timing
        return self

    def __init__(
        self,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
        device: int | torch.device | str | None = None,
    ) -> None:
        pass  # __new__ did it all

    @property
    def device(self) -> torch.device:
        return torch.device("vkml", self._index)

    def record(self, stream: torch.Stream | None = None) -> None:
        if stream is None:
            stream = torch.accelerator.current_stream(self._index)
        elif stream.device_index != self._index:
            raise EventError(
                f"Event device {self.device} does not match recording stream's device "
                f"{stream.device}."
            )
        super().record(stream)

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds of device time between this event and ``end_event`` (waits for both)."""
        if not (self.enable_timing and getattr(end_event, "enable_timing", True)):
            raise EventError("Both events must be created with argument 'enable_timing=True'.")
        if not (self.event_id and end_event.event_id):
            raise EventError("Both events must be recorded before calculating elapsed time.")
        self.synchronize()
        end_event.synchronize()
        # torch.Event.elapsed_time would refuse a subclass as end_event.
        return _C._event_elapsed_time(self, end_event)

    def __repr__(self) -> str:
        return f"<torch_vkml.Event device={self._index} recorded={self.event_id != 0}>"
