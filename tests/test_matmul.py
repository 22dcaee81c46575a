"""Matrix products against the CPU: mm, addmm, bmm, matmul, linear.

Tolerances: 1e-4 relative (and absolute, inputs are O(1)) for float32,
1e-2 for float16 (accumulation is expected in float32).
"""

import re

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    MATMUL_TOLERANCES,
    VKML,
    assert_close_to_cpu,
    assert_same,
    dtype_id,
    kernels_run,
    make,
    to_device,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

DTYPES = [torch.float32, torch.float16]
SHAPES = [  # (m, k, n)
    (1, 1, 1),
    (2, 3, 4),
    (17, 33, 65),
    (64, 64, 64),
    (1, 128, 1),
    (128, 7, 3),
    (0, 3, 4),
    (3, 0, 4),  # k = 0: a zero matrix
]
# operand layouts: how the (m, k) and (k, n) operands are stored
OPERANDS = {
    "contiguous": (lambda m, k, n: ((m, k), (k, n)), lambda a, b: (a, b)),
    "a_transposed": (lambda m, k, n: ((k, m), (k, n)), lambda a, b: (a.t(), b)),
    "b_transposed": (lambda m, k, n: ((m, k), (n, k)), lambda a, b: (a, b.t())),
    "both_transposed": (lambda m, k, n: ((k, m), (n, k)), lambda a, b: (a.t(), b.t())),
    "sliced": (lambda m, k, n: ((m, 2 * k), (k, 3 * n)), lambda a, b: (a[:, ::2], b[:, 1::3])),
}


def _tol(dtype):
    return MATMUL_TOLERANCES[dtype]


def _operands(layout, m, k, n, dtype):
    shapes, build = OPERANDS[layout]
    a_shape, b_shape = shapes(m, k, n)
    return (make(a_shape, dtype, low=-1, high=1), make(b_shape, dtype, low=-1, high=1)), build


def _shape_id(shape):
    return "x".join(map(str, shape))


@pytest.mark.parametrize("layout", list(OPERANDS))
@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_mm(dtype, shape, layout):
    inputs, build = _operands(layout, *shape, dtype)
    assert_close_to_cpu(lambda a, b: torch.mm(*build(a, b)), *inputs, **_tol(dtype))
    assert_close_to_cpu(lambda a, b: build(a, b)[0] @ build(a, b)[1], *inputs, **_tol(dtype))


@pytest.mark.parametrize(
    "bias_shape", [(17, 65), (65,), (1, 65), (17, 1), ()], ids=lambda s: _shape_id(s) or "0dim"
)
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1), (1, 0)])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_addmm(dtype, beta, alpha, bias_shape):
    bias = make(bias_shape, dtype, low=-1, high=1)
    (a, b), build = _operands("b_transposed", 17, 33, 65, dtype)
    assert_close_to_cpu(
        lambda c, x, y: torch.addmm(c, *build(x, y), beta=beta, alpha=alpha),
        bias,
        a,
        b,
        **_tol(dtype),
    )


def test_addmm_beta_zero_ignores_nan_bias():
    bias = torch.full((4, 5), float("nan"))
    a, b = make((4, 3), low=-1, high=1), make((3, 5), low=-1, high=1)
    _, vk = assert_close_to_cpu(
        lambda c, x, y: torch.addmm(c, x, y, beta=0), bias, a, b, **_tol(torch.float32)
    )
    assert not vk.cpu().isnan().any().item()


def test_addmm_inplace_and_out():
    c, a, b = make((4, 5)), make((4, 3)), make((3, 5))
    tol = _tol(torch.float32)

    def inplace(c, a, b):
        result = c.addmm_(a, b, beta=0.5)
        assert result is c
        return c

    assert_close_to_cpu(inplace, c, a, b, **tol)
    assert_close_to_cpu(
        lambda c, a, b: torch.addmm(c, a, b, out=torch.empty_like(c)), c, a, b, **tol
    )
    assert_close_to_cpu(
        lambda c, a, b: torch.mm(a, b, out=torch.empty(0, device=a.device)), c, a, b, **tol
    )


@pytest.mark.parametrize(
    "batch, m, k, n", [(3, 5, 7, 4), (1, 17, 33, 65), (4, 1, 1, 1), (2, 0, 3, 4), (0, 2, 3, 4)]
)
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_bmm(dtype, transposed, batch, m, k, n):
    if transposed:
        a, b = (
            make((batch, k, m), dtype, low=-1, high=1),
            make((batch, n, k), dtype, low=-1, high=1),
        )
        fn = lambda x, y: torch.bmm(x.transpose(1, 2), y.transpose(1, 2))  # noqa: E731
    else:
        a, b = (
            make((batch, m, k), dtype, low=-1, high=1),
            make((batch, k, n), dtype, low=-1, high=1),
        )
        fn = torch.bmm
    assert_close_to_cpu(fn, a, b, **_tol(dtype))


