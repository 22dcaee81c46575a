"""Searching and counting ops (ops_search.cpp) against the CPU: searchsorted, bucketize,
histc, bincount, isin, histogram, histogramdd."""

import pytest
import torch
from conftest import FLOAT_DTYPES, assert_close_to_cpu, assert_raises_like_cpu, dtype_id, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

NAN = float("nan")
INF = float("inf")


def _index(shape, high, dtype=torch.int64):
    return make(shape, torch.int64, low=0, high=high).to(dtype)


# ------------------------------------------------- searchsorted, bucketize


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.int64, torch.int32], ids=dtype_id
)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(dtype, right):
    b = make((12,), dtype, low=-5, high=6, discrete=True).sort().values
    v = make((3, 7), dtype, low=-7, high=8, discrete=True)
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t, right=right), b, v)
    assert_close_to_cpu(lambda s, t: torch.bucketize(t, s, right=right, out_int32=True), b, v)
    assert_close_to_cpu(
        lambda s, t: torch.searchsorted(s, t.t(), side="right" if right else "left"), b, v
    )
    bn = make((3, 5), dtype, low=-5, high=6, discrete=True).sort(1).values  # per-row boundaries
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t, right=right), bn, v)
    assert_close_to_cpu(lambda s: torch.searchsorted(s, 2, right=right), b)
    assert_close_to_cpu(lambda s: torch.bucketize(3, s, right=right), b)


def test_searchsorted_sorter_nan_and_errors():
    b = make((10,), discrete=True)
    v = torch.tensor([NAN, -INF, INF, 0.0, 1.5])
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t, sorter=s.argsort()), b, v)
    sb = torch.tensor([-1.0, 0.0, 2.0, NAN])
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t), sb, v)
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t), b, make((0,)))
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t), make((0,)), v)
    mixed = make((4,), torch.int64).sort().values
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t), mixed, v)
    assert_raises_like_cpu(lambda s, t: torch.searchsorted(s, t), make((2, 3)), make((3, 3)))
    assert_raises_like_cpu(lambda s, t: torch.bucketize(t, s), make((2, 3)), v)
    assert_raises_like_cpu(lambda s, t: torch.searchsorted(s, t, side="left", right=True), b, v)


# ------------------------------------------------------ histc, bincount


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_histc(dtype):
    x = make((200,), dtype, low=-4, high=4)
    assert_close_to_cpu(lambda t: torch.histc(t, 10, -2, 2), x)
    assert_close_to_cpu(lambda t: torch.histc(t, 7), x)  # range from the data
    assert_close_to_cpu(lambda t: torch.histc(t.reshape(20, 10).t(), 5, -4, 4), x)
    edges = torch.tensor([0.0, 1.0, 1.0, 2.0, NAN, 3.0, -1.0]).to(dtype)
    assert_close_to_cpu(lambda t: torch.histc(t, 3, 0, 3), edges)
    assert_close_to_cpu(lambda t: torch.histc(t, 4), torch.full((5,), 2.0, dtype=dtype))
    assert_close_to_cpu(lambda t: torch.histc(t, 4), make((0,), dtype))
    assert_raises_like_cpu(lambda t: torch.histc(t, 4, 3, 1), x)
    assert_raises_like_cpu(lambda t: torch.histc(t, 0), x)


def _integer_histc(x, bins, lo, hi):
    """CUDA's histc of integers (the CPU has none): bin (x - lo) * bins // (hi - lo) in
    integer arithmetic for lo <= x <= hi, the top edge in the last bin."""
    counts = [0] * bins
    for v in x.flatten().tolist():
        if lo <= v <= hi:
            counts[min((v - lo) * bins // (hi - lo), bins - 1)] += 1
    return torch.tensor(counts, dtype=x.dtype)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8], ids=dtype_id)
def test_histc_of_integers_counts_as_cuda(dtype):
    """MoE routers count tokens per expert with histc on int32 off the CPU (no host wait,
    unlike bincount): CUDA's integer bins, counts in the input's dtype."""
    x = make((300,), torch.int64, low=0, high=40).to(dtype)
    for bins, lo, hi in ((8, 0, 7), (8, 0, 8), (5, 3, 30), (7, 10, 11), (3, 39, 40)):
        got = torch.histc(x.to("vkml"), bins, lo, hi)
        assert got.dtype == dtype
        assert got.cpu().tolist() == _integer_histc(x, bins, lo, hi).tolist(), (bins, lo, hi)
    data_range = torch.histc(x.to("vkml"), 6)  # min == max: the range from the data
    lo, hi = x.min().item(), x.max().item()
    assert data_range.cpu().tolist() == _integer_histc(x, 6, lo, hi).tolist()
    same = torch.full((4,), 5, dtype=dtype)
    assert torch.histc(same.to("vkml"), 2).cpu().tolist() == _integer_histc(same, 2, 4, 6).tolist()
    out = torch.empty(0, dtype=dtype, device="vkml")
    assert torch.histc(x.to("vkml"), 4, 0, 40, out=out) is out and out.shape == (4,)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x.to("vkml"), 4, 9, 2)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=dtype_id)
