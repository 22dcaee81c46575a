"""Scans against the CPU: cumsum, cumprod, cummax, cummin, logcumsumexp, with
their gradients."""

import pytest
import torch
from conftest import (
    FLOAT_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

SCAN_DTYPES = [torch.float32, torch.float16, torch.int32, torch.int64]
LAYOUTS = {
    "contiguous": ((4, 5, 6), lambda t: t),
    "transposed": ((6, 5, 4), lambda t: t.transpose(0, 2)),
    "empty": ((0, 5, 6), lambda t: t),
}
# Rows long enough for the workgroup-per-row path (several tiles), and lines
# through a middle dim (thread per line).
LONG = [((3, 700), -1), ((700,), 0), ((300, 3), 0), ((2, 300, 2), 1)]


def _tol(dtype, n=1):
    if dtype == torch.float16:
        return dict(atol=2e-2 * n, rtol=2e-2)
    if dtype == torch.float32:
        return dict(atol=1e-4 * n, rtol=1e-4)
    return {}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", SCAN_DTYPES + [torch.bool, torch.uint8], ids=dtype_id)
def test_cumsum(dtype, dim, layout):
    shape, view = LAYOUTS[layout]
    x = make(shape, dtype, low=-3, high=4)
    assert_close_to_cpu(lambda t: torch.cumsum(view(t), dim), x, **_tol(dtype, 4))


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=dtype_id)
def test_cumprod(dtype, dim, layout):
    shape, view = LAYOUTS[layout]
    x = make(shape, dtype, low=-2, high=3, nonzero=True)
    if dtype.is_floating_point:
        x = x.clamp(-1.5, 1.5)
    assert_close_to_cpu(lambda t: torch.cumprod(view(t), dim), x, **_tol(dtype))


@pytest.mark.parametrize("shape, dim", LONG)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=dtype_id)
def test_long_scans(dtype, shape, dim):
    x = make(shape, dtype, low=-3, high=4)
    assert_close_to_cpu(lambda t: t.cumsum(dim), x, **_tol(dtype, 30))
    assert_close_to_cpu(lambda t: t.cummax(dim), x)
    assert_close_to_cpu(lambda t: t.cummin(dim), x)
    if dtype.is_floating_point:
        assert_close_to_cpu(lambda t: t.logcumsumexp(dim), x, **_tol(dtype))
        y = make(shape, dtype, low=0.9, high=1.1)
        assert_close_to_cpu(lambda t: t.cumprod(dim), y, atol=1e-4, rtol=1e-3)


def test_scan_dtype_out_inplace_and_0dim():
    x = make((3, 4), torch.int32)
    assert_close_to_cpu(lambda t: t.cumsum(1, dtype=torch.float32), x)
    assert_close_to_cpu(lambda t: t.cumsum(0, dtype=torch.int32), x)
    assert_close_to_cpu(lambda t: t.cumprod(1, dtype=torch.int64), x)
    assert_close_to_cpu(lambda t: torch.cumsum(t, 1, out=torch.empty(0, device=t.device)), x)
    assert_close_to_cpu(lambda t: t.cumsum_(0), x)
    assert_close_to_cpu(lambda t: t.float().cumprod_(1), x)
    assert_close_to_cpu(lambda t: t[0, 0].cumsum(0), x)
    assert_close_to_cpu(lambda t: t[0, 0].float().cummax(0), x)
    assert_close_to_cpu(lambda t: t[0, 0].float().logcumsumexp(0), x)


@pytest.mark.parametrize("dtype", SCAN_DTYPES + [torch.bool, torch.uint8], ids=dtype_id)
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op, dtype):
    x = make((5, 6), dtype, low=-2, high=3)  # small range: many ties
    assert_close_to_cpu(lambda t: getattr(t, op)(1), x)
    assert_close_to_cpu(lambda t: getattr(t.t(), op)(0), x)
    assert_close_to_cpu(lambda t: getattr(t, op)(0), x)


def test_cummax_nan():
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 3.0, nan, 0.0], [2.0, 2.0, -1.0, 5.0, 5.0]])
    for op in ("cummax", "cummin"):
        assert_close_to_cpu(lambda t, op=op: getattr(t, op)(1), x)
    row = torch.cat([torch.arange(100.0), torch.tensor([nan]), torch.arange(100.0)])
    assert_close_to_cpu(lambda t: t.cummax(0), row)
    assert_close_to_cpu(lambda t: t.cummin(0), row)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_logcumsumexp(dtype):
    inf = float("inf")
    x = make((4, 7), dtype, low=-20, high=20)
    assert_close_to_cpu(lambda t: t.logcumsumexp(1), x, **_tol(dtype))
    assert_close_to_cpu(lambda t: t.logcumsumexp(0), x, **_tol(dtype))
    special = torch.tensor([-inf, -inf, 0.0, inf, 1.0, inf], dtype=dtype)
    assert_close_to_cpu(lambda t: t.logcumsumexp(0), special)


