"""torch.Event and torch.Stream on vkml, through the device guard's stream and event hooks.

Equivalents of the event and stream tests of PyTorch's out-of-tree reference backend
(torch_openreg). Every vkml stream of a device runs on its one in-order queue, so waits
are satisfied by queue order; the tests check what a program may rely on: results,
current-stream bookkeeping, event states and device timing.
"""

import threading
import time

import pytest
import torch
from conftest import VKML, make, on_two_devices

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


_TYPE = torch.Stream(device=VKML).device_type


def _default(i=0):
    """Device i's default stream."""
    return torch.Stream(stream_id=0, device_index=i, device_type=_TYPE)


@pytest.fixture(autouse=True)
def _restore_current_stream():
    """Each test starts and ends on the default streams, with device 0 current."""
    yield
    for i in range(torch_vkml.device_count()):
        torch.accelerator.set_stream(_default(i))
    torch.accelerator.set_device_index(0)


def _chain(x, w, n):
    """n dependent matmuls: enough work that the queue is busy for a while."""
    for _ in range(n):
        x = torch.tanh(x @ w)
    return x


# ---------------------------------------------------------------- events


def test_event_create():
    e = torch.Event(device=VKML)
    assert e.device.type == VKML and e.device.index is None  # set by the first record
    assert e.event_id == 0
    assert torch.Event().device.type == VKML  # vkml is the accelerator
    s = torch.Stream(device="vkml:0")
    recorded = s.record_event()
    assert recorded.device == torch.device(VKML, 0)
    assert recorded.event_id != 0


def test_unrecorded_event():
    e = torch.Event(device=VKML, enable_timing=True)
    assert e.query()  # nothing to wait for
    e.synchronize()
    e.wait()
    torch.accelerator.current_stream().wait_event(e)
    assert e.event_id == 0  # none of these recorded it
    done = torch.Event(device=VKML, enable_timing=True)
    done.record()
    with pytest.raises(ValueError, match="Both events must be recorded"):
        e.elapsed_time(done)
    with pytest.raises(ValueError, match="Both events must be recorded"):
        done.elapsed_time(e)


def test_event_record_query_synchronize():
    x, w = make((64, 64)), make((64, 64)) * 0.1
    xd, wd = x.to(VKML), w.to(VKML)
    e = torch.Event(device=VKML)
    y = _chain(xd, wd, 8)
    e.record()
    assert e.device == torch.device(VKML, 0)
    e.synchronize()
    assert e.query()
    torch.testing.assert_close(y.cpu(), _chain(x, w, 8), atol=1e-4, rtol=1e-4)
    # An event completes without a synchronize: records are submitted at once.
    e.record()
    deadline = time.monotonic() + 30
    while not e.query():
        assert time.monotonic() < deadline, "the event never completed"
        time.sleep(0.001)


def test_distinct_events_have_distinct_ids():
    s = torch.Stream(device=VKML)
    e1, e2 = s.record_event(), s.record_event()
    assert e1.event_id != 0 and e2.event_id != 0 and e1.event_id != e2.event_id
    first = e1.event_id
    e1.record(s)  # re-recording keeps the event
    assert e1.event_id == first


def test_elapsed_time_of_a_timed_matmul_loop():
    w = make((256, 256)).to(VKML) * 0.05
    x = make((256, 256)).to(VKML)
    _chain(x, w, 1).sum().item()  # pipelines created outside the timed span
    times, walls = [], []
    for n in (2, 16):
        start = torch.Event(device=VKML, enable_timing=True)
        end = torch.Event(device=VKML, enable_timing=True)
        torch.accelerator.synchronize()
        t0 = time.perf_counter()
        start.record()
        y = _chain(x, w, n)
        end.record()
        end.synchronize()
        walls.append((time.perf_counter() - t0) * 1e3)
        assert start.query() and end.query()
        times.append(start.elapsed_time(end))
        assert torch.isfinite(y).all().item()
    for ms, wall in zip(times, walls, strict=True):
        # Device time, in ms, passes between the records: more than nothing and not more
        # than the wall time around them (clocks of host and device differ a little).
        assert 0 < ms <= wall * 1.05 + 0.5, (times, walls)
    assert times[1] > times[0], times  # eight times the work takes longer


