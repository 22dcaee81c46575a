"""Devices: enumeration, selection, properties, synchronisation."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _C


def is_available() -> bool:
    """True when a Vulkan loader and at least one usable device are present."""
    return bool(_C.is_available())


def is_initialized() -> bool:
    """True once a vkml device has been created in this process (as torch.cuda's; PyTorch's
    fake tensors ask it when compiled code creates a vkml tensor)."""
    return bool(_C.is_initialized())


def device_count() -> int:
    return int(_C.device_count())


def _require() -> None:
    if not _C.is_available():
        raise RuntimeError(f"torch-vkml: {_C.unavailable_reason()}")


def _index(i: int | torch.device | str | None) -> int:
    if i is None:
        return current_device()
    if isinstance(i, str):
        i = torch.device(i)
    if isinstance(i, torch.device):
        if i.type != "vkml":
            raise ValueError(f"expected a vkml device, got {i}")
        return current_device() if i.index is None else i.index
    return int(i)


def _check(i: int) -> int:
    _require()
    n = device_count()
    if not 0 <= i < n:
        raise ValueError(
            f"vkml device index {i} is out of range: valid indices are 0..{n - 1} ({n} device(s))"
        )
    return i


def device(i: int | None = None) -> torch.device:
    """The torch.device of vkml device ``i`` (default: the current one)."""
    return torch.device("vkml", _check(_index(i)))


def default_device() -> torch.device:
    """The device torch-vkml picks first: discrete > integrated > virtual > CPU."""
    return torch.device("vkml", _check(0))


def current_device() -> int:
    return int(_C.current_device())


def set_device(i: int | torch.device | str) -> None:
    _C.set_device(_check(_index(i)))


def device_name(i: int | None = None) -> str:
    return get_device_properties(i).name


def get_device_name(device: int | torch.device | str | None = None) -> str:
    """The device's name, as ``torch.cuda.get_device_name``."""
    return get_device_properties(device).name


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """As ``torch.cuda.is_bf16_supported``: bfloat16 tensors work on every vkml device
    (stored as bfloat16, computed in float32, as CUDA computes its elementwise ops);
    ``including_emulation=False`` asks for bfloat16 matrix units
    (``VK_KHR_shader_bfloat16``'s cooperative matrices)."""
    if not is_available():
        return False
    return including_emulation or bool(get_device_properties().cooperative_matrix_bf16)


class device_of:
    """Makes the device of a vkml tensor current for the block (``torch.cuda.device_of``);
    anything else leaves the current device as it is."""

    def __init__(self, obj: object) -> None:
        on_vkml = isinstance(obj, torch.Tensor) and obj.device.type == "vkml"
        self._index = obj.get_device() if on_vkml else -1
        self._previous = -1

    def __enter__(self) -> None:
        if self._index >= 0:
            self._previous = current_device()
            set_device(self._index)

    def __exit__(self, *exc: object) -> None:
        if self._index >= 0:
            set_device(self._previous)


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    vendor: str
    vendor_id: int
    device_id: int
    device_type: str
    driver: str
    api_version: str
    total_memory: int
    subgroup_size: int
    max_storage_buffer_range: int
    max_allocation_size: int
    supports_fp16: bool
    supports_fp64: bool
    supports_int64: bool
    # 64-bit atomics on buffers (shaderBufferInt64Atomics): float64 scatter-adds
    supports_int64_atomics: bool
    supports_int16: bool
    # VK_KHR_cooperative_matrix shape (MxNxK) of the fp16 GEMM kernel; "" when none
    cooperative_matrix: str
    # Likewise for bf16 (VK_KHR_shader_bfloat16's matrix types)
    cooperative_matrix_bf16: str
    # The driver reports its compiler's statistics per pipeline
    # (VK_KHR_pipeline_executable_properties; TORCH_VKML_PIPELINE_STATS=1 captures them)
    pipeline_statistics: bool
    # The device clock and CLOCK_MONOTONIC can be read together
    # (VK_EXT_calibrated_timestamps): the profiler maps kernel times onto the host's
    # clock through them
    calibrated_timestamps: bool
    # Mesa's llvmpipe before 24.1 ends an invocation's loops once they together ran this
    # many iterations; the kernels that could iterate more leave it for the CPU route.
    # 0: no limit
    loop_iteration_limit: int
    # Compute queues the streams run on: the default stream one of its own, side streams
    # the others; 1: every stream shares one queue (lavapipe), still each with its own
    # command buffers and timeline
    queue_count: int
    # Contiguous device-to-device copies run as a kernel, not a transfer command (GPUs,
    # whose copy engines are slower than their memory; TORCH_VKML_COPY_KERNEL overrides)
    copies_by_kernel: bool

    def __str__(self) -> str:
        gib = self.total_memory / 2**30
        return (
            f"{self.name} ({self.vendor}, {self.device_type}, {gib:.1f} GiB, "
            f"Vulkan {self.api_version}, {self.driver})"
        )


def get_device_properties(i: int | torch.device | str | None = None) -> DeviceProperties:
    return DeviceProperties(**_C.get_device_properties(_check(_index(i))))


def synchronize(i: int | torch.device | str | None = None) -> None:
    """Waits until the GPU has finished all work queued on device ``i``."""
    _C.synchronize(_check(_index(i)))


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """As ``torch.cuda.set_sync_debug_mode``: ``"default"`` (0) says nothing about ops that
    make the host wait for the device, ``"warn"`` (1) warns at each, ``"error"`` (2) raises
    RuntimeError instead of waiting. Such ops are the read-backs: ``item()``, ``.cpu()``,
    ``nonzero()``, ``print``, a copy to pageable host memory; explicit waits
    (``synchronize()``, an event's or a stream's) are not reported."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`"
            )
        debug_mode = modes[debug_mode]
    _C.set_sync_debug_mode(int(debug_mode))


def get_sync_debug_mode() -> int:
    """The mode ``set_sync_debug_mode`` set: 0 default, 1 warn, 2 error."""
    return int(_C.get_sync_debug_mode())