def test_bmm_batch_stride_from_slicing():
    a, b = make((6, 5, 7), low=-1, high=1), make((3, 7, 4), low=-1, high=1)
    assert_close_to_cpu(lambda x, y: torch.bmm(x[::2], y), a, b, **_tol(torch.float32))
    assert_close_to_cpu(
        lambda x, y: torch.bmm(x.permute(1, 0, 2)[:3], y), a, b, **_tol(torch.float32)
    )


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((2, 5, 7), (7, 3)),  # 3D x 2D
        ((4, 6), (6, 5)),
        ((3, 4, 6), (3, 6, 5)),
        ((2, 1, 4, 5), (3, 5, 6)),  # broadcast batch dims
        ((2, 3, 17, 33), (33, 65)),
    ],
    ids=lambda s: _shape_id(s),
)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_matmul(dtype, a_shape, b_shape):
    a, b = make(a_shape, dtype, low=-1, high=1), make(b_shape, dtype, low=-1, high=1)
    assert_close_to_cpu(torch.matmul, a, b, **_tol(dtype))


def test_matmul_3d_by_transposed_2d():
    a, w = make((2, 5, 7), low=-1, high=1), make((3, 7), low=-1, high=1)
    assert_close_to_cpu(lambda x, y: x @ y.t(), a, w, **_tol(torch.float32))
    assert_close_to_cpu(lambda x, y: x.transpose(0, 1) @ y.t(), a, w, **_tol(torch.float32))


@pytest.mark.parametrize("input_shape", [(5, 7), (2, 5, 7), (1, 7), (0, 7)], ids=_shape_id)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_linear(dtype, bias, input_shape):
    x = make(input_shape, dtype, low=-1, high=1)
    w = make((3, 7), dtype, low=-1, high=1)
    args = (x, w, make((3,), dtype, low=-1, high=1)) if bias else (x, w)
    assert_close_to_cpu(F.linear, *args, **_tol(dtype))


def test_linear_module_on_device():
    cpu = torch.nn.Linear(33, 65)
    vk = torch.nn.Linear(33, 65).to("vkml")
    vk.load_state_dict(cpu.state_dict())
    x = make((17, 33), low=-1, high=1)
    with torch.no_grad():
        assert_same(vk(to_device(x, "vkml")), cpu(x), **_tol(torch.float32))


