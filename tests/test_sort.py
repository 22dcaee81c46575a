"""Sorting and selection ops against the CPU (searching and counting: test_search.py)."""

import pytest
import torch
from conftest import VKML, assert_close_to_cpu, assert_raises_like_cpu, assert_same, dtype_id, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

SORT_DTYPES = [torch.float32, torch.float16, torch.int64, torch.int32, torch.uint8]
NAN = float("nan")
INF = float("inf")


def _check_indices_select_values(x_cpu, values, indices, dim):
    """Indices of an unstable selection must point at the returned values."""
    v, i = values.cpu(), indices.cpu()
    assert i.dtype == torch.int64
    torch.testing.assert_close(x_cpu.gather(dim, i), v, equal_nan=True, atol=0, rtol=0)


# ----------------------------------------------------------------- sort


@pytest.mark.parametrize("dtype", SORT_DTYPES + [torch.bool], ids=dtype_id)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, -1])
def test_sort_stable_with_ties(dtype, descending, dim):
    x = make((37, 9), dtype, low=-3, high=4, discrete=True)  # many ties
    assert_close_to_cpu(lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), x)
    assert_close_to_cpu(lambda t: torch.argsort(t, dim=dim, descending=descending, stable=True), x)


@pytest.mark.parametrize("n", [1, 2, 5, 1024, 1025, 3000])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_lengths(n, descending):
    # 1025 and 3000 take the multi-block path (global steps between block merges)
    x = make((3, n), low=-20, high=20, discrete=True)
    assert_close_to_cpu(lambda t: t.sort(descending=descending, stable=True), x)
    i64 = make((2, n), torch.int64, low=-50, high=50)
    assert_close_to_cpu(lambda t: t.sort(descending=descending, stable=True), i64)


def test_sort_unstable_api_and_layouts():
    x = make((4, 6, 5), unique=True)
    assert_close_to_cpu(lambda t: t.sort(1), x)  # unique values: indices are determined
    assert_close_to_cpu(lambda t: t.transpose(0, 2).sort(0, descending=True), x)
    assert_close_to_cpu(lambda t: t[:, ::2].sort(-1), x)
    assert_close_to_cpu(lambda t: torch.msort(t), x)
    assert_close_to_cpu(lambda t: t.sort(0), make(()))
    assert_close_to_cpu(lambda t: t.sort(0), make((0, 3)))
    assert_close_to_cpu(lambda t: t.sort(1), make((0, 3)))
    y = make((5, 7), discrete=True)
    values, indices = y.to(VKML).sort(1)  # ties: values exact, indices consistent
    assert_same(values, y.sort(1).values)
    _check_indices_select_values(y, values, indices, 1)

    def out_form(t):
        v, i = torch.empty(0, device=t.device), torch.empty(0, dtype=torch.long, device=t.device)
        torch.sort(t, -1, out=(v, i))
        return v, i

    assert_close_to_cpu(out_form, x)


def test_sort_nan_inf_and_signed_zero():
    x = torch.tensor([[3.0, NAN, -INF, 1.0, NAN, INF, -0.0, 0.0, 2.0, -1.0]])
    for desc in (False, True):
        assert_close_to_cpu(lambda t, d=desc: t.sort(descending=d, stable=True), x)
        assert_close_to_cpu(lambda t, d=desc: t.half().sort(descending=d, stable=True), x)
    big = make((2, 2000))
    big[0, ::7] = NAN
    assert_close_to_cpu(lambda t: t.sort(descending=True, stable=True), big)


