"""Three small programs on vkml, each checked against the same program on the CPU:

1. Audio denoising: STFT of a noisy chord, a spectral mask, inverse STFT.
2. Gaussian-process regression: a kernel matrix's Cholesky factor, solves, the log
   marginal likelihood, and predictions with their variance.
3. Low-rank approximation: torch.svd_lowrank of a matrix of rank 8 plus noise, and PCA.

Run: python examples/spectral_linalg.py [--device vkml|cpu]. With vkml it prints each
program's agreement with the CPU and fails if any op ran on the CPU fallback.
"""

from __future__ import annotations

import argparse
import math

import torch


def denoise(device: torch.device) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    rate, seconds = 8000, 1.0
    t = torch.arange(int(rate * seconds)) / rate
    clean = sum(torch.sin(2 * math.pi * f * t) for f in (220.0, 277.2, 329.6))
    noisy = (clean + 0.5 * torch.randn(t.shape, generator=g)).to(device)
    window = torch.hann_window(512, device=device)
    spec = torch.stft(noisy, 512, hop_length=128, window=window, return_complex=True)
    # Keep the bins well above the noise floor: a soft mask on the magnitude.
    mag = spec.abs()
    mask = torch.sigmoid((mag - 4 * mag.median()) / mag.median())
    out = torch.istft(spec * mask, 512, hop_length=128, window=window, length=noisy.numel())
    return out.cpu()


def gaussian_process(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = (torch.rand(200, 1, generator=g) * 10).to(device)
    y = (torch.sin(x) + 0.1 * torch.randn(200, 1, generator=g).to(device)).squeeze(1)
    xs = torch.linspace(0, 10, 50, device=device).unsqueeze(1)

    def rbf(a, b, length=1.0):
        return torch.exp(-0.5 * torch.cdist(a, b) ** 2 / length**2)

    k = rbf(x, x) + 0.01 * torch.eye(len(x), device=device)
    L = torch.linalg.cholesky(k)
    alpha = torch.cholesky_solve(y.unsqueeze(1), L)
    ks = rbf(xs, x)
    mean = (ks @ alpha).squeeze(1)
    v = torch.linalg.solve_triangular(L, ks.mT, upper=False)
    var = 1.0 - (v * v).sum(0)
    nll = (
        0.5 * (y @ alpha.squeeze(1))
        + L.diagonal().log().sum()
        + 0.5 * len(x) * math.log(2 * math.pi)
    )
    return mean.cpu(), var.cpu(), nll.cpu()


def low_rank(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    a = torch.randn(300, 8, generator=g) @ torch.randn(8, 120, generator=g)
    a = (a + 0.01 * torch.randn(300, 120, generator=g)).to(device)
    torch.manual_seed(3)  # svd_lowrank's random projection, the same on both devices
    u, s, v = torch.svd_lowrank(a, q=12, niter=3)
    approx = u[:, :8] @ torch.diag(s[:8]) @ v[:, :8].mT
    error = torch.linalg.matrix_norm(a - approx) / torch.linalg.matrix_norm(a)
    return s[:8].cpu(), error.cpu()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="vkml")
    args = ap.parse_args()
    if args.device.startswith("vkml"):
        import torch_vkml

        torch_vkml.reset_fallback_counts()
    device = torch.device(args.device)
    cpu = torch.device("cpu")

    out, ref = denoise(device), denoise(cpu)
    print(f"denoise: max |vkml - cpu| = {(out - ref).abs().max().item():.2e}")
    assert torch.allclose(out, ref, atol=1e-4, rtol=1e-4)

    got, want = gaussian_process(device), gaussian_process(cpu)
    for name, a, b in zip(("mean", "variance", "nll"), got, want, strict=True):
        print(f"gaussian process {name}: max |vkml - cpu| = {(a - b).abs().max().item():.2e}")
        assert torch.allclose(a, b, atol=1e-3, rtol=1e-4)

    (s, err), (rs, rerr) = low_rank(device), low_rank(cpu)
    print(
        f"low rank: singular values max |vkml - cpu| = {(s - rs).abs().max().item():.2e}, "
        f"relative error of the rank-8 approximation {err.item():.4f} (cpu {rerr.item():.4f})"
    )
    assert torch.allclose(s, rs, atol=1e-2, rtol=1e-3) and err.item() < 0.01

    if args.device.startswith("vkml"):
        counts = torch_vkml.fallback_counts()
        print(f"CPU fallbacks: {counts or 'none'}")
        assert not counts, counts
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
