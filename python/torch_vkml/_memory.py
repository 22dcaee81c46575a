"""Memory statistics of the caching allocator, named as in torch.cuda."""

from __future__ import annotations

import torch

from . import _C
from ._device import _check, _index


def memory_stats(device: int | torch.device | str | None = None) -> dict[str, int]:
    return dict(_C.memory_stats(_check(_index(device))))


def memory_allocated(device: int | torch.device | str | None = None) -> int:
    """Bytes held by live tensors (rounded up to the allocator's granularity)."""
    return memory_stats(device)["allocated_bytes"]


def max_memory_allocated(device: int | torch.device | str | None = None) -> int:
    return memory_stats(device)["peak_allocated_bytes"]


def memory_reserved(device: int | torch.device | str | None = None) -> int:
    """Bytes the allocator holds from the driver, in use or cached."""
    return memory_stats(device)["reserved_bytes"]


def max_memory_reserved(device: int | torch.device | str | None = None) -> int:
    return memory_stats(device)["peak_reserved_bytes"]


def reset_peak_memory_stats(device: int | torch.device | str | None = None) -> None:
    _C.reset_peak_memory_stats(_check(_index(device)))


def empty_cache() -> None:
    """Returns cached, unused device memory to the driver (waits for the GPU first)."""
    if _C.is_available():
        _C.empty_cache()
