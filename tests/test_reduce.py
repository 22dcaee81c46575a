"""Reductions against the CPU: sum, mean, max/min, argmax, all/any, var / std, nansum,
aminmax, equal, vector norms."""

import math

import pytest
import torch
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

# Summation order differs between devices: allow a little absolute slack.
SUM_TOL = {torch.float32: dict(atol=1e-4, rtol=1e-5), torch.float16: dict(atol=1e-2, rtol=1e-2)}

# layout -> (base shape, view function, dims to reduce over)
LAYOUTS = {
    "contiguous": ((4, 5, 6), lambda x: x, [0, 1, -1, (0, 2)]),
    "transposed": ((6, 4, 5), lambda x: x.permute(1, 2, 0), [0, -1, (0, 2)]),
    "sliced": ((8, 5, 12), lambda x: x[::2, :, 1::2], [0, -1, (0, 2)]),
    "empty": ((0, 3), lambda x: x, [0, 1, (0, 1)]),
    "zerodim": ((), lambda x: x, [0]),
}


def _cases(dims_ok=lambda layout, dim: True):
    for layout, (_, _, dims) in LAYOUTS.items():
        yield pytest.param(layout, None, False, id=f"{layout}-all")
        for dim in dims:
            if not dims_ok(layout, dim):
                continue
            for keepdim in (False, True):
                yield pytest.param(layout, dim, keepdim, id=f"{layout}-dim{dim}-keepdim{keepdim}")


def _input(layout, dtype, **make_kw):
    shape, view, _ = LAYOUTS[layout]
    return make(shape, dtype, **make_kw), view


def _tol(dtype):
    return SUM_TOL.get(dtype, {})


# ------------------------------------------------------------ sum / mean


@pytest.mark.parametrize("layout, dim, keepdim", list(_cases()))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_sum(dtype, layout, dim, keepdim):
    x, view = _input(layout, dtype)
    if dim is None:
        fn = lambda t: view(t).sum()  # noqa: E731
    else:
        fn = lambda t: view(t).sum(dim, keepdim=keepdim)  # noqa: E731
    assert_close_to_cpu(fn, x, **_tol(dtype))


@pytest.mark.parametrize("layout, dim, keepdim", list(_cases()))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_mean(dtype, layout, dim, keepdim):
    x, view = _input(layout, dtype)
    if dim is None:
        fn = lambda t: view(t).mean()  # noqa: E731
    else:
        fn = lambda t: view(t).mean(dim, keepdim=keepdim)  # noqa: E731
    assert_close_to_cpu(fn, x, **_tol(dtype))


@pytest.mark.parametrize(
    "in_dtype, out_dtype",
    [
        (torch.int32, torch.float32),
        (torch.float16, torch.float32),
        (torch.bool, torch.int32),
        (torch.float32, torch.float16),
        (torch.int64, torch.int32),
    ],
    ids=lambda d: dtype_id(d),
)
def test_sum_and_mean_dtype_argument(in_dtype, out_dtype):
    x = make((4, 5, 6), in_dtype)
    tol = _tol(out_dtype)
    assert_close_to_cpu(lambda t: t.sum(dtype=out_dtype), x, **tol)
    assert_close_to_cpu(lambda t: t.sum((0, 2), dtype=out_dtype), x, **tol)
    if out_dtype.is_floating_point:
        assert_close_to_cpu(lambda t: t.mean(dtype=out_dtype), x, **tol)
        assert_close_to_cpu(lambda t: t.mean(1, keepdim=True, dtype=out_dtype), x, **tol)


def test_empty_reductions():
    empty = torch.empty(0, 3)
    _, vk = assert_close_to_cpu(lambda t: t.sum(), empty)
    assert vk.item() == 0.0
    assert_close_to_cpu(lambda t: t.sum(0), empty)
    assert_close_to_cpu(lambda t: t.sum(dtype=torch.int64), empty)
    assert_close_to_cpu(lambda t: t.mean(), empty)  # nan, like the CPU
    assert_close_to_cpu(lambda t: t.sum(), torch.empty(0, dtype=torch.int32))
    assert_close_to_cpu(lambda t: t.all(), empty)
    assert_close_to_cpu(lambda t: t.any(), empty)
    assert_close_to_cpu(lambda t: t.max(1), empty)
    assert_raises_like_cpu(lambda t: t.max(), empty)
    assert_raises_like_cpu(lambda t: t.max(0), empty)
    assert_raises_like_cpu(lambda t: t.argmax(), empty)