def test_scan_gradients():
    x = make((4, 6), low=0.5, high=1.5).requires_grad_()
    assert_grads_close_to_cpu(lambda t: t.cumsum(1), x)
    assert_grads_close_to_cpu(lambda t: t.t().cumsum(1), x)
    assert_grads_close_to_cpu(lambda t: t.cumprod(1), x, atol=1e-4, rtol=1e-4)
    assert_grads_close_to_cpu(lambda t: t.cummax(0)[0], x)
    assert_grads_close_to_cpu(lambda t: t.logcumsumexp(1), x, atol=1e-4, rtol=1e-4)


@pytest.mark.skipif(
    not torch_vkml.get_device_properties().supports_fp64, reason="needs shaderFloat64"
)
def test_logcumsumexp_large_values():
    # Near 1e4 an fp32 ulp is 1e-3: float32 logcumsumexp carries fp64 like the CPU,
    # and its backward (exp of the reverse scan plus the input, positive and negative
    # parts subtracted) only matches when the scans round like the CPU's.
    x = make((5, 5, 5))
    x[make((5, 5, 5), torch.bool)] = 1e4
    assert_close_to_cpu(lambda t: t.logcumsumexp(0), x, atol=0, rtol=1e-7)
    assert_grads_close_to_cpu(lambda t: t.logcumsumexp(0), x.requires_grad_(), atol=1e-4, rtol=1e-4)


def test_scan_errors_like_cpu():
    x = make((3, 4))
    assert_raises_like_cpu(lambda t: t.cumsum(2), x)
    assert_raises_like_cpu(lambda t: t.int().cumsum_(1, dtype=torch.float32), x)
    assert_raises_like_cpu(lambda t: t.int().logcumsumexp(0), x)


def test_very_long_row():
    """Chunked rows: chunk totals scanned recursively, then folded back in."""
    x = make(150_000, torch.int64, low=-5, high=6)
    assert_close_to_cpu(lambda t: t.cumsum(0), x)
    assert_close_to_cpu(lambda t: t.cummax(0), x)
    assert_close_to_cpu(lambda t: t.view(3, -1).cummin(1), x)
    assert_close_to_cpu(lambda t: t.nonzero(), x)


def test_very_long_line_through_a_middle_dim():
    """A line with elements after it is one thread's loop: Mesa 22.3's lavapipe stops an
    invocation's loops after 65535 iterations, so there (DeviceInfo::
    loop_iteration_limit) such a line is scanned moved last; elsewhere as it is."""
    x = make((2, 70_000, 2), torch.int64, low=-5, high=6)
    assert_close_to_cpu(lambda t: t.cumsum(1), x)
    assert_close_to_cpu(lambda t: t.cummax(1), x)
    assert_close_to_cpu(lambda t: t.cummin(1), x)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp", "cummax"])
@pytest.mark.parametrize("shape,dim", [((5, 9), 1), ((9000, 2), 0), ((2, 9000), 1)], ids=str)
def test_float64_scans(op, shape, dim):
    """float64 scans carry float64 (one thread per line, and long rows in chunks)."""
    x = (
        make(shape, torch.float64, low=0.9, high=1.1)
        if op == "cumprod"
        else make(shape, torch.float64)
    )

    def fn(t):
        r = getattr(t, op)(dim)
        return r[0] if op == "cummax" else r

    if not torch_vkml.get_device_properties(0).supports_fp64:
        with pytest.raises(NotImplementedError, match="float64"):
            fn(x.to(VKML))
        return
    torch.testing.assert_close(fn(x.to(VKML)).cpu(), fn(x), rtol=1e-10, atol=1e-10)
    # Precision float32 would lose: a running sum that passes 1e8 and comes back.
    y = torch.tensor([1e8, 1.0, -1e8, 1.0] * 500, dtype=torch.float64)
    torch.testing.assert_close(y.to(VKML).cumsum(0).cpu(), y.cumsum(0), rtol=0, atol=0)


def test_complex_logcumsumexp_takes_the_counted_cpu_route():
    z = torch.complex(make((3, 6), torch.float32), make((3, 6), torch.float32))
    torch_vkml.reset_fallback_counts()
    got = torch.logcumsumexp(z.to(VKML), 1).cpu()
    assert torch_vkml.fallback_counts() == {"aten::_logcumsumexp": 1}
    torch.testing.assert_close(got, torch.logcumsumexp(z, 1))
    torch_vkml.reset_fallback_counts()  # counted above, as this test expects
