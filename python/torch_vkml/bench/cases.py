"""The benchmark cases: micro kernels and model steps, sized per profile.

A case builds its inputs on a device and returns the function to time. `work` is what
one call does (FLOPs, bytes moved, samples or tokens), so the figure is work / time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

# Profiles: "smoke" (tests: a few tiny cases, one repetition), "quick" (this CPU machine
# with lavapipe, minutes), "full" (sizes for a real GPU; `big` = False shrinks the models
# when the vkml device is a CPU driver).


@dataclass
class Case:
    name: str
    group: str  # "micro" or "model"
    unit: str  # "TFLOP/s", "GB/s", "samples/s", "tokens/s", "images/s", "us/op"
    work: float  # per call, in the unit's numerator (FLOP, byte, sample, token); 0: none
    setup: Callable[[torch.device], Callable[[], object]]
    clock: str = "device"  # primary clock: "device" (kernels), "wall" (end to end), "host"
    inner: int = 1  # calls per timed repetition
    skip_baseline: set[str] = field(default_factory=set)  # baselines too slow to run
    note: str = ""

    def value(self, seconds: float) -> float:
        """The figure for one call taking `seconds` (throughput, or time for us/op)."""
        if self.unit == "us/op":
            return seconds * 1e6
        scale = {"TFLOP/s": 1e12, "GB/s": 1e9}.get(self.unit, 1.0)
        return self.work / seconds / scale


def _rand(shape, dtype, device, seed=0):
    # Generated on the device itself: host-side randn of 256M elements would take longer
    # than the benchmark, and the values do not matter beyond being finite and varied.
    torch.manual_seed(seed)
    x = torch.empty(shape, dtype=torch.float32, device=device).uniform_(-1.0, 1.0)
    return x if dtype == torch.float32 else x.to(dtype)


# ---------------------------------------------------------------- micro kernels

_DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def gemm(m: int, k: int, n: int, dt: str, cpu_ok: bool = True, precision: str = "") -> Case:
    """torch.mm; `precision` runs float32 under torch.set_float32_matmul_precision(it),
    restored after each call: TF32 on CUDA, bf16x3 ("high") on vkml's matrix units."""

    def setup(device):
        a, b = _rand((m, k), _DT[dt], device, 1), _rand((k, n), _DT[dt], device, 2)
        if not precision:
            return lambda: torch.mm(a, b)

        def run():
            before = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision(precision)
            try:
                return torch.mm(a, b)
            finally:
                torch.set_float32_matmul_precision(before)

        return run

    return Case(
        f"gemm/{dt}{f'-{precision}' if precision else ''}/{m}x{k}x{n}",
        "micro",
        "TFLOP/s",
        2.0 * m * k * n,
        setup,
        skip_baseline=set() if cpu_ok else {"cpu"},
        note="MxKxN" + (f", float32 matmul precision {precision}" if precision else ""),
    )


def grouped_mm(rows: int, k: int, n: int, groups: int, dt: str, cpu_ok: bool = True) -> Case:
    """torch._grouped_mm as a mixture of experts' up projection: `rows` token-expert pairs
    sorted by expert, in groups of uneven sizes, each times its expert's k x n weight
    (stored n x k, as nn.Linear's); the offsets on the device."""

    def setup(device):
        x = _rand((rows, k), _DT[dt], device, 1)
        w = _rand((groups, n, k), _DT[dt], device, 2).transpose(-2, -1)
        # uneven groups, as a router makes them: sizes ~ 1, 2, ..., groups
        sizes = torch.arange(1, groups + 1, dtype=torch.float64)
        ends = torch.round(torch.cumsum(sizes, 0) / sizes.sum() * rows).to(torch.int32)
        offs = ends.to(device)
        return lambda: torch._grouped_mm(x, w, offs=offs)

    return Case(
        f"grouped_mm/{dt}/{rows}x{k}x{n}x{groups}",
        "micro",
        "TFLOP/s",
        2.0 * rows * k * n,
        setup,
        skip_baseline=set() if cpu_ok else {"cpu"},
        note="rows x K x N x groups (an MoE layer's experts)",
    )