# --------------------------------------------------------------------------
# addbmm, cross
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=dtype_id)
def test_addbmm(dtype):
    tol = MATMUL_TOLERANCES.get(dtype, dict(atol=5e-2, rtol=5e-2))
    b1, b2 = make((3, 4, 5), dtype), make((3, 5, 6), dtype)
    for bias_shape in [(4, 6), (6,), ()]:
        bias = make(bias_shape, dtype)
        assert_close_to_cpu(torch.addbmm, bias, b1, b2, **tol)
        assert_close_to_cpu(
            lambda s, a, b: torch.addbmm(s, a, b, beta=0.5, alpha=-2), bias, b1, b2, **tol
        )
    assert_close_to_cpu(lambda s, a, b: s.clone().addbmm_(a, b), make((4, 6), dtype), b1, b2, **tol)
    empty = (make((0, 4, 5), dtype), make((0, 5, 6), dtype))
    assert_close_to_cpu(torch.addbmm, make((4, 6), dtype), *empty, **tol)


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8],
    ids=dtype_id,
)
def test_cross(dtype):
    tol = dict(atol=1e-2, rtol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    a, b = make((4, 3, 5), dtype), make((4, 3, 5), dtype)
    assert_close_to_cpu(lambda x, y: torch.linalg.cross(x, y, dim=1), a, b, **tol)
    assert_close_to_cpu(lambda x, y: torch.cross(x, y, dim=1), a, b, **tol)
    c, d = make((2, 1, 3), dtype), make((1, 4, 3), dtype)  # broadcasting
    assert_close_to_cpu(torch.linalg.cross, c, d, **tol)
    assert_close_to_cpu(
        lambda x, y: torch.linalg.cross(x.transpose(0, 1), y.transpose(0, 1)), c, d, **tol
    )


# --------------------------------------------------------------------------
# Integer products (int64 accumulation, wrapping like the CPU)
# --------------------------------------------------------------------------


def _dispatches():
    return torch_vkml.memory_stats()["num_dispatches"]


# Skinny products (few output tiles, deep k) are split along k into slices whose
# fp32 partial sums a second dispatch adds up; (m, k, n, dispatches expected).
SPLIT_K_SHAPES = [(16, 4096, 16, 2), (5, 1000, 7, 2), (33, 513, 17, 2), (1, 70000, 1, 2)]


@pytest.mark.parametrize("layout", list(OPERANDS))
@pytest.mark.parametrize("shape", SPLIT_K_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("dtype", DTYPES + [torch.bfloat16], ids=dtype_id)
def test_split_k(dtype, shape, layout):
    m, k, n, expected = shape
    (a, b), build = _operands(layout, m, k, n, dtype)
    bias = make((m, n), dtype, low=-1, high=1)
    fn = lambda x, y, c: torch.addmm(c, *build(x, y), beta=0.5, alpha=2.0)  # noqa: E731
    tol = {
        torch.float32: dict(atol=1e-3, rtol=1e-3),
        torch.float16: dict(atol=0.1, rtol=2e-2),
        torch.bfloat16: dict(atol=0.25, rtol=2e-2),
    }[dtype]
    assert_close_to_cpu(fn, a, b, bias, **tol)
    x, y, c = (t.to(VKML) for t in (a, b, bias))
    torch_vkml.synchronize()
    before = _dispatches()
    fn(x, y, c)
    assert _dispatches() - before == expected


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_16bit_gemm_is_one_native_dispatch(dtype):
    # bfloat16 has its own GEMM variant (fp32 accumulation, one rounding), like float16:
    # no conversion copies around the product.
    a, b = make((40, 24), dtype), make((24, 56), dtype)
    assert_close_to_cpu(torch.mm, a, b, atol=0.05, rtol=1e-2)
    x, y = a.to(VKML), b.to(VKML)
    torch_vkml.synchronize()
    before = _dispatches()
    x @ y
    assert _dispatches() - before == 1


def test_split_k_batched_and_square_unsplit():
    a, b = make((3, 8, 2048), torch.float32), make((3, 2048, 24), torch.float32)
    assert_close_to_cpu(torch.bmm, a, b, atol=1e-3, rtol=1e-3)
    # Enough output tiles (and a short k): one dispatch, no split.
    x, y = make((384, 256), torch.float32).to(VKML), make((256, 384), torch.float32).to(VKML)
    torch_vkml.synchronize()
    before = _dispatches()
    x @ y
    assert _dispatches() - before == 1


INTEGER_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=dtype_id)
def test_integer_products(dtype):
    a, b = make((5, 7), dtype), make((7, 3), dtype)
    assert_close_to_cpu(torch.mm, a, b)
    assert_close_to_cpu(lambda x, y: x.t() @ y.t(), b, a)  # strided operands
    assert_close_to_cpu(
        lambda s, x, y: torch.addmm(s, x, y, beta=2, alpha=3), make((3,), dtype), a, b
    )
    assert_close_to_cpu(lambda s, x, y: torch.addmm(s, x, y, beta=0), make((5, 3), dtype), a, b)
    p, q = make((2, 4, 6), dtype), make((2, 6, 3), dtype)
    assert_close_to_cpu(torch.bmm, p, q)
    assert_close_to_cpu(lambda s, x, y: torch.baddbmm(s, x, y, alpha=-1), make((4, 3), dtype), p, q)
    assert_close_to_cpu(torch.addbmm, make((4, 3), dtype), p, q)
    assert_close_to_cpu(torch.mv, a, make((7,), dtype))
    assert_close_to_cpu(torch.dot, make((9,), dtype), make((9,), dtype))
    assert_close_to_cpu(torch.addmv, make((5,), dtype), a, make((7,), dtype))
    big = make((70, 40), dtype), make((40, 90), dtype)  # several tiles
    assert_close_to_cpu(torch.mm, *big)


def test_integer_products_wrap():
    big = torch.full((3, 4), 2**40, dtype=torch.int64)
    assert_close_to_cpu(torch.mm, big, torch.full((4, 2), 2**30, dtype=torch.int64))
    x = torch.full((2, 64), 100, dtype=torch.int32)
    assert_close_to_cpu(torch.mm, x * 1000, x.t() * 1000)
    u = torch.full((2, 5), 200, dtype=torch.uint8)
    assert_close_to_cpu(torch.mm, u, u.t())


def test_matrix_unit_kernel_is_built_where_its_compiler_is_installed():
    """requirements-dev.txt installs a glslang that compiles the cooperative-matrix
    shader, and SPIRV-Tools beside it, which retype its bf16 variant; a build with
    them must contain those variants (a missing library once left one out silently).
    The emulated variants need only glslc."""
    import sysconfig
    from pathlib import Path

    glslang = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "bin" / "glslang"
    if glslang.exists():
        assert torch_vkml._C.has_shader("gemm_coopmat_f16")
        if (glslang.parent / "spirv-as").exists():
            assert torch_vkml._C.has_shader("gemm_coopmat_bf16")
    assert torch_vkml._C.has_shader("gemm_coopmat_emulated")
    assert torch_vkml._C.has_shader("gemm_coopmat_emulated_bf16")
    assert not torch_vkml._C.has_shader("no_such_shader")


def test_matrix_unit_status_names_its_dtype():
    for dtype in ("float16", "bfloat16"):
        assert torch_vkml._C.coopmat_status(0, dtype) in (
            "active",
            "emulated",
            "unchecked",
            "rejected",
            "off",
            "not built",
            "unsupported",
        )
    with pytest.raises(ValueError, match="float16' or 'bfloat16"):
        torch_vkml._C.coopmat_status(0, "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["emulate", "1", "fp16"])
def test_half_products_through_the_matrix_unit_kernel(mode, dtype):
    """fp16 and bf16 mm, bmm, linear (with backward) and a transposed operand through
    the cooperative-matrix GEMM; float64 CPU reference, relative tolerance 1e-2 (fp16)
    or 2e-2 (bf16). TORCH_VKML_COOPMAT=emulate runs its emulated variant on any device
    (Debian 12's lavapipe has no matrix units); =1 runs the real kernel where the
    device offers matrix units for the dtype and the build has the shader (fp16:
    Mesa 26's lavapipe, see scripts/lavapipe_next.sh; bf16: no device we have), and
    must then pass its start-up check. =fp16 leaves bf16 products on the scalar
    kernel ("off")."""
    from conftest import describe, run_python

    proc = run_python(
        """
        import os, torch, torch_vkml
        mode = os.environ["TORCH_VKML_COOPMAT"]
        name = os.environ["DTYPE"]
        dtype = getattr(torch, name)
        bf16 = name == "bfloat16"
        props = torch_vkml.get_device_properties(0)
        shape = props.cooperative_matrix_bf16 if bf16 else props.cooperative_matrix
        if mode == "emulate":
            expected = "emulated"
        elif mode == "fp16" and bf16:
            expected = "off"
        elif not shape:
            expected = "unsupported"
        elif not torch_vkml._C.has_shader("gemm_coopmat_bf16" if bf16 else "gemm_coopmat_f16"):
            expected = "not built"
        else:
            expected = "active"
        torch.manual_seed(0)
        def check(got, want, what):
            err = (got.cpu().double() - want).abs().max().item()
            scale = want.abs().max().item() + 1
            tol = 2e-2 if bf16 else 1e-2
            assert err <= tol * scale, f"{what}: max error {err} (scale {scale})"
        # Integer operands: every sum is exact in fp32, so the one rounding to the
        # storage type (to nearest, ties to even) must give exactly the CPU's result.
        ia = torch.randint(-8, 9, (64, 96)).to(dtype)
        ib = torch.randint(-8, 9, (96, 48)).to(dtype)
        got = torch.mm(ia.to("vkml"), ib.to("vkml")).cpu()
        want = (ia.double() @ ib.double()).to(dtype)
        assert torch.equal(got, want), (got.double() - want.double()).abs().max()
        assert (want.double().abs() > 256).any()  # where bf16 rounds
        a = torch.randn(130, 96).to(dtype)
        b = torch.randn(96, 70).to(dtype)
        check(torch.mm(a.to("vkml"), b.to("vkml")), a.double() @ b.double(), "mm")
        check(torch.mm(a.t().contiguous().to("vkml").t(), b.to("vkml")),
              a.double() @ b.double(), "mm, A transposed")
        x = torch.randn(4, 65, 48).to(dtype)
        y = torch.randn(4, 48, 80).to(dtype)
        check(torch.bmm(x.to("vkml"), y.to("vkml")), x.double() @ y.double(), "bmm")
        lin = torch.nn.Linear(64, 96).to(dtype)
        inp = torch.randn(50, 64).to(dtype)
        dl = torch.nn.Linear(64, 96).to(dtype).to("vkml")
        dl.load_state_dict(lin.state_dict())
        di = inp.to("vkml").requires_grad_()
        out = dl(di)
        out.float().square().sum().backward()
        ref_w = lin.weight.detach().double().requires_grad_()
        ref_i = inp.double().requires_grad_()
        ref = torch.nn.functional.linear(ref_i, ref_w, lin.bias.detach().double())
        ref.square().sum().backward()
        check(out, ref, "linear")
        check(di.grad, ref_i.grad, "linear input grad")
        check(dl.weight.grad, ref_w.grad, "linear weight grad")
        status = torch_vkml._C.coopmat_status(0, name)
        assert status == expected, status
        assert not torch_vkml.fallback_counts(), torch_vkml.fallback_counts()
        messages = torch_vkml.validation_messages()
        assert not messages, messages
        print("ok", expected)
        """,
        env={"TORCH_VKML_COOPMAT": mode, "DTYPE": dtype},
    )
    assert proc.returncode == 0 and "ok" in proc.stdout, describe(proc)


# ------------------------------------------------------ addmv, vdot, int8

TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1)])
def test_addmv_and_vdot(beta, alpha):
    self_, mat, vec = make((4,), torch.float32), make((4, 6), torch.float32), make((6,))
    if beta == 0:
        self_[0] = float("nan")  # ignored when beta == 0
    assert_close_to_cpu(
        lambda s, m, v: torch.addmv(s, m, v, beta=beta, alpha=alpha), self_, mat, vec, **TOL
    )
    assert_close_to_cpu(lambda m, v: m.t()[:6, :4].t() @ v, mat, vec, **TOL)
    assert_close_to_cpu(torch.vdot, vec, make((6,), torch.float32), **TOL)


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=dtype_id)
def test_integer_products_take_float_scalars_as_the_element_type(dtype):
    # The CPU converts alpha and beta to the element type: 1.7 is 1, -2.6 is -2 (int64
    # addmv, baddbmm and addbmm fell back to the CPU for this before).
    a, b, c = make((5, 7), dtype), make((7, 3), dtype), make((5, 3), dtype)
    p, q = make((2, 5, 6), dtype), make((2, 6, 3), dtype)
    alpha = 2.6 if dtype == torch.uint8 else -2.6
    assert_close_to_cpu(lambda s, x, y: torch.addmm(s, x, y, beta=1.7, alpha=alpha), c, a, b)
    assert_close_to_cpu(lambda s, x, y: torch.addmm(s, x, y, beta=0.2, alpha=1), c, a, b)
    v = make((7,), dtype)
    assert_close_to_cpu(lambda s, x, y: torch.addmv(s, x, y, beta=1.2, alpha=alpha), c[:, 0], a, v)
    assert_close_to_cpu(lambda s, x, y: torch.addmv(s, x, y, beta=3), c[:1, 0], a, v)
    assert_close_to_cpu(lambda s, x, y: torch.baddbmm(s, x, y, beta=1.7, alpha=0.6), c, p, q)
    assert_close_to_cpu(lambda s, x, y: torch.addbmm(s, x, y, beta=0.6, alpha=alpha), c, p, q)