def test_elapsed_time_order_and_rerecord():
    x = torch.ones(1 << 16, device=VKML)
    a = torch.Event(device=VKML, enable_timing=True)
    b = torch.Event(device=VKML, enable_timing=True)
    a.record()
    x.mul_(3)
    b.record()
    b.synchronize()
    assert a.elapsed_time(b) > 0
    assert b.elapsed_time(a) < 0  # as CUDA: negative when the end came first
    assert a.elapsed_time(a) == 0.0
    x.add_(1)
    a.record()  # a now marks a later point
    a.synchronize()
    assert a.elapsed_time(b) < 0
    assert x[0].item() == 4.0


def test_timing_disabled():
    s = torch.Stream(device=VKML)
    e1, e2 = torch.Event(device=VKML), torch.Event(device=VKML)
    e1.record(s)
    e2.record(s)
    s.synchronize()
    assert e1.query() and e2.query()
    with pytest.raises(
        ValueError, match="Both events must be created with argument 'enable_timing"
    ):
        e1.elapsed_time(e2)
    timed = torch.Event(device=VKML, enable_timing=True)
    timed.record(s)
    timed.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        timed.elapsed_time(e1)


def test_event_lifecycle():
    s = torch.Stream(device=VKML)
    x = torch.zeros(4, device=VKML)
    events = []
    for i in range(300):  # more than one timestamp pool's worth, created and dropped
        e = torch.Event(device=VKML, enable_timing=i % 2 == 0)
        x.add_(1)
        e.record(s)
        events.append(e)
        if len(events) > 4:
            events.pop(0)
    s.synchronize()
    assert all(e.query() for e in events)
    assert x[0].item() == 300.0


# ---------------------------------------------------------------- streams


def test_stream_create():
    s = torch.Stream(device=VKML)
    assert s.device == torch.device(VKML, torch_vkml.current_device())
    assert s.device_type == _TYPE
    s0 = torch.Stream(device="vkml:0")
    assert s0.device_index == 0
    assert torch.Stream(0).device == torch.device(VKML, 0)
    assert s != s0 and s.stream_id != s0.stream_id  # each torch.Stream() is a new stream
    assert s.stream_id != 0 and s0.stream_id != 0  # none is the default stream
    same = torch.Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=_TYPE)
    assert same == s and hash(same) == hash(s)
    assert "torch.Stream device_type=vkml, device_index=0" in repr(s0)
    high = torch.Stream(device=VKML, priority=-1)  # priorities are accepted (no effect)
    assert high.device_index == 0 and high != s
    with pytest.raises(ValueError, match="out of range"):
        torch.Stream(device=torch.device(VKML, torch_vkml.device_count()))


def test_current_and_default_stream():
    current = torch.accelerator.current_stream()
    assert current == _default() and current.stream_id == 0
    assert torch.accelerator.current_stream(0) == current
    assert torch.accelerator.current_stream("vkml:0") == current
    s1, s2 = torch.Stream(device=VKML), torch.Stream(device=VKML)
    torch.accelerator.set_stream(s1)
    assert torch.accelerator.current_stream() == s1
    torch.accelerator.set_stream(s2)
    assert torch.accelerator.current_stream().stream_id == s2.stream_id
    # The current stream is per thread: another thread starts on the default stream.
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.accelerator.current_stream(0)))
    t.start()
    t.join()
    assert seen == [_default()]
    torch.accelerator.set_stream(current)
    assert torch.accelerator.current_stream() == current


