"""Special functions against the CPU: torch.special (Bessel, Airy, error-function
relatives, zeta, orthogonal polynomials), i0, polygamma, igamma, frexp, angle,
and gcd / lcm, with edge values (0, negatives, large x, NaN, inf)
and gradients."""

import pytest
import torch
from conftest import (
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    make,
)

pytestmark = pytest.mark.usefixtures("no_fallback")

NAN = float("nan")
INF = float("inf")
S = torch.special
LOW_PRECISION = {
    torch.float16: dict(atol=1e-2, rtol=1e-2),
    torch.bfloat16: dict(atol=1e-2, rtol=1.6e-2),
}
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
EDGES = [
    0.0,
    -0.0,
    1e-30,
    -1e-30,
    1e-6,
    0.5,
    -0.5,
    1.0,
    -1.0,
    2.0,
    -2.0,
    2.09,
    -2.09,
    5.0,
    -5.0,
    8.0,
    -8.0,
    8.5,
    30.0,
    -30.0,
    80.0,
    100.0,
    -100.0,
    NAN,
    INF,
    -INF,
]

UNARY = [
    torch.i0,
    S.i0e,
    S.i1,
    S.i1e,
    S.ndtri,
    S.log_ndtr,
    S.erfcx,
    S.airy_ai,
    S.bessel_j0,
    S.bessel_j1,
    S.bessel_y0,
    S.bessel_y1,
    S.modified_bessel_i0,
    S.modified_bessel_i1,
    S.modified_bessel_k0,
    S.modified_bessel_k1,
    S.scaled_modified_bessel_k0,
    S.scaled_modified_bessel_k1,
    S.spherical_bessel_j0,
    torch.angle,
]


def _tol(fn, dtype):
    if dtype in LOW_PRECISION:
        return LOW_PRECISION[dtype]
    # Absolute error scales with the magnitude where the CPU's float result itself
    # carries the error of its own rounding (zeros of Bessel functions).
    return dict(atol=1e-5, rtol=2e-5)


@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
def test_unary_edges(fn):
    x = torch.tensor(EDGES)
    assert_close_to_cpu(fn, x, **_tol(fn, torch.float32))


def _cpu_has(fn, dtype):
    try:
        fn(torch.ones(2, dtype=dtype))
    except NotImplementedError:
        return False
    return True


# Only the (function, dtype) pairs the CPU can compute: the others have nothing to
# compare with.
RANGE_CASES = [
    pytest.param(fn, dtype, id=f"{fn.__name__}-{dtype_id(dtype)}")
    for dtype in FLOATS
    for fn in UNARY
    if _cpu_has(fn, dtype)
]


@pytest.mark.parametrize(("fn", "dtype"), RANGE_CASES)
def test_unary_ranges(fn, dtype):
    x = torch.cat([make(40, dtype, low=-12, high=12), make(24, dtype, low=0, high=1)])
    assert_close_to_cpu(fn, x, **_tol(fn, dtype))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool], ids=dtype_id)
def test_integer_inputs_promote(dtype):
    x = make((3, 4), dtype)
    for fn in (torch.i0, S.i1e, S.bessel_j0, S.erfcx, torch.angle):
        assert_close_to_cpu(fn, x)
    assert_close_to_cpu(lambda t: S.zeta(t.float().abs() + 2, t), x)


def test_out_and_noncontiguous():
    x = make((6, 5), low=-4, high=4)
    assert_close_to_cpu(lambda t: S.i1(t.t()), x)
    assert_close_to_cpu(lambda t: torch.i0(t, out=torch.empty_like(t)), x)
    assert_close_to_cpu(lambda t: S.bessel_y1(t.abs(), out=torch.empty(0, device=t.device)), x)
    assert_close_to_cpu(lambda t: t.clone().i0_(), x)


def test_ndtri_domain():
    p = torch.cat(
        [torch.tensor([0.0, 1.0, -0.1, 1.1, 1e-20, 1 - 1e-7, 0.5, NAN]), make(30, low=0, high=1)]
    )
    assert_close_to_cpu(S.ndtri, p)


def test_log_ndtr_tail():
    x = torch.tensor([-40.0, -20.0, -5.0, -1.5, -1.0, -0.5, 0.0, 3.0, 10.0])
    assert_close_to_cpu(S.log_ndtr, x)