@pytest.mark.parametrize("dtype", [torch.int16, torch.int8, torch.uint8], ids=dtype_id)
def test_integer_product_scalars_out_of_the_dtype_raise_as_on_the_cpu(dtype):
    a, b, c = make((2, 3), dtype), make((3, 2), dtype), make((2, 2), dtype)
    for kwargs in ({"alpha": 70000}, {"beta": -70000}):
        with pytest.raises(RuntimeError) as cpu:
            torch.addmm(c, a, b, **kwargs)
        with pytest.raises(RuntimeError, match=str(cpu.value)):
            torch.addmm(*to_device((c, a, b), VKML), **kwargs)
        with pytest.raises(RuntimeError, match=str(cpu.value)):  # the out= form too
            cv, av, bv = to_device((c, a, b), VKML)
            torch.addmm(cv, av, bv, out=torch.empty_like(cv), **kwargs)
    with pytest.raises(RuntimeError, match="size mismatch, got input \\(3\\), mat \\(2x3\\)"):
        torch.addmv(*to_device((make((3,), dtype), a, make((3,), dtype)), VKML))


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (32, 64, 16), (37, 130, 29), (5, 0, 3)])
def test_int_mm_keeps_int32_sums(m, k, n):
    # torch._int_mm (torchao's int8 linear layers): int8 operands whose sums pass 127.
    a, b = (
        make((m, k), torch.int8, low=-128, high=127),
        make((k, n), torch.int8, low=-128, high=127),
    )
    assert_close_to_cpu(torch._int_mm, a, b)
    assert_close_to_cpu(lambda x, y: torch._int_mm(x.t().contiguous().t(), y.t()), a, b.t())
    out = torch.empty(0, dtype=torch.int32, device=VKML)
    torch._int_mm(*to_device((a, b), VKML), out=out)
    assert torch.equal(out.cpu(), torch._int_mm(a, b))


