"""The tile, split-K and tiling choices every GPU takes by default, reached on lavapipe.

On a CPU device (lavapipe) the launchers choose for its few cores; _set_gpu_choices(True)
makes them choose as on a GPU (ops/launch.h), so these products run the GPU defaults:
skinny GEMMs and conv weight grads split into about a thousand K slices on 64 x 64 tiles,
attention's backward on its smallest tiling. Results against the CPU; sums of up to 16384
products, tolerances scaled to match.
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_grads_close_to_cpu, assert_same, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.fixture(autouse=True)
def gpu_choices():
    torch_vkml._C._set_gpu_choices(True)
    try:
        yield
    finally:
        torch_vkml._C._set_gpu_choices(False)


def kernels(fn):
    """What fn runs, by the profiler: shader[constants] -> (calls, workgroups)."""
    with torch_vkml.profile() as prof:
        out = fn()
        torch_vkml.synchronize()
    return out, {k.name: (k.calls, k.workgroups) for k in prof.kernels}


def test_skinny_gemm_splits_on_large_tiles():
    a, b = make((128, 8192), low=-1, high=1), make((8192, 96), low=-1, high=1)
    got, ran = kernels(lambda: torch.mm(a.to("vkml"), b.to("vkml")))
    # 2 x 2 tiles of 64 x 64 by 32 slices of 256, then a pass adding them (a thread per
    # output); a CPU device would run 4 x 3 tiles of 32 x 32 by 22 slices.
    assert ran.get("gemm_f32[64,64,16,256,4]") == (2, 2 * 2 * 32 + 128 * 96 // 256)
    assert_same(got, a @ b, atol=2e-3, rtol=1e-3)


def test_conv_weight_grad_splits_on_large_tiles():
    x, w = make((16, 16, 32, 32), low=-1, high=1), make((32, 16, 3, 3), low=-1, high=1)
    gy = make((16, 32, 32, 32), low=-1, high=1)
    xd, wd = x.to("vkml"), w.to("vkml")
    gw, ran = kernels(
        lambda: torch.ops.aten.convolution_backward(
            gy.to("vkml"),
            xd,
            wd,
            None,
            [1, 1],
            [1, 1],
            [1, 1],
            False,
            [0, 0],
            1,
            [False, True, False],
        )[1]
    )
    # 32 x 144 outputs: 1 x 3 tiles of 64 x 64 (mode 2) by 64 slices of 256 positions,
    # then the pass adding them
    assert ran.get("conv_gemm_f32[2,256,64,4,16]") == (2, 3 * 64 + 32 * 144 // 256)
    want = torch.ops.aten.convolution_backward(
        gy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False]
    )[1]
    assert_same(gw, want, atol=2e-3, rtol=1e-3)
    x.requires_grad_(), w.requires_grad_()
    assert_grads_close_to_cpu(lambda a, b: F.conv2d(a, b, padding=1), x, w, atol=2e-3, rtol=1e-3)


def test_conv_weight_grad_splits_on_matrix_units(emulated_matrix_units):
    """fp16's weight grad on the matrix-unit kernel (emulated here): the same K slices as
    conv_gemm.comp's 64 x 64 tiles above, its fp32 partials added by conv_gemm.comp's
    pass. Sums of 16384 fp16 products in fp32: against the CPU in float32 on the same
    fp16 values, within the fp16 store's rounding."""
    x, gy = (
        make((16, 16, 32, 32), low=-1, high=1).half(),
        make((16, 32, 32, 32), low=-1, high=1).half(),
    )
    w = make((32, 16, 3, 3), low=-1, high=1).half()

    def weight_grad(x, gy, w):
        args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
        return torch.ops.aten.convolution_backward(gy, x, w, None, *args)[1]

    gw, ran = kernels(lambda: weight_grad(x.to("vkml"), gy.to("vkml"), w.to("vkml")))
    split = {k: v for k, v in ran.items() if k.startswith("conv_coopmat_emulated[2,")}
    assert list(split.values()) == [(1, 3 * 64)], ran  # 1 x 3 tiles by 64 slices
    assert ran.get("conv_gemm_f16[2,64,32,4,16]") == (1, 32 * 144 // 64), ran  # the sum pass
    assert_same(gw.float(), weight_grad(x.float(), gy.float(), w.float()), atol=0.1, rtol=2e-3)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_backward_on_the_smallest_tiling(causal):
    q, k, v = (make((1, 2, 70, 32), low=-1, high=1).requires_grad_() for _ in range(3))
    qd, kd, vd = (t.detach().to("vkml").requires_grad_() for t in (q, k, v))
    _, ran = kernels(
        lambda: F.scaled_dot_product_attention(qd, kd, vd, is_causal=causal).sum().backward()
    )
    # Forward on the largest tiling (4 x 4, 128 threads), both backward modes (1, 2) on
    # the smallest (2 x 1, 64 threads); constants: [mode,] TM, TN, head dims, threads.
    assert "attention_forward_f32[4,4,32,128]" in ran
    assert {"attention_backward_f32[1,2,1,32,64]", "attention_backward_f32[2,2,1,32,64]"} <= set(
        ran
    )
    assert_grads_close_to_cpu(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal),
        q,
        k,
        v,
        atol=1e-4,
        rtol=1e-4,
    )
