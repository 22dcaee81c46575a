"""Pinned host memory: pin_memory(), is_pinned(), asynchronous copies both ways
(non_blocking=True), DataLoader(pin_memory=True)."""

import torch
from conftest import VKML, make

import torch_vkml


def test_pin_memory_keeps_values_and_reports_pinned():
    x = make((33, 7))
    p = x.pin_memory()
    assert p.is_pinned()
    assert not x.is_pinned()
    assert p.device.type == "cpu"
    torch.testing.assert_close(p, x, rtol=0, atol=0)
    assert not p[1:].clone().is_pinned()  # an ordinary copy is not pinned
    assert p[1:].is_pinned()  # a view into it is


def test_non_blocking_round_trip_through_pinned_memory(no_fallback):
    x = make((1000,))
    p = x.pin_memory()
    before = torch_vkml.memory_stats()["num_dispatches"]
    d = p.to(VKML, non_blocking=True)
    y = torch.empty(1000).pin_memory()
    y.copy_(d * 2, non_blocking=True)
    torch_vkml.synchronize()
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)
    assert torch_vkml.memory_stats()["num_dispatches"] - before == 1  # only the multiply


def test_pinned_source_freed_while_copy_is_queued():
    x = make((4096,))
    p = x.pin_memory()
    d = p.to(VKML, non_blocking=True)
    del p  # the chunk must not be reused before the queued copy ran
    q = torch.full((4096,), 7.0).pin_memory()  # likely the same staging chunk
    torch.testing.assert_close(d.cpu(), x, rtol=0, atol=0)
    assert q[0].item() == 7.0


def test_blocking_copies_from_pinned_memory_do_not_see_later_writes():
    p = torch.ones(256).pin_memory()
    d = p.to(VKML)  # non_blocking=False: the value is taken now
    p.fill_(5.0)
    torch.testing.assert_close(d.cpu(), torch.ones(256), rtol=0, atol=0)


def test_non_contiguous_and_converting_copies_with_pinned_memory():
    x = make((8, 6))
    p = x.pin_memory()
    d = torch.empty(6, 8, dtype=torch.float16, device=VKML)
    d.copy_(p.t(), non_blocking=True)
    torch.testing.assert_close(d.cpu(), x.t().half(), rtol=0, atol=0)
    out = torch.empty(6, 8, dtype=torch.float64).pin_memory()
    out.copy_(d, non_blocking=True)
    torch_vkml.synchronize()
    torch.testing.assert_close(out, x.t().half().double(), rtol=0, atol=0)


def test_dataloader_pins_batches():
    ds = torch.utils.data.TensorDataset(make((10, 3)), torch.arange(10))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True)
    xb, yb = next(iter(loader))
    assert xb.is_pinned() and yb.is_pinned()
    torch.testing.assert_close(xb.to(VKML, non_blocking=True).cpu(), ds.tensors[0][:4])


def test_large_download_in_overlapped_chunks():
    # 96 MiB: two chunks of the 64 MiB staging size, the second copied while the
    # host takes the first out.
    n = 24 * 2**20
    d = torch.arange(n, dtype=torch.int32, device=VKML)
    host = d.cpu()
    assert host[0].item() == 0 and host[-1].item() == n - 1
    assert host[2**24 + 3].item() == 2**24 + 3


def _arrives(check, seconds=10.0):
    """Polls `check` without ever synchronizing, as a program polling an event would."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_a_non_blocking_copy_to_the_cpu_arrives_without_a_synchronize(no_fallback):
    x = make((257,))
    d = x.to(VKML) * 3  # recorded work, not yet submitted
    y = d.to("cpu", non_blocking=True)
    assert y.is_pinned()  # as on CUDA: the destination is pinned memory
    # Submitted at once: it completes as soon as the GPU reaches it.
    assert _arrives(lambda: torch.equal(y, x * 3)), "the copy waited in an unsubmitted batch"


def test_an_event_completes_without_a_synchronize():
    x = torch.ones(64, device=VKML)
    (x * 2).sum()
    e = torch_vkml.Event()
    e.record()
    assert _arrives(e.query), "the event waited in an unsubmitted batch"
