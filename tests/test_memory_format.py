"""Channels-last layouts kept as the CPU and CUDA keep them.

A model converted with ``.to(memory_format=torch.channels_last)`` (CUDA's advice for
convolutions on tensor cores) passes its layout from layer to layer: convolution,
batch and group norm, pooling, upsampling, padding, cat and the rearrangements give
channels-last results for channels-last inputs. vkml gave contiguous ones for all
but convolution and elementwise ops, so a layer after them saw another layout than on
the CPU (values were right). Results are compared with the CPU's: values to 1e-5, and
whether each is channels-last (3d).
"""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import VKML

pytestmark = pytest.mark.usefixtures("no_fallback")

CL, CL3 = torch.channels_last, torch.channels_last_3d


def _x4():
    return torch.randn(2, 6, 8, 8).to(memory_format=CL)


def _x5():
    return torch.randn(2, 6, 4, 8, 8).to(memory_format=CL3)


def _layout(t):
    fmt = CL if t.dim() == 4 else CL3
    return t.is_contiguous(memory_format=fmt) and not t.is_contiguous()


OPS = {
    "max_pool2d": (_x4, lambda t: F.max_pool2d(t, 2)),
    "max_pool2d_indices": (_x4, lambda t: F.max_pool2d(t, 2, return_indices=True)[1]),
    "max_pool3d": (_x5, lambda t: F.max_pool3d(t, 2)),
    "avg_pool2d": (_x4, lambda t: F.avg_pool2d(t, 2)),
    "avg_pool3d": (_x5, lambda t: F.avg_pool3d(t, 2)),  # contiguous on the CPU
    "adaptive_avg_pool2d": (_x4, lambda t: F.adaptive_avg_pool2d(t, 3)),
    "adaptive_max_pool2d": (_x4, lambda t: F.adaptive_max_pool2d(t, 3)),
    "nearest2d": (_x4, lambda t: F.interpolate(t, scale_factor=2)),
    "nearest3d": (_x5, lambda t: F.interpolate(t, scale_factor=2)),
    "bilinear": (_x4, lambda t: F.interpolate(t, scale_factor=2, mode="bilinear")),
    "bicubic": (_x4, lambda t: F.interpolate(t, scale_factor=2, mode="bicubic")),
    "trilinear": (_x5, lambda t: F.interpolate(t, scale_factor=2, mode="trilinear")),
    "bilinear_antialias": (_x4, lambda t: F.interpolate(t, 5, mode="bilinear", antialias=True)),
    "batch_norm": (_x4, lambda t: F.batch_norm(t, None, None, training=True)),
    "batch_norm3d": (_x5, lambda t: F.batch_norm(t, None, None, training=True)),
    "group_norm": (_x4, lambda t: F.group_norm(t, 2)),
    "group_norm3d": (_x5, lambda t: F.group_norm(t, 3)),
    "pixel_unshuffle": (_x4, lambda t: F.pixel_unshuffle(t, 2)),
    "pixel_shuffle": (_x4, lambda t: F.pixel_shuffle(torch.cat([t, t], 1)[:, :8], 2)),
    "cat_channels": (_x4, lambda t: torch.cat([t, t * 2], 1)),
    "cat_batch": (_x4, lambda t: torch.cat([t, t], 0)),
    "cat_width": (_x4, lambda t: torch.cat([t, t], -1)),
    "cat_channels3d": (_x5, lambda t: torch.cat([t, t], 1)),
    "cat_mixed_layouts": (_x4, lambda t: torch.cat([t, t.contiguous()], 1)),  # contiguous
    "reflection_pad": (_x4, lambda t: F.pad(t, (1, 2, 1, 1), mode="reflect")),
    "replication_pad3d": (_x5, lambda t: F.pad(t, (1, 1, 1, 1, 1, 1), mode="replicate")),
    "flip": (_x4, lambda t: t.flip(2, 3)),
    "roll": (_x4, lambda t: t.roll(1, 2)),
    "max_unpool2d": (_x4, lambda t: F.max_unpool2d(*F.max_pool2d(t, 2, return_indices=True), 2)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_channels_last_inputs_give_the_cpus_layout(name):
    make_input, fn = OPS[name]
    x = make_input()
    expected, actual = fn(x), fn(x.to(VKML))
    assert actual.is_vkml
    assert _layout(actual) == _layout(expected), (
        f"{name}: channels-last {_layout(expected)} on the CPU"
    )
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_channels_last_input_trains_like_the_cpu(training):
    # The kernels run on the [N*H*W, C] view of the memory: statistics, running
    # statistics and gradients as for a contiguous input.
    bn = nn.BatchNorm2d(6).train(training)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5), bn.bias.uniform_(-1, 1)
        bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2)
    bn_v = copy.deepcopy(bn).to(VKML)
    x = (torch.randn(4, 6, 5, 7) * 3 + 1).to(memory_format=CL).requires_grad_()
    xv = x.detach().to(VKML).requires_grad_()
    y, yv = bn(x), bn_v(xv)
    assert _layout(yv)
    torch.testing.assert_close(yv.cpu(), y, atol=1e-5, rtol=1e-5)
    g = torch.randn(4, 6, 5, 7)  # a contiguous gradient for a channels-last input
    y.backward(g)
    yv.backward(g.to(VKML))
    torch.testing.assert_close(xv.grad.cpu(), x.grad, atol=1e-5, rtol=1e-5)
    for p, q in [(bn.weight, bn_v.weight), (bn.bias, bn_v.bias)]:
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-5, rtol=1e-5)
    for name in ["running_mean", "running_var"]:
        torch.testing.assert_close(getattr(bn_v, name).cpu(), getattr(bn, name))