def test_large_sums():
    assert_close_to_cpu(lambda t: t.sum(), make(100_000, low=0, high=1), atol=1e-2, rtol=1e-5)
    assert_close_to_cpu(lambda t: t.sum(1), make((3, 10_000)), atol=1e-3, rtol=1e-5)
    assert_close_to_cpu(lambda t: t.sum(0), make((10_000, 3)), atol=1e-3, rtol=1e-5)
    assert_close_to_cpu(lambda t: t.t().mean(0), make((10_000, 3)), atol=1e-5, rtol=1e-5)
    assert_close_to_cpu(lambda t: t[::3].sum(), make(65_537 * 3), atol=1e-2, rtol=1e-5)
    # float16 sums accumulate in float32
    assert_close_to_cpu(lambda t: t.sum(), make(4096, torch.float16, low=0, high=1))


def test_float64_products_multiply_pairwise():
    # The product kernel has no float64: prod multiplies pairs (composite/complex.cpp).
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.skip("the device has no float64")
    x = make((3, 7), torch.float64, low=0.5, high=1.5)
    assert_close_to_cpu(lambda t: t.prod(), x, atol=0, rtol=1e-12)
    assert_close_to_cpu(lambda t: t.prod(1), x, atol=0, rtol=1e-12)
    assert_close_to_cpu(lambda t: t.prod(0, keepdim=True), x, atol=0, rtol=1e-12)
    assert_close_to_cpu(lambda t: t[:, :0].prod(1), x)  # empty: ones


def test_integer_sums_are_exact_and_64_bit():
    big = torch.arange(1000, dtype=torch.int64) + 2**40
    assert_close_to_cpu(lambda t: t.sum(), big)
    assert_close_to_cpu(lambda t: t.reshape(10, 100).sum(1), big)
    int32 = torch.full((64,), 2**30, dtype=torch.int32)  # sum overflows int32
    _, vk = assert_close_to_cpu(lambda t: t.sum(), int32)
    assert vk.dtype == torch.int64 and vk.item() == 64 * 2**30
    assert_close_to_cpu(lambda t: t.sum(), torch.ones(70_000, dtype=torch.bool))


# -------------------------------------------------------------- max / min


SINGLE_DIM_CASES = list(_cases(lambda layout, dim: not isinstance(dim, tuple)))
MAX_DTYPES = [torch.float32, torch.float16] + INT_DTYPES


@pytest.mark.parametrize("layout, dim, keepdim", SINGLE_DIM_CASES)
@pytest.mark.parametrize("dtype", MAX_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(op, dtype, layout, dim, keepdim):
    x, view = _input(layout, dtype, unique=True)
    if dim is None:
        fn = lambda t: getattr(torch, op)(view(t))  # noqa: E731
    else:
        # (values, indices); values are unique, so the indices are defined
        fn = lambda t: getattr(torch, op)(view(t), dim, keepdim)  # noqa: E731
    if layout == "empty" and dim != 1:
        assert_raises_like_cpu(fn, x)  # reducing over a zero-size dim
    else:
        assert_close_to_cpu(fn, x)


@pytest.mark.parametrize("layout, dim, keepdim", SINGLE_DIM_CASES)
@pytest.mark.parametrize("dtype", MAX_DTYPES, ids=dtype_id)
def test_argmax(dtype, layout, dim, keepdim):
    x, view = _input(layout, dtype, unique=True)
    if dim is None:
        fn = lambda t: view(t).argmax()  # noqa: E731
    else:
        fn = lambda t: view(t).argmax(dim, keepdim=keepdim)  # noqa: E731
    if layout == "empty" and dim != 1:
        assert_raises_like_cpu(fn, x)
    else:
        assert_close_to_cpu(fn, x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_ties_pick_the_first_index(dtype):
    rows = [[1, 3, 3, 0], [2, 2, 2, 2], [0, 1, 0, 1], [1, 0, 1, 0]]
    x = torch.tensor(rows).to(dtype)
    for dim in (0, 1):
        assert_close_to_cpu(lambda t, dim=dim: t.max(dim), x)
        assert_close_to_cpu(lambda t, dim=dim: t.min(dim), x)
        assert_close_to_cpu(lambda t, dim=dim: t.t().max(dim), x)
        if dtype != torch.bool:  # argmax does not take bools
            assert_close_to_cpu(lambda t, dim=dim: t.argmax(dim), x)
    if dtype != torch.bool:
        assert_close_to_cpu(lambda t: t.argmax(), x)
    # long rows, so the first maximum and a later one land in different workgroups
    long = torch.zeros(3, 5000, dtype=dtype)
    long[0, [300, 4700]] = 1
    long[1, [4999, 4998]] = 1
    _, (values, indices) = assert_close_to_cpu(lambda t: t.max(1), long)
    assert indices.cpu().tolist() == [300, 4998, 0]
    assert_close_to_cpu(lambda t: t.t().max(0), long)
    if dtype != torch.bool:
        assert_close_to_cpu(lambda t: t.argmax(1), long)
        assert_close_to_cpu(lambda t: t.argmax(), long)
        assert_close_to_cpu(lambda t: t.t().argmax(0), long)


def test_max_propagates_nan():
    x = torch.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]])
    assert_close_to_cpu(torch.max, x)
    assert_close_to_cpu(torch.min, x)
    assert_close_to_cpu(lambda t: t.max(1), x)
    assert_close_to_cpu(lambda t: t.min(0), x)
    assert_close_to_cpu(lambda t: t.argmax(1), x)