def elementwise(op: str, numel: int) -> Case:
    fns = {"add": torch.add, "mul": torch.mul}

    def setup(device):
        a = _rand((numel,), torch.float32, device, 1)
        if op == "gelu":
            return lambda: F.gelu(a)
        b = _rand((numel,), torch.float32, device, 2)
        f = fns[op]
        return lambda: f(a, b)

    tensors = 2 if op == "gelu" else 3
    label = f"{numel // 2**20}M" if numel >= 2**20 else f"{numel // 2**10}K"
    return Case(f"{op}/fp32/{label}", "micro", "GB/s", 4.0 * numel * tensors, setup)


def reduction(rows: int, cols: int, dim: int) -> Case:
    def setup(device):
        a = _rand((rows, cols), torch.float32, device)
        return lambda: a.sum(dim)

    what = "rows" if dim == 1 else "cols"
    return Case(
        f"sum-{what}/fp32/{rows}x{cols}",
        "micro",
        "GB/s",
        4.0 * rows * cols,
        setup,
        note=f"sum over dim {dim}",
    )


def softmax(rows: int, cols: int) -> Case:
    def setup(device):
        a = _rand((rows, cols), torch.float32, device)
        return lambda: torch.softmax(a, -1)

    return Case(f"softmax/fp32/{rows}x{cols}", "micro", "GB/s", 8.0 * rows * cols, setup)


def layer_norm(rows: int, cols: int) -> Case:
    def setup(device):
        a = _rand((rows, cols), torch.float32, device)
        w, b = _rand((cols,), torch.float32, device, 3), _rand((cols,), torch.float32, device, 4)
        return lambda: F.layer_norm(a, (cols,), w, b)

    return Case(f"layer_norm/fp32/{rows}x{cols}", "micro", "GB/s", 8.0 * rows * cols, setup)


def cross_entropy(rows: int, classes: int) -> Case:
    """F.cross_entropy of [rows, classes] logits (an LM's loss): forward and the logits'
    gradient. The bytes are the least a fused pass moves: read the logits twice, write
    their gradient once."""

    def setup(device):
        x = _rand((rows, classes), torch.float32, device).requires_grad_()
        t = torch.randint(0, classes, (rows,)).to(device)

        def run():
            return torch.autograd.grad(F.cross_entropy(x, t), x)

        return run

    return Case(
        f"cross_entropy-fwd+bwd/fp32/{rows}x{classes}",
        "micro",
        "GB/s",
        12.0 * rows * classes,
        setup,
    )


def attention(
    b: int,
    h: int,
    seq: int,
    e: int,
    dt: str,
    backward: bool,
    kv_heads: int = 0,
    dropout: float = 0.0,
) -> Case:
    """Causal scaled_dot_product_attention of [b, h, seq, e] q, k, v; with `backward`,
    forward plus the gradients of q, k and v. `kv_heads`: k and v with that many heads,
    grouped-query attention (enable_gqa) as Llama-style models call it. `dropout`: the
    attention dropout GPT-2/BERT-style models train with."""
    hkv = kv_heads or h

    def setup(device):
        shapes = [(b, h, seq, e), (b, hkv, seq, e), (b, hkv, seq, e)]
        q, k, v = (_rand(x, _DT[dt], device, i).requires_grad_() for i, x in enumerate(shapes))
        g = _rand((b, h, seq, e), _DT[dt], device, 3)

        def run():
            out = F.scaled_dot_product_attention(
                q, k, v, dropout_p=dropout, is_causal=True, enable_gqa=hkv != h
            )
            if backward:
                return torch.autograd.grad(out, (q, k, v), g)
            return out

        return run

    # Causal: half of the 4 * seq^2 * e multiply-adds of q k^T and P v; backward ~2.5x.
    flops = 2.0 * b * h * seq * seq * e * (3.5 if backward else 1.0)
    kind = ("fwd+bwd" if backward else "fwd") + (f"-gqa{hkv}" if hkv != h else "")
    kind += f"-dropout{dropout:g}" if dropout else ""
    return Case(f"sdpa-{kind}/{dt}/{b}x{h}x{seq}x{e}", "micro", "TFLOP/s", flops, setup)


