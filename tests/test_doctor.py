"""python -m torch_vkml doctor / torch_vkml.doctor(): the set-up diagnosis."""

import io
import json
import os
import subprocess
import sys

import pytest
import torch
from conftest import VKML, describe

import torch_vkml
from torch_vkml import __main__ as cli
from torch_vkml import _doctor


def _doctor_cli(*args, env=None, unset=()):
    full_env = dict(os.environ)
    for name in unset:
        full_env.pop(name, None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "torch_vkml", "doctor", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_healthy_device_text():
    proc = _doctor_cli()
    assert proc.returncode == 0, describe(proc)
    out = proc.stdout
    assert torch_vkml.device_name(0) in out
    assert "smoke test ok" in out and "GFLOP/s" in out
    assert "result: OK, 1 usable device(s)" in out.replace(
        f"OK, {torch_vkml.device_count()} ", "OK, 1 "
    )
    assert "FAILED" not in out and "error:" not in out


def test_healthy_device_json():
    proc = _doctor_cli("--json")
    assert proc.returncode == 0, describe(proc)
    report = json.loads(proc.stdout)  # the whole output is one JSON object
    assert report["ok"] is True and report["available"] is True
    assert not [p for p in report["problems"] if p["severity"] == "error"]

    assert report["torch"]["version"] == torch.__version__
    assert report["torch"]["built_for"] == torch_vkml._C.built_for_torch
    assert torch.__version__.startswith(report["torch"]["built_for"])

    loader = report["loader"]
    assert loader["found"] is True and os.path.isfile(loader["path"])
    assert "libvulkan" in os.path.basename(loader["path"])
    assert tuple(int(x) for x in loader["version"].split(".")[:2]) >= (1, 2)

    loaded = [m for m in report["drivers"]["manifests"] if m["loadable"]]
    assert loaded, report["drivers"]
    assert all(os.path.isfile(m["manifest"]) for m in loaded)

    layer = report["validation_layer"]
    assert layer["enabled"] is torch_vkml._C.validation_enabled()
    if layer["enabled"]:
        assert layer["available"] is True and "VK_LAYER_KHRONOS_validation" in layer["layers"]

    devices = report["devices"]
    assert len(devices) == torch_vkml.device_count()
    for i, d in enumerate(devices):
        props = torch_vkml.get_device_properties(i)
        assert d["index"] == i and d["name"] == props.name
        assert d["device_type"] == props.device_type and d["vendor"] == props.vendor
        assert d["driver_version"].count(".") >= 2
        assert d["heaps"] and sum(h["size"] for h in d["heaps"] if h["device_local"]) == (
            props.total_memory
        )
        f = d["features"]
        assert f["fp16"] is props.supports_fp16 and f["fp64"] is props.supports_fp64
        assert f["int64"] is props.supports_int64 and f["int16"] is props.supports_int16
        assert f["subgroup_size"].split()[0] == str(props.subgroup_size)
        assert f["compute_queues"] == props.queue_count >= 1
        smoke = d["smoke"]
        assert smoke["ok"] is True, smoke
        assert smoke["matmul"]["ok"] is True and smoke["matmul"]["max_rel_error"] < 1e-4
        assert smoke["gflops"] > 0 and smoke["gflops_size"] >= 256
        assert smoke["h2d_gb_per_s"] > 0 and smoke["d2h_gb_per_s"] > 0
        assert smoke["copy_ok"] is True


@pytest.mark.parametrize("variable", ["VK_ICD_FILENAMES", "VK_DRIVER_FILES"])
def test_no_driver_fails_and_names_the_fix(variable):
    env = {variable: "/nonexistent.json"}
    unset = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"]
    proc = _doctor_cli("--json", env=env, unset=unset)
    assert proc.returncode != 0, describe(proc)
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["available"] is False and report["devices"] == []
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert errors[0]["problem"] == f"{variable} names /nonexistent.json, which does not exist"
    assert errors[0]["fix"].startswith(f"unset {variable}, or set it to a driver manifest")
    assert any(p["problem"].startswith("no usable Vulkan device") for p in errors)
    assert all(p["fix"] for p in report["problems"])

    text = _doctor_cli(env=env, unset=unset)
    assert text.returncode == 1, describe(text)
    assert f"fix: unset {variable}" in text.stdout
    assert "result: NO USABLE DEVICE" in text.stdout


def _perturbed(a, b):
    out = torch.matmul(a, b)
    out[3, 5] += 0.5
    return out


@pytest.mark.parametrize(
    "matmul, message",
    [
        (_perturbed, "max relative error"),
        (lambda a, b: torch.matmul(a, b).fill_(float("nan")), "max relative error inf"),
        (lambda a, b: torch.matmul(a, b)[:-1], "result shape"),
        (lambda a, b: torch.matmul(a.flip(0), b), "max relative error"),
    ],
    ids=["one-value", "nan", "shape", "rows-swapped"],
)
def test_smoke_matmul_compares_values(matmul, message):
    device = torch.device(VKML, 0)
    good = _doctor._smoke_matmul(device, torch.matmul)
    assert good["ok"] is True and good["max_rel_error"] < 1e-4

    bad = _doctor._smoke_matmul(device, matmul)
    assert bad["ok"] is False
    assert message in bad["error"]


def test_smoke_reports_a_failing_device():
    def broken(a, b):
        raise RuntimeError("device lost")

    result = _doctor._smoke(0, matmul=broken)
    assert result["ok"] is False and result["error"] == "RuntimeError: device lost"


def test_doctor_function_prints_what_it_returns():
    assert "doctor" in torch_vkml.__all__
    buffer = io.StringIO()
    report = torch_vkml.doctor(json=True, smoke=False, file=buffer)
    assert json.loads(buffer.getvalue()) == report
    assert report["ok"] is True and "smoke" not in report["devices"][0]

    buffer = io.StringIO()
    torch_vkml.doctor(smoke=False, file=buffer)
    assert buffer.getvalue().startswith("torch-vkml doctor")
    assert "result: OK" in buffer.getvalue()


@pytest.mark.parametrize(
    "built_for, severity",
    [("1.13.0", "error"), ("2.0.1", "error"), ("{major_minor}.99", "warning"), (None, None)],
)
def test_torch_version_check(built_for, severity):
    major_minor = ".".join(torch.__version__.split(".")[:2])
    if built_for is not None:
        built_for = built_for.format(major_minor=major_minor)
    report = {"problems": []}
    _doctor._check_torch(report, built_for)
    assert report["torch"] == {"version": torch.__version__, "built_for": built_for}
    if severity is None:
        assert report["problems"] == []
        return
    [problem] = report["problems"]
    assert problem["severity"] == severity
    assert f"built for torch {built_for}" in problem["problem"]
    assert "pip install --no-build-isolation" in problem["fix"]
    assert f"torch=={built_for}" in problem["fix"]

    report = {"problems": []}
    _doctor._check_torch(report, torch_vkml._C.built_for_torch)
    assert report["problems"] == []


def test_driver_manifests(tmp_path, monkeypatch):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"ICD": {"library_path": "libc.so.6", "api_version": "1.3.0"}}))
    missing_lib = tmp_path / "missing_lib.json"
    missing_lib.write_text(json.dumps({"ICD": {"library_path": "./libnot_there.so"}}))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)
    monkeypatch.delenv("VK_ADD_DRIVER_FILES", raising=False)
    monkeypatch.setenv("VK_DRIVER_FILES", str(tmp_path))  # a directory: its manifests

    report = {"problems": []}
    _doctor._check_drivers(report)
    drivers = report["drivers"]
    assert drivers["selected_by"] == "VK_DRIVER_FILES"
    by_name = {os.path.basename(m["manifest"]): m for m in drivers["manifests"]}
    assert set(by_name) == {"good.json", "missing_lib.json", "garbage.json"}
    assert by_name["good.json"]["loadable"] is True
    assert by_name["good.json"]["api_version"] == "1.3.0"
    assert by_name["missing_lib.json"]["library"] == str(tmp_path / "libnot_there.so")
    assert by_name["missing_lib.json"]["loadable"] is False
    problems = {p["problem"]: p for p in report["problems"]}
    assert len(problems) == 2
    broken = next(p for text, p in problems.items() if "libnot_there.so" in text)
    assert broken["severity"] == "warning" and "reinstall" in broken["fix"]
    unreadable = next(p for text, p in problems.items() if "garbage.json" in text)
    assert "cannot be read" in unreadable["problem"]


def test_cli_usage(capsys):
    assert cli.main([]) == 2
    assert "doctor" in capsys.readouterr().err
    assert cli.main(["--help"]) == 0
    assert "python -m torch_vkml doctor" in capsys.readouterr().out
    assert cli.main(["nonsense"]) == 2