def test_large_max_and_argmax():
    x = make(65_537 * 2, unique=True)
    assert_close_to_cpu(torch.max, x)
    assert_close_to_cpu(lambda t: t.argmax(), x)
    assert_close_to_cpu(lambda t: t[1::2].argmax(), x)
    assert_close_to_cpu(lambda t: t.reshape(2, -1).max(1), x)
    assert_close_to_cpu(lambda t: t.reshape(-1, 2).min(0), x)


# ---------------------------------------------------------------- all/any


@pytest.mark.parametrize("layout, dim, keepdim", SINGLE_DIM_CASES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any(op, dtype, layout, dim, keepdim):
    shape, view, _ = LAYOUTS[layout]
    # all: mostly nonzero; any: mostly zero -- so both outcomes occur per row
    mostly_nonzero = make(shape, low=0, high=1) < 0.85
    mask = mostly_nonzero if op == "all" else ~mostly_nonzero
    x = mask.to(dtype) * make(shape, dtype, nonzero=True)  # any nonzero is true
    if dim is None:
        fn = lambda t: getattr(view(t), op)()  # noqa: E731
    else:
        fn = lambda t: getattr(view(t), op)(dim, keepdim=keepdim)  # noqa: E731
    assert_close_to_cpu(fn, x)


def test_all_any_large():
    x = torch.ones(3, 70_000, dtype=torch.bool)
    x[1, 69_999] = False
    for fn in (torch.all, torch.any):
        assert_close_to_cpu(fn, x)
        assert_close_to_cpu(lambda t, fn=fn: fn(t, 1), x)
        assert_close_to_cpu(lambda t, fn=fn: fn(~t, 1), x)
        assert_close_to_cpu(lambda t, fn=fn: fn(t.float(), 0), x)


def test_reduction_results_live_on_device():
    x = torch.ones(10, device=VKML)
    for result in (x.sum(), x.mean(), x.max(), x.argmax(), x.all(), x.any()):
        assert result.is_vkml and result.dim() == 0


# --------------------------------------------------------------------------
# norm overloads, renorm, trace, mode
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=dtype_id)
def test_norm_overloads(dtype):
    tol = dict(atol=1e-2, rtol=1e-2) if dtype != torch.float32 else {}
    x = make((4, 5, 3), dtype)
    for p in (None, 1, 2, 3.5, float("inf"), 0):
        assert_close_to_cpu(lambda t, p=p: torch.norm(t, p=p, dim=1), x, **tol)
        assert_close_to_cpu(lambda t, p=p: torch.norm(t, p=p, dim=(0, 2), keepdim=True), x, **tol)
    assert_close_to_cpu(lambda t: torch.norm(t, dim=-1, dtype=torch.float32), x, **tol)
    y = make((4, 5, 3), dtype)
    assert_close_to_cpu(lambda a, b: torch.dist(a, b, 3), x, y, **tol)
    assert_close_to_cpu(lambda a, b: torch.nn.functional.pairwise_distance(a, b), x, y, **tol)


