"""The benchmark suite (smoke mode) and the device-clock Event it times kernels with."""

import json
import math

import pytest
import torch
from conftest import VKML, describe, run_python

import torch_vkml

# ---------------------------------------------------------------- Event


@pytest.mark.usefixtures("no_fallback")
def test_event_elapsed_positive_and_additive():
    a = torch.randn(256, 256).to(VKML)
    e0, e1, e2 = (torch_vkml.Event(enable_timing=True) for _ in range(3))
    e0.record()
    for _ in range(3):
        a = a @ a * 1e-2
    e1.record()
    for _ in range(3):
        a = a @ a * 1e-2
    e2.record()
    e2.synchronize()
    assert e2.query()
    t01, t12, t02 = e0.elapsed_time(e1), e1.elapsed_time(e2), e0.elapsed_time(e2)
    assert t01 > 0 and t12 > 0
    # The clock is monotonic along the stream and intervals add up.
    assert t02 >= max(t01, t12)
    assert math.isclose(t02, t01 + t12, rel_tol=1e-6, abs_tol=1e-4)
    assert e1.elapsed_time(e0) < 0
    # Device time of the work can't exceed the wall time it took to record and run it
    # by much; it is in milliseconds, like torch.cuda.Event.
    assert t02 < 60_000


@pytest.mark.usefixtures("no_fallback")
def test_event_rerecord_and_errors():
    start, end = torch_vkml.Event(enable_timing=True), torch_vkml.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="recorded"):
        start.elapsed_time(end)
    assert start.query()  # never recorded: nothing to wait for, as on CUDA
    x = torch.ones(1 << 16, device=VKML)
    for _ in range(2):  # re-recording the same events moves them
        start.record()
        x.add_(1)
        end.record()
        assert end.elapsed_time(end) == 0.0
        assert start.elapsed_time(end) > 0
    assert x[0].item() == 3.0
    plain = torch_vkml.Event()
    plain.record()
    plain.synchronize()
    with pytest.raises(RuntimeError, match="enable_timing"):
        plain.elapsed_time(end)
    with pytest.raises(NotImplementedError):
        torch_vkml.Event(interprocess=True)
    with pytest.raises(ValueError, match="out of range"):
        torch_vkml.Event(device=torch_vkml.device_count())


# ---------------------------------------------------------------- bench


def _check_run(run, unit):
    assert run["status"] == "ok", run
    assert run["value"] > 0 and math.isfinite(run["value"])
    assert run["time_s"] > 0
    for clock in ("wall",):
        stats = run[clock]
        assert stats["min"] <= stats["q1"] <= stats["median"] <= stats["q3"] <= stats["max"]
        assert stats["n"] >= 1


