"""torch.Event and torch.Stream on vkml, through the device guard's stream and event hooks.

Equivalents of the event and stream tests of PyTorch's out-of-tree reference backend
(torch_openreg). Each vkml stream has its own command buffers and timeline (and its own
queue where the device has several; lavapipe has one), so the tests order work on two
streams by events and wait_stream, as a CUDA program must: results, current-stream
bookkeeping, event states, device timing, and record_stream's hold on freed memory.
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
        s2.wait_stream(s1)
        with s2:
            assert torch.accelerator.current_stream() == s2
            z = y + 1
        assert torch.accelerator.current_stream() == s1
    assert torch.accelerator.current_stream() == _default()
    _default().wait_stream(s2)
    torch.testing.assert_close(z.cpu(), x * 2 + 1)
    with torch.Stream(device="vkml:0") as s:
        assert torch.accelerator.current_stream() == s


def test_stream_query_synchronize():
    s = torch.Stream(device=VKML)
    assert s.query()  # nothing queued
    w = make((128, 128)).to(VKML) * 0.05
    s.wait_stream(torch.accelerator.current_stream())  # w is made on the default stream
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
    s.wait_stream(torch.accelerator.current_stream())
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
    s.wait_stream(torch.accelerator.current_stream())
    e.record(s)
    with s:
        x.mul_(2)
    end = torch.Event(device=VKML, enable_timing=True)  # a plain torch.Event as the end
    end.record(s)
    s.wait_event(e)
    e.wait(s)
    assert e.elapsed_time(end) >= 0  # waits for both
    torch.accelerator.current_stream().wait_event(end)
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


# ---------------------------------------------------------------- streams that run apart


class _held:
    """Keeps stream `s` busy on the GPU (its later submissions wait) inside the block."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        torch_vkml._C._hold_stream(self.s, True)
        return self.s

    def __exit__(self, *exc):
        torch_vkml._C._hold_stream(self.s, False)


def test_side_streams_have_their_own_timeline():
    s = torch.Stream(device=VKML)
    x = make((4096,)).to(VKML)
    torch.accelerator.synchronize()
    with _held(s):
        with s:
            y = x * 2
            on_s = s.record_event()
        # The default stream is not behind s: its own work completes (where s shares
        # the default stream's queue, as on lavapipe, the queue waits behind s instead).
        assert not s.query() and not on_s.query()
        mine = torch.accelerator.current_stream().record_event()
        shared_queue = torch_vkml.get_device_properties().queue_count == 1
        if not shared_queue:
            mine.synchronize()
        # What waits for s waits on the GPU, without the host blocking here.
        torch.accelerator.current_stream().wait_stream(s)
        z = y + 1
        after = torch.accelerator.current_stream().record_event()
        assert not after.query()
    after.synchronize()
    assert s.query() and on_s.query() and mine.query()
    torch.testing.assert_close(z.cpu(), x.cpu() * 2 + 1)


def test_memory_freed_on_its_stream_is_reused_there_at_once():
    s = torch.Stream(device=VKML)
    a = torch.empty(1 << 16, device=VKML)
    address = a.data_ptr()
    del a
    b = torch.empty(1 << 16, device=VKML)
    assert b.data_ptr() == address  # in the stream's order: no wait needed
    del b
    with s:  # another stream's allocations come from blocks of its own, as on CUDA
        c = torch.empty(1 << 16, device=VKML)
        assert c.data_ptr() != address
        del c
        d = torch.empty(1 << 16, device=VKML)
    e = torch.empty(1 << 16, device=VKML)
    assert e.data_ptr() == address and d.data_ptr() != address


def test_record_stream_holds_memory_until_the_stream_passed():
    s = torch.Stream(device=VKML)
    x_cpu = make((1 << 16,))
    x = x_cpu.to(VKML)
    torch.accelerator.synchronize()
    address = x.data_ptr()
    with _held(s):
        s.wait_stream(torch.accelerator.current_stream())
        with s:
            y = x * 3  # s reads x, later than the default stream may reuse it
        x.record_stream(s)
        del x
        reuse = torch.empty(1 << 16, device=VKML)
        assert reuse.data_ptr() != address  # s has not read x yet
        del reuse
    s.synchronize()
    again = torch.empty(1 << 16, device=VKML)
    assert again.data_ptr() == address  # once s passed the free, the memory is back
    torch.accelerator.current_stream().wait_stream(s)
    assert torch.equal(y.cpu(), x_cpu * 3)


def test_record_stream_of_a_view_and_of_the_own_stream():
    x = make((64, 64)).to(VKML)
    s = torch.Stream(device=VKML)
    x[3:].record_stream(s)  # the storage's memory, whatever view names it
    x.record_stream(torch.accelerator.current_stream())  # its own stream: nothing to hold
    torch.empty(0, device=VKML).record_stream(s)
    with pytest.raises(RuntimeError, match="vkml stream"):
        x.record_stream(torch.Stream(device="cpu"))
    del x
    torch.accelerator.synchronize()


def test_side_stream_work_starts_when_the_thread_leaves_the_stream():
    s = torch.Stream(device=VKML)
    with s:
        y = torch.ones(1 << 12, device=VKML) * 5
    # Submitted on leaving s, as a CUDA launch starts at once: s finishes with nobody
    # synchronizing it.
    deadline = time.monotonic() + 30
    while not s.query() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert s.query()
    torch.accelerator.current_stream().wait_stream(s)
    assert y.sum().item() == 5 * (1 << 12)


def test_training_with_the_copies_on_a_side_stream():
    """The pattern of data loaders that prefetch: uploads on a side stream, ordered by
    wait_stream and kept alive by record_stream, a training step on the default one."""
    torch.manual_seed(0)

    def mlp():
        return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))

    model, cpu_model = mlp(), mlp()
    cpu_model.load_state_dict(model.state_dict())
    model.to(VKML)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1)
    batches = [(torch.randn(16, 12), torch.randint(0, 3, (16,))) for _ in range(6)]
    copy = torch.Stream(device=VKML)
    main = torch.accelerator.current_stream()
    with copy:
        ahead = [t.pin_memory().to(VKML, non_blocking=True) for t in batches[0]]
    for i, (x, y) in enumerate(batches):
        main.wait_stream(copy)
        xd, yd = ahead
        for t in (xd, yd):
            t.record_stream(main)
        if i + 1 < len(batches):
            with copy:
                ahead = [t.pin_memory().to(VKML, non_blocking=True) for t in batches[i + 1]]
        loss = torch.nn.functional.cross_entropy(model(xd), yd)
        opt.zero_grad()
        loss.backward()
        opt.step()
        cpu_loss = torch.nn.functional.cross_entropy(cpu_model(x), y)
        cpu_opt.zero_grad()
        cpu_loss.backward()
        cpu_opt.step()
        torch.testing.assert_close(loss.cpu(), cpu_loss, atol=1e-5, rtol=1e-4)