def test_renorm_and_grad():
    x = make((4, 3, 5), torch.float32)
    for p, dim, maxnorm in [(2, 0, 1.5), (1, 1, 4.0), (3, -1, 100.0)]:
        assert_close_to_cpu(lambda t, a=(p, dim, maxnorm): torch.renorm(t, *a), x)
    xc = x.clone().requires_grad_()
    xv = x.to(VKML).requires_grad_()
    g = make((4, 3, 5), torch.float32)
    torch.renorm(xc, 2, 0, 1.5).backward(g)
    torch.renorm(xv, 2, 0, 1.5).backward(g.to(VKML))
    torch.testing.assert_close(xv.grad.cpu(), xc.grad, atol=1e-5, rtol=1e-4)
    assert_close_to_cpu(lambda t: torch.renorm(t, 2, 1, 1.0), make((3, 4), torch.float16))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.int64, torch.int32, torch.uint8], ids=dtype_id
)
def test_trace(dtype):
    # torch < 2.13 has no float16 trace on the CPU: the reference sums in float32.
    def ref(t):
        if t.device.type == "cpu" and t.dtype == torch.float16:
            return torch.trace(t.float()).half()
        return torch.trace(t)

    assert_close_to_cpu(ref, make((5, 7), dtype))
    assert_close_to_cpu(lambda t: ref(t.t()), make((4, 3), dtype))
    assert_raises_like_cpu(ref, make((2, 2, 2), dtype))


def test_trace_bool_raises_like_cpu():
    assert_raises_like_cpu(torch.trace, make((3, 3), torch.bool))


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.uint8,
        torch.bool,
    ],
    ids=dtype_id,
)
def test_mode(dtype):
    # Small whole numbers: many ties, both between values and within a value.
    kw = {} if dtype == torch.bool else dict(low=0, high=4)
    x = make((3, 4, 9), dtype, **({"discrete": True} | kw) if dtype.is_floating_point else kw)
    for dim in (0, 1, -1):
        assert_close_to_cpu(lambda t, d=dim: torch.mode(t, d), x)
        assert_close_to_cpu(lambda t, d=dim: torch.mode(t, d, keepdim=True), x)
    assert_close_to_cpu(lambda t: torch.mode(t.transpose(0, 2), 1), x)
    assert_close_to_cpu(lambda t: torch.mode(t), make((), dtype))


def test_sgn_grad():
    x = make((3, 4), torch.float32)
    xc, xv = x.clone().requires_grad_(), x.to(VKML).requires_grad_()
    torch.sgn(xc).sum().backward()
    torch.sgn(xv).sum().backward()
    assert torch.equal(xv.grad.cpu(), xc.grad)


# ----------------------------------------- var / std, nansum, aminmax, equal

TOL = dict(atol=1e-5, rtol=1e-5)


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


# ------------------------------------------------------------ vector norms


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


# ---------------------------------------------------------------- float64

FP64 = torch_vkml.get_device_properties(0).supports_fp64


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda t: t.sum(), id="sum"),
        pytest.param(lambda t: t.sum(1, keepdim=True), id="sum-dim"),
        pytest.param(lambda t: t.mean(0), id="mean"),
        pytest.param(lambda t: t.prod(1), id="prod"),
        pytest.param(lambda t: t.max(), id="max"),
        pytest.param(lambda t: t.min(0), id="min-dim"),
        pytest.param(lambda t: t.argmax(1), id="argmax"),
        pytest.param(lambda t: t.amin((0, 1)), id="amin"),
        pytest.param(lambda t: t.norm(dim=1), id="norm"),
        pytest.param(lambda t: t.std(0), id="std"),
        pytest.param(lambda t: torch.var_mean(t, 1)[0], id="var"),
        pytest.param(lambda t: torch.linalg.vector_norm(t, float("inf"), dim=0), id="norm-inf"),
        pytest.param(lambda t: t.nansum(0), id="nansum"),
        pytest.param(lambda t: (t > 0).all(1), id="all"),
    ],
)
@pytest.mark.parametrize("shape", [(7, 13), (3, 20000), (20000, 3)], ids=str)
def test_float64_reductions(fn, shape):
    """float64 reduces in float64 where the device has it (rows, columns and the split
    two-pass path of long lines), to float64's precision."""
    x = make(shape, torch.float64)
    if not FP64:
        with pytest.raises(NotImplementedError, match="float64"):
            fn(x.to(VKML))
        return
    got, want = fn(x.to(VKML)), fn(x)
    if isinstance(got, tuple):
        got, want = got[0], want[0]
    torch.testing.assert_close(got.cpu(), want, rtol=1e-11, atol=1e-11)