def test_stream_context():
    s1, s2 = torch.Stream(device=VKML), torch.Stream(device=VKML)
    x = make((33, 17))
    with s1:
        assert torch.accelerator.current_stream() == s1
        y = x.to(VKML) * 2
        with s2:
            assert torch.accelerator.current_stream() == s2
            z = y + 1
        assert torch.accelerator.current_stream() == s1
    assert torch.accelerator.current_stream() == _default()
    torch.testing.assert_close(z.cpu(), x * 2 + 1)
    with torch.Stream(device="vkml:0") as s:
        assert torch.accelerator.current_stream() == s


def test_stream_query_synchronize():
    s = torch.Stream(device=VKML)
    assert s.query()  # nothing queued
    w = make((128, 128)).to(VKML) * 0.05
    with s:
        y = _chain(make((128, 128)).to(VKML), w, 8)
        e = torch.Event(device=VKML)
        e.record(s)
    s.synchronize()
    assert s.query() and e.query()
    assert torch.isfinite(y).all().item()


def test_record_event():
    s = torch.Stream(device=VKML)
    e = s.record_event()
    assert isinstance(e, torch.Event) and e.device == torch.device(VKML, 0)
    mine = torch.Event(device=VKML, enable_timing=True)
    assert s.record_event(mine) is mine
    assert mine.event_id != 0
    s.synchronize()
    assert e.query() and mine.query()
    assert mine.elapsed_time(mine) == 0.0


def test_wait_event_orders_producer_and_consumer():
    producer, consumer = torch.Stream(device=VKML), torch.Stream(device=VKML)
    x, w = make((96, 96)), make((96, 96)) * 0.1
    with producer:
        xd, wd = x.to(VKML), w.to(VKML)
        y = _chain(xd, wd, 6)
        ready = producer.record_event()
    consumer.wait_event(ready)
    with consumer:
        z = y.sum(0) * 2
        done = consumer.record_event()
    torch.accelerator.current_stream().wait_event(done)
    torch.testing.assert_close(z.cpu(), _chain(x, w, 6).sum(0) * 2, atol=1e-3, rtol=1e-4)
    # Several streams waiting for the same event compute the same result.
    s2, s3 = torch.Stream(device=VKML), torch.Stream(device=VKML)
    ready = producer.record_event()
    s2.wait_event(ready)
    s3.wait_event(ready)
    with s2:
        r2 = (y @ wd).sum()
    with s3:
        r3 = (y @ wd).sum()
    torch.accelerator.synchronize()
    assert ready.query()
    assert r2.item() == r3.item()


def test_wait_stream_and_event_wait():
    s1, s2 = torch.Stream(device=VKML), torch.Stream(device=VKML)
    x = make((1000,))
    with s1:
        a = x.to(VKML)
        for _ in range(20):
            a = a * 1.5 - 0.25
    s2.wait_stream(s1)
    with s2:
        b = a.neg()
    e = s2.record_event()
    e.wait(_default())  # the default stream waits for s2's work
    expect = x.clone()
    for _ in range(20):
        expect = expect * 1.5 - 0.25
    torch.testing.assert_close(b.cpu(), -expect)
    # A stream may wait for itself and for a stream with nothing queued.
    s1.wait_stream(s1)
    s1.wait_stream(torch.Stream(device=VKML))
    s1.synchronize()
    assert s1.query()


def test_autograd_on_a_side_stream():
    s = torch.Stream(device=VKML)
    w0 = make((16, 16))
    w = w0.to(VKML).requires_grad_()
    with s:
        loss = (w @ w).sin().sum()
    loss.backward()  # the engine hands results between s and the default stream
    wc = w0.clone().requires_grad_()
    (wc @ wc).sin().sum().backward()
    torch.testing.assert_close(w.grad.cpu(), wc.grad, atol=1e-4, rtol=1e-4)
    w.grad = None
    with s:
        (w @ w).sin().sum().backward()
    torch.testing.assert_close(w.grad.cpu(), wc.grad, atol=1e-4, rtol=1e-4)


