"""Data movement ops (cat, tril/triu, eye, repeat_interleave, ...) against the CPU (flip,
roll, padding, nearest upsampling: test_remap.py)."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    ALL_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_factory_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


# ------------------------------------------------------------------ cat


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.uint8, torch.int16], ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dtype, dim):
    a, b, c = make((2, 3, 4), dtype), make((2, 3, 4), dtype), make((2, 3, 4), dtype)
    assert_close_to_cpu(lambda x, y, z: torch.cat([x, y, z], dim), a, b, c)


def test_cat_noncontiguous_mixed_sizes_and_many_inputs():
    a = make((5, 3))  # transposed: (3, 5)
    b = make((3, 10))  # step slice: (3, 5)
    c = make((3, 2))
    assert_close_to_cpu(lambda x, y, z: torch.cat([x.t(), y[:, ::2], z], 1), a, b, c)
    assert_close_to_cpu(lambda x, y: torch.cat([x.t(), y[:, ::2]], 0), a, b)
    many = [make((1, 3), low=i, high=i + 1) for i in range(40)]
    assert_close_to_cpu(lambda *ts: torch.cat(ts, 0), *many)
    # a permuted 3-D input whose outer dims do not collapse into one stride
    p = make((4, 2, 3))
    assert_close_to_cpu(lambda x, y: torch.cat([x.permute(1, 0, 2), y], 1), p, make((2, 1, 3)))


def test_cat_empty_and_promotion():
    a, e = make((2, 3)), torch.empty(0)
    assert_close_to_cpu(lambda x, y: torch.cat([x, y, x], 0), a, e)  # legacy 1-D empty skipped
    assert_close_to_cpu(lambda x, y: torch.cat([x, y]), make((0, 3)), make((0, 3)))
    assert_close_to_cpu(lambda x, y: torch.cat([x, y], 1), make((2, 0)), a)
    i = make((2, 3), torch.int64)
    assert_close_to_cpu(lambda x, y: torch.cat([x, y]), a, i)  # int64 + float32 -> float32
    h = make((2, 3), torch.float16)
    assert_close_to_cpu(lambda x, y: torch.cat([y, x], 1), a, h)


def test_cat_out_noncontiguous():
    def fn(x, y):
        out = torch.zeros(6, 4, device=x.device).t()  # (4, 6) transposed
        torch.cat([x, y], 1, out=out)
        return out

    assert_close_to_cpu(fn, make((4, 2)), make((4, 4)))


def test_cat_errors():
    assert_raises_like_cpu(lambda x, y: torch.cat([x, y]), make((2, 3)), make((2, 4)))
    assert_raises_like_cpu(lambda x, y: torch.cat([x, y]), make((2, 3)), make((3,)))
    assert_raises_like_cpu(lambda: torch.cat([]))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_stack(dtype):
    a, b = make((3, 4), dtype), make((3, 4), dtype)
    assert_close_to_cpu(lambda x, y: torch.stack([x, y]), a, b)
    assert_close_to_cpu(lambda x, y: torch.stack([x.t(), y.t()], -1), a, b)
    assert_close_to_cpu(lambda x, y: torch.stack([x[0, 0], y[1, 1]]), a, b)  # 0-dim


def test_cat_grad():
    a, b = leaf((2, 3)), leaf((4, 3))
    assert_grads_close_to_cpu(lambda x, y: torch.cat([x * 2, y], 0), a, b)


# ---------------------------------------------------------- tril, triu


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("k", [-2, 0, 1, 7, -9])
def test_tril_triu(dtype, k):
    x = make((2, 4, 5), dtype)
    assert_close_to_cpu(lambda t: (t.tril(k), t.triu(k)), x)
    assert_close_to_cpu(lambda t: (t.mT.tril(k), t.mT.triu(k)), x)
    assert_close_to_cpu(lambda t: (t.clone().tril_(k), t.clone().triu_(k)), x)
    assert_close_to_cpu(lambda t: (t.mT.tril_(k), t.mT.triu_(k)), x)  # in place on a view


def test_tril_triu_layouts_and_out():
    x = make((3, 2, 4, 5))
    assert_close_to_cpu(lambda t: t.permute(1, 0, 3, 2).triu(1), x)  # uncollapsible batch
    assert_close_to_cpu(lambda t: t.tril(), make((0, 3)))
    assert_close_to_cpu(lambda t: torch.tril(t, out=torch.empty_like(t).mT), make((4, 4)))
    assert_raises_like_cpu(lambda t: t.tril(), make((3,)))
    assert_grads_close_to_cpu(lambda t: t.tril(-1) + t.triu(2), leaf((4, 4)))


# -------------------------------------------------------- creation-like


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_eye(dtype):
    assert_factory_close_to_cpu(lambda d: torch.eye(4, device=d, dtype=dtype))
    assert_factory_close_to_cpu(lambda d: torch.eye(3, 5, device=d, dtype=dtype))
    assert_factory_close_to_cpu(lambda d: torch.eye(0, 2, device=d, dtype=dtype))


def test_composites_run_natively():
    x = make((2, 3, 4))
    assert_close_to_cpu(lambda t: t.repeat(2, 1, 3), x)
    assert_close_to_cpu(lambda t: t.repeat_interleave(3, dim=1), x)
    assert_close_to_cpu(lambda t: torch.diag(t[0]), x)
    assert_close_to_cpu(lambda t: torch.diag(t[0, 0], 1), x)
    assert_close_to_cpu(lambda t: torch.diag_embed(t, -1), x)
    assert_close_to_cpu(lambda t: t.diagonal(0, 1, 2), x)
    assert_close_to_cpu(lambda t: t.narrow(-1, 1, 2), x)
    assert_close_to_cpu(lambda t: t.unfold(2, 2, 1), x)
    y = make((2, 8, 3, 4))
    assert_close_to_cpu(lambda t: F.pixel_shuffle(t, 2), y)
    assert_close_to_cpu(lambda t: F.pixel_unshuffle(t, 2), make((2, 2, 4, 6)))
    assert_close_to_cpu(lambda t: F.pad(t, (1, 2, 0, 1), value=2.5), x)
    assert_grads_close_to_cpu(lambda t: t.repeat(2, 2), leaf((2, 3)))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=dtype_id)
def test_repeat_interleave_index(dtype):
    # The index tensor itself (the tensor-repeats form then gathers with index_select).
    r = torch.tensor([2, 0, 3, 1, 0, 4], dtype=dtype)
    assert_close_to_cpu(lambda t: torch.repeat_interleave(t), r)
    assert_close_to_cpu(lambda t: torch.repeat_interleave(t, output_size=10), r)
    big = make((700,), dtype, low=0, high=5)  # scan over several chunks
    assert_close_to_cpu(lambda t: torch.repeat_interleave(t), big)
    assert_close_to_cpu(lambda t: torch.repeat_interleave(t), torch.empty(0, dtype=dtype))
    assert_raises_like_cpu(lambda t: torch.repeat_interleave(t), torch.tensor([1, -1]))
    assert_raises_like_cpu(lambda t: torch.repeat_interleave(t), torch.tensor([[1]]))


def test_cat_is_one_dispatch():
    inputs = [make((2, i + 1, 3)).to("vkml") for i in range(12)]
    out = torch.empty(2, 78, 3, device="vkml")
    before = torch_vkml.memory_stats()["num_dispatches"]
    torch.cat(inputs, 1, out=out)
    assert torch_vkml.memory_stats()["num_dispatches"] - before == 1
    assert torch.equal(out.cpu(), torch.cat([t.cpu() for t in inputs], 1))


def test_tensors_of_more_than_twelve_dims(no_fallback):
    """The kernels' layouts hold 12 dims; PyTorch allows 64. Copies, fills and
    elementwise ops on more split into views of at most 12 (size-1 dims dropped, then
    slices): an einsum whose left-to-right contraction builds a 13-dim intermediate
    (heavyball's PSGDKron on a conv weight) raised "vkml supports tensors of up to 12
    dims"."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn([2] * 13, generator=gen)
    order = list(range(12, -1, -1))
    v = x.to(VKML)
    assert torch.equal(v.permute(order).contiguous().cpu(), x.permute(order).contiguous())
    assert torch.equal((v.permute(order) + v).cpu(), x.permute(order) + x)
    assert torch.equal(v.permute(order).clone().cpu(), x.permute(order))
    assert torch.equal(torch.zeros([1] * 13, device=VKML).cpu(), torch.zeros([1] * 13))
    assert torch.equal(torch.full([2] * 14, 3.0, device=VKML).cpu(), torch.full([2] * 14, 3.0))
    expr = "...nA,...na,...oB,...ob,...pC,...pc,...qD,...qd,...abcd->...ABCD"
    shapes = [(1, 8, 8)] * 2 + [(1, 3, 3)] * 6 + [(1, 8, 3, 3, 3)]
    ops = [torch.randn(s, generator=gen) for s in shapes]
    want = torch.einsum(expr, *[o.double() for o in ops])
    got = torch.einsum(expr, *[o.to(VKML) for o in ops]).cpu()
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


def test_tensors_of_more_than_12_dims():
    # The kernels take at most 12 dims; ops whose operands coalesce below that, and
    # sort, nonzero and boolean masks (flat positions unravelled), take more, as on CUDA.
    g = torch.Generator().manual_seed(0)
    shape = [1] * 11 + [2, 1, 3]
    x, y = torch.randn(*shape, generator=g), torch.randn(2, *shape[1:], generator=g)
    nc = torch.randn([2] * 14, generator=g).transpose(0, 13)
    ops = {
        "add": lambda a, b, n: a + b,
        "mul": lambda a, b, n: n * 2,
        "sum": lambda a, b, n: n.sum(5),
        "contiguous": lambda a, b, n: n.contiguous(),
        "cat": lambda a, b, n: torch.cat([a, b], 0),
        "softmax": lambda a, b, n: n.softmax(0),
        "cumsum": lambda a, b, n: n.cumsum(2),
        "sort": lambda a, b, n: n.sort(4),
        "nonzero": lambda a, b, n: (n > 0).nonzero(),
        "mask": lambda a, b, n: n[n > 0],
        "flip": lambda a, b, n: n.flip(3),
    }
    for name, op in ops.items():
        want = op(x, y, nc)
        got = op(x.to(VKML), y.to(VKML), nc.to(VKML))
        torch.testing.assert_close(
            tuple(t.cpu() for t in got) if isinstance(got, tuple) else got.cpu(), want, msg=name
        )
    t = torch.empty([1] * 12 + [30, 40], device=VKML).uniform_()
    assert 0 <= t.min().item() and t.max().item() < 1