def test_float64_sums_keep_float64_precision():
    if not FP64:
        pytest.xfail("the device has no float64 arithmetic")
    # In float32 the 1 is lost against 1e8; float64 keeps it, as the CPU does.
    x = torch.tensor([1e8, 1.0, -1e8] * 1000, dtype=torch.float64)
    assert x.to(VKML).sum().item() == 1000.0
    third = torch.full((3, 30000), 1 / 3, dtype=torch.float64)
    torch.testing.assert_close(third.to(VKML).mean(1).cpu(), third.mean(1), rtol=1e-15, atol=0)
    # A float32 input summed in float64 accumulates in float64 too.
    y = torch.tensor([16777216.0, 1.0, 1.0, 1.0, 1.0], dtype=torch.float32)
    assert y.to(VKML).sum(dtype=torch.float64).item() == 16777220.0


def test_complex_product_of_a_0_dim_tensor():
    z = torch.tensor(2 + 1j, dtype=torch.complex64)
    assert_close_to_cpu(lambda t: t.prod(dim=0, keepdim=True), z)
    assert_close_to_cpu(lambda t: t.prod(dim=-1), z)


def test_complex_renorm():
    """renorm of complex slices by the norm of their magnitudes (real), as on the CPU
    (complex128's magnitudes take float64 hypot, on the CPU route)."""
    z = torch.complex(make((4, 5, 3), torch.float32), make((4, 5, 3), torch.float32))
    # The norm's summation order differs from the CPU's: float32 tolerance, not equality.
    assert_close_to_cpu(lambda t: torch.renorm(t, 2, 0, 1.5), z, rtol=1e-5, atol=1e-6)
    assert_close_to_cpu(lambda t: torch.renorm(t, 1.5, 2, 0.5), z, rtol=1e-5, atol=1e-6)


def test_empty_dims_and_empty_slices_as_on_the_cpu():
    """Found by PyTorch's test_reductions.py on vkml."""
    x = make((2, 3)) > 0
    for device in ("cpu", VKML):
        y = x.to(device)
        # all / any over an empty list of dims reduce nothing (sum's dim=[] reduces all)
        for fn in (torch.any, torch.all):
            r = fn(y, dim=[])
            assert r.shape == (2, 3) and torch.equal(r.cpu(), x)
            assert fn(y.byte(), dim=()).dtype == torch.uint8
        # reductions that need a value over an empty slice raise IndexError, naming the dim
        z = torch.empty(3, 0, device=device)
        for fn in (torch.argmax, torch.amin, lambda t, d: torch.kthvalue(t, 1, d)):
            with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
                fn(z, 1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64, torch.complex128], ids=str)
def test_prod_and_cumprod_over_one_element_do_not_alias_the_input(dtype):
    # The pairwise products returned the input itself over a dim of one element: writes to
    # the result changed the input, and autograd moved a leaf into the graph ("leaf
    # variable has been moved into the graph interior", test_ops' TestMathBits).
    x = torch.ones(1, dtype=dtype, device=VKML)
    for fn in (
        lambda t: torch.prod(t, 0, keepdim=True),
        lambda t: torch.prod(t.view(1, 1), 0),
        lambda t: torch.cumprod(t, 0),
    ):
        y = fn(x)
        assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
        y.add_(1)
        assert x.cpu().real.item() == 1
        leaf = torch.full((1,), 2, dtype=dtype, device=VKML, requires_grad=True)
        fn(leaf).sum().abs().backward(retain_graph=True)
        assert leaf.grad is not None and leaf.is_leaf