def conv2d(
    n: int,
    cin: int,
    hw: int,
    cout: int,
    k: int,
    stride: int,
    label: str,
    backward: bool = False,
    dt: str = "fp32",
) -> Case:
    """F.conv2d forward; with `backward`, the data and weight gradients of a training
    step instead (twice the forward's work). fp16 and bf16 run on the matrix units
    (conv_coopmat.comp) where the device has them."""
    pad = k // 2
    out_hw = (hw + 2 * pad - k) // stride + 1

    def setup(device):
        x = _rand((n, cin, hw, hw), _DT[dt], device, 1)
        w = (_rand((cout, cin, k, k), torch.float32, device, 2) / math.sqrt(cin * k * k)).to(
            _DT[dt]
        )
        if not backward:
            return lambda: F.conv2d(x, w, stride=stride, padding=pad)
        x.requires_grad_()
        w.requires_grad_()
        y = F.conv2d(x, w, stride=stride, padding=pad)
        g = _rand(tuple(y.shape), _DT[dt], device, 3)
        return lambda: torch.autograd.grad(y, (x, w), g, retain_graph=True)

    flops = 2.0 * n * cout * out_hw * out_hw * cin * k * k * (2.0 if backward else 1.0)
    return Case(
        f"conv2d{'-bwd' if backward else ''}/{dt}/{label}/n{n}",
        "micro",
        "TFLOP/s",
        flops,
        setup,
        # the CPU's 16-bit convolutions are too slow for a baseline at these sizes
        skip_baseline=set() if dt == "fp32" or flops <= 2e10 else {"cpu"},
        note=f"{cin}->{cout} {k}x{k}/{stride} @{hw}"
        + (", data + weight grads" if backward else ""),
    )


