"""torchvision's detection ops (nms, roi_align, roi_pool) for test_detection.py:
torchvision's own where it loads (a torch it was built for), else the same schemas
defined here, with references of torchvision's semantics written in plain torch ops as
their CPU kernels and the autograd formula torchvision registers. vkml's kernels
(csrc/aten/ops_detection.cpp) attach to either by the op names."""

import math

import torch


def _has_torchvision_ops():
    try:
        import torchvision  # noqa: F401

        return torch.ops.torchvision.nms.default is not None
    except Exception:  # not installed, or built for another torch
        return False


def nms_reference(boxes, scores, iou_threshold):
    """Kept indices, by decreasing score (ties by index), as torchvision's CPU kernel."""
    order = torch.sort(scores.double(), stable=True, descending=True).indices.tolist()
    b = boxes.double().tolist()
    suppressed, keep = set(), []
    for pos, i in enumerate(order):
        if i in suppressed:
            continue
        keep.append(i)
        x1, y1, x2, y2 = b[i]
        area = (x2 - x1) * (y2 - y1)
        for j in order[pos + 1 :]:
            u1, v1, u2, v2 = b[j]
            w = max(0.0, min(x2, u2) - max(x1, u1))
            h = max(0.0, min(y2, v2) - max(y1, v1))
            inter = w * h
            union = area + (u2 - u1) * (v2 - v1) - inter
            if union != 0 and inter / union > iou_threshold:
                suppressed.add(j)
    return torch.tensor(keep, dtype=torch.int64)


def _bilinear(plane, y, x):
    """plane [C, H, W] at (y, x), torchvision's rules: 0 beyond one pixel outside,
    clamped within it."""
    height, width = plane.shape[-2:]
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return plane.new_zeros(plane.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y_lo, x_lo = int(y), int(x)
    if y_lo >= height - 1:
        y_lo = y_hi = height - 1
        y = float(y_lo)
    else:
        y_hi = y_lo + 1
    if x_lo >= width - 1:
        x_lo = x_hi = width - 1
        x = float(x_lo)
    else:
        x_hi = x_lo + 1
    ly, lx = y - y_lo, x - x_lo
    hy, hx = 1.0 - ly, 1.0 - lx
    return (
        hy * hx * plane[:, y_lo, x_lo]
        + hy * lx * plane[:, y_lo, x_hi]
        + ly * hx * plane[:, y_hi, x_lo]
        + ly * lx * plane[:, y_hi, x_hi]
    )


def roi_align_reference(
    input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned
):
    """torchvision's roi_align in differentiable torch ops (so autograd gives the
    backward), in input's dtype with the coordinates in Python floats (double)."""
    offset = 0.5 if aligned else 0.0
    pooled = []
    for roi in rois.double().tolist():
        plane = input[int(roi[0])]
        start_x, start_y = roi[1] * spatial_scale - offset, roi[2] * spatial_scale - offset
        roi_w = roi[3] * spatial_scale - offset - start_x
        roi_h = roi[4] * spatial_scale - offset - start_y
        if not aligned:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / pooled_height, roi_w / pooled_width
        grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_h / pooled_height)
        grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_w / pooled_width)
        count = max(grid_h * grid_w, 1)
        bins = []
        for py in range(pooled_height):
            for px in range(pooled_width):
                acc = input.new_zeros(input.shape[1])
                for iy in range(grid_h):
                    y = start_y + py * bin_h + (iy + 0.5) * bin_h / grid_h
                    for ix in range(grid_w):
                        x = start_x + px * bin_w + (ix + 0.5) * bin_w / grid_w
                        acc = acc + _bilinear(plane, y, x)
                bins.append(acc / count)
        pooled.append(torch.stack(bins, -1).reshape(-1, pooled_height, pooled_width))
    if not pooled:
        return input.new_zeros(0, input.shape[1], pooled_height, pooled_width)
    return torch.stack(pooled)


