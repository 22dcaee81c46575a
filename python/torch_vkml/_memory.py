"""Memory statistics of the caching allocator, named and keyed as in torch.cuda.

The same numbers answer ``torch.accelerator.memory_*`` when vkml is the process's
accelerator: the allocator is a PyTorch ``DeviceAllocator`` (csrc/aten/allocator.cpp).
"""

from __future__ import annotations

import torch

from . import _C
from ._device import _check, _index

_Device = int | torch.device | str | None


def memory_stats(device: _Device = None) -> dict[str, int]:
    """torch.cuda.memory_stats()'s keys ("allocated_bytes.all.current", "num_ooms", ...),
    plus vkml's counters of the device's work (num_dispatches, num_submits, num_barriers,
    num_syncs)."""
    return dict(sorted(_C.memory_stats(_check(_index(device))).items()))


def memory_allocated(device: _Device = None) -> int:
    """Bytes held by live tensors (rounded up to the allocator's granularity)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: _Device = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: _Device = None) -> int:
    """Bytes the allocator holds from the driver, in use or cached."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: _Device = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: _Device = None) -> None:
    _C.reset_peak_memory_stats(_check(_index(device)))


def reset_accumulated_memory_stats(device: _Device = None) -> None:
    """Zeroes the allocated/freed totals and the retry and OOM counts."""
    _C.reset_accumulated_memory_stats(_check(_index(device)))


def mem_get_info(device: _Device = None) -> tuple[int, int]:
    """(free, total) bytes of the device's memory heap. Where the driver has
    VK_EXT_memory_budget, free is its estimate for this process (what other processes
    use is taken off); elsewhere it is the heap less what this process reserved."""
    return tuple(_C.mem_get_info(_check(_index(device))))


def set_per_process_memory_fraction(fraction: float, device: _Device = None) -> None:
    """As ``torch.cuda.set_per_process_memory_fraction``: the caching allocator reserves
    at most ``fraction`` of the device's memory heap; an allocation past it empties the
    cache, retries, then raises ``torch.OutOfMemoryError``."""
    index = _check(_index(device))
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _C.set_memory_fraction(fraction, index)


def get_per_process_memory_fraction(device: _Device = None) -> float:
    return float(_C.get_memory_fraction(_check(_index(device))))


def empty_cache() -> None:
    """Returns cached, unused device memory to the driver (waits for the GPU first)."""
    if _C.is_available():
        _C.empty_cache()


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def memory_summary(device: _Device = None, abbreviated: bool = False) -> str:
    """A table of the allocator's statistics, in the layout of torch.cuda.memory_summary."""
    index = _check(_index(device))
    s = memory_stats(index)
    free, total = mem_get_info(index)
    rows = [
        ("Allocated memory", "allocated_bytes", _size),
        ("Active memory", "active_bytes", _size),
        ("Requested memory", "requested_bytes", _size),
        ("Reserved memory", "reserved_bytes", _size),
        ("Allocations", "allocation", str),
        ("Active allocs", "active", str),
        ("Device reserved segments", "segment", str),
    ]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    width = 93  # value columns of 11: up to '1023.99 MiB'
    line = "|" + "-" * (width - 2) + "|"
    out = [
        line,
        f"|{'vkml memory summary, device ' + str(index):^{width - 2}}|",
        line,
        f"| {'Metric':<34}| {'Cur Usage':>11} | {'Peak Usage':>11} | {'Tot Alloc':>11} |"
        f" {'Tot Freed':>11} |",
        line,
    ]
    for title, key, fmt in rows:
        for pool in pools:
            name = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            vals = [fmt(s[f"{key}.{pool}.{k}"]) for k in ("current", "peak", "allocated", "freed")]
            out.append(
                f"| {name:<34}| {vals[0]:>11} | {vals[1]:>11} | {vals[2]:>11} | {vals[3]:>11} |"
            )
        out.append(line)
    out += [
        f"| {'Device memory free / total':<34}| {_size(free) + ' / ' + _size(total):>53} |",
        f"| {'Allocation retries / OOMs':<34}|"
        f" {str(s['num_alloc_retries']) + ' / ' + str(s['num_ooms']):>53} |",
        line,
    ]
    return "\n".join(out)
