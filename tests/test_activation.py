"""Activations (ops_activation.cpp; relu, gelu, silu in ops_unary.cpp) and their
gradients against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    FLOAT_DTYPES,
    INF,
    NAN,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
    tol,
)

pytestmark = pytest.mark.usefixtures("no_fallback")

# --------------------------------------------------- activations + grad

ACTIVATIONS = {
    "relu6": lambda x: F.relu6(x),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 1.5),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, 0.7),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, 1.3),
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2, threshold=3),
    "softshrink": lambda x: F.softshrink(x, 0.7),
    "hardshrink": lambda x: F.hardshrink(x, 0.7),
    "logsigmoid": F.logsigmoid,
    "threshold": lambda x: F.threshold(x, 0.5, -2.0),
    "glu": lambda x: F.glu(x, 0),
    "glu_last": lambda x: F.glu(x, -1),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "logit": lambda x: torch.logit(x.sigmoid()),
    "logit_eps": lambda x: torch.logit(x.sigmoid(), eps=0.3),
    "erf": torch.erf,
    "atan": torch.atan,
    "asinh": torch.asinh,
    "lgamma": lambda x: torch.lgamma(x.abs() + 0.5),
    "digamma": lambda x: torch.digamma(x.abs() + 0.5),
    "pow": lambda x: torch.pow(x.abs() + 0.5, 1.7),
}


@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_gradients(name, layout):
    fn = ACTIVATIONS[name]
    x = make((6, 8) if layout == "contiguous" else (8, 6))
    # keep inputs off the kinks where CPU and vkml may pick different subgradients
    x = torch.where((x.abs() - 0.5).abs() < 0.05, x + 0.2, x)
    x = torch.where((x.abs() - 0.7).abs() < 0.05, x + 0.2, x)
    x = torch.where((x.abs() - 3).abs() < 0.05, x + 0.2, x).requires_grad_()
    build = (lambda t: t) if layout == "contiguous" else (lambda t: t.t())
    assert_grads_close_to_cpu(lambda t: fn(build(t)), x, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_low_precision(name):
    for dtype in (torch.float16, torch.bfloat16):
        x = make((6, 8), dtype)
        assert_close_to_cpu(ACTIVATIONS[name], x, **tol(dtype))


@pytest.mark.parametrize("weight_shape", [(1,), (3,)])
def test_prelu(weight_shape):
    x = make((2, 3, 4)).requires_grad_()
    w = make(weight_shape, low=0.1, high=0.5).requires_grad_()
    assert_grads_close_to_cpu(F.prelu, x, w, atol=1e-5, rtol=1e-5)


def test_inplace_activations_backward():
    # in-place forwards save their result: the *_backward(is_result=True) paths
    x = make((5, 6)).requires_grad_()
    for fn in (
        lambda t: F.elu(t * 1, inplace=True),
        lambda t: F.leaky_relu(t * 1, 0.1, True),
        lambda t: F.hardtanh(t * 1, -1, 1, inplace=True),
        lambda t: F.relu6(t * 3, True),
        lambda t: F.celu(t * 1, 0.5, inplace=True),
        lambda t: F.selu(t * 1, True),
        lambda t: F.threshold(t * 1, 0.1, 0.0, True),
        lambda t: F.silu(t * 1, True),
        lambda t: F.mish(t * 1, True),
        lambda t: F.hardswish(t * 1, True),
        lambda t: F.hardsigmoid(t * 1, True),
    ):
        assert_grads_close_to_cpu(fn, x, atol=1e-5, rtol=1e-4)


def test_activation_out_and_errors():
    x = make((4, 6))
    assert_close_to_cpu(lambda t: torch._C._nn.leaky_relu(t, 0.3, out=torch.empty_like(t)), x)
    assert_close_to_cpu(lambda t: torch._C._nn.softplus(t, 1, 20, out=torch.empty_like(t)), x)
    assert_close_to_cpu(lambda t: torch._C._nn.glu(t, 1, out=torch.empty(0, device=t.device)), x)
    assert_close_to_cpu(lambda t: F.threshold(t.long(), 1, 7), x)
    assert_raises_like_cpu(lambda t: F.glu(t, 0), make((3, 4)))
    assert_raises_like_cpu(lambda t: F.softshrink(t, -1.0), x)
    assert_raises_like_cpu(lambda t: F.hardtanh(t > 0), x)
    assert_raises_like_cpu(lambda t: F.leaky_relu(t.long()), x)


def test_activation_special_values():
    x = torch.tensor([-INF, -100.0, -20.0, -1e-30, -0.0, 0.0, 1e-30, 20.0, 100.0, INF, NAN])
    # (not gelu: the CPU gives gelu(inf) = nan)
    for fn in (
        F.elu,
        F.selu,
        F.silu,
        F.mish,
        F.softplus,
        F.logsigmoid,
        F.hardswish,
        F.hardsigmoid,
        F.leaky_relu,
        F.softshrink,
        F.hardshrink,
        F.relu6,
        lambda t: F.gelu(t, approximate="tanh"),
    ):
        assert_close_to_cpu(fn, x, atol=1e-6)


LAYOUTS = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.transpose(0, 2)),
}


# ------------------------------------------------------------------ relu


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_relu_and_threshold_backward(dtype, layout):
    shape, view = LAYOUTS[layout]
    x = leaf(shape, dtype)
    # relu's backward is aten::threshold_backward
    assert_grads_close_to_cpu(lambda t: F.relu(view(t)), x)
    assert_grads_close_to_cpu(lambda t: torch.nn.ReLU()(view(t) * 2), x)
    assert_grads_close_to_cpu(lambda t: F.relu(view(t) * 1, inplace=True), x)


# ------------------------------------------------ rrelu, channel_shuffle, unfold


def test_rrelu_eval_and_training():
    x = leaf((4, 6))
    assert_grads_close_to_cpu(lambda t: F.rrelu(t, 0.1, 0.3, training=False), x)
    xv = x.detach().to("vkml").requires_grad_()
    y = F.rrelu(xv, 0.1, 0.3, training=True)
    ratio = (y / xv).detach().cpu()
    neg = x.detach() < 0
    assert torch.all(ratio[~neg] == 1)
    assert torch.all((ratio[neg] >= 0.1) & (ratio[neg] <= 0.3))
    assert ratio[neg].unique().numel() > 1  # one slope per element
    y.sum().backward()
    torch.testing.assert_close(xv.grad.cpu(), ratio)
