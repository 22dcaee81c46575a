"""Times the scalar fp32 GEMM with its default and its 128 x 128 tile, the implicit-GEMM
convolution with its 32, 64 and 128 tiles, fused attention under each register tiling, and
the matrix-unit GEMM under each staging depth and output tile, in one process, for
scripts/gpu_run.sh (fp32 first: its targets matter most):
python3 scripts/gpu_gemm_sweep.py [SECONDS]

The tile defaults of ops/matmul.cpp, ops/conv.cpp, ops/attention.cpp and
ops/gemm_coopmat.cpp come from such sweeps on an H200; this measures the alternatives
(TORCH_VKML_COOPMAT_BK / _TILE / _WARPS among them) on the device at hand, with the device clock,
and checks each result against the default's.

Where the driver reports its compiler's statistics (VK_KHR_pipeline_executable_properties),
the sweep ends with them for every GEMM, convolution and attention pipeline it made
("STATS" lines: registers, spills and the like, named as the driver names them).
"""

from __future__ import annotations

import math
import os
import sys
import time

# Read when the device is first used, which is after these imports.
os.environ.setdefault("TORCH_VKML_PIPELINE_STATS", "1")

import torch
import torch.nn.functional as F

import torch_vkml
from torch_vkml.bench.timing import Backend, Plan, measure

SHAPES = [(4096, 4096, 4096), (1024, 1024, 1024), (4096, 512, 14336)]
VKML = Backend("vkml", torch.device("vkml", 0))
CONFIGS = [(bk, tile, warps) for tile in (128, 64) for bk in (32, 16) for warps in (4, 8)]
# ResNet-50 layers at batch 32: (cin, hw, cout, k)
CONVS = [(64, 56, 64, 3), (256, 56, 64, 1), (128, 28, 128, 3)]


def timed(fn, flops: float) -> float:
    """TFLOP/s at the median of the bench's device-clock repetitions (bench.timing)."""
    stats = measure(fn, VKML, Plan(warmup=1, min_reps=3, max_reps=5), 2)
    return flops / stats["device"]["median"] / 1e12


def tflops(a, b) -> float:
    return timed(lambda: torch.mm(a, b), 2.0 * a.shape[0] * a.shape[1] * b.shape[1])


# Whole tiles of shaders/gemm.comp (BM, BN, BK, threads, TN) set through _set_gemm_config.
# On the H200 (2026-12-04) 8 x 4 and 4 x 8 outputs per thread ran at 17-22 TFLOP/s and
# 8 x 8 at 2.3, before the accumulators were split by column group: one 8 x 4 tile for
# reference, then 8 x 8 ones (128 x 128 with 16-deep steps, 128 x 64, 64 x 64) and 4 x 8.
FP32_CONFIGS = [
    (128, 64, 16, 256, 4),
    (128, 128, 16, 256, 8),
    (128, 64, 16, 128, 8),
    (64, 64, 8, 64, 8),
    (32, 64, 16, 64, 8),
]


# The tiles the defaults take for these shapes, as configurations (ops/matmul.cpp).
DEFAULT_FP32 = (64, 64, 16, 256, 4)
HUGE_FP32 = (128, 128, 8, 256, 8)


def best_line(name: str, rates: dict, default) -> None:
    """A machine-readable verdict for gpu_run.sh: the candidate with the best geometric
    mean over the shapes that every candidate ran, and its gain over the default."""
    runs = [r for r in rates.values() if r]
    shapes = min(len(r) for r in runs) if runs else 0
    if not shapes or not rates.get(default):
        return

    def gmean(r):
        return math.prod(r[:shapes]) ** (1.0 / shapes)

    best = max((c for c in rates if len(rates[c]) >= shapes), key=lambda c: gmean(rates[c]))
    value = ",".join(map(str, best)) if isinstance(best, tuple) else str(best)
    gain = gmean(rates[best]) / gmean(rates[default])
    print(f"BEST {name}: {value} (x{gain:.2f} over the default, {shapes} shapes)", flush=True)


def scalar_fp32(t0: float, budget: float) -> bool:
    """The scalar kernel in fp32: the default tile (64 x 64 for these), the forced 128 x 128
    one (8 x 8 per thread) and the other configurations above. False once the budget is
    spent."""
    rates = {c: [] for c in [DEFAULT_FP32, HUGE_FP32, *FP32_CONFIGS]}
    try:
        return _scalar_fp32(t0, budget, rates)
    finally:
        best_line("fp32-gemm", rates, DEFAULT_FP32)


def _scalar_fp32(t0: float, budget: float, rates: dict) -> bool:
    for m, k, n in SHAPES:
        if time.perf_counter() - t0 > budget:
            return False
        a = torch.randn(m, k, device="vkml")
        b = torch.randn(k, n, device="vkml")
        want = a.cpu().double() @ b.cpu().double()
        row = []
        for tile in [0, 128, *FP32_CONFIGS]:
            if isinstance(tile, tuple):
                torch_vkml._C._set_gemm_config(*tile)
                label = "x".join(map(str, tile[:3])) + f"/{tile[3]}t/tn{tile[4]}"
            else:
                torch_vkml._C._set_gemm_tile(tile)
                label = f"tile {tile or 'default'}"
            err = (torch.mm(a, b).cpu().double() - want).abs().max().item()
            ok = "" if err <= 1e-4 * want.abs().max().item() else f" DIFF {err:.3g}"
            rate = tflops(a, b)
            row.append(f"{label} {rate:.3g}{ok}")
            config = tile if isinstance(tile, tuple) else HUGE_FP32 if tile else DEFAULT_FP32
            if not ok:
                rates[config].append(rate)
            torch_vkml._C._set_gemm_tile(0)
            torch_vkml._C._set_gemm_config(0, 0, 0, 0, 0)
        print(f"  fp32 {m}x{k}x{n} TFLOP/s: " + " | ".join(row), flush=True)
    return True


