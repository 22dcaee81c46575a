"""LSTM sequence classifier: 10 Adam steps on vkml follow the CPU loss trajectory."""

import torch
from model_utils import (
    assert_no_fallback,
    assert_state_close,
    assert_trajectory,
    train_twins,
)
from torch import nn
from torch.nn import functional as F

# Ten recurrent steps of float32 gates per sequence: agreement ~1e-6 relative.
TOL = dict(atol=1e-4, rtol=1e-4)


class SeqClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=6, hidden_size=16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1] + h[-1] + c[-1])


def _batches():
    # class = which third of the sequence holds the largest first feature
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(3):
        x = torch.randn(16, 12, 6, generator=gen)
        y = x[:, :, 0].argmax(1) // 4
        out.append((x, y))
    return out


def test_lstm_classifier_trains_like_cpu():
    cpu, vk = train_twins(
        SeqClassifier,
        lambda p: torch.optim.Adam(p, lr=1e-2),
        _batches(),
        lambda m, x, y: F.cross_entropy(m(x), y),
        steps=10,
    )
    assert_trajectory(cpu["losses"], vk["losses"], **TOL)
    assert_state_close(vk["model"], cpu["model"], atol=1e-4, rtol=1e-3)
    assert_no_fallback()