def test_int_mm_errors_are_the_cpus():
    i8 = torch.int8
    cases = [
        (torch.ones(3, dtype=i8), torch.ones(3, 4, dtype=i8)),
        (torch.ones(2, 3, dtype=i8), torch.ones(3, dtype=i8)),
        (torch.ones(2, 3, dtype=i8), torch.ones(4, 4, dtype=i8)),
        (torch.ones(2, 3), torch.ones(3, 4, dtype=i8)),
        (torch.ones(2, 3, dtype=i8), torch.ones(3, 4, dtype=torch.uint8)),
    ]
    for a, b in cases:
        with pytest.raises((RuntimeError, IndexError)) as cpu:
            torch._int_mm(a, b)
        message = str(cpu.value).replace("int_mm_out_cpu", "_int_mm")
        with pytest.raises(cpu.type, match=re.escape(message)):
            torch._int_mm(*to_device((a, b), VKML))


# (m, k, n, A transposed, A's storage offset, B transposed, B's offset): A transposed is
# contiguous along m, B transposed along k (x @ w.T). Together the cases give each operand
# form every load width: 8 (fast side a multiple of 8 elements, aligned to 16 bytes), 4
# (multiple of 4, or an 8-byte offset), 1 (odd).
LOAD_CASES = [
    (36, 48, 40, False, 0, False, 0),
    (33, 44, 50, False, 0, True, 0),
    (40, 45, 36, False, 0, False, 0),
    (48, 40, 33, True, 0, True, 0),
    (44, 35, 37, True, 4, False, 0),
    (41, 41, 34, True, 0, True, 0),
    (32, 48, 48, False, 4, False, 8),
]