def test_sort_values_grad():
    x = make((3, 8), unique=True).requires_grad_()
    # sort's backward scatters the gradient (an index op, not part of this family):
    # compare the gradient itself, not the fallback count.
    xc, xv = x.detach().clone().requires_grad_(), x.detach().to(VKML).requires_grad_()
    g = make((3, 8))
    xc.sort(1, descending=True).values.backward(g)
    xv.sort(1, descending=True).values.backward(g.to(VKML))
    assert_same(xv.grad, xc.grad)
    xv.grad = None
    xv.topk(3, 1).values.backward(g[:, :3].to(VKML))
    xc.grad = None
    xc.topk(3, 1).values.backward(g[:, :3])
    assert_same(xv.grad, xc.grad)
    counts = torch_vkml.fallback_counts()
    assert set(counts) <= {"aten::scatter.src_out"}, counts
    torch_vkml.reset_fallback_counts()


# ----------------------------------------------------------------- topk


@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3, 9])
def test_topk(dtype, largest, k):
    x = make((6, 9), dtype, discrete=True)
    expected = x.topk(k, dim=1, largest=largest)
    values, indices = x.to(VKML).topk(k, dim=1, largest=largest)
    assert_same(values, expected.values)
    _check_indices_select_values(x, values, indices, 1)
    values, indices = x.to(VKML).t().topk(k, dim=0, largest=largest)  # non-contiguous
    assert_same(values, x.t().topk(k, dim=0, largest=largest).values)
    _check_indices_select_values(x.t(), values, indices, 0)


def test_topk_nan_is_largest_and_edge_cases():
    x = torch.tensor([1.0, NAN, 5.0, -INF, 3.0])
    assert_close_to_cpu(lambda t: t.topk(2), x)
    assert_close_to_cpu(lambda t: t.topk(2, largest=False), x)
    assert_close_to_cpu(lambda t: t.topk(1), make(()))
    assert_close_to_cpu(lambda t: t.topk(0, dim=1), make((0, 4)))
    assert_close_to_cpu(lambda t: t.topk(2, dim=0), make((4, 0)))
    assert_raises_like_cpu(lambda t: t.topk(6), make((5,)))


# --------------------------------------------------- kthvalue, median


@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_and_median_dim(dtype, keepdim):
    x = make((5, 7), dtype, discrete=True)
    for k in (1, 4, 7):
        values, indices = x.to(VKML).kthvalue(k, 1, keepdim)
        assert_same(values, x.kthvalue(k, 1, keepdim).values)
        _check_indices_select_values(x, values.reshape(5, 1), indices.reshape(5, 1), 1)
    for dim in (0, 1, -1):
        values, indices = x.to(VKML).median(dim, keepdim)
        assert_same(values, x.median(dim, keepdim).values)
        v, i = (values, indices) if keepdim else (values.unsqueeze(dim), indices.unsqueeze(dim))
        _check_indices_select_values(x, v, i, dim)
    assert_close_to_cpu(lambda t: t.median(), x)


def test_median_nan_and_edge_cases():
    x = torch.tensor([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 1.0, 3.0]])
    assert_close_to_cpu(lambda t: t.median(1), x)  # first NaN wins
    assert_close_to_cpu(lambda t: t.median(), x)
    assert_close_to_cpu(lambda t: t[1].median(), x)
    assert_close_to_cpu(lambda t: t.median(), make((0,)))
    assert_close_to_cpu(lambda t: (t.median(), t.median(0), t.kthvalue(1)), make(()))
    assert_raises_like_cpu(lambda t: t.kthvalue(4, 1), make((2, 3)))
    assert_raises_like_cpu(lambda t: t.median(1), make((2, 0)))


# --------------------------------------------------------------- unique


@pytest.mark.parametrize("dtype", SORT_DTYPES + [torch.bool], ids=dtype_id)
def test_unique(dtype):
    x = make((6, 7), dtype, low=-4, high=5, discrete=True)
    assert_close_to_cpu(lambda t: torch.unique(t), x)
    assert_close_to_cpu(lambda t: torch.unique(t, return_inverse=True, return_counts=True), x)
    assert_close_to_cpu(lambda t: torch.unique(t.t(), return_inverse=True), x)
    assert_close_to_cpu(lambda t: torch.unique(t[0, 0], return_counts=True), x)
    assert_close_to_cpu(
        lambda t: torch.unique(t, return_inverse=True, return_counts=True), make((0, 2), dtype)
    )


