"""Unary elementwise ops (ops_unary.cpp) against the CPU: math, special values, integer
inputs, in-place and out= forms, clamp with tensor bounds."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    F16,
    INF,
    NAN,
    VKML,
    assert_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    make,
    tol,
    unary_case,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

# ------------------------------------------------------------ unary math

# name -> (fn, make() keywords for float inputs, float32 tolerances)
UNARY = {
    "sin": (torch.sin, {}, None),
    "cos": (torch.cos, {}, None),
    "tan": (torch.tan, dict(low=-1.4, high=1.4), dict(atol=1e-5, rtol=2e-5)),
    "asin": (torch.asin, dict(low=-1, high=1), None),
    "acos": (torch.acos, dict(low=-1, high=1), None),
    "atan": (torch.atan, dict(low=-8, high=8), None),
    "sinh": (torch.sinh, {}, None),
    "cosh": (torch.cosh, {}, None),
    "tanh": (torch.tanh, {}, None),
    "asinh": (torch.asinh, dict(low=-20, high=20), None),
    "acosh": (torch.acosh, dict(low=1, high=20), None),
    "atanh": (torch.atanh, dict(low=-0.99, high=0.99), None),
    "exp": (torch.exp, {}, None),
    "exp2": (torch.exp2, {}, None),
    "expm1": (torch.expm1, {}, None),
    "log": (torch.log, dict(low=0.01, high=20), None),
    "log2": (torch.log2, dict(low=0.01, high=20), None),
    "log10": (torch.log10, dict(low=0.01, high=20), None),
    "log1p": (torch.log1p, dict(low=-0.9, high=20), None),
    "erf": (torch.erf, {}, None),
    "erfc": (torch.erfc, {}, None),
    "erfinv": (torch.erfinv, dict(low=-0.999, high=0.999), dict(atol=1e-5, rtol=1e-4)),
    "lgamma": (torch.lgamma, dict(low=0.1, high=10), dict(atol=1e-5, rtol=1e-5)),
    "lgamma_neg": (torch.lgamma, dict(low=-4.9, high=-0.1), dict(atol=2e-5, rtol=1e-4)),
    "digamma": (torch.digamma, dict(low=0.1, high=10), dict(atol=1e-5, rtol=1e-4)),
    "digamma_neg": (torch.digamma, dict(low=-4.9, high=-0.1), dict(atol=1e-4, rtol=1e-4)),
    "trigamma": (lambda t: torch.polygamma(1, t), dict(low=0.1, high=10), dict(rtol=1e-4)),
    "trigamma_neg": (lambda t: torch.polygamma(1, t), dict(low=-4.9, high=-0.1), dict(rtol=1e-4)),
    "floor": (torch.floor, {}, None),
    "ceil": (torch.ceil, {}, None),
    "round": (torch.round, dict(discrete=False), None),
    "round_decimals": (lambda t: torch.round(t, decimals=2), {}, dict(atol=1e-6, rtol=1e-5)),
    "round_neg_decimals": (lambda t: torch.round(t * 1000, decimals=-2), {}, None),
    "trunc": (torch.trunc, {}, None),
    "frac": (torch.frac, {}, None),
    "sign": (torch.sign, {}, None),
    "sgn": (torch.sgn, {}, None),
    "signbit": (torch.signbit, {}, None),
    "reciprocal": (torch.reciprocal, dict(nonzero=True), None),
    "rsqrt": (torch.rsqrt, dict(low=0.01, high=9), None),
    "sqrt": (torch.sqrt, dict(low=0, high=9), None),
    "square": (torch.square, {}, None),
    "sigmoid": (torch.sigmoid, {}, None),
    "logit": (torch.logit, dict(low=0.01, high=0.99), None),
    "logit_eps": (lambda t: torch.logit(t, eps=0.2), dict(low=0, high=1), None),
    "isnan": (torch.isnan, {}, None),
    "isinf": (torch.isinf, {}, None),
    "isposinf": (torch.isposinf, {}, None),
    "isneginf": (torch.isneginf, {}, None),
    "isfinite": (torch.isfinite, {}, None),
    "nan_to_num": (torch.nan_to_num, {}, None),
    "neg": (torch.neg, {}, None),
    "abs": (torch.abs, {}, None),
    "deg2rad": (torch.deg2rad, {}, None),
    "sinc": (torch.sinc, {}, None),
    "entr": (torch.special.entr, dict(low=0, high=5), None),
    "logical_not": (torch.logical_not, {}, None),
}


@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_math(name, layout):
    fn, kw, f32_tol = UNARY[name]
    x, build = unary_case(layout, torch.float32, **kw)
    assert_close_to_cpu(lambda t: fn(build(t)), x, **tol(torch.float32, f32_tol))


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_math_low_precision(name):
    fn, kw, _ = UNARY[name]
    for dtype in (torch.float16, torch.bfloat16):
        x = make((4, 5), dtype, **kw)
        assert_close_to_cpu(fn, x, **tol(dtype))


@pytest.mark.parametrize("layout", ["empty", "zerodim"])
def test_unary_math_empty_and_zerodim(layout):
    for name in ("tan", "erfinv", "lgamma", "logit_eps", "signbit", "nan_to_num", "frac"):
        fn, kw, _ = UNARY[name]
        x, build = unary_case(layout, torch.float32, **kw)
        assert_close_to_cpu(lambda t, fn=fn, build=build: fn(build(t)), x)


SPECIAL = torch.tensor(
    [-INF, INF, NAN, -0.0, 0.0, 1e-30, -1e-30, 1e-6, -1e-6, 1e-3, -1e-3, 0.25, -0.25]
    + [0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.5, -3.5, 10.0, -10.0, 50.0, -50.0]
)

# Ops and tolerances for special and extreme inputs (float32).
SPECIAL_OPS = {
    "exp": (torch.exp, dict(rtol=2e-5)),
    "exp2": (torch.exp2, dict(rtol=2e-5)),
    "expm1": (torch.expm1, dict(rtol=2e-5)),
    "log": (torch.log, {}),
    "log2": (torch.log2, {}),
    "log10": (torch.log10, {}),
    "log1p": (torch.log1p, {}),
    "sqrt": (torch.sqrt, {}),
    "rsqrt": (torch.rsqrt, {}),
    "sin": (torch.sin, dict(atol=1e-6)),
    "cos": (torch.cos, dict(atol=1e-6)),
    "tanh": (torch.tanh, {}),
    "sinh": (torch.sinh, dict(rtol=2e-5)),
    "cosh": (torch.cosh, dict(rtol=2e-5)),
    "asinh": (torch.asinh, {}),
    "acosh": (torch.acosh, {}),
    "atanh": (torch.atanh, {}),
    "asin": (torch.asin, {}),
    "acos": (torch.acos, {}),
    "atan": (torch.atan, {}),
    "erf": (torch.erf, dict(atol=1e-6)),
    "erfc": (torch.erfc, dict(atol=1e-6)),
    "erfinv": (torch.erfinv, dict(atol=1e-5, rtol=1e-4)),
    "sigmoid": (torch.sigmoid, dict(atol=1e-6)),
    "lgamma": (torch.lgamma, dict(atol=2e-5, rtol=1e-4)),
    "digamma": (torch.digamma, dict(atol=1e-4, rtol=1e-4)),
    "floor": (torch.floor, {}),
    "ceil": (torch.ceil, {}),
    "round": (torch.round, {}),
    "trunc": (torch.trunc, {}),
    "frac": (torch.frac, {}),
    "sign": (torch.sign, {}),
    "signbit": (torch.signbit, {}),
    "reciprocal": (torch.reciprocal, {}),
    "isnan": (torch.isnan, {}),
    "isinf": (torch.isinf, {}),
    "isposinf": (torch.isposinf, {}),
    "isneginf": (torch.isneginf, {}),
    "isfinite": (torch.isfinite, {}),
    "nan_to_num": (torch.nan_to_num, {}),
    "nan_to_num_args": (lambda t: torch.nan_to_num(t, nan=1.5, posinf=7.0, neginf=-8.0), {}),
    "logit": (torch.logit, {}),
    "sinc": (torch.sinc, dict(atol=1e-6)),
    "entr": (torch.special.entr, {}),
    "abs": (torch.abs, {}),
}


@pytest.mark.parametrize("name", list(SPECIAL_OPS))
def test_unary_special_values(name):
    fn, kw = SPECIAL_OPS[name]
    x = SPECIAL
    if name in ("erfinv", "logit", "acos", "asin", "atanh"):
        x = torch.cat([x, torch.tensor([0.999, -0.999, 0.9, -0.9, 1e-4, -1e-4])])
    if name in ("sin", "cos"):
        x = x[x.abs() < 20]
    _, vk = assert_close_to_cpu(fn, x, **kw)
    if x.dtype == vk.dtype and name in ("floor", "ceil", "trunc", "round", "abs", "sign"):
        # signed zeros survive
        assert torch.equal(torch.signbit(vk.cpu()), torch.signbit(fn(x)))


def test_small_arguments_keep_relative_precision():
    # The driver's exp/log/tanh are only absolutely accurate; these use series near 0.
    x = torch.tensor([1e-7, -1e-7, 3e-5, -3e-5, 1e-3, -1e-3, 0.1, -0.1, 0.45, -0.45])
    for fn in (torch.expm1, torch.log1p, torch.tanh, torch.sinh, torch.asinh, torch.atanh):
        assert_close_to_cpu(fn, x, atol=0, rtol=1e-5)
    # NVIDIA's sin is absolutely accurate only (sin(3e-30) == 0): sin, tan, and what
    # divides by them (sinc, lgamma's reflection) take a series for small arguments.
    for fn in (torch.sin, torch.tan, torch.sinc):
        assert_close_to_cpu(
            fn, torch.cat([x, torch.tensor([1e-30, -1e-30, 0.78])]), atol=0, rtol=1e-5
        )
    assert_close_to_cpu(
        torch.lgamma, torch.tensor([1e-30, 1e-7, -1e-7, 3e-5, -0.3]), atol=0, rtol=1e-5
    )
    for fn in (torch.erf, torch.atan, torch.asin):
        assert_close_to_cpu(fn, x, atol=0, rtol=1e-5)
    assert_close_to_cpu(torch.log, 1 + x, atol=0, rtol=2e-5)


def test_float32_exp_family_stays_within_a_few_ulps():
    # The driver's exp is exp2(x log2 e): the product's rounding cost |x| ulps (62 at
    # x = 80 on lavapipe), its exp2 3 more. exp_f reduces the argument by n ln 2 in two
    # parts and takes e^r from its series; expm1 past 1/2 scales expm1(r) instead of
    # subtracting 1 (6.6 ulps lost to cancellation before); sinh and cosh go through them
    # (9 ulps before). The CPU's are within 0.5-1 ulp, its sigmoid 2.2.
    wide = torch.cat([torch.linspace(-87.0, 88.5, 200001), torch.tensor([-103.0, -88.0])])
    mid = torch.linspace(-20.0, 20.0, 100001)
    for fn, x, bound in (
        (torch.exp, wide, 1.5),
        (torch.sigmoid, wide, 3),
        (torch.expm1, mid, 2),
        (torch.sinh, wide.clamp(-89, 89), 3),
        (torch.cosh, wide.clamp(-89, 89), 3),
        (torch.tanh, mid, 3),
    ):
        ref = fn(x.double())
        got = fn(x.to(VKML)).cpu().double()
        r32 = ref.float().abs()
        ulp = (torch.nextafter(r32, torch.tensor(math.inf)) - r32).double()
        normal = (r32 >= torch.finfo(torch.float32).tiny) & torch.isfinite(r32)
        assert ((got - ref).abs() / ulp)[normal].max() <= bound, fn
    edge = torch.tensor([math.inf, -math.inf, math.nan, 88.8, -104.5, 0.0, -0.0])
    for fn in (torch.exp, torch.expm1, torch.sinh, torch.cosh):
        assert_close_to_cpu(fn, edge, atol=0, rtol=0)


def test_float32_lgamma_keeps_relative_precision_at_its_zeros():
    # lgamma vanishes at 1 and 2 and dips to -0.12 at 1.46: a sum of terms near 8
    # (Stirling's series after shifting up) lost every digit there. Within 8 ulps of the
    # float64 value from 1/2 to 8 and just beside both zeros (the CPU's is within 1).
    near = torch.logspace(-7, -1, 60)
    x = torch.cat([torch.linspace(0.5, 8.0, 30001), 1 + near, 1 - near, 2 + near, 2 - near])
    x = torch.cat([x, torch.tensor([1.0, 2.0])])
    ref = torch.lgamma(x.double())
    got = torch.lgamma(x.to(VKML)).cpu().double()
    ulp = torch.nextafter(ref.float(), torch.tensor(math.inf)).double() - ref.float().double()
    assert ((got - ref).abs() / ulp).max() <= 8
    assert got[-2:].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool], ids=dtype_id)
def test_unary_on_integers(dtype):
    x = make((4, 5), dtype)
    for fn in (torch.sin, torch.exp, torch.sqrt, torch.erf, torch.lgamma, torch.sigmoid):
        assert_close_to_cpu(lambda t, fn=fn: fn(t.abs() if dtype != torch.bool else t), x)
    for fn in (torch.sign, torch.signbit, torch.isnan, torch.isinf, torch.isfinite):
        assert_close_to_cpu(fn, x)
    for fn in (torch.isposinf, torch.nan_to_num):
        assert_close_to_cpu(fn, x)
    for fn in (torch.floor, torch.ceil, torch.round, torch.trunc):
        if dtype == torch.bool:
            assert_raises_like_cpu(fn, x)
        else:
            assert_close_to_cpu(fn, x)
    if dtype != torch.bool:
        assert_raises_like_cpu(torch.frac, x)
        assert_close_to_cpu(torch.square, x)


def test_bitwise_not_and_logical_not():
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.bool):
        x = make((3, 7), dtype)
        assert_close_to_cpu(torch.bitwise_not, x)
        assert_close_to_cpu(lambda t: ~t, x)
        assert_close_to_cpu(torch.logical_not, x)
    assert_raises_like_cpu(torch.bitwise_not, make(4))


def _inplace(t, method, *args, **kwargs):
    result = getattr(t, method)(*args, **kwargs)
    assert result is t, f"{method} must return self"
    return t


def test_unary_inplace_and_out():
    x = make((4, 5), low=0.1, high=0.9)
    for name in ("sin", "tan", "asin", "atanh", "erfinv", "lgamma", "frac", "logit", "sgn"):
        assert_close_to_cpu(lambda t, n=name: _inplace(t, n + "_"), x)
        assert_close_to_cpu(lambda t, n=name: getattr(torch, n)(t, out=torch.empty_like(t)), x)
    assert_close_to_cpu(lambda t: t.round_(decimals=1), x)
    assert_close_to_cpu(
        lambda t: torch.signbit(t - 0.5, out=torch.empty(0, dtype=torch.bool, device=t.device)), x
    )
    assert_close_to_cpu(lambda t: torch.nan_to_num_(t.log() - 1), x)
    # out= of another dtype goes through a temporary
    assert_close_to_cpu(
        lambda t: torch.sin(t, out=torch.empty(0, dtype=torch.float16, device=t.device)), x, **F16
    )


def test_clamp_with_one_tensor_bound():
    a, lo, hi = make((4, 5)), make((5,)), make((4, 1))
    a[0, 0] = NAN
    assert_close_to_cpu(torch.clamp_min, a, lo)
    assert_close_to_cpu(torch.clamp_max, a, hi)
    assert_close_to_cpu(lambda x, y: x.clamp_min_(y), a, lo)
    assert_close_to_cpu(lambda x, y: x.clamp_max_(y), a, hi)
    assert_close_to_cpu(lambda x, y: torch.clamp_min(x, y, out=torch.empty_like(x)), a, lo)
    assert_close_to_cpu(lambda x, y: torch.clamp(x, max=y), make((4, 5), torch.int32), hi)


def test_math_module_constants():
    # deg2rad is composite (mul by a float64 constant wrapped as a scalar)
    assert_close_to_cpu(torch.deg2rad, torch.tensor([0.0, 90.0, -180.0]))
    assert math.isclose(
        torch.erfinv(torch.tensor(0.5, device=VKML)).item(), 0.4769362762, rel_tol=1e-6
    )


@pytest.mark.parametrize(
    "name", ["exp", "log", "log2", "log10", "exp2", "log1p", "expm1", "sigmoid", "tanh"]
)
def test_float64_exp_log_family_runs_on_the_device(name):
    """The exp/log family in float64 (f64_math.glsl: GLSL has them only in float) runs on the
    device within a few units in the last place of the CPU's, specials included."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3000, generator=gen, dtype=torch.float64) * 12
    specials = [
        0.0,
        -0.0,
        1e-300,
        -1e-300,
        1e-310,  # subnormals: log's exponent comes from the bits, not the driver's frexp
        5e-324,
        1e-20,
        -1e-20,
        700.0,
        -700.0,
        710.0,
        -750.0,
        1.0,
        2.0,
        8.0,
        0.5,
        1e300,
        -1.0,
        -0.999999,
        0.9999999,
        1.0000001,
        float("inf"),
        -float("inf"),
        float("nan"),
    ]
    x = torch.cat([x, x.abs() + 1e-3, x * 1e-3, torch.tensor(specials, dtype=torch.float64)])
    torch_vkml.reset_fallback_counts()
    fn = getattr(torch, name)
    got = fn(x.to(VKML)).cpu()
    assert torch_vkml.fallback_counts() == {}
    torch.testing.assert_close(got, fn(x), rtol=4e-15, atol=1e-300, equal_nan=True)


