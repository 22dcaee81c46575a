"""Batch / layer / group / instance norm forward, backward and running stats vs the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    FLOAT_DTYPES,
    VKML,
    assert_grads_close_to_cpu,
    assert_same,
    dtype_id,
    leaf,
    make,
    to_device,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.float16: dict(atol=2e-2, rtol=2e-2)}


# ------------------------------------------------------------------ batch norm


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 4, 5, 6), (2, 2, 3, 4, 3)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_functional(shape, training, affine, dtype):
    c = shape[1]
    x = leaf(shape, dtype)
    w = leaf(c, dtype, low=0.5, high=2) if affine else None
    b = leaf(c, dtype) if affine else None
    rm, rv = make(c, dtype), make(c, dtype, low=0.5, high=2)
    cpu_stats, vk_stats = (rm, rv), to_device((rm, rv), "vkml")
    stats = {"cpu": cpu_stats, "vkml": vk_stats}

    def fn(x, w=None, b=None):
        m, v = stats[x.device.type]
        return F.batch_norm(x, m, v, w, b, training=training, momentum=0.3, eps=1e-3)

    assert_grads_close_to_cpu(fn, x, *([w, b] if affine else []), **TOL[dtype])
    # running statistics were updated in place by the forward pass (twice: cpu, vkml)
    assert_same(vk_stats[0], cpu_stats[0], **TOL[dtype])
    assert_same(vk_stats[1], cpu_stats[1], **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(4, 2, 96, 96), (3, 5, 70, 111)], ids=["8-parts", "ragged"])
def test_batch_norm_split_over_parts(shape, dtype):
    """Few channels of many elements: statistics and backward sums split into parts
    per channel (norm.comp modes 6-10), added in order. An offset of 100 checks that the
    variance still comes from squared deviations (two passes), not from sums of squares."""
    c = shape[1]
    x = (make(shape, dtype) + 100.0).to(dtype).requires_grad_()
    w, b = leaf(c, dtype, low=0.5, high=2), leaf(c, dtype)
    rm, rv = make(c, dtype), make(c, dtype, low=0.5, high=2)
    stats = {"cpu": (rm, rv), "vkml": to_device((rm, rv), "vkml")}

    def fn(x, w, b):
        m, v = stats[x.device.type]
        return F.batch_norm(x, m, v, w, b, training=True, momentum=0.3, eps=1e-3)

    assert_grads_close_to_cpu(fn, x, w, b, **TOL[dtype])
    assert_same(stats["vkml"][0], stats["cpu"][0], **TOL[dtype])
    assert_same(stats["vkml"][1], stats["cpu"][1], **TOL[dtype])


def test_batch_norm_without_running_stats():
    x, w, b = leaf((3, 4, 5)), leaf(4), leaf(4)
    assert_grads_close_to_cpu(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, True), x, w, b, **TOL[torch.float32]
    )


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize(
    "make_module, shape",
    [
        (lambda: torch.nn.BatchNorm1d(4), (5, 4)),
        (lambda: torch.nn.BatchNorm1d(3, momentum=None), (2, 3, 6)),
        (lambda: torch.nn.BatchNorm2d(3), (2, 3, 5, 4)),
        (lambda: torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False), (2, 3, 4, 4)),
        (lambda: torch.nn.InstanceNorm2d(3), (2, 3, 5, 5)),
        (lambda: torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 5, 5)),
        (lambda: torch.nn.GroupNorm(2, 4), (2, 4, 3, 5)),
        (lambda: torch.nn.GroupNorm(3, 3, affine=False), (3, 3, 7)),
        (lambda: torch.nn.LayerNorm(6), (2, 3, 6)),
        (lambda: torch.nn.LayerNorm((3, 4), elementwise_affine=False), (2, 3, 4)),
        (lambda: torch.nn.LayerNorm([5], bias=False), (4, 5)),
    ],
    ids=[
        "BN1d",
        "BN1d_cma",
        "BN2d",
        "BN2d_plain",
        "IN2d",
        "IN2d_affine_stats",
        "GN",
        "GN_plain",
        "LN",
        "LN_2d_plain",
        "LN_nobias",
    ],
)
def test_modules(make_module, shape, train):
    torch.manual_seed(0)
    cpu = make_module().train(train)
    vk = make_module().train(train)
    with torch.no_grad():  # non-trivial affine parameters and running stats
        for t in list(cpu.parameters()) + list(cpu.buffers()):
            if t.is_floating_point():
                t.copy_(make(t.shape, low=0.5, high=1.5))
    vk.load_state_dict(cpu.state_dict())
    vk = vk.to("vkml")
    for step in range(2):  # twice: running statistics feed the second step
        x = make(shape, low=-2, high=3)
        xc, xv = x.clone().requires_grad_(), x.to("vkml").requires_grad_()
        yc, yv = cpu(xc), vk(xv)
        assert_same(yv, yc, where=f"forward {step}", **TOL[torch.float32])
        g = make(shape)
        yc.backward(g)
        yv.backward(g.to("vkml"))
        assert_same(xv.grad, xc.grad, where=f"grad input {step}", **TOL[torch.float32])
        for (name, pc), pv in zip(cpu.named_parameters(), vk.parameters(), strict=True):
            assert_same(pv.grad, pc.grad, where=f"grad {name} {step}", **TOL[torch.float32])
        for (name, bc), bv in zip(cpu.named_buffers(), vk.buffers(), strict=True):
            assert_same(bv, bc, where=f"buffer {name} {step}", **TOL[torch.float32])


# ------------------------------------------------------------------ layer norm


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize(
    "shape, norm",
    [
        ((4, 7), (7,)),
        ((2, 3, 5), (3, 5)),
        ((3, 300), (300,)),
        # rows of 1024+ take 256 threads with 16 elements each in registers; longer
        # rows read the rest from memory again
        ((3, 1500), (1500,)),
        ((2, 5000), (5000,)),
    ],
)
def test_layer_norm(shape, norm, dtype):
    x, w, b = leaf(shape, dtype), leaf(norm, dtype), leaf(norm, dtype)
    assert_grads_close_to_cpu(
        lambda x, w, b: F.layer_norm(x, norm, w, b, 1e-4), x, w, b, **TOL[dtype]
    )
    assert_grads_close_to_cpu(lambda x: F.layer_norm(x, norm), x, **TOL[dtype])


def test_layer_norm_noncontiguous_and_stats():
    x = leaf((6, 4))
    assert_grads_close_to_cpu(lambda x: F.layer_norm(x.t(), (6,)), x, **TOL[torch.float32])
    x = make((2, 3, 4))
    for c, v in zip(
        torch.native_layer_norm(x, [4], None, None, 1e-5),
        torch.native_layer_norm(x.to("vkml"), [4], None, None, 1e-5),
        strict=True,
    ):
        assert_same(v, c, **TOL[torch.float32])


# ------------------------------------------------------------------ group norm


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize(
    "shape, groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 4), ((2, 4), 2), ((2, 4, 48, 48), 2)]
)
def test_group_norm(shape, groups, dtype):
    c = shape[1]
    x, w, b = leaf(shape, dtype), leaf(c, dtype), leaf(c, dtype)
    assert_grads_close_to_cpu(lambda x, w, b: F.group_norm(x, groups, w, b), x, w, b, **TOL[dtype])
    assert_grads_close_to_cpu(lambda x: F.group_norm(x, groups), x, **TOL[dtype])


def test_instance_norm_functional():
    x = leaf((2, 3, 4, 5))
    assert_grads_close_to_cpu(lambda x: F.instance_norm(x), x, **TOL[torch.float32])


def test_errors_like_cpu():
    x = make((2, 6, 4))
    for fn in [
        lambda t: F.group_norm(t, 4),  # 6 channels in 4 groups
        lambda t: F.layer_norm(t, (5,)),  # wrong normalized shape
    ]:
        with pytest.raises(RuntimeError):
            fn(x)
        with pytest.raises(RuntimeError):
            fn(x.to("vkml"))


def test_empty_batch():
    x = make((0, 3, 4))
    out = F.layer_norm(x.to("vkml"), (4,))
    assert out.shape == (0, 3, 4) and out.device.type == "vkml"


def test_batch_norm_legit_variants():
    """The variants that export / compile decompositions call directly."""
    aten = torch.ops.aten
    x, w, b = make((2, 3, 4, 5)), make(3, low=0.5, high=2), make(3)
    rm, rv = make(3), make(3, low=0.5, high=2)
    calls = [
        lambda x, w, b, rm, rv: (
            aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.1, 1e-5) + (rm, rv)
        ),
        lambda x, w, b, rm, rv: aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5),
        lambda x, w, b, rm, rv: aten._native_batch_norm_legit_no_training(
            x, w, b, rm, rv, 0.1, 1e-5
        ),
        lambda x, w, b, rm, rv: (
            aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)[:3] + (rm, rv)
        ),
    ]
    for i, fn in enumerate(calls):
        expected = fn(*to_device((x, w, b, rm, rv), "cpu"))
        actual = fn(*to_device((x, w, b, rm, rv), "vkml"))
        assert_same(actual, expected, where=f"variant {i}", **TOL[torch.float32])
    g = make((2, 3, 4, 5))
    _, mean, invstd = torch.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    args = (g, x, w, rm, rv, mean, invstd, True, 1e-5, [True, True, True])
    expected = aten.batch_norm_backward(*args, torch.empty(0, dtype=torch.uint8))
    actual = aten.batch_norm_backward(
        *to_device(args, "vkml"), torch.empty(0, dtype=torch.uint8, device="vkml")
    )
    assert_same(actual, expected, **TOL[torch.float32])


F64 = dict(atol=1e-12, rtol=1e-12)

F64_NORMS = {
    "batch_train": lambda t, w, b, rm, rv: F.batch_norm(t, rm, rv, w, b, True, 0.3),
    "batch_eval": lambda t, w, b, rm, rv: F.batch_norm(t, rm, rv, w, b, False),
    "batch_no_stats": lambda t, w, b, rm, rv: F.batch_norm(t, None, None, w, b, True),
    "batch_channels_last": lambda t, w, b, rm, rv: F.batch_norm(
        t.contiguous(memory_format=torch.channels_last), rm, rv, w, b, True
    ),
    "batch_2d": lambda t, w, b, rm, rv: F.batch_norm(t[:, :, 0, 0], rm, rv, w, b, True),
    "instance": lambda t, w, b, rm, rv: F.instance_norm(t, rm, rv, w, b, True),
    "layer": lambda t, w, b, rm, rv: F.layer_norm(t.transpose(1, 3), (6,), w, b),
    "layer_3d_shape": lambda t, w, b, rm, rv: F.layer_norm(t, (6, 5, 3)),
    "group": lambda t, w, b, rm, rv: F.group_norm(t, 3, w, b),
    "legit": lambda t, w, b, rm, rv: torch.ops.aten._native_batch_norm_legit(
        t, w, b, rm, rv, True, 0.1, 1e-5
    ),
}


@pytest.mark.parametrize("case", sorted(F64_NORMS))
def test_float64_norms_run_on_the_device(case):
    """float64 batch, layer and group norms are composed of float64 kernels
    (norm_float64.cpp): the CPU's outputs, saved and running statistics and gradients,
    with no CPU route."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    fn = F64_NORMS[case]
    x = make((4, 6, 5, 3), torch.float64)
    w, b = make((6,), torch.float64, low=0.5, high=2), make((6,), torch.float64)
    rm, rv = make((6,), torch.float64), make((6,), torch.float64, low=0.5, high=2)
    grad_out = None

    def run(dev):
        nonlocal grad_out
        leaves = [a.clone().to(dev).requires_grad_() for a in (x, w, b)]
        stats = [a.clone().to(dev) for a in (rm, rv)]
        out = fn(*leaves, *stats)
        y = out[0] if isinstance(out, tuple) else out
        if grad_out is None:
            grad_out = make(y.shape, torch.float64)
        grads = torch.autograd.grad(y, leaves, grad_out.to(dev), allow_unused=True)
        return out, grads, stats

    want = run("cpu")
    torch_vkml.reset_fallback_counts()
    got = run(VKML)
    assert torch_vkml.fallback_counts() == {}
    assert_same(got, want, **F64)


