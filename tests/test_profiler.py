"""torch.profiler on vkml: every kernel with its device time, on the device's track,
attributed to the aten op that launched it (csrc/aten/profiler.cpp)."""

import json
import time

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML
from torch import nn
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import torch_vkml

DEVICE_ACTIVITY = ProfilerActivity.PrivateUse1  # printed as ProfilerActivity.VKML
BOTH = [ProfilerActivity.CPU, DEVICE_ACTIVITY]


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(VKML)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.relu(self.conv(x)), 1))


def convnet():
    torch.manual_seed(0)
    return ConvNet().to(VKML)


def batch(model):
    shape = (4, 3, 8, 8) if isinstance(model, ConvNet) else (16, 32)
    x = torch.randn(*shape).to(VKML)
    y = torch.randint(0, 10, (shape[0],)).to(VKML)
    return x, y


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def profiled_step(model, activities=BOTH):
    """One warmed-up training step under torch.profiler; returns the profiler and the
    wall time of the profiled block in microseconds."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch(model)
    train_step(model, opt, x, y)  # pipelines created before the profiled step
    torch_vkml.synchronize()
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        train_step(model, opt, x, y)
        torch_vkml.synchronize()
        wall_us = (time.perf_counter() - start) * 1e6
    return prof, wall_us


def device_events(prof):
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def elapsed_us(e):
    return e.time_range.end - e.time_range.start


@pytest.mark.parametrize("make", [mlp, convnet], ids=["mlp", "conv_linear"])
def test_training_step_kernels_have_device_time_attributed_to_their_ops(make, no_fallback):
    model = make()
    prof, wall_us = profiled_step(model)
    kernels = device_events(prof)
    assert kernels, "no vkml kernel in the profile"
    assert all(e.device_index == 0 for e in kernels)
    assert all(elapsed_us(e) > 0 for e in kernels), [e.name for e in kernels if elapsed_us(e) <= 0]
    names = {e.name for e in kernels}
    assert any(n.startswith("gemm_") for n in names), names
    assert any(n.endswith(" relu") for n in names), names  # elementwise kernels name the op
    # Kernels run one at a time while profiled, inside the (synchronized) block.
    busy = sum(elapsed_us(e) for e in kernels)
    assert 0 < busy <= wall_us, (busy, wall_us)

    # Every kernel is linked to the aten op that launched it: the ops' kernels add up to
    # all of them.
    attributed = sum(
        k.duration for e in prof.events() if e.device_type == DeviceType.CPU for k in e.kernels
    )
    assert attributed == pytest.approx(busy, rel=1e-6)

    averages = {a.key: a for a in prof.key_averages()}
    for op in ["aten::addmm", "aten::mm"]:  # forward and backward products
        assert averages[op].self_device_time_total > 0, op
        assert averages[op].device_time_total >= averages[op].self_device_time_total
    if isinstance(model, ConvNet):
        assert averages["aten::convolution_overrideable"].self_device_time_total > 0
        assert averages["aten::convolution_backward_overrideable"].self_device_time_total > 0
    # The optimizer's step and the loss run on the device too.
    assert averages["aten::_foreach_add_"].self_device_time_total > 0
    # A parent op counts its children's kernels, not as its own.
    linear = averages["aten::linear"]
    assert linear.device_time_total > 0 and linear.self_device_time_total == 0

    table = prof.key_averages().table(sort_by="self_device_time_total", row_limit=-1)
    assert "Self VKML" in table and "aten::addmm" in table and "gemm_" in table
    first_row = table.splitlines()[3]
    top = max(prof.key_averages(), key=lambda a: a.self_device_time_total)
    assert first_row.strip().startswith(top.key[:20]), (first_row, top.key)
    assert torch_vkml.validation_messages() == []


def test_chrome_trace_has_the_kernels_on_the_device_track(tmp_path, no_fallback):
    prof, _ = profiled_step(convnet())
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    device_pids = [pid for pid, name in names.items() if str(name).startswith("vkml:0")]
    assert device_pids == [0], names
    kernels = [e for e in events if e.get("ph") == "X" and e["pid"] == 0]
    assert kernels and {e["cat"] for e in kernels} <= {"kernel", "gpu_memcpy"}
    assert all(e["dur"] > 0 for e in kernels)
    assert len(kernels) == len(device_events(prof))
    # Each kernel carries the "External id" of the CPU op that launched it.
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"}
    for k in kernels:
        op = ops[k["args"]["External id"]]
        assert op["pid"] != 0 and "::" in op["name"], (k, op)  # aten::..., vkml::...
        # The op recorded it before the device ran it (the clocks agree to within the
        # device-to-host calibration's error, well under the ops' own time here).
        assert k["ts"] >= op["ts"] - 50, (k, op)
    launched_by = {ops[k["args"]["External id"]]["name"] for k in kernels}
    assert {"aten::convolution_overrideable", "aten::addmm", "aten::mm"} <= launched_by


def test_profiling_twice_counts_each_run_once(no_fallback):
    model = mlp()
    first, _ = profiled_step(model)
    second, _ = profiled_step(model)
    a, b = device_events(first), device_events(second)
    assert a and [e.name for e in a] == [e.name for e in b]
    assert torch_vkml.validation_messages() == []


def test_cpu_only_profiling_leaves_the_device_alone(no_fallback):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch(model)
    train_step(model, opt, x, y)
    torch_vkml.synchronize()

    def barriers_of_a_step():
        before = torch_vkml.memory_stats()["num_barriers"]
        train_step(model, opt, x, y)
        torch_vkml.synchronize()
        return torch_vkml.memory_stats()["num_barriers"] - before

    plain = barriers_of_a_step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        cpu_only = barriers_of_a_step()
    assert device_events(prof) == []
    assert cpu_only == plain  # no profiler attached to the stream
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::addmm"].count == 2
    assert "aten::addmm" in prof.key_averages().table(sort_by="self_cpu_time_total")
    assert torch_vkml.profiler_utilization(prof)["kernels"] == 0
    # Profiled with the device: a barrier before every command, so each runs alone.
    with profile(activities=BOTH):
        profiled = barriers_of_a_step()
    assert profiled > plain
    assert barriers_of_a_step() == plain  # and off again afterwards


def test_device_activity_alone_still_records_the_kernels(no_fallback):
    prof, _ = profiled_step(mlp(), activities=[DEVICE_ACTIVITY])
    kernels = device_events(prof)
    assert kernels and all(elapsed_us(e) > 0 for e in kernels)


def test_utilization_is_busy_over_wall(no_fallback):
    prof, wall_us = profiled_step(convnet())
    u = torch_vkml.profiler_utilization(prof)
    kernels = device_events(prof)
    assert u["kernels"] == len(kernels)
    # Kernels run one at a time while profiled: their union is their sum.
    assert u["busy_us"] == pytest.approx(sum(elapsed_us(e) for e in kernels), rel=1e-3)
    assert 0 < u["busy_us"] <= u["wall_us"] <= wall_us * 1.5 + 5000
    assert u["utilization"] == pytest.approx(u["busy_us"] / u["wall_us"])
    assert 0 < u["utilization"] <= 1
    assert torch_vkml.profiler_utilization(prof, device=1)["busy_us"] == 0
    assert torch_vkml.profiler_utilization([]) == {
        "busy_us": 0.0,
        "wall_us": 0.0,
        "utilization": 0.0,
        "kernels": 0,
    }


def test_torch_vkml_profile_inside_torch_profiler_sees_the_same_kernels(no_fallback):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch(model)
    train_step(model, opt, x, y)
    torch_vkml.synchronize()
    with profile(activities=BOTH) as prof:
        with torch_vkml.profile() as inner:
            train_step(model, opt, x, y)
            torch_vkml.synchronize()
    kernels = device_events(prof)
    assert sum(k.calls for k in inner.kernels) == len(kernels)
    by_name = {}
    for e in kernels:
        by_name[e.name] = by_name.get(e.name, 0) + 1
    assert {k.name: k.calls for k in inner.kernels} == by_name
    # The same records: each kernel's total is the sum of its trace events.
    for k in inner.kernels:
        total_us = sum(elapsed_us(e) for e in kernels if e.name == k.name)
        assert k.total_ms * 1000 == pytest.approx(total_us, rel=1e-3, abs=0.01)


def test_nested_torch_vkml_profiles_each_count_their_own_block(no_fallback):
    x = torch.randn(256, device=VKML)
    with torch_vkml.profile() as outer:
        x.mul_(2.0)
        with torch_vkml.profile() as inner:
            x.add_(1.0)
        x.sub_(3.0)
    assert sum(k.calls for k in inner.kernels) == 1
    assert inner.kernels[0].name.endswith(" add")
    assert sum(k.calls for k in outer.kernels) == 3
    with pytest.raises(ValueError, match="profiler was not started"):
        torch_vkml._C._profile_stop()


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_scheduled_profiling_traces_every_active_cycle(no_fallback):
    x = torch.randn(48, 48, device=VKML)
    cycles = []

    def ready(p):
        averages = {a.key: a for a in p.key_averages()}
        kernels = [e for e in device_events(p) if e.name.startswith("gemm_")]
        cycles.append((averages["aten::mm"].device_time_total, len(kernels)))

    plan = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(activities=BOTH, schedule=plan, on_trace_ready=ready) as prof:
        for _ in range(8):
            (x @ x).sum().item()
            prof.step()
    assert len(cycles) == 2
    assert all(time > 0 and gemms == 2 for time, gemms in cycles), cycles


def test_legacy_use_device_profiler_times_each_op(no_fallback):
    """torch.autograd.profiler.profile(use_device=...) without Kineto: an event pair on
    the device's clock around each op (registerPrivateUse1Methods' stubs)."""
    x = torch.randn(48, 48, device=VKML)
    (x @ x).sum().item()
    with torch.autograd.profiler.profile(use_device=VKML) as prof:
        (x @ x).sum().item()
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::mm"].device_time_total > 0
    assert "Self VKML" in prof.key_averages().table(sort_by="self_device_time_total")