def test_accelerator_synchronize_covers_every_stream():
    s1, s2 = torch.Stream(device=VKML), torch.Stream(device=VKML)
    with s1:
        a = make((4096,)).to(VKML).exp()
        e1 = s1.record_event()
    with s2:
        b = make((4096,)).to(VKML).cos()
        e2 = s2.record_event()
    torch.accelerator.synchronize()
    assert e1.query() and e2.query() and s1.query() and s2.query()
    assert torch.isfinite(a + b).all().item()


# ---------------------------------------------------------------- torch_vkml.Event


def test_torch_vkml_event_is_a_torch_event():
    e = torch_vkml.Event(enable_timing=True)
    assert isinstance(e, torch.Event)
    assert e.device == torch.device(VKML, 0)  # fixed at creation
    s = torch.Stream(device=VKML)
    x = torch.ones(1 << 12, device=VKML)
    e.record(s)
    with s:
        x.mul_(2)
    end = torch.Event(device=VKML, enable_timing=True)  # a plain torch.Event as the end
    end.record(s)
    s.wait_event(e)
    e.wait(s)
    assert e.elapsed_time(end) >= 0  # waits for both
    assert x.sum().item() == 2 * (1 << 12)
    plain = torch_vkml.Event()
    plain.record()
    with pytest.raises(RuntimeError, match="enable_timing"):
        plain.elapsed_time(e)
    with pytest.raises(ValueError, match="enable_timing"):  # torch.Event's error type too
        plain.elapsed_time(e)


# ---------------------------------------------------------------- several devices


@on_two_devices
def test_streams_and_events_on_two_devices():
    s0, s1 = torch.Stream(device="vkml:0"), torch.Stream(device="vkml:1")
    assert (s0.device_index, s1.device_index) == (0, 1)
    torch.accelerator.set_stream(s1)  # also makes device 1 current
    assert torch.accelerator.current_device_index() == 1
    assert torch.accelerator.current_stream() == s1
    assert torch.accelerator.current_stream(0) == _default(0)
    torch.accelerator.set_device_index(0)
    x = make((64, 64))
    with s0:
        y0 = _chain(x.to("vkml:0"), x.to("vkml:0") * 0.01, 8)
        e0 = torch.Event(device="vkml:0", enable_timing=True)
        e0.record(s0)
    s1.wait_event(e0)  # across devices: the host waits for e0
    assert e0.query()
    with s1:
        y1 = y0.to("vkml:1") + 1
        e1 = torch.Event(enable_timing=True)
        e1.record(s1)
    s1.synchronize()
    torch.testing.assert_close(y1.cpu(), y0.cpu() + 1)
    assert e1.device == torch.device(VKML, 1)
    with pytest.raises(RuntimeError, match="same vkml device"):
        e0.elapsed_time(e1)
    with pytest.raises(RuntimeError, match="does not match recording stream"):
        e0.record(s1)
    s0.wait_stream(s1)
    torch.accelerator.synchronize(1)
    assert s1.query()


def test_torch_cuda_style_stream_calls():
    """torch.vkml (the device module FSDP2 asks) offers torch.cuda's stream calls."""
    assert torch.vkml is torch_vkml
    s = torch_vkml.Stream(priority=-1)
    assert isinstance(s, torch.Stream) and s.device == torch.device(VKML, 0)
    assert torch_vkml.default_stream() == _default()
    assert torch_vkml.current_stream() == _default()
    with torch_vkml.stream(s):
        assert torch_vkml.current_stream() == s
        y = torch.arange(6.0, device=VKML) * 3
        done = s.record_event()
    assert torch_vkml.current_stream() == _default()
    torch_vkml.current_stream().wait_event(done)
    torch.testing.assert_close(y.cpu(), torch.arange(6.0) * 3)
    with torch_vkml.stream(None):  # None changes nothing, as torch.cuda.stream(None)
        assert torch_vkml.current_stream() == _default()
    torch_vkml.set_stream(s)
    assert torch_vkml.current_stream() == s
    torch_vkml.set_stream(_default())
    assert torch_vkml.current_stream() == _default()
