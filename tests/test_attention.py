"""scaled_dot_product_attention: the fused kernel (forward and backward) against the
CPU's math path, and the choice between the fused kernel and the math path."""

import contextlib
import math

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML, dtype_id, kernels_run
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

import torch_vkml

FUSED = "aten._scaled_dot_product_fused_attention_overrideable.default"
FUSED_BACKWARD = "aten._scaled_dot_product_fused_attention_overrideable_backward.default"

# The fused kernel computes in fp32 and rounds once; the reference is the CPU's float32
# math path on the same (rounded) inputs.
TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.float16: dict(atol=4e-3, rtol=4e-3),
    torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
}


class OpLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _inputs(B, H, L, S, E, Ev, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, L, E, generator=gen).to(dtype)
    k = torch.randn(B, H, S, E, generator=gen).to(dtype)
    v = torch.randn(B, H, S, Ev, generator=gen).to(dtype)
    return q, k, v


def _compare(q, k, v, dtype, grad=True, expect_fused=True, **kw):
    """Runs SDPA on vkml (dtype) and on the CPU (float32 of the same values); compares
    the output and, with ``grad``, the gradients of q, k and v."""
    mask = kw.pop("attn_mask", None)
    dev = [t.to(VKML).requires_grad_(grad) for t in (q, k, v)]
    ref = [t.float().requires_grad_(grad) for t in (q, k, v)]
    dmask = None if mask is None else mask.to(VKML)
    rmask = None if mask is None or mask.dtype == torch.bool else mask.float()
    rmask = mask if mask is not None and mask.dtype == torch.bool else rmask
    log = OpLog()
    with log:
        out = F.scaled_dot_product_attention(*dev, attn_mask=dmask, **kw)
        if grad:
            g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
            out.backward(g.to(dtype).to(VKML))
    expected = F.scaled_dot_product_attention(*ref, attn_mask=rmask, **kw)
    assert out.dtype == dtype and out.device.type == VKML
    torch.testing.assert_close(out.cpu().float(), expected, **TOL[dtype])
    if expect_fused is not None:
        assert (FUSED in log.ops) == expect_fused, log.ops
    if grad:
        assert expect_fused is None or (FUSED_BACKWARD in log.ops) == expect_fused
        expected.backward(g.to(dtype).float())
        for a, b in zip(dev, ref, strict=True):
            assert a.grad.dtype == dtype
            torch.testing.assert_close(a.grad.cpu().float(), b.grad, **TOL[dtype])


SHAPES = [
    # B, H, L, S, E, Ev: tile edges (not multiples of 8/16/32), L != S, E != Ev, head dims
    # 8 ... 128
    (2, 3, 17, 23, 16, 8),
    (1, 2, 64, 64, 64, 64),
    (1, 1, 5, 70, 32, 40),
    (2, 2, 33, 33, 128, 128),
    (1, 4, 1, 9, 20, 20),
    # several query and key tiles of each forward tiling (on lavapipe: 64 x 32 for head
    # dims <= 32, 32 x 32 for 64, 32 x 16 for 96 and 128); L > S leaves causal rows
    # that see every key
    (1, 2, 150, 130, 32, 24),
    (1, 2, 130, 150, 64, 64),
    (1, 1, 97, 40, 96, 96),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_fused_matches_cpu(shape, causal, no_fallback):
    q, k, v = _inputs(*shape, torch.float32)
    _compare(q, k, v, torch.float32, is_causal=causal)


@pytest.mark.parametrize("tiling", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("shape", [(1, 2, 70, 90, 32, 32), (1, 1, 45, 40, 64, 48)], ids=str)
def test_every_register_tiling(tiling, shape, no_fallback):
    """The tilings the kernels choose from by shared memory, each forced in turn (the
    sweep's knob, TORCH_VKML_ATTENTION_TILE); one that does not fit falls back."""
    torch_vkml._C._set_attention_tiling(tiling)
    try:
        for causal in (False, True):
            _compare(*_inputs(*shape, torch.float32), torch.float32, is_causal=causal)
    finally:
        torch_vkml._C._set_attention_tiling(0)
    with pytest.raises(ValueError, match="attention tiling"):
        torch_vkml._C._set_attention_tiling(6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_fused_16bit(dtype, causal, no_fallback):
    q, k, v = _inputs(2, 2, 33, 40, 64, 64, dtype)
    _compare(q, k, v, dtype, is_causal=causal)


def test_scale_and_noncontiguous_views(no_fallback):
    # The usual layout: [B, L, H, E] projections viewed as [B, H, L, E].
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 19, 3, 3, 16, generator=gen)
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))
    assert not q.is_contiguous()
    _compare(q, k, v, torch.float32, scale=0.3, is_causal=True)


