"""Kernel device times: torch.profiler's vkml activity, torch_vkml.profile, and the device's
utilization over a torch.profiler run.

Both views read the same records (csrc/aten/profiler.cpp): while either is on, every
command the device's stream records is timed by the device clock, one at a time, and
tagged with the aten op that recorded it. ``torch.profiler.profile(activities=[...,
ProfilerActivity.PrivateUse1])`` (``ProfilerActivity.VKML``) puts each kernel on the
device's track, attributed to its op; ``torch_vkml.profile`` sums them per kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    them by total time, most first. It reads the same records as torch.profiler's vkml
    activity; blocks may nest and overlap (each counts what ran while it was on), and may
    run inside a ``torch.profiler.profile``."""

    def __init__(self, device: int | torch.device | str | None = None) -> None:
        self._device = _index(device)
        self._cursor: int | None = None
        self.kernels: list[KernelTime] = []

    def __enter__(self) -> profile:
        self._cursor = _C._profile_start(self._device)
        return self

    def __exit__(self, *exc: object) -> None:
        rows = _C._profile_stop(self._device, self._cursor)
        self._cursor = None
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


def profiler_utilization(prof: Any, device: int | None = None) -> dict[str, float | int]:
    """How busy the vkml device was over a ``torch.profiler.profile`` run: the time its
    kernels and copies ran (overlaps counted once) divided by the wall time of the
    profiled region, from the first event the profile recorded (a CPU op or a kernel)
    to the end of the last one.

    ``prof`` is the profiler (or its ``events()``); ``device`` keeps one device's
    kernels (all by default). Returns ``{"busy_us", "wall_us", "utilization",
    "kernels"}``; utilization is 0.0 for a profile without events. The trace records
    device activity only where ``ProfilerActivity.PrivateUse1`` was asked for."""
    events = prof.events() if hasattr(prof, "events") else prof
    spans = [(e.time_range.start, e.time_range.end) for e in events]
    device_type = torch.autograd.DeviceType.PrivateUse1
    busy_spans = sorted(
        (e.time_range.start, e.time_range.end)
        for e in events
        if e.device_type == device_type and (device is None or e.device_index == device)
    )
    busy = 0.0
    end = float("-inf")
    for a, b in busy_spans:
        if b > end:
            busy += b - max(a, end)
            end = b
    wall = max(b for _, b in spans) - min(a for a, _ in spans) if spans else 0.0
    return {
        "busy_us": busy,
        "wall_us": wall,
        "utilization": busy / wall if wall > 0 else 0.0,
        "kernels": len(busy_spans),
    }