def test_bincount(dtype):
    x = make((50,), dtype, low=0, high=12)
    w = make((50,))
    assert_close_to_cpu(lambda t: torch.bincount(t), x)
    assert_close_to_cpu(lambda t: torch.bincount(t, minlength=20), x)
    assert_close_to_cpu(lambda t, u: torch.bincount(t, u), x, w)
    assert_close_to_cpu(lambda t: torch.bincount(t[::3]), x)
    assert_close_to_cpu(lambda t: torch.bincount(t, minlength=3), make((0,), dtype))
    assert_raises_like_cpu(lambda t: torch.bincount(t), torch.tensor([1, -1]))
    assert_raises_like_cpu(lambda t: torch.bincount(t), make((2, 3), torch.int64, low=0))


def test_bincount_with_weights_of_other_dtypes():
    """Weights other than float32 give float64 counts on the CPU: summed in double on
    the device where it has float64 arithmetic (PyG's degree counts in float64 took the
    CPU route)."""
    import torch_vkml

    if not torch_vkml.get_device_properties(0).supports_fp64:
        return
    idx = _index(60, 9)
    for dtype in (torch.float64, torch.float16, torch.int32):
        w = make(60, dtype, low=-3, high=3)
        assert_close_to_cpu(lambda i, w: torch.bincount(i, w), idx, w)
        assert_close_to_cpu(lambda i, w: torch.bincount(i, w, minlength=15), idx, w)


def test_bincount_and_count_nonzero():
    idx = _index(40, 7)
    w = make(40)
    assert_close_to_cpu(torch.bincount, idx)
    assert_close_to_cpu(lambda i: torch.bincount(i.int(), minlength=10), idx)
    assert_close_to_cpu(lambda i, w: torch.bincount(i, w), idx, w)
    assert_close_to_cpu(lambda i: torch.bincount(i[:0], minlength=3), idx)
    assert_raises_like_cpu(lambda i: torch.bincount(i - 1), idx)
    x = make((4, 5), low=-1, high=2, discrete=True)
    assert_close_to_cpu(torch.count_nonzero, x)
    assert_close_to_cpu(lambda t: torch.count_nonzero(t, dim=1), x)
    assert_close_to_cpu(lambda t: torch.count_nonzero(t.t(), dim=(0, 1)), x)


# --------------------------------------------------------------------------
# isin, histogram, histogramdd
# --------------------------------------------------------------------------


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


def test_isin_large_sorted_path():
    e = make((3000,), torch.float32, discrete=True, low=-500, high=500)
    t = make((2000,), torch.float32, discrete=True, low=-500, high=500)
    assert_close_to_cpu(torch.isin, e, t)
    assert_close_to_cpu(torch.isin, e.long(), t.long())


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


@pytest.mark.parametrize("right", [False, True])
def test_float64_searchsorted_bucketize_and_isin(right):
    """float64 searches run on int64 keys of the values' bits (sort_keys.h): exact, values
    one ulp apart told apart, -0.0 equal to 0.0, NaN past everything; mixed with float32."""
    one = torch.tensor(1.0, dtype=torch.float64)
    b = torch.tensor([-1.0, -0.25, 0.0, 0.5, 1.0, 2.0, INF], dtype=torch.float64)
    v = torch.cat(
        [
            make((40,), torch.float64, low=-3, high=3),
            torch.tensor([-0.0, 0.0, NAN, -INF, INF, 0.5]),
            torch.nextafter(one, -one).reshape(1),
            torch.nextafter(one, 2 * one).reshape(1),
        ]
    ).double()
    torch_vkml.reset_fallback_counts()
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t, right=right), b, v)
    assert_close_to_cpu(lambda t, s: torch.bucketize(t, s, right=right, out_int32=True), v, b)
    assert_close_to_cpu(
        lambda s, t: torch.searchsorted(s, t, sorter=s.flip(0).argsort()), b.flip(0), v
    )
    assert_close_to_cpu(lambda s, t: torch.searchsorted(s, t.float(), right=right), b, v)
    rows = make((3, 6), torch.float64).sort(1).values
    assert_close_to_cpu(
        lambda s, t: torch.searchsorted(s, t, right=right), rows, v[:21].reshape(3, 7)
    )
    e = make((3000,), torch.float64, discrete=True, low=-500, high=500) / 7
    assert_close_to_cpu(torch.isin, e, e[::3][:2000])
    assert torch_vkml.fallback_counts() == {}


def test_float64_histc_takes_the_counted_cpu_route():
    """No float64 bins for histc: it runs on the CPU, counted (it raised
    NotImplementedError before). bincount's float64 counts (weights other than float32)
    are native: test_bincount_with_weights_of_other_dtypes."""
    values = make((40,), torch.float64, low=-3, high=3)
    assert_close_to_cpu(lambda v: torch.histc(v, 9, -2, 2), values)
    counts = torch_vkml.fallback_counts()
    assert set(counts) == {"aten::histc.out"}, counts
    torch_vkml.reset_fallback_counts()


def test_bincount_of_floats_is_not_implemented_as_on_the_cpu():
    for device in ("cpu", "vkml"):
        with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
            torch.bincount(torch.ones(3, device=device))
        with pytest.raises(RuntimeError, match="1-d non-negative integral"):
            torch.bincount(torch.ones(1, 2, dtype=torch.long, device=device))
