"""VAE on digits with a BCE reconstruction loss and the KL term; 10 Adam steps vs CPU.

The reparameterisation noise is drawn on the CPU and given to both devices, so the test
does not depend on the device RNG.
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

TOL = dict(atol=1e-4, rtol=1e-4)
LATENT = 4


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
        self.mu = nn.Linear(32, LATENT)
        self.logvar = nn.Linear(32, LATENT)
        self.dec = nn.Sequential(nn.Linear(LATENT, 32), nn.ReLU(), nn.Linear(32, 64))

    def forward(self, x, eps):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + eps * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.dec(z)), mu, logvar


def _loss(model, x, eps):
    recon, mu, logvar = model(x, eps)
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kl) / x.shape[0]


def test_vae_trains_like_cpu():
    x, _ = digits(192)
    gen = torch.Generator().manual_seed(0)
    batches = [(x[i : i + 64], torch.randn(64, LATENT, generator=gen)) for i in range(0, 192, 64)]
    cpu, vk = train_twins(VAE, lambda p: torch.optim.Adam(p, lr=5e-3), batches, _loss, steps=10)
    assert_trajectory(cpu["losses"], vk["losses"], **TOL)
    assert_state_close(vk["model"], cpu["model"], atol=1e-4, rtol=1e-3)
    with torch.no_grad():
        eps = torch.zeros(8, LATENT)
        recon_cpu = cpu["model"](x[:8], eps)[0]
        recon_vk = vk["model"](x[:8].to(VKML), eps.to(VKML))[0]
    torch.testing.assert_close(recon_vk.cpu(), recon_cpu, atol=1e-5, rtol=1e-4)
    assert_no_fallback()
