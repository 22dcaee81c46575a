"""Failures in torch.distributed on vkml are errors within the group's timeout, not hangs:
a peer that dies, a peer that stops calling collectives, a peer that never joins. The
surviving process keeps a usable device. (Ranks that disagree on shapes are in
test_distributed.py: both raise and the group goes on.)

Each case runs this file as a script in child processes (rank 0 reports to a JSON file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import torch_vkml

TIMEOUT_S = 5  # the process group's timeout in these cases


def _worker(case: str, rank: int, port: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    torch.accelerator.set_device_index(rank)
    dev = torch.device("vkml", rank)
    report: dict = {}
    start = time.perf_counter()
    try:
        if case == "never_joins":  # rank 0 alone in a group of 2
            dist.init_process_group(
                init_method=f"tcp://127.0.0.1:{port}",
                rank=0,
                world_size=2,
                timeout=timedelta(seconds=TIMEOUT_S),
            )
            report["raised"] = None
        else:
            dist.init_process_group(
                init_method=f"tcp://127.0.0.1:{port}",
                rank=rank,
                world_size=2,
                timeout=timedelta(seconds=TIMEOUT_S),
            )
            t = torch.ones(4, device=dev)
            dist.all_reduce(t)  # both ranks are in step here
            if rank == 1:
                if case == "peer_dies":
                    os._exit(3)
                time.sleep(4 * TIMEOUT_S)  # "peer_stalls": alive, never calls the collective
                os._exit(0)
            start = time.perf_counter()
            dist.all_reduce(t)
            report["raised"] = None
    except Exception as e:  # what the user would see
        report["raised"] = f"{type(e).__name__}: {str(e)[:400]}"
    report["seconds"] = time.perf_counter() - start
    # the device still works after the failed collective
    report["device_ok"] = torch.arange(4.0, device=dev).sum().item() == 6.0
    Path(out).write_text(json.dumps(report))
    os._exit(0)  # the group is broken: leave without tearing it down with the dead peer


@pytest.mark.parametrize("case", ["peer_dies", "peer_stalls", "never_joins"])
def test_failure_raises_within_timeout(tmp_path, case):
    from conftest import free_ports  # here: this file also runs as the ranks' script

    env = dict(os.environ)
    if torch_vkml.device_count() < 2:
        env["TORCH_VKML_VISIBLE_DEVICES"] = "0,0"
    port = str(free_ports()[0])
    out = tmp_path / "rank0.json"
    ranks = [0] if case == "never_joins" else [0, 1]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, case, str(r), port, str(out)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in ranks
    ]
    try:
        log = procs[0].communicate(timeout=60 + 4 * TIMEOUT_S)[0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    assert out.exists(), f"rank 0 reported nothing (hung or crashed):\n{log[-4000:]}"
    report = json.loads(out.read_text())
    assert report["raised"], f"{case}: rank 0's call returned instead of raising"
    assert report["seconds"] < 3 * TIMEOUT_S + 5, f"{case}: raised only after {report}"
    assert report["device_ok"], f"{case}: the device failed after the error"


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
