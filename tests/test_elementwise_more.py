"""More element-wise ops against the CPU: unary math, binary math, activations and their
gradients, bfloat16 storage, float64 kernels and the CPU route of float64 math."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    assert_same,
    dtype_id,
    make,
    unary_case,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

NAN = float("nan")
INF = float("inf")
BF16 = dict(atol=1e-2, rtol=1.6e-2)  # bfloat16 has 8 significant bits
F16 = dict(atol=1e-2, rtol=1e-2)
LOW_PRECISION = {torch.float16: F16, torch.bfloat16: BF16}
FLOATS = [torch.float32, torch.float16, torch.bfloat16]


def tol(dtype, f32=None):
    """Tolerances for a result dtype: ``f32`` overrides the float32 default."""
    if dtype in LOW_PRECISION:
        return LOW_PRECISION[dtype]
    return f32 or {}


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


# ----------------------------------------------------------- binary math

BINARY = {
    "atan2": (torch.atan2, {}, {}),
    "hypot": (torch.hypot, {}, {}),
    "copysign": (torch.copysign, {}, {}),
    "xlogy": (torch.xlogy, {}, dict(low=0.1, high=5)),
    "fmax": (torch.fmax, dict(discrete=True), dict(discrete=True)),
    "fmin": (torch.fmin, dict(discrete=True), dict(discrete=True)),
    "logaddexp": (torch.logaddexp, {}, {}),
    "logaddexp2": (torch.logaddexp2, {}, {}),
    "xlog1py": (torch.special.xlog1py, {}, dict(low=-0.9, high=5)),
    "remainder": (torch.remainder, {}, dict(nonzero=True)),
    "fmod": (torch.fmod, {}, dict(nonzero=True)),
    "floor_divide": (torch.floor_divide, {}, dict(nonzero=True)),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), {}, dict(nonzero=True)),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), {}, dict(nonzero=True)),
    "heaviside": (torch.heaviside, dict(discrete=True), {}),
    "pow": (torch.pow, dict(low=0.1, high=3), {}),
    "maximum": (torch.maximum, {}, {}),
}
BINARY_TOL = {"pow": dict(rtol=1e-4), "logaddexp2": dict(rtol=2e-5)}


BIN_LAYOUTS = {
    "contiguous": ((4, 5), (4, 5), lambda a, b: (a, b)),
    "noncontiguous": ((5, 4), (4, 10), lambda a, b: (a.t(), b[:, ::2])),
    "broadcast": ((3, 1, 4), (1, 5, 1), lambda a, b: (a, b)),
}


@pytest.mark.parametrize("layout", list(BIN_LAYOUTS))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_math(name, layout):
    fn, a_kw, b_kw = BINARY[name]
    a_shape, b_shape, build = BIN_LAYOUTS[layout]
    a, b = make(a_shape, **a_kw), make(b_shape, **b_kw)
    assert_close_to_cpu(
        lambda x, y: fn(*build(x, y)), a, b, **tol(torch.float32, BINARY_TOL.get(name))
    )
    if layout == "contiguous":
        for dtype in (torch.float16, torch.bfloat16):
            a, b = make(a_shape, dtype, **a_kw), make(b_shape, dtype, **b_kw)
            assert_close_to_cpu(fn, a, b, **tol(dtype))


def test_binary_special_values():
    vals = torch.tensor([-INF, -3.5, -1.0, -0.0, 0.0, 0.5, 2.0, INF, NAN])
    a = vals.repeat_interleave(len(vals))
    b = vals.repeat(len(vals))
    for fn in (
        torch.atan2,
        torch.hypot,
        torch.copysign,
        torch.fmax,
        torch.fmin,
        torch.xlogy,
        torch.special.xlog1py,
        torch.logaddexp,
        torch.heaviside,
        torch.remainder,
        torch.fmod,
        torch.floor_divide,
        torch.maximum,
        torch.minimum,
    ):
        assert_close_to_cpu(fn, a, b, atol=1e-6)
    _, vk = assert_close_to_cpu(torch.copysign, a, b)
    assert torch.equal(torch.signbit(vk.cpu()), torch.signbit(torch.copysign(a, b)))


def test_pow_special_values():
    vals = torch.tensor([-INF, -2.0, -1.0, -0.0, 0.0, 0.3, 1.0, 2.0, 3.0, INF, NAN])
    exps = torch.tensor([-INF, -3.0, -2.0, -1.0, -0.5, 0.0, 1.0, 2.0, 2.5, 3.0, INF, NAN])
    a = vals.repeat_interleave(len(exps))
    b = exps.repeat(len(vals))
    expected, vk = assert_close_to_cpu(torch.pow, a, b, rtol=1e-5)
    number = ~expected.isnan()  # (the sign of a NaN means nothing)
    assert torch.equal(torch.signbit(vk.cpu())[number], torch.signbit(expected)[number])


def test_nextafter():
    a = torch.tensor([0.0, -0.0, 1.0, 1.0, -1.0, 1e-38, 3.4e38, INF, NAN, 2.0])
    b = torch.tensor([1.0, -1.0, 2.0, 0.0, -INF, 0.0, INF, 0.0, 1.0, 2.0])
    _, vk = assert_close_to_cpu(torch.nextafter, a, b, atol=0, rtol=0)
    assert torch.equal(vk.cpu().view(torch.int32), torch.nextafter(a, b).view(torch.int32))
    # one step of the storage dtype's own bits, denormals included
    for dtype, bits in (
        (torch.float16, torch.int16),
        (torch.bfloat16, torch.int16),
        (torch.float64, torch.int64),
    ):
        x, y = a[:-3].to(dtype), b[:-3].to(dtype)
        _, vk = assert_close_to_cpu(torch.nextafter, x, y, atol=0, rtol=0)
        assert torch.equal(vk.cpu().view(bits), torch.nextafter(x, y).view(bits))


def test_fmod_remainder_precision():
    # exact remainders, also where a / b rounds across an integer
    a = torch.tensor([5.3, -5.3, 1e6 + 0.7, -7.0, 7.0, 0.3, 1e-3, 100.0])
    b = torch.tensor([0.1, 0.1, 3.3, 2.0, -2.0, 0.1, 7e-4, 0.7])
    assert_close_to_cpu(torch.fmod, a, b, atol=1e-6, rtol=1e-5)
    assert_close_to_cpu(torch.remainder, a, b, atol=1e-6, rtol=1e-5)
    assert_close_to_cpu(lambda x, y: torch.div(x, y, rounding_mode="floor"), a, b)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=dtype_id)
def test_integer_division_semantics(dtype):
    lo = 0 if dtype == torch.uint8 else -9
    a = make((6, 7), dtype, low=lo, high=10)
    b = make((6, 7), dtype, low=lo, high=10, nonzero=True)
    for fn in (torch.remainder, torch.fmod, torch.floor_divide):
        assert_close_to_cpu(fn, a, b)
        assert_close_to_cpu(lambda x, f=fn: f(x, 3), a)
    assert_close_to_cpu(lambda x: torch.remainder(7, x), b)
    assert_close_to_cpu(lambda x: torch.remainder(-7, x), b)
    assert_close_to_cpu(lambda x, y: torch.div(x, y, rounding_mode="trunc"), a, b)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=dtype_id)
def test_shifts(dtype):
    a = make((5, 6), dtype, low=-100 if dtype != torch.uint8 else 0, high=100)
    bits = {torch.int64: 64, torch.int32: 32, torch.uint8: 8}[dtype]
    amounts = torch.tensor([0, 1, 3, bits - 1, bits, bits + 5], dtype=dtype)
    b = amounts.repeat(5).reshape(5, 6)
    for fn in (torch.bitwise_left_shift, torch.bitwise_right_shift):
        assert_close_to_cpu(fn, a, b)
    assert_close_to_cpu(lambda x: x << 2, a)
    assert_close_to_cpu(lambda x: x >> 1, a)
    assert_close_to_cpu(lambda x, y: x.__ilshift__(y), a, b)
    assert_close_to_cpu(lambda x: x.__irshift__(3), a)
    assert_close_to_cpu(lambda x: x.bitwise_left_shift_(1), a)
    if dtype != torch.uint8:
        neg = torch.tensor([-1, -5, 2], dtype=dtype)
        assert_close_to_cpu(lambda x, y: x << y, torch.tensor([3, 3, 3], dtype=dtype), neg)
        assert_close_to_cpu(lambda x, y: x >> y, torch.tensor([-9, 9, -9], dtype=dtype), neg)


def test_bitwise_and_logical_ops():
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.bool):
        a, b = make((4, 5), dtype), make((4, 5), dtype)
        for fn in (
            torch.bitwise_and,
            torch.bitwise_or,
            torch.bitwise_xor,
            torch.logical_and,
            torch.logical_or,
            torch.logical_xor,
        ):
            assert_close_to_cpu(fn, a, b)
        assert_close_to_cpu(lambda x: x & 1, a)
        assert_close_to_cpu(lambda x: x | 2, a)
        assert_close_to_cpu(lambda x, s=(True if dtype == torch.bool else 3): x ^ s, a)
    assert_close_to_cpu(torch.logical_and, make((4, 5)), make((4, 5), torch.int32))
    assert_raises_like_cpu(torch.bitwise_and, make(4), make(4))
    assert_raises_like_cpu(lambda x: x << 1, make(4))


def test_binary_promotion_and_forms():
    i, f = make((3, 4), torch.int32), make((3, 4))
    assert_close_to_cpu(torch.atan2, i, f)
    assert_close_to_cpu(torch.copysign, i, f)
    assert_close_to_cpu(torch.xlogy, i, make((3, 4), low=0.1, high=2))
    assert_close_to_cpu(lambda x: torch.xlogy(x, 2.0), i)
    assert_close_to_cpu(lambda x: torch.xlogy(3, x), f.abs())
    assert_close_to_cpu(lambda x: torch.copysign(x, -1.0), f)
    assert_close_to_cpu(lambda x, y: torch.hypot(x, y, out=torch.empty_like(x)), f, f.t().t())
    assert_close_to_cpu(lambda x, y: x.hypot_(y), f, f)
    assert_close_to_cpu(lambda x, y: x.copysign_(y), f, -f)
    assert_close_to_cpu(lambda x, y: x.xlogy_(y), f, f.abs())
    assert_close_to_cpu(lambda x, y: x.floor_divide_(y), f, make((3, 4), nonzero=True))
    assert_close_to_cpu(lambda x: torch.fmod(x, 1.5), f)
    assert_close_to_cpu(lambda x: torch.remainder(x, -1.5), f)
    assert_close_to_cpu(lambda x: torch.remainder(2.5, x), make((3, 4), nonzero=True))
    assert_close_to_cpu(lambda x: torch.fmax(x, torch.tensor(0.5)), f)
    assert_close_to_cpu(lambda x, y: torch.heaviside(x, y), f, f)
    assert_raises_like_cpu(torch.heaviside, f, i)
    assert_raises_like_cpu(torch.hypot, i, i)


# ------------------------------------------------------------ ternary


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=dtype_id)
def test_ternary_ops(dtype):
    a, b = make((4, 5), dtype), make((4, 5), dtype)
    c = make((5,), dtype, nonzero=True)
    cond = make((4, 1), torch.bool)
    kw = tol(dtype)
    assert_close_to_cpu(torch.where, cond, a, b)
    assert_close_to_cpu(lambda k, x: torch.where(k, x, 2), cond, a)
    assert_close_to_cpu(lambda x, y, z: torch.addcmul(x, y, z, value=2), a, b, c, **kw)
    assert_close_to_cpu(lambda x, y, z: torch.clamp(x, y.clamp(max=0), z.abs()), a, b, c)
    if dtype.is_floating_point:
        assert_close_to_cpu(lambda x, y, z: torch.addcdiv(x, y, z, value=0.5), a, b, c, **kw)
        assert_close_to_cpu(lambda x, y, z: torch.lerp(x, y, z), a, b, c, **kw)
        assert_close_to_cpu(lambda x, y, z: torch.addcmul(x, y, torch.tensor(1.5)), a, b, c, **kw)


# --------------------------------------------------- activations + grad

ACTIVATIONS = {
    "relu6": lambda x: F.relu6(x),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 1.5),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, 0.7),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, 1.3),
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2, threshold=3),
    "softshrink": lambda x: F.softshrink(x, 0.7),
    "hardshrink": lambda x: F.hardshrink(x, 0.7),
    "logsigmoid": F.logsigmoid,
    "threshold": lambda x: F.threshold(x, 0.5, -2.0),
    "glu": lambda x: F.glu(x, 0),
    "glu_last": lambda x: F.glu(x, -1),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "logit": lambda x: torch.logit(x.sigmoid()),
    "logit_eps": lambda x: torch.logit(x.sigmoid(), eps=0.3),
    "erf": torch.erf,
    "atan": torch.atan,
    "asinh": torch.asinh,
    "lgamma": lambda x: torch.lgamma(x.abs() + 0.5),
    "digamma": lambda x: torch.digamma(x.abs() + 0.5),
    "pow": lambda x: torch.pow(x.abs() + 0.5, 1.7),
}


@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_gradients(name, layout):
    fn = ACTIVATIONS[name]
    x = make((6, 8) if layout == "contiguous" else (8, 6))
    # keep inputs off the kinks where CPU and vkml may pick different subgradients
    x = torch.where((x.abs() - 0.5).abs() < 0.05, x + 0.2, x)
    x = torch.where((x.abs() - 0.7).abs() < 0.05, x + 0.2, x)
    x = torch.where((x.abs() - 3).abs() < 0.05, x + 0.2, x).requires_grad_()
    build = (lambda t: t) if layout == "contiguous" else (lambda t: t.t())
    assert_grads_close_to_cpu(lambda t: fn(build(t)), x, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_low_precision(name):
    for dtype in (torch.float16, torch.bfloat16):
        x = make((6, 8), dtype)
        assert_close_to_cpu(ACTIVATIONS[name], x, **tol(dtype))


@pytest.mark.parametrize("weight_shape", [(1,), (3,)])
def test_prelu(weight_shape):
    x = make((2, 3, 4)).requires_grad_()
    w = make(weight_shape, low=0.1, high=0.5).requires_grad_()
    assert_grads_close_to_cpu(F.prelu, x, w, atol=1e-5, rtol=1e-5)


def test_inplace_activations_backward():
    # in-place forwards save their result: the *_backward(is_result=True) paths
    x = make((5, 6)).requires_grad_()
    for fn in (
        lambda t: F.elu(t * 1, inplace=True),
        lambda t: F.leaky_relu(t * 1, 0.1, True),
        lambda t: F.hardtanh(t * 1, -1, 1, inplace=True),
        lambda t: F.relu6(t * 3, True),
        lambda t: F.celu(t * 1, 0.5, inplace=True),
        lambda t: F.selu(t * 1, True),
        lambda t: F.threshold(t * 1, 0.1, 0.0, True),
        lambda t: F.silu(t * 1, True),
        lambda t: F.mish(t * 1, True),
        lambda t: F.hardswish(t * 1, True),
        lambda t: F.hardsigmoid(t * 1, True),
    ):
        assert_grads_close_to_cpu(fn, x, atol=1e-5, rtol=1e-4)


def test_activation_out_and_errors():
    x = make((4, 6))
    assert_close_to_cpu(lambda t: torch._C._nn.leaky_relu(t, 0.3, out=torch.empty_like(t)), x)
    assert_close_to_cpu(lambda t: torch._C._nn.softplus(t, 1, 20, out=torch.empty_like(t)), x)
    assert_close_to_cpu(lambda t: torch._C._nn.glu(t, 1, out=torch.empty(0, device=t.device)), x)
    assert_close_to_cpu(lambda t: F.threshold(t.long(), 1, 7), x)
    assert_raises_like_cpu(lambda t: F.glu(t, 0), make((3, 4)))
    assert_raises_like_cpu(lambda t: F.softshrink(t, -1.0), x)
    assert_raises_like_cpu(lambda t: F.hardtanh(t > 0), x)
    assert_raises_like_cpu(lambda t: F.leaky_relu(t.long()), x)


def test_activation_special_values():
    x = torch.tensor([-INF, -100.0, -20.0, -1e-30, -0.0, 0.0, 1e-30, 20.0, 100.0, INF, NAN])
    # (not gelu: the CPU gives gelu(inf) = nan)
    for fn in (
        F.elu,
        F.selu,
        F.silu,
        F.mish,
        F.softplus,
        F.logsigmoid,
        F.hardswish,
        F.hardsigmoid,
        F.leaky_relu,
        F.softshrink,
        F.hardshrink,
        F.relu6,
        lambda t: F.gelu(t, approximate="tanh"),
    ):
        assert_close_to_cpu(fn, x, atol=1e-6)


# ---------------------------------------------------------------- bfloat16


def test_bfloat16_storage_and_creation():
    a, b = make((4, 5), torch.bfloat16), make((4, 5), torch.bfloat16)
    assert_close_to_cpu(torch.add, a, b, **BF16)
    assert_close_to_cpu(torch.mul, a, b, **BF16)
    assert_close_to_cpu(lambda x, y: x.t() - y.t(), a, b, **BF16)
    assert_close_to_cpu(torch.lt, a, b)
    assert_close_to_cpu(torch.eq, a, a)
    assert_close_to_cpu(lambda x: x + 2.5, a, **BF16)
    assert_close_to_cpu(lambda x: x.add_(1), a, **BF16)
    assert_close_to_cpu(lambda x: torch.clamp(x, -1, 1), a)
    assert_close_to_cpu(torch.relu, a)
    assert_close_to_cpu(torch.maximum, a, b)
    # rounding: 1 + 2^-9 is halfway between bfloat16 neighbours
    assert_close_to_cpu(lambda x: x + 2**-9, torch.ones(3, dtype=torch.bfloat16), atol=0, rtol=0)
    assert_factory_same(lambda d: torch.full((3, 4), 1.7, dtype=torch.bfloat16, device=d))
    assert_factory_same(lambda d: torch.zeros(5, dtype=torch.bfloat16, device=d))
    assert_factory_same(lambda d: torch.arange(0, 10, 0.5, dtype=torch.bfloat16, device=d))
    assert_factory_same(lambda d: torch.arange(7, dtype=torch.bfloat16, device=d))


def assert_factory_same(fn):
    expected = fn(torch.device("cpu"))
    actual = fn(torch.device(VKML))
    assert_same(actual, expected, atol=0, rtol=0)


def test_bfloat16_odd_sizes_and_offsets():
    # 16-bit outputs written by neighbouring threads
    n = 100_003
    a, b = make(n + 3, torch.bfloat16), make(n + 3, torch.bfloat16)
    assert_close_to_cpu(lambda x, y: x[3:] * y[:-3], a, b, **BF16)
    assert_close_to_cpu(lambda x, y: torch.where(x[1:] > y[1:], x[1:], y[1:]), a, b)


def test_bfloat16_promotion():
    bf, h = make((3, 4), torch.bfloat16), make((3, 4), torch.float16)
    i, f = make((3, 4), torch.int32), make((3, 4))
    assert_close_to_cpu(torch.add, bf, h)  # -> float32
    assert_close_to_cpu(torch.add, bf, i, **BF16)  # -> bfloat16
    assert_close_to_cpu(torch.mul, bf, f)
    assert_close_to_cpu(lambda x: x * torch.tensor(2.5), bf, **BF16)
    assert_close_to_cpu(lambda x, y: x.mul_(y), bf, f, **BF16)
    assert_close_to_cpu(torch.div, i, bf.abs() + 1, **BF16)


def test_bfloat16_random():
    torch.manual_seed(0)
    x = torch.rand(2000, dtype=torch.bfloat16, device=VKML)
    assert x.dtype == torch.bfloat16
    xc = x.cpu().float()
    assert 0 <= xc.min() and xc.max() < 1 and abs(xc.mean().item() - 0.5) < 0.05
    n = torch.randn(2000, dtype=torch.bfloat16, device=VKML).cpu().float()
    assert abs(n.mean().item()) < 0.1 and abs(n.std().item() - 1) < 0.1
    r = torch.randint(-3, 5, (500,), dtype=torch.bfloat16, device=VKML).cpu().float()
    assert r.min() >= -3 and r.max() <= 4 and torch.equal(r, r.round())
    p = torch.empty(2000, dtype=torch.bfloat16, device=VKML).bernoulli_(0.3).cpu().float()
    assert set(p.unique().tolist()) <= {0.0, 1.0} and abs(p.mean().item() - 0.3) < 0.05


# ---------------------------------------------------------------- float64


F64 = dict(atol=1e-12, rtol=1e-12)


def test_float64_native_ops():
    a, b = make((4, 5), torch.float64), make((4, 5), torch.float64, nonzero=True)
    c = make((5,), torch.float64)
    for fn in (
        torch.add,
        torch.sub,
        torch.mul,
        torch.div,
        torch.maximum,
        torch.minimum,
        torch.fmax,
        torch.fmin,
        torch.lt,
        torch.eq,
        torch.remainder,
        torch.fmod,
        torch.copysign,
        torch.floor_divide,
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    ):
        assert_close_to_cpu(fn, a, b, **F64)
    for fn in (
        torch.abs,
        torch.neg,
        torch.sqrt,
        torch.rsqrt,
        torch.floor,
        torch.ceil,
        torch.round,
        torch.trunc,
        torch.frac,
        torch.sign,
        torch.reciprocal,
        torch.relu,
        torch.isnan,
        torch.signbit,
        F.hardswish,
        F.hardsigmoid,
        F.relu6,
        F.leaky_relu,
        F.softshrink,
        F.hardshrink,
        lambda t: F.threshold(t, 0.1, 20.0),
        lambda t: torch.round(t, decimals=3),
        lambda t: torch.clamp(t, -1, 1),
    ):
        assert_close_to_cpu(
            lambda t, fn=fn: fn(t.abs() + 1e-3 if fn in (torch.sqrt, torch.rsqrt) else t), a, **F64
        )
    assert_close_to_cpu(lambda x, y, z: torch.addcmul(x, y, z, value=0.5), a, b, c, **F64)
    assert_close_to_cpu(lambda x, y, z: torch.lerp(x, y, z), a, b, c, **F64)
    assert_close_to_cpu(lambda x, y: torch.where(x > 0, x, y), a, b, **F64)
    # more precise than float32 could be
    x = torch.tensor([1 + 1e-12, 1e300, 1e-300], dtype=torch.float64)
    assert_close_to_cpu(lambda t: t * 3 - 1, x, atol=0, rtol=1e-15)
    assert_close_to_cpu(torch.sqrt, x, atol=0, rtol=1e-15)
    x = make((4, 6), torch.float64).requires_grad_()
    assert_grads_close_to_cpu(lambda t: (F.hardtanh(t) * t).relu(), x, **F64)
    assert_grads_close_to_cpu(lambda t: F.leaky_relu(F.softshrink(t), 0.1), x, **F64)
    assert_grads_close_to_cpu(lambda t: F.hardswish(F.hardshrink(t, 0.3)), x, **F64)


def test_clamp_with_one_tensor_bound():
    a, lo, hi = make((4, 5)), make((5,)), make((4, 1))
    a[0, 0] = NAN
    assert_close_to_cpu(torch.clamp_min, a, lo)
    assert_close_to_cpu(torch.clamp_max, a, hi)
    assert_close_to_cpu(lambda x, y: x.clamp_min_(y), a, lo)
    assert_close_to_cpu(lambda x, y: x.clamp_max_(y), a, hi)
    assert_close_to_cpu(lambda x, y: torch.clamp_min(x, y, out=torch.empty_like(x)), a, lo)
    assert_close_to_cpu(lambda x, y: torch.clamp(x, max=y), make((4, 5), torch.int32), hi)


def test_float64_transcendentals_run_on_cpu(monkeypatch):
    # GLSL has no double exp/log/sin: these take the counted CPU route, never fp32
    x = make((3, 4), torch.float64, low=0.1, high=2)
    for fn, name in (
        (torch.exp, "aten::exp"),
        (torch.sin, "aten::sin"),
        (torch.log1p, "aten::log1p"),
        (lambda t: torch.pow(t, 0.3), "aten::pow.Tensor_Scalar"),
        (lambda t: torch.atan2(t, t + 1), "aten::atan2"),
        (F.gelu, "aten::gelu"),
        (F.silu, "aten::silu"),
        (lambda t: F.elu(t - 1), "aten::elu"),
    ):
        torch_vkml.reset_fallback_counts()
        monkeypatch.setenv("TORCH_VKML_FALLBACK", "silent")
        assert_close_to_cpu(fn, x, **F64)
        counts = torch_vkml.fallback_counts()
        assert counts.get(name, 0) >= 1, counts
        monkeypatch.setenv("TORCH_VKML_FALLBACK", "error")
        with pytest.raises(NotImplementedError):
            fn(x.to(VKML))
        monkeypatch.setenv("TORCH_VKML_FALLBACK", "warn")
        torch_vkml.reset_fallback_counts()


def test_float64_common_powers_are_native():
    x = make((3, 4), torch.float64, low=0.5, high=3)
    for e in (2, 3, 0.5, -0.5, -1, -2):
        assert_close_to_cpu(lambda t, e=e: t**e, x, **F64)
    assert_close_to_cpu(torch.square, x, **F64)


def test_float64_special_values():
    x = torch.tensor([-INF, INF, NAN, -0.0, 0.0, 1e-300, -2.5, 2.5, 3.5], dtype=torch.float64)
    for fn in (
        torch.floor,
        torch.ceil,
        torch.round,
        torch.trunc,
        torch.sign,
        torch.isinf,
        torch.isfinite,
        torch.signbit,
        torch.abs,
        torch.frac,
    ):
        assert_close_to_cpu(fn, x, **F64)
    assert_close_to_cpu(torch.fmax, x, x.flip(0), **F64)
    assert_close_to_cpu(torch.nan_to_num, x, **F64)
    assert_close_to_cpu(lambda t: torch.nan_to_num(t, 1.0, 2.0, -3.0), x, **F64)
    assert_close_to_cpu(torch.remainder, x, torch.full_like(x, -1.5), **F64)


def test_float64_creation_keeps_digits():
    assert_factory_same(lambda d: torch.full((3, 2), 0.1, dtype=torch.float64, device=d))
    assert_factory_same(lambda d: torch.arange(0, 1, 0.1, dtype=torch.float64, device=d))
    assert_factory_same(lambda d: torch.zeros(4, dtype=torch.float64, device=d) + 1e-300)


def test_math_module_constants():
    # deg2rad is composite (mul by a float64 constant wrapped as a scalar)
    assert_close_to_cpu(torch.deg2rad, torch.tensor([0.0, 90.0, -180.0]))
    assert math.isclose(
        torch.erfinv(torch.tensor(0.5, device=VKML)).item(), 0.4769362762, rel_tol=1e-6
    )
