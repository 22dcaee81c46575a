"""Convolution (plain and transposed, 1-3 spatial dims) forward and gradients vs the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import MATMUL_TOLERANCES, assert_grads_close_to_cpu, assert_same, make, to_device

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = MATMUL_TOLERANCES[torch.float32]  # sums of up to a few hundred products
F16_TOL = dict(atol=3e-2, rtol=2e-2)  # fp16 storage of inputs and results, fp32 math


def _leaf(shape, dtype=torch.float32):
    return make(shape, dtype, low=-1, high=1).requires_grad_()


def check_conv(fn, x, w, b, dtype=torch.float32):
    """Forward and the gradients of x, w and b against the CPU.

    float16 runs against the CPU in float32 on the same (fp16-rounded) values.
    """
    if dtype == torch.float32:
        assert_grads_close_to_cpu(fn, x, w, *([] if b is None else [b]), **TOL)
        return
    inputs = [t for t in (x, w, b) if t is not None]
    cpu = [t.detach().to(dtype).float().requires_grad_() for t in inputs]
    vk = [t.detach().to(dtype).to("vkml").requires_grad_() for t in inputs]
    expected, actual = fn(*cpu), fn(*vk)
    assert actual.dtype == torch.float16
    assert_same(actual.float(), expected, where="forward", **F16_TOL)
    grad = make(expected.shape, low=-1, high=1).to(dtype)
    expected.backward(grad.float())
    actual.backward(grad.to("vkml"))
    for i, (c, v) in enumerate(zip(cpu, vk, strict=True)):
        assert v.grad.dtype == torch.float16
        assert_same(v.grad.float(), c.grad, where=f"grad[{i}]", **F16_TOL)


# (N, Cin, spatial, Cout, kernel, stride, padding, dilation, groups, bias)
CONV2D = {
    "3x3": (2, 3, (7, 6), 4, 3, 1, 1, 1, 1, True),
    "stride2_nobias": (2, 3, (9, 8), 5, 3, 2, 0, 1, 1, False),
    "pad2_rect": (1, 4, (5, 7), 3, (3, 5), (2, 1), (1, 2), 1, 1, True),
    "dilation2": (2, 3, (9, 9), 4, 3, 1, 2, 2, 1, True),
    "groups2": (2, 4, (6, 5), 6, 3, 2, 1, 1, 2, True),
    "depthwise": (2, 6, (7, 7), 6, 5, 1, 2, 1, 6, True),
    "1x1": (2, 8, (5, 5), 4, 1, 1, 0, 1, 1, True),
    # 8+ channels per group: the tiled implicit GEMM kernel
    "wide": (2, 8, (6, 7), 12, 3, 2, 1, 1, 1, True),
    "wide_groups2_dilation": (1, 16, (7, 6), 18, 3, 1, 2, 2, 2, True),
    "wide_many_tiles": (3, 40, (9, 9), 36, 3, 1, 1, 1, 1, False),
}


@pytest.mark.parametrize("case", list(CONV2D))
def test_conv2d(case):
    n, ci, sp, co, k, s, p, d, g, bias = CONV2D[case]
    ks = (k, k) if isinstance(k, int) else k
    x = _leaf((n, ci, *sp))
    w = _leaf((co, ci // g, *ks))
    b = _leaf(co) if bias else None

    def fn(x, w, b=None):
        return F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)

    check_conv(fn, x, w, b)


@pytest.mark.parametrize("case", ["3x3", "groups2", "dilation2", "wide_groups2_dilation"])
def test_conv2d_float16(case):
    n, ci, sp, co, k, s, p, d, g, bias = CONV2D[case]
    x, w, b = _leaf((n, ci, *sp)), _leaf((co, ci // g, k, k)), _leaf(co)

    def fn(x, w, b):
        return F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)

    check_conv(fn, x, w, b, torch.float16)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv1d(groups):
    x, w, b = _leaf((2, 4, 11)), _leaf((6, 4 // groups, 3)), _leaf(6)
    check_conv(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=groups), x, w, b)
    check_conv(
        lambda x, w, b: F.conv1d(x, w, b, dilation=2, padding="same"), x, _leaf((6, 4, 3)), b
    )
    x, w, b = _leaf((2, 8, 13)), _leaf((10, 8 // groups, 5)), _leaf(10)  # implicit GEMM
    check_conv(
        lambda x, w, b: F.conv1d(x, w, b, stride=3, padding=2, dilation=2, groups=groups), x, w, b
    )


def test_conv3d():
    x, w, b = _leaf((2, 2, 5, 6, 5)), _leaf((3, 2, 3, 3, 3)), _leaf(3)
    check_conv(lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1), x, w, b)
    check_conv(lambda x, w, b: F.conv3d(x, w, b, dilation=2, padding=(2, 1, 0)), x, w, b)
    x, w, b = _leaf((1, 8, 4, 5, 4)), _leaf((9, 8, 3, 2, 3)), _leaf(9)  # implicit GEMM
    check_conv(lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=1), x, w, b)


# (N, Cin, spatial, Cout, kernel, stride, padding, output_padding, dilation, groups)
CONV_T2D = {
    "basic": (2, 3, (5, 4), 4, 3, 1, 0, 0, 1, 1),
    "stride2_outpad": (2, 4, (4, 5), 3, 3, 2, 1, 1, 1, 1),
    "groups2_dilation": (1, 4, (5, 5), 6, 3, 2, 1, 0, 2, 2),
    "rect": (2, 2, (3, 6), 3, (2, 4), (3, 1), (0, 1), (2, 0), 1, 1),
    "wide": (2, 8, (4, 5), 10, 3, 2, 1, 1, 1, 1),
    "wide_groups2": (1, 16, (4, 4), 20, (3, 2), (2, 1), 1, (1, 0), 2, 2),
}


@pytest.mark.parametrize("case", list(CONV_T2D))
def test_conv_transpose2d(case):
    n, ci, sp, co, k, s, p, op, d, g = CONV_T2D[case]
    ks = (k, k) if isinstance(k, int) else k
    x, w, b = _leaf((n, ci, *sp)), _leaf((ci, co // g, *ks)), _leaf(co)

    def fn(x, w, b):
        return F.conv_transpose2d(
            x, w, b, stride=s, padding=p, output_padding=op, groups=g, dilation=d
        )

    check_conv(fn, x, w, b)


def test_conv_transpose2d_float16():
    x, w, b = _leaf((2, 4, 4, 5)), _leaf((4, 3, 3, 3)), _leaf(3)
    check_conv(
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        x,
        w,
        b,
        torch.float16,
    )


def test_conv_transpose1d_and_3d():
    x, w, b = _leaf((2, 3, 6)), _leaf((3, 2, 4)), _leaf(2)
    check_conv(lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1), x, w, b)
    x, w = _leaf((1, 2, 3, 4, 3)), _leaf((2, 2, 2, 3, 2))
    check_conv(lambda x, w: F.conv_transpose3d(x, w, stride=2, output_padding=1), x, w, None)


def test_noncontiguous_input_and_unbatched():
    x = _leaf((2, 7, 6, 3))  # channels last storage, viewed as NCHW
    w, b = _leaf((4, 3, 3, 3)), _leaf(4)
    check_conv(lambda x, w, b: F.conv2d(x.permute(0, 3, 1, 2), w, b, padding=1), x, w, b)
    check_conv(lambda x, w, b: F.conv2d(x[0].permute(2, 0, 1), w, b), x, w, b)


def test_weight_grad_long_k():
    """A weight grad with few output tiles and a long K (batch x positions = 16384): split
    into K slices, on 32 x 32 tiles on CPU devices and 64 x 64 ones on GPUs
    (ops/launch.h). Sums of 16384 products: tolerance scaled to match."""
    x, w = _leaf((16, 16, 32, 32)), _leaf((32, 16, 3, 3))
    assert_grads_close_to_cpu(lambda a, b: F.conv2d(a, b, padding=1), x, w, atol=2e-3, rtol=1e-3)


def test_grad_of_input_only():
    """output_mask: weights and bias that need no gradient get none."""
    x, w, b = make((2, 3, 6, 6)).requires_grad_(), make((4, 3, 3, 3)), make(4)
    vx = to_device(x, "vkml")
    F.conv2d(vx, w.to("vkml"), b.to("vkml")).sum().backward()
    F.conv2d(x, w, b).sum().backward()
    assert_same(vx.grad, x.grad, **TOL)


def test_empty_batch():
    x, w, b = make((0, 3, 5, 5)), make((4, 3, 3, 3)), make(4)
    out = F.conv2d(x.to("vkml"), w.to("vkml"), b.to("vkml"))
    assert out.shape == (0, 4, 3, 3) and out.device.type == "vkml"


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize(
    "module",
    [
        lambda: torch.nn.Conv1d(3, 4, 3, padding=1),
        lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False),
        lambda: torch.nn.Conv2d(4, 4, 3, groups=4, padding="same", padding_mode="zeros"),
        lambda: torch.nn.Conv3d(2, 3, 2),
        lambda: torch.nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1),
    ],
    ids=["Conv1d", "Conv2d", "Conv2d_depthwise", "Conv3d", "ConvTranspose2d"],
)
def test_modules(module, train):
    torch.manual_seed(0)
    cpu = module().train(train)
    vk = module().train(train)
    vk.load_state_dict(cpu.state_dict())
    vk = vk.to("vkml")
    nd = {"Conv1d": 1, "Conv3d": 3}.get(type(cpu).__name__, 2)
    x = make((2, cpu.in_channels, *([5] * nd)), low=-1, high=1)
    assert_same(vk(x.to("vkml")), cpu(x), **TOL)
    cpu(x).square().sum().backward()
    vk(x.to("vkml")).square().sum().backward()
    for (name, pc), pv in zip(cpu.named_parameters(), vk.parameters(), strict=True):
        assert_same(pv.grad, pc.grad, where=name, atol=1e-3, rtol=1e-4)


def test_errors_like_cpu():
    x = make((1, 3, 5, 5))
    for bad in [make((4, 2, 3, 3)), make((4, 3, 7, 7))]:  # wrong channels, kernel too big
        with pytest.raises(RuntimeError):
            F.conv2d(x, bad)
        with pytest.raises(RuntimeError):
            F.conv2d(x.to("vkml"), bad.to("vkml"))


def test_tiny_cnn_trains_like_cpu():
    """Conv2d-BatchNorm2d-ReLU-MaxPool2d-AdaptiveAvgPool2d-Linear, two SGD steps."""

    def net():
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 8, 3, padding=1, groups=2),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(8, 4),
        )

    torch.manual_seed(0)
    cpu = net()
    vk = net()
    vk.load_state_dict(cpu.state_dict())
    vk = vk.to("vkml")
    opt_c = torch.optim.SGD(cpu.parameters(), lr=0.1)
    opt_v = torch.optim.SGD(vk.parameters(), lr=0.1)
    x = make((4, 3, 8, 8), low=-1, high=1)
    y = torch.tensor([0, 1, 2, 3])
    for step in range(2):
        lc = F.cross_entropy(cpu(x), y)
        lv = F.cross_entropy(vk(x.to("vkml")), y.to("vkml"))
        assert_same(lv, lc, where=f"loss {step}", atol=1e-4, rtol=1e-4)
        for opt, loss in ((opt_c, lc), (opt_v, lv)):
            opt.zero_grad()
            loss.backward()
            opt.step()
    for (name, pc), pv in zip(cpu.state_dict().items(), vk.state_dict().values(), strict=True):
        assert_same(pv, pc, where=name, atol=1e-4, rtol=1e-4)
