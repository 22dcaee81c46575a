"""Digits CNN (1x8x8 images): Conv2d, BatchNorm2d, MaxPool2d, Dropout, AdaptiveAvgPool2d.

Training runs in train mode (BatchNorm uses batch statistics and updates its running
stats) with the Dropout layer alone switched to eval, so that both devices compute the
same function; dropout itself gets a seed-independent check of its mask statistics.
"""

import torch
from model_utils import (
    VKML,
    assert_no_fallback,
    assert_state_close,
    assert_trajectory,
    digits,
    train_twins,
)
from torch import nn
from torch.nn import functional as F

import torch_vkml

# Convolutions and batch-norm reductions sum in another order than the CPU's.
TOL = dict(atol=1e-4, rtol=1e-4)


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 8x8 -> 4x4
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.dropout = nn.Dropout(p=0.25)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.dropout(self.features(x))
        return self.head(self.pool(x).flatten(1))


def _deterministic_train(model):
    model.train()
    model.dropout.eval()  # identity: the masks cannot match across devices
    return model


def test_digits_cnn_trains_like_cpu():
    x, y = digits(256)
    x = x.reshape(-1, 1, 8, 8)
    batches = [(x[i : i + 64], y[i : i + 64]) for i in range(0, 256, 64)]

    def loss_fn(model, xb, yb):
        return F.cross_entropy(_deterministic_train(model)(xb), yb)

    cpu, vk = train_twins(
        DigitsCNN, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), batches, loss_fn, steps=10
    )
    assert_trajectory(cpu["losses"], vk["losses"], **TOL)
    # running_mean / running_var / num_batches_tracked included
    assert_state_close(vk["model"], cpu["model"], atol=1e-4, rtol=1e-3)
    cpu["model"].eval()
    vk["model"].eval()
    with torch.no_grad():
        torch.testing.assert_close(vk["model"](x.to(VKML)).cpu(), cpu["model"](x), **TOL)
    assert_no_fallback()


def test_dropout_mask_statistics():
    """Seed-independent: kept values are scaled by 1/(1-p), about p of them are zero,
    and the backward uses the same mask."""
    p = 0.25
    torch_vkml.reset_fallback_counts()
    x = torch.ones(64, 256, device=VKML, requires_grad=True)
    y = F.dropout(x, p=p, training=True)
    y.sum().backward()
    values = y.detach().cpu()
    kept = values != 0
    assert torch.all(values[kept] == 1 / (1 - p))
    zero_fraction = 1 - kept.float().mean().item()
    # 16384 Bernoulli draws: the standard deviation of the fraction is 0.0034
    assert abs(zero_fraction - p) < 0.02, zero_fraction
    torch.testing.assert_close(x.grad.cpu(), values)
    # eval mode is the identity
    torch.testing.assert_close(
        F.dropout(x, p=p, training=False).detach().cpu(), torch.ones(64, 256)
    )
    assert_no_fallback()