def _width(fast, offset):
    for w in (8, 4):
        if fast % w == 0 and offset % w == 0:
            return w
    return 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("case", LOAD_CASES, ids=lambda c: "x".join(map(str, c[:3])))
def test_matrix_unit_gemm_operand_forms_and_load_widths(case, dtype, emulated_matrix_units):
    """The matrix-unit kernel's operand forms (staged as given, or transposed) and global
    load widths (8, 4 or 1 elements) are specialization constants: each combination is
    its own pipeline, named with them, and gives the CPU's product (float64 on the same
    values; relative tolerance 1e-2 for fp16, 2e-2 for bf16)."""
    m, k, n, a_t, a_off, b_t, b_off = case

    def operand(rows, cols, transposed, offset):
        shape = (cols, rows) if transposed else (rows, cols)
        flat = make((shape[0] * shape[1] + offset,), low=-1, high=1).to(dtype)
        stored = flat.to("vkml")[offset:].view(shape)
        cpu = flat[offset:].view(shape)
        return (stored.t(), cpu.t()) if transposed else (stored, cpu)

    a, a_cpu = operand(m, k, a_t, a_off)
    b, b_cpu = operand(k, n, b_t, b_off)
    torch.mm(a, b)  # the kernel's start-up check runs at its first product, not below
    with torch_vkml.profile() as prof:
        got = torch.mm(a, b)
        torch_vkml.synchronize()
    names = [kern.name for kern in prof.kernels if kern.name.startswith("gemm_coopmat")]
    assert len(names) == 1, [kern.name for kern in prof.kernels]
    forms = [int(v) for v in names[0].split("[")[1].rstrip("]").split(",")][8:]
    a_w = _width(m if a_t else k, a_off)
    b_w = _width(k if b_t else n, b_off)
    assert forms == [int(a_t), int(b_t), a_w, b_w], names[0]
    want = a_cpu.double() @ b_cpu.double()
    err = (got.cpu().double() - want).abs().max().item()
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
    assert err <= tol * (want.abs().max().item() + 1), err


# ------------------------------------------- torch.set_float32_matmul_precision


@pytest.fixture
def matmul_precision():
    before = torch.get_float32_matmul_precision()
    yield torch.set_float32_matmul_precision
    torch.set_float32_matmul_precision(before)


@pytest.fixture
def fp32_on_bf16_units():
    """The bf16 units for "high" and "medium" are off by default (slower than the float32
    kernel on the GPUs measured); TORCH_VKML_FP32_ON_BF16=1 turns them on."""
    torch_vkml._C._set_fp32_on_bf16_units(True)
    yield
    torch_vkml._C._set_fp32_on_bf16_units(False)


