"""A model with several inputs built on torch.where, gather, scatter_add, cumsum, topk and
einsum: 8 SGD steps on vkml follow the CPU, gradients flowing through every one of them."""

import torch
from model_utils import (
    assert_no_fallback,
    assert_state_close,
    assert_trajectory,
    train_twins,
)
from torch import nn

B, N, D, GROUPS, K = 4, 12, 8, 3, 4
TOL = dict(atol=1e-4, rtol=1e-4)


class MultiInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(D, D)
        self.score = nn.Parameter(torch.randn(D) / D**0.5)
        self.mix = nn.Parameter(torch.randn(D, D) / D**0.5)
        self.out = nn.Linear(3 * D, 1)

    def forward(self, x, mask, group, pick):
        h = torch.tanh(self.embed(x))  # [B, N, D]
        h = torch.where(mask.unsqueeze(-1), h, 0.1 * h)  # masked items are damped
        scores = torch.einsum("bnd,d->bn", h, self.score)
        top, top_idx = scores.topk(K, dim=1)  # [B, K]
        top_h = h.gather(1, top_idx.unsqueeze(-1).expand(B, K, D))  # [B, K, D]
        pooled = torch.zeros(B, GROUPS, D, device=x.device, dtype=x.dtype).scatter_add(
            1, group.unsqueeze(-1).expand(B, N, D), h
        )  # per-group sums
        picked = pooled.gather(1, pick.view(B, 1, 1).expand(B, 1, D)).squeeze(1)
        running = h.cumsum(dim=1)[:, -1] / N
        attn = torch.einsum("bk,bkd,de->be", top.softmax(1), top_h, self.mix)
        return self.out(torch.cat([attn, picked, running], dim=1)).squeeze(1)


def _batches():
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(1):  # one batch: the loss must fall step after step
        x = torch.randn(B, N, D, generator=gen)
        mask = torch.rand(B, N, generator=gen) > 0.3
        group = torch.randint(0, GROUPS, (B, N), generator=gen)
        pick = torch.randint(0, GROUPS, (B,), generator=gen)
        target = torch.randn(B, generator=gen)
        out.append((x, mask, group, pick, target))
    return out


def _loss(model, x, mask, group, pick, target):
    return ((model(x, mask, group, pick) - target) ** 2).mean()


def test_multi_input_model_trains_like_cpu():
    cpu, vk = train_twins(
        MultiInput, lambda p: torch.optim.SGD(p, lr=0.05), _batches(), _loss, steps=8
    )
    assert_trajectory(cpu["losses"], vk["losses"], **TOL)
    assert_state_close(vk["model"], cpu["model"], atol=1e-4, rtol=1e-3)
    assert_no_fallback()
