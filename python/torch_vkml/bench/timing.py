"""Clocks and repetition: device clock for kernels, wall clock end to end."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


def summarize(samples: list[float]) -> dict[str, float]:
    """Median and spread (quartiles, min, max) of a list of seconds."""
    s = sorted(samples)
    n = len(s)
    if n == 0:
        raise ValueError("no samples")
    if n >= 4:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1, q3 = s[0], s[-1]
    return {
        "median": statistics.median(s),
        "q1": q1,
        "q3": q3,
        "min": s[0],
        "max": s[-1],
        "n": n,
    }


@dataclass
class Backend:
    """One place a case runs: "vkml", "cpu" or "cuda"."""

    name: str
    device: torch.device

    def sync(self) -> None:
        if self.name == "vkml":
            import torch_vkml

            torch_vkml.synchronize(self.device.index)
        elif self.name == "cuda":
            torch.cuda.synchronize(self.device)

    def event(self):
        """A timing event on the device clock, or None for the CPU (wall clock there)."""
        if self.name == "vkml":
            import torch_vkml

            return torch_vkml.Event(enable_timing=True, device=self.device)
        if self.name == "cuda":
            return torch.cuda.Event(enable_timing=True)
        return None

    def empty_cache(self) -> None:
        if self.name == "vkml":
            import torch_vkml

            torch_vkml.empty_cache()
        elif self.name == "cuda":
            torch.cuda.empty_cache()


@dataclass
class Plan:
    """How often to run: warm-up calls, then repetitions until `budget_s` is spent
    (at least `min_reps`, at most `max_reps`); each repetition times `inner` calls."""

    warmup: int = 1
    min_reps: int = 3
    max_reps: int = 10
    budget_s: float = 1.0


def measure(fn: Callable[[], object], backend: Backend, plan: Plan, inner: int = 1) -> dict:
    """Times `fn` on both clocks. Returns {"device": stats, "wall": stats} in seconds per call;
    "device" is the GPU clock between events (the wall clock on the CPU backend)."""
    for _ in range(plan.warmup):
        fn()
    backend.sync()
    dev_samples: list[float] = []
    wall_samples: list[float] = []
    spent = 0.0
    start, end = backend.event(), backend.event()
    for rep in range(plan.max_reps):
        w0 = time.perf_counter()
        if start is not None:
            start.record()
        for _ in range(inner):
            fn()
        if end is not None:
            end.record()
        backend.sync()
        w1 = time.perf_counter()
        wall_samples.append((w1 - w0) / inner)
        if start is not None:
            end.synchronize()
            dev_samples.append(start.elapsed_time(end) / 1e3 / inner)
        else:
            dev_samples.append((w1 - w0) / inner)
        spent += w1 - w0
        if rep + 1 >= plan.min_reps and spent >= plan.budget_s:
            break
    return {"device": summarize(dev_samples), "wall": summarize(wall_samples)}


def measure_host_overhead(fn: Callable[[], object], backend: Backend, calls: int, reps: int):
    """Per call of `fn`: the calling thread's CPU time (time.thread_time) while issuing
    `calls` calls without waiting, and the wall time until they have all finished."""
    for _ in range(min(calls, 100)):
        fn()
    backend.sync()
    thread_samples, wall_samples = [], []
    for _ in range(reps):
        t0, w0 = time.thread_time(), time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.thread_time()
        backend.sync()
        w1 = time.perf_counter()
        thread_samples.append((t1 - t0) / calls)
        wall_samples.append((w1 - w0) / calls)
    return {"thread": summarize(thread_samples), "wall": summarize(wall_samples)}
