"""torchvision's detection ops on vkml (csrc/aten/ops_detection.cpp): nms, and roi_align
and roi_pool with their backwards, against references of torchvision's CPU semantics
(detection_reference.py; torchvision's own ops where it loads)."""

import pytest
import torch
from conftest import VKML, run_python
from detection_reference import (
    nms,
    nms_reference,
    roi_align,
    roi_align_reference,
    roi_pool,
    roi_pool_reference,
)

pytestmark = pytest.mark.usefixtures("no_fallback")


def _boxes(n, dtype=torch.float32, seed=0):
    """n boxes in clusters of about eight, so that many overlap, with distinct scores."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.rand(n // 8 + 1, 2, generator=g) * 100
    xy = centres.repeat_interleave(8, 0)[:n] + torch.randn(n, 2, generator=g) * 4
    wh = torch.rand(n, 2, generator=g) * 30 + 2
    boxes = torch.cat([xy - wh / 2, xy + wh / 2], 1).to(dtype)
    scores = torch.randperm(n, generator=g).to(dtype) / n
    return boxes, scores


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7])
def test_nms_matches_reference(dtype, threshold):
    # 300 boxes: rows of ten 32-bit mask words, the last partly filled.
    boxes, scores = _boxes(300, dtype)
    keep = nms(boxes.to(VKML), scores.to(VKML), threshold)
    assert keep.device.type == VKML and keep.dtype == torch.int64
    expected = nms_reference(boxes, scores, threshold)
    assert 0 < len(expected) < 300
    assert torch.equal(keep.cpu(), expected)


def test_nms_edge_cases():
    empty = nms(torch.zeros(0, 4, device=VKML), torch.zeros(0, device=VKML), 0.5)
    assert empty.shape == (0,) and empty.dtype == torch.int64 and empty.device.type == VKML
    # Identical boxes: the best-scored one suppresses the rest.
    same = torch.tensor([[0.0, 0.0, 10.0, 10.0]]).repeat(40, 1)
    scores = torch.rand(40)
    keep = nms(same.to(VKML), scores.to(VKML), 0.5)
    assert keep.tolist() == [int(scores.argmax())]
    # Zero-area boxes: 0 / 0 overlap suppresses nothing, as on torchvision's CPU.
    points = torch.tensor([[5.0, 5.0, 5.0, 5.0]]).repeat(3, 1)
    keep = nms(points.to(VKML), torch.tensor([0.1, 0.3, 0.2], device=VKML), 0.5)
    assert keep.tolist() == [1, 2, 0]


@pytest.mark.parametrize(
    "boxes, scores, message",
    [
        (torch.zeros(4), torch.zeros(4), "boxes should be a 2d tensor, got 1D"),
        (torch.zeros(4, 3), torch.zeros(4), "boxes should have 4 elements in dimension 1"),
        (torch.zeros(4, 4), torch.zeros(4, 1), "scores should be a 1d tensor, got 2D"),
        (torch.zeros(4, 4), torch.zeros(3), "boxes and scores should have same number"),
    ],
)
def test_nms_rejects_bad_shapes(boxes, scores, message):
    with pytest.raises(RuntimeError, match=message):
        nms(boxes.to(VKML), scores.to(VKML), 0.5)
    assert nms(*_boxes(16, seed=1), 0.5).numel() > 0  # still usable (on the CPU too)


def _rois(k, batch, size, seed=0, dtype=torch.float32):
    """k rois over `batch` images of side `size`, some reaching past the edges."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(k, 2, generator=g) * size * 1.1 - size * 0.1
    wh = torch.rand(k, 2, generator=g) * size * 0.6 + 0.3
    index = torch.randint(0, batch, (k, 1), generator=g).to(xy.dtype)
    return torch.cat([index, xy, xy + wh], 1).to(dtype)