def roi_pool_reference(input, rois, spatial_scale, pooled_height, pooled_width):
    """torchvision's roi_pool: each bin's maximum and where it is (h * width + w in its
    plane, -1 for an empty bin, whose maximum is 0). The roi's corners are scaled in
    input's dtype and rounded half away from zero; bins are cut in input's dtype.
    Differentiable in input (the maximum's gradient goes to its first place)."""
    k, (c, height, width) = rois.shape[0], input.shape[1:]
    dt = input.dtype
    out = input.new_zeros(k, c, pooled_height, pooled_width)
    argmax = torch.full((k, c, pooled_height, pooled_width), -1, dtype=torch.int32)
    scale = torch.tensor(spatial_scale, dtype=dt)

    def corner(v):
        v = float(v.to(dt) * scale)
        return int(math.copysign(math.floor(abs(v) + 0.5), v))

    values = []
    for n in range(k):
        roi = rois[n]
        start_w, start_h = corner(roi[1]), corner(roi[2])
        roi_w = max(corner(roi[3]) - start_w + 1, 1)
        roi_h = max(corner(roi[4]) - start_h + 1, 1)
        bin_h = torch.tensor(roi_h, dtype=dt) / pooled_height
        bin_w = torch.tensor(roi_w, dtype=dt) / pooled_width
        for ph in range(pooled_height):
            h0 = min(max(int((ph * bin_h).floor()) + start_h, 0), height)
            h1 = min(max(int(((ph + 1) * bin_h).ceil()) + start_h, 0), height)
            for pw in range(pooled_width):
                w0 = min(max(int((pw * bin_w).floor()) + start_w, 0), width)
                w1 = min(max(int(((pw + 1) * bin_w).ceil()) + start_w, 0), width)
                if h1 <= h0 or w1 <= w0:
                    values.append(input.new_zeros(c))
                    continue
                region = input[int(roi[0]), :, h0:h1, w0:w1].reshape(c, -1)
                best, at = region.max(1)
                values.append(best)
                argmax[n, :, ph, pw] = ((h0 + at // (w1 - w0)) * width + w0 + at % (w1 - w0)).int()
    if values:  # in (roi, bin) order, each [c]
        out = torch.stack(values, -1).reshape(c, k, -1).permute(1, 0, 2)
        out = out.reshape(k, c, pooled_height, pooled_width)
    return out, argmax


def _define_ops():
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define(
        "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
        "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"
    )
    lib.define(
        "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, "
        "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
        "SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor"
    )

    lib.define(
        "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
        "SymInt pooled_width) -> (Tensor, Tensor)"
    )
    lib.define(
        "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
        "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
        "SymInt height, SymInt width) -> Tensor"
    )

    def nms_cpu(dets, scores, iou_threshold):
        return nms_reference(dets, scores, iou_threshold)

    def roi_align_cpu(input, rois, *args):
        return roi_align_reference(input, rois, *args)

    def roi_align_backward_cpu(grad, rois, scale, ph, pw, n, c, h, w, sampling, aligned):
        x = grad.new_zeros(n, c, h, w, requires_grad=True)
        with torch.enable_grad():
            out = roi_align_reference(x, rois, scale, ph, pw, sampling, aligned)
            (result,) = torch.autograd.grad(out, x, grad, allow_unused=True)
        return torch.zeros_like(x) if result is None else result.detach()

    def roi_pool_cpu(input, rois, scale, ph, pw):
        out, argmax = roi_pool_reference(input, rois, scale, ph, pw)
        return out.detach(), argmax

    def roi_pool_backward_cpu(grad, rois, argmax, scale, ph, pw, n, c, h, w):
        grad_input = grad.new_zeros(n, c, h * w)
        k = rois.shape[0]
        batch = rois[:, 0].long().view(k, 1, 1).expand(k, c, ph * pw)
        channel = torch.arange(c).view(1, c, 1).expand(k, c, ph * pw)
        at = argmax.reshape(k, c, -1).long()
        hit = at >= 0
        grad_input.index_put_(
            (batch[hit], channel[hit], at[hit]), grad.reshape(k, c, -1)[hit], accumulate=True
        )
        return grad_input.view(n, c, h, w)

    lib.impl("nms", nms_cpu, "CPU")
    lib.impl("roi_pool", roi_pool_cpu, "CPU")
    lib.impl("_roi_pool_backward", roi_pool_backward_cpu, "CPU")
    lib.impl("roi_align", roi_align_cpu, "CPU")
    lib.impl("_roi_align_backward", roi_align_backward_cpu, "CPU")

    # torchvision's autograd formula for roi_align.
    def setup_context(ctx, inputs, output):
        input, rois, scale, ph, pw, sampling, aligned = inputs
        ctx.save_for_backward(rois)
        ctx.args = (scale, ph, pw, *input.shape, sampling, aligned)

    def backward(ctx, grad):
        (rois,) = ctx.saved_tensors
        scale, ph, pw, n, c, h, w, sampling, aligned = ctx.args
        grad_input = torch.ops.torchvision._roi_align_backward(
            grad, rois, scale, ph, pw, n, c, h, w, sampling, aligned
        )
        return grad_input, None, None, None, None, None, None

    torch.library.register_autograd(
        "torchvision::roi_align", backward, setup_context=setup_context, lib=lib
    )

    # and for roi_pool: the gradient goes to each bin's argmax.
    def pool_setup_context(ctx, inputs, output):
        input, rois, scale, ph, pw = inputs
        ctx.save_for_backward(rois, output[1])
        ctx.args = (scale, ph, pw, *input.shape)

    def pool_backward(ctx, grad, _grad_argmax):
        rois, argmax = ctx.saved_tensors
        grad_input = torch.ops.torchvision._roi_pool_backward(grad, rois, argmax, *ctx.args)
        return grad_input, None, None, None, None

    torch.library.register_autograd(
        "torchvision::roi_pool", pool_backward, setup_context=pool_setup_context, lib=lib
    )
    return lib


TORCHVISION = _has_torchvision_ops()
_LIBRARY = None if TORCHVISION else _define_ops()

nms = torch.ops.torchvision.nms
roi_align = torch.ops.torchvision.roi_align
roi_pool = torch.ops.torchvision.roi_pool
