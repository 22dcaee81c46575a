"""Max / average / adaptive pooling forward and backward vs the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    FLOAT_DTYPES,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


MAX2D = {
    "k3s2": dict(kernel_size=3, stride=2),
    "k2": dict(kernel_size=2),
    "pad_ceil": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    "dilation": dict(kernel_size=(2, 3), stride=1, padding=(1, 0), dilation=2),
    "rect_stride": dict(kernel_size=(3, 2), stride=(1, 3)),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", list(MAX2D))
def test_max_pool2d(case, dtype):
    kw = MAX2D[case]
    # unique values: the argmax (and so the gradient) is the same as on the CPU
    x = make((2, 3, 7, 8), dtype, unique=True).requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.max_pool2d(t, **kw), x)
    assert_close_to_cpu(lambda t: F.max_pool2d(t, return_indices=True, **kw)[1], x.detach())


def test_max_pool_ties_nan_and_unbatched():
    x = make((2, 6, 6), discrete=True, low=0, high=2)  # many ties: first index wins
    x[0, 1, 1] = float("nan")
    assert_close_to_cpu(lambda t: F.max_pool2d(t, 3, 2, return_indices=True), x)
    assert_close_to_cpu(lambda t: F.max_pool2d(t, 2, 1, padding=1, return_indices=True), x)


def test_max_pool1d_and_3d():
    x = make((2, 3, 11), unique=True).requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.max_pool1d(t, 3, 2, padding=1), x)
    x = make((2, 2, 5, 6, 5), unique=True).requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.max_pool3d(t, 2, (1, 2, 2), padding=1), x)
    assert_grads_close_to_cpu(lambda t: F.max_pool3d(t, 3, 2, ceil_mode=True, dilation=1), x)


AVG2D = {
    "k3s2": dict(kernel_size=3, stride=2),
    "pad_include": dict(kernel_size=3, stride=2, padding=1),
    "pad_exclude_ceil": dict(
        kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True
    ),
    "ceil_include": dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
    "divisor": dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), divisor_override=5),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", list(AVG2D))
def test_avg_pool2d(case, dtype):
    x = leaf((2, 3, 7, 8), dtype)
    assert_grads_close_to_cpu(lambda t: F.avg_pool2d(t, **AVG2D[case]), x)


def test_avg_pool1d_3d_and_noncontiguous():
    assert_grads_close_to_cpu(lambda t: F.avg_pool1d(t, 3, 2, 1), leaf((2, 3, 9)))
    x = leaf((2, 2, 5, 6, 7))
    assert_grads_close_to_cpu(lambda t: F.avg_pool3d(t, 2, (1, 2, 2), padding=1), x)
    assert_grads_close_to_cpu(
        lambda t: F.avg_pool3d(t, 3, 2, padding=1, ceil_mode=True, count_include_pad=False), x
    )
    x = leaf((2, 8, 7, 3))
    assert_grads_close_to_cpu(lambda t: F.avg_pool2d(t.permute(0, 3, 1, 2), 2), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("out", [(3, 3), (4, 5), (7, 8), (1, 1), (2, 1)])
def test_adaptive_avg_pool2d(out, dtype):
    assert_grads_close_to_cpu(lambda t: F.adaptive_avg_pool2d(t, out), leaf((2, 3, 7, 8), dtype))


def test_adaptive_pool_1d_3d_and_max():
    assert_grads_close_to_cpu(lambda t: F.adaptive_avg_pool1d(t, 4), leaf((2, 3, 9)))
    assert_grads_close_to_cpu(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 2)), leaf((1, 2, 5, 6, 3)))
    x = make((2, 3, 7, 9), unique=True).requires_grad_()
    for out in [(3, 4), (7, 9), (1, 1)]:
        assert_grads_close_to_cpu(lambda t, out=out: F.adaptive_max_pool2d(t, out), x)
        assert_close_to_cpu(lambda t, out=out: F.adaptive_max_pool2d(t, out, True)[1], x.detach())
    x = make((1, 2, 4, 5, 6), unique=True).requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.adaptive_max_pool3d(t, (2, 3, 4)), x)


@pytest.mark.parametrize("train", [True, False])
def test_modules(train):
    x = make((2, 3, 8, 8), unique=True).requires_grad_()
    for module in [
        torch.nn.MaxPool2d(3, 2, padding=1),
        torch.nn.AvgPool2d(3, 2, padding=1, count_include_pad=False),
        torch.nn.AdaptiveAvgPool2d((3, 2)),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.AdaptiveMaxPool2d(3),
    ]:
        module.train(train)
        assert_grads_close_to_cpu(module, x)


def test_empty_batch():
    x = make((0, 3, 6, 6))
    assert_close_to_cpu(lambda t: F.max_pool2d(t, 2), x)
    assert_close_to_cpu(lambda t: F.avg_pool2d(t, 2), x)
    assert_close_to_cpu(lambda t: F.adaptive_avg_pool2d(t, 3), x)


def test_errors_like_cpu():
    x = make((1, 2, 5, 5))
    for fn in [
        lambda t: F.max_pool2d(t, 3, padding=2),  # pad over half the kernel
        lambda t: F.avg_pool2d(t, 7),  # output would be empty
        lambda t: F.max_pool2d(t, 0),
    ]:
        with pytest.raises(RuntimeError):
            fn(x)
        with pytest.raises(RuntimeError):
            fn(x.to("vkml"))


def test_windows_past_a_loop_limited_drivers_count():
    """One thread walks an output's window: a global pool of a 400 x 400 map (160000
    elements) runs past Mesa 22.3 lavapipe's 65535 loop iterations, which stops it short
    (a max 8e-6 under the true one, an average off by 0.3). There it takes the counted
    CPU route; elsewhere the kernel runs it."""
    x = make((1, 2, 400, 400), torch.float32)
    assert_close_to_cpu(lambda t: F.max_pool2d(t, 400), x)
    assert_close_to_cpu(lambda t: F.avg_pool2d(t, 400), x)
    assert_close_to_cpu(lambda t: F.adaptive_max_pool2d(t, 1), x)
    counts = torch_vkml.fallback_counts()
    if torch_vkml.get_device_properties().loop_iteration_limit:
        assert set(counts) == {
            "aten::max_pool2d_with_indices",
            "aten::avg_pool2d",
            "aten::adaptive_max_pool2d",
        }, counts
    else:
        assert not counts, counts
    torch_vkml.reset_fallback_counts()  # the no_fallback check: these are the point here


FLOAT64_POOLS = {
    "max2d_ceil_dilated": lambda t: F.max_pool2d(t, 3, 2, padding=1, dilation=2, ceil_mode=True),
    "max1d": lambda t: F.max_pool1d(t.flatten(2), 4, 3),
    "max3d": lambda t: F.max_pool3d(t.unsqueeze(0), 2),
    "avg2d_pad_exclusive": lambda t: F.avg_pool2d(t, 3, 2, padding=1, count_include_pad=False),
    "avg2d_divisor_ceil": lambda t: F.avg_pool2d(t, 2, ceil_mode=True, divisor_override=3),
    "avg3d": lambda t: F.avg_pool3d(t.unsqueeze(0), (1, 3, 2), padding=(0, 1, 1)),
    "adaptive_avg2d": lambda t: F.adaptive_avg_pool2d(t, (4, 5)),
    "adaptive_avg3d": lambda t: F.adaptive_avg_pool3d(t.unsqueeze(0), 2),
    "adaptive_max2d": lambda t: F.adaptive_max_pool2d(t, 4),
    "adaptive_max1d": lambda t: F.adaptive_max_pool1d(t.flatten(2), 7),
}


@pytest.mark.parametrize("case", FLOAT64_POOLS)
def test_float64_pools_run_on_the_device(case):
    """float64 pools run in double on the device: values, indices and gradients equal
    to the CPU's (a max picks the same element; sums of a window in the same order),
    with no fallback."""
    fn = FLOAT64_POOLS[case]
    x = make((2, 3, 9, 8), torch.float64, low=-2, high=2).requires_grad_()
    assert_grads_close_to_cpu(lambda t: fn(t).sin(), x, rtol=1e-14, atol=1e-14)


def test_float64_max_pools_give_the_cpus_indices():
    x = make((2, 3, 9, 8), torch.float64, low=-2, high=2)
    x[0, 0, :3, :3] = 1.5  # a tie: the first in the window wins, as on the CPU
    for fn in (
        lambda t: F.max_pool2d(t, 3, 2, padding=1, return_indices=True),
        lambda t: F.max_pool3d(t.unsqueeze(0), 2, return_indices=True),
        lambda t: F.adaptive_max_pool2d(t, 4, return_indices=True),
    ):
        (y, i), (yv, iv) = fn(x), fn(x.to("vkml"))
        assert torch.equal(yv.cpu(), y) and torch.equal(iv.cpu(), i)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.int64], ids=str)
def test_integer_pools_take_the_counted_cpu_route(dtype):
    """Pools of dtypes without kernels (image bytes, labels) run on the counted CPU
    route, with the CPU's results and errors, instead of raising."""
    x = make((2, 3, 9, 9), torch.int64, low=0, high=200).to(dtype)
    assert_close_to_cpu(lambda t: F.max_pool2d(t, 3, 2), x)
    assert_close_to_cpu(lambda t: F.max_pool3d(t.unsqueeze(0), 2), x)
    if dtype == torch.int64:  # the CPU has avg_pool2d for it
        assert_close_to_cpu(lambda t: F.avg_pool2d(t, 2, padding=1), x)
    assert_raises_like_cpu(lambda t: F.adaptive_max_pool2d(t, 3), x)
    assert torch_vkml.fallback_counts()
    torch_vkml.reset_fallback_counts()  # counted above, as this test expects


def test_empty_sizes_raise_as_on_the_cpu():
    """Found by PyTorch's nn/test_pooling.py: the backward of an adaptive pooling to size
    0 and fractional max pooling over zero channels returned where the CPU raises."""
    for device in ("cpu", "vkml"):
        x = torch.randn(1, 4, 10, 9, device=device, requires_grad=True)
        for fn in (F.adaptive_avg_pool2d, F.adaptive_max_pool2d):
            y = fn(x, 0)
            assert y.shape == (1, 4, 0, 0)
            with pytest.raises(RuntimeError, match="Expected grad_output to have non-zero size"):
                y.sum().backward()
        pool = torch.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
        with pytest.raises(RuntimeError, match="Expected input to have non-zero size"):
            pool(torch.randn(1, 0, 50, 32, device=device))
        assert pool(torch.ones(0, 2, 50, 32, device=device)).shape == (0, 2, 25, 16)
