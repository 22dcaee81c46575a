"""Convolution (plain and transposed, 1-3 spatial dims) forward and gradients vs the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    LONG_TESTS,
    MATMUL_TOLERANCES,
    VKML,
    assert_grads_close_to_cpu,
    assert_same,
    kernels_run,
    make,
    to_device,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = MATMUL_TOLERANCES[torch.float32]  # sums of up to a few hundred products
# 16-bit storage of inputs and results, fp32 math
HALF_TOL = {
    torch.float16: dict(atol=3e-2, rtol=2e-2),
    torch.bfloat16: dict(atol=6e-2, rtol=3e-2),  # 8 significant bits: 4x fp16's rounding
}


def _leaf(shape, dtype=torch.float32):
    return make(shape, dtype, low=-1, high=1).requires_grad_()


def check_conv(fn, x, w, b, dtype=torch.float32):
    """Forward and the gradients of x, w and b against the CPU.

    float16 and bfloat16 run against the CPU in float32 on the same (rounded) values.
    """
    if dtype == torch.float32:
        assert_grads_close_to_cpu(fn, x, w, *([] if b is None else [b]), **TOL)
        return
    inputs = [t for t in (x, w, b) if t is not None]
    cpu = [t.detach().to(dtype).float().requires_grad_() for t in inputs]
    vk = [t.detach().to(dtype).to("vkml").requires_grad_() for t in inputs]
    expected, actual = fn(*cpu), fn(*vk)
    tol = HALF_TOL[dtype]
    assert actual.dtype == dtype
    assert_same(actual.float(), expected, where="forward", **tol)
    grad = make(expected.shape, low=-1, high=1).to(dtype)
    expected.backward(grad.float())
    actual.backward(grad.to("vkml"))
    for i, (c, v) in enumerate(zip(cpu, vk, strict=True)):
        assert v.grad.dtype == dtype
        assert_same(v.grad.float(), c.grad, where=f"grad[{i}]", **tol)


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


@pytest.mark.parametrize(
    "x_shape, w_shape, x_grad",
    [
        ((1, 4, 20_100), (1, 4, 20_000), False),  # a window of 80000 products per output
        ((18, 1, 250_000), (1, 1, 3), True),  # a weight gradient over 4.5M positions
    ],
    ids=["long_window", "weight_grad_over_4.5M_positions"],
)
def test_direct_kernel_loops_past_the_loop_limit(x_shape, w_shape, x_grad):
    """One thread of the direct kernel walks a whole window, or in the weight grad its
    share of every position; lavapipe ends loops past 65535 iterations silently, and such
    convolutions came out wrong (relative errors 0.8 to 1.0). Past half the limit the
    implicit GEMM, whose threads walk K in slices, runs them. Sums of up to 4.5M
    products, compared with the float64 computation (the CPU's float32 sums of 4.5M terms
    are as far from it as ours, or further): to 1e-4 of the largest result."""
    x, w = make(x_shape).requires_grad_(x_grad), _leaf(w_shape)
    xv, wv = to_device((x, w), VKML)
    x64, w64 = to_device((x, w), torch.float64)
    y, yv = F.conv1d(x64, w64), F.conv1d(xv, wv)
    g = make(y.shape)
    y.backward(g.double())
    yv.backward(g.to(VKML))

    def close(actual, expected):
        bound = 1e-4 * expected.abs().max().item()
        torch.testing.assert_close(actual.cpu().double(), expected, atol=bound, rtol=0)

    close(yv, y.detach())
    close(wv.grad, w64.grad)
    if x_grad:
        close(xv.grad, x64.grad)


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


# ------------------------------------------------- the matrix-unit kernel (fp16, bf16)

# (conv, N, Cin, spatial, Cout, kernel, stride, padding, dilation, groups): 32+ output rows
# and columns per group, so every implicit GEMM of forward and backward takes
# conv_coopmat.comp. Ragged tiles (rows, columns and K not multiples of 64 and 16), each
# mode: forward, data grad (plain, strided-and-dilated, by phases), weight grad.
MATRIX_UNIT_CONVS = {
    "3x3_ragged": (F.conv2d, 2, 36, (9, 11), 40, 3, 1, 1, 1, 1),
    "stride2_phases": (F.conv2d, 2, 40, (12, 10), 64, 3, 2, 1, 1, 1),
    "stride2_dilation2": (F.conv2d, 1, 32, (11, 9), 33, 3, 2, 2, 2, 1),
    "groups2_rect": (F.conv2d, 1, 64, (8, 7), 96, (3, 2), 1, (2, 0), 1, 2),
    "conv1d_k5": (F.conv1d, 3, 33, (40,), 48, 5, 1, 2, 1, 1),
    "conv3d": (F.conv3d, 2, 32, (4, 5, 6), 32, 3, 1, 1, 1, 1),
    "1x1_weight_grad": (F.conv2d, 2, 64, (6, 6), 64, 1, 1, 0, 1, 1),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(MATRIX_UNIT_CONVS))
def test_matrix_unit_conv_matches_cpu(case, dtype, emulated_matrix_units):
    conv, n, ci, sp, co, k, s, p, d, g = MATRIX_UNIT_CONVS[case]
    ks = (k,) * len(sp) if isinstance(k, int) else k
    x, w, b = _leaf((n, ci, *sp)), _leaf((co, ci // g, *ks)), _leaf(co)
    check_conv(
        lambda x, w, b: conv(x, w, b, stride=s, padding=p, dilation=d, groups=g), x, w, b, dtype
    )


def _conv_kernels(fn):
    """The names of the convolution kernels `fn` dispatches."""
    return kernels_run(fn, "conv")[1]


def test_matrix_unit_conv_is_the_one_run(emulated_matrix_units):
    x, w = _leaf((2, 36, 9, 11)), _leaf((40, 36, 3, 3))
    for dtype, name in (
        (torch.float16, "conv_coopmat_emulated"),
        (torch.bfloat16, "conv_coopmat_emulated_bf16"),
    ):
        xd, wd = (t.detach().to(dtype).to("vkml").requires_grad_() for t in (x, w))
        step = lambda xd=xd, wd=wd: F.conv2d(xd, wd, padding=1).sum().backward()  # noqa: E731
        assert _conv_kernels(step) == {name}  # forward, data grad and weight grad
        # 16 output channels: too few rows for a 64-row tile, conv_gemm.comp runs
        w16 = _leaf((16, 36, 3, 3)).detach().to(dtype).to("vkml")
        assert _conv_kernels(lambda xd=xd, w16=w16: F.conv2d(xd, w16, padding=1)) == {
            "conv_gemm_" + {torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
        }
    # float32 keeps conv_gemm.comp
    xf, wf = x.detach().to("vkml"), w.detach().to("vkml")
    assert _conv_kernels(lambda: F.conv2d(xf, wf, padding=1)) == {"conv_gemm_f32"}
    # with the matrix units off (TORCH_VKML_COOPMAT=0), fp16 keeps conv_gemm.comp too
    torch_vkml._C._set_coopmat_mode("0")
    xh, wh = x.detach().half().to("vkml"), w.detach().half().to("vkml")
    assert _conv_kernels(lambda: F.conv2d(xh, wh, padding=1)) == {"conv_gemm_f16"}


def test_matrix_unit_conv_trains_resnet_blocks_under_autocast(emulated_matrix_units):
    """torchvision-style basic blocks (conv-bn-relu, a strided downsample with a 1x1
    shortcut) under fp16 autocast with a GradScaler, two steps: loss and parameters
    against the same program on the CPU in float32 (autocast to fp16 there too)."""

    def block(cin, cout, stride):
        return torch.nn.Sequential(
            torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
            torch.nn.BatchNorm2d(cout),
            torch.nn.ReLU(),
            torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            torch.nn.BatchNorm2d(cout),
        )

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 32, 3, 1, 1)
            self.a = block(32, 32, 1)
            self.b = block(32, 64, 2)
            self.short = torch.nn.Conv2d(32, 64, 1, 2, bias=False)
            self.head = torch.nn.Linear(64, 10)

        def forward(self, x):
            x = F.relu(self.stem(x))
            x = F.relu(self.a(x) + x)
            x = F.relu(self.b(x) + self.short(x))
            return self.head(x.mean((2, 3)))

    torch.manual_seed(0)
    cpu = Net()
    vk = Net()
    vk.load_state_dict(cpu.state_dict())
    vk = vk.to("vkml")
    x = make((4, 3, 12, 12), low=-1, high=1)
    y = torch.tensor([0, 3, 5, 9])
    for model, dev in ((cpu, "cpu"), (vk, "vkml")):
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        scaler = torch.amp.GradScaler(dev)
        losses = []
        for _ in range(2):
            with torch.autocast(dev, dtype=torch.float16):
                loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.detach().float().cpu())
        model.losses = losses
    for i, (lc, lv) in enumerate(zip(cpu.losses, vk.losses, strict=True)):
        assert abs(lv.item() - lc.item()) < 2e-2, f"loss {i}: {lv.item()} vs {lc.item()}"
    for (name, pc), pv in zip(cpu.state_dict().items(), vk.state_dict().values(), strict=True):
        assert_same(pv, pc, where=name, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("layouts", ["input", "weight", "both", "neither"])
@pytest.mark.parametrize("transposed", [False, True])
def test_channels_last_gives_the_cpus_layout(layouts, transposed):
    """A 2-d convolution of a channels-last input or weight returns channels-last, as the
    CPU and cuDNN do (it came back contiguous before: same values, another layout);
    3-d ones stay contiguous, as on the CPU."""
    cl = torch.channels_last
    g = torch.Generator().manual_seed(50)
    x = torch.randn(2, 4, 7, 7, generator=g)
    w = torch.randn(4, 4, 3, 3, generator=g)
    if layouts in ("input", "both"):
        x = x.contiguous(memory_format=cl)
    if layouts in ("weight", "both"):
        w = w.contiguous(memory_format=cl)
    conv = F.conv_transpose2d if transposed else F.conv2d
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    xv, wv = x.to(VKML).requires_grad_(), w.to(VKML).requires_grad_()
    ref, out = conv(xc, wc, padding=1), conv(xv, wv, padding=1)
    assert out.is_contiguous(memory_format=cl) == ref.is_contiguous(memory_format=cl)
    assert out.is_contiguous() == ref.is_contiguous()
    torch.testing.assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4)
    grad = torch.randn(ref.shape, generator=g)
    ref.backward(grad)
    out.backward(grad.to(VKML))
    for got, want in ((xv.grad, xc.grad), (wv.grad, wc.grad)):
        assert got.is_contiguous(memory_format=cl) == want.is_contiguous(memory_format=cl)
        torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
    x3 = torch.randn(1, 2, 4, 5, 5, generator=g).contiguous(memory_format=torch.channels_last_3d)
    w3 = torch.randn(3, 2, 3, 3, 3, generator=g)
    y3 = F.conv3d(x3.to(VKML), w3.to(VKML))
    assert y3.is_contiguous() == F.conv3d(x3, w3).is_contiguous()


# (fn, x shape, w shape, b shape): every path of the float64 composition, plain and
# transposed (whose output padding leaves rows no window reaches).
FLOAT64_CONVS = {
    "2d_3x3": (lambda x, w, b: F.conv2d(x, w, b, padding=1), (2, 3, 7, 6), (4, 3, 3, 3), (4,)),
    "2d_strided_groups": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
        (2, 4, 9, 8),
        (6, 2, 3, 3),
        (6,),
    ),
    "2d_rect_dilated": (
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
        (1, 4, 9, 7),
        (3, 4, 3, 5),
        (3,),
    ),
    "2d_depthwise": (
        lambda x, w, b: F.conv2d(x, w, b, padding=2, groups=6),
        (2, 6, 7, 7),
        (6, 1, 5, 5),
        (6,),
    ),
    "1d_dilated_groups": (
        lambda x, w, b: F.conv1d(x, w, b, dilation=2, groups=2, stride=3),
        (2, 4, 17),
        (6, 2, 3),
        (6,),
    ),
    "3d": (
        lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
        (1, 2, 4, 6, 5),
        (3, 2, 3, 3, 2),
        (3,),
    ),
    "transpose2d_output_padding": (
        lambda x, w, b: F.conv_transpose2d(
            x, w, b, stride=2, padding=1, output_padding=1, groups=2
        ),
        (2, 4, 5, 4),
        (4, 3, 3, 3),
        (6,),
    ),
    "transpose1d_dilated": (
        lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, dilation=2),
        (2, 3, 6),
        (3, 2, 4),
        (2,),
    ),
    "transpose3d": (
        lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2),
        (1, 2, 3, 4, 3),
        (2, 3, 2, 3, 2),
        (3,),
    ),
}


@pytest.mark.parametrize("case", FLOAT64_CONVS)
def test_float64_convolutions_and_their_gradients_run_on_the_device(case):
    """float64 convolutions are composed of float64 kernels (windows to columns, a
    batched product per group, columns added back for the data gradient): forward, the
    three gradients and a second derivative (a physics-informed loss's) against the
    CPU within 1e-12, with no fallback."""
    fn, xs, ws, bs = FLOAT64_CONVS[case]
    cpu = [make(s, torch.float64, low=-2, high=2).requires_grad_() for s in (xs, ws, bs)]
    vk = [t.detach().to(VKML).requires_grad_() for t in cpu]
    for args in (cpu, vk):
        y = fn(*args)
        (gx,) = torch.autograd.grad(y.square().sum(), args[0], create_graph=True)
        gx.sin().sum().backward()  # through the gradient: the double backward
        args.append(y)
    torch.testing.assert_close(vk[3].detach().cpu(), cpu[3].detach(), rtol=1e-12, atol=1e-12)
    for v, c in zip(vk[:3], cpu[:3], strict=True):
        assert v.grad.dtype == torch.float64
        torch.testing.assert_close(v.grad.cpu(), c.grad, rtol=1e-11, atol=1e-11)


# A batch whose float64 columns pass 256 MiB goes in chunks (26 s on lavapipe): with
# TORCH_VKML_LONG_TESTS=1, defined only then.
if LONG_TESTS:

    def test_float64_batches_whose_columns_are_large_go_in_chunks():
        x = make((26, 64, 48, 48), torch.float64).requires_grad_()  # 276 MiB of columns
        w = make((2, 64, 3, 3), torch.float64).requires_grad_()
        fn = lambda x, w: F.conv2d(x, w, padding=1)  # noqa: E731
        assert_grads_close_to_cpu(fn, x, w, rtol=1e-12, atol=1e-10)


def test_integer_convolutions_take_the_counted_cpu_route():
    """Integer convolutions have no kernels: the counted CPU route (through
    aten::convolution: the CPU has no convolution_overrideable)."""
    x = make((2, 4, 9, 9), torch.float32, low=-3, high=3).to(torch.int64)
    w = make((6, 2, 3, 3), torch.float32, low=-2, high=2).to(torch.int64)
    b = make((6,), torch.float32).to(torch.int64)
    torch_vkml.reset_fallback_counts()
    for fn in (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
        lambda x, w, b: F.conv_transpose2d(x, w[:4], stride=2),
        lambda x, w, b: F.conv1d(x[:, :, 0], w[:, :, 0], b, dilation=2, groups=2),
    ):
        assert torch.equal(fn(x.to(VKML), w.to(VKML), b.to(VKML)).cpu(), fn(x, w, b))
    assert "aten::convolution" in torch_vkml.fallback_counts()
    torch_vkml.reset_fallback_counts()  # counted above, as this test expects