def _token_major_leaves(B, L, H, E, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(B, L, H, E, generator=gen) for _ in range(3)]


@pytest.mark.parametrize("layout", ["token_major", "packed", "mixed"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_token_major_operands_in_place(layout, causal, no_fallback):
    # Models build q, k, v as x.view(B, L, H, E).transpose(1, 2), or so from a packed
    # qkv projection split three ways ("packed": rows 3 * H * E apart): the kernels read
    # those in place, write the output token-major (out.transpose(1, 2) is contiguous)
    # and give each gradient its input's layout. "mixed": q token-major, k contiguous
    # [B, H, L, E], v a strided slice the adapter copies.
    B, L, H, E = 2, 19, 3, 16
    if layout == "packed":
        leaves = [torch.randn(B, L, 3 * H * E, generator=torch.Generator().manual_seed(6))]
    else:
        leaves = _token_major_leaves(B, L, H, E, seed=6)

    def views(ts):
        if layout == "packed":
            return [t.view(B, L, H, E).transpose(1, 2) for t in ts[0].split(H * E, dim=2)]
        q, k, v = (t.transpose(1, 2) for t in ts)
        if layout == "mixed":
            k = k.contiguous()
            v = torch.cat([v, v], -1)[..., ::2]
        return q, k, v

    dev = [t.to(VKML).requires_grad_() for t in leaves]
    ref = [t.clone().requires_grad_() for t in leaves]
    out = F.scaled_dot_product_attention(*views(dev), is_causal=causal)
    expected = F.scaled_dot_product_attention(*views(ref), is_causal=causal)
    assert out.transpose(1, 2).is_contiguous()
    torch.testing.assert_close(out.cpu(), expected, **TOL[torch.float32])
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(7))
    out.backward(g.to(VKML))
    expected.backward(g)
    for a, b in zip(dev, ref, strict=True):
        torch.testing.assert_close(a.grad.cpu(), b.grad, **TOL[torch.float32])


def _operands(layout, B, H, L, E, Ev, device):
    """q, k, v ([B, H, L, E], [B, H, L, E], [B, H, L, Ev]) in one of the layouts models
    give them, uninitialised."""
    dims = (E, E, Ev)
    if layout == "contiguous":
        return [torch.empty(B, H, L, d, device=device) for d in dims]
    if layout == "token_major":  # x.view(B, L, H, d).transpose(1, 2)
        return [torch.empty(B, L, H, d, device=device).transpose(1, 2) for d in dims]
    if layout == "packed":  # slices of one qkv projection
        x = torch.empty(B, L, H * (2 * E + Ev), device=device)
        parts = x.split([H * d for d in dims], dim=2)
        return [t.view(B, L, H, d).transpose(1, 2) for t, d in zip(parts, dims, strict=True)]
    # nn.MultiheadAttention's: [L, B * H, d] projections as [B, H, L, d]
    return [torch.empty(L, B * H, d, device=device).transpose(0, 1).view(B, H, L, d) for d in dims]


@pytest.mark.parametrize("layout", ["contiguous", "token_major", "packed", "sequence_first"])
@pytest.mark.parametrize("Ev", [16, 8], ids=["Ev=E", "Ev<E"])
@pytest.mark.xfail(
    torch.torch_version.TorchVersion(torch.__version__) < "2.12",
    reason="torch 2.11 runs no meta function for the overrideable attention backward "
    "(NotImplementedError on meta tensors; seen on the GPU machine's torch 2.11)",
    raises=NotImplementedError,
    strict=True,
)
def test_results_have_the_meta_functions_strides(layout, Ev, no_fallback):
    # torch.compile traces with PyTorch's meta functions of the fused ops, which give the
    # output the query's layout and each gradient its input's; a graph's views rely on
    # those strides. Where the kernel writes another layout (sequence_first), the
    # adapter copies, so the values are checked against the CPU too.
    B, H, L, E = 2, 3, 7, 16
    fused = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    backward = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward
    gen = torch.Generator().manual_seed(11)
    ref = [torch.randn(B, H, L, d, generator=gen) for d in (E, E, Ev)]
    grad = torch.randn(B, H, L, Ev, generator=gen)
    results = {}
    for device in ("meta", VKML):
        q, k, v = _operands(layout, B, H, L, E, Ev, device)
        if device == VKML:
            for t, r in zip((q, k, v), ref, strict=True):
                t.copy_(r.to(VKML))
        out, lse, cum_q, cum_k, max_q, max_k, seed, offset, _ = fused(q, k, v, is_causal=True)
        g = torch.empty(B, H, L, Ev, device=device) if device == "meta" else grad.to(VKML)
        grads = backward(
            g,
            q,
            k,
            v,
            None,
            [True, True, True, False],
            out,
            lse,
            cum_q,
            cum_k,
            max_q,
            max_k,
            0.0,
            True,
            seed,
            offset,
        )[:3]
        results[device] = (out, *grads)
    for got, want in zip(results[VKML], results["meta"], strict=True):
        assert got.shape == want.shape and got.stride() == want.stride(), (layout, got.stride())
    leaves = [r.clone().requires_grad_() for r in ref]
    expected = F.scaled_dot_product_attention(*leaves, is_causal=True)
    expected.backward(grad)
    out, *grads = results[VKML]
    torch.testing.assert_close(out.cpu(), expected.detach(), **TOL[torch.float32])
    for got, leaf in zip(grads, leaves, strict=True):
        torch.testing.assert_close(got.cpu(), leaf.grad, **TOL[torch.float32])


@pytest.mark.parametrize("packed", [False, True], ids=["token_major", "packed"])
def test_token_major_forward_is_one_dispatch(packed, no_fallback):
    B, L, H, E = 2, 24, 2, 32
    if packed:
        x = torch.randn(B, L, 3 * H * E).to(VKML)
        q, k, v = (t.view(B, L, H, E).transpose(1, 2) for t in x.split(H * E, dim=2))
    else:
        q, k, v = (t.to(VKML).transpose(1, 2) for t in _token_major_leaves(B, L, H, E, seed=8))
    with torch.no_grad():
        F.scaled_dot_product_attention(q, k, v)  # warm-up
        torch_vkml.synchronize()
        before = torch_vkml.memory_stats()["num_dispatches"]
        F.scaled_dot_product_attention(q, k, v)
        assert torch_vkml.memory_stats()["num_dispatches"] - before == 1


def test_bool_mask_with_fully_masked_row(no_fallback):
    q, k, v = _inputs(2, 2, 12, 20, 16, 16, torch.float32)
    mask = torch.rand(12, 20, generator=torch.Generator().manual_seed(4)) > 0.3
    mask[3] = False  # a query that sees no key: its output and gradients are 0
    _compare(q, k, v, torch.float32, attn_mask=mask)


@pytest.mark.parametrize("mask_shape", [(2, 1, 12, 20), (1, 2, 1, 20), (12, 1)])
def test_additive_mask_broadcast(mask_shape, no_fallback):
    q, k, v = _inputs(2, 2, 12, 20, 16, 16, torch.float32)
    mask = torch.randn(mask_shape, generator=torch.Generator().manual_seed(5))
    _compare(q, k, v, torch.float32, attn_mask=mask)


def test_fused_inference_without_grad(no_fallback):
    q, k, v = _inputs(1, 2, 40, 40, 32, 32, torch.float16)
    with torch.no_grad():
        _compare(q, k, v, torch.float16, grad=False, is_causal=True)


@pytest.mark.parametrize(
    "case",
    ["head_dim_256", "three_dim", "float64", "mask_requires_grad"],
)
def test_math_path_for_what_the_kernel_does_not_take(case, no_fallback):
    kw = {}
    if case == "head_dim_256":
        q, k, v = _inputs(1, 2, 8, 8, 256, 256, torch.float32)
    elif case == "three_dim":
        q, k, v = (t[0] for t in _inputs(1, 3, 8, 8, 16, 16, torch.float32))
    elif case == "float64":
        q, k, v = _inputs(1, 2, 8, 8, 16, 16, torch.float64)
    else:
        q, k, v = _inputs(1, 2, 8, 8, 16, 16, torch.float32)
    if case == "mask_requires_grad":
        mask = torch.randn(8, 8).to(VKML).requires_grad_()
        out = F.scaled_dot_product_attention(q.to(VKML), k.to(VKML), v.to(VKML), attn_mask=mask)
        out.sum().backward()
        assert mask.grad is not None and mask.grad.shape == (8, 8)
        qd = q.to(VKML)
        choice = torch._fused_sdp_choice(qd, qd, qd, attn_mask=mask)
        assert choice == SDPBackend.MATH.value
        return
    if case == "float64":
        qd = q.to(VKML)
        assert torch._fused_sdp_choice(qd, qd, qd) == SDPBackend.MATH.value
        return
    # 3-d inputs: torch 2.14 lifts them to 4-d before the choice (the fused kernel takes
    # them); earlier releases choose the math path. Either way the results must match.
    _compare(q, k, v, torch.float32, expect_fused=None if case == "three_dim" else False, **kw)


def _grouped_inputs(B, H, Hkv, L, S, E, dtype, token_major=False):
    """q with H heads, k and v with Hkv; token-major as x.view(B, L, H, E).transpose(1, 2)."""
    gen = torch.Generator().manual_seed(12)
    shapes = [(B, H, L, E), (B, Hkv, S, E), (B, Hkv, S, E)]
    if token_major:
        return [
            torch.randn(b, n, h, e, generator=gen).to(dtype).transpose(1, 2)
            for b, h, n, e in shapes
        ]
    return [torch.randn(shape, generator=gen).to(dtype) for shape in shapes]


@pytest.mark.parametrize("token_major", [False, True], ids=["contiguous", "token_major"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_grouped_query_attention_is_fused(causal, token_major, no_fallback):
    # enable_gqa: 6 query heads over 2 k/v heads (Llama-style models). The kernels read
    # each k/v head for its 3 query heads, and the key/value grads sum over them.
    q, k, v = _grouped_inputs(2, 6, 2, 33, 40, 32, torch.float32, token_major)
    _compare(q, k, v, torch.float32, is_causal=causal, enable_gqa=True)
    q, k, v = _grouped_inputs(2, 6, 2, 33, 40, 32, torch.float32, token_major)
    mask = torch.randn(33, 40, generator=torch.Generator().manual_seed(13))
    _compare(q, k, v, torch.float32, attn_mask=mask, enable_gqa=True)


def test_unequal_heads_without_gqa_raise_as_on_the_cpu():
    q, k, v = _grouped_inputs(1, 4, 2, 8, 8, 16, torch.float32)
    with pytest.raises(RuntimeError) as cpu_error:
        F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(type(cpu_error.value)):
        F.scaled_dot_product_attention(q.to(VKML), k.to(VKML), v.to(VKML))


def test_dropout_takes_the_fused_kernels_below_one():
    q, _, _ = _inputs(1, 2, 8, 8, 16, 16, torch.float32)
    qd = q.to(VKML)
    assert torch._fused_sdp_choice(qd, qd, qd, dropout_p=0.1) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(qd, qd, qd) == SDPBackend.OVERRIDEABLE.value
    # p = 1 drops everything: the math path's zeros
    assert torch._fused_sdp_choice(qd, qd, qd, dropout_p=1.0) == SDPBackend.MATH.value
    assert (F.scaled_dot_product_attention(qd, qd, qd, dropout_p=1.0).cpu() == 0).all()


def _dropout_mask(q, k, dtype, seed, p, **kw):
    """The mask the fused kernels draw for q, k after torch.manual_seed(seed): with v the
    identity over keys, the output is P * mask / (1 - p) itself. It depends on the seed,
    the generator's offset and the element, not on v."""
    S = k.shape[2]
    eye = torch.eye(S).to(dtype).expand(k.shape[0], k.shape[1], S, S)
    torch.manual_seed(seed)
    out = F.scaled_dot_product_attention(q.to(VKML), k.to(VKML), eye.to(VKML), dropout_p=p, **kw)
    return out.cpu() != 0


def _check_dropout(q, k, v, dtype, p, **kw):
    """Forward and backward with dropout_p = p against the CPU's math on the same mask."""
    mask = _dropout_mask(q, k, dtype, 7, p, **kw)
    dev = [t.to(VKML).requires_grad_() for t in (q, k, v)]
    torch.manual_seed(7)  # the same seed and offset: the same mask
    log = OpLog()
    with log:
        out = F.scaled_dot_product_attention(*dev, dropout_p=p, **kw)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(2)).to(dtype)
        out.backward(g.to(VKML))
    assert FUSED in log.ops and FUSED_BACKWARD in log.ops, log.ops
    ref = [t.float().requires_grad_() for t in (q, k, v)]
    rq, rk, rv = ref
    if kw.get("enable_gqa"):
        rk = rk.repeat_interleave(q.shape[1] // k.shape[1], 1)
        rv = rv.repeat_interleave(q.shape[1] // k.shape[1], 1)
    scores = rq @ rk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if kw.get("is_causal"):
        scores = scores.masked_fill(torch.ones(scores.shape[-2:]).triu(1).bool(), -math.inf)
    probs = torch.softmax(scores, -1)
    expected = (probs * mask / (1 - p)) @ rv
    expected.backward(g.float())
    torch.testing.assert_close(out.detach().cpu().float(), expected.detach(), **TOL[dtype])
    for name, a, b in zip("qkv", dev, ref, strict=True):
        torch.testing.assert_close(a.grad.cpu().float(), b.grad, **TOL[dtype], msg=name)
    return mask


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_dropout_forward_and_backward_use_one_mask(causal, no_fallback):
    q, k, v = _inputs(2, 3, 40, 72, 32, 48, torch.float32)
    mask = _check_dropout(q, k, v, torch.float32, 0.25, is_causal=causal)
    seen = mask if not causal else mask[..., torch.ones(40, 72).tril().bool()]
    dropped = 1 - seen.float().mean().item()
    assert abs(dropped - 0.25) < 5 * math.sqrt(0.25 * 0.75 / seen.numel()), dropped


def test_dropout_masks_differ_between_calls_and_follow_the_seed(no_fallback):
    q, k, _ = _inputs(1, 2, 16, 64, 16, 16, torch.float32)
    first = _dropout_mask(q, k, torch.float32, 3, 0.5)
    assert torch.equal(first, _dropout_mask(q, k, torch.float32, 3, 0.5))
    assert not torch.equal(first, _dropout_mask(q, k, torch.float32, 4, 0.5))
    eye = torch.eye(64).expand(1, 2, 64, 64).to(VKML)
    torch.manual_seed(3)
    a, b = (
        F.scaled_dot_product_attention(q.to(VKML), k.to(VKML), eye, dropout_p=0.5).cpu() != 0
        for _ in range(2)
    )
    assert torch.equal(a, first) and not torch.equal(a, b)  # the generator's offset moves on


def test_math_backend_forced(no_fallback):
    q, k, v = _inputs(1, 2, 9, 9, 16, 16, torch.float32)
    with sdpa_kernel(SDPBackend.MATH):
        _compare(q, k, v, torch.float32, expect_fused=False, is_causal=True)


def test_direct_call_rejects_dropout_of_one():
    q, k, v = (t.to(VKML) for t in _inputs(1, 2, 8, 8, 16, 16, torch.float32))
    with pytest.raises(RuntimeError, match="fused attention"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, dropout_p=1.0)
    # the device stays usable
    out = F.scaled_dot_product_attention(q, k, v)
    assert torch.isfinite(out.cpu()).all()


# ------------------------------------------------- the matrix-unit kernels (fp16, bf16)


def _attention_kernels(fn):
    """The names of the attention kernels `fn` dispatches."""
    return kernels_run(fn, "attention_")[1]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_matrix_unit_kernels_match_cpu(dtype, shape, causal, emulated_matrix_units, no_fallback):
    # Probabilities and dS are rounded to the storage dtype for the fragment products,
    # as in FlashAttention-2: within the 16-bit tolerances above against the CPU's
    # float32 math on the same inputs.
    q, k, v = _inputs(*shape, dtype)
    _compare(q, k, v, dtype, is_causal=causal)


def test_matrix_unit_kernels_are_the_ones_run(emulated_matrix_units, no_fallback):
    suffix = {torch.float16: "emulated", torch.bfloat16: "emulated_bf16"}
    for dtype in (torch.float16, torch.bfloat16):
        q, k, v = (t.to(VKML).requires_grad_() for t in _inputs(1, 2, 40, 40, 64, 64, dtype))

        def step(q=q, k=k, v=v):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

        s = suffix[dtype]
        assert _attention_kernels(step) == {
            f"attention_forward_coopmat_{s}",
            f"attention_backward_coopmat_{s}",
        }
    # fp32 keeps the scalar kernels
    q, k, v = (t.to(VKML) for t in _inputs(1, 2, 40, 40, 64, 64, torch.float32))
    assert _attention_kernels(lambda: F.scaled_dot_product_attention(q, k, v)) == {
        "attention_forward_f32"
    }
    with pytest.raises(ValueError, match="coopmat mode"):
        torch_vkml._C._set_coopmat_mode("2")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_matrix_unit_kernels_masks(dtype, emulated_matrix_units, no_fallback):
    q, k, v = _inputs(2, 2, 12, 20, 16, 16, dtype)
    mask = torch.rand(12, 20, generator=torch.Generator().manual_seed(4)) > 0.3
    mask[3] = False  # a query that sees no key: its output and gradients are 0
    _compare(q, k, v, dtype, attn_mask=mask)
    for shape in [(2, 1, 12, 20), (1, 2, 1, 20), (12, 1)]:
        additive = torch.randn(shape, generator=torch.Generator().manual_seed(5)).to(dtype)
        _compare(q, k, v, dtype, attn_mask=additive)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_matrix_unit_kernels_grouped_query_attention(dtype, emulated_matrix_units, no_fallback):
    q, k, v = _grouped_inputs(1, 4, 1, 20, 70, 64, dtype, token_major=True)
    _compare(q, k, v, dtype, enable_gqa=True)
    q, k, v = _grouped_inputs(2, 6, 2, 33, 40, 32, dtype)
    _compare(q, k, v, dtype, is_causal=True, enable_gqa=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("layout", ["token_major", "packed"])
def test_matrix_unit_kernels_read_token_major_operands(
    dtype, layout, emulated_matrix_units, no_fallback
):
    # A transformer's q, k and v as x.view(B, L, H, E).transpose(1, 2), or slices of one
    # packed projection, read in place; a scale other than 1 / sqrt(E).
    B, L, H, E = 2, 37, 3, 32
    gen = torch.Generator().manual_seed(9)
    if layout == "packed":
        x = torch.randn(B, L, 3 * H * E, generator=gen).to(dtype)
        q, k, v = (t.view(B, L, H, E).transpose(1, 2) for t in x.split(H * E, dim=2))
    else:
        q, k, v = (torch.randn(B, L, H, E, generator=gen).to(dtype).transpose(1, 2) for _ in "qkv")
    _compare(q, k, v, dtype, scale=0.3, is_causal=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_matrix_unit_kernels_dropout(dtype, emulated_matrix_units, no_fallback):
    q, k, v = _inputs(1, 2, 33, 40, 32, 32, dtype)
    _check_dropout(q, k, v, dtype, 0.2, is_causal=True)
    q, k, v = _grouped_inputs(1, 4, 2, 20, 48, 64, dtype)
    _check_dropout(q, k, v, dtype, 0.1, enable_gqa=True)


def test_keys_past_a_loop_limited_drivers_count(no_fallback):
    """A thread of the fused kernels walks every key: 40000 of them pass half of Mesa 22.3
    lavapipe's loop limit (100000 gave errors of 1e-2 there, silently), so that driver
    takes the math path (products and softmax, on the device); others the fused kernels.
    Both must give the CPU's output and gradients."""
    g = torch.Generator().manual_seed(40)
    q = torch.randn(1, 1, 4, 16, generator=g, requires_grad=True)
    k = torch.randn(1, 1, 40000, 16, generator=g, requires_grad=True)
    v = torch.randn(1, 1, 40000, 16, generator=g, requires_grad=True)
    qv, kv, vv = (t.detach().to(VKML).requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(qv, kv, vv)
    ref = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-4)
    grad = torch.randn(ref.shape, generator=g)
    out.backward(grad.to(VKML))
    ref.backward(grad)
    for got, want in ((qv, q), (kv, k), (vv, v)):
        torch.testing.assert_close(got.grad.cpu(), want.grad, atol=1e-5, rtol=1e-4)


def test_vmap_takes_the_math_path(no_fallback):
    """The fused op has no batching rule in PyTorch: torch.func.vmap over attention
    raised "Batching rule not implemented"; batched inputs now take the math path."""
    from torch.func import vmap

    q, k, v = (torch.randn(3, 2, 2, 5, 8) for _ in range(3))

    def attend(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, is_causal=True)

    expected = vmap(attend)(q, k, v)
    actual = vmap(attend)(q.to(VKML), k.to(VKML), v.to(VKML))
    torch.testing.assert_close(actual.cpu(), expected, **TOL[torch.float32])


def test_forward_mode_ad_takes_the_math_path(no_fallback):
    """Dual tensors (torch.autograd.forward_ad) take the math path, which has forward
    derivatives (the CPU's default fused path has none and raises)."""
    import torch.autograd.forward_ad as fwAD

    q, t = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    tangents = []
    for dev in ("cpu", VKML):
        # The CPU's reference is its math path: its default fused path has no tangents.
        backends = sdpa_kernel(SDPBackend.MATH) if dev == "cpu" else contextlib.nullcontext()
        with fwAD.dual_level(), backends:
            dual = fwAD.make_dual(q.to(dev), t.to(dev))
            out = F.scaled_dot_product_attention(dual, dual, dual)
            tangents.append(fwAD.unpack_dual(out).tangent.cpu())
    torch.testing.assert_close(tangents[1], tangents[0], **TOL[torch.float32])


def test_vmap_of_grad_through_attention(no_fallback):
    """Per-sample gradients (vmap over grad): under grad the inputs are functorch's grad
    wrappers, which hide the batched tensor; this raised "Batching rule not implemented"
    until the choice read functorch's transform stack."""
    from torch.func import grad, vmap

    def per_sample(x):
        return grad(lambda u: F.scaled_dot_product_attention(u, u, u).square().sum())(x)

    q = torch.randn(3, 2, 2, 5, 8)
    torch.testing.assert_close(
        vmap(per_sample)(q.to(VKML)).cpu(), vmap(per_sample)(q), **TOL[torch.float32]
    )


def test_forward_over_reverse_through_attention(no_fallback):
    """jacfwd(jacrev(f)) (a Hessian) runs jvp over grad: the dual tensor hides under the
    grad wrapper as the batched one does above."""
    from torch.func import jacfwd, jacrev

    def energy(x):
        return F.scaled_dot_product_attention(x, x, x, is_causal=True).square().sum()

    x = torch.randn(1, 1, 3, 4)
    # The CPU's reference is its math path: its default fused path has no forward mode.
    with sdpa_kernel(SDPBackend.MATH):
        expected = jacfwd(jacrev(energy))(x)
    actual = jacfwd(jacrev(energy))(x.to(VKML))
    torch.testing.assert_close(actual.cpu(), expected, **TOL[torch.float32])


# --------------------------------------------------------------------------
# torch.nn.attention.flex_attention (torch_vkml/_flex_attention.py)
# --------------------------------------------------------------------------


def _relative_bias(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.01 - h * 0.1


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _flex_reference(q, k, v, H, L):
    """The same attention written densely, on the CPU."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    i = torch.arange(L)
    # as score_mod rounds: each integer term * a Python float is float32, added in turn
    scores = scores + (i[:, None] - i[None, :]) * 0.01 - torch.arange(H)[:, None, None] * 0.1
    scores = scores.masked_fill(i[:, None] < i[None, :], float("-inf"))
    return torch.softmax(scores, -1) @ v


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_flex_attention(dtype, compiled, no_fallback):
    """FlexAttention checks its device against a fixed list (cuda, cpu, xpu, hpu, mps)
    and refused vkml; torch_vkml widens the check for vkml alone. A score_mod and a
    causal block mask, called eagerly (the dense path) and under torch.compile: forward
    and gradients as the same attention written densely on the CPU."""
    import warnings

    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    if dtype == torch.float64 and not torch_vkml.get_device_properties(0).supports_fp64:
        return
    B, H, L, E = 2, 3, 40, 8
    gen = torch.Generator().manual_seed(0)
    base = [torch.randn(B, H, L, E, generator=gen, dtype=torch.float64) for _ in range(3)]
    grad = torch.randn(B, H, L, E, generator=gen, dtype=torch.float64)
    ref = [t.clone().requires_grad_() for t in base]
    _flex_reference(*ref, H, L).mul(grad).sum().backward()

    args = [t.to(dtype).to(VKML).requires_grad_() for t in base]
    mask = create_block_mask(_causal, B, H, L, L, device=VKML)
    attend = torch.compile(flex_attention) if compiled else flex_attention
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention: "use torch.compile"
        out = attend(*args, score_mod=_relative_bias, block_mask=mask)
    assert out.device.type == VKML and out.dtype == dtype
    out.mul(grad.to(dtype).to(VKML)).sum().backward()
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-13, rtol=1e-13)
    expected = _flex_reference(*base, H, L)
    torch.testing.assert_close(out.detach().cpu().double(), expected, **tol)
    for got, want in zip(args, ref, strict=True):
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, **tol)


def test_flex_attention_keeps_pytorchs_check_for_other_devices():
    from torch.nn.attention import flex_attention as module

    q = torch.randn(1, 1, 4, 8, device="meta")
    with pytest.raises(ValueError, match="only supported on"):
        module._validate_device(q, q, q)
    with pytest.raises(NotImplementedError, match="backward on CPU"):
        module._validate_device(*(torch.randn(1, 1, 4, 8, requires_grad=True) for _ in range(3)))
