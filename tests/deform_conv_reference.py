"""torchvision's deform_conv2d for test_deform_conv.py: torchvision's own where it loads
(a torch it was built for), else the op's schemas defined here, with a reference of
torchvision's semantics in differentiable torch ops as its CPU kernel and the autograd
formula torchvision registers. vkml's kernels (csrc/aten/ops_deform_conv.cpp) attach to
either by the op names."""

import torch
from detection_reference import TORCHVISION


def deform_conv2d_reference(
    input, weight, offset, mask, bias, stride, padding, dilation, groups, offset_groups, use_mask
):
    """Deformable convolution as torchvision computes it: each kernel tap samples its
    input channel bilinearly at the tap's place moved by its offset (dy, dx), corners
    outside the plane as 0 and samples at or beyond one pixel outside as 0, scales the
    sample by its mask, and the taps are summed with the weights as in a convolution.
    Differentiable in every tensor (the floor of a position is held constant)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    batch, channels, height, width = input.shape
    out_channels, _, kh, kw = weight.shape
    oh = (height + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (width + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    kk, og = kh * kw, offset_groups
    off = offset.reshape(batch, og, kk, 2, oh, ow)
    tap_y = (torch.arange(kh) * dh).repeat_interleave(kw).view(1, 1, kk, 1, 1)
    tap_x = (torch.arange(kw) * dw).repeat(kh).view(1, 1, kk, 1, 1)
    y = (torch.arange(oh) * sh - ph).view(1, 1, 1, oh, 1) + tap_y + off[:, :, :, 0]
    x = (torch.arange(ow) * sw - pw).view(1, 1, 1, 1, ow) + tap_x + off[:, :, :, 1]
    y0, x0 = y.detach().floor(), x.detach().floor()
    ly, lx = y - y0, x - x0
    planes = input.reshape(batch, og, channels // og, height * width)

    def corner(yy, xx):
        inside = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        at = (yy.clamp(0, height - 1) * width + xx.clamp(0, width - 1)).long()
        at = at.reshape(batch, og, 1, -1).expand(-1, -1, planes.shape[2], -1)
        return torch.gather(planes, 3, at) * inside.reshape(batch, og, 1, -1)

    def flat(t):
        return t.reshape(batch, og, 1, -1)

    sample = (
        flat((1 - ly) * (1 - lx)) * corner(y0, x0)
        + flat((1 - ly) * lx) * corner(y0, x0 + 1)
        + flat(ly * (1 - lx)) * corner(y0 + 1, x0)
        + flat(ly * lx) * corner(y0 + 1, x0 + 1)
    )
    outside = (y <= -1) | (y >= height) | (x <= -1) | (x >= width)
    sample = sample * flat(~outside)
    if use_mask:
        sample = sample * flat(mask.reshape(batch, og, kk, oh, ow))
    # [batch, channels, kk, L] -> per weight group [batch, groups, channels / groups * kk, L]
    columns = sample.reshape(batch, groups, channels // groups * kk, oh * ow)
    w = weight.reshape(groups, out_channels // groups, -1)
    out = torch.einsum("gok,bgkl->bgol", w, columns).reshape(batch, out_channels, oh, ow)
    return out + bias.view(1, -1, 1, 1)


def _define_ops():
    lib = torch.library.Library("torchvision", "FRAGMENT")
    args = (
        "Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
        "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
        "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask"
    )
    lib.define(f"deform_conv2d({args}) -> Tensor")
    lib.define(
        f"_deform_conv2d_backward(Tensor grad, {args}) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"
    )

    def reference(input, weight, offset, mask, bias, sh, sw, ph, pw, dh, dw, g, og, use_mask):
        return deform_conv2d_reference(
            input, weight, offset, mask, bias, (sh, sw), (ph, pw), (dh, dw), g, og, use_mask
        )

    def forward_cpu(*args):
        return reference(*args)

    def backward_cpu(grad, input, weight, offset, mask, bias, *rest):
        leaves = [t.detach().requires_grad_() for t in (input, weight, offset, mask, bias)]
        with torch.enable_grad():
            out = reference(*leaves, *rest)
            grads = torch.autograd.grad(out, leaves, grad, allow_unused=True)
        return tuple(
            torch.zeros_like(t) if g is None else g.detach()
            for g, t in zip(grads, leaves, strict=True)
        )

    lib.impl("deform_conv2d", forward_cpu, "CPU")
    lib.impl("_deform_conv2d_backward", backward_cpu, "CPU")

    # torchvision's autograd formula for deform_conv2d.
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:5])
        ctx.args = inputs[5:]

    def backward(ctx, grad):
        grads = torch.ops.torchvision._deform_conv2d_backward(grad, *ctx.saved_tensors, *ctx.args)
        return (*grads, *([None] * len(ctx.args)))

    torch.library.register_autograd(
        "torchvision::deform_conv2d", backward, setup_context=setup_context, lib=lib
    )
    return lib


_LIBRARY = None if TORCHVISION else _define_ops()


def deform_conv2d(input, offset, weight, bias=None, stride=1, padding=0, dilation=1, mask=None):
    """torchvision.ops.deform_conv2d's arguments and defaults, through the op."""

    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    kh, kw = weight.shape[-2:]
    use_mask = mask is not None
    if mask is None:
        mask = torch.zeros((input.shape[0], 1), device=input.device, dtype=input.dtype)
    if bias is None:
        bias = torch.zeros(weight.shape[0], device=input.device, dtype=input.dtype)
    offset_groups = offset.shape[1] // (2 * kh * kw)
    groups = input.shape[1] // weight.shape[1]
    return torch.ops.torchvision.deform_conv2d(
        input, weight, offset, mask, bias, sh, sw, ph, pw, dh, dw, groups, offset_groups, use_mask
    )
