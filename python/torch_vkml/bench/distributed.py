"""python -m torch_vkml.bench --distributed [--quick | --smoke]

torch.distributed on vkml tensors, measured with two ranks on this machine:
- all_reduce (sum, float32) from 1 KiB up: vkml tensors through the vkml_gloo backend against
  CPU tensors through plain Gloo in the same process group and the same run, so the ratio is
  what staging through the host costs (target: at most 1.3x Gloo's time from 1 MiB up), with
  each one's bus bandwidth (2 (n - 1) / n x bytes / time, NCCL's convention); CUDA tensors
  through NCCL where CUDA has a device per rank, else through Gloo with every rank on cuda:0
  (NCCL refuses two ranks on one GPU): the same staging through the host that vkml_gloo does,
  done by PyTorch for CUDA;
- DDP training throughput of a small MLP with a fixed batch per rank: 2 ranks against 1.

Each rank is a child process (this module with --worker); with one physical device the
children see it twice (TORCH_VKML_VISIBLE_DEVICES=0,0).
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORLD = 2
SIZES = {
    "smoke": [1 << 10, 1 << 20],
    "quick": [1 << 10, 1 << 16, 1 << 20, 1 << 22, 1 << 24],
    "full": [1 << k for k in range(10, 29, 2)],
}
# (seconds a size is timed for at most, most repetitions)
BUDGET = {"smoke": (0.2, 3), "quick": (0.5, 10), "full": (1.5, 30)}
DDP_STEPS = {"smoke": 3, "quick": 10, "full": 30}


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TiB"


def _time_all_reduce(dist, torch, device, nbytes: int, budget: tuple[float, int]) -> float:
    """Median seconds of one all_reduce of `nbytes` of float32 on `device`, this rank."""
    # torch.accelerator is vkml wherever torch_vkml is loaded, also beside CUDA.
    if device.type == "cuda":
        sync = lambda: torch.cuda.synchronize(device)  # noqa: E731
    elif device.type == "cpu":
        sync = lambda: None  # noqa: E731
    else:
        sync = torch.accelerator.synchronize
    t = torch.ones(max(1, nbytes // 4), device=device)
    for _ in range(2):
        dist.all_reduce(t)
    sync()
    seconds, reps = budget
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < reps and (len(times) < 3 or time.perf_counter() - start < seconds):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(t)
        sync()  # the result is on the device, not only queued
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _slowest(dist, torch, value: float) -> float:
    """The largest value over the ranks (a collective is as slow as its slowest rank)."""
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def _ddp_throughput(dist, torch, device, steps: int, ranks: int) -> float:
    """Samples per second of an MLP's training steps (64 samples per rank and step)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)
    ).to(device)
    if ranks > 1:
        model = DDP(model, device_ids=[device.index])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 512, device=device)
    y = torch.randint(0, 10, (64,), device=device)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    torch.accelerator.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.accelerator.synchronize()
    return 64 * ranks * steps / (time.perf_counter() - t0)


