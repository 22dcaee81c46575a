"""grid_sample (2-d, 3-d) and its backward against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_grads_close_to_cpu, assert_raises_like_cpu, leaf, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=1e-4, rtol=1e-4)


def _grid(shape):
    # Points partly outside [-1, 1] so that every padding mode matters.
    return leaf(shape, low=-1.3, high=1.3)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    def fn(x, g):
        return F.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    assert_grads_close_to_cpu(fn, leaf((2, 3, 5, 6)), _grid((2, 4, 3, 2)), **TOL)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d(mode, padding_mode, align_corners):
    def fn(x, g):
        return F.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    assert_grads_close_to_cpu(fn, leaf((2, 2, 3, 4, 5)), _grid((2, 2, 3, 2, 3)), **TOL)


def test_grid_sample_errors():
    assert_raises_like_cpu(
        lambda x, g: F.grid_sample(x, g, mode="bicubic"),
        make((1, 1, 2, 3, 4)),
        make((1, 1, 2, 2, 3)),
    )
    assert_raises_like_cpu(lambda x, g: F.grid_sample(x, g), make((2, 1, 3, 4)), make((1, 2, 2, 2)))


@pytest.mark.parametrize("dims", [2, 3])
def test_float64_takes_the_counted_cpu_route(dims):
    """No float64 kernel: forward and backward run on the CPU, counted (they raised
    NotImplementedError before)."""
    shape = (2, 3) + (5,) * dims
    grid = (2,) + (4,) * dims + (dims,)

    def fn(x, g):
        return F.grid_sample(x, g, align_corners=False, padding_mode="border")

    assert_grads_close_to_cpu(
        fn,
        leaf(shape, torch.float64),
        leaf(grid, torch.float64, low=-1.1, high=1.1),
        atol=1e-12,
        rtol=1e-12,
    )
    counts = torch_vkml.fallback_counts()
    assert counts and all(name.startswith("aten::grid_sampler_") for name in counts), counts
    torch_vkml.reset_fallback_counts()