def _relative_error(got, a, b):
    """Largest error against the float64 product, relative to sum |a| |b| of its row."""
    want = a.double() @ b.double()
    return ((got.cpu().double() - want).abs() / (a.double().abs() @ b.double().abs())).max().item()


# Measured on lavapipe (emulated): high ~2e-6, medium ~1e-3 of sum |a| |b|; exact fp32 ~2e-7.
PRECISION_BOUND = {"high": 2e-5, "medium": 8e-3}


@pytest.mark.parametrize("precision", ["high", "medium"])
def test_float32_matmul_precision_runs_on_bf16_matrix_units(
    precision, matmul_precision, emulated_matrix_units, fp32_on_bf16_units, no_fallback
):
    """As CUDA runs float32 products on TF32 tensor cores under "high", vkml runs them on
    bf16 matrix units: "high" as bf16x3 (hi hi + hi lo + lo hi, about 16 significant
    bits, finer than TF32), "medium" as one bf16 product; fp32 accumulation and a float32
    result either way, with bias, alpha and beta, batched and transposed operands, and
    linear's backward."""
    bound = PRECISION_BOUND[precision]
    a, b = make((3, 70, 130), low=-1, high=1), make((3, 130, 90), low=-1, high=1)
    torch.bmm(a.to("vkml"), b.to("vkml"))  # the matrix units' start-up check, unprofiled
    matmul_precision(precision)
    got, ran = kernels_run(lambda: torch.bmm(a.to("vkml"), b.to("vkml")))
    assert got.dtype == torch.float32
    assert {"gemm_split_bf16", "gemm_coopmat_emulated_bf16"} <= ran, ran
    assert _relative_error(got, a, b) <= bound
    # A transposed in memory, addmm's bias, alpha and beta
    x, w, bias = make((150, 96), low=-1, high=1), make((96, 40), low=-1, high=1), make((40,))
    xt = x.t().contiguous().to("vkml").t()
    got = torch.addmm(bias.to("vkml"), xt, w.to("vkml"), beta=0.5, alpha=2.0)
    want = 0.5 * bias.double() + 2.0 * (x.double() @ w.double())
    scale = 2.0 * (x.double().abs() @ w.double().abs()) + 0.5 * bias.double().abs()
    assert ((got.cpu().double() - want).abs() / scale).max().item() <= bound
    # nn.Linear forward and backward
    lin = torch.nn.Linear(96, 64)
    dl = torch.nn.Linear(96, 64).to("vkml")
    dl.load_state_dict(lin.state_dict())
    inp = make((50, 96), low=-1, high=1)
    di = inp.to("vkml").requires_grad_()
    dl(di).square().sum().backward()
    ri = inp.double().requires_grad_()
    rw = lin.weight.detach().double().requires_grad_()
    torch.nn.functional.linear(ri, rw, lin.bias.detach().double()).square().sum().backward()
    for name, got, want in (("input", di.grad, ri.grad), ("weight", dl.weight.grad, rw.grad)):
        err = ((got.cpu().double() - want).abs().max() / want.abs().max()).item()
        assert err <= 20 * bound, (name, err)
    # an infinite element stays infinite (its low part is 0), as in float32
    a_inf = a[0].clone()
    a_inf[3, 5] = float("inf")
    got = torch.mm(a_inf.to("vkml"), b[0].abs().to("vkml")).cpu()
    assert torch.isinf(got[3]).all() and torch.isfinite(got[torch.arange(70) != 3]).all()
    b_inf = b[0].abs()
    b_inf[5, 7] = float("inf")
    got = torch.mm(a[0].abs().to("vkml"), b_inf.to("vkml")).cpu()
    assert torch.isinf(got[:, 7]).all() and torch.isfinite(got[:, torch.arange(90) != 7]).all()


def test_float32_matmul_precision_high_stays_on_the_float32_kernel_by_default(
    matmul_precision, emulated_matrix_units, no_fallback
):
    """On the GPUs measured, bf16x3 on the matrix units was slower than the float32 kernel
    (H100: 10.8 against 23.9 TFLOP/s), whose exact result "high" also allows."""
    a, b = make((3, 70, 130), low=-1, high=1), make((3, 130, 90), low=-1, high=1)
    torch.bmm(a.to("vkml"), b.to("vkml"))
    for precision in ("high", "medium"):
        matmul_precision(precision)
        got, ran = kernels_run(lambda: torch.bmm(a.to("vkml"), b.to("vkml")))
        assert "gemm_split_bf16" not in ran and "gemm_f32" in ran, (precision, ran)
        assert _relative_error(got, a, b) <= 1e-6


