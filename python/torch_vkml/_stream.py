"""Streams as ``torch.cuda`` offers them: ``Stream``, ``current_stream``, ``default_stream``,
``set_stream`` and the ``stream`` context manager.

Code written for CUDA reaches these through the device module (``torch.vkml``, e.g. FSDP2's
``device_handle.Stream(priority=-1)`` and ``device_handle.stream(s)``). They are
``torch.Stream``s of the vkml guard: each runs apart from the others (on a queue of its
own where the device has several), so, as on CUDA, events and ``wait_stream`` order work
on two streams and ``Tensor.record_stream`` keeps memory another stream uses; priorities
are accepted and have no effect.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from ._device import _check, _index


class Stream(torch.Stream):
    """A vkml stream, with ``torch.cuda.Stream``'s signature (default: the current device)."""

    def __new__(
        cls, device: int | torch.device | str | None = None, priority: int = 0, **kwargs
    ) -> Stream:
        if kwargs:  # torch.Stream's own form: stream_id, device_index, device_type
            return super().__new__(cls, **kwargs)
        return super().__new__(
            cls, device=torch.device("vkml", _check(_index(device))), priority=priority
        )

    def __init__(self, *args, **kwargs) -> None:
        pass  # __new__ did it all


def current_stream(device: int | torch.device | str | None = None) -> torch.Stream:
    """The stream work is queued on for the device (default: the current one)."""
    return torch.accelerator.current_stream(_check(_index(device)))


def default_stream(device: int | torch.device | str | None = None) -> torch.Stream:
    """The device's default stream (id 0)."""
    index = _check(_index(device))
    kind = torch.accelerator.current_stream(index).device_type  # c10's DeviceType number
    return torch.Stream(stream_id=0, device_index=index, device_type=kind)


def set_stream(stream: torch.Stream) -> None:
    """Makes ``stream`` the current stream of its device."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(s: torch.Stream | None) -> Iterator[None]:
    """Queues the work of the block on ``s`` (nothing changes when it is None), as
    ``torch.cuda.stream`` does; the previous current stream comes back after it."""
    if s is None:
        yield
        return
    previous = torch.accelerator.current_stream(s.device_index)
    torch.accelerator.set_stream(s)
    try:
        yield
    finally:
        torch.accelerator.set_stream(previous)


__all__ = ["Stream", "current_stream", "default_stream", "set_stream", "stream"]