@pytest.mark.parametrize(
    "name", ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"]
)
def test_float64_trigonometry_runs_on_the_device(name):
    """float64 trigonometric and hyperbolic functions run on the device: arguments reduced
    by pi/2 in three exact parts, by Payne-Hanek past 8e5 (1e300 included); within a few
    ulps of the CPU's (huge arguments: 1e-14)."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    gen = torch.Generator().manual_seed(4)
    x = torch.cat(
        [
            torch.randn(3000, generator=gen, dtype=torch.float64) * 12,
            torch.rand(2000, generator=gen, dtype=torch.float64) * 2 - 1,
            torch.randn(500, generator=gen, dtype=torch.float64) * 1e5,
            torch.tensor(
                [
                    0.0,
                    -0.0,
                    1e-300,
                    -1e-20,
                    math.pi,
                    math.pi / 2,
                    1.0,
                    -1.0,
                    0.5,
                    700.0,
                    -700.0,
                    float("inf"),
                    -float("inf"),
                    float("nan"),
                ],
                dtype=torch.float64,
            ),
        ]
    )
    huge = torch.tensor(
        [1e6, -2e6, 8.3e5, 123456789.0, 1e15, 1e150, -1e200, 1e300], dtype=torch.float64
    )
    torch_vkml.reset_fallback_counts()
    fn = getattr(torch, name)
    torch.testing.assert_close(fn(x.to(VKML)).cpu(), fn(x), rtol=4e-15, atol=1e-300, equal_nan=True)
    if name in ("sin", "cos", "tan"):
        torch.testing.assert_close(fn(huge.to(VKML)).cpu(), fn(huge), rtol=1e-14, atol=1e-14)
    assert torch_vkml.fallback_counts() == {}


def test_float64_atan2_signs_and_infinities():
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    v = [0.0, -0.0, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 1e-300, 3.5]
    y = torch.tensor(v, dtype=torch.float64).repeat_interleave(len(v))
    x = torch.tensor(v, dtype=torch.float64).repeat(len(v))
    got = torch.atan2(y.to(VKML), x.to(VKML)).cpu()
    torch.testing.assert_close(got, torch.atan2(y, x), rtol=4e-16, atol=0, equal_nan=True)
    want = torch.atan2(y, x)
    assert torch.equal(got.signbit()[~want.isnan()], want.signbit()[~want.isnan()])  # +-0, +-pi


def test_float64_hypot_and_complex128_abs():
    """hypot in float64 (complex128's abs is hypot of its parts): no overflow or underflow
    in the squares, infinities over NaN, within 2 ulps of the CPU."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    torch_vkml.reset_fallback_counts()
    v = [0.0, -0.0, 3.0, -4.0, float("inf"), -float("inf"), float("nan"), 1e-310, 1e300, 1e-300]
    a = torch.tensor(v, dtype=torch.float64).repeat_interleave(len(v))
    b = torch.tensor(v, dtype=torch.float64).repeat(len(v))
    got = torch.hypot(a.to(VKML), b.to(VKML)).cpu()
    torch.testing.assert_close(got, torch.hypot(a, b), rtol=5e-16, atol=0, equal_nan=True)
    g = torch.Generator().manual_seed(7)
    z = torch.complex(
        torch.randn(5000, generator=g, dtype=torch.float64) * torch.logspace(-150, 150, 5000),
        torch.randn(5000, generator=g, dtype=torch.float64),
    )
    torch.testing.assert_close(z.to(VKML).abs().cpu(), z.abs(), rtol=5e-16, atol=0)
    assert torch_vkml.fallback_counts() == {}


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(F.silu, id="silu"),
        pytest.param(F.mish, id="mish"),
        pytest.param(F.logsigmoid, id="logsigmoid"),
        pytest.param(lambda t: F.gelu(t, approximate="tanh"), id="gelu-tanh"),
    ],
)
def test_float64_activations_and_gradients_run_on_the_device(fn):
    """Activations without float parameters run in float64 on the device, backward too.
    The CPU's formulas cancel for negative inputs (1 + tanh, ...), so both sides carry a
    rounding of the larger terms: compared absolutely at 2e-14 there."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(3000, generator=gen, dtype=torch.float64) * 8
    x = torch.cat([x, torch.tensor([0.0, -0.0, 30.0, -30.0, 800.0, -800.0], dtype=torch.float64)])
    torch_vkml.reset_fallback_counts()
    xd, xc = x.to(VKML).requires_grad_(), x.clone().requires_grad_()
    got, want = fn(xd), fn(xc)
    got.sum().backward()
    want.sum().backward()
    assert torch_vkml.fallback_counts() == {}
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=4e-15, atol=2e-14)
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=4e-15, atol=2e-14)


def test_logs_of_subnormal_inputs(no_fallback):
    """The driver's log and log2 read a subnormal's exponent as -127 (lavapipe:
    log(1e-40) was -88.0, not -92.1), and lgamma's reflection overflowed there: the
    log family, pow with a fractional exponent, lgamma (float32, bfloat16, float64) and
    the losses built on them hold their digits down to the smallest subnormal."""
    import torch.nn.functional as F

    tiny = [1.4e-45, 1e-42, 1e-40, 5e-39, 1.1e-38, 1.2e-38]
    x = torch.tensor(tiny)
    ops = {
        "log": torch.log,
        "log2": torch.log2,
        "log10": torch.log10,
        "xlogy": lambda t: torch.xlogy(torch.full_like(t, 2.0), t),
        "logit": torch.logit,
        "entr": torch.special.entr,
        "lgamma": torch.lgamma,
        "lgamma_neg": lambda t: torch.lgamma(-t),
        "cbrt": lambda t: t.pow(1 / 3),
        "pow_neg_half": lambda t: t.pow(-0.25),
        "bce": lambda t: F.binary_cross_entropy(t, torch.ones_like(t), reduction="none"),
    }
    for name, fn in ops.items():
        want = fn(x.double()).float()
        got = fn(x.to(VKML)).cpu()
        torch.testing.assert_close(got, want, rtol=2e-6, atol=0, msg=lambda m, n=name: f"{n}: {m}")
    b = torch.tensor([1e-39, 1e-38, 2e-38], dtype=torch.bfloat16)
    torch.testing.assert_close(torch.log(b.to(VKML)).cpu(), torch.log(b), rtol=1e-2, atol=0)
    if torch_vkml.get_device_properties(0).supports_fp64:
        d = torch.tensor([5e-324, 1e-310, 2e-308, 1e-300, -1e-310], dtype=torch.float64)
        torch.testing.assert_close(
            torch.lgamma(d.to(VKML)).cpu(), torch.lgamma(d), rtol=1e-15, atol=0
        )


@pytest.mark.parametrize("fn", [torch.sin, torch.cos, torch.tan], ids=lambda f: f.__name__)
def test_trigonometry_of_large_arguments(fn):
    # The drivers' sin/cos are specified on [-pi, pi] only: lavapipe's returned values in
    # [-1, 1] unrelated to x past about 1e7 (cos(1e20) gave 1; torch.polar of such angles
    # was off by the magnitude). Now reduced by pi/2 in integers (Payne and Hanek) over
    # the whole float range, and checked against float64 within a few ulps.
    g = torch.Generator().manual_seed(0)
    exps = torch.empty(60_000, dtype=torch.float64).uniform_(-3, 38.5, generator=g)
    x = (10.0**exps).clamp(max=3.4e38).float()
    x = torch.where(torch.rand(60_000, generator=g) < 0.5, -x, x)
    want = fn(x.double())
    got = fn(x.to(VKML)).cpu().double()
    torch.testing.assert_close(got, want, atol=2e-7, rtol=5e-7)
    special = torch.tensor([0.0, -0.0, INF, -INF, NAN, 1.5707964, 3.1415927])
    _, vk = assert_close_to_cpu(fn, special, atol=1e-6, rtol=1e-6)
    assert torch.equal(torch.signbit(vk.cpu()[:2]), torch.signbit(fn(special[:2])))


def test_polar_of_large_angles():
    angle = torch.tensor([1e20, -1e20, 3e38, 12345.678, -7e9])
    radius = torch.tensor([501.0, -2.0, 3.0, 1.5, 0.25])
    assert_close_to_cpu(torch.polar, radius, angle, atol=1e-4, rtol=1e-5)


def test_atanh_near_minus_one():
    # log1p(2a / (1 - a)) of a negative a near -1 lost digits (1.4e-4 relative); now from |a|.
    x = torch.linspace(-1, 1, 200_001)[1:-1]
    got = torch.atanh(x.to(VKML)).cpu().double()
    torch.testing.assert_close(got, torch.atanh(x.double()), rtol=5e-7, atol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=dtype_id)
def test_nan_to_num_of_complex(dtype):
    # Each part on its own, as the CPU's; vkml returned the input unchanged.
    x = torch.tensor(
        [complex(NAN, 1), complex(INF, 2), complex(1, -INF), complex(-INF, NAN), 3 - 4j],
        dtype=dtype,
    )
    assert_close_to_cpu(torch.nan_to_num, x)
    assert_close_to_cpu(lambda t: torch.nan_to_num(t, nan=1.5, posinf=9.0, neginf=-9.0), x)
    assert_close_to_cpu(lambda t: t.clone().nan_to_num_(), x)
    assert_close_to_cpu(lambda t: torch.nan_to_num(t.conj()), x)


def test_isposinf_isneginf_words():
    for fn in (torch.isposinf, torch.isneginf):
        for dev in ("cpu", VKML):
            with pytest.raises(RuntimeError, match="does not support complex inputs"):
                fn(torch.ones(3, dtype=torch.complex64, device=dev))
            with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
                fn(torch.ones(3, device=dev), out=torch.empty(3, device=dev))