def worker(rank: int, port: int, profile: str, out: str, cuda: bool) -> None:
    import torch
    import torch.distributed as dist

    import torch_vkml

    torch.accelerator.set_device_index(rank)
    vkml = torch.device("vkml", rank)
    devices = [("cpu", torch.device("cpu")), ("vkml", vkml)]
    backend = "cpu:gloo,vkml:vkml_gloo"
    cuda_backend = None
    if cuda and torch.cuda.is_available():
        if torch.cuda.device_count() >= WORLD and dist.is_nccl_available():
            cuda_backend, cuda_device = "nccl", torch.device("cuda", rank)
        else:
            cuda_backend, cuda_device = "gloo", torch.device("cuda", 0)
        devices.append(("cuda", cuda_device))
        backend += f",cuda:{cuda_backend}"
    store = dist.TCPStore("127.0.0.1", port, WORLD, is_master=rank == 0)
    dist.init_process_group(
        backend, store=store, rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=120)
    )
    rows = []
    for nbytes in SIZES[profile]:
        row: dict = {"bytes": nbytes}
        for name, device in devices:
            seconds = _slowest(
                dist, torch, _time_all_reduce(dist, torch, device, nbytes, BUDGET[profile])
            )
            row[name] = {
                "time_s": seconds,
                "busbw_GBps": 2 * (WORLD - 1) / WORLD * nbytes / seconds / 1e9,
            }
        rows.append(row)

    steps = DDP_STEPS[profile]
    one = _ddp_throughput(dist, torch, vkml, steps, 1) if rank == 0 else 0.0
    dist.barrier()
    both = _slowest(dist, torch, -_ddp_throughput(dist, torch, vkml, steps, WORLD))
    fallbacks = torch_vkml.fallback_counts()
    if rank == 0:
        result = {
            "world": WORLD,
            "devices": [n for n, _ in devices],
            "cuda_backend": cuda_backend,
            "all_reduce": rows,
            "ddp": {"one_rank_samples_s": one, "two_ranks_samples_s": -both},
            "fallbacks": fallbacks,
            "device": torch_vkml.device_name(rank),
            "torch": torch.__version__,
            "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCH_VKML_", "LP_"))},
        }
        Path(out).write_text(json.dumps(result, indent=1))
    # DDP's reducer keeps the group alive in a reference cycle. Collected at interpreter exit,
    # Gloo's threads would free Python-owned tensors while Python finalizes, which aborts
    # the process; collect it first, so that destroying the group joins those threads now.
    gc.collect()
    dist.destroy_process_group()


def format_table(result: dict) -> str:
    devices = result["devices"]
    head = f"{'all_reduce':>10s}" + "".join(f"{d + ' ms':>12s}{d + ' GB/s':>12s}" for d in devices)
    head += f"{'vkml/cpu':>10s}"
    cuda = "cuda" in devices
    if cuda:
        head += f"{'vkml/cuda':>10s}"
    title = f"torch.distributed, {result['world']} ranks, {result['device']}"
    if cuda:
        title += f"; cuda through {result.get('cuda_backend')}"
    lines = [title, head]
    for row in result["all_reduce"]:
        line = f"{_human(row['bytes']):>10s}"
        for d in devices:
            line += f"{1e3 * row[d]['time_s']:12.3f}{row[d]['busbw_GBps']:12.3f}"
        line += f"{row['vkml']['time_s'] / row['cpu']['time_s']:10.2f}"
        if cuda:
            line += f"{row['vkml']['time_s'] / row['cuda']['time_s']:10.2f}"
        lines.append(line)
    ddp = result["ddp"]
    lines.append(
        f"DDP MLP training: 1 rank {ddp['one_rank_samples_s']:.0f} samples/s, "
        f"2 ranks {ddp['two_ranks_samples_s']:.0f} samples/s "
        f"(x{ddp['two_ranks_samples_s'] / ddp['one_rank_samples_s']:.2f})"
    )
    if result["fallbacks"]:
        lines.append(f"CPU fallbacks: {result['fallbacks']}")
    return "\n".join(lines)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(profile: str, out_dir: Path, cuda: bool = True) -> int:
    """Runs the two ranks, writes out_dir/distributed.json and .txt; 0 when both finished."""
    import torch_vkml

    out_dir.mkdir(parents=True, exist_ok=True)
    result_file = out_dir / "distributed.json"
    env = dict(os.environ)
    if torch_vkml.device_count() < WORLD:
        env["TORCH_VKML_VISIBLE_DEVICES"] = ",".join(["0"] * WORLD)
    port = str(_free_port())
    cmd = [sys.executable, "-m", "torch_vkml.bench.distributed", "--worker"]
    procs = [
        subprocess.Popen([*cmd, str(r), port, profile, str(result_file), str(int(cuda))], env=env)
        for r in range(WORLD)
    ]
    codes = [p.wait() for p in procs]
    if any(codes) or not result_file.exists():
        print(f"torch-vkml bench --distributed: ranks exited with {codes}", file=sys.stderr)
        return 1
    table = format_table(json.loads(result_file.read_text()))
    (out_dir / "distributed.txt").write_text(table + "\n")
    print(table)
    print(f"wrote {out_dir}/distributed.json, distributed.txt")
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6] == "1")
