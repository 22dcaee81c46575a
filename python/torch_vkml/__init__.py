"""torch-vkml: PyTorch on any GPU through Vulkan compute.

``import torch_vkml`` registers the device ``vkml``; ``torch_vkml.device()`` returns it.
Importing never fails for lack of a Vulkan driver: ``is_available()`` says whether one
works, and using the device without one raises a RuntimeError naming what is missing.
"""

from __future__ import annotations

import atexit
import sys


def _autoload() -> None:
    """The autoload entry point of installs made before _torch_vkml_autoload existed
    (reinstalling moves it there): importing this module is enough.

    Defined before ``import torch``: when a script imports torch_vkml first, torch's
    autoload imports it again while it is still initialising and looks this name up.
    """


import torch

from . import (
    _C,
    _amp,
    _compile,
    _distributed,
    _flex_attention,
    _module_conversion,
    _multiprocessing,
)
from ._device import (
    current_device,
    default_device,
    device,
    device_count,
    device_name,
    device_of,
    get_device_name,
    get_device_properties,
    get_sync_debug_mode,
    is_available,
    is_bf16_supported,
    is_initialized,
    set_device,
    set_sync_debug_mode,
    synchronize,
)
from ._doctor import doctor
from ._event import Event
from ._fft import fft_plan_cache
from ._memory import (
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from ._profile import KernelTime, profile, profiler_utilization
from ._random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from ._stream import Stream, current_stream, default_stream, set_stream, stream

# torch.cuda's name for the out-of-memory error, which torch.vkml raises too
OutOfMemoryError = torch.OutOfMemoryError

__all__ = [
    "Event",
    "OutOfMemoryError",
    "KernelTime",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "default_device",
    "device",
    "device_count",
    "device_name",
    "device_of",
    "doctor",
    "empty_cache",
    "fallback_counts",
    "fft_plan_cache",
    "get_device_name",
    "get_device_properties",
    "get_per_process_memory_fraction",
    "get_rng_state",
    "get_rng_state_all",
    "get_sync_debug_mode",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "mem_get_info",
    "memory_stats",
    "memory_summary",
    "profile",
    "profiler_utilization",
    "reset_accumulated_memory_stats",
    "reset_fallback_counts",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "set_sync_debug_mode",
    "stream",
    "synchronize",
    "validation_messages",
]

__version__ = "0.1.0"


def fallback_counts() -> dict[str, int]:
    """Calls of aten ops that ran on the CPU fallback since the last reset, by op name."""
    return dict(_C.fallback_counts())


def reset_fallback_counts() -> None:
    _C.reset_fallback_counts()


def validation_messages() -> list[str]:
    """Vulkan validation-layer messages since the last call (TORCH_VKML_VALIDATION=1)."""
    return list(_C.validation_messages())


# What torch expects of a device module (torch.vkml): seeding and fork checks.
def _is_in_bad_fork() -> bool:
    """True in a process forked after vkml was initialised: vkml raises there (use spawn)."""
    return bool(_C.in_bad_fork())


def _lazy_init() -> None:
    """Called by torch the first time Python makes a vkml tensor (torch.cuda._lazy_init's
    place). Torch up to 2.11 marks a PrivateUse1 device initialised only through this;
    without it, torch.accelerator.synchronize() returned there without waiting (seen on the
    GPU machine's torch 2.11)."""
    if not _C.is_available():
        raise RuntimeError(f"torch-vkml: no usable Vulkan device: {_C.unavailable_reason()}")


def __getattr__(name: str) -> object:
    # torch.utils.checkpoint saves a device's RNG state for the recomputation only where
    # the device module's `_initialized` says so (torch.cuda keeps it as a global); without
    # it, dropout drew new masks in the backward's recompute and gradients were wrong.
    if name == "_initialized":
        return bool(_C.is_initialized())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def _register() -> None:
    if torch._C._get_privateuse1_backend_name() != "vkml":
        _warn_if_another_accelerator()
        torch.utils.rename_privateuse1_backend("vkml")
    if not hasattr(torch, "vkml"):
        torch._register_device_module("vkml", sys.modules[__name__])
    if not hasattr(torch.Tensor, "is_vkml"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )


def _warn_if_another_accelerator() -> None:
    # Registering vkml makes it the process's accelerator, ahead of CUDA; PyTorch's
    # autograd engine then fails CUDA backward (docs/coexistence.md). The autoload skips
    # vkml in such a process; an explicit import is taken as wanted, with this warning.
    from _torch_vkml_autoload import builtin_accelerator

    other = builtin_accelerator()
    if other is not None:
        import warnings

        warnings.warn(
            f"torch_vkml: this process also has {other} devices. Registering vkml makes it "
            f"PyTorch's accelerator, and PyTorch's autograd engine then fails backward() on "
            f"{other} tensors (pytorch/pytorch#161129; see docs/coexistence.md). Use vkml "
            f"and {other} in separate processes.",
            RuntimeWarning,
            stacklevel=4,
        )


def _patch_printing() -> None:
    # Printing formats a tensor with a dozen small ops and reads values back
    # one by one; one copy to the host is cheaper and prints exactly what the
    # CPU would. PyTorch does the same for xla/lazy/ipu/mtia tensors. The
    # device suffix is computed before this point, so it still says vkml.
    import torch._tensor_str as ts

    if getattr(ts._tensor_str, "_vkml_patched", False):
        return
    original = ts._tensor_str

    def _tensor_str(self, indent):
        if self.device.type == "vkml":
            self = self.cpu()
        return original(self, indent)

    _tensor_str._vkml_patched = True
    ts._tensor_str = _tensor_str


def _save_pipeline_cache() -> None:
    try:
        _C.save_pipeline_cache()
    except Exception:  # exiting: a cache that cannot be written is only slower next time
        pass


_register()
_patch_printing()
_module_conversion.install()
_compile.install()
_flex_attention.install()
_amp.install()
_distributed.install()
_multiprocessing.install()
atexit.register(_save_pipeline_cache)