CASES = [  # spatial_scale, pooled (h, w), sampling_ratio, aligned
    (1.0, (3, 3), 2, False),
    (0.5, (4, 3), -1, False),
    (0.5, (2, 5), 0, True),
    (0.25, (3, 2), 3, True),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale, pooled, sampling, aligned", CASES)
def test_roi_align_forward_and_backward(dtype, scale, pooled, sampling, aligned):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 11, 13, generator=g, dtype=dtype)
    rois = _rois(6, 2, 12 / scale, dtype=dtype)
    args = (scale, *pooled, sampling, aligned)
    xr = x.double().clone().requires_grad_()
    expected = roi_align_reference(xr, rois.double(), *args)
    xv = x.to(VKML).requires_grad_()
    out = roi_align(xv, rois.to(VKML), *args)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(out.cpu().double(), expected.detach(), **tol)
    grad = torch.randn(expected.shape, generator=g, dtype=torch.float64)
    expected.backward(grad)
    out.backward(grad.to(dtype).to(VKML))
    torch.testing.assert_close(xv.grad.cpu().double(), xr.grad, **tol)


def test_roi_align_many_rois_onto_few_pixels():
    """Every roi samples the same 2 x 2 pixels, so the backward's adds race."""
    x = torch.randn(1, 2, 2, 2, dtype=torch.float64)
    rois = torch.tensor([[0.0, 0.2, 0.1, 1.1, 0.9]]).repeat(500, 1)
    xr = x.clone().requires_grad_()
    roi_align_reference(xr, rois, 1.0, 2, 2, 2, True).sum().backward()
    xv = x.float().to(VKML).requires_grad_()
    roi_align(xv, rois.float().to(VKML), 1.0, 2, 2, 2, True).sum().backward()
    torch.testing.assert_close(xv.grad.cpu().double(), xr.grad, atol=1e-3, rtol=1e-4)


