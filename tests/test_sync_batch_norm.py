"""SyncBatchNorm's per-rank ops on vkml, with the ranks simulated in one process.

Each rank's batch_norm_stats, joined by batch_norm_gather_stats_with_counts, must give the
statistics of the whole batch; batch_norm_elemt then equals batch norm of the whole batch,
and batch_norm_backward_reduce / _elemt its gradients (CPU autograd of F.batch_norm over the
whole batch is the reference). PyTorch has these ops for CUDA only, so there is no CPU op
to compare with one to one. The 2-rank DDP run in test_distributed_programs.py trains
with nn.SyncBatchNorm end to end.
"""

import pytest
import torch
from conftest import VKML, dtype_id
from torch.nn import functional as F

import torch_vkml

EPS = 1e-5
TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.float16: dict(atol=2e-2, rtol=2e-2),
    torch.bfloat16: dict(atol=5e-2, rtol=5e-2),
}


def _ranks(dtype, sizes=(3, 5), shape=(4, 6, 5)):
    """Per-rank inputs (batch sizes differ, as with an uneven last batch)."""
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(n, *shape, generator=g) * 2 + 1).to(dtype) for n in sizes]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=dtype_id)
def test_forward_equals_whole_batch(dtype):
    parts = _ranks(dtype)
    whole = torch.cat(parts).float()
    torch_vkml.reset_fallback_counts()
    stats = [torch.batch_norm_stats(p.to(VKML), EPS) for p in parts]
    mean = torch.stack([m for m, _ in stats])
    invstd = torch.stack([i for _, i in stats])
    assert mean.dtype == torch.float32  # statistics in float32 for 16-bit inputs, as CUDA
    counts = torch.tensor([float(p.shape[0] * 6 * 5) for p in parts], device=VKML)
    running_mean = torch.zeros(4, device=VKML)
    running_var = torch.ones(4, device=VKML)
    g_mean, g_invstd = torch.batch_norm_gather_stats_with_counts(
        parts[0].to(VKML), mean, invstd, running_mean, running_var, 0.1, EPS, counts
    )
    weight = torch.linspace(0.5, 1.5, 4)
    bias = torch.linspace(-1, 1, 4)
    outs = [
        torch.batch_norm_elemt(p.to(VKML), weight.to(VKML), bias.to(VKML), g_mean, g_invstd, EPS)
        for p in parts
    ]
    assert not torch_vkml.fallback_counts()

    ref_mean = whole.mean((0, 2, 3))
    ref_var = whole.var((0, 2, 3), unbiased=False)
    tol = TOL[torch.float32] if dtype != torch.float32 else TOL[dtype]
    torch.testing.assert_close(g_mean.cpu(), ref_mean, **tol)
    torch.testing.assert_close(g_invstd.cpu(), (ref_var + EPS).rsqrt(), **tol)
    n = whole.numel() // 4
    torch.testing.assert_close(running_mean.cpu(), 0.1 * ref_mean, **tol)
    torch.testing.assert_close(running_var.cpu(), 0.9 + 0.1 * ref_var * n / (n - 1), **tol)
    ref = F.batch_norm(whole, None, None, weight, bias, training=True, eps=EPS)
    out = torch.cat([o.cpu() for o in outs])
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_backward_equals_whole_batch(dtype):
    parts = _ranks(dtype)
    g = torch.Generator().manual_seed(1)
    grads = [torch.randn(p.shape, generator=g).to(dtype) for p in parts]
    weight = torch.linspace(0.5, 1.5, 4)

    whole = torch.cat(parts).float().requires_grad_()
    w = weight.clone().requires_grad_()
    b = torch.zeros(4, requires_grad=True)
    F.batch_norm(whole, None, None, w, b, training=True, eps=EPS).backward(torch.cat(grads).float())

    torch_vkml.reset_fallback_counts()
    vk_parts = [p.to(VKML) for p in parts]
    stats = [torch.batch_norm_stats(p, EPS) for p in vk_parts]
    counts = torch.tensor([float(p.shape[0] * 6 * 5) for p in parts], device=VKML)
    mean, invstd = torch.batch_norm_gather_stats_with_counts(
        vk_parts[0],
        torch.stack([m for m, _ in stats]),
        torch.stack([i for _, i in stats]),
        None,
        None,
        0.1,
        EPS,
        counts,
    )
    vk_w = weight.to(VKML)
    reduced = [
        torch.batch_norm_backward_reduce(gr.to(VKML), p, mean, invstd, vk_w, True, True, True)
        for gr, p in zip(grads, vk_parts, strict=True)
    ]
    # what SyncBatchNorm all-reduces across the ranks
    sum_dy = sum(r[0] for r in reduced)
    sum_dy_xmu = sum(r[1] for r in reduced)
    grad_w = sum(r[2] for r in reduced)
    grad_b = sum(r[3] for r in reduced)
    int_counts = counts.to(torch.int32)
    grad_in = [
        torch.batch_norm_backward_elemt(
            gr.to(VKML), p, mean, invstd, vk_w, sum_dy, sum_dy_xmu, int_counts
        )
        for gr, p in zip(grads, vk_parts, strict=True)
    ]
    assert not torch_vkml.fallback_counts()
    tol = TOL[dtype]
    torch.testing.assert_close(torch.cat([x.cpu() for x in grad_in]).float(), whole.grad, **tol)
    torch.testing.assert_close(grad_w.cpu(), w.grad, **TOL[torch.float32])
    torch.testing.assert_close(grad_b.cpu(), b.grad, **TOL[torch.float32])


def test_backward_reduce_without_input_grad():
    x = torch.randn(3, 4, 5).to(VKML)
    mean, invstd = torch.batch_norm_stats(x, EPS)
    sum_dy, sum_dy_xmu, gw, gb = torch.batch_norm_backward_reduce(
        torch.ones_like(x), x, mean, invstd, None, False, True, True
    )
    assert sum_dy is None and sum_dy_xmu is None  # as on CUDA: no input grad, no sums
    torch.testing.assert_close(gb.cpu(), torch.full((4,), 15.0))
    assert gw.shape == (4,)


def test_gather_stats_skips_empty_ranks():
    x = torch.randn(6, 3, 4)
    mean, invstd = torch.batch_norm_stats(x.to(VKML), EPS)
    junk = torch.full_like(mean, float("nan"))
    g_mean, g_invstd = torch.batch_norm_gather_stats_with_counts(
        x.to(VKML),
        torch.stack([mean, junk]),
        torch.stack([invstd, junk]),
        None,
        None,
        0.1,
        EPS,
        torch.tensor([24.0, 0.0], device=VKML),
    )
    torch.testing.assert_close(g_mean.cpu(), x.mean((0, 2)), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        g_invstd.cpu(), (x.var((0, 2), unbiased=False) + EPS).rsqrt(), atol=1e-4, rtol=1e-4
    )
