"""bfloat16 beyond elementwise ops: matrix products, reductions and softmax compute in
float32 on vkml and round once, as PyTorch's CPU kernels do; compared against the CPU."""

import pytest
import torch
from conftest import assert_close_to_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")

BF16 = dict(atol=2e-2, rtol=2e-2)


def bf16(*shape):
    return make(shape, torch.float32).to(torch.bfloat16)


def test_matrix_products():
    a, b, bias = bf16(5, 7), bf16(7, 3), bf16(3)
    assert_close_to_cpu(torch.mm, a, b, **BF16)
    assert_close_to_cpu(lambda x, y: x.t() @ y.t().t(), a.t().contiguous(), b, **BF16)
    assert_close_to_cpu(lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2), bias, a, b, **BF16)
    assert_close_to_cpu(torch.bmm, bf16(2, 4, 6), bf16(2, 6, 3), **BF16)
    assert_close_to_cpu(torch.nn.functional.linear, a, bf16(4, 7), bf16(4), **BF16)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.sum(),
        lambda t: t.sum(1),
        lambda t: t.mean(0, keepdim=True),
        lambda t: t.amax(1),
        lambda t: t.max(1),
        lambda t: t.argmax(0),
        lambda t: t.min(),
        lambda t: t.softmax(1),
        lambda t: t.log_softmax(0),
    ],
    ids=["sum", "sum1", "mean0", "amax", "max_dim", "argmax", "min", "softmax", "log_softmax"],
)
def test_reductions_and_softmax(fn):
    assert_close_to_cpu(fn, bf16(6, 9), **BF16)


def test_softmax_and_linear_gradients():
    x = bf16(4, 5)
    w = bf16(3, 5)
    grads = []
    for dev in ("cpu", "vkml"):
        xd = x.detach().to(dev).requires_grad_()
        wd = w.detach().to(dev).requires_grad_()
        torch.nn.functional.linear(xd, wd).log_softmax(1).sum().backward()
        grads.append((xd.grad.cpu(), wd.grad.cpu()))
    for g_dev, g_cpu in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(g_dev, g_cpu, **BF16)