def test_bench_smoke(tmp_path, capsys):
    from torch_vkml.bench.__main__ import main

    assert main(["--smoke", "--out", str(tmp_path), "--kernels", "3"]) == 0
    printed = capsys.readouterr().out
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["profile"] == "smoke"
    assert res["baselines"][0] == "cpu"
    assert ("cuda" in res["baselines"]) == torch.cuda.is_available()
    assert res["device"]["name"] == torch_vkml.device_name()
    names = [c["name"] for c in res["cases"]]
    assert len(names) == 3 and names[0].startswith("gemm/fp32")
    for c in res["cases"]:
        assert c["status"] == "ok", c
        assert set(c["runs"]) == {"vkml", *res["baselines"]}
        for run in c["runs"].values():
            _check_run(run, c["unit"])
        assert c["runs"]["vkml"]["fallbacks"] == {}
        for b in res["baselines"]:
            r = c["ratios"][b]
            assert isinstance(r, float) and r > 0 and math.isfinite(r)
            assert math.isclose(r, c["runs"][b]["time_s"] / c["runs"]["vkml"]["time_s"])
        assert c["name"] in printed
    host = next(c for c in res["cases"] if c["name"].startswith("host-overhead"))
    assert host["unit"] == "us/op" and host["overhead_vs_cpu"] > 0
    assert "thread" in host["runs"]["vkml"]
    for c in res["cases"]:
        if c is host:
            continue
        engine = c["runs"]["vkml"]["engine"]
        assert engine["dispatches"] >= 1 and engine["syncs"] == 0, (c["name"], engine)
        assert 0 <= engine["barriers"] <= engine["dispatches"]
        # --kernels 3: one more call profiled, its kernels by device time, and printed.
        kernels = c["runs"]["vkml"]["kernels"]
        assert 1 <= len(kernels["top"]) <= 3 and kernels["total_ms"] > 0, kernels
        assert all(k["calls"] >= 1 and k["total_ms"] > 0 for k in kernels["top"])
        assert kernels["top"][0]["name"] in printed
    assert res.get("validation_messages", []) == []
    table = (tmp_path / "table.txt").read_text()
    assert table.startswith("case")
    # --replot redraws the table (and chart) from results.json alone.
    (tmp_path / "table.txt").unlink()
    (tmp_path / "ratios.png").unlink(missing_ok=True)
    replotted = main(["--replot", str(tmp_path)])
    assert (tmp_path / "table.txt").read_text() == table
    pytest.importorskip("matplotlib")
    assert replotted == 0
    assert (tmp_path / "ratios.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "make_case",
    [
        pytest.param(lambda c: c.train_mlp(16), id="digits-mlp"),
        pytest.param(lambda c: c.train_cnn(4), id="small-cnn"),
        # Its embeddings' index checks trust the bounds noted at upload (no read-back).
        pytest.param(lambda c: c.transformer_lm(2, 16, 32, 1, 2, 64, True), id="lm"),
    ],
)
def test_training_step_never_waits_for_the_gpu(make_case):
    """A training step that reads nothing back queues all its work without one host wait
    (a wait drains the queue, and the GPU idles while the host records what follows)."""
    from torch_vkml.bench import cases
    from torch_vkml.bench.__main__ import engine_counts
    from torch_vkml.bench.timing import Backend

    backend = Backend("vkml", torch.device(VKML))
    step = make_case(cases).setup(backend.device)
    step()  # first step: optimizer state, pipelines
    engine = engine_counts(step, backend)
    assert engine["dispatches"] > 10
    assert engine["syncs"] == 0, engine


def test_baseline_process_runs_cases_without_torch_vkml():
    """CUDA baselines run in a child process: there, CUDA autograd works (PyTorch takes a
    registered PrivateUse1 backend as the accelerator and breaks CUDA backward). The same
    child with the CPU backend: it never imports torch_vkml, answers with the fields of an
    in-process run, and comes back after a crash."""
    from torch_vkml.bench import cases
    from torch_vkml.bench.__main__ import PLANS
    from torch_vkml.bench.baseline_process import BaselineProcess

    micro = PLANS["smoke"][0]
    remote = BaselineProcess("cpu", "smoke", False)
    try:
        remote.start()
        assert remote.imported_torch_vkml is False and remote.device_name == "cpu"
        name = cases.build("smoke", False)[0].name
        res = remote.run(name, micro, 1)
        assert res["status"] == "ok", res
        _check_run(res, "TFLOP/s")
        missing = remote.run("no/such/case", micro, 1)
        assert missing["status"] == "error" and "no/such/case" in missing["message"]
        remote.proc.kill()
        remote.proc.wait()
        assert remote.run(name, micro, 1)["status"] == "ok"  # a fresh child
    finally:
        remote.close()
    assert remote.proc is None


