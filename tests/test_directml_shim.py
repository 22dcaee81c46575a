"""The torch_directml shim: torch-directml's API answered by torch-vkml."""

import math
import runpy
import sys
import types
from pathlib import Path

import pytest
import torch
from conftest import VKML

import torch_directml
import torch_vkml

MiB = 2**20
ROOT = Path(__file__).resolve().parents[1]


def test_installed_beside_torch_vkml():
    # pip install (-e) and wheels take their package list from pyproject.toml.
    from setuptools.config.pyprojecttoml import read_configuration

    packages = read_configuration(ROOT / "pyproject.toml")["tool"]["setuptools"]["packages"]
    assert "torch_directml" in packages and "torch_vkml" in packages
    assert Path(torch_directml.__file__).parent.parent == Path(torch_vkml.__file__).parent.parent


def test_is_available_and_count():
    assert torch_directml.is_available() is torch_vkml.is_available() is True
    assert torch_directml.device_count() == torch_vkml.device_count() >= 1


def test_default_device_is_an_index():
    index = torch_directml.default_device()
    assert type(index) is int
    assert index == torch_vkml.default_device().index == 0


def test_device():
    assert torch_directml.device() == torch.device(VKML, torch_directml.default_device())
    assert torch_directml.device(None) == torch_directml.device()
    for i in range(torch_directml.device_count()):
        assert torch_directml.device(i) == torch_vkml.device(i) == torch.device(VKML, i)
    with pytest.raises(ValueError, match="out of range"):
        torch_directml.device(torch_directml.device_count())
    with pytest.raises(ValueError, match="out of range"):
        torch_directml.device(-1)


def test_device_name():
    for i in range(torch_directml.device_count()):
        assert torch_directml.device_name(i) == torch_vkml.device_name(i)
        assert torch_directml.device_name(i)
    # torch-directml answers "" for an index out of range instead of raising.
    assert torch_directml.device_name(torch_directml.device_count()) == ""
    assert torch_directml.device_name(-1) == ""


def test_has_float64_support():
    for i in range(torch_directml.device_count()):
        expected = torch_vkml.get_device_properties(i).supports_fp64
        assert torch_directml.has_float64_support(i) is expected
    assert torch_directml.has_float64_support() is torch_vkml.get_device_properties(0).supports_fp64


def test_gpu_memory_tiles_hold_what_tensors_use():
    total_mib = torch_vkml.get_device_properties(0).total_memory / MiB
    x = torch.empty(5 * MiB + 1000, dtype=torch.uint8, device=torch_directml.device(0))
    tiles = torch_directml.gpu_memory(0)
    used_mib = torch_vkml.memory_allocated(0) / MiB
    assert used_mib > 5
    assert len(tiles) == math.ceil(total_mib)
    assert all(isinstance(t, float) and 0.0 <= t <= 1.0 for t in tiles)
    assert sum(tiles) == pytest.approx(used_mib, abs=1e-9)
    # In use fills tiles from the first: full ones, one partial, then empty ones.
    full = int(used_mib)
    assert tiles[:full] == [1.0] * full
    assert tiles[full] == pytest.approx(used_mib - full)
    assert not any(tiles[full + 1 :])

    four = torch_directml.gpu_memory(0, mb_per_tile=4)
    assert len(four) == math.ceil(total_mib / 4)
    assert sum(four) * 4 == pytest.approx(used_mib, abs=1e-9)
    whole = torch_directml.gpu_memory(0, mb_per_tile=math.ceil(total_mib))
    assert len(whole) == 1 and whole[0] == pytest.approx(used_mib / math.ceil(total_mib))

    del x
    assert sum(torch_directml.gpu_memory(0)) <= used_mib - 5
    with pytest.raises(ValueError, match="mb_per_tile"):
        torch_directml.gpu_memory(0, mb_per_tile=0)


def test_disable_tiled_resources_is_a_no_op():
    assert torch_directml.disable_tiled_resources(True) is None
    x = torch.arange(6.0, device=torch_directml.device()) * 2
    assert x.cpu().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    torch_directml.disable_tiled_resources(False)


# A training script as torch-directml users write it, run as it is.
SCRIPT = """
import torch
import torch_directml

dev = torch_directml.device()

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3)
).to(dev)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()

inputs = torch.randn(64, 8)
targets = (inputs[:, 0] > 0).long() + (inputs[:, 1] > 0).long()

losses = []
for step in range(10):
    x, y = inputs.to(dev), targets.to(dev)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("losses", losses)
"""


def _run_script(path):
    return runpy.run_path(str(path), run_name="__main__")["losses"]


def test_unmodified_directml_script_trains_on_vkml(tmp_path, monkeypatch):
    path = tmp_path / "train_dml.py"
    path.write_text(SCRIPT)

    torch_vkml.reset_fallback_counts()
    losses = _run_script(path)
    assert torch_vkml.fallback_counts() == {}

    # The same file on the CPU: a torch_directml whose device is the CPU.
    cpu_directml = types.ModuleType("torch_directml")
    cpu_directml.device = lambda device_id=None: torch.device("cpu")
    monkeypatch.setitem(sys.modules, "torch_directml", cpu_directml)
    expected = _run_script(path)

    assert len(losses) == len(expected) == 10
    assert losses[-1] < 0.85 * losses[0]  # it learns
    assert losses == pytest.approx(expected, rel=1e-4)
