"""``torch.nn.attention.flex_attention`` on vkml tensors.

FlexAttention checks its query's device against a fixed set (cuda, cpu, xpu, hpu, mps)
before it runs, eagerly and under ``torch.compile`` alike, so on vkml it raised
"FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices". Past that check its
higher-order op needs nothing device-specific: called eagerly it evaluates ``score_mod``
and the block mask over the dense [L, S] scores (the unfused path it takes on the CPU,
which warns that torch.compile is faster), forward and backward on vkml's kernels, and
``torch.compile(flex_attention)`` runs the same graph through vkml's compile backend
(``_compile``), which generates no fused kernel. So the check is widened by vkml alone;
every other device meets PyTorch's own check unchanged.
"""

from __future__ import annotations

import functools
from types import ModuleType

from ._post_import import after_import


def _admit_vkml(module: ModuleType) -> None:
    """Called with ``torch.nn.attention.flex_attention`` once it is imported."""
    check = module._validate_device
    if getattr(check, "_vkml_wrapped", False):
        return

    @functools.wraps(check)
    def _validate_device(query, key, value):
        if query.device.type == "vkml":
            return
        check(query, key, value)

    _validate_device._vkml_wrapped = True
    module._validate_device = _validate_device


def install() -> None:
    after_import("torch.nn.attention.flex_attention", _admit_vkml, "flex_attention on vkml")
