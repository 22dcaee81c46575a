"""torch.distributed on vkml tensors through the vkml_gloo backend (2 ranks, one machine).

One pair of worker processes (this file run as a script) runs every scenario once and writes
its results to a JSON file per rank; the tests below read them. Rank r uses vkml:r; with a
single physical device the children see it twice (TORCH_VKML_VISIBLE_DEVICES=0,0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from datetime import timedelta
from pathlib import Path

import pytest

WORLD = 2


# --------------------------------------------------------------------------- worker side


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def _close(a, b, what: str, rtol: float = 0.0, atol: float = 0.0) -> None:
    import torch

    a, b = a.cpu(), b.cpu()
    _check(a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}")
    _check(torch.allclose(a, b, rtol=rtol, atol=atol), f"{what}: {a} != {b}")


def _collectives(rank: int, dev) -> None:
    import torch
    import torch.distributed as dist

    ranks = torch.arange(WORLD, dtype=torch.float64) + 1  # rank r contributes (r + 1) * base

    def base(dtype, n=6):
        return torch.arange(1, n + 1).to(dtype)

    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int64):
        ops = [dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT]
        if dtype.is_floating_point:
            ops.append(dist.ReduceOp.AVG)
        for op in ops:
            t = (base(dtype) * (rank + 1)).to(dev)
            dist.all_reduce(t, op=op)
            b = base(torch.float64)
            per_rank = torch.stack([b * r for r in ranks])
            expect = {
                dist.ReduceOp.SUM: per_rank.sum(0),
                dist.ReduceOp.MIN: per_rank.min(0).values,
                dist.ReduceOp.MAX: per_rank.max(0).values,
                dist.ReduceOp.PRODUCT: per_rank.prod(0),
                dist.ReduceOp.AVG: per_rank.mean(0),
            }[op].to(dtype)
            _check(t.device == dev, f"all_reduce moved the tensor to {t.device}")
            _close(t, expect, f"all_reduce {op} {dtype}")

    # async_op: the Work's future holds the result once it completes
    t = torch.ones(4, device=dev)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    _close(work.get_future().value()[0], torch.full((4,), float(WORLD)), "async all_reduce")

    # a non-contiguous tensor is reduced in place
    m = torch.ones(4, 3, device=dev).t()
    dist.all_reduce(m)
    _close(m, torch.full((3, 4), float(WORLD)), "all_reduce non-contiguous")

    t = torch.full((5,), float(rank), device=dev)
    dist.broadcast(t, src=1)
    _close(t, torch.full((5,), 1.0), "broadcast")

    x = torch.arange(3, dtype=torch.float32, device=dev) + 10 * rank
    outs = [torch.empty(3, device=dev) for _ in range(WORLD)]
    dist.all_gather(outs, x)
    for r in range(WORLD):
        _close(outs[r], torch.arange(3, dtype=torch.float32) + 10 * r, "all_gather")

    out = torch.empty(WORLD * 3, device=dev)
    dist.all_gather_into_tensor(out, x)
    _close(out, torch.cat([torch.arange(3.0) + 10 * r for r in range(WORLD)]), "all_gather_into")

    full = torch.arange(WORLD * 4, dtype=torch.float32, device=dev) * (rank + 1)
    out = torch.empty(4, device=dev)
    dist.reduce_scatter_tensor(out, full)
    total = torch.arange(WORLD * 4, dtype=torch.float32) * sum(range(1, WORLD + 1))
    _close(out, total[rank * 4 : (rank + 1) * 4], "reduce_scatter_tensor")

    outs_rs = torch.empty(4, device=dev)
    dist.reduce_scatter(outs_rs, list(full.chunk(WORLD)))
    _close(outs_rs, total[rank * 4 : (rank + 1) * 4], "reduce_scatter")

    t = torch.full((3,), float(rank + 1), device=dev)
    dist.reduce(t, dst=0)
    if rank == 0:
        _close(t, torch.full((3,), float(sum(range(1, WORLD + 1)))), "reduce")

    t = torch.full((2,), float(rank), device=dev)
    gl = [torch.empty(2, device=dev) for _ in range(WORLD)] if rank == 0 else None
    dist.gather(t, gl, dst=0)
    if rank == 0:
        for r in range(WORLD):
            _close(gl[r], torch.full((2,), float(r)), "gather")

    sl = [torch.full((2,), float(r) + 0.5, device=dev) for r in range(WORLD)] if rank == 1 else None
    t = torch.empty(2, device=dev)
    dist.scatter(t, sl, src=1)
    _close(t, torch.full((2,), rank + 0.5), "scatter")

    inp = torch.arange(WORLD * 2, dtype=torch.float32, device=dev) + 100 * rank
    out = torch.empty(WORLD * 2, device=dev)
    dist.all_to_all_single(out, inp)
    expect = torch.cat(
        [torch.arange(rank * 2, rank * 2 + 2, dtype=torch.float32) + 100 * r for r in range(WORLD)]
    )
    _close(out, expect, "all_to_all_single")

    if rank == 0:
        dist.send(torch.arange(4.0, device=dev), dst=1)
    else:
        t = torch.zeros(4, device=dev)
        dist.recv(t, src=0)
        _close(t, torch.arange(4.0), "send/recv")

    dist.barrier()


def _asynchronous(rank: int, dev) -> None:
    """Collectives return before their transfer: the caller queues more work meanwhile."""
    import torch
    import torch.distributed as dist

    import torch_vkml

    ts = [torch.full((1000,), float(rank + i), device=dev) for i in range(3)]
    torch.accelerator.synchronize()
    syncs = torch_vkml.memory_stats()["num_syncs"]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    other = torch.arange(6.0, device=dev) * 2  # queued while the all_reduces run
    _check(torch_vkml.memory_stats()["num_syncs"] == syncs, "issuing a collective waited")
    for w in works:
        w.wait()
        _check(w.is_completed() and w.is_success(), "work not completed after wait()")
    for i, t in enumerate(ts):
        _close(t, torch.full((1000,), float(sum(r + i for r in range(WORLD)))), f"async {i}")
    _close(other, torch.arange(6.0) * 2, "work queued between collectives")

    # a then() callback sees the result on the device
    t = torch.full((3,), float(rank + 1), device=dev)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 10)
    _close(fut.wait(), torch.full((3,), 10.0 * sum(range(1, WORLD + 1))), "future then")

    # a large tensor goes in chunks (4 MiB each); fp16 and a non-multiple length
    for dtype, n in ((torch.float32, 3_000_001), (torch.float16, 5_000_003)):
        big = torch.ones(n, dtype=dtype, device=dev) * (rank + 1)
        big[-1] = 0.5 * (rank + 1)
        dist.all_reduce(big)
        total = float(sum(range(1, WORLD + 1)))
        host = big.cpu()
        _check(bool((host[:-1] == total).all()), f"chunked all_reduce {dtype}")
        _check(host[-1].item() == 0.5 * total, f"chunked all_reduce tail {dtype}")


def _point_to_point(rank: int, dev) -> None:
    import torch
    import torch.distributed as dist

    peer = 1 - rank
    # both ranks post their send before their receive
    out = torch.full((5,), float(rank), device=dev)
    got = torch.empty(5, device=dev)
    sends = dist.isend(out, dst=peer)
    recvs = dist.irecv(got, src=peer)
    sends.wait()
    recvs.wait()
    _close(got, torch.full((5,), float(peer)), "isend/irecv both first")

    # a ring through batch_isend_irecv
    out = torch.arange(4.0, device=dev) + 10 * rank
    got = torch.empty(4, device=dev)
    ops = [
        dist.P2POp(dist.isend, out, (rank + 1) % WORLD),
        dist.P2POp(dist.irecv, got, (rank - 1) % WORLD),
    ]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    _close(got, torch.arange(4.0) + 10 * ((rank - 1) % WORLD), "batch_isend_irecv")


def _coalesced(rank: int, dev) -> None:
    import torch
    import torch.distributed as dist

    a = torch.full((3,), float(rank + 1), device=dev)
    b = torch.full((2, 2), float(rank + 2), device=dev)
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    _close(a, torch.full((3,), 3.0), "coalesced all_reduce a")
    _close(b, torch.full((2, 2), 5.0), "coalesced all_reduce b")

    ins = [
        torch.full((2,), float(rank), device=dev),
        torch.full((3,), float(rank) + 0.5, device=dev),
    ]
    outs = [torch.empty(2 * WORLD, device=dev), torch.empty(3 * WORLD, device=dev)]
    with dist._coalescing_manager():
        for o, i in zip(outs, ins, strict=True):
            dist.all_gather_into_tensor(o, i)
    _close(outs[0], torch.tensor([0.0, 0, 1, 1]), "coalesced all_gather_into_tensor")
    _close(outs[1], torch.tensor([0.5, 0.5, 0.5, 1.5, 1.5, 1.5]), "coalesced all_gather 2")

    full = [torch.arange(4.0, device=dev) * (rank + 1), torch.arange(6.0, device=dev)]
    parts = [torch.empty(2, device=dev), torch.empty(3, device=dev)]
    with dist._coalescing_manager():
        for o, i in zip(parts, full, strict=True):
            dist.reduce_scatter_tensor(o, i)
    _close(parts[0], (torch.arange(4.0) * 3)[rank * 2 : rank * 2 + 2], "coalesced reduce_scatter")
    _close(parts[1], (torch.arange(6.0) * 2)[rank * 3 : rank * 3 + 3], "coalesced reduce_scatter 2")

    # all_to_all with a list per rank, and all_gather_into_tensor into a [1, world * n] view
    ins = [torch.full((r + 1,), float(10 * rank + r), device=dev) for r in range(WORLD)]
    outs = [torch.empty(rank + 1, device=dev) for _ in range(WORLD)]
    dist.all_to_all(outs, ins)
    for r in range(WORLD):
        _close(outs[r], torch.full((rank + 1,), float(10 * r + rank)), f"all_to_all from {r}")
    stacked = torch.empty(1, 2 * WORLD, device=dev)
    dist.all_gather_into_tensor(stacked, torch.full((2,), float(rank), device=dev))
    _close(stacked, torch.tensor([[0.0, 0, 1, 1]]), "all_gather_into_tensor [1, world * n]")


def _groups_and_errors(rank: int, dev) -> None:
    import torch
    import torch.distributed as dist

    # ranks that disagree on shapes get an error, not an abort, and the group stays usable
    t = torch.ones(4 + rank, device=dev)
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        _check("different" in str(e) and "shapes" in str(e), f"unclear mismatch error: {e}")
    else:
        raise AssertionError("all_reduce of different shapes did not raise")
    t = torch.ones(4, device=dev)
    dist.all_reduce(t)
    _close(t, torch.full((4,), float(WORLD)), "all_reduce after a mismatch")

    # a wrongly sized output is a ValueError, as with NCCL
    try:
        dist.all_gather_into_tensor(torch.empty(3, device=dev), torch.ones(2, device=dev))
    except ValueError as e:
        _check("world size" in str(e), f"unclear size error: {e}")
    else:
        raise AssertionError("all_gather_into_tensor into a wrongly sized output did not raise")

    # a new group over the same ranks, used and destroyed
    group = dist.new_group(list(range(WORLD)))
    t = torch.full((2,), float(rank), device=dev)
    dist.all_reduce(t, group=group)
    _close(t, torch.full((2,), float(sum(range(WORLD)))), "new_group all_reduce")
    dist.destroy_process_group(group)


def _cpu_tensor_error(dev) -> None:
    import torch
    import torch.distributed as dist

    try:
        dist.all_reduce(torch.ones(2))
    except (RuntimeError, ValueError) as e:
        _check("cpu" in str(e).lower(), f"unclear error for a CPU tensor: {e}")
    else:
        raise AssertionError("all_reduce of a CPU tensor on a vkml-only group did not raise")
    # The backend itself rejects CPU tensors with its own message.
    backend = dist.group.WORLD._get_backend(dev)
    _check(backend.name() == "vkml_gloo", f"backend name {backend.name()}")
    try:
        backend.allreduce([torch.ones(2)])
    except RuntimeError as e:
        _check("expected vkml tensors" in str(e), f"unclear error: {e}")
    else:
        raise AssertionError("the vkml backend accepted a CPU tensor")
    dist.barrier()  # both ranks are still in step


def _ddp(rank: int, dev) -> None:
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    import torch_vkml

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)
        ).to(dev)

    g = torch.Generator().manual_seed(1)
    x_all = torch.randn(5, 16, 8, generator=g)
    y_all = torch.randn(5, 16, 4, generator=g)

    ref = make()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for s in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x_all[s].to(dev)), y_all[s].to(dev)).backward()
        opt.step()

    torch_vkml.reset_fallback_counts()
    model = DDP(make(), device_ids=[dev.index])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    half = 16 // WORLD
    for s in range(5):
        xs = x_all[s, rank * half : (rank + 1) * half].to(dev)
        ys = y_all[s, rank * half : (rank + 1) * half].to(dev)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xs), ys).backward()
        opt.step()
    fallbacks = torch_vkml.fallback_counts()
    _check(not fallbacks, f"CPU fallbacks under DDP: {fallbacks}")
    # DDP times its steps on vkml as on CUDA (device time, torch_vkml's timer)
    stats = model._get_ddp_logging_data()
    for key in ("avg_forward_compute_time", "avg_backward_compute_time", "avg_backward_comm_time"):
        _check(stats.get(key, 0) > 0, f"DDP logging data {key} = {stats.get(key)}")
    for p, q in zip(model.module.parameters(), ref.parameters(), strict=True):
        _check(p.device == dev, f"DDP parameter on {p.device}")
        _close(p.detach(), q.detach(), "DDP weights", rtol=1e-5, atol=1e-5)


def _worker(rank: int, ports: list[int], out_dir: str) -> None:
    import torch
    import torch.distributed as dist

    results: dict[str, str] = {}

    def scenario(name, fn, *args):
        try:
            fn(*args)
            results[name] = "ok"
        except Exception:
            results[name] = traceback.format_exc()

    def init(port, **kw):
        store = dist.TCPStore(
            "127.0.0.1", port, WORLD, is_master=rank == 0, timeout=timedelta(seconds=60)
        )
        dist.init_process_group(
            store=store, rank=rank, world_size=WORLD, timeout=timedelta(seconds=60), **kw
        )
        return store

    torch.accelerator.set_device_index(rank)
    dev = torch.device("vkml", rank)

    def default_backend():
        _check(torch.accelerator.current_accelerator().type == "vkml", "accelerator not vkml")
        _check(
            dist.get_default_backend_for_device("vkml") == "vkml_gloo",
            dist.get_default_backend_for_device("vkml"),
        )
        config = dist.get_backend_config()
        _check(config == "vkml:vkml_gloo", f"get_backend_config() = {config}")

    store = init(ports[0])  # no backend argument: the accelerator's default
    scenario("default_backend", default_backend)
    scenario("collectives", _collectives, rank, dev)
    scenario("asynchronous", _asynchronous, rank, dev)
    scenario("point_to_point", _point_to_point, rank, dev)
    scenario("coalesced", _coalesced, rank, dev)
    scenario("groups_and_errors", _groups_and_errors, rank, dev)
    scenario("cpu_tensor_error", _cpu_tensor_error, dev)
    scenario("ddp", _ddp, rank, dev)
    dist.destroy_process_group()
    del store

    def mixed():
        t = torch.full((3,), float(rank + 1), device=dev)
        dist.all_reduce(t)
        _close(t, torch.full((3,), 3.0), "re-init vkml all_reduce")
        c = torch.full((3,), float(rank + 1))
        dist.all_reduce(c)  # the CPU tensor goes to plain Gloo
        _close(c, torch.full((3,), 3.0), "re-init cpu all_reduce")

    try:
        store = init(ports[1], backend="cpu:gloo,vkml:vkml_gloo")
        scenario("reinit_mixed", mixed)
        dist.destroy_process_group()
        del store
    except Exception:
        results["reinit_mixed"] = traceback.format_exc()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))


# --------------------------------------------------------------------------- test side


@pytest.fixture(scope="module", params=["in-place", "copies"])
def results(request, tmp_path_factory):
    """Both ways to the host: Gloo on the device tensors themselves where the device's
    memory is host-mapped (lavapipe, integrated GPUs), and through pinned copies (discrete
    GPUs; forced with TORCH_VKML_DIST_ZERO_COPY=0)."""
    from conftest import free_ports  # here: this file also runs as the ranks' script

    import torch_vkml

    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ)
    if request.param == "copies":
        env["TORCH_VKML_DIST_ZERO_COPY"] = "0"
    if torch_vkml.device_count() < WORLD:
        env["TORCH_VKML_VISIBLE_DEVICES"] = ",".join(["0"] * WORLD)
    # The ranks are vkml programs: where CUDA has a device, the autoload keeps out
    # (docs/coexistence.md), and vkml would not be the accelerator they test.
    env["CUDA_VISIBLE_DEVICES"] = ""
    ports = ",".join(map(str, free_ports(2)))
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(r), ports, str(out)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(WORLD)
    ]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=240)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    per_rank = []
    for r, p in enumerate(procs):
        f = out / f"rank{r}.json"
        assert p.returncode == 0 and f.exists(), f"rank {r} failed:\n{logs[r][-4000:]}"
        per_rank.append(json.loads(f.read_text()))
    return per_rank


@pytest.mark.parametrize(
    "name",
    [
        "default_backend",
        "collectives",
        "asynchronous",
        "point_to_point",
        "coalesced",
        "groups_and_errors",
        "cpu_tensor_error",
        "ddp",
        "reinit_mixed",
    ],
)
def test_distributed(results, name):
    for r, res in enumerate(results):
        assert res.get(name) == "ok", f"rank {r}, {name}:\n{res.get(name)}"


if __name__ == "__main__":
    _worker(int(sys.argv[1]), [int(p) for p in sys.argv[2].split(",")], sys.argv[3])
