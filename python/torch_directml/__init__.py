"""torch-directml's API on torch-vkml: scripts written for ``torch_directml`` run unchanged.

Installed with torch-vkml (it replaces Microsoft's torch-directml package, which shares
this import name: uninstall that one first). ``torch_directml.device()`` is a vkml
device, so ``model.to(dev)``, ``torch.randn(..., device=dev)`` and the rest of a
torch-directml script run on any Vulkan GPU, on Windows and Linux alike.

What differs: devices are vkml's (``torch.device("vkml", i)``: code that tests
``dev.type == "privateuseone"`` sees ``"vkml"``; the string ``"privateuseone:0"`` still
names the same device), ranked discrete > integrated > virtual > CPU, and
``gpu_memory`` reports what torch-vkml's allocator holds (see there).
"""

from __future__ import annotations

import math

import torch

import torch_vkml

__all__ = [
    "default_device",
    "device",
    "device_count",
    "device_name",
    "disable_tiled_resources",
    "gpu_memory",
    "has_float64_support",
    "is_available",
]


def is_available() -> bool:
    """True when at least one device can be used (never raises)."""
    return torch_vkml.is_available()


def device_count() -> int:
    """The number of devices; 0 when none is usable."""
    return torch_vkml.device_count() if is_available() else 0


def default_device() -> int:
    """The index of the device ``device()`` returns: torch-vkml's first (best-ranked)."""
    return torch_vkml.default_device().index


def device(device_id: int | None = None) -> torch.device:
    """The torch device with index ``device_id`` (None: the default device).

    Raises ValueError for an index out of range, RuntimeError when no device is usable.
    """
    if device_id is None:
        return torch_vkml.default_device()
    return torch_vkml.device(int(device_id))


def device_name(device_id: int) -> str:
    """The device's name; "" for an index out of range (as torch-directml)."""
    if 0 <= device_id < device_count():
        return torch_vkml.device_name(device_id)
    return ""


def has_float64_support(device_id: int = 0) -> bool:
    """Whether float64 tensors can live on the device (Vulkan's shaderFloat64)."""
    return torch_vkml.get_device_properties(device_id).supports_fp64


def gpu_memory(device_id: int = 0, mb_per_tile: int = 1) -> list[float]:
    """The device's memory in use by this process, as torch-directml reports it.

    The device's memory is cut into tiles of ``mb_per_tile`` MiB (the last one may be
    partial); the list has one entry per tile, the fraction of that tile in use, from
    0.0 to 1.0, the memory in use filling tiles from the first. "In use" is what live
    tensors hold in torch-vkml's caching allocator (``torch_vkml.memory_allocated``), so
    ``sum(gpu_memory(i, t)) * t`` is that many MiB, and ``gpu_memory(i, total_mib)[0]``
    the fraction of the whole device in use.
    """
    if mb_per_tile <= 0:
        raise ValueError(f"mb_per_tile must be positive, got {mb_per_tile}")
    props = torch_vkml.get_device_properties(device_id)
    total_mib = props.total_memory / 2**20
    used_mib = torch_vkml.memory_allocated(device_id) / 2**20
    tiles = max(1, math.ceil(total_mib / mb_per_tile))
    return [
        min(max(used_mib - i * mb_per_tile, 0.0), mb_per_tile) / mb_per_tile for i in range(tiles)
    ]


def disable_tiled_resources(is_disabled: bool) -> None:
    """A no-op: torch-directml's switch for D3D12 tiled resources, which Vulkan does not use."""
    del is_disabled
