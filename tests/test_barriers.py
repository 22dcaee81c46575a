"""Barrier placement seen from PyTorch: a kernel that reads what the previous one wrote
gets a barrier; independent kernels of the declaring families (elementwise, GEMM,
softmax, reductions, norms, attention, convolution, pooling, indexing, losses, random)
get none. Lavapipe runs dispatches in order, so
a missing barrier would not change results here; these counts are what guard it."""

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML

import torch_vkml


def _barriers():
    return torch_vkml.memory_stats()["num_barriers"]


def _inputs(n=4):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(2, 4, 16, 32, generator=gen).to(VKML) for _ in range(n)]


_CONSTANTS = {}


def _constant(name, make, device):
    # Made once: a fresh one per call would be computed by dependent kernels and
    # reuse the last one's freed memory.
    key = (name, str(device))
    if key not in _CONSTANTS:
        _CONSTANTS[key] = make().to(device)
    return _CONSTANTS[key]


def _weight(device):
    return _constant("weight", lambda: torch.full((4, 4, 3, 3), 1 / 36), device)


def _index(device):
    return _constant("index", lambda: torch.arange(32) * 7 % 32, device)


OPS = {
    "add": lambda x: x + 1.0,
    "mm": lambda x: x @ x.transpose(-1, -2)[..., :32],
    "softmax": lambda x: torch.softmax(x, -1),
    "sum_rows": lambda x: x.sum(-1, keepdim=True).expand_as(x),
    "sum_cols": lambda x: x.sum(-2, keepdim=True).expand_as(x),
    "layer_norm": lambda x: F.layer_norm(x, (32,)),
    "attention": lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True),
    "conv2d": lambda x: F.conv2d(x, _weight(x.device), padding=1),
    "max_pool": lambda x: F.max_pool2d(x, 3, 1, 1),
    "avg_pool": lambda x: F.avg_pool2d(x, 3, 1, 1),
    "gather": lambda x: x.gather(-1, _index(x.device).expand_as(x)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_dependent_kernels_are_fenced(name):
    op = OPS[name]
    (x,) = _inputs(1)
    y = op(x)  # warm-up: pipelines, allocations
    torch_vkml.synchronize()
    y = op(x)
    before = _barriers()
    z = op(y)
    assert _barriers() > before, f"{name} reading the output of {name} got no barrier"
    expected = op(op(x.cpu()))
    torch.testing.assert_close(z.cpu(), expected, atol=1e-4, rtol=1e-4)


# Not attention or max_pool: each call's log-sum-exp (indices) is freed at once and the
# next call's reuses its memory, a write-after-write the tracker must fence. Not gather:
# its index range check reduces the index (dependent kernels) on every call.
@pytest.mark.parametrize(
    "name", ["add", "mm", "softmax", "sum_rows", "sum_cols", "conv2d", "avg_pool"]
)
def test_independent_kernels_overlap(name):
    op = OPS[name]
    xs = _inputs(4)
    keep = [op(x) for x in xs]  # warm-up; outputs kept so no allocation is reused
    torch_vkml.synchronize()
    before = _barriers()
    outs = [op(x) for x in xs]
    # The first may need one (the previous batch's last writes are still unfenced).
    assert _barriers() - before <= 1
    for x, out in zip(xs, outs, strict=True):
        torch.testing.assert_close(out.cpu(), op(x.cpu()), atol=1e-4, rtol=1e-4)
    del keep