def test_unique_long_and_nan():
    x = make((3000,), torch.int64, low=0, high=700)  # scan over several chunks
    assert_close_to_cpu(lambda t: torch.unique(t, return_inverse=True, return_counts=True), x)
    f = torch.tensor([2.0, NAN, 1.0, 2.0, NAN, -INF])
    assert_close_to_cpu(lambda t: torch.unique(t, return_counts=True), f)


@pytest.mark.parametrize("dtype", SORT_DTYPES + [torch.bool], ids=dtype_id)
def test_unique_along_a_dim(dtype):
    """torch.unique(x, dim=d) and unique_consecutive(x, dim=d): slices in lexicographic
    order by one stable sort per column, grouped on the device (pytorch-metric-learning's
    HistogramLoss, edge lists, label rows); one read-back for the count, as on CUDA."""
    x = make((40, 3), dtype, low=0, high=3, discrete=True)
    x = torch.cat([x, x[:10]])  # repeated rows
    for dim, t in ((0, x), (1, x.t()), (1, x.reshape(10, 5, 3).transpose(0, 1)), (-1, x[:, :1])):
        for kw in ({}, dict(return_inverse=True, return_counts=True)):
            assert_close_to_cpu(lambda v, t=t, dim=dim, kw=kw: torch.unique(v, dim=dim, **kw), t)
            assert_close_to_cpu(
                lambda v, t=t, dim=dim, kw=kw: torch.unique_consecutive(v, dim=dim, **kw), t
            )
    assert_close_to_cpu(lambda v: torch.unique(v, dim=0, return_counts=True), make((0, 3), dtype))
    assert_raises_like_cpu(lambda v: torch.unique(v, dim=0), make((3, 0), dtype))
    assert_raises_like_cpu(lambda v: torch.unique(v, dim=2), x)


def test_unique_rows_with_nan_and_signed_zeros():
    # -0.0 == 0.0, also where the sort's keys would part equal rows ([-0, 5] between
    # [-0, 1] and [0, 1]). NaN rows are never equal: each its own group (where they sort
    # among the others is the CPU's unspecified comparison order, so not compared).
    x = torch.tensor([[0.0, -0.0], [-0.0, 0.0], [1.0, 2.0], [-0.0, 5.0], [0.0, 1.0], [-0.0, 1.0]])
    kw = dict(return_inverse=True, return_counts=True)
    assert_close_to_cpu(lambda v: torch.unique(v, dim=0, **kw), x)
    assert_close_to_cpu(lambda v: torch.unique_consecutive(v, dim=0, **kw), x)
    nan_rows = torch.tensor([[1.0, NAN], [1.0, NAN], [2.0, 3.0]], device=VKML)
    values, inverse, counts = torch.unique(nan_rows, dim=0, **kw)
    assert values.shape == (3, 2) and counts.tolist() == [1, 1, 1]
    torch.testing.assert_close(
        values[inverse].cpu(), nan_rows.cpu(), equal_nan=True, atol=0, rtol=0
    )


# ------------------------------------------------------------- randperm


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32], ids=dtype_id)
def test_randperm(dtype):
    torch.manual_seed(5)
    p = torch.randperm(3000, device=VKML, dtype=dtype)
    assert p.device.type == VKML and p.dtype == dtype
    c = p.cpu()
    assert torch.equal(c.sort().values, torch.arange(3000, dtype=dtype))
    assert not torch.equal(c, torch.arange(3000, dtype=dtype))
    torch.manual_seed(5)
    assert torch.equal(torch.randperm(3000, device=VKML, dtype=dtype).cpu(), c)
    g = torch.Generator(device=VKML).manual_seed(1)
    q = torch.randperm(10, generator=g, device=VKML)
    assert torch.equal(q.cpu().sort().values, torch.arange(10))
    assert torch.randperm(0, device=VKML).shape == (0,)


