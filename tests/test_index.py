"""Indexing ops against the CPU: index_select, gather, scatter*, index_add/copy/fill,
masked_fill, advanced indexing (index / index_put_), take, embedding; gradients and
out-of-range errors."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    ALL_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

REDUCE_DTYPES = [torch.float32, torch.float16, torch.int32, torch.int64]


def _index(shape, high, dtype=torch.int64):
    return make(shape, torch.int64, low=0, high=high).to(dtype)


def _perm_index(shape, dim, size):
    """Indices along dim that are distinct within each line (no write races)."""
    full = list(shape)
    full[dim] = size
    perm = torch.rand(full).argsort(dim=dim)
    return perm.narrow(dim, 0, shape[dim])


# ------------------------------------------------------------ index_select


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.uint8], ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dtype, dim):
    x = make((4, 5, 6), dtype)
    idx = _index(7, x.shape[dim])
    assert_close_to_cpu(lambda t, i: torch.index_select(t, dim, i), x, idx)


def test_index_select_layouts():
    x = make((6, 5, 4))
    idx = _index(10, 6)
    # transposed source, strided index, int32 index, empty index, 0-dim source
    assert_close_to_cpu(lambda t, i: t.transpose(0, 2).index_select(2, i[::2]), x, idx)
    assert_close_to_cpu(lambda t, i: t.index_select(0, i.int()), x, idx)
    assert_close_to_cpu(lambda t, i: t.index_select(1, i[:0]), x, idx)
    assert_close_to_cpu(lambda t, i: t.index_select(0, i[2]), x, idx)
    assert_close_to_cpu(
        lambda i: torch.tensor(2.5, device=i.device).index_select(0, i[:1] * 0), idx
    )
    assert_close_to_cpu(
        lambda t, i: torch.index_select(t, 1, i.clamp(max=4), out=t.new_empty(0)), x, idx
    )
    # more than four non-mergeable dims: the host walks the outer ones
    y = make((2, 3, 2, 3, 2, 3))
    assert_close_to_cpu(
        lambda t, i: t.permute(5, 3, 1, 0, 2, 4).index_select(2, i), y, _index(4, 3)
    )


def test_index_select_backward():
    x = leaf((5, 4))
    idx = torch.tensor([0, 2, 2, 4, 0, 0])
    assert_grads_close_to_cpu(lambda t, i: t.index_select(0, i) * 3, x, idx)
    assert_grads_close_to_cpu(lambda t, i: t.index_select(1, i % 4), x, idx)


# ------------------------------------------------------------------ gather


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dtype, dim):
    x = make((4, 5, 6), dtype)
    shape = [3, 4, 5]
    shape[dim] = 7
    idx = _index(shape, x.shape[dim])
    assert_close_to_cpu(lambda t, i: torch.gather(t, dim, i), x, idx)


def test_gather_layouts():
    x = make((5, 6))
    idx = _index((5, 6), 5)
    assert_close_to_cpu(lambda t, i: torch.gather(t.t(), 1, i.t()), x, idx)
    assert_close_to_cpu(lambda t, i: torch.gather(t, 1, i[:, ::2].int()), x, idx)
    assert_close_to_cpu(lambda t, i: torch.gather(t, 0, i[:, :0]), x, idx)
    assert_close_to_cpu(lambda t, i: torch.gather(t, 0, i, out=torch.empty_like(t)), x, idx)
    z = torch.tensor(1.5)
    assert_close_to_cpu(lambda t, i: torch.gather(t, 0, i), z, torch.tensor(0))
    assert_close_to_cpu(lambda t, i: torch.take_along_dim(t, i, dim=1), x, _index((5, 3), 6))
    assert_close_to_cpu(lambda t, i: torch.take_along_dim(t, i), x, _index(7, 30))


def test_gather_backward():
    x = leaf((4, 6))
    idx = _index((4, 9), 6)  # duplicates: the backward scatter_add accumulates
    assert_grads_close_to_cpu(lambda t, i: torch.gather(t, 1, i), x, idx)
    assert_grads_close_to_cpu(lambda t, i: torch.gather(t.t(), 0, i.t()), x, idx)


# ----------------------------------------------------------------- scatter


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src_and_value(dtype, dim):
    x = make((5, 6, 7), dtype)
    src = make((5, 6, 7), dtype)
    shape = [4, 5, 6]
    shape[dim] = 3
    idx = _perm_index(shape, dim % 3, x.shape[dim])
    value = True if dtype == torch.bool else 4
    assert_close_to_cpu(lambda t, i, s: t.scatter(dim, i, s), x, idx, src)
    assert_close_to_cpu(lambda t, i: t.scatter(dim, i, value), x, idx)
    assert_close_to_cpu(lambda t, i, s: t.scatter_(dim, i, s[:4, :5, :6]), x, idx, src)


@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
def test_scatter_add_duplicates(dtype):
    x = make((4, 6), dtype, low=-3, high=4)
    src = make((4, 20), dtype, low=-3, high=4)
    idx = _index((4, 20), 6)
    assert_close_to_cpu(lambda t, i, s: t.scatter_add(1, i, s), x, idx, src)
    assert_close_to_cpu(lambda t, i, s: t.scatter_add_(0, i[:, :6] % 4, s[:, :6]), x, idx, src)
    assert_close_to_cpu(
        lambda t, i, s: torch.scatter_add(t, 1, i, s, out=torch.empty_like(t)), x, idx, src
    )


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.int64], ids=dtype_id)
def test_scatter_legacy_reduce(dtype, reduce):
    x = make((3, 5), dtype, low=1, high=3)
    src = make((3, 8), dtype, low=1, high=3)
    idx = _index((3, 8), 5)
    assert_close_to_cpu(lambda t, i, s: t.scatter(1, i, s, reduce=reduce), x, idx, src)
    assert_close_to_cpu(lambda t, i: t.scatter(1, i, 2, reduce=reduce), x, idx)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
def test_scatter_reduce(dtype, reduce, include_self):
    x = make((4, 5), dtype, low=-2, high=3, nonzero=True)
    src = make((4, 9), dtype, low=-2, high=3, nonzero=True)
    idx = _index((4, 9), 4)  # some destinations get nothing, others several
    kw = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else {}
    assert_close_to_cpu(
        lambda t, i, s: t.scatter_reduce(1, i, s, reduce, include_self=include_self),
        x,
        idx,
        src,
        **kw,
    )


def test_scatter_reduce_nan_and_empty():
    x = torch.zeros(3)
    src = torch.tensor([1.0, float("nan"), 2.0, -1.0])
    idx = torch.tensor([0, 0, 1, 2])
    for r in ("amax", "amin", "sum"):
        assert_close_to_cpu(lambda t, i, s, r=r: t.scatter_reduce(0, i, s, r), x, idx, src)
    assert_close_to_cpu(lambda t, i, s: t.scatter_reduce(0, i[:0], s[:0], "sum"), x, idx, src)


def test_scatter_backward():
    x = leaf((4, 6))
    src = leaf((4, 3))
    idx = _perm_index((4, 3), 1, 6)
    assert_grads_close_to_cpu(lambda t, i, s: t.scatter(1, i, s), x, idx, src)
    assert_grads_close_to_cpu(lambda t, i, s: t.scatter_add(1, i, s), x, idx, src)


# --------------------------------------------------- index_add / copy / fill


@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, -1])
def test_index_add(dtype, dim):
    x = make((5, 6), dtype)
    idx = torch.tensor([0, 4, 4, 1, 0, 0, 3])
    shape = [5, 6]
    shape[dim] = len(idx)
    src = make(shape, dtype)
    kw = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else {}
    assert_close_to_cpu(lambda t, i, s: t.index_add(dim, i, s), x, idx, src, **kw)
    alpha = 2.5 if dtype.is_floating_point else 3
    assert_close_to_cpu(lambda t, i, s: t.index_add_(dim, i, s, alpha=alpha), x, idx, src, **kw)


def test_index_add_layouts_and_backward():
    x = make((6, 5))
    src = make((4, 5))
    idx = torch.tensor([1, 1, 3, 0])
    assert_close_to_cpu(lambda t, i, s: t.t().index_add(1, i, s.t()), x, idx, src)
    assert_close_to_cpu(lambda t, i, s: t.index_add(0, i[:0], s[:0]), x, idx, src)
    assert_close_to_cpu(
        lambda t, i, s: torch.index_add(t, 0, i, s, out=torch.empty_like(t)), x, idx, src
    )
    a, b = leaf((6, 5)), leaf((4, 5))
    assert_grads_close_to_cpu(lambda t, s, i: t.index_add(0, i, s), a, b, idx)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_index_copy_and_fill(dtype):
    x = make((5, 6), dtype)
    src = make((5, 3), dtype)
    idx = torch.tensor([4, 0, 2])
    assert_close_to_cpu(lambda t, i, s: t.index_copy(1, i, s), x, idx, src)
    assert_close_to_cpu(lambda t, i, s: t.index_copy_(0, i, s.t()[:3]), x, idx, make((6, 5), dtype))
    value = False if dtype == torch.bool else 7
    assert_close_to_cpu(lambda t, i: t.index_fill(1, i, value), x, torch.tensor([1, -1, 1]))
    assert_close_to_cpu(lambda t, i: t.index_fill_(0, i, torch.tensor(value, dtype=dtype)), x, idx)
    assert_close_to_cpu(
        lambda t, i: t.index_fill(0, i, torch.tensor(value, dtype=dtype, device=t.device)), x, idx
    )


# ------------------------------------------------------------- masked_fill


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_masked_fill(dtype):
    x = make((4, 5), dtype)
    mask = make((4, 5), torch.bool)
    value = True if dtype == torch.bool else 3
    assert_close_to_cpu(lambda t, m: t.masked_fill(m, value), x, mask)
    assert_close_to_cpu(lambda t, m: t.masked_fill(m[0], value), x, mask)  # broadcast mask
    assert_close_to_cpu(lambda t, m: t.t().masked_fill_(m.t(), value), x, mask)
    assert_close_to_cpu(lambda t, m: t.masked_fill(m, torch.tensor(value)), x, mask)
    assert_close_to_cpu(
        lambda t, m: t.masked_fill(m, torch.tensor(value, dtype=dtype, device=t.device)), x, mask
    )
    assert_close_to_cpu(lambda t, m: t[:0].masked_fill(m[:0], value), x, mask)


def test_masked_fill_backward():
    x = leaf((4, 5))
    mask = make((4, 5), torch.bool)
    assert_grads_close_to_cpu(lambda t, m: t.masked_fill(m, -1.0) * 2, x, mask)
    assert_grads_close_to_cpu(lambda t, m: t.masked_fill(m, float("-inf")).softmax(1), x, mask)


# ------------------------------------------------------- advanced indexing

INDEXERS = {
    "long": lambda t, i, m: t[i],
    "negative": lambda t, i, m: t[i - 5],
    "int32": lambda t, i, m: t[i.int()],
    "second_dim": lambda t, i, m: t[:, i % 4],
    "two_broadcast": lambda t, i, m: t[i[:3, None], i[None, :2] % 4],
    "non_adjacent": lambda t, i, m: t[i[:3], :, i[:3] % 3],
    "ellipsis_last": lambda t, i, m: t[..., i % 3],
    "none_and_slice": lambda t, i, m: t[None, 1:, i % 4],
    "bool_mask": lambda t, i, m: t[m],
    "bool_mask_rows": lambda t, i, m: t[m[:, 0, 0]],
    "mask_and_index": lambda t, i, m: t[m[:, :, 0], i[0, :1] % 3],
    "scalar_index": lambda t, i, m: t[i[0], 2],
    "empty": lambda t, i, m: t[i[:0]],
    "transposed": lambda t, i, m: t.transpose(0, 2)[i % 3],
}


@pytest.mark.parametrize("case", list(INDEXERS))
def test_index(case):
    x = make((5, 4, 3))
    idx = _index((4, 4), 5)
    mask = make((5, 4, 3), torch.bool)
    assert_close_to_cpu(INDEXERS[case], x, idx, mask)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_index_dtypes(dtype):
    x = make((6, 3), dtype)
    assert_close_to_cpu(lambda t, i: t[i, 1:], x, _index(5, 6))
    assert_close_to_cpu(lambda t, i: t[i, i % 3], x, _index(5, 6))


@pytest.mark.parametrize("case", ["long", "two_broadcast", "bool_mask", "non_adjacent"])
def test_index_backward(case):
    x = leaf((5, 4, 3))
    idx = _index((4, 4), 5)  # duplicates: the backward index_put_ accumulates
    mask = make((5, 4, 3), torch.bool)
    assert_grads_close_to_cpu(INDEXERS[case], x, idx, mask)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_index_put(dtype):
    x = make((5, 4), dtype)
    v = make((3, 4), dtype)

    def put(t, values, i, m):
        t[i] = values
        t[m, 1] = values[0, 0]
        t[:, i[1:2]] = values[:, :1].sum(0).to(t.dtype) if dtype != torch.bool else values[0, 0]
        return t

    def put_mask(t, m):
        u = t.masked_fill(m, 1)
        u[m] = 0  # a python scalar through a boolean mask
        u[~m] = t[m].sum().to(t.dtype) if t.numel() else 0
        return u

    assert_close_to_cpu(put, x, v, torch.tensor([4, 0, -3]), make(5, torch.bool))
    assert_close_to_cpu(put_mask, x, make((5, 4), torch.bool))


@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
def test_index_put_accumulate(dtype):
    x = make((5, 4), dtype)
    v = make((7, 4), dtype)
    idx = torch.tensor([0, 3, 3, 1, 0, 3, 4])
    kw = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else {}
    assert_close_to_cpu(lambda t, i, s: t.index_put_((i,), s, accumulate=True), x, idx, v, **kw)
    assert_close_to_cpu(
        lambda t, i, s: t.index_put((i, i % 4), s[:, 0], accumulate=True), x, idx, v, **kw
    )
    assert_close_to_cpu(lambda t, i, s: t.index_put((i[:0],), s[:0], accumulate=True), x, idx, v)


# -------------------------------------------------------------- take, put


def test_take():
    x = make((4, 5))
    idx = make((3, 4), torch.int64, low=-20, high=20)
    assert_close_to_cpu(lambda t, i: torch.take(t, i), x, idx)
    assert_close_to_cpu(lambda t, i: torch.take(t.t(), i), x, idx)
    assert_close_to_cpu(lambda t, i: torch.take(t, i[:0]), x, idx)
    assert_grads_close_to_cpu(lambda t, i: torch.take(t, i), leaf((4, 5)), idx)
    src = make(12)
    # Distinct positions: with repeats, which write lands is unspecified (as on CUDA).
    positions = torch.randperm(20)[:12].view(3, 4)
    assert_close_to_cpu(lambda t, i, s: t.put_(i, s.view(3, 4)), x, positions, src)
    assert_close_to_cpu(lambda t, i, s: t.t().put(i, s, accumulate=True), x, idx, src)


# -------------------------------------------------------- embedding, one_hot


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding(dtype, padding_idx, scale):
    w = leaf((10, 6), dtype)
    idx = _index((4, 7), 10)
    idx[0, :3] = 2

    def fn(weight, i):
        return F.embedding(i, weight, padding_idx=padding_idx, scale_grad_by_freq=scale)

    kw = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else {}
    assert_grads_close_to_cpu(fn, w, idx, **kw)


def test_embedding_module_and_one_hot():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(8, 4, padding_idx=0)
    idx = _index((3, 5), 8)
    emb_v = torch.nn.Embedding(8, 4, padding_idx=0).to(VKML)
    emb_v.load_state_dict(emb.state_dict())
    out, out_v = emb(idx), emb_v(idx.to(VKML))
    out.sum().backward()
    out_v.sum().backward()
    torch.testing.assert_close(out_v.cpu(), out)
    torch.testing.assert_close(emb_v.weight.grad.cpu(), emb.weight.grad)
    assert_close_to_cpu(lambda i: F.one_hot(i, 9), idx)
    assert_close_to_cpu(lambda i: F.one_hot(i), idx)


# ------------------------------------------------------------------ errors

ERRORS = {
    "index_select": lambda t, i: t.index_select(0, i),
    "index_select_negative": lambda t, i: t.index_select(0, i - 20),
    "gather": lambda t, i: t.gather(0, i.view(1, -1)),
    "scatter": lambda t, i: t.scatter(0, i.view(1, -1), 1.0),
    "scatter_add": lambda t, i: t.scatter_add(0, i.view(1, -1), t[:1, :3] * 0 + 1),
    "index_add": lambda t, i: t.index_add(0, i, t[:3] * 0),
    "index_copy": lambda t, i: t.index_copy(0, i, t[:3]),
    "index_fill": lambda t, i: t.index_fill(0, i, 1.0),
    "index": lambda t, i: t[i],
    "index_negative": lambda t, i: t[i - 20],
    "index_cpu_index": lambda t, i: t[:, i.cpu() - 4],
    "index_put": lambda t, i: t.index_put_((i,), torch.tensor(1.0, device=t.device)),
    "put": lambda t, i: t.put_(i * 3, t[0, :3] * 1),
    "take": lambda t, i: torch.take(t, i * 3),
    "embedding": lambda t, i: F.embedding(i, t),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_out_of_range_index_raises_like_cpu(case):
    x = make((4, 5))
    idx = torch.tensor([0, 9, 1])
    assert_raises_like_cpu(ERRORS[case], x, idx)


def test_bad_arguments_raise_like_cpu():
    x = make((4, 5))
    idx = torch.tensor([0, 1])
    assert_raises_like_cpu(lambda t, i: t.index_select(0, i.float()), x, idx)
    assert_raises_like_cpu(lambda t, i: t.scatter(0, i.view(1, -1), t.int()), x, idx)
    assert_raises_like_cpu(lambda t, i: t.masked_fill(i.view(1, -1) > 0, 1.0), x, idx)
    assert_raises_like_cpu(lambda t, i: t[i, i, i], x, idx)
    assert_raises_like_cpu(lambda t, i: t[t > 0, i[:1] * 0, i], x, idx)
    assert_raises_like_cpu(lambda t, i: t.masked_scatter(t > -9, t[:1]), x, idx)


# ------------------------------------------- serial reductions, bit moves


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool], ids=dtype_id)
def test_serial_reductions(dtype):
    """uint8 / bool have no atomics here: their reductions run in one invocation."""
    x = make((4, 5), dtype)
    src = make((4, 9), dtype)
    idx = _index((4, 9), 5)
    assert_close_to_cpu(lambda t, i, s: t.scatter_add(1, i, s), x, idx, src)
    assert_close_to_cpu(lambda t, i, s: t.index_add(1, i[0], s), x, idx, src)
    assert_close_to_cpu(
        lambda t, i, s: t.index_put((i[0, :5] % 4,), s[0, :5], accumulate=True), x, idx, src
    )
    for r in ("amax", "amin", "prod"):
        assert_close_to_cpu(lambda t, i, s, r=r: t.scatter_reduce(1, i, s, r), x, idx, src)


def test_int8_and_float64_move_as_bits():
    idx = torch.tensor([2, 0, 2, 1])
    x8 = make((3, 4), torch.int8, low=-100, high=100)
    assert_close_to_cpu(lambda t, i: t.index_select(0, i), x8, idx)
    assert_close_to_cpu(lambda t, i: t[i, 1:], x8, idx)
    try:
        torch.zeros(1, dtype=torch.float64, device=VKML)
    except Exception:  # noqa: BLE001  (no shaderFloat64 on this device)
        return
    x64 = make((3, 4), torch.float64)
    assert_close_to_cpu(lambda t, i: t.index_select(1, i), x64, idx)
    assert_close_to_cpu(lambda t, i: t.gather(0, i.view(1, 4)), x64, idx)
    # A fill value is written as its bits too (it was written as the integer it rounds
    # to, read back as a denormal).
    for x in (x64, x64.to(torch.complex128) * (1 - 2j)):
        value = -3.25 if x.dtype == torch.float64 else -3.25 + 0.5j
        assert_close_to_cpu(lambda t, i, v=value: t.scatter(0, i.view(1, 4), v), x, idx)
        assert_close_to_cpu(lambda t, i, v=value: t.index_fill(1, i, v), x, idx)


# ---------------------------------------------- index checks, index operands


def test_index_check_can_be_disabled(monkeypatch):
    monkeypatch.setenv("TORCH_VKML_INDEX_CHECK", "0")
    x = torch.arange(4.0, device=VKML)
    idx = torch.tensor([1, 7, 3], device=VKML)
    # no error and no host sync: out-of-range reads give 0, writes are dropped
    assert x.index_select(0, idx).cpu().tolist() == [1.0, 0.0, 3.0]
    assert x.index_add(0, idx, torch.ones(3, device=VKML)).cpu().tolist() == [0.0, 2.0, 2.0, 4.0]


def test_cpu_indices_on_device_tensors():
    x = make((5, 4))
    i = torch.tensor([0, 2, -1])  # stays on the CPU inside the compared functions
    m = make((5, 4), torch.bool)

    def fn(t):
        u = t.clone()
        u[i] = 7.0
        u[[1, 3], [0, 2]] = torch.tensor([9.0, 8.0], device=t.device)
        return t[i], t[[0, 2]], t[m], u

    assert_close_to_cpu(fn, x)


def test_deterministic_mode_sums_in_cpu_order():
    x = torch.zeros(3)
    src = make(500, low=-1000, high=1000)
    idx = _index(500, 3)
    torch.use_deterministic_algorithms(True)
    try:
        assert_close_to_cpu(lambda t, i, s: t.scatter_add(0, i, s), x, idx, src, atol=0, rtol=0)
        assert_close_to_cpu(lambda t, i, s: t.index_add(0, i, s), x, idx, src, atol=0, rtol=0)
    finally:
        torch.use_deterministic_algorithms(False)


def test_zero_dim_operands():
    s = torch.tensor(1.5)
    i = torch.tensor(0)
    v = torch.tensor(4.0)
    assert_close_to_cpu(lambda t, i, v: t.scatter(0, i, v), s, i, v)
    assert_close_to_cpu(lambda t, i, v: t.scatter_add(0, i, v), s, i, v)
    assert_close_to_cpu(lambda t, i, v: t.scatter_reduce(0, i, v, "amax"), s, i, v)
    assert_close_to_cpu(lambda t, i, v: t.index_add(0, i, v), s, i, v)
    assert_close_to_cpu(lambda t, i, v: t.index_copy(0, i.view(1), v.view(1)), s, i, v)
    assert_close_to_cpu(lambda t, i: t.index_fill(0, i, -1.0), s, i)
    assert_close_to_cpu(lambda t: t.masked_fill(torch.tensor(True, device=t.device), 2.0), s)
    assert_close_to_cpu(lambda t, i: torch.take(t, i), s, i)
    assert_close_to_cpu(lambda t: t.masked_select(torch.tensor(True, device=t.device)), s)


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
def test_index_reduce(dtype, reduce, include_self):
    x = make((5, 4), dtype, low=-2, high=3, nonzero=True)
    src = make((7, 4), dtype, low=-2, high=3, nonzero=True)
    idx = torch.tensor([0, 3, 3, 1, 0, 3, 0]).int()  # row 2 and 4 get nothing
    kw = dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else {}
    assert_close_to_cpu(
        lambda t, i, s: t.index_reduce(0, i, s, reduce, include_self=include_self),
        x,
        idx,
        src,
        **kw,
    )
    assert_close_to_cpu(
        lambda t, i, s: t.t().index_reduce_(1, i.long(), s.t(), reduce, include_self=include_self),
        x,
        idx,
        src,
        **kw,
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=dtype_id)
def test_float64_reductions_run_in_order(dtype):
    """float64 accumulations (and complex128's, as two float64 lanes) run serially on a
    float64 variant: there is no float64 atomic here. They raised before."""
    if not torch_vkml.get_device_properties().supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    x, src = make((4, 5), torch.float64), make((4, 5), torch.float64)
    if dtype == torch.complex128:
        x, src = x * (1 - 0.5j), src * (0.25 + 1j)
    i = torch.tensor([3, 0, 2, 2])
    idx = torch.tensor([[1, 0, 2, 3, 0], [1, 1, 2, 3, 3]])
    cases = [
        lambda t, s: t.index_add(0, i.to(t.device), s, alpha=2),
        lambda t, s: t.scatter_add(0, idx.to(t.device), s[:2]),
        lambda t, s: t.index_put((i.to(t.device),), s, accumulate=True),
        lambda t, s: t.put(torch.tensor([1, 1, 7]).to(t.device), s.flatten()[:3], accumulate=True),
        lambda t, s: t.scatter(0, idx.to(t.device), 1.25, reduce="add"),
    ]
    if dtype == torch.float64:
        cases += [
            lambda t, s, r=r, inc=inc: t.scatter_reduce(
                0, idx.to(t.device), s[:2], r, include_self=inc
            )
            for r in ("sum", "prod", "mean", "amax", "amin")
            for inc in (True, False)
        ]
        cases.append(lambda t, s: t.index_reduce(0, i.to(t.device), s, "amin"))
        cases.append(
            lambda t, s: F.embedding_bag(torch.tensor([[0, 2], [1, 3]]).to(t.device), t, mode="sum")
        )
    for fn in cases:
        assert_close_to_cpu(fn, x, src, atol=1e-12, rtol=1e-12)


# An op that reads where it writes races in a kernel: the CPU refuses it (MemoryOverlap),
# and so must vkml, with the CPU's message. A tensor x of 10 elements; the source is a
# view of x itself.
OVERLAPPING_WRITES = {
    "index_put_": lambda x, i: x.index_put_((i,), x[3:5]),
    "index_put_accumulate": lambda x, i: x.index_put_((i,), x[3:5], accumulate=True),
    "setitem": lambda x, i: x.__setitem__(i, x[3:5]),
    "index_copy_": lambda x, i: x.index_copy_(0, i, x[3:5]),
    "index_add_": lambda x, i: x.index_add_(0, i, x[3:5]),
    "index_reduce_": lambda x, i: x.index_reduce_(0, i, x[3:5], "amax"),
    "scatter_": lambda x, i: x.scatter_(0, i, x[3:5]),
    "scatter_add_": lambda x, i: x.scatter_add_(0, i, x[3:5]),
    "scatter_reduce_": lambda x, i: x.scatter_reduce_(0, i, x[3:5], "sum"),
    "put_": lambda x, i: x.put_(i, x[3:5]),
    "gather_out": lambda x, i: torch.gather(x, 0, i, out=x[3:5]),
    "index_select_out": lambda x, i: torch.index_select(x, 0, i, out=x[3:5]),
    "take_out": lambda x, i: torch.take(x, i, out=x[3:5]),
    "expanded_self": lambda x, i: x[:1].expand(4).index_copy_(0, i, torch.ones_like(x[:2])),
}


@pytest.mark.filterwarnings("ignore:Use of index_put_ on expanded tensors")
@pytest.mark.filterwarnings("ignore:Use of index_fill_ on expanded tensors")
@pytest.mark.parametrize("name", list(OVERLAPPING_WRITES))
def test_writes_over_their_own_input_raise_like_cpu(name):
    fn = OVERLAPPING_WRITES[name]
    for device in ("cpu", VKML):
        x = torch.arange(10.0, device=device)
        with pytest.raises(RuntimeError, match="unsupported operation"):
            fn(x, torch.tensor([1, 2], device=device))
        assert torch.equal(x.cpu(), torch.arange(10.0))  # nothing was written
    # index_put_ and index_fill_ write through an expanded self on the CPU, as here
    for device in ("cpu", VKML):
        e = torch.zeros(1, device=device).expand(4)
        e.index_put_((torch.tensor([1], device=device),), torch.ones(1, device=device))
        e.index_fill_(0, torch.tensor([2], device=device), 2.0)
        assert e.cpu().tolist() == [2.0] * 4


def test_checks_in_the_cpus_order_and_words():
    """Found by PyTorch's own test_indexing.py run on vkml."""
    for device in ("cpu", VKML):
        # any index into an empty dimension is out of bounds, whatever its value
        x = torch.empty(10, 0, device=device)
        with pytest.raises(IndexError, match="for dimension with size 0"):
            x[:, [0, 1]]
        with pytest.raises(IndexError, match="for dimension with size 0"):
            x[:, torch.tensor([0, 1], device=device)] = 1.0
        assert x[:, torch.tensor([], dtype=torch.long, device=device)].shape == (10, 0)
        # index_put_ checks the value's shape before its dtype
        a = torch.arange(4, device=device)
        with pytest.raises(RuntimeError, match="shape mismatch"):
            a[a > -1] = torch.tensor([], device=device)
        with pytest.raises(RuntimeError, match="dtypes match"):
            a[a > -1] = torch.ones(4, device=device)
