"""Distributed training under torchrun, as users launch it: 2 ranks on one machine (and 4
with TORCH_VKML_LONG_TESTS=1) and two one-rank "machines" joined by rendezvous over
127.0.0.1 (tests/distributed_programs.py does the training and the comparisons with one
process over the whole batch).

With fewer physical devices than ranks, each rank gets its own logical device on the same
GPU (TORCH_VKML_VISIBLE_DEVICES=0,0,...).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LONG_TESTS, free_ports

import torch_vkml

PROGRAM = str(Path(__file__).with_name("distributed_programs.py"))


def _env(ranks_per_node: int) -> dict[str, str]:
    env = dict(os.environ)
    if torch_vkml.device_count() < ranks_per_node:
        env["TORCH_VKML_VISIBLE_DEVICES"] = ",".join(["0"] * ranks_per_node)
    # vkml programs: with a CUDA device in the process the autoload keeps out, and DCP's
    # writer moves only CUDA tensors to the host (docs/coexistence.md).
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["TORCH_VKML_FALLBACK"] = "silent"  # counted by the program, which fails on any
    env.pop("TORCHELASTIC_RUN_ID", None)
    return env


def _results(out: Path, world: int, scenarios: list[str]) -> None:
    for rank in range(world):
        f = out / f"rank{rank}.json"
        assert f.exists(), f"rank {rank} wrote no results"
        res = json.loads(f.read_text())
        assert res["world"] == str(world)
        for name in scenarios:
            assert res.get(name) == "ok", f"rank {rank}, {name}:\n{res.get(name)}"


def _run(cmds: list[list[str]], env: dict[str, str], timeout: float) -> None:
    procs = [
        subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for c in cmds
    ]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, log in zip(procs, logs, strict=True):
        assert p.returncode == 0, f"torchrun exited with {p.returncode}:\n{log[-6000:]}"


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


# Four ranks time-share a 2-core machine (50 s of make test's 20-minute budget): with
# TORCH_VKML_LONG_TESTS=1, as the "longer runs behind an option".
RANK_RUNS = [pytest.param(2, ["ddp_cnn", "ddp_lm", "fsdp_lm", "dcp"], id="2-ranks")]
if LONG_TESTS:
    RANK_RUNS.append(pytest.param(4, ["ddp_cnn", "ddp_lm", "fsdp_lm"], id="4-ranks"))


@pytest.mark.parametrize("ranks, scenarios", RANK_RUNS)
def test_torchrun_one_machine(tmp_path, ranks, scenarios):
    cmd = _torchrun(
        "--standalone",
        f"--nproc_per_node={ranks}",
        PROGRAM,
        str(tmp_path),
        ",".join(scenarios),
    )
    _run([cmd], _env(ranks), timeout=600)
    _results(tmp_path, ranks, scenarios)


def _two_machines(tmp_path):
    """Two torchrun agents (one per "machine", one rank each) meet through c10d rendezvous."""
    endpoint = f"127.0.0.1:{free_ports()[0]}"
    cmds = [
        _torchrun(
            "--nnodes=2",
            "--nproc_per_node=1",
            f"--node_rank={node}",
            "--rdzv_backend=c10d",
            f"--rdzv_endpoint={endpoint}",
            "--rdzv_id=vkml-two-machines",
            PROGRAM,
            str(tmp_path),
            "ddp_lm",
        )
        for node in range(2)
    ]
    # both "machines" see device 0 as their local rank 0's
    _run(cmds, _env(1), timeout=600)
    _results(tmp_path, 2, ["ddp_lm"])


# 23 s of make test's 20-minute budget: with TORCH_VKML_LONG_TESTS=1 (the issue's "longer
# runs behind an option"), defined only then so that make test lists no skip.
if LONG_TESTS:

    def test_torchrun_two_machines(tmp_path):
        _two_machines(tmp_path)