def test_bench_takes_the_last_baseline_from_the_child(tmp_path, monkeypatch):
    """The wiring on a CUDA machine, with the child measuring the CPU in CUDA's place."""
    from torch_vkml.bench import __main__ as bench
    from torch_vkml.bench.baseline_process import BaselineProcess

    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench, "BaselineProcess", lambda _, p, b: BaselineProcess("cpu", p, b))
    assert bench.main(["--smoke", "--out", str(tmp_path), "--cases", "gemm/fp32"]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["baselines"] == ["cpu", "cuda"] and res["cuda_device"] == "cpu"
    (case,) = res["cases"]
    _check_run(case["runs"]["cuda"], case["unit"])
    assert math.isclose(
        case["ratios"]["cuda"], case["runs"]["cuda"]["time_s"] / case["runs"]["vkml"]["time_s"]
    )


def test_cpu_beside_cuda_runs_a_light_plan():
    """On a machine with CUDA the CPU baseline repeats less, so that the GPU cases fit
    the run; alone (here) it gets the profile's plan."""
    from torch_vkml.bench import cases
    from torch_vkml.bench.__main__ import CPU_BESIDE_CUDA, PLANS, plan_for

    micro, model = cases.gemm(64, 64, 64, "fp32"), cases.train_mlp(8)
    full = PLANS["full"]
    assert plan_for(micro, "cpu", ["cpu"], full) is full[0]
    assert plan_for(model, "cpu", ["cpu"], full) is full[1]
    assert plan_for(micro, "cpu", ["cpu", "cuda"], full) is CPU_BESIDE_CUDA
    assert plan_for(micro, "cuda", ["cpu", "cuda"], full) is full[0]
    assert plan_for(model, "vkml", ["cpu", "cuda"], full) is full[1]
    smoke = PLANS["smoke"]  # already lighter
    assert plan_for(micro, "cpu", ["cpu", "cuda"], smoke) is smoke[0]
    # The figures the targets name come before attention and convolution.
    names = [c.name for c in cases.build("full", big=True)]
    first_attention = min(i for i, n in enumerate(names) if n.startswith("sdpa"))
    assert all(
        i < first_attention
        for i, n in enumerate(names)
        if n.startswith(("gemm/", "train/", "infer/", "softmax", "layer_norm"))
    )


def test_bench_failing_case_is_reported(tmp_path, monkeypatch):
    from torch_vkml.bench import __main__ as bench
    from torch_vkml.bench import cases

    def broken(profile, big):
        def setup(device):
            if device.type == VKML:
                raise RuntimeError("boom\nsecond line")
            return lambda: None

        def unsupported(device):
            if device.type == VKML:
                raise NotImplementedError("bf16 is not supported")
            return lambda: None

        return [
            cases.Case("broken", "micro", "GB/s", 1.0, setup),
            cases.Case("unsupported", "micro", "GB/s", 1.0, unsupported),
        ]

    monkeypatch.setattr(cases, "build", broken)
    assert bench.main(["--smoke", "--out", str(tmp_path), "--no-cuda"]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    broken_case, unsupported_case = res["cases"]
    assert broken_case["status"] == "error"
    assert broken_case["runs"]["vkml"]["message"] == "RuntimeError: boom"
    assert broken_case["runs"]["cpu"]["status"] == "ok"
    assert broken_case["ratios"] == {}
    assert unsupported_case["status"] == "n/a"
    assert "error" in (tmp_path / "table.txt").read_text()


def test_bench_cli_lists_cases():
    proc = run_python(
        "import sys, runpy; sys.argv = ['bench', '--quick', '--list', '--cases', 'gemm/fp16'];"
        " runpy.run_module('torch_vkml.bench', run_name='__main__')"
    )
    assert proc.returncode == 0, describe(proc)
    lines = proc.stdout.strip().splitlines()
    assert lines and all(line.startswith("gemm/fp16/") for line in lines)


@pytest.mark.parametrize("profile,big", [("quick", False), ("full", False), ("full", True)])
def test_bench_profiles_cover_the_suite(profile, big):
    from torch_vkml.bench import cases

    built = cases.build(profile, big)
    names = [c.name for c in built]
    assert len(names) == len(set(names))
    for family in (
        "host-overhead/",
        "gemm/fp32/",
        "gemm/fp16/",
        "gemm/bf16/",
        "grouped_mm/bf16/",
        "add/",
        "mul/",
        "gelu/",
        "sum-rows/",
        "sum-cols/",
        "softmax/",
        "layer_norm/",
        "conv2d/",
        "conv2d-bwd/",
        "conv2d-bwd/fp16/",
        "sdpa-fwd+bwd-gqa",
        "sdpa-fwd+bwd-dropout",
        "train/digits-mlp/",
        "train/small-cnn/",
        "train/resnet18/",
        "train/resnet18-fp16-autocast/",
        "infer/resnet18/",
        "train/lm-",
        "infer/lm-",
    ):
        assert any(n.startswith(family) for n in names), family
    # autocast training as users write it: GPT-style in bf16 beside ResNet's fp16 above
    assert any(n.startswith("train/lm-") and "-bf16-autocast/" in n for n in names)
    assert all(c.work > 0 for c in built if c.unit != "us/op")
    if big:
        assert "train/resnet18/b64x224" in names
        assert "gemm/fp32/4096x512x14336" in names
        assert any(n.startswith("add/fp32/256M") for n in names)
        assert "train/lm-12x768/b4x512" in names
