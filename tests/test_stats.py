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


def test_int8_matmul_takes_the_counted_cpu_route():
    # int64 / int32 / uint8 have GEMM variants (test_matmul.py); int8 does not.
    torch_vkml.reset_fallback_counts()
    a = torch.arange(6, dtype=torch.int8).reshape(2, 3)
    b = torch.arange(12, dtype=torch.int8).reshape(3, 4)
    r = torch.mm(a.to("vkml"), b.to("vkml"))
    assert r.is_vkml and torch.equal(r.cpu(), a @ b)
    assert torch_vkml.fallback_counts().get("aten::mm", 0) == 1


# --------------------------------------------------------------------------
# isin, histogram, histogramdd
# --------------------------------------------------------------------------


@pytest.mark.usefixtures("no_fallback")
@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.uint8,
    ],
    ids=str,
)
def test_isin(dtype):
    kw = dict(low=0, high=8)
    if dtype.is_floating_point:
        kw["discrete"] = True
    e, t = make((4, 5), dtype, **kw), make((6,), dtype, **kw)
    for invert in (False, True):
        assert_close_to_cpu(lambda a, b, i=invert: torch.isin(a, b, invert=i), e, t)
        assert_close_to_cpu(
            lambda a, b, i=invert: torch.isin(a, b, assume_unique=True, invert=i),
            e.unique(),
            t.unique(),
        )
    assert_close_to_cpu(lambda a: torch.isin(a, 3), e)
    assert_close_to_cpu(lambda b: torch.isin(3, b), t)
    assert_close_to_cpu(lambda a, b: torch.isin(a, b), e, make((0,), dtype))


def test_isin_bool_raises_like_cpu():
    b = torch.tensor([True, False])
    with pytest.raises(RuntimeError, match="Unsupported input type"):
        torch.isin(b.to("vkml"), b.to("vkml"))


@pytest.mark.usefixtures("no_fallback")
def test_isin_large_sorted_path():
    e = make((3000,), torch.float32, discrete=True, low=-500, high=500)
    t = make((2000,), torch.float32, discrete=True, low=-500, high=500)
    assert_close_to_cpu(torch.isin, e, t)
    assert_close_to_cpu(torch.isin, e.long(), t.long())


@pytest.mark.usefixtures("no_fallback")
def test_histogram():
    x = make((50,), torch.float32)
    w = make((50,), torch.float32, low=0, high=2)
    assert_close_to_cpu(lambda t: torch.histogram(t, 7), x)
    assert_close_to_cpu(lambda t: torch.histogram(t, 5, range=(-1.0, 2.0)), x)
    assert_close_to_cpu(lambda t, ww: torch.histogram(t, 6, weight=ww, density=True), x, w)
    bins = torch.tensor([-2.5, -1.0, 0.0, 0.5, 2.0])
    assert_close_to_cpu(lambda t, b: torch.histogram(t, b), x, bins)
    assert_close_to_cpu(lambda t, b, ww: torch.histogram(t, b, weight=ww), x, bins, w)
    # Values on the edges: the right edge belongs to the last bin.
    assert_close_to_cpu(
        lambda t: torch.histogram(t, 4), torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 4.0])
    )
    assert_close_to_cpu(lambda t: torch.histogram(t, 3), torch.full((5,), 2.0))


@pytest.mark.usefixtures("no_fallback")
def test_histogramdd():
    x = make((40, 3), torch.float32)
    w = make((40,), torch.float32, low=0, high=1)
    assert_close_to_cpu(lambda t: torch.histogramdd(t, [3, 4, 2]), x)
    assert_close_to_cpu(
        lambda t, ww: torch.histogramdd(
            t, [2, 2, 3], range=[-1.0, 1.0, -2.0, 2.0, 0.0, 3.0], weight=ww, density=True
        ),
        x,
        w,
    )
    edges = [
        torch.tensor([-3.0, 0.0, 3.0]),
        torch.tensor([-1.0, 0.5, 1.0, 2.0]),
        torch.tensor([-3.0, 3.0]),
    ]
    assert_close_to_cpu(lambda t, a, b, c: torch.histogramdd(t, [a, b, c]), x, *edges)
