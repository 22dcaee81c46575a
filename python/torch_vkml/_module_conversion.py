"""Module conversion keeps Parameter objects across the CPU <-> vkml boundary, as CUDA does.

``nn.Module._apply`` (``.to()``, ``.vkml()``, ``.cpu()``, ``.to_empty()``, ...) changes a
Parameter in place (``param.data = converted``) only where PyTorch counts the two tensors'
types as shallow-copy compatible, a list of dense backends without PrivateUse1. Elsewhere it
puts a new Parameter into the module, which unties tied weights (an LM's output layer and
input embedding), strands optimizers and hooks that hold the old object, and turns a lazy
module's UninitializedParameter into an empty Parameter that is never materialized.

The wrapper below runs PyTorch's own ``_apply`` and then, for each Parameter it replaced in a
move between the CPU and vkml, puts the original object back with the converted data (and
its gradient's), through ``_C._set_data_across_devices``, the native ``set_data`` without the
backend list. A later module that shares the Parameter then finds it already converted, so
tying survives. Everything else (dtype changes on one device, other devices, PyTorch's
``swap_module_params_on_conversion`` and ``overwrite_module_params_on_conversion`` modes,
tensor subclasses) is left to PyTorch.
"""

from __future__ import annotations

import torch

from . import _C

_DEVICES = ("cpu", "vkml")


# A lazy module's UninitializedParameter too: replaced by a plain Parameter, it would no
# longer be materialized at the first forward (LazyLinear(...).to("vkml") then failed).
_KEPT_TYPES = (torch.Tensor, torch.nn.Parameter, torch.nn.parameter.UninitializedParameter)


def _movable(t: torch.Tensor) -> bool:
    return (
        type(t) in _KEPT_TYPES
        and t.device.type in _DEVICES
        and t.layout == torch.strided
        and not t.is_quantized
    )


def _crosses(old: torch.Tensor, new: torch.Tensor) -> bool:
    return old.device.type != new.device.type and _movable(old) and _movable(new)


def _restore(module: torch.nn.Module, key: str, old: torch.nn.Parameter) -> None:
    new = module._parameters[key]
    if new is None or new is old or not _crosses(old, new):
        return
    old_grad, new_grad = old.grad, new.grad
    if new_grad is not None and old_grad is not None and not _crosses(old_grad, new_grad):
        return  # a gradient PyTorch converted otherwise: keep its result
    with torch.no_grad():
        _C._set_data_across_devices(old, new)
        if new_grad is None:
            old.grad = None
        elif old_grad is not None:
            _C._set_data_across_devices(old_grad, new_grad)
            old.grad = old_grad
        else:
            old.grad = new_grad
    module._parameters[key] = old


def install() -> None:
    """Wraps ``torch.nn.Module._apply`` once per process."""
    original = torch.nn.Module._apply
    if getattr(original, "_vkml_wrapped", False):
        return

    def _apply(self, fn, recurse=True):
        if (
            torch.__future__.get_swap_module_params_on_conversion()
            or torch.__future__.get_overwrite_module_params_on_conversion()
        ):
            return original(self, fn, recurse)
        before = [(k, p) for k, p in self._parameters.items() if p is not None]
        result = original(self, fn, recurse)
        for key, old in before:
            _restore(self, key, old)
        return result

    _apply._vkml_wrapped = True
    _apply.__wrapped__ = original
    _apply.__doc__ = original.__doc__
    torch.nn.Module._apply = _apply
