"""Binary elementwise ops (ops_binary.cpp) against the CPU: math, special values, integer
division, shifts, bitwise and logical ops, promotion and call forms."""

import math

import pytest
import torch
from conftest import (
    INF,
    NAN,
    VKML,
    assert_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    make,
    tol,
)

pytestmark = pytest.mark.usefixtures("no_fallback")

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


def test_float64_pow_overflows_to_inf():
    # y log x between exp's overflow (709.8) and 1000: exp gave inf, and inf + inf * tail
    # a NaN where the correction tail was negative (float_power(uint8 190, 190)).
    a = torch.tensor([190.0, 210.0, 254.0, 1e10, 0.5, 3.0], dtype=torch.float64)
    b = torch.tensor([190.0, 127.0, 127.0, 31.0, -1020.0, 630.0], dtype=torch.float64)
    _, vk = assert_close_to_cpu(torch.pow, a, b, rtol=1e-13)
    assert not vk.isnan().any()
    u = torch.tensor([190, 127, 7], dtype=torch.uint8)
    assert_close_to_cpu(torch.float_power, u, u, rtol=1e-13)


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


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=dtype_id
)
def test_fmod_remainder_of_large_quotients(dtype):
    # |a / b| past 2^24 (2^53 in float64): a - b * trunc(a / b) is no remainder any more
    # (fmod(1e30, 3.3) came back as 8.8e21). NumPy's fmod is exact, as the CPU's is while
    # a / b stays finite; where it overflows the CPU's vectorized fmod returns NaN.
    np = pytest.importorskip("numpy")
    g = torch.Generator().manual_seed(0)
    top = 300 if dtype == torch.float64 else 36
    a = (torch.rand(4000, generator=g, dtype=torch.float64) * 2 - 1) * torch.pow(
        10.0, torch.randint(-4, top, (4000,), generator=g).double()
    )
    b = (torch.rand(4000, generator=g, dtype=torch.float64) * 2 - 1) * torch.pow(
        10.0, torch.randint(-8, 4, (4000,), generator=g).double()
    )
    fi = torch.finfo(dtype)
    a, b = a.clamp(fi.min, fi.max).to(dtype), b.clamp(fi.min, fi.max).to(dtype)
    b[b == 0] = 1
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    an, bn = a.to(wide).numpy(), b.to(wide).numpy()
    want_fmod = torch.from_numpy(np.fmod(an, bn)).to(dtype)
    want_rem = torch.from_numpy(
        np.where(
            (np.fmod(an, bn) != 0) & ((np.fmod(an, bn) < 0) != (bn < 0)),
            np.fmod(an, bn) + bn,
            np.fmod(an, bn),
        )
    ).to(dtype)
    got_fmod = torch.fmod(a.to(VKML), b.to(VKML)).cpu()
    got_rem = torch.remainder(a.to(VKML), b.to(VKML)).cpu()
    torch.testing.assert_close(got_fmod, want_fmod, atol=0, rtol=0)
    torch.testing.assert_close(got_rem, want_rem, atol=0, rtol=0)
    assert (got_fmod.abs() < b.abs()).all()
    # where the CPU's quotient stays finite, it agrees
    finite = torch.isfinite(a.double() / b.double()) & torch.isfinite(torch.fmod(a, b))
    torch.testing.assert_close(got_fmod[finite], torch.fmod(a, b)[finite], atol=0, rtol=0)


def test_fmod_by_subnormal_divisors():
    # Subnormal divisors: frexp of a subnormal is undefined in GLSL (lavapipe's was wrong)
    # and 2^k past one ldexp's range; the loop is bounded, so a device that flushes them
    # gives NaN rather than hanging. NumPy's fmod is exact.
    np = pytest.importorskip("numpy")
    for dtype, a, b in (
        (
            torch.float32,
            [1e30, 3e38, 5.0, 1e-38, 3e38, -7e37],
            [1e-40, 1e-45, 1e-45, 3e-39, 7.1e-43, 3.3e-41],
        ),
        (torch.float64, [1e300, 1.7e308, 5.0, 1e300], [1e-310, 5e-324, 1e-320, 1e-300]),
    ):
        a, b = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
        want = torch.from_numpy(np.fmod(a.numpy(), b.numpy()))
        got = torch.fmod(a.to(VKML), b.to(VKML)).cpu()
        torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_rounding_division_of_reduced_floats(dtype):
    # The CPU rounds a / b to float16 or bfloat16 before trunc or floor: a quotient just
    # under an integer rounds up to it (-65504 / 165 is -397, not -396).
    fi = torch.finfo(dtype)
    g = torch.Generator().manual_seed(1)
    a = ((torch.rand(8192, generator=g) * 2 - 1) * fi.max).to(dtype)
    b = (
        (torch.rand(8192, generator=g) * 2 - 1)
        * torch.pow(10.0, torch.randint(-3, 4, (8192,), generator=g))
    ).to(dtype)
    b[b == 0] = 1
    a[:2] = -65504 if dtype == torch.float16 else a[:2]
    b[:2] = torch.tensor([165.0, -445.75], dtype=dtype)
    for mode in ("trunc", "floor"):
        assert_close_to_cpu(
            lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), a, b, atol=0, rtol=0
        )
    assert_close_to_cpu(torch.floor_divide, a, b, atol=0, rtol=0)


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


