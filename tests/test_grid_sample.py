"""grid_sample (2-d, 3-d) and its backward against the CPU."""

import pytest
import torch.nn.functional as F
from conftest import assert_grads_close_to_cpu, assert_raises_like_cpu, leaf, make

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