def fft(kind: str, batch: int, shape: tuple[int, ...]) -> Case:
    """torch.fft over the last dims of a batch: "c2c" (complex64) or "r2c" (float32 in).

    Bytes are one read of the input and one write of the output: a transform that fits
    on chip moves no more, so memory bandwidth is its ceiling.
    """
    dims = tuple(range(-len(shape), 0))
    points = batch * math.prod(shape)

    def setup(device):
        if kind == "c2c":
            x = torch.view_as_complex(_rand((batch, *shape, 2), torch.float32, device))
            return lambda: torch.fft.fftn(x, dim=dims)
        x = _rand((batch, *shape), torch.float32, device)
        return lambda: torch.fft.rfftn(x, dim=dims)

    if kind == "c2c":
        moved = 16.0 * points
    else:
        moved = 4.0 * points + 8.0 * points / shape[-1] * (shape[-1] // 2 + 1)
    size = "x".join(str(n) for n in shape)
    return Case(f"fft-{kind}/{len(shape)}d/{batch}x{size}", "micro", "GB/s", moved, setup)


def linalg(kind: str, batch: int, n: int) -> Case:
    """A batch of n x n factorizations or solves: "cholesky", "solve" (LU, 4 right-hand
    sides), "qr", "eigh" or "svd", on well-conditioned matrices. FLOPs are LAPACK's
    nominal counts (the Jacobi kernels do more), so the figure compares implementations,
    not hardware use."""
    flops = {
        "cholesky": n**3 / 3,
        "solve": 2 * n**3 / 3 + 2 * n * n * 4,
        "qr": 4 * n**3 / 3,
        "eigh": 9 * n**3,
        "svd": 12 * n**3,
    }[kind]

    def setup(device):
        a = _rand((batch, n, n), torch.float32, device, 1)
        spd = a @ a.mT + n * torch.eye(n, device=device)
        if kind == "cholesky":
            return lambda: torch.linalg.cholesky(spd)
        if kind == "solve":
            b = _rand((batch, n, 4), torch.float32, device, 2)
            return lambda: torch.linalg.solve(spd, b)
        if kind == "qr":
            return lambda: torch.linalg.qr(a)
        if kind == "eigh":
            return lambda: torch.linalg.eigh(spd)
        return lambda: torch.linalg.svd(a, full_matrices=False)

    return Case(f"{kind}/fp32/{batch}x{n}x{n}", "micro", "TFLOP/s", batch * flops, setup)


def host_overhead(calls: int) -> Case:
    def setup(device):
        a = torch.zeros(16, device=device)
        b = torch.ones(16, device=device)
        return lambda: a.add_(b)

    return Case(
        "host-overhead/add_",
        "micro",
        "us/op",
        0.0,
        setup,
        clock="host",
        inner=calls,
        note=f"{calls} tiny add_: calling thread CPU time per op (target <= 3x CPU)",
    )


def optimizer_step(nparams: int, numel: int, fused: bool) -> Case:
    """AdamW over `nparams` tensors: fused (one kernel per dtype) or foreach."""

    def setup(device):
        ps = [nn.Parameter(_rand((numel,), torch.float32, device, i)) for i in range(nparams)]
        for p in ps:
            p.grad = _rand((numel,), torch.float32, device, nparams + 1)
        opt = torch.optim.AdamW(ps, 1e-3, fused=fused, foreach=None if fused else True)
        opt.step()  # creates the state
        return opt.step

    kind = "fused" if fused else "foreach"
    # bytes: read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq
    return Case(
        f"adamw-{kind}/fp32/{nparams}x{numel // 1024}K",
        "micro",
        "GB/s",
        4.0 * 7 * nparams * numel,
        setup,
        note=f"{nparams} tensors of {numel} floats",
    )


# ---------------------------------------------------------------- models


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout (torchvision is not a dependency)."""

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TransformerLM(nn.Module):
    """A GPT-2-shaped decoder (pre-norm, learned positions, tied head, causal
    scaled_dot_product_attention: each backend's fused attention where it has one)."""

    def __init__(self, vocab: int, d: int, layers: int, heads: int, seq: int):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.register_buffer("positions", torch.arange(seq), persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(self.positions[:t])
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x) @ self.tok.weight.t()


def _train_step(model, opt, x, y, amp: str | None = None):
    """One step as users write it; with `amp`, under torch.autocast in that dtype, fp16
    with a GradScaler."""
    dtype = _DT[amp] if amp else None
    scaler = torch.amp.GradScaler(x.device.type) if amp == "fp16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(x.device.type, dtype=dtype, enabled=amp is not None):
            out = model(x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        if scaler is None:
            loss.backward()
            opt.step()
            return
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    return step


def _infer(model, x):
    model.eval()

    def run():
        with torch.no_grad():
            return model(x)

    return run


# Steps per timed repetition of the small models: a step of about a millisecond, timed
# alone, is mostly the wait for an idle queue (the H200 run measured the MLP at 0.74x and
# 1.17x of CUDA in two runs); a training loop never waits between steps.
_SMALL_STEPS = 10


def train_mlp(batch: int) -> Case:
    def setup(device):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)
        ).to(device)
        x = _rand((batch, 64), torch.float32, device)
        y = torch.randint(0, 10, (batch,)).to(device)
        return _train_step(model, torch.optim.Adam(model.parameters(), 1e-3, fused=True), x, y)

    return Case(
        f"train/digits-mlp/b{batch}",
        "model",
        "samples/s",
        batch,
        setup,
        clock="wall",
        inner=_SMALL_STEPS,
        note="64-128-64-10, fused Adam",
    )


def train_cnn(batch: int) -> Case:
    def setup(device):
        torch.manual_seed(0)
        model = SmallCNN().to(device)
        x = _rand((batch, 1, 28, 28), torch.float32, device)
        y = torch.randint(0, 10, (batch,)).to(device)
        return _train_step(
            model, torch.optim.SGD(model.parameters(), 0.01, momentum=0.9, fused=True), x, y
        )

    return Case(
        f"train/small-cnn/b{batch}",
        "model",
        "images/s",
        batch,
        setup,
        clock="wall",
        inner=_SMALL_STEPS,
        note="2 conv + fc on 28x28, fused SGD",
    )


def resnet18(batch: int, hw: int, train: bool, amp: str | None = None) -> Case:
    def setup(device):
        torch.manual_seed(0)
        model = ResNet18().to(device)
        x = _rand((batch, 3, hw, hw), torch.float32, device)
        if not train:
            return _infer(model, x)
        y = torch.randint(0, 1000, (batch,)).to(device)
        return _train_step(
            model, torch.optim.SGD(model.parameters(), 0.01, momentum=0.9, fused=True), x, y, amp
        )

    kind = "train" if train else "infer"
    return Case(
        f"{kind}/resnet18{f'-{amp}-autocast' if amp else ''}/b{batch}x{hw}",
        "model",
        "images/s",
        batch,
        setup,
        clock="wall",
        note=("fused SGD" if train else "no_grad") + (", GradScaler" if amp == "fp16" else ""),
    )


def transformer_lm(
    batch: int,
    seq: int,
    d: int,
    layers: int,
    heads: int,
    vocab: int,
    train: bool,
    amp: str | None = None,
) -> Case:
    def setup(device):
        torch.manual_seed(0)
        model = TransformerLM(vocab, d, layers, heads, seq).to(device)
        g = torch.Generator().manual_seed(0)
        idx = torch.randint(0, vocab, (batch, seq), generator=g).to(device)
        if not train:
            return _infer(model, idx)
        y = torch.randint(0, vocab, (batch, seq), generator=g).to(device)
        return _train_step(
            model, torch.optim.AdamW(model.parameters(), 1e-4, fused=True), idx, y, amp
        )

    kind = "train" if train else "infer"
    return Case(
        f"{kind}/lm-{layers}x{d}{f'-{amp}-autocast' if amp else ''}/b{batch}x{seq}",
        "model",
        "tokens/s",
        batch * seq,
        setup,
        clock="wall",
        note=f"{heads} heads, vocab {vocab}" + (", fused AdamW" if train else ""),
    )


# ---------------------------------------------------------------- profiles

# ResNet-50 conv shapes (Cin, HW, Cout, k, stride): stem, a 3x3 of each stage, a 1x1.
_R50 = [
    (3, 224, 64, 7, 2, "stem7x7"),
    (64, 56, 64, 3, 1, "l1-3x3"),
    (256, 56, 64, 1, 1, "l1-1x1"),
    (128, 28, 128, 3, 1, "l2-3x3"),
    (256, 14, 256, 3, 1, "l3-3x3"),
    (512, 7, 512, 3, 1, "l4-3x3"),
]


def build(profile: str, big: bool) -> list[Case]:
    """The cases of a profile. `big`: the vkml device is a real GPU (full-size models)."""
    if profile == "smoke":
        return [gemm(64, 64, 64, "fp32"), elementwise("add", 2**16), host_overhead(200)]
    cases: list[Case] = []
    if profile == "quick":
        cases.append(host_overhead(10_000))
        for dt in ("fp32", "fp16", "bf16"):
            cases += [gemm(256, 256, 256, dt), gemm(512, 512, 512, dt), gemm(512, 128, 1024, dt)]
        cases.append(gemm(64, 8192, 64, "fp32"))  # skinny: split-K
        cases += [grouped_mm(512, 128, 256, 8, dt) for dt in ("fp32", "bf16")]
        for op in ("add", "mul", "gelu"):
            cases += [elementwise(op, 2**20), elementwise(op, 4 * 2**20)]
        cases += [
            reduction(1024, 1024, 1),
            reduction(1024, 1024, 0),
            softmax(1024, 1024),
            layer_norm(1024, 1024),
            cross_entropy(256, 8192),
            optimizer_step(64, 16 * 1024, True),
            optimizer_step(64, 16 * 1024, False),
            attention(1, 4, 128, 64, "fp32", False),
            attention(1, 4, 128, 64, "fp32", True),
            attention(1, 8, 128, 64, "fp32", True, kv_heads=2),
            attention(1, 4, 128, 64, "fp32", True, dropout=0.1),
            fft("c2c", 256, (1024,)),
            fft("c2c", 16, (4099,)),  # a prime: Bluestein
            fft("r2c", 256, (1024,)),
            fft("c2c", 8, (256, 256)),
            fft("r2c", 8, (256, 256)),
            linalg("cholesky", 256, 32),
            linalg("cholesky", 4, 256),
            linalg("solve", 256, 32),
            linalg("qr", 256, 32),
            linalg("eigh", 64, 16),
            linalg("svd", 64, 16),
        ]
        cases += [conv2d(1, cin, hw // 2, cout, k, s, lbl) for cin, hw, cout, k, s, lbl in _R50[:3]]
        cases += [
            conv2d(1, 64, 28, 64, 3, 1, "l1-3x3", True),
            conv2d(1, 128, 28, 256, 3, 2, "l3-down", True),
            conv2d(1, 64, 28, 64, 3, 1, "l1-3x3", True, "fp16"),
        ]
        cases += [
            train_mlp(32),
            train_cnn(16),
            resnet18(2, 64, True),
            resnet18(2, 64, True, "fp16"),
            resnet18(2, 64, False),
            transformer_lm(2, 64, 128, 2, 4, 512, True),
            transformer_lm(2, 64, 128, 2, 4, 512, True, "bf16"),
            transformer_lm(2, 64, 128, 2, 4, 512, False),
        ]
        return cases
    # full. Run order is priority order: a --time-budget cut drops the tail. The targets
    # first (fp32 GEMM, bandwidth, softmax/layer_norm, training steps, then the
    # matrix-unit GEMMs), attention and convolution after them.
    cases.append(host_overhead(10_000))
    squares = (256, 1024, 4096, 8192) if big else (256, 512, 1024)
    shapes = ((4096, 512, 14336), (4096, 4096, 14336)) if big else ((1024, 512, 3584),)
    # skinny (a weight gradient: k = tokens), run split-K
    shapes += ((256, 65536, 256),) if big else ((64, 16384, 64),)

    def gemms(dt):
        # CPU half-precision GEMM is slow enough to dominate the run: bound it.
        limit = 2.5e12 if dt == "fp32" else 2e10
        return [gemm(s, s, s, dt, cpu_ok=2.0 * s**3 <= limit) for s in squares] + [
            gemm(m, k, n, dt, cpu_ok=2.0 * m * k * n <= limit) for m, k, n in shapes
        ]

    cases += gemms("fp32")
    # float32 as users speed it up: set_float32_matmul_precision("high")
    cases += [gemm(s, s, s, "fp32", precision="high") for s in squares[-2:]]
    sizes = (2**20, 16 * 2**20, 64 * 2**20, 256 * 2**20) if big else (2**20, 16 * 2**20)
    for op in ("add", "mul", "gelu"):
        cases += [elementwise(op, n) for n in sizes]
    side = 4096 if big else 2048
    cases += [
        reduction(side, side, 1),
        reduction(side, side, 0),
        softmax(side, side),
        layer_norm(side, side),
        # an LM's loss: GPT-2's vocabulary over 2048 tokens (a smaller one on a CPU driver)
        cross_entropy(2048, 50257) if big else cross_entropy(512, 8192),
        optimizer_step(150, 256 * 1024, True),
        optimizer_step(150, 256 * 1024, False),
    ]
    fft_batch = 4096 if big else 256
    cases += [
        fft("c2c", fft_batch, (1024,)),
        fft("c2c", fft_batch // 16, (16384,)),
        fft("c2c", fft_batch // 64, (4099,)),
        fft("r2c", fft_batch, (1024,)),
        fft("c2c", fft_batch // 64, (512, 512)),
        fft("r2c", fft_batch // 64, (512, 512)),
        linalg("cholesky", 4096 if big else 256, 32),
        linalg("cholesky", 16, 1024 if big else 256),
        linalg("solve", 4096 if big else 256, 32),
        linalg("solve", 16, 1024 if big else 256),
        linalg("qr", 4096 if big else 256, 32),
        linalg("eigh", 1024 if big else 64, 32),
        linalg("svd", 1024 if big else 64, 32),
        # Large orders: blocked Cholesky and LU, the condensed eigh and SVD.
        linalg("cholesky", 1, 4096 if big else 512),
        linalg("solve", 1, 4096 if big else 512),
        linalg("eigh", 8 if big else 4, 512 if big else 96),
        linalg("svd", 8 if big else 4, 512 if big else 48),
    ]
    if big:
        cases += [
            train_mlp(32),
            train_cnn(64),
            resnet18(64, 224, True),
            resnet18(64, 224, False),
            transformer_lm(4, 512, 768, 12, 12, 50257, True),
            transformer_lm(4, 512, 768, 12, 12, 50257, False),
            # as users train on matrix units: ResNet in fp16 with a GradScaler, GPT in bf16
            resnet18(64, 224, True, "fp16"),
            transformer_lm(4, 512, 768, 12, 12, 50257, True, "bf16"),
        ]
    else:
        cases += [
            train_mlp(32),
            train_cnn(32),
            resnet18(8, 96, True),
            resnet18(8, 96, False),
            transformer_lm(4, 128, 256, 4, 4, 4096, True),
            transformer_lm(4, 128, 256, 4, 4, 4096, False),
            resnet18(8, 96, True, "fp16"),
            transformer_lm(4, 128, 256, 4, 4, 4096, True, "bf16"),
        ]
    cases += gemms("fp16") + gemms("bf16")
    # Mixtral's experts (8, hidden 4096, 14336 wide) over 4096 tokens x top-2
    moe = (8192, 4096, 14336, 8) if big else (1024, 512, 1024, 8)
    cases += [grouped_mm(*moe, dt, cpu_ok=not big or dt == "fp32") for dt in ("fp32", "bf16")]
    seq = 2048 if big else 256
    for dt in ("fp32", "fp16", "bf16") if big else ("fp32",):
        cases += [attention(8, 12, seq, 64, dt, False), attention(8, 12, seq, 64, dt, True)]
    # Grouped-query attention (32 query heads over 8 k/v heads, head dim 128), as Llama 3
    # 8B calls it, in the dtype such models train in.
    gqa_dt = "bf16" if big else "fp32"
    cases.append(attention(2 if big else 1, 32, seq // 2, 128, gqa_dt, True, kv_heads=8))
    # Attention dropout in training (GPT-2's attn_pdrop), drawn inside the fused kernels.
    cases.append(attention(8, 12, seq, 64, "bf16" if big else "fp32", True, dropout=0.1))
    n = 32 if big else 1
    cases += [conv2d(n, cin, hw, cout, k, s, lbl) for cin, hw, cout, k, s, lbl in _R50]
    cases += [conv2d(n, cin, hw, cout, k, s, lbl, True) for cin, hw, cout, k, s, lbl in _R50[1:]]
    # ResNet's downsampling 3x3 / 2: a strided data grad
    cases.append(conv2d(n, 128, 28 if big else 14, 256, 3, 2, "l3-down", True))
    # 16-bit convolutions, on the matrix units where the device has them
    for dt in ("fp16", "bf16") if big else ("fp16",):
        cases += [conv2d(n, cin, hw, cout, k, s, lbl, dt=dt) for cin, hw, cout, k, s, lbl in _R50]
        cases += [
            conv2d(n, cin, hw, cout, k, s, lbl, True, dt) for cin, hw, cout, k, s, lbl in _R50[1:4]
        ]
        cases.append(conv2d(n, 128, 28 if big else 14, 256, 3, 2, "l3-down", True, dt))
    return cases