def test_bool_shifts_promote_with_an_integer_operand():
    flags = torch.tensor([True, False, True])
    assert_close_to_cpu(lambda x: x << 2, flags)
    assert_close_to_cpu(lambda x: x >> 1, flags)
    assert_close_to_cpu(lambda x, y: x << y, flags, torch.tensor([1, 2, 3]))
    assert_raises_like_cpu(lambda x: x << x, flags)


def test_float32_pow_stays_within_two_ulps(no_fallback):
    """pow(a, b) for a > 0 is exp of b log a with log a in two floats and b log a's
    product exact: 1.98 ulps of the double result at most (rounding included; the bound
    allows 2.5) over bases from 1e-44 to 1e38 and exponents from -3.7 to 12.3. The
    driver's pow (exp2 of b log2 a in one float) was 20 to 40 ulps off on lavapipe (Mesa
    22.3, 2026-12-07); the CPU's is 0.6."""
    gen = torch.Generator().manual_seed(0)
    x = torch.cat(
        [
            torch.logspace(-44, 38, 20000),
            torch.rand(20000, generator=gen) * 3,
            1 + torch.randn(5000, generator=gen) * 1e-3,
        ]
    )
    for e in (1 / 3, -0.25, 2.5, 0.7, -1.5, 7.0, 1.0001, 12.3, -3.7):
        want = x.double().pow(torch.tensor(e).double())
        got = x.to(VKML).pow(e).cpu().double()
        keep = (want.abs() < 3e38) & (want.abs() > 1.2e-38)
        want, got = want[keep], got[keep]
        ulp = (torch.nextafter(want.float(), torch.tensor(math.inf)).double() - want.float()).abs()
        worst = ((got - want).abs() / ulp).max().item()
        assert worst <= 2.5, f"pow(x, {e}): {worst:.2f} ulps"


@pytest.mark.parametrize("name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_"])
def test_in_place_comparisons_do_not_broadcast_self(name):
    """a.eq_(b) with b broadcasting a to a larger shape resized a on vkml (found by
    PyTorch's test_torch.py); the CPU raises, and a keeps its shape and values."""
    for device in ("cpu", VKML):
        a = torch.tensor([[1.0], [2.0], [3.0]], device=device)
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            getattr(a, name)(torch.zeros(3, 4, device=device))
        assert a.shape == (3, 1) and a.cpu().flatten().tolist() == [1.0, 2.0, 3.0]
        b = torch.tensor([[1.0, 5.0], [2.0, 0.0]], device=device)
        getattr(b, name)(torch.tensor([1.0, 0.0], device=device))  # broadcasting the other
        want = getattr(torch.tensor([[1.0, 5.0], [2.0, 0.0]]), name)(torch.tensor([1.0, 0.0]))
        assert torch.equal(b.cpu(), want)


def test_alpha_and_lerp_dtypes_checked_as_on_the_cpu():
    """Found by PyTorch's test_type_promotion.py: add/sub with a float alpha on integer
    tensors computed (alpha truncated) and lerp of float64 and float32 promoted, where
    the CPU raises."""
    for device in ("cpu", VKML):
        x = torch.ones(4, dtype=torch.int32, device=device)
        for fn in (torch.add, torch.sub):
            with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
                fn(x, x, alpha=1.1)
            with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
                fn(x.bool(), x.bool(), alpha=1.1) if fn is torch.add else fn(x, x, alpha=0.5)
        assert torch.equal(torch.add(x.bool(), x.bool(), alpha=True).cpu(), torch.ones(4).bool())
        d, f = torch.ones(4, dtype=torch.double, device=device), torch.ones(4, device=device)
        with pytest.raises(RuntimeError, match="for `end`"):
            torch.lerp(d, f, 0.5)
        with pytest.raises(RuntimeError, match="for `weight`"):
            torch.lerp(f, f, d)