def test_channels_last_cnn_keeps_its_layout_through_a_training_step():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.GroupNorm(2, 8),
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.AdaptiveAvgPool2d(2),
    ).to(memory_format=CL)
    model_v = copy.deepcopy(model).to(VKML)
    x = torch.randn(4, 3, 16, 16).to(memory_format=CL)
    seen = []
    for m in model_v:
        m.register_forward_hook(lambda mod, inp, out: seen.append((type(mod).__name__, out)))
    loss = model(x).square().mean()
    loss_v = model_v(x.to(VKML)).square().mean()
    assert [n for n, out in seen if not _layout(out)] == []
    loss.backward()
    loss_v.backward()
    torch.testing.assert_close(loss_v.cpu(), loss, atol=1e-5, rtol=1e-5)
    for (name, p), q in zip(model.named_parameters(), model_v.parameters(), strict=True):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_backward_keeps_the_channels_last_layout_as_on_the_cpu():
    # From PyTorch's test_modules (test_memory_format): pooling, padding and convolution
    # gradients came back contiguous for channels-last inputs (and, for a convolution, a
    # channels-last weight with a contiguous input); the CPU's are channels-last.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 8, 8, generator=g)
    modules = [
        torch.nn.MaxPool2d(2),
        torch.nn.AvgPool2d(3, stride=2, padding=1),
        torch.nn.AdaptiveMaxPool2d(3),
        torch.nn.ReflectionPad2d(2),
        torch.nn.ReplicationPad2d(1),
        torch.nn.Conv2d(3, 4, 3),
    ]
    cl = torch.channels_last
    for m in modules:
        for x_format, m_format in ((cl, torch.contiguous_format), (torch.contiguous_format, cl)):
            if m_format == cl and not isinstance(m, torch.nn.Conv2d):
                continue
            layouts = []
            for dev in ("cpu", VKML):
                md = copy.deepcopy(m).to(dev).to(memory_format=m_format)
                xd = x.to(dev).contiguous(memory_format=x_format).requires_grad_()
                y = md(xd)
                y = y[0] if isinstance(y, tuple) else y
                gy = torch.rand(y.shape, generator=g).to(dev).contiguous(memory_format=cl)
                gx = torch.autograd.grad(y, xd, gy)[0]
                layouts.append(
                    (y.is_contiguous(memory_format=cl), gx.is_contiguous(memory_format=cl))
                )
            assert layouts[1] == layouts[0], (m, x_format, m_format, layouts)