POLYS = [
    S.chebyshev_polynomial_t,
    S.chebyshev_polynomial_u,
    S.chebyshev_polynomial_v,
    S.chebyshev_polynomial_w,
    S.shifted_chebyshev_polynomial_t,
    S.shifted_chebyshev_polynomial_u,
    S.shifted_chebyshev_polynomial_v,
    S.shifted_chebyshev_polynomial_w,
    S.hermite_polynomial_h,
    S.hermite_polynomial_he,
    S.laguerre_polynomial_l,
    S.legendre_polynomial_p,
]


@pytest.mark.parametrize("fn", POLYS, ids=lambda f: f.__name__)
def test_polynomials(fn):
    x = torch.tensor([-1.0, 1.0, 0.0, 0.5, -0.3, 0.99, 1.5, -2.0])
    n = torch.tensor([0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 9.0, 12.0, -1.0, NAN, INF, 2.7])
    xx, nn = x[:, None].expand(8, 12), n[None, :].expand(8, 12)
    assert_close_to_cpu(fn, xx, nn, atol=1e-4, rtol=1e-4)
    # n as a Python number, x from integers
    assert_close_to_cpu(lambda t: fn(t, 4), x)
    assert_close_to_cpu(lambda t: fn(t, n=3), make(5, torch.int64, low=-2, high=3))
    # x = NaN gives NaN here. For some n the CPU returns 0 instead, and which n changes
    # between torch versions (T at n = 2.7: NaN in 2.13, 0 in 2.11); there the
    # difference is an expected failure, never a silent pass.
    nan_x = torch.full((12,), NAN)
    expected = fn(nan_x, n)
    actual = fn(nan_x.to(VKML), n.to(VKML)).cpu()
    same = (actual == expected) | (actual.isnan() & expected.isnan())
    quirk = actual.isnan() & ~expected.isnan()
    assert (same | quirk).all(), f"x = NaN: vkml {actual.tolist()}, CPU {expected.tolist()}"
    if not same.all():
        pytest.xfail(
            f"x = NaN, n = {n[~same].tolist()}: the CPU returns {expected[~same].tolist()}, "
            "we return NaN"
        )


def test_zeta():
    x = torch.tensor([1.0, 0.5, 2.0, 3.0, 4.5, 10.0, 2.0, 3.0, 2.0, NAN])
    q = torch.tensor([1.0, 1.0, 0.0, -1.5, 2.0, 0.1, -2.0, 30.0, 1e-3, 1.0])
    assert_close_to_cpu(S.zeta, x, q, atol=1e-5, rtol=3e-5)
    assert_close_to_cpu(lambda a: S.zeta(a, 2.0), make(8, low=1.5, high=6))
    assert_close_to_cpu(lambda a: S.zeta(3.0, a), make(8, low=0.2, high=6))


@pytest.mark.parametrize(
    "n",
    [0, pytest.param(1, marks=pytest.mark.xfail(reason="trigamma off near poles")), 2, 3, 4, 7],
)
def test_polygamma(n):
    x = torch.cat(
        [
            make(30, low=0.05, high=9),
            make(10, low=-4, high=0),
            torch.tensor([0.0, -1.0, -2.5, 1e-3, 30.0, NAN, INF]),
        ]
    )
    tol = dict(atol=1e-5, rtol=1e-4) if n >= 2 else dict(atol=1e-5, rtol=2e-5)
    assert_close_to_cpu(lambda t: torch.polygamma(n, t), x, **tol)
    assert_close_to_cpu(lambda t: torch.polygamma(n, t, out=torch.empty_like(t)), x, **tol)


