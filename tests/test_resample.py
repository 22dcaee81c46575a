"""Linear / bicubic / trilinear / antialiased interpolation, grid_sample and
max_unpool, forward and backward, against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close_to_cpu, assert_grads_close_to_cpu, assert_raises_like_cpu, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=1e-4, rtol=1e-4)  # separable passes round in another order than the CPU


def _leaf(shape, dtype=torch.float32, **kw):
    return make(shape, dtype, **kw).requires_grad_()


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
        _leaf(shape),
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
        _leaf((2, 2, 7, 8)),
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
    assert_close_to_cpu(lambda t: F.interpolate(t, **kw), make(shape, dtype), atol=2e-2, rtol=2e-2)
    if dtype == torch.bfloat16 and kw["mode"] == "trilinear":
        # the deliberate, counted CPU route (the CPU rounds each product); the rest is native
        assert torch_vkml.fallback_counts() == {"aten::upsample_trilinear3d": 1}
        torch_vkml.reset_fallback_counts()


def test_interpolate_zero_size_raises():
    assert_raises_like_cpu(
        lambda x: torch.ops.aten.upsample_linear1d(x, [0], False), make((1, 1, 4))
    )


# ------------------------------------------------------------ grid_sample


def _grid(shape):
    # Points partly outside [-1, 1] so that every padding mode matters.
    return _leaf(shape, low=-1.3, high=1.3)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    def fn(x, g):
        return F.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    assert_grads_close_to_cpu(fn, _leaf((2, 3, 5, 6)), _grid((2, 4, 3, 2)), **TOL)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d(mode, padding_mode, align_corners):
    def fn(x, g):
        return F.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    assert_grads_close_to_cpu(fn, _leaf((2, 2, 3, 4, 5)), _grid((2, 2, 3, 2, 3)), **TOL)


def test_grid_sample_errors():
    assert_raises_like_cpu(
        lambda x, g: F.grid_sample(x, g, mode="bicubic"),
        make((1, 1, 2, 3, 4)),
        make((1, 1, 2, 2, 3)),
    )
    assert_raises_like_cpu(lambda x, g: F.grid_sample(x, g), make((2, 1, 3, 4)), make((1, 2, 2, 2)))


# -------------------------------------------------------------- max_unpool


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool(dims):
    shape = (2, 3) + (6,) * dims
    pool = getattr(F, f"max_pool{dims}d")
    unpool = getattr(F, f"max_unpool{dims}d")
    x = make(shape, unique=True)
    pooled, indices = pool(x, 2, return_indices=True)

    def fn(p, i):
        return unpool(p, i, 2, output_size=x.shape[2:])

    assert_grads_close_to_cpu(fn, pooled.requires_grad_(), indices)


def test_max_unpool_unbatched_and_bad_index():
    x = make((3, 4, 4), unique=True)
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    assert_close_to_cpu(lambda p, i: F.max_unpool2d(p, i, 2), pooled, indices)
    bad = indices.clone()
    bad[0, 0, 0] = 100
    with pytest.raises((RuntimeError, IndexError)):
        F.max_unpool2d(pooled.to("vkml"), bad.to("vkml"), 2).cpu()


# ----------------------------------------------------- fractional_max_pool


@pytest.mark.parametrize(
    "dims, shape, kernel, out",
    [
        (2, (2, 3, 9, 7), 2, (4, 5)),
        (2, (3, 8, 8), 3, (3, 3)),
        (3, (1, 2, 6, 5, 7), (2, 2, 3), (3, 3, 2)),
    ],
)
def test_fractional_max_pool(dims, shape, kernel, out):
    fn = getattr(F, f"fractional_max_pool{dims}d")
    n = shape[0] if len(shape) == dims + 2 else 1
    samples = torch.rand(n, shape[-dims - 1], dims, generator=torch.Generator().manual_seed(0))
    x = make(shape, unique=True).requires_grad_()

    def pool(t, s):
        return fn(t, kernel, output_size=out, return_indices=True, _random_samples=s)

    assert_close_to_cpu(pool, x.detach(), samples)
    assert_grads_close_to_cpu(lambda t, s: pool(t, s)[0], x, samples)


def test_fractional_max_pool_half_and_nan():
    x = make((1, 2, 6, 6), torch.float16)
    x[0, 0, 1, 1] = float("nan")
    samples = torch.rand(1, 2, 2, generator=torch.Generator().manual_seed(1)).half()
    assert_close_to_cpu(
        lambda t, s: F.fractional_max_pool2d(
            t, 2, output_size=3, return_indices=True, _random_samples=s
        ),
        x,
        samples,
    )
