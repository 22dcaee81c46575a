"""torch.amp.GradScaler on vkml devices without float64.

GradScaler.unscale_ computes the inverse scale as ``scale.double().reciprocal().float()``
on the scale's own device, except on MPS (which has no float64), where it stays in
float32. Many Intel and mobile GPUs have no shaderFloat64 either, and there the float64
copy raises. For a vkml scale on such a device, unscale_ here sees the scale through a
view whose ``double()`` is the identity, so the reciprocal runs in float32 as on MPS;
everything else in unscale_ is PyTorch's own. The scale is a power of two unless the
growth or backoff factor is not, so the float32 reciprocal is exact in the usual case.
The fix upstream is one condition in unscale_: "the scale's device has float64" in place
of "the scale's device is not MPS".
"""

from __future__ import annotations

import functools

import torch

from . import _device


class _Fp32Scale(torch.Tensor):
    """The scale, seen by unscale_: ``double()`` returns it unchanged (float32)."""

    def double(self, memory_format=torch.preserve_format):  # noqa: ARG002
        return self.as_subclass(torch.Tensor)


def _without_fp64(t: torch.Tensor) -> bool:
    if t.device.type != "vkml":
        return False
    return not _device.get_device_properties(t.device).supports_fp64


def install() -> None:
    from torch.amp.grad_scaler import GradScaler

    original = GradScaler.unscale_
    if getattr(original, "_vkml_fp32_scale", False):
        return

    @functools.wraps(original)
    def unscale_(self, optimizer):
        scale = getattr(self, "_scale", None)
        if scale is None or not _without_fp64(scale):
            return original(self, optimizer)
        self._scale = scale.as_subclass(_Fp32Scale)
        try:
            return original(self, optimizer)
        finally:
            self._scale = scale

    unscale_._vkml_fp32_scale = True
    GradScaler.unscale_ = unscale_
