"""torch's device-backend autoload entry point for torch-vkml (``import torch`` runs it).

It lives outside the ``torch_vkml`` package on purpose: importing anything inside the
package registers vkml as PyTorch's PrivateUse1 backend, and a registered PrivateUse1
backend becomes the process's accelerator ahead of CUDA. PyTorch's autograd engine then
gives CUDA nodes no stream and CUDA ``backward()`` fails an internal assert
(pytorch/pytorch#161129; docs/coexistence.md). So where the process has a built-in
accelerator with devices, the autoload leaves vkml alone: CUDA works exactly as without
torch-vkml, and ``import torch_vkml`` still brings vkml in on request (with a warning).

TORCH_VKML_AUTOLOAD=1 loads vkml whatever else is there, =0 never; the default, ``auto``,
is the rule above. TORCH_DEVICE_BACKEND_AUTOLOAD=0 (PyTorch's own) turns off every
backend's autoload.
"""

from __future__ import annotations

import functools
import os


# Asked by the autoload and again by torch_vkml's registration in the same import:
# counted once.
@functools.cache
def builtin_accelerator() -> str | None:
    """The built-in accelerator with at least one device in this process, if any: "cuda"
    (ROCm included), "xpu" or "mps". Counts devices without creating a context (NVML
    where present), as torch.cuda.is_available() does."""
    import torch

    try:
        if torch.cuda._is_compiled() and torch.cuda.device_count() > 0:
            return "cuda"
        if getattr(torch._C, "_has_xpu", False) and torch.xpu.device_count() > 0:
            return "xpu"
        if getattr(torch._C, "_has_mps", False) and torch.backends.mps.is_available():
            return "mps"
    except Exception:  # a broken driver stack: not an accelerator vkml must yield to
        return None
    return None


def should_load(mode: str, other: str | None) -> bool:
    """Whether the autoload imports torch_vkml, for TORCH_VKML_AUTOLOAD=`mode`."""
    if mode == "1":
        return True
    if mode == "0":
        return False
    return other is None


def autoload() -> None:
    mode = os.environ.get("TORCH_VKML_AUTOLOAD", "auto")
    if should_load(mode, None if mode in ("0", "1") else builtin_accelerator()):
        import torch_vkml  # noqa: F401