def convolutions(t0: float, budget: float) -> bool:
    """The implicit GEMM's 32, 64 and 128 tiles (TORCH_VKML_GEMM_TILE reaches it too),
    forward."""
    rates = {32: [], 64: [], 128: []}
    try:
        return _convolutions(t0, budget, rates)
    finally:
        best_line("conv-tile", rates, 64)


def _convolutions(t0: float, budget: float, rates: dict) -> bool:
    for cin, hw, cout, k in CONVS:
        if time.perf_counter() - t0 > budget:
            return False
        x = torch.randn(32, cin, hw, hw, device="vkml")
        w = torch.randn(cout, cin, k, k, device="vkml")
        torch_vkml._C._set_gemm_tile(0)
        want = F.conv2d(x, w, padding=k // 2).cpu()
        flops = 2.0 * 32 * cout * hw * hw * cin * k * k
        row = []
        for tile in (32, 64, 128):
            torch_vkml._C._set_gemm_tile(tile)
            got = F.conv2d(x, w, padding=k // 2).cpu()
            err = (got - want).abs().max().item()
            ok = "" if err <= 1e-4 * want.abs().max().item() else f" DIFF {err:.3g}"
            rate = timed(lambda: F.conv2d(x, w, padding=k // 2), flops)  # noqa: B023
            row.append(f"tile {tile} {rate:.3g}{ok}")
            if not ok:
                rates[tile].append(rate)
        print(f"  conv fp32 {cin}->{cout} {k}x{k} @{hw} TFLOP/s: " + " | ".join(row), flush=True)
    torch_vkml._C._set_gemm_tile(0)
    return True


def attention(t0: float, budget: float) -> bool:
    """Causal fp32 attention, forward and forward + backward, under each register tiling
    (TORCH_VKML_ATTENTION_TILE 1..5; one that does not fit runs the automatic choice)."""
    b, h, seq, e = 8, 12, 2048, 64
    q, k, v, g = (torch.randn(b, h, seq, e, device="vkml") for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    flops = 2.0 * b * h * seq * seq * e  # causal: half of q k^T and P v

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def fwd_bwd():
        return torch.autograd.grad(fwd(), (q, k, v), g)

    torch_vkml._C._set_attention_tiling(0)
    want = fwd().cpu()
    row = []
    for tiling in range(1, 6):
        if time.perf_counter() - t0 > budget:
            return False
        torch_vkml._C._set_attention_tiling(tiling)
        err = (fwd().cpu() - want).abs().max().item()
        ok = "" if err <= 1e-4 else f" DIFF {err:.3g}"
        row.append(f"t{tiling} {timed(fwd, flops):.3g}/{timed(fwd_bwd, 3.5 * flops):.3g}{ok}")
    torch_vkml._C._set_attention_tiling(0)
    print(f"  sdpa fp32 causal {b}x{h}x{seq}x{e} TFLOP/s fwd/fwd+bwd: " + " | ".join(row))
    return True


def statistics() -> None:
    """The driver's compiler statistics of the kernels swept, one line per pipeline."""
    if not torch_vkml.get_device_properties().pipeline_statistics:
        print("(no compiler statistics: the driver lacks VK_KHR_pipeline_executable_properties)")
        return
    swept = ("gemm", "conv_gemm", "attention")
    for name, stats in sorted(torch_vkml._C._pipeline_statistics().items()):
        if name.startswith(swept):
            values = ", ".join(f"{k}={v:g}" for k, v in stats.items())
            print(f"STATS {name}: {values}", flush=True)


def main() -> int:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    try:
        return sweep(budget)
    finally:
        statistics()


def sweep(budget: float) -> int:
    t0 = time.perf_counter()
    print("GEMM and convolution sweep on", torch_vkml.device_name(), flush=True)
    # SWEEP_PARTS: which of fp32, conv, attention, coopmat to run (default: all, in order).
    parts = os.environ.get("SWEEP_PARTS", "fp32,conv,attention,coopmat").split(",")
    for part, fn in (("fp32", scalar_fp32), ("conv", convolutions), ("attention", attention)):
        if part in parts and not fn(t0, budget):
            print("  (time budget reached)")
            return 0
    if "coopmat" not in parts:
        return 0
    for dtype in (torch.float16, torch.bfloat16):
        name = str(dtype).split(".")[1]
        for m, k, n in SHAPES:
            a = torch.randn(m, k, dtype=dtype, device="vkml")
            b = torch.randn(k, n, dtype=dtype, device="vkml")
            torch_vkml._C._set_coopmat_tuning(0, 0)  # the automatic choice
            want = torch.mm(a, b).float()
            if (m, k, n) == SHAPES[0]:  # after the first product: its start-up check
                print(f"{name}: {torch_vkml._C.coopmat_status(0, name)}", flush=True)
            row = []
            for bk, tile, warps in CONFIGS:
                if time.perf_counter() - t0 > budget:
                    print("  (time budget reached)")
                    return 0
                torch_vkml._C._set_coopmat_tuning(bk, tile, warps)
                err = (torch.mm(a, b).float() - want).abs().max().item()
                ok = "" if err <= 1e-2 * want.abs().max().item() else f" DIFF {err:.3g}"
                row.append(f"bk{bk}/t{tile}/w{warps} {tflops(a, b):.3g}{ok}")
            print(f"  {m}x{k}x{n} TFLOP/s: " + " | ".join(row), flush=True)
            del a, b, want
    torch_vkml._C._set_coopmat_tuning(0, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
