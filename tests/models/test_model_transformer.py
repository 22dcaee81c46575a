"""Decoder-only Transformer LM: Embedding, causal scaled_dot_product_attention, LayerNorm,
GELU, AdamW and clip_grad_norm_; 10 steps on vkml follow the CPU."""

import torch
from model_utils import (
    assert_no_fallback,
    assert_state_close,
    assert_trajectory,
    train_twins,
)
from torch import nn
from torch.nn import functional as F

VOCAB, SEQ, DIM, HEADS, LAYERS = 32, 16, 32, 4, 2
# float32 attention, layer norms and AdamW: agreement ~1e-6 relative after 10 steps.
TOL = dict(atol=1e-4, rtol=1e-4)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        # No bias: the key bias has an exactly zero gradient (softmax is shift-invariant),
        # and AdamW would turn its rounding noise into lr-sized steps on either device.
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.proj = nn.Linear(DIM, DIM)
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(DIM, dim=2)
        q, k, v = (z.view(b, t, HEADS, DIM // HEADS).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(SEQ, DIM)
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.ln = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.blocks(self.tok(idx) + self.pos(pos))
        return self.head(self.ln(x))


def _batches():
    # Learnable sequences: each continues an arithmetic progression mod VOCAB.
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(3):
        start = torch.randint(0, VOCAB, (8, 1), generator=gen)
        step = torch.randint(1, 4, (8, 1), generator=gen)
        seq = (start + step * torch.arange(SEQ + 1)) % VOCAB
        out.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
    return out


def _loss(model, idx, target):
    return F.cross_entropy(model(idx).reshape(-1, VOCAB), target.reshape(-1))


def test_transformer_lm_trains_like_cpu():
    cpu, vk = train_twins(
        TinyLM,
        lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.1),
        _batches(),
        _loss,
        steps=10,
        clip=0.5,
    )
    assert_trajectory(cpu["losses"], vk["losses"], **TOL)
    # the pre-clipping total gradient norms agree too, and clipping was active
    torch.testing.assert_close(vk["norms"], cpu["norms"], atol=1e-4, rtol=1e-4)
    assert (cpu["norms"] > 0.5).any()
    assert_state_close(vk["model"], cpu["model"], atol=1e-4, rtol=1e-3)
    assert_no_fallback()
