"""Helpers for the model tests: train the same model on the CPU and on vkml and compare.

Each test builds a model on the CPU, copies its state_dict into a second instance moved to
vkml, trains both on the same batches and compares the loss trajectories (and whatever
else the test names) within a stated tolerance. Fallbacks are asserted inside the test
body with :func:`assert_no_fallback`, which raises :class:`FallbackError`: a test that
still needs kernels is marked ``xfail(raises=FallbackError)``, so only a fallback makes it
an expected failure; a wrong result still fails it. ``MISSING`` adds NotImplementedError
for ops that have neither a kernel nor a fallback (convolution_overrideable).
"""

import os

import torch

import torch_vkml

VKML = "vkml"

# Runs that make test leaves out for its 20-minute budget (README: TORCH_VKML_LONG_TESTS).
LONG_TESTS = os.environ.get("TORCH_VKML_LONG_TESTS") == "1"


class FallbackError(AssertionError):
    """Some aten op ran on the CPU fallback during the vkml part of a test."""


# What a test that still needs kernels may fail with (the xfail ``raises``).
MISSING = (FallbackError, NotImplementedError)


def assert_no_fallback():
    counts = torch_vkml.fallback_counts()
    if counts:
        raise FallbackError(f"ops ran on the CPU fallback: {dict(sorted(counts.items()))}")


def to_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def digits(n=256):
    """The first ``n`` sklearn digits: (float32 images [n, 64] in [0, 1], int64 labels)."""
    # Imported here: on a machine without sklearn (the GPU image) only the digits tests
    # fail, not every model test module.
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data[:n], dtype=torch.float32) / 16.0
    y = torch.tensor(data.target[:n], dtype=torch.int64)
    return x, y


def twin_models(factory):
    """A CPU model and a vkml model with the same initial weights (state_dict copy)."""
    torch.manual_seed(0)
    cpu_model = factory()
    vk_model = factory()
    vk_model.load_state_dict(cpu_model.state_dict())
    return cpu_model, vk_model.to(VKML)


def train(model, optimizer, batches, loss_fn, steps, clip=None):
    """``steps`` optimizer steps cycling over ``batches``; returns (losses, grad norms).

    ``loss_fn(model, *batch)`` returns the scalar loss; ``clip`` is a max grad norm for
    ``clip_grad_norm_``. Both results are CPU float32 tensors of length ``steps``.
    """
    losses, norms = [], []
    for step in range(steps):
        batch = batches[step % len(batches)]
        optimizer.zero_grad()
        loss = loss_fn(model, *batch)
        loss.backward()
        if clip is not None:
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), clip).detach())
        optimizer.step()
        losses.append(loss.detach())
    losses = torch.stack(losses).cpu()
    norms = torch.stack(norms).cpu() if norms else torch.empty(0)
    return losses, norms


def train_twins(factory, make_optimizer, batches, loss_fn, steps, clip=None):
    """Train twin models on CPU and vkml; returns (cpu, vkml) dicts of model/losses/norms.

    Fallback counts are reset right before the vkml run, so they cover exactly it.
    """
    cpu_model, vk_model = twin_models(factory)
    out = []
    for model, device in ((cpu_model, "cpu"), (vk_model, VKML)):
        if device == VKML:
            torch_vkml.reset_fallback_counts()
        optimizer = make_optimizer(model.parameters())
        losses, norms = train(
            model, optimizer, to_device(batches, device), loss_fn, steps, clip=clip
        )
        out.append(dict(model=model, optimizer=optimizer, losses=losses, norms=norms))
    return out


def assert_trajectory(cpu_losses, vk_losses, *, atol, rtol, must_decrease=True):
    """vkml losses follow the CPU's within (atol, rtol); training actually trains."""
    torch.testing.assert_close(
        vk_losses,
        cpu_losses,
        atol=atol,
        rtol=rtol,
        msg=lambda m: (
            f"loss trajectory differs from the CPU\ncpu  {cpu_losses.tolist()}\n"
            f"vkml {vk_losses.tolist()}\n{m}"
        ),
    )
    assert torch.isfinite(cpu_losses).all()
    if must_decrease:
        assert cpu_losses[-1] < cpu_losses[0], f"the CPU run did not learn: {cpu_losses}"


def assert_state_close(vk_module, cpu_module, *, atol, rtol):
    """Parameters and buffers of the vkml module match the CPU module's."""
    cpu_state = cpu_module.state_dict()
    for name, value in vk_module.state_dict().items():
        assert value.device.type == VKML, f"{name} is on {value.device}"
        torch.testing.assert_close(
            value.cpu(),
            cpu_state[name],
            atol=atol,
            rtol=rtol,
            msg=lambda m, name=name: f"{name}: {m}",
        )
