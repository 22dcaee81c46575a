"""Data movement ops (cat, flip, roll, tril/triu, padding, upsampling, ...) against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_close_to_cpu,
    assert_factory_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


def _leaf(shape, dtype=torch.float32, **kw):
    return make(shape, dtype, **kw).requires_grad_()


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
    a, b = _leaf((2, 3)), _leaf((4, 3))
    assert_grads_close_to_cpu(lambda x, y: torch.cat([x * 2, y], 0), a, b)


# ----------------------------------------------------------- flip, roll


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dims", [(0,), (-1,), (0, 2), (0, 1, 2)], ids=str)
def test_flip(dtype, dims):
    x = make((3, 4, 5), dtype)
    assert_close_to_cpu(lambda t: t.flip(dims), x)
    assert_close_to_cpu(lambda t: t.transpose(0, 2).flip(dims), x)


def test_flip_edge_cases():
    assert_close_to_cpu(lambda t: t.flip(0), make((0, 3)))
    assert_close_to_cpu(lambda t: t.flip(()), make((2, 3)))
    assert_close_to_cpu(lambda t: torch.fliplr(t), make((2, 3)))
    assert_close_to_cpu(lambda t: torch.flipud(t), make((2, 3)))
    assert_close_to_cpu(lambda t: t.flip(0), make(()))
    assert_close_to_cpu(lambda t: t.flip((0, 1, 3, 6)), make((2, 1, 3, 2, 1, 2, 2)))  # 7 dims
    assert_raises_like_cpu(lambda t: t.flip((0, 0)), make((2, 3)))
    assert_grads_close_to_cpu(lambda t: t.flip((0, 1)), _leaf((3, 4)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize(
    "shifts, dims",
    [(2, 0), (-1, 1), (7, -1), ((1, -2), (0, 2)), ((1, 2), (1, 1)), (3, None), (0, 0)],
    ids=str,
)
def test_roll(dtype, shifts, dims):
    x = make((3, 4, 5), dtype)
    assert_close_to_cpu(lambda t: t.roll(shifts, dims), x)
    assert_close_to_cpu(lambda t: t.transpose(0, 2).roll(shifts, dims), x)


def test_roll_edge_cases():
    assert_close_to_cpu(lambda t: t.roll(1, 0), make((0, 3)))
    assert_close_to_cpu(lambda t: t.roll(2), make(()))
    assert_raises_like_cpu(lambda t: t.roll((1, 2), (0,)), make((2, 3)))
    assert_grads_close_to_cpu(lambda t: t.roll((1, -1), (0, 1)), _leaf((3, 4)))


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
    assert_grads_close_to_cpu(lambda t: t.tril(-1) + t.triu(2), _leaf((4, 4)))


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
    assert_grads_close_to_cpu(lambda t: t.repeat(2, 2), _leaf((2, 3)))


# -------------------------------------------------------------- padding

PAD_CASES = {
    1: ((2, 3, 6), [(1, 2), (0, 3), (-1, 2)]),
    2: ((2, 3, 5, 6), [(1, 2, 3, 0), (2, 2, 2, 2), (0, -1, 1, 1)]),
    3: ((1, 2, 3, 4, 5), [(1, 1, 2, 0, 1, 2)]),
}


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_modes(mode, nd):
    shape, pads = PAD_CASES[nd]
    for pad in pads:
        x = _leaf(shape)
        assert_grads_close_to_cpu(lambda t, p=pad: F.pad(t, p, mode=mode), x)
        # unbatched input and a non-contiguous one
        assert_grads_close_to_cpu(lambda t, p=pad: F.pad(t[0], p, mode=mode), x)
        assert_close_to_cpu(lambda t, p=pad: F.pad(t.transpose(-1, -2).mT, p, mode=mode), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_pad_dtypes(dtype):
    x = make((2, 3, 4, 5), dtype)
    for mode in ["reflect", "replicate", "circular"]:
        if dtype == torch.bool and mode != "circular":  # no bool kernel on the CPU either
            assert_raises_like_cpu(lambda t, m=mode: F.pad(t, (1, 2, 2, 1), mode=m), x)
            continue
        assert_close_to_cpu(lambda t, m=mode: F.pad(t, (1, 2, 2, 1), mode=m), x)


def test_pad_half_grad_and_errors():
    assert_grads_close_to_cpu(
        lambda t: F.pad(t, (2, 1), mode="reflect"), _leaf((2, 3, 4), torch.float16)
    )
    assert_raises_like_cpu(lambda t: F.pad(t, (4, 0), mode="reflect"), make((2, 3, 4)))
    assert_raises_like_cpu(lambda t: F.pad(t, (-4, 0), mode="replicate"), make((2, 3, 4)))
    assert_close_to_cpu(lambda t: F.pad(t, (1, 1), mode="reflect"), make((0, 3, 4)))


# ------------------------------------------------------------ upsampling


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize(
    "kw",
    [
        dict(scale_factor=2),
        dict(scale_factor=1.5),
        dict(scale_factor=0.5),
        dict(size=7),
        dict(size=3),
        dict(size=5),
    ],
    ids=str,
)
def test_upsample_nearest(mode, kw):
    x1, x2, x3 = _leaf((2, 3, 5)), _leaf((2, 3, 5, 4)), _leaf((1, 2, 3, 5, 4))
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, mode=mode, **kw), x1)
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, mode=mode, **kw), x2)
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, mode=mode, **kw), x3)
    assert_close_to_cpu(lambda t: F.interpolate(t.mT, mode=mode, **kw), x2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.uint8], ids=dtype_id)
def test_upsample_nearest_dtypes(dtype):
    x = make((1, 2, 3, 4), dtype)
    assert_close_to_cpu(lambda t: F.interpolate(t, scale_factor=(2, 3)), x)
    assert_close_to_cpu(lambda t: F.interpolate(t, size=(5, 2)), x)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(
    "kw",
    [dict(scale_factor=2), dict(scale_factor=0.6), dict(size=(7, 3)), dict(size=(1, 1))],
    ids=str,
)
def test_upsample_bilinear(align_corners, kw):
    x = _leaf((2, 3, 5, 4))
    fn = lambda t: F.interpolate(t, mode="bilinear", align_corners=align_corners, **kw)  # noqa: E731
    assert_grads_close_to_cpu(fn, x)
    assert_close_to_cpu(lambda t: fn(t.mT), x)
    assert_close_to_cpu(fn, make((2, 3, 5, 4), torch.float16))


# ------------------------------------------------------- unfold / fold


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=3),
        dict(kernel_size=(2, 3), stride=2, padding=1),
        dict(kernel_size=2, dilation=2, padding=(0, 1), stride=(1, 2)),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_unfold_fold(kw, dtype):
    x = _leaf((2, 3, 6, 7), dtype)
    assert_grads_close_to_cpu(lambda t: F.unfold(t, **kw), x)
    assert_close_to_cpu(lambda t: F.unfold(t[0].mT, **kw), x)  # unbatched, non-contiguous
    cols = F.unfold(x.detach(), **kw)
    c = cols.clone().requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.fold(t, (6, 7), **kw), c)
    assert_close_to_cpu(lambda t: F.fold(t[0], (6, 7), **kw), c)


def test_unfold_fold_errors():
    assert_raises_like_cpu(lambda t: F.unfold(t, 5), make((1, 2, 3, 3)))
    assert_raises_like_cpu(lambda t: F.fold(t, (4, 4), 2), make((1, 7, 9)))


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


# --------------------------------------------------------------------------
# channel_shuffle, nonzero_static
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_channel_shuffle(dtype):
    x = make((2, 6, 3, 2), dtype)
    for groups in (1, 2, 3, 6):
        assert_close_to_cpu(lambda t, g=groups: F.channel_shuffle(t, g), x)
    assert_close_to_cpu(lambda t: F.channel_shuffle(t.transpose(2, 3), 2), x)
    assert_raises_like_cpu(lambda t: F.channel_shuffle(t, 4), x)


def test_channel_shuffle_grad():
    assert_grads_close_to_cpu(lambda t: F.channel_shuffle(t, 2) * 2, _leaf((2, 4, 3)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_nonzero_static(dtype):
    x = make((3, 4), dtype)
    for size, fill in [(0, -1), (3, -1), (12, 7), (20, -5)]:
        assert_close_to_cpu(
            lambda t, s=size, f=fill: torch.nonzero_static(t, size=s, fill_value=f), x
        )
    assert_close_to_cpu(lambda t: torch.nonzero_static(t, size=4), make((0, 3), dtype))