def test_sort_many_short_rows():
    x = make((500, 3), discrete=True)
    assert_close_to_cpu(lambda t: t.sort(dim=1, stable=True), x)
    assert_close_to_cpu(lambda t: t.median(1).values, x)


def test_bool_selection_errors_like_cpu():
    x = torch.tensor([True, False, True])
    assert_raises_like_cpu(lambda t: t.topk(1), x)
    assert_raises_like_cpu(lambda t: t.kthvalue(1), x)
    assert_raises_like_cpu(lambda t: t.median(), x)
    assert_raises_like_cpu(lambda t: t.median(0), x)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.int64, torch.int32, torch.bool], ids=dtype_id
)
def test_unique_consecutive(dtype):
    x = make((4, 9), dtype, low=0, high=2, discrete=True)
    fn = torch.unique_consecutive
    assert_close_to_cpu(lambda t: fn(t), x)
    assert_close_to_cpu(lambda t: fn(t.t(), return_inverse=True, return_counts=True), x)
    assert_close_to_cpu(lambda t: fn(t, return_counts=True), make((0,), dtype))
    f = torch.tensor([1.0, 1.0, NAN, NAN, 2.0, 2.0, 1.0])
    assert_close_to_cpu(lambda t: fn(t, return_inverse=True, return_counts=True), f)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=dtype_id)
def test_nanmedian(dtype):
    x = make((6, 7), dtype, discrete=True)
    if dtype.is_floating_point:
        x[0, ::2] = NAN
        x[1] = NAN  # an all-NaN row
        x[2, 3] = NAN
    assert_close_to_cpu(lambda t: t.nanmedian(), x)
    assert_close_to_cpu(lambda t: t[2:].nanmedian(), x)
    for dim in (0, 1):
        for keepdim in (False, True):
            values, indices = x.to(VKML).nanmedian(dim, keepdim)
            assert_same(values, x.nanmedian(dim, keepdim).values)
            v, i = (values, indices) if keepdim else (values.unsqueeze(dim), indices.unsqueeze(dim))
            _check_indices_select_values(x, v, i, dim)
    assert_close_to_cpu(lambda t: t.nanmedian(), make((0,), dtype))


def test_median_of_nothing():
    for dtype in (torch.float32, torch.int64, torch.int32):
        assert_close_to_cpu(lambda t: (t.median(), t.nanmedian()), make((0, 3), dtype))


def _f64_with_specials(shape):
    x = make(shape, torch.float64) * 1e100
    flat = x.view(-1)
    specials = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 5e-324, -5e-324, 1.0]
    for i, v in enumerate(specials):
        flat[i * 7 % flat.numel()] = v
    flat[1] = 1.0 + 2**-52  # next to 1.0: float32 keys would tie them
    return x


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda t: t.sort(stable=True, dim=1), id="sort"),
        pytest.param(lambda t: t.sort(stable=True, dim=0, descending=True), id="sort-desc-dim0"),
        pytest.param(lambda t: t.topk(5, 1), id="topk"),
        pytest.param(lambda t: t.topk(3, 0, largest=False), id="topk-smallest"),
        pytest.param(lambda t: t.kthvalue(4, 1), id="kthvalue"),
        pytest.param(lambda t: t.median(1).values, id="median"),
        pytest.param(lambda t: t.nanmedian(), id="nanmedian"),
        pytest.param(lambda t: torch.unique(t.nan_to_num(0.0)), id="unique"),
        pytest.param(lambda t: t.nan_to_num(0.0).round().unique(return_counts=True), id="counts"),
        pytest.param(lambda t: torch.argsort(t, stable=True, dim=1), id="argsort"),
    ],
)
def test_float64_sorting(fn):
    """float64 sorts by order-preserving int64 keys: every bit of the value counts
    (neighbours of 1.0, subnormals, 1e100), NaNs last, signed zeros tie."""
    x = _f64_with_specials((6, 19))
    got, want = fn(x.to(VKML)), fn(x)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0, equal_nan=True)