def test_float32_matmul_precision_highest_or_no_matrix_units_stay_exact(
    matmul_precision, emulated_matrix_units, fp32_on_bf16_units, no_fallback
):
    a, b = make((70, 130), low=-1, high=1), make((130, 90), low=-1, high=1)
    for precision, mode in (("highest", "emulate"), ("high", "0"), ("medium", "0")):
        matmul_precision(precision)
        torch_vkml._C._set_coopmat_mode(mode)
        got, ran = kernels_run(lambda: torch.mm(a.to("vkml"), b.to("vkml")))
        assert ran <= {"gemm_f32", "copy"}, (precision, mode, ran)
        assert _relative_error(got, a, b) <= 1e-6
    # products too small for the matrix-unit tiles stay exact under "high" too
    torch_vkml._C._set_coopmat_mode("emulate")
    matmul_precision("high")
    s, t = make((16, 40), low=-1, high=1), make((40, 24), low=-1, high=1)
    got, ran = kernels_run(lambda: torch.mm(s.to("vkml"), t.to("vkml")))
    assert "gemm_split_bf16" not in ran and _relative_error(got, s, t) <= 1e-6


# ---------------------------------------------------------------- float64

FP64 = torch_vkml.get_device_properties(0).supports_fp64


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda a, b, c: a @ b, id="mm"),
        pytest.param(lambda a, b, c: a.t().contiguous().t() @ b.t().contiguous().t(), id="mm-T"),
        pytest.param(lambda a, b, c: torch.addmm(c, a, b), id="addmm"),
        pytest.param(lambda a, b, c: torch.addmm(c, a, b, beta=0.1, alpha=1 / 3), id="addmm-a-b"),
        pytest.param(lambda a, b, c: torch.bmm(a.expand(3, -1, -1), b.expand(3, -1, -1)), id="bmm"),
        pytest.param(
            lambda a, b, c: torch.baddbmm(
                c.expand(2, -1, -1), a.expand(2, -1, -1), b.expand(2, -1, -1), alpha=0.7
            ),
            id="baddbmm",
        ),
        pytest.param(lambda a, b, c: a @ b[:, 0], id="mv"),
        pytest.param(lambda a, b, c: torch.nn.functional.linear(a, b.t(), c[0]), id="linear"),
    ],
)
def test_float64_products(fn):
    """float64 products accumulate in float64 (with fused multiply-adds), alpha and beta
    that float32 cannot hold included; devices without float64 say so."""
    a, b, c = (
        make((37, 301), torch.float64),
        make((301, 45), torch.float64),
        make((37, 45), torch.float64),
    )
    if not FP64:
        with pytest.raises(NotImplementedError, match="float64"):
            fn(a.to(VKML), b.to(VKML), c.to(VKML))
        return
    got = fn(a.to(VKML), b.to(VKML), c.to(VKML))
    torch.testing.assert_close(got.cpu(), fn(a, b, c), rtol=1e-12, atol=1e-12)


def test_float64_product_precision_and_gradients():
    if not FP64:
        pytest.xfail("the device has no float64 arithmetic")
    # Terms that cancel to 1: float32 accumulation would return 0.
    a = torch.tensor([[1e9, 1.0, -1e9]], dtype=torch.float64)
    b = torch.ones(3, 1, dtype=torch.float64)
    assert (a.to(VKML) @ b.to(VKML)).item() == 1.0
    w = make((6, 5), torch.float64)
    x = make((4, 6), torch.float64)
    wd = w.to(VKML).requires_grad_()
    (x.to(VKML) @ wd).square().sum().backward()
    wc = w.clone().requires_grad_()
    (x @ wc).square().sum().backward()
    torch.testing.assert_close(wd.grad.cpu(), wc.grad, rtol=1e-12, atol=1e-12)
    # complex128 products are four float64 ones.
    z = torch.complex(make((5, 7), torch.float64), make((5, 7), torch.float64))
    torch.testing.assert_close((z.to(VKML) @ z.T.to(VKML)).cpu(), z @ z.T, rtol=1e-12, atol=1e-12)


def test_baddbmm_in_place_may_not_broadcast_self():
    # self.baddbmm_(a, b) with a self that broadcasts to the result was resized; the CPU
    # raises.
    for dev in ("cpu", VKML):
        self_ = torch.ones(1, device=dev)
        with pytest.raises(RuntimeError, match="Bad in-place call"):
            self_.baddbmm_(torch.ones(5, 5, 5, device=dev), torch.ones(5, 5, 10, device=dev))
        assert self_.shape == (1,)
