"""VkFFT's plan cache, as ``torch.backends.cuda.cufft_plan_cache`` is cuFFT's.

A plan holds the kernels VkFFT generated and compiled for one transform (kind, sizes,
batch, precision, direction): building one takes milliseconds to a second, reusing it
nothing. Plans are cached per device, least recently used out. All plans of a device
share one working buffer, sized for the largest transform so far; ``clear()`` returns
it to the allocator.
"""

from __future__ import annotations

from . import _C


class FftPlanCache:
    """The plan cache of one vkml device."""

    def __init__(self, device_index: int | None) -> None:
        self.device_index = device_index

    @property
    def size(self) -> int:
        """Plans now cached."""
        return _C._fft_plan_cache_info(self.device_index)[0]

    @property
    def max_size(self) -> int:
        """Plans kept at most (4096 by default, cuFFT's in PyTorch); 0 keeps none."""
        return _C._fft_plan_cache_info(self.device_index)[1]

    @max_size.setter
    def max_size(self, value: int) -> None:
        _C._fft_plan_cache_set_max_size(self.device_index, int(value))

    def clear(self) -> None:
        """Drops every plan and the shared working buffer (once the GPU is done with them)."""
        _C._fft_plan_cache_clear(self.device_index)


class FftPlanCacheManager:
    """``fft_plan_cache[i]`` is device i's cache; its attributes are the current device's."""

    def __getitem__(self, device) -> FftPlanCache:
        import torch

        index = torch.device("vkml", device).index if isinstance(device, int) else None
        if index is None and device is not None:
            index = torch.device(device).index
        return FftPlanCache(index)

    @property
    def size(self) -> int:
        return FftPlanCache(None).size

    @property
    def max_size(self) -> int:
        return FftPlanCache(None).max_size

    @max_size.setter
    def max_size(self, value: int) -> None:
        FftPlanCache(None).max_size = value

    def clear(self) -> None:
        FftPlanCache(None).clear()


fft_plan_cache = FftPlanCacheManager()
