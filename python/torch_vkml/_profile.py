"""torch_vkml.profile: the device time of each kernel the vkml device ran in a block."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _C
from ._device import _index


@dataclass(frozen=True)
class KernelTime:
    """One kernel's share of a profiled block: the shader with its specialization
    constants (``copy`` for buffer copies), its calls, workgroups and device time."""

    name: str
    calls: int
    workgroups: int
    total_ms: float
    max_ms: float


class profile:
    """Times every kernel the device runs inside the block by the device's own clock::

        with torch_vkml.profile() as prof:
            loss = model(x).sum(); loss.backward()
        print(prof.table())

    While it is on, each kernel runs alone (a barrier before it and timestamps on both
    sides), as a CUDA stream runs kernels one after another: the times are each kernel's
    own, and the block runs slower than it would without the profiler. ``kernels`` lists
    them by total time, most first. Profiling again, or on another thread, restarts the
    count."""

    def __init__(self, device: int | torch.device | str | None = None) -> None:
        self._device = _index(device)
        self.kernels: list[KernelTime] = []

    def __enter__(self) -> profile:
        _C._profile_start(self._device)
        return self

    def __exit__(self, *exc: object) -> None:
        rows = _C._profile_stop(self._device)
        self.kernels = [
            KernelTime(name, calls, groups, total / 1e6, most / 1e6)
            for name, calls, groups, total, most in rows
        ]

    @property
    def total_ms(self) -> float:
        return sum(k.total_ms for k in self.kernels)

    def table(self, top: int = 20) -> str:
        """The ``top`` kernels by device time, with their share of the total."""
        total = self.total_ms or 1.0
        lines = [f"{'kernel':<48} {'calls':>7} {'total ms':>10} {'share':>6} {'max ms':>9}"]
        for k in self.kernels[:top]:
            lines.append(
                f"{k.name[:48]:<48} {k.calls:>7} {k.total_ms:>10.3f} "
                f"{100 * k.total_ms / total:>5.1f}% {k.max_ms:>9.3f}"
            )
        rest = self.kernels[top:]
        if rest:
            ms = sum(k.total_ms for k in rest)
            calls = sum(k.calls for k in rest)
            label = f"({len(rest)} more)"
            lines.append(f"{label:<48} {calls:>7} {ms:>10.3f} {100 * ms / total:>5.1f}%")
        calls = sum(k.calls for k in self.kernels)
        lines.append(f"{'total':<48} {calls:>7} {self.total_ms:>10.3f}")
        return "\n".join(lines)