def test_roi_align_half_and_empty():
    g = torch.Generator().manual_seed(2)
    x, rois = torch.randn(1, 4, 9, 9, generator=g), _rois(5, 1, 9)
    for dtype, tol in ((torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)):
        xh, rh = x.to(dtype), rois.to(dtype)  # the reference reads the rounded values
        expected = roi_align_reference(xh.double(), rh.double(), 1.0, 3, 3, 2, True)
        out = roi_align(xh.to(VKML), rh.to(VKML), 1.0, 3, 3, 2, True)
        assert out.dtype == dtype
        torch.testing.assert_close(out.cpu().double(), expected, atol=tol, rtol=tol)
    none = roi_align(x.to(VKML), torch.zeros(0, 5, device=VKML), 1.0, 3, 3, 2, True)
    assert none.shape == (0, 4, 3, 3) and none.device.type == VKML
    with pytest.raises(RuntimeError, match="rois must have shape as Tensor"):
        roi_align(x.to(VKML), torch.zeros(3, 4, device=VKML), 1.0, 3, 3, 2, True)
    with pytest.raises(RuntimeError, match="to have the same type"):
        roi_align(x.to(VKML), rois.double().to(VKML), 1.0, 3, 3, 2, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale, pooled", [(1.0, (3, 3)), (0.5, (4, 3)), (0.25, (2, 5))])
def test_roi_pool_forward_argmax_and_backward(dtype, scale, pooled):
    # Integer-valued inputs make ties, which the first place in row-major order wins.
    g = torch.Generator().manual_seed(7)
    x = torch.randint(-20, 20, (2, 3, 12, 14), generator=g).to(dtype)
    outside = torch.tensor([[1, 1000, 1000, 1200, 1200]], dtype=dtype)  # empty bins: argmax -1
    rois = torch.cat([_rois(20, 2, 14 / scale, dtype=dtype), outside])
    out, argmax = roi_pool(x.to(VKML).requires_grad_(), rois.to(VKML), scale, *pooled)
    expected, expected_argmax = roi_pool_reference(x, rois, scale, *pooled)
    assert out.dtype == dtype and argmax.dtype == torch.int32
    assert torch.equal(out.detach().cpu(), expected)
    assert torch.equal(argmax.cpu(), expected_argmax)
    assert (expected_argmax[-1] == -1).all() and (expected_argmax[:-1] >= 0).any()

    grad = torch.randn(out.shape, generator=g, dtype=dtype)
    leaf = x.to(VKML).requires_grad_()
    out, _ = roi_pool(leaf, rois.to(VKML), scale, *pooled)
    out.backward(grad.to(VKML))
    cpu_leaf = x.clone().requires_grad_()
    roi_pool_reference(cpu_leaf, rois, scale, *pooled)[0].backward(grad)
    torch.testing.assert_close(leaf.grad.cpu(), cpu_leaf.grad, atol=1e-5, rtol=1e-6)


def test_roi_pool_half_and_empty():
    g = torch.Generator().manual_seed(8)
    x, rois = torch.randn(1, 2, 9, 9, generator=g), _rois(6, 1, 9)
    out, argmax = roi_pool(x.half().to(VKML), rois.half().to(VKML), 1.0, 2, 2)
    assert out.dtype == torch.float16
    expected, expected_argmax = roi_pool_reference(x.half().float(), rois.half().float(), 1.0, 2, 2)
    assert torch.equal(out.cpu().float(), expected) and torch.equal(argmax.cpu(), expected_argmax)
    out, argmax = roi_pool(x.to(VKML), torch.zeros(0, 5, device=VKML), 1.0, 2, 2)
    assert out.shape == argmax.shape == (0, 2, 2, 2)


def test_autocast_runs_them_in_float32():
    """As torchvision's autocast for CUDA: float32 inside, the input's dtype out."""
    g = torch.Generator().manual_seed(3)
    x, rois = torch.randn(1, 2, 8, 8, generator=g), _rois(4, 1, 8)
    with torch.autocast(VKML, dtype=torch.float16):
        out = roi_align(x.half().to(VKML), rois.to(VKML), 1.0, 2, 2, 2, False)
        keep = nms(*(t.half().to(VKML) for t in _boxes(40)), 0.5)
        pooled, argmax = roi_pool(x.half().to(VKML), rois.to(VKML), 1.0, 2, 2)
    assert out.dtype == torch.float16 and keep.dtype == torch.int64
    assert pooled.dtype == torch.float16 and argmax.dtype == torch.int32
    expected = roi_align_reference(x.half().double(), rois.double(), 1.0, 2, 2, 2, False)
    torch.testing.assert_close(out.cpu().double(), expected, atol=2e-3, rtol=2e-3)
    assert torch.equal(keep.cpu(), nms_reference(*(t.half() for t in _boxes(40)), 0.5))


def test_float64_without_device_float64_takes_the_counted_cpu_route():
    run = run_python(
        """
        import torch, torch_vkml
        from detection_reference import nms, nms_reference, roi_align, roi_align_reference
        from detection_reference import roi_pool, roi_pool_reference
        assert not torch_vkml.get_device_properties().supports_fp64
        boxes = torch.rand(50, 2, dtype=torch.float64) * 50
        boxes = torch.cat([boxes, boxes + 10], 1)
        scores = torch.rand(50, dtype=torch.float64)
        keep = nms(boxes.to("vkml"), scores.to("vkml"), 0.4)
        assert torch.equal(keep.cpu(), nms_reference(boxes, scores, 0.4))
        x = torch.randn(1, 2, 6, 6, dtype=torch.float64)
        rois = torch.tensor([[0.0, 0.5, 1.0, 4.0, 5.5]], dtype=torch.float64)
        out = roi_align(x.to("vkml"), rois.to("vkml"), 1.0, 2, 2, 2, True)
        torch.testing.assert_close(out.cpu(), roi_align_reference(x, rois, 1.0, 2, 2, 2, True))
        out, argmax = roi_pool(x.to("vkml"), rois.to("vkml"), 1.0, 2, 2)
        expected, expected_argmax = roi_pool_reference(x, rois, 1.0, 2, 2)
        assert torch.equal(out.cpu(), expected) and torch.equal(argmax.cpu(), expected_argmax)
        counts = torch_vkml.fallback_counts()
        assert set(counts) == {
            "torchvision::nms", "torchvision::roi_align", "torchvision::roi_pool"
        }, counts
        print("ok")
        """,
        env={"TORCH_VKML_NO_FP64": "1", "PYTHONPATH": _tests_path()},
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def _tests_path():
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    return os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
