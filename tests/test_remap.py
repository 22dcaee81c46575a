"""Ops on the remap kernel (ops_remap.cpp): flip, roll, reflection / replication /
circular padding and nearest upsampling, forward and backward, against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    ALL_DTYPES,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


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
    assert_grads_close_to_cpu(lambda t: t.flip((0, 1)), leaf((3, 4)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_flip_views(dtype):
    x = make((3, 4, 5), dtype)
    assert_close_to_cpu(lambda t: t.flip(0), x)
    assert_close_to_cpu(lambda t: t.flip(-1, 1), x)
    assert_close_to_cpu(lambda t: t.transpose(0, 2).flip(0, 1, 2), x)
    assert_close_to_cpu(lambda t: t[:0].flip(0), x)
    assert_close_to_cpu(lambda t: t[0, 0, 0].flip(()), x)


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
    assert_grads_close_to_cpu(lambda t: t.roll((1, -1), (0, 1)), leaf((3, 4)))


def test_roll_views():
    x = make((3, 4, 5))
    assert_close_to_cpu(lambda t: t.roll(2, 0), x)
    assert_close_to_cpu(lambda t: t.roll((-1, 7), (1, -1)), x)
    assert_close_to_cpu(lambda t: t.transpose(0, 2).roll(3), x)
    assert_close_to_cpu(lambda t: t[:0].roll(1, 0), x)
    assert_grads_close_to_cpu(lambda t: t.roll(1, 1), leaf((3, 4)))


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
        x = leaf(shape)
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
        lambda t: F.pad(t, (2, 1), mode="reflect"), leaf((2, 3, 4), torch.float16)
    )
    assert_raises_like_cpu(lambda t: F.pad(t, (4, 0), mode="reflect"), make((2, 3, 4)))
    assert_raises_like_cpu(lambda t: F.pad(t, (-4, 0), mode="replicate"), make((2, 3, 4)))
    assert_close_to_cpu(lambda t: F.pad(t, (1, 1), mode="reflect"), make((0, 3, 4)))


# ---------------------------------------------------- nearest upsampling


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
    x1, x2, x3 = leaf((2, 3, 5)), leaf((2, 3, 5, 4)), leaf((1, 2, 3, 5, 4))
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, mode=mode, **kw), x1)
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, mode=mode, **kw), x2)
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, mode=mode, **kw), x3)
    assert_close_to_cpu(lambda t: F.interpolate(t.mT, mode=mode, **kw), x2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.uint8], ids=dtype_id)
def test_upsample_nearest_dtypes(dtype):
    x = make((1, 2, 3, 4), dtype)
    assert_close_to_cpu(lambda t: F.interpolate(t, scale_factor=(2, 3)), x)
    assert_close_to_cpu(lambda t: F.interpolate(t, size=(5, 2)), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_float64_backward(mode, nd):
    """The backward kernel adds in float32; float64 gradients are summed in double
    (index_add) rather than raising NotImplementedError, as they did."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        return
    shape, pads = PAD_CASES[nd]
    x = leaf(shape, torch.float64)
    assert_grads_close_to_cpu(lambda t, p=pads[0]: F.pad(t, p, mode=mode), x)


def test_upsample_nearest_float64_backward():
    if not torch_vkml.get_device_properties(0).supports_fp64:
        return
    x = leaf((2, 3, 5, 4), torch.float64)
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, scale_factor=1.5), x)
    assert_grads_close_to_cpu(lambda t: F.interpolate(t, size=(3, 7), mode="nearest-exact"), x)


def test_padding_shape_errors_in_the_cpus_words():
    for device in ("cpu", "vkml"):
        for mode in ("replicate", "reflect"):
            with pytest.raises(RuntimeError, match=r"^Expected 2D or 3D \(batch mode\)"):
                torch.nn.functional.pad(torch.ones(3, 0, 10, device=device), (1, 1), mode=mode)


@pytest.mark.parametrize("mode", ["replicate", "reflect"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_padding_backward(mode, dtype, no_fallback):
    """Complex padding's backward raised NotImplementedError (PyTorch's test_nn.py)."""
    x = torch.randn(2, 3, 5, 6, dtype=dtype)
    g = torch.randn(2, 3, 7, 9, dtype=dtype)
    grads = {}
    for device in ("cpu", "vkml"):
        xs = x.to(device).detach().requires_grad_()
        torch.nn.functional.pad(xs, (1, 2, 1, 1), mode=mode).backward(g.to(device))
        grads[device] = xs.grad.cpu()
    torch.testing.assert_close(grads["vkml"], grads["cpu"], atol=1e-5, rtol=1e-5)
