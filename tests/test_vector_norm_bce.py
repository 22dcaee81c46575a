"""Vector norms (torch.linalg.vector_norm, clip_grad_norm_) and binary_cross_entropy
on vkml against the CPU, forward and backward."""

import math

import pytest
import torch
from conftest import assert_close_to_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, 0, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)], ids=["all", "dim1", "dims02"])
def test_vector_norm_matches_cpu(ord, dim):
    x = make((3, 4, 5), torch.float32)
    x[0, 0, 0] = 0.0
    assert_close_to_cpu(lambda t: torch.linalg.vector_norm(t, ord, dim), x, atol=1e-5, rtol=1e-5)
    assert_close_to_cpu(
        lambda t: torch.linalg.vector_norm(t.transpose(0, 2), ord, dim, keepdim=True),
        x,
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.parametrize("ord", [2, 1, 3])
def test_vector_norm_grad_matches_cpu(ord):
    x = make((4, 6), torch.float32)
    xd = x.to("vkml").requires_grad_()
    x.requires_grad_()
    torch.linalg.vector_norm(x, ord).backward()
    torch.linalg.vector_norm(xd, ord).backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, atol=1e-5, rtol=1e-5)


def test_vector_norm_rejects_integers_and_empty_inf():
    with pytest.raises(RuntimeError, match="floating point"):
        torch.linalg.vector_norm(torch.ones(3, dtype=torch.int64, device="vkml"))
    with pytest.raises(RuntimeError, match="identity"):
        torch.linalg.vector_norm(torch.ones(0, 3, device="vkml"), math.inf, dim=0)


def test_clip_grad_norm_matches_cpu():
    torch.manual_seed(0)
    cpu = torch.nn.Linear(5, 3)
    dev = torch.nn.Linear(5, 3).to("vkml")
    dev.load_state_dict(cpu.state_dict())
    x = make((7, 5), torch.float32)
    cpu(x).pow(2).sum().backward()
    dev(x.to("vkml")).pow(2).sum().backward()
    n_c = torch.nn.utils.clip_grad_norm_(cpu.parameters(), 0.5)
    n_d = torch.nn.utils.clip_grad_norm_(dev.parameters(), 0.5)
    assert n_d.item() == pytest.approx(n_c.item(), rel=1e-5)
    for p, q in zip(cpu.parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_cpu(reduction, weighted):
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(1)) * 0.98 + 0.01
    x[0, 0], x[0, 1] = 0.0, 1.0  # the clamped logs
    t = (torch.rand(4, 5, generator=torch.Generator().manual_seed(2)) > 0.5).float()
    w = torch.rand(5, generator=torch.Generator().manual_seed(3)) if weighted else None
    xd = x.to("vkml").requires_grad_()
    x.requires_grad_()
    f = torch.nn.functional.binary_cross_entropy
    loss_c = f(x, t, weight=w, reduction=reduction)
    loss_d = f(xd, t.to("vkml"), weight=None if w is None else w.to("vkml"), reduction=reduction)
    torch.testing.assert_close(loss_d.cpu(), loss_c.detach(), atol=1e-5, rtol=1e-5)
    loss_c.sum().backward()
    loss_d.sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, atol=1e-4, rtol=1e-5)
