"""var / std (with correction), var_mean / std_mean, nansum, aminmax, equal, addmv and
vdot on vkml against the CPU; integer matrix products take the counted CPU route."""

import pytest
import torch
from conftest import assert_close_to_cpu, make

import torch_vkml

TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.mark.usefixtures("no_fallback")
@pytest.mark.parametrize("dim", [None, 0, (0, 2), -1], ids=["all", "d0", "d02", "dlast"])
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std_match_cpu(dim, correction, keepdim):
    x = make((3, 4, 5), torch.float32)
    for fn in (torch.var, torch.std, torch.var_mean, torch.std_mean):
        assert_close_to_cpu(
            lambda t, f=fn: f(t, dim=dim, correction=correction, keepdim=keepdim), x, **TOL
        )
    assert_close_to_cpu(lambda t: torch.var(t.transpose(0, 2), dim=dim), x, **TOL)


@pytest.mark.usefixtures("no_fallback")
def test_var_grad_and_half_and_errors():
    x = make((4, 6), torch.float32)
    xd = x.to("vkml").requires_grad_()
    x.requires_grad_()
    torch.std(x, 1).sum().backward()
    torch.std(xd, 1).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, **TOL)
    assert_close_to_cpu(lambda t: t.var(0), x.detach().half(), atol=1e-2, rtol=1e-2)
    # One element with correction 1: division by zero gives nan, as on the CPU.
    assert_close_to_cpu(lambda t: t.var(), torch.ones(1))
    with pytest.raises(RuntimeError, match="floating point"):
        torch.var(torch.ones(3, dtype=torch.int64, device="vkml"))


@pytest.mark.usefixtures("no_fallback")
def test_nansum_aminmax_equal():
    x = make((3, 5), torch.float32)
    x[0, 1] = float("nan")
    assert_close_to_cpu(torch.nansum, x, **TOL)
    assert_close_to_cpu(lambda t: torch.nansum(t, 1, keepdim=True), x, **TOL)
    y = make((3, 5), torch.float32)
    assert_close_to_cpu(torch.aminmax, y)
    assert_close_to_cpu(lambda t: torch.aminmax(t, dim=0, keepdim=True), y)
    assert_close_to_cpu(lambda t: torch.aminmax(t.int(), dim=1), y)
    a = y.to("vkml")
    assert torch.equal(a, a.clone())
    assert not torch.equal(a, a + 1)
    assert not torch.equal(a, a[:2])
    assert torch.equal(torch.ones(0, device="vkml"), torch.ones(0, device="vkml"))


@pytest.mark.usefixtures("no_fallback")
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1)])
def test_addmv_and_vdot(beta, alpha):
    self_, mat, vec = make((4,), torch.float32), make((4, 6), torch.float32), make((6,))
    if beta == 0:
        self_[0] = float("nan")  # ignored when beta == 0
    assert_close_to_cpu(
        lambda s, m, v: torch.addmv(s, m, v, beta=beta, alpha=alpha), self_, mat, vec, **TOL
    )
    assert_close_to_cpu(lambda m, v: m.t()[:6, :4].t() @ v, mat, vec, **TOL)
    assert_close_to_cpu(torch.vdot, vec, make((6,), torch.float32), **TOL)


def test_integer_matmul_takes_the_counted_cpu_route():
    torch_vkml.reset_fallback_counts()
    a = torch.arange(6).reshape(2, 3)
    b = torch.arange(12).reshape(3, 4)
    r = torch.mm(a.to("vkml"), b.to("vkml"))
    assert r.is_vkml and torch.equal(r.cpu(), a @ b)
    assert torch_vkml.fallback_counts().get("aten::mm", 0) == 1
