"""Device memory through PyTorch's own API: torch.accelerator answers from vkml's
caching allocator (a c10 DeviceAllocator), with torch.cuda's statistics and keys.

Before the allocator was a DeviceAllocator, every torch.accelerator.memory_* call died
with "Allocator for vkml is not a DeviceAllocator".
"""

import pytest
import torch

import torch_vkml

VKML = "vkml"
MiB = 1 << 20


@pytest.fixture(autouse=True)
def settled():
    torch_vkml.synchronize()  # frees held back by the stream are returned before a test reads
    yield


def test_vkml_is_the_accelerator_here():
    assert torch.accelerator.current_accelerator().type == VKML


def test_memory_allocated_follows_tensors():
    base = torch.accelerator.memory_allocated()
    assert base == torch_vkml.memory_allocated()
    x = torch.empty(3 * MiB, dtype=torch.uint8, device=VKML)
    assert torch.accelerator.memory_allocated() == base + 3 * MiB  # 3 MiB is 256-aligned
    assert torch.accelerator.memory_allocated(0) == torch_vkml.memory_allocated(0)
    assert torch.accelerator.memory_reserved() >= torch.accelerator.memory_allocated()
    del x
    torch_vkml.synchronize()
    assert torch.accelerator.memory_allocated() == base


def test_peak_and_its_reset():
    torch.accelerator.reset_peak_memory_stats()
    base = torch.accelerator.memory_allocated()
    assert torch.accelerator.max_memory_allocated() == base
    y = torch.empty(8 * MiB, dtype=torch.uint8, device=VKML)
    del y
    torch_vkml.synchronize()
    assert torch.accelerator.max_memory_allocated() == base + 8 * MiB
    assert torch.accelerator.max_memory_reserved() >= base + 8 * MiB
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base


def test_memory_stats_keys_and_counts():
    torch.accelerator.reset_accumulated_memory_stats()
    s0 = torch.accelerator.memory_stats()
    assert s0["allocation.all.allocated"] == 0 and s0["allocated_bytes.all.freed"] == 0
    a = torch.empty(1000, dtype=torch.uint8, device=VKML)  # a small-pool chunk
    b = torch.empty(5 * MiB, dtype=torch.uint8, device=VKML)  # a large-pool one
    s1 = torch.accelerator.memory_stats()
    assert s1["allocation.all.current"] == s0["allocation.all.current"] + 2
    assert s1["allocation.all.allocated"] == 2
    assert s1["allocation.small_pool.allocated"] == 1
    assert s1["allocation.large_pool.allocated"] == 1
    # requested is what was asked for; allocated is rounded up to 256 bytes
    assert s1["requested_bytes.all.current"] - s0["requested_bytes.all.current"] == 1000 + 5 * MiB
    small = "allocated_bytes.small_pool.current"
    assert s1[small] - s0[small] == 1024
    assert s1["allocated_bytes.all.current"] == (
        s1["allocated_bytes.small_pool.current"] + s1["allocated_bytes.large_pool.current"]
    )
    assert s1["segment.all.current"] * 2 * MiB <= s1["reserved_bytes.all.current"]
    del a, b
    torch_vkml.synchronize()
    s2 = torch.accelerator.memory_stats()
    assert s2["allocated_bytes.all.freed"] == 1024 + 5 * MiB
    assert s2["allocation.all.freed"] == 2
    # torch_vkml's own view is the same numbers, plus its counters of the device's work
    mine = torch_vkml.memory_stats()
    for key, value in s2.items():
        assert mine[key] == value, key
    assert mine["num_dispatches"] >= 0


def test_empty_cache_returns_reserved_memory():
    x = torch.ones(16 * MiB // 4, device=VKML)
    reserved_with_x = torch.accelerator.memory_reserved()
    del x
    torch_vkml.synchronize()
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_reserved() < reserved_with_x
    assert torch.accelerator.memory_stats()["segment.all.freed"] >= 1
    assert torch.ones(5, device=VKML).sum().item() == 5.0


def test_get_memory_info():
    free, total = torch.accelerator.get_memory_info()
    assert (free, total) == torch_vkml.mem_get_info()
    assert 0 < free <= total
    props = torch_vkml.get_device_properties()
    assert total == props.total_memory or total <= props.total_memory
    x = torch.empty(64 * MiB, dtype=torch.uint8, device=VKML)  # a new block: less is free
    assert torch_vkml.mem_get_info()[0] < free
    del x


def test_out_of_memory_is_counted_and_leaves_the_device_usable():
    before = torch.accelerator.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError, match="out of memory"):
        torch.empty(1 << 50, dtype=torch.uint8, device=VKML)
    assert torch.accelerator.memory_stats()["num_ooms"] == before + 1
    assert torch.arange(4, device=VKML).sum().item() == 6


def test_memory_summary():
    big = torch.empty(600 * MiB, dtype=torch.uint8, device=VKML)  # totals of 4 digits in MiB
    del big
    torch_vkml.synchronize()
    x = torch.empty(2 * MiB, dtype=torch.uint8, device=VKML)
    text = torch_vkml.memory_summary()
    assert "Allocated memory" in text and "Reserved memory" in text
    assert "from small pool" in text
    assert "from small pool" not in torch_vkml.memory_summary(abbreviated=True)
    widths = {len(line) for line in text.splitlines()}
    assert len(widths) == 1, widths  # a rectangular table
    del x


def test_device_module_functions():
    # torch.vkml is the device module PyTorch looks up for the device type
    assert torch.vkml.memory_allocated() == torch_vkml.memory_allocated()
    assert torch.vkml.mem_get_info() == torch_vkml.mem_get_info()
