"""softmax and log_softmax, forward and backward, against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    FLOAT_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    dtype_id,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

LAYOUTS = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.transpose(0, 2)),
}


# --------------------------------------------------------------- softmax


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax(fn, dtype, layout, dim):
    shape, view = LAYOUTS[layout]
    x = leaf(shape, dtype)
    assert_grads_close_to_cpu(lambda t: fn(view(t), dim=dim), x)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("cols", [300, 4500])
def test_softmax_rows_with_special_values(fn, cols):
    """-inf entries, a row of -inf only, NaN and +inf, in rows held in registers (300)
    and streamed (4500)."""
    x = make((5, cols))
    x[0, ::7] = float("-inf")
    x[1] = float("-inf")
    x[2, 5] = float("nan")
    x[3, 9] = float("inf")
    assert_close_to_cpu(lambda t: fn(t, dim=1), x)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_is_numerically_stable(fn):
    inf = float("inf")
    x = torch.tensor([[1000.0, 0.0, -1000.0], [-1000.0, -1000.5, -999.0], [0.0, -inf, 1.0]])
    assert_close_to_cpu(lambda t: fn(t, dim=1), x)
    assert_close_to_cpu(lambda t: fn(t[:2], dim=0), x)


# rows of up to 4096 are held in registers, longer ones streamed (online softmax)
@pytest.mark.parametrize(
    "shape, dim", [((3, 5000), -1), ((5000, 3), 0), ((2, 3000, 2), 1), ((3, 3000), -1)]
)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_long_rows(fn, shape, dim):
    x = leaf(shape, low=-10, high=10)
    assert_grads_close_to_cpu(lambda t: fn(t, dim=dim), x)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_very_long_line_through_a_middle_dim(fn):
    """One thread walks such a line: Mesa 22.3's lavapipe stops an invocation's loops
    after 65535 iterations in all, so there the dim is moved last first (rows get
    workgroups); elsewhere it runs as it is."""
    x = leaf((70_000, 3), low=-10, high=10)
    assert_grads_close_to_cpu(lambda t: fn(t, dim=0), x)


@pytest.mark.skipif(
    not torch_vkml.get_device_properties().supports_fp64, reason="device has no shaderFloat64"
)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin])
@pytest.mark.parametrize("shape, dim", [((4, 7), 1), ((5, 3, 2), 1), ((2, 300), -1)])
def test_softmax_float64(fn, shape, dim):
    # float64 rows, and float32 input promoted by dtype= (softmax.with_dtype)
    assert_grads_close_to_cpu(
        lambda t: fn(t, dim=dim), leaf(shape, torch.float64, low=-20, high=20)
    )
    assert_grads_close_to_cpu(lambda t: fn(t, dim=dim, dtype=torch.float64), leaf(shape))


def test_softmax_empty():
    assert_close_to_cpu(lambda t: F.softmax(t, dim=1), make((0, 4)))
    assert_close_to_cpu(lambda t: F.log_softmax(t, dim=0), make((0, 4)))


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_longer_than_a_workgroup_walks(log):
    """A last dim of millions of elements: one workgroup walked each row, and lavapipe's
    loops end after 65535 iterations (log_softmax over 9.4M elements was off by 16);
    such rows are composed of the native reductions. Against float64 on the CPU."""
    n = 6_000_000
    x = torch.rand(1, n, dtype=torch.float64) * 4
    g = torch.randn(1, n, dtype=torch.float64)
    fn = torch.log_softmax if log else torch.softmax
    results = {}
    for device, dtype in (("cpu", torch.float64), (VKML, torch.float32)):
        xs = x.to(device, dtype).detach().requires_grad_()
        y = fn(xs, -1)
        y.backward(g.to(device, dtype))
        results[device] = [y.detach().cpu().double(), xs.grad.cpu().double()]
    for got, want in zip(results[VKML], results["cpu"], strict=True):
        assert ((got - want).abs() <= 1e-6 * want.abs() + 1e-6 * want.abs().max()).all()