@pytest.mark.parametrize("norm", ["layer", "group"])
def test_rows_longer_than_a_workgroup_walks(norm):
    """Rows of millions of elements (PyTorch's test_nn LayerNorm_numeric: 9.4M per row)
    came back wrong on lavapipe, whose loops end after 65535 iterations: one workgroup
    walked each row. They now split over many workgroups; against float64 on the CPU."""
    n = 6_000_000
    x = torch.rand(1, n, dtype=torch.float64)
    w, b = torch.rand(n, dtype=torch.float64), torch.rand(n, dtype=torch.float64)
    g = torch.randn(1, n, dtype=torch.float64)
    results = {}
    for device, dtype in (("cpu", torch.float64), (VKML, torch.float32)):
        xs = x.to(device, dtype).detach().requires_grad_()
        if norm == "layer":
            ws, bs = (
                w.to(device, dtype).detach().requires_grad_(),
                b.to(device, dtype).detach().requires_grad_(),
            )
            y = torch.nn.functional.layer_norm(xs, (n,), ws, bs)
            y.backward(g.to(device, dtype))
            results[device] = [t.detach().cpu().double() for t in (y, xs.grad, ws.grad, bs.grad)]
        else:
            y = torch.nn.functional.group_norm(xs.view(1, 4, n // 4), 2)
            y.backward(g.to(device, dtype).view(1, 4, n // 4))
            results[device] = [t.detach().cpu().double() for t in (y, xs.grad)]
    for got, want in zip(results[VKML], results["cpu"], strict=True):
        assert (got - want).abs().max() <= 2e-6 * want.abs().max()
