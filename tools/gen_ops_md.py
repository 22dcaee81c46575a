"""Write docs/ops.md: the aten ops with a native vkml kernel, by family, with dtypes.

The op list comes from the dispatcher (what is really registered for the vkml
key); the family of an op is the adapter file that registers it; the dtypes of a
family are declared below, next to the kernels' variants.

    python tools/gen_ops_md.py            # rewrite docs/ops.md
    python tools/gen_ops_md.py --check    # exit 1 if docs/ops.md is stale
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ATEN = ROOT / "csrc" / "aten"
OUT = ROOT / "docs" / "ops.md"

F = "float32, float16"
FB = "float32, float16, bfloat16"
EW = (
    "float32, float16, bfloat16, float64 (where the device has shaderFloat64, in double: "
    "exp/log, trigonometric functions, pow, erf/erfc/erfinv, xlogy, logaddexp, sinc, entr, "
    "lgamma, digamma by double algorithms of our own, as GLSL has them in float only), "
    "int64, int32, int16, int8, uint8, bool (int16 where the device has shaderInt16)"
)
ACT = (
    "float32, float16, bfloat16, float64 (where the device has shaderFloat64; float "
    "parameters, e.g. elu's and softplus', as doubles)"
)
FAMILIES = {
    "ops_tensor.cpp": ("Tensors, storage and views", "all (no computation)"),
    "ops_copy.cpp": (
        "Copies, fill, item()",
        "float32, float16, bfloat16, float64 (where the device has shaderFloat64), "
        "int64, int32, int16, int8, uint8, bool",
    ),
    "ops_creation.cpp": (
        "Creation (arange, linspace, logspace, tril/triu_indices)",
        "float32, float16, bfloat16, float64, int64, int32, uint8 (logspace: float32, "
        "float16, bfloat16; other dtypes on the CPU, counted)",
    ),
    "ops_unary.cpp": ("Unary elementwise and activations", EW),
    "ops_binary.cpp": ("Binary elementwise, comparisons, backward helpers", EW),
    "ops_ternary.cpp": ("Ternary elementwise", EW),
    "ops_special.cpp": (
        "Special functions (torch.special, i0, polygamma, igamma), frexp, angle, gcd / lcm",
        "float32, float16, bfloat16 (in float32; integer inputs promote to float); gcd / lcm: "
        "int64, int32, int16, int8, uint8; float64: polygamma, zeta, erfcx, log_ndtr, angle "
        "native; Bessel functions, orthogonal polynomials, igamma, i0 / i1 and ndtri on the "
        "counted CPU route",
    ),
    "ops_activation.cpp": ("Activations and their backward", ACT),
    "ops_reduce.cpp": (
        "Reductions",
        "float32, float16, bfloat16 (in float32), float64 (where the device has "
        "shaderFloat64), int64, int32, int16 and int8 (in int32), uint8, bool; complex (sums "
        "of the parts, pairwise products)",
    ),
    "ops_matmul.cpp": (
        "Matrix products, cross product",
        F + ", bfloat16 (fp32 accumulation), float64 (where the device has shaderFloat64), "
        "int64, int32, int16, int8, uint8 (int64 accumulation, wrapping; alpha and beta "
        "as the element type); `_int_mm`: int8 to int32; cross: all but bool",
    ),
    "ops_grouped_mm.cpp": (
        "Grouped products (torch._grouped_mm, F.grouped_mm: mixture-of-experts layers)",
        "float32, float16, bfloat16 (fp32 accumulation); int32 offsets read on the device",
    ),
    "ops_fake_quantize.cpp": (
        "Fake quantization for quantization-aware training (FakeQuantize, the fused "
        "moving-average observer, LSQ's learnable qparams)",
        "float32, float16, bfloat16 inputs (the fused observer: float32, as on the CPU); "
        "qparams chosen on the device",
    ),
    "ops_assert_async.cpp": (
        "Runtime asserts (torch._assert_async, compiled graphs' functional asserts)",
        "every dtype a vkml tensor holds; checked on the device, raised at the next read",
    ),
    "ops_sparse.cpp": (
        "Dense to sparse COO (to_sparse)",
        "every dtype a vkml tensor holds; the non-zeros found on the device",
    ),
    "ops_sparse_csr.cpp": (
        "Dense to sparse CSR and CSC, and the index conversions between COO and CSR",
        "every dtype a vkml tensor holds; int32 and int64 indices",
    ),
    "ops_linalg.cpp": (
        "Linear algebra: Cholesky, LU, triangular and LU solves, solve, inv, det, slogdet",
        "float32; float64 where the device has shaderFloat64; complex64 and complex128 "
        "likewise (complex kernels; Cholesky through the real embedding)",
    ),
    "ops_linalg_orthogonal.cpp": (
        "Linear algebra: QR, eigh and SVD (Jacobi, condensed forms), lstsq",
        "float32; float64 where the device has shaderFloat64 (ormqr: float32); complex64 "
        "and complex128 likewise (eigh and SVD vectors up to orders 48 and 32); eigh and "
        "SVD of order > 4096 (lower on Mesa 22.3's lavapipe, docs/linalg.md) on the CPU, "
        "counted",
    ),
    "ops_linalg_matrix_exp.cpp": (
        "Linear algebra: matrix_exp (scaling and squaring, Pade [7/7]; [13/13] in double)",
        "float32; float16 and bfloat16 in float32; complex64; float64 and complex128 where "
        "the device has shaderFloat64 (complex through the real embedding)",
    ),
    "ops_linalg_ldl.cpp": (
        "Linear algebra: ldl_factor, ldl_solve (Bunch-Kaufman, LAPACK's layout and pivots)",
        "float32; float64 where the device has shaderFloat64; complex on the CPU, counted",
    ),
    "ops_fft.cpp": (
        "Fourier transforms through VkFFT (torch.fft, stft, istft)",
        "complex64, float32; complex128, float64 where the device has shaderFloat64",
    ),
    "ops_softmax.cpp": (
        "Softmax",
        F + ", bfloat16 (in float32), float64 (where the device has shaderFloat64)",
    ),
    "ops_loss.cpp": (
        "Losses",
        FB + " (bfloat16 in float32); float64 nll_loss composed of float64 kernels "
        "(nll_loss_float64.cpp), float64 margin losses on the CPU, counted",
    ),
    "ops_ctc_loss.cpp": (
        "CTC loss (_ctc_loss, backward; lengths as lists or tensors)",
        "float32, float64 (where the device has shaderFloat64)",
    ),
    "ops_cross_entropy.cpp": (
        "Fused cross entropy (forward, backward; autograd and inference mode)",
        FB + " scores with int64 class targets, in float32 (probability targets and float64 "
        "take ATen's log_softmax + nll_loss, native)",
    ),
    "ops_random.cpp": (
        "Random numbers, and torch.distributions' samplers (Gamma, Poisson, Binomial, Dirichlet)",
        "float32, float16, bfloat16, float64 (where the device has shaderFloat64), int64, "
        "int32, uint8, bool; the samplers and their gradients: float32, float16, "
        "bfloat16 (computed in float32, as on CUDA), float64 (in double, where the device "
        "has shaderFloat64; else on the counted CPU route)",
    ),
    "ops_shape.cpp": ("Data movement (cat, tril / triu, eye, repeat_interleave)", "all"),
    "ops_remap.cpp": (
        "Flip, roll, padding, nearest upsampling (the remap kernel) and their backward",
        "all (backward: float32, float16, bfloat16)",
    ),
    "ops_foreach.cpp": ("Multi-tensor (_foreach_*) ops", EW),
    "ops_index.cpp": (
        "Indexing, gather / scatter, embedding backward",
        "float32, float16, bfloat16, float64, int64, int32, int16, int8, uint8, bool, "
        "complex64 and complex128 (reductions: sums; products on the CPU, counted); "
        "reductions on float64, and other than sum on int64, run serially",
    ),
    "ops_scan.cpp": (
        "Scans",
        "float32, float16, bfloat16, float64 (where the device has shaderFloat64), int64, "
        "int32, int16 and int8 (in int32) (cummax/cummin also uint8, bool)",
    ),
    "ops_compact.cpp": (
        "Data-dependent shapes (nonzero, masked_select, masked_scatter), count_nonzero",
        "all (count_nonzero: float32, float16, int64, int32, uint8, bool)",
    ),
    "ops_conv.cpp": (
        "Convolution (1-3d, transposed, groups) and its backward",
        FB + ", float64 (composed of float64 kernels); integers on the CPU, counted",
    ),
    "ops_pool.cpp": (
        "Pooling (max, average, adaptive) and backward",
        FB + ", float64; integers on the CPU, counted",
    ),
    "ops_norm.cpp": (
        "Batch / layer / group norm and backward",
        FB + "; float64 composed of float64 kernels (norm_float64.cpp) where the device has "
        "shaderFloat64",
    ),
    "ops_upsample.cpp": (
        "Upsampling (linear, bilinear, bicubic, trilinear, antialiased)",
        FB + ", float64 (weight-matrix products)",
    ),
    "ops_im2col.cpp": (
        "im2col / col2im (nn.Unfold, nn.Fold)",
        FB + ", float64 where the device has shaderFloat64 (im2col: all dtypes, moving elements)",
    ),
    "ops_grid_sample.cpp": (
        "grid_sample (2-d, 3-d) and backward",
        "float32, float64 (where the device has shaderFloat64; its input gradient also needs "
        "shaderBufferInt64Atomics); float16 and bfloat16 computed in float32 and rounded once, "
        "as CUDA",
    ),
    "composite/rearrange.cpp": ("channel_shuffle, unfold backward", "all (unfold backward: float)"),
    "composite/distance.cpp": ("Pairwise distances (cdist, pdist) and backward", F + ", bfloat16"),
    "composite/fractional_pool.cpp": (
        "Fractional max pooling and backward",
        F + ", bfloat16 (in float32)",
    ),
    "composite/embedding_bag.cpp": ("embedding_bag and backward", F + ", bfloat16 (in float32)"),
    "composite/embedding_renorm.cpp": ("nn.Embedding's max_norm renormalization", FB),
    "composite/unpool.cpp": ("Max unpooling", "float32, float16, int64, int32, uint8, bool"),
    "composite/segment_reduce.cpp": (
        "segment_reduce and backward (segments found by binary search, folded by native "
        "scatters; length checks on the device, raised at the next read)",
        FB + ", float64 (where the device has shaderFloat64)",
    ),
    "ops_sort.cpp": (
        "Sort and selection (sort, topk, kthvalue, median, unique, randperm)",
        "float32, float16, bfloat16, float64 (as int64 keys), int64, int32, uint8 (bool where "
        "PyTorch allows)",
    ),
    "ops_search.cpp": (
        "searchsorted, bucketize, isin, histc, bincount, histogram, histogramdd",
        "float32, float16, bfloat16, int64, int32 (bincount: integer inputs; isin: also "
        "uint8, bool; histogram: float32; histc: also uint8, integer bins as CUDA's); bincount "
        "with other than float32 weights gives float64 counts (on the CPU where the device has "
        "no shaderFloat64); float64 histc on the CPU, counted",
    ),
    "composite/rnn.cpp": ("Fused LSTM / GRU cells (nn.LSTM, nn.GRU)", F),
    "ops_optim.cpp": (
        "Fused optimizers (Adam, AdamW, SGD, Adagrad with fused=True)",
        "float32, float16, bfloat16 parameters (fp32 math); float64 in double where the device "
        "has shaderFloat64",
    ),
    "ops_attention.cpp": (
        "Fused scaled_dot_product_attention (forward, backward, backend choice)",
        "float32, float16, bfloat16 (4-d q/k/v, equal heads or grouped (enable_gqa), head dims "
        "up to 128, dropout_p below 1, a mask that needs no grad; other calls take PyTorch's math "
        "path, native)",
    ),
    "composite/one_hot.cpp": (
        "One-hot encoding (class checks on the device, raised at the next read)",
        "int64 classes",
    ),
    "composite/weight_norm.cpp": (
        "Weight normalization (composed of native norms, sums and elementwise ops)",
        FB + " (16-bit in float32); float64 on the CPU, counted",
    ),
    "composite/sync_batch_norm.cpp": (
        "SyncBatchNorm's per-rank statistics, gather, normalization and backward "
        "(composed of native reductions and elementwise ops)",
        FB + " (16-bit inputs with float32 statistics)",
    ),
    "composite/transformer.cpp": (
        "torch.nn's attention inference fast path (nn.MultiheadAttention and "
        "nn.TransformerEncoderLayer in eval under no_grad; nn.TransformerEncoder's nested "
        "batches, also to_padded_tensor of them)",
        FB + " (nested: contiguous [length, embed_dim] sequences)",
    ),
    "composite/nested.cpp": (
        "Nested tensors made from dense ones (a view of a buffer, the rows of a padded batch)",
        "all (no computation; masked_select for the padded rows)",
    ),
    "composite/amp.cpp": (
        "GradScaler's unscale / inf check and scale update (no read-back)",
        "float32, float16, bfloat16 gradients; float32 scale, int32 growth tracker",
    ),
}


# Registrations for tensors of other layouts, which the count above leaves out.
LAYOUTS = [
    (
        "SparsePrivateUse1",
        "Sparse COO tensors (sparse gradients and the optimizers that take them)",
        "ops_sparse.cpp",
        "float32, float16, bfloat16 values, int64 indices; sparse tensors multiply by scalars only",
    ),
    (
        "SparseCsrPrivateUse1",
        "Sparse compressed tensors (CSR, CSC)",
        "ops_sparse_csr.cpp",
        "2-d matrices without dense dims for products and conversions between layouts "
        "(others: PyTorch's code or the CPU, counted); float16 and bfloat16 products add up "
        "in float32; int32 and int64 indices",
    ),
    (
        "NestedTensorPrivateUse1",
        "Strided nested tensors (torch.nested.nested_tensor's default layout): ATen's "
        "device-generic nested kernels over vkml's own ops, and nn.TransformerEncoder's "
        "fast path",
        "composite/nested.cpp, composite/transformer.cpp",
        "as the ops on the buffer; no sum over dims (neither on CUDA); layer_norm through "
        "ATen's LayerNormKernel stub (ops_norm.cpp)",
    ),
]


def dense_registrations(text: str) -> str:
    """The source without its blocks for other dispatch keys (sparse and nested tensors:
    the same op names, listed apart)."""
    parts = re.split(r"(TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*\w+\s*,)", text)
    kept = [parts[0]]
    for head, body in zip(parts[1::2], parts[2::2], strict=True):
        if re.search(r",\s*PrivateUse1\s*,", head):
            kept += [head, body]
    return "".join(kept)


def layout_registrations(key: str) -> list[str]:
    import torch  # noqa: F401

    import torch_vkml  # noqa: F401  (registers the kernels)

    names = torch._C._dispatch_get_registrations_for_dispatch_key(key)
    return sorted(n.removeprefix("aten::") for n in names if n.startswith("aten::"))


def family_of_sources() -> dict[str, str]:
    """Maps each registered op name (as written in the sources) to its file, relative
    to csrc/aten (composite/*.cpp: ops composed of other native ops)."""
    owner: dict[str, str] = {}
    for path in sorted(ATEN.glob("ops_*.cpp")) + sorted(ATEN.glob("composite/*.cpp")):
        text = dense_registrations(path.read_text())
        key = path.relative_to(ATEN).as_posix()
        for name in re.findall(r'm\.impl\("([^"]+)"', text):
            owner[name] = key
        # Registration macros: VKML_REGISTER_UNARY(m, "neg", ...) and friends.
        for base in re.findall(r'VKML_REGISTER_\w+\(m, "([^"]+)"', text):
            owner.setdefault(base, key)
        # VKML_REGISTER_SPECIAL(m, special_i0e): the name unquoted (stringised by the macro).
        for base in re.findall(r"VKML_REGISTER_SPECIAL\(m, (\w+)\)", text):
            owner.setdefault(base, key)
        for base in re.findall(r'VKML_FOREACH(?:_UNARY)?\("([^"]+)"', text):
            owner.setdefault("_foreach_" + base, key)
    return owner


def torch_registrations(key: str) -> list[str]:
    import torch  # noqa: F401

    import torch_vkml  # noqa: F401  (registers the kernels)

    return list(torch._C._dispatch_get_registrations_for_dispatch_key(key))


def registered_ops() -> list[str]:
    import torch  # noqa: F401

    import torch_vkml  # noqa: F401  (registers the kernels)

    names = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    return sorted(n.removeprefix("aten::") for n in names if n.startswith("aten::"))


def family(op: str, owner: dict[str, str]) -> str:
    if op in owner:
        return owner[op]
    base = op.split(".")[0]
    for candidate in (base, base.rstrip("_")):
        if candidate in owner:
            return owner[candidate]
        if candidate.startswith("_foreach_"):
            return "ops_foreach.cpp"
    return "other"


def render() -> str:
    owner = family_of_sources()
    groups: dict[str, list[str]] = {}
    for op in registered_ops():
        groups.setdefault(family(op, owner), []).append(op)
    total = sum(len(v) for v in groups.values())
    lines = [
        "# Native vkml ops",
        "",
        "Generated by `tools/gen_ops_md.py` from the dispatcher's registrations for the vkml",
        "device; do not edit by hand (`make docs` rewrites it, a test checks it is current).",
        "Every other aten op runs through the CPU fallback (see the README), except view ops,",
        "which cannot fall back and are all native. PyTorch's composite ops (`zeros`, `ones`,",
        "`full`, `rand`, `randn`, `randint`, `linear`, `matmul`, `nll_loss`, `stack`,",
        "`transpose`, `reshape`, ...) decompose into the ops below and so run natively too.",
        "",
        "Complex tensors (complex64, complex128) are stored as pairs of their real dtype.",
        "Natively: copies, fills, `view_as_real` / `view_as_complex`, `complex`, `cat`, the",
        "remaps (`flip`, `roll`, padding), `tril` / `triu`, indexing (accumulating too),",
        "`where`, comparisons, `isnan` / `isinf` / `isfinite`, the logical ops, `add`, `sub`,",
        "`mul`, `div`, `neg`, `abs`, `angle`, `sgn`, `conj_physical`, `addcmul`, `addcdiv`,",
        "`lerp`, `sum`, `mean`, `prod`, `cumsum`, `cumprod`, `var` / `std`, vector norms, the",
        "matrix products (`mm`, `bmm`, `addmm`, `matmul`) and random fills; for complex64 also",
        "`exp`, `log`, `sqrt`, `pow`, the trigonometric and hyperbolic functions and their",
        "inverses (`composite/complex.cpp`, `ops/complex.cpp`). Other ops of complex tensors",
        "take the CPU fallback.",
        "",
        "`torch.fft` (every function), `torch.stft` and `torch.istft` reduce to `_fft_c2c`,",
        "`_fft_r2c` and `_fft_c2r`, which run through VkFFT (`ops_fft.cpp`); see",
        "docs/fft.md.",
        "",
        "`torch.linalg`'s factorizations and solves run on the kernels of `ops_linalg.cpp`",
        "and `ops_linalg_orthogonal.cpp`; see docs/linalg.md for what runs where and the",
        "sizes each kernel takes.",
        "",
        f"{total} op overloads are registered natively.",
        "",
    ]
    order = list(FAMILIES) + sorted(k for k in groups if k not in FAMILIES)
    for key in order:
        ops = groups.get(key)
        if not ops:
            continue
        title, dtypes = FAMILIES.get(key, (key, "see source"))
        lines += [
            f"## {title}",
            "",
            f"Source: `csrc/aten/{key}` — dtypes: {dtypes}",
            "",
            ", ".join(f"`{op}`" for op in ops),
            "",
        ]
    torchvision = [n for n in torch_registrations("PrivateUse1") if n.startswith("torchvision::")]
    if torchvision:
        lines += [
            "## torchvision's detection ops and deformable convolution",
            "",
            "Source: `csrc/aten/ops_detection.cpp` (nms, roi_align, roi_pool) and",
            "`csrc/aten/ops_deform_conv.cpp` (deform_conv2d) — registered under torchvision's",
            "namespace, so they run when torchvision defines the ops (it loads its own",
            "library); dtypes: float32, float64 (where the device has shaderFloat64; the",
            "backwards also need shaderBufferInt64Atomics; else on the CPU, counted); float16",
            "and bfloat16 computed in float32. Autocast runs them in float32, as torchvision's",
            "CUDA registration does.",
            "",
            ", ".join(f"`{n}`" for n in sorted(torchvision)),
            "",
        ]
    for key, title, source, text in LAYOUTS:
        lines += [
            f"## {title}",
            "",
            f"Source: `csrc/aten/{source}` ({key}) — {text}",
            "",
            ", ".join(f"`{op}`" for op in layout_registrations(key)),
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/ops.md is stale: run `python tools/gen_ops_md.py`", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