def test_digamma_near_poles():
    # psi(x) = psi(1 - x) - pi / tan(pi x): needs tan(pi r) accurate relatively
    x = torch.tensor([-1.0001, -2.9999, -0.9990, -3.00001, -4.5, -0.00001, -7.9999])
    assert_close_to_cpu(torch.digamma, x)
    assert_close_to_cpu(lambda t: torch.polygamma(0, t), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_igamma(dtype):
    a = torch.tensor([0.5, 1.0, 2.0, 5.0, 0.1, 3.0, 0.0, 1.0, -1.0, 2.0, 7.0, 0.3])
    x = torch.tensor([0.5, 2.0, 0.3, 4.0, 0.05, 12.0, 1.0, 0.0, 1.0, INF, 0.8, 1.0])
    a, x = a.to(dtype), x.to(dtype)
    tol = LOW_PRECISION.get(dtype, dict(atol=1e-5, rtol=1e-4))
    assert_close_to_cpu(torch.igamma, a, x, **tol)
    assert_close_to_cpu(torch.igammac, a, x, **tol)
    a2, x2 = make(30, dtype, low=0.1, high=15), make(30, dtype, low=0.01, high=15)
    assert_close_to_cpu(torch.igamma, a2, x2, **tol)
    assert_close_to_cpu(torch.igammac, a2, x2, **tol)
    assert_close_to_cpu(lambda p, q: p.clone().igamma_(q), a2, x2, **tol)


def test_igamma_rejects_integers():
    assert_raises_like_cpu(torch.igamma, make(4, torch.int64), make(4, torch.int64))


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_frexp(dtype):
    x = torch.tensor([0.0, -0.0, INF, -INF, NAN, 1.0, -3.0, 0.75, 1e-3, 6e4], dtype=dtype)
    x = torch.cat([x, make(20, dtype, low=-100, high=100)])
    if dtype == torch.float32:
        x = torch.cat([x, torch.tensor([1e-40, -3e-42, 1e38])])
    assert_close_to_cpu(torch.frexp, x)
    assert_close_to_cpu(
        lambda t: torch.frexp(
            t, out=(torch.empty_like(t), torch.empty(0, dtype=torch.int32, device=t.device))
        ),
        x,
    )
    assert_raises_like_cpu(torch.frexp, make(3, torch.int32))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=dtype_id)
def test_gcd_lcm(dtype):
    low = 0 if dtype == torch.uint8 else -30
    a, b = make((5, 6), dtype, low=low, high=30), make((6,), dtype, low=low, high=30)
    a[0, 0], b[0] = 0, 0
    for fn in (torch.gcd, torch.lcm):
        assert_close_to_cpu(fn, a, b)
        assert_close_to_cpu(lambda p, q, fn=fn: fn(p.clone(), q, out=torch.empty_like(p)), a, b)
    assert_close_to_cpu(lambda p, q: p.clone().gcd_(q), a, b)


def test_gcd_rejects_floats_and_bool():
    assert_raises_like_cpu(torch.gcd, make(3), make(3))
    assert_raises_like_cpu(torch.lcm, make(3, torch.bool), make(3, torch.bool))


def test_angle():
    x = torch.tensor([-1.0, 0.0, -0.0, 2.0, NAN, -INF, INF])
    assert_close_to_cpu(torch.angle, x)
    assert_close_to_cpu(torch.angle, x.to(torch.bfloat16))
    assert_close_to_cpu(torch.angle, x.double())


GRAD_FNS = [
    (torch.i0, dict(low=-5, high=5)),
    (S.i0e, dict(low=-5, high=5)),
    (S.i1, dict(low=-5, high=5)),
    (S.i1e, dict(low=-5, high=5)),
    (S.ndtri, dict(low=0.05, high=0.95)),
    (S.log_ndtr, dict(low=-4, high=4)),
    (S.erfcx, dict(low=-2, high=4)),
    (lambda t: torch.polygamma(2, t), dict(low=0.5, high=5)),
    (lambda t: S.zeta(3.0, t), dict(low=0.5, high=5)),
    (lambda t: torch.igamma(torch.full_like(t, 2.5).detach(), t), dict(low=0.1, high=5)),
]


@pytest.mark.parametrize("case", range(len(GRAD_FNS)))
def test_gradients(case):
    fn, kw = GRAD_FNS[case]
    x = make((4, 5), **kw).requires_grad_()
    assert_grads_close_to_cpu(fn, x, atol=1e-4, rtol=1e-4)


def test_bessel_i0_i1_near_float_overflow_and_erfcx_of_negatives():
    # i0/i1 past exp's overflow at 88.7 (finite up to 91.9) were inf: exp(|x|) is now taken
    # in two halves. erfcx(x < 0) = 2 exp(x^2) - erfcx(-x) lost x^2 half-ulps to the
    # rounding of x^2 (4.6e-6 near -9); x^2 is now carried in two parts.
    x = torch.linspace(-91.8, 91.8, 20001)
    for fn in (torch.special.i0, torch.special.i1):
        got = fn(x.to(VKML)).cpu().double()
        assert got.isfinite().all()
        torch.testing.assert_close(got, fn(x.double()), rtol=3e-6, atol=0)
    x = torch.linspace(-9.3, 0, 50001)  # erfcx(x) overflows float32 below -9.38
    assert torch.special.erfcx(torch.tensor([-9.5, -20.0], device=VKML)).isposinf().all()
    got = torch.special.erfcx(x.to(VKML)).cpu().double()
    torch.testing.assert_close(got, torch.special.erfcx(x.double()), rtol=1e-6, atol=0)
