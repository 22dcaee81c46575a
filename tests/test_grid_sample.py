"""grid_sample (2-d, 3-d) and its backward against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_grads_close_to_cpu, assert_raises_like_cpu, leaf, make, run_python

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=1e-4, rtol=1e-4)


def _grid(shape, dtype=torch.float32):
    # Points partly outside [-1, 1] so that every padding mode matters.
    return leaf(shape, dtype, low=-1.3, high=1.3)


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


F64_CASES = [
    (dims, mode, padding_mode)
    for dims, modes in ((2, ("bilinear", "nearest", "bicubic")), (3, ("bilinear", "nearest")))
    for mode in modes
    for padding_mode in ("zeros", "border", "reflection")
]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dims,mode,padding_mode", F64_CASES)
def test_float64(dims, mode, padding_mode, align_corners):
    """The float64 kernel computes in double: forward and both gradients within 1e-12 of
    the CPU."""
    shape = (2, 3) + (5,) * dims
    grid = (2,) + (4,) * dims + (dims,)

    def fn(x, g):
        return F.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    assert_grads_close_to_cpu(
        fn, leaf(shape, torch.float64), _grid(grid, torch.float64), atol=1e-12, rtol=1e-12
    )


def test_float64_input_gradient_sums_colliding_points():
    """Many grid points share each input pixel, so the input gradient's 64-bit
    compare-and-swap adds race; the sums must still be the CPU's."""
    x = leaf((1, 2, 3, 3, 3), torch.float64)
    g = make((1, 16, 16, 16, 3), torch.float64, low=-0.4, high=0.4).requires_grad_()
    assert_grads_close_to_cpu(
        lambda a, b: F.grid_sample(a, b, align_corners=True), x, g, atol=1e-11, rtol=1e-12
    )


def test_float64_without_device_support_takes_the_counted_cpu_route():
    """A device without float64 (many Intel and mobile GPUs) samples on the CPU, counted,
    with the same results."""
    run = run_python(
        """
        import torch, torch_vkml
        import torch.nn.functional as F
        assert not torch_vkml.get_device_properties().supports_fp64
        torch.manual_seed(0)
        x = torch.randn(1, 2, 4, 5, 6, dtype=torch.float64, requires_grad=True)
        g = torch.empty(1, 3, 2, 4, 3, dtype=torch.float64).uniform_(-1.2, 1.2).requires_grad_()
        xv = x.detach().to("vkml").requires_grad_()
        gv = g.detach().to("vkml").requires_grad_()
        go = torch.randn(1, 2, 3, 2, 4, dtype=torch.float64)  # no float64 sum there
        F.grid_sample(x, g, align_corners=False).backward(go)
        F.grid_sample(xv, gv, align_corners=False).backward(go.to("vkml"))
        for a, b in ((x.grad, xv.grad), (g.grad, gv.grad)):
            torch.testing.assert_close(b.cpu(), a, atol=1e-12, rtol=1e-12)
        counts = torch_vkml.fallback_counts()
        assert set(counts) == {"aten::grid_sampler_3d", "aten::grid_sampler_3d_backward"}, counts
        print("ok")
        """,
        env={"TORCH_VKML_NO_FP64": "1"},
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("dims", [2, 3])
def test_16bit_floats_compute_in_float32_as_cuda(dtype, dims):
    # A bfloat16 / float16 model (Deformable DETR's multi-scale attention samples with
    # grid_sample) ran these on the CPU fallback. Like CUDA's kernel, vkml's computes
    # in float32 and rounds once: compared with the float32 computation rounded, where
    # the CPU, which rounds every step to the dtype, differs by more.
    shape, grid_shape = (
        ((2, 3, 5, 6), (2, 4, 3, 2)) if dims == 2 else ((2, 2, 3, 4, 5), (2, 2, 3, 2, 3))
    )
    x, g = leaf(shape), _grid(grid_shape)
    for mode in ["bilinear", "nearest"] + (["bicubic"] if dims == 2 else []):
        ref = F.grid_sample(x, g, mode=mode, align_corners=False)
        xv = x.detach().to(dtype).to("vkml").requires_grad_()
        gv = g.detach().to(dtype).to("vkml").requires_grad_()
        out = F.grid_sample(xv, gv, mode=mode, align_corners=False)
        assert out.dtype == dtype
        expected = F.grid_sample(
            x.to(dtype).float(), g.to(dtype).float(), mode=mode, align_corners=False
        )
        torch.testing.assert_close(
            out.cpu().float(), expected.to(dtype).float(), atol=2e-2, rtol=2e-2
        )
        assert (out.cpu().float() - ref).abs().max() < 0.1  # the float32 inputs' answer
        out.float().sum().backward()
        assert xv.grad.dtype == dtype and gv.grad.dtype == dtype
        xf, gf = (
            x.detach().to(dtype).float().requires_grad_(),
            g.detach().to(dtype).float().requires_grad_(),
        )
        F.grid_sample(xf, gf, mode=mode, align_corners=False).sum().backward()
        torch.testing.assert_close(
            xv.grad.cpu().float(), xf.grad.to(dtype).float(), atol=2e-2, rtol=2e-2
        )
        if mode != "nearest":
            torch.testing.assert_close(
                gv.grad.cpu().float(), gf.grad.to(dtype).float(), atol=5e-2, rtol=5e-2
            )
