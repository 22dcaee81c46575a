"""The caching allocator in a training loop: once the first steps have sized the pool,
later steps (forward, backward, clipping, fused AdamW) run without a single
vkAllocateMemory, and without a CPU fallback."""

import pytest
import torch
from model_utils import assert_no_fallback
from test_model_cnn import DigitsCNN
from test_model_transformer import SEQ, VOCAB, TinyLM
from torch.nn import functional as F

import torch_vkml


def _lm_step(model):
    gen = torch.Generator().manual_seed(0)
    # 32 sequences: the weight gradients are 512-deep products, which run split-K
    # through scratch memory.
    seq = torch.randint(0, VOCAB, (32, SEQ + 1), generator=gen).to("vkml")
    idx, target = seq[:, :-1], seq[:, 1:]

    def loss():
        return F.cross_entropy(model(idx).reshape(-1, VOCAB), target.reshape(-1))

    return loss


def _cnn_step(model):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(32, 1, 8, 8, generator=gen).to("vkml")
    y = torch.randint(0, 10, (32,), generator=gen).to("vkml")
    return lambda: F.cross_entropy(model(x), y)


@pytest.mark.parametrize("name", ["lm", "cnn"])
def test_training_steps_allocate_no_device_memory(name):
    torch.manual_seed(0)
    model = (TinyLM if name == "lm" else DigitsCNN)().to("vkml")
    loss_fn = (_lm_step if name == "lm" else _cnn_step)(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    torch_vkml.reset_fallback_counts()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(2):  # warm-up: optimizer state, pool growth
        step()
    torch_vkml.synchronize()
    before = torch_vkml.memory_stats()["num_device_alloc"]
    assert before > 0  # the pool did allocate blocks while warming up
    losses = [step().item() for _ in range(3)]
    torch_vkml.synchronize()
    assert torch_vkml.memory_stats()["num_device_alloc"] == before
    assert all(torch.isfinite(torch.tensor(losses)))
    assert_no_fallback()
