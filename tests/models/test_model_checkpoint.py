"""Checkpoint / resume: torch.save mid-training (model + optimizer state), load into a
fresh model and optimizer with map_location "vkml" or "cpu", continue; the losses match an
uninterrupted vkml run exactly and the CPU run within tolerance."""

import io

import pytest
import torch
from model_utils import (
    VKML,
    assert_no_fallback,
    assert_trajectory,
    digits,
    train,
    train_twins,
)
from torch import nn
from torch.nn import functional as F

import torch_vkml

STEPS, SPLIT = 10, 4
TOL = dict(atol=1e-4, rtol=1e-4)


def mlp():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def _adam(params):
    return torch.optim.Adam(params, lr=1e-2)


def _loss(model, x, y):
    return F.cross_entropy(model(x), y)


@pytest.mark.parametrize("map_location", ["vkml", "cpu"])
def test_resume_matches_uninterrupted_run(map_location, tmp_path):
    x, y = digits(192)
    batches = [(x[i : i + 64], y[i : i + 64]) for i in range(0, 192, 64)]
    vk_batches = [(a.to(VKML), b.to(VKML)) for a, b in batches]
    cpu, vk = train_twins(mlp, _adam, batches, _loss, steps=STEPS)  # uninterrupted runs
    assert_trajectory(cpu["losses"], vk["losses"], **TOL)

    torch_vkml.reset_fallback_counts()
    torch.manual_seed(0)
    model = mlp().to(VKML)  # the initial weights of the uninterrupted runs (twin_models)
    optimizer = _adam(model.parameters())
    first, _ = train(model, optimizer, vk_batches, _loss, SPLIT)
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)

    checkpoint = torch.load(path, map_location=map_location)
    expected_device = "vkml" if map_location == "vkml" else "cpu"
    assert all(t.device.type == expected_device for t in checkpoint["model"].values())
    fresh = mlp().to(VKML)
    fresh.load_state_dict(checkpoint["model"])
    fresh_opt = _adam(fresh.parameters())
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    for state in fresh_opt.state.values():
        assert state["exp_avg"].device.type == VKML
    # the batches continue where the interrupted run stopped
    rest = vk_batches[SPLIT % len(vk_batches) :] + vk_batches[: SPLIT % len(vk_batches)]
    second, _ = train(fresh, fresh_opt, rest, _loss, STEPS - SPLIT)
    resumed = torch.cat([first, second])

    # Same device, same kernels, same order: bit-identical to the uninterrupted run.
    assert torch.equal(resumed, vk["losses"]), (resumed, vk["losses"])
    assert_trajectory(cpu["losses"], resumed, **TOL)
    for (name, p), q in zip(vk["model"].named_parameters(), fresh.parameters(), strict=True):
        assert torch.equal(p.detach().cpu(), q.detach().cpu()), name
    assert_no_fallback()


def test_vkml_tensors_round_trip_through_torch_save():
    t = torch.arange(12.0).reshape(3, 4).to(VKML)[:, 1:]
    buffer = io.BytesIO()
    torch.save({"t": t, "i": torch.tensor([1, 2], device=VKML)}, buffer)
    for location in ("vkml", "cpu"):
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=location)
        assert loaded["t"].device.type == location and loaded["i"].device.type == location
        torch.testing.assert_close(loaded["t"].cpu(), t.cpu())
        assert loaded["i"].dtype == torch.int64
