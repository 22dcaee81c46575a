"""Linear / bilinear / bicubic / trilinear / antialiased interpolation (ops_upsample.cpp),
forward and backward, against the CPU (nearest modes: test_remap.py)."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=1e-4, rtol=1e-4)  # separable passes round in another order than the CPU


# ----------------------------------------------------------- interpolate

INTERP_CASES = [
    ("linear", (2, 3, 7), dict(size=11)),
    ("linear", (2, 3, 7), dict(scale_factor=0.6)),
    ("bicubic", (2, 2, 5, 6), dict(size=(9, 4))),
    ("bicubic", (1, 2, 5, 6), dict(scale_factor=1.7)),
    ("trilinear", (1, 2, 3, 4, 5), dict(size=(5, 3, 8))),
    ("trilinear", (1, 2, 3, 4, 5), dict(scale_factor=(2.0, 0.5, 1.5))),
]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode, shape, kw", INTERP_CASES)
def test_interpolate(mode, shape, kw, align_corners):
    assert_grads_close_to_cpu(
        lambda x: F.interpolate(x, mode=mode, align_corners=align_corners, **kw),
        leaf(shape),
        **TOL,
    )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 4), (11, 13), (5, 16)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_antialias(mode, size, align_corners):
    assert_grads_close_to_cpu(
        lambda x: F.interpolate(
            x, size=size, mode=mode, antialias=True, align_corners=align_corners
        ),
        leaf((2, 2, 7, 8)),
        **TOL,
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(
    "shape, kw",
    [
        ((1, 2, 5), dict(size=7, mode="linear")),
        ((1, 2, 4, 5), dict(size=(7, 3), mode="bicubic")),
        ((1, 1, 3, 4, 5), dict(size=(2, 5, 3), mode="trilinear")),
    ],
)
def test_interpolate_half(dtype, shape, kw):
    # Computed in float32 and rounded once, as CUDA (the CPU rounds bfloat16 trilinear's
    # products one by one): native for every mode, bfloat16 trilinear included.
    torch_vkml.reset_fallback_counts()
    assert_close_to_cpu(lambda t: F.interpolate(t, **kw), make(shape, dtype), atol=2e-2, rtol=2e-2)
    assert torch_vkml.fallback_counts() == {}


def test_interpolate_zero_size_raises():
    assert_raises_like_cpu(
        lambda x: torch.ops.aten.upsample_linear1d(x, [0], False), make((1, 1, 4))
    )


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(
    "kw",
    [dict(scale_factor=2), dict(scale_factor=0.6), dict(size=(7, 3)), dict(size=(1, 1))],
    ids=str,
)
def test_upsample_bilinear(align_corners, kw):
    x = leaf((2, 3, 5, 4))
    fn = lambda t: F.interpolate(t, mode="bilinear", align_corners=align_corners, **kw)  # noqa: E731
    assert_grads_close_to_cpu(fn, x)
    assert_close_to_cpu(lambda t: fn(t.mT), x)
    assert_close_to_cpu(fn, make((2, 3, 5, 4), torch.float16))


@pytest.mark.parametrize(
    "mode,shape,kw",
    [
        ("linear", (1, 2, 5), dict(size=7)),
        ("linear", (2, 3, 9), dict(scale_factor=0.4, align_corners=True)),
        ("bilinear", (1, 2, 4, 5), dict(size=(7, 3))),
        ("bilinear", (2, 2, 6, 5), dict(scale_factor=(1.7, 2.5), align_corners=True)),
        ("bilinear", (1, 2, 5, 5), dict(size=(5, 5))),  # the CPU's identity shortcut
        ("bicubic", (1, 2, 4, 5), dict(size=(7, 3))),
        ("bicubic", (1, 3, 6, 4), dict(scale_factor=1.5, align_corners=True)),
        ("trilinear", (1, 1, 3, 4, 5), dict(size=(2, 5, 3))),
        ("bilinear", (1, 2, 9, 7), dict(size=(4, 3), antialias=True)),
        ("bicubic", (1, 2, 9, 7), dict(size=(5, 11), antialias=True)),
    ],
)
def test_float64_interpolation_runs_on_the_device(mode, shape, kw):
    """float64 resampling is a product per spatial dim with its weight matrix, built in
    double by the CPU's rules: forward and backward within 1e-12, no fallback."""
    kw = {"align_corners": False, **kw}
    fn = lambda t: F.interpolate(t, mode=mode, **kw)  # noqa: E731
    assert_grads_close_to_cpu(fn, leaf(shape, torch.float64), atol=1e-12, rtol=1e-12)


def test_float64_resampling_of_long_signals_takes_the_counted_cpu_route():
    """A pass's dense float64 weight matrix would pass 4M entries (out x in): the
    counted CPU route, with the CPU's results, instead of a matrix of gigabytes."""
    fn = lambda t: F.interpolate(t, size=2101, mode="linear")  # noqa: E731
    assert_grads_close_to_cpu(fn, leaf((1, 2, 2100), torch.float64), atol=1e-12, rtol=1e-12)
    counts = torch_vkml.fallback_counts()
    assert set(counts) == {"aten::upsample_linear1d", "aten::upsample_linear1d_backward"}, counts
    torch_vkml.reset_fallback_counts()  # counted above, as this test expects
