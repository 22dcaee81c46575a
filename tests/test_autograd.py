"""Training on vkml: MLP gradients and optimizer steps match the CPU."""

import copy

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML, assert_same, make, to_device
from torch import nn

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=1e-5, rtol=1e-5)


def _mlp():
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(0)  # initialised on the CPU
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _pair():
    """The same MLP on the CPU and on vkml."""
    cpu = _mlp()
    vk = copy.deepcopy(cpu).to(VKML)
    for p in vk.parameters():
        assert p.is_vkml
    return cpu, vk


def _batch():
    return make((10, 8)), make(10, torch.int64, low=0, high=4)


def test_mlp_gradients():
    cpu, vk = _pair()
    x, y = _batch()
    x.requires_grad_()
    x_vk = to_device(x, VKML)
    loss_cpu = F.cross_entropy(cpu(x), y)
    loss_vk = F.cross_entropy(vk(x_vk), y.to(VKML))
    assert_same(loss_vk, loss_cpu, **TOL)
    loss_cpu.backward()
    loss_vk.backward()
    for (name, p_cpu), p_vk in zip(cpu.named_parameters(), vk.parameters(), strict=True):
        assert p_vk.grad is not None and p_vk.grad.is_vkml, name
        assert_same(p_vk.grad, p_cpu.grad, where=f"{name}.grad", **TOL)
    assert_same(x_vk.grad, x.grad, where="input.grad", **TOL)


def test_gradients_accumulate():
    cpu, vk = _pair()
    batches = [_batch(), _batch()]
    for model, device in ((cpu, "cpu"), (vk, VKML)):
        for x, y in batches:
            F.cross_entropy(model(x.to(device)), y.to(device)).backward()
    for (name, p_cpu), p_vk in zip(cpu.named_parameters(), vk.parameters(), strict=True):
        assert_same(p_vk.grad, p_cpu.grad, where=f"{name}.grad", **TOL)
    vk.zero_grad(set_to_none=False)
    for p in vk.parameters():
        assert p.grad.is_vkml and not p.grad.cpu().any()


OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "sgd_nesterov_wd": (
        torch.optim.SGD,
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
    ),
    "adam": (torch.optim.Adam, dict(lr=1e-2)),
    "adamw": (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
}


@pytest.mark.parametrize("foreach", [None, False], ids=["default", "for_loop"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps(name, foreach):
    optimizer_class, kwargs = OPTIMIZERS[name]
    cpu, vk = _pair()
    if foreach is not None:
        kwargs = dict(kwargs, foreach=foreach)
    opt_cpu = optimizer_class(cpu.parameters(), **kwargs)
    opt_vk = optimizer_class(vk.parameters(), **kwargs)
    for step in range(5):
        x, y = _batch()
        for model, opt, device in ((cpu, opt_cpu, "cpu"), (vk, opt_vk, VKML)):
            opt.zero_grad()
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
        for (pname, p_cpu), p_vk in zip(cpu.named_parameters(), vk.parameters(), strict=True):
            assert p_vk.is_vkml
            assert_same(p_vk.detach(), p_cpu.detach(), where=f"step {step}: {pname}", **TOL)
    # optimizer state lives on the device too
    for p in vk.parameters():
        for key, value in opt_vk.state[p].items():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                assert value.is_vkml, key


def test_no_grad_and_detach():
    w = torch.ones(3, device=VKML, requires_grad=True)
    with torch.no_grad():
        y = w * 2
    assert not y.requires_grad
    z = (w * 3).detach()
    assert not z.requires_grad and z.is_vkml
    assert torch.equal(z.cpu(), torch.full((3,), 3.0))


def test_index_fill_grad_and_unique():
    # index_fill's backward deduplicates the index with aten::_unique.
    x = make((4, 5), torch.float32)
    idx = torch.tensor([3, 1, 3])
    xc, xv = x.clone().requires_grad_(), x.to(VKML).requires_grad_()
    g = make((4, 5), torch.float32)
    xc.index_fill(1, idx, 2.0).backward(g)
    xv.index_fill(1, idx.to(VKML), 2.0).backward(g.to(VKML))
    assert_same(xv.grad, xc.grad)
    t = torch.tensor([3, 1, 3, 0, 1])
    assert_same(
        torch._unique(t.to(VKML), return_inverse=True), torch._unique(t, return_inverse=True)
    )


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["nonreentrant", "reentrant"])
def test_checkpoint_recomputes_the_same_dropout_masks(use_reentrant):
    """torch.utils.checkpoint saves the device's RNG state before the forward and
    restores it for the recomputation, but only on a device whose module says it is
    initialised (``torch.vkml._initialized``). Without that the backward drew new masks:
    the output matched, the gradient did not."""
    from torch.utils.checkpoint import checkpoint

    lin = nn.Linear(64, 64).to(VKML)
    x = make((32, 64)).to(VKML).requires_grad_()
    assert torch.vkml._initialized

    def block(x):
        return F.dropout(torch.tanh(lin(x)), 0.5, training=True)

    torch.manual_seed(1)
    plain = block(x)
    plain.sum().backward()
    want = x.grad.cpu()
    x.grad = None
    torch.manual_seed(1)
    again = checkpoint(block, x, use_reentrant=use_reentrant)
    again.sum().backward()
    assert torch.equal(again.detach().cpu(), plain.detach().cpu())
    assert_same(x.grad, want, atol=0, rtol=0)
