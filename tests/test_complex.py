"""Complex tensors on vkml: storage, copies, views, and the first native arithmetic.

complex64 / complex128 tensors are stored as pairs of their real dtype. Copies, fills,
view_as_real / view_as_complex, cat, remaps, triangles, indexing, where, add / sub / mul /
div / neg, abs / angle, sum / mean and the matrix products run natively on the float pairs
(composite/complex.cpp); other complex math takes the counted CPU route.
Every result is compared with the same op on the CPU.
"""

import warnings

import pytest
import torch
from conftest import VKML, dtype_id

import torch_vkml

C64 = torch.complex64
TOL = dict(atol=1e-5, rtol=1e-5)


def _c(shape=(2, 3), dtype=C64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g)).to(dtype)


def _same(got, ref, tol=TOL):
    assert got.device.type == "vkml"
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    torch.testing.assert_close(
        got.cpu().resolve_conj().resolve_neg(), ref.resolve_conj().resolve_neg(), **tol
    )


@pytest.fixture
def no_fallback_here():
    torch_vkml.reset_fallback_counts()
    yield
    assert not torch_vkml.fallback_counts(), torch_vkml.fallback_counts()


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=dtype_id)
def test_storage_round_trip(dtype, no_fallback_here):
    c = _c(dtype=dtype)
    x = c.to(VKML)
    assert x.dtype == dtype and x.is_complex()
    _same(x, c)
    assert x[1, 2].item() == pytest.approx(complex(c[1, 2].item()))
    _same(torch.zeros(2, 2, dtype=dtype, device=VKML), torch.zeros(2, 2, dtype=dtype))
    _same(torch.ones(3, dtype=dtype, device=VKML), torch.ones(3, dtype=dtype))
    _same(torch.full((2,), 1 - 2j, dtype=dtype, device=VKML), torch.full((2,), 1 - 2j, dtype=dtype))
    assert "device='vkml:0'" in repr(x)


def test_strided_and_converting_copies(no_fallback_here):
    c = _c((3, 4))
    x = c.to(VKML)
    _same(x.t().contiguous(), c.t().contiguous())
    _same(x[:, ::2].cpu().to(VKML), c[:, ::2])
    _same(x.to(torch.complex128), c.to(torch.complex128))
    _same(x.real.to(C64), c.real.to(C64))  # real to complex: imaginary parts zero
    with warnings.catch_warnings():  # warned once per process, as on the CPU
        warnings.simplefilter("ignore")
        _same(x.to(torch.float32), c.real.contiguous())
    y = torch.empty(4, 3, dtype=C64, device=VKML)
    y.copy_(x.t())
    _same(y, c.t())
    y[0].copy_(torch.tensor(2.5))  # a real value broadcast into complex elements
    ref = c.t().clone()
    ref[0] = 2.5
    _same(y, ref)


def test_conjugate_and_negative_views(no_fallback_here):
    c = _c()
    x = c.to(VKML)
    _same(x.conj(), c.conj())
    _same(x.conj().resolve_conj(), c.conj().resolve_conj())
    _same(x.conj().imag, c.conj().imag)  # a real view with the negative bit
    y = torch.zeros_like(x)
    y.conj().copy_(x)  # into a conjugated view: y holds conj(x)
    _same(y, c.conj().resolve_conj())
    z = torch.zeros_like(x).conj()
    z.fill_(1 + 2j)
    _same(z, torch.full((2, 3), 1 + 2j, dtype=C64))


def test_views_share_storage(no_fallback_here):
    c = _c()
    x = c.to(VKML)
    pairs = torch.view_as_real(x)
    _same(pairs, torch.view_as_real(c))
    pairs[0, 0, 1] = 7.0  # writes the imaginary part of x[0, 0]
    assert x[0, 0].item() == pytest.approx(complex(c[0, 0].real.item(), 7.0))
    _same(torch.view_as_complex(pairs), x.cpu())
    _same(x.real, c.real.clone().index_put_((torch.tensor([0]), torch.tensor([0])), c.real[0, 0]))
    back = torch.view_as_complex(torch.view_as_real(c).to(VKML))
    _same(back, c)


ARITH = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a, b: -a,
    "alpha": lambda a, b: torch.add(a, b, alpha=2),
    "complex_alpha": lambda a, b: torch.sub(a, b, alpha=1 - 1j),
    "real_operand": lambda a, b: a * b.real,
    "real_first": lambda a, b: b.imag - a,
    "scalars": lambda a, b: a * 2 + (1 - 1j),
    "broadcast": lambda a, b: a / b[0],
    "conjugated": lambda a, b: a.conj() * b,
    "in_place": lambda a, b: a.clone().mul_(b).add_(b),
    "out": lambda a, b: torch.div(a, b, out=torch.empty_like(a)),
    "widening": lambda a, b: a.to(torch.complex128) * b,
}


@pytest.mark.parametrize("name", list(ARITH))
def test_arithmetic_is_native(name, no_fallback_here):
    f = ARITH[name]
    a, b = _c(seed=1), _c(seed=2)
    _same(f(a.to(VKML), b.to(VKML)), f(a, b))


def test_sum_mean_cat(no_fallback_here):
    c = _c((3, 4))
    x = c.to(VKML)
    _same(x.sum(), c.sum())
    _same(x.sum(1, keepdim=True), c.sum(1, keepdim=True))
    _same(x.mean(0), c.mean(0))
    _same(x.mean(), c.mean())
    _same(torch.cat([x, x.conj()], 1), torch.cat([c, c.conj()], 1))
    _same(torch.cat([x, x[:1]]), torch.cat([c, c[:1]]))


MATMUL = {
    "mm": lambda a, b, v: a @ b,
    "bmm": lambda a, b, v: a.expand(2, 3, 4) @ b.expand(2, 4, 5),
    "mv": lambda a, b, v: a @ v,
    "dot": lambda a, b, v: v @ v,
    "vdot": lambda a, b, v: torch.vdot(v, v.flip(0)),
    "vdot_conjugated": lambda a, b, v: torch.vdot(v.conj(), v),
    "addmm": lambda a, b, v: torch.addmm(a @ b, a, b, beta=0.5, alpha=2 - 1j),
    "conjugate_transpose": lambda a, b, v: a.mH @ a,
    "einsum": lambda a, b, v: torch.einsum("ij,jk->ik", a, b),
}


@pytest.mark.parametrize("name", list(MATMUL))
def test_matrix_products_are_native(name, no_fallback_here):
    f = MATMUL[name]
    a, b, v = _c((3, 4), seed=4), _c((4, 5), seed=5), _c((4,), seed=6)
    _same(f(a.to(VKML), b.to(VKML), v.to(VKML)), f(a, b, v), dict(atol=1e-4, rtol=1e-4))


def test_abs_and_angle_are_native(no_fallback_here):
    c = _c()
    c[0, 0] = 0  # angle(0) = 0
    x = c.to(VKML)
    _same(x.abs(), c.abs())
    _same(x.angle(), c.angle())
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
        x.abs_()


def test_sgn_and_conj_physical_are_native(no_fallback_here):
    c = _c((3, 4), seed=5)
    c[1, 1] = 0  # sgn(0) = 0
    x = c.to(VKML)
    _same(x.sgn(), c.sgn())
    _same(torch.conj_physical(x), torch.conj_physical(c))
    _same(torch.conj_physical(x.t()), torch.conj_physical(c.t()))
    out = torch.empty(0, dtype=C64, device=VKML)
    torch.conj_physical(x, out=out)
    _same(out, torch.conj_physical(c))
    y = x.clone()
    y.conj_physical_()
    _same(y, torch.conj_physical(c))
    _same(x.abs().conj_physical(), c.abs().conj_physical())  # a copy for real tensors
    with pytest.raises(RuntimeError, match="torch.sgn instead"):
        x.sign()
    a = c.clone().requires_grad_()
    b = x.clone().requires_grad_()
    a.abs().sum().backward()
    b.abs().sum().backward()  # |z|' is sgn(z)
    _same(b.grad, a.grad)


def test_comparisons_and_norms_are_native(no_fallback_here):
    c = _c((3, 4), seed=8)
    d = c.clone()
    d[0, 0] = 7j
    x, y = c.to(VKML), d.to(VKML)
    _same(x == y, c == d)
    _same(x != y, c != d)
    _same(x == 0, c == 0)
    assert torch.equal(x, x.clone()) and not torch.equal(x, y)
    for ord in (2, 1, float("inf"), 0):
        _same(torch.linalg.vector_norm(x, ord, dim=1), torch.linalg.vector_norm(c, ord, dim=1))
    _same(x.norm(), c.norm())


def _grid():
    # Random values, and the points where formulas lose precision or branch: zero,
    # tiny values, the real and imaginary axes (branch cuts of log, sqrt and the
    # inverse functions lie on them), large parts.
    c = _c((120,), seed=11) * 2
    special = [
        0,
        1e-4j,
        1e-4,
        -3,
        -2j,
        2j,
        0.5,
        -0.5,
        1.5,
        -1.5,
        30 + 1j,
        -30 + 2j,
        1 + 1j,
        -4 - 3j,
    ]
    c[: len(special)] = torch.tensor(special, dtype=C64)
    return c


MATH = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
    "sigmoid", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "sgn", "sinc", "silu",
]  # fmt: skip


@pytest.mark.parametrize("name", MATH)
def test_complex64_math_kernels(name, no_fallback_here):
    # shaders/complex.comp: one kernel per function, the C99 formulas PyTorch's CPU uses.
    c = _grid()
    fn = getattr(torch, name, None) or getattr(torch.nn.functional, name)
    got, ref = fn(c.to(VKML)).cpu(), fn(c)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=2e-5, equal_nan=True)


def test_pow_and_division(no_fallback_here):
    c, w = _grid(), _c((120,), seed=12)
    x = c.to(VKML)
    for e in (2, 3, -2, 0.5, -0.5, -1, 0, 1.7, 0.5 + 1.5j, -1 + 1j):
        torch.testing.assert_close(
            torch.pow(x, e).cpu(), torch.pow(c, e), atol=1e-5, rtol=2e-5, equal_nan=True
        )
    _same(torch.pow(x, w.to(VKML)), torch.pow(c, w), dict(atol=1e-4, rtol=2e-5, equal_nan=True))
    _same(torch.pow(2.0, w.to(VKML)), torch.pow(2.0, w))
    _same(x * (1 + 2j), c * (1 + 2j))  # a complex Python scalar
    # Scaled division: |b|^2 overflows float32 here, the quotient does not.
    big = torch.tensor([1e30 + 1e30j, 3e30 - 4e30j], dtype=C64)
    _same(big.to(VKML) / big.flip(0).to(VKML), big / big.flip(0), dict(atol=0, rtol=1e-5))
    _same(x / w.to(VKML), c / w)


def test_predicates_and_logical_ops(no_fallback_here):
    c = _c((2, 6), seed=13)
    c[0, 0], c[0, 1], c[0, 2], c[1, 0] = 0, complex(float("nan"), 1), complex(1, float("inf")), 1j
    d = _c((2, 6), seed=14)
    d[1, 1] = 0
    x, y = c.to(VKML), d.to(VKML)
    for fn in (torch.isnan, torch.isinf, torch.isfinite, torch.logical_not):
        _same(fn(x), fn(c))
    for fn in (torch.logical_and, torch.logical_or, torch.logical_xor):
        _same(fn(x, y), fn(c, d))
        _same(fn(x, y.real), fn(c, d.real))  # one operand real


def test_ternary_ops(no_fallback_here):
    a, b, t = _c((3, 4), seed=15), _c((3, 4), seed=16), _c((4,), seed=17)
    x, y, u = a.to(VKML), b.to(VKML), t.to(VKML)
    _same(torch.addcmul(x, y, u, value=0.5 - 1j), torch.addcmul(a, b, t, value=0.5 - 1j))
    _same(torch.addcdiv(x, y, u, value=2), torch.addcdiv(a, b, t, value=2))
    _same(torch.lerp(x, y, 0.3), torch.lerp(a, b, 0.3))
    _same(torch.lerp(x, y, u), torch.lerp(a, b, t))


def test_scans_products_and_variance(no_fallback_here):
    c = _c((3, 7), seed=18)
    x = c.to(VKML)
    _same(x.cumsum(1), c.cumsum(1))
    _same(x.conj().cumsum(0), c.conj().cumsum(0))
    _same(x.cumprod(1), c.cumprod(1), dict(atol=1e-4, rtol=1e-5))
    _same(x.prod(1), c.prod(1), dict(atol=1e-4, rtol=1e-5))
    _same(x.prod(0, keepdim=True), c.prod(0, keepdim=True))
    _same(x.prod(), c.prod(), dict(atol=1e-3, rtol=1e-5))
    _same(x.var(1), c.var(1))
    _same(x.std(0, correction=0), c.std(0, correction=0))
    v, m = torch.var_mean(x, 1)
    rv, rm = torch.var_mean(c, 1)
    _same(v, rv)
    _same(m, rm)


def test_accumulating_indexing(no_fallback_here):
    c = _c((5, 4), seed=19)
    src = _c((3, 4), seed=20)
    idx = torch.tensor([0, 2, 0])
    x, s = c.to(VKML), src.to(VKML)
    _same(x.index_add(0, idx.to(VKML), s, alpha=2), c.index_add(0, idx, src, alpha=2))
    sidx = torch.tensor([[0, 1, 0, 4], [2, 2, 3, 3], [4, 0, 1, 1]])
    _same(x.scatter_add(0, sidx.to(VKML), s), c.scatter_add(0, sidx, src))
    _same(
        x.index_put((idx.to(VKML),), s, accumulate=True), c.index_put((idx,), src, accumulate=True)
    )
    flat = torch.tensor([1, 7, 1, 19])
    vals = _c((4,), seed=21)
    _same(
        x.clone().put_(flat.to(VKML), vals.to(VKML), accumulate=True),
        c.clone().put_(flat, vals, accumulate=True),
    )
    _same(
        x.index_fill(1, torch.tensor([0, 2]).to(VKML), 2 - 3j),
        c.index_fill(1, torch.tensor([0, 2]), 2 - 3j),
    )


def test_random_complex_and_construction(no_fallback_here):
    torch.manual_seed(0)
    n = torch.randn(20000, dtype=C64, device=VKML).cpu()
    # Each part normal with variance 1/2, so that E|z|^2 = 1, as on the CPU.
    assert abs(n.real.var().item() - 0.5) < 0.03 and abs(n.imag.var().item() - 0.5) < 0.03
    u = torch.rand(20000, dtype=C64, device=VKML).cpu()
    assert 0 <= u.real.min() and u.real.max() < 1 and 0 <= u.imag.min() and u.imag.max() < 1
    assert abs(u.imag.mean().item() - 0.5) < 0.02
    re, im = torch.randn(3, 4), torch.randn(4)
    _same(torch.complex(re.to(VKML), im.to(VKML)), torch.complex(re, im))
    mag, angle = torch.rand(3, 4) * 3, torch.randn(4) * 4
    _same(torch.polar(mag.to(VKML), angle.to(VKML)), torch.polar(mag, angle))
    out = torch.empty(0, dtype=C64, device=VKML)
    torch.polar(mag.to(VKML), angle.to(VKML), out=out)
    _same(out, torch.polar(mag, angle))


def test_other_math_takes_the_counted_cpu_route():
    # complex128 has no kernels of its own for the transcendental functions.
    c = _c(dtype=torch.complex128)
    x = c.to(VKML)
    torch_vkml.reset_fallback_counts()
    _same(x.exp(), c.exp())
    _same(x.sqrt(), c.sqrt())
    counts = torch_vkml.fallback_counts()
    assert counts.get("aten::exp") and counts.get("aten::sqrt"), counts


def test_autograd_through_native_ops():
    c = _c(seed=3)
    w_cpu = c.clone().requires_grad_()
    w = c.to(VKML).requires_grad_()
    for t in (w_cpu, w):
        loss = torch.view_as_real(t * t.conj() + 2 * t).sum()
        loss.backward()
    _same(w.grad, w_cpu.grad)


MOVES = {
    "flip": lambda x, i: x.flip(0, 2),
    "roll": lambda x, i: x.roll(2, 2),
    "fftshift": lambda x, i: torch.fft.fftshift(x, dim=(1, 2)),
    "rot90": lambda x, i: x.rot90(1, (1, 2)),
    "reflect_pad": lambda x, i: torch.nn.functional.pad(x, (1, 2), mode="reflect"),
    "flip_conjugated": lambda x, i: x.conj()[:, ::2].flip(1),
    "tril": lambda x, i: x.tril(),
    "triu_": lambda x, i: x.clone().triu_(1),
    "index_select": lambda x, i: x.index_select(1, i),
    "advanced_index": lambda x, i: x[i],
    "boolean_mask": lambda x, i: x[x.real > 0],
    "gather": lambda x, i: x.gather(2, i.view(1, 2, 1).expand(3, 2, 2)),
    "scatter": lambda x, i: torch.zeros_like(x).scatter_(1, i.view(1, 2, 1).expand(3, 2, 5), x),
    "index_put": lambda x, i: x.clone().index_put_((i,), torch.tensor(1 + 1j, device=x.device)),
    "where": lambda x, i: torch.where(x.real > 0, x, x.conj()),
    "where_scalar": lambda x, i: torch.where(x.imag > 0, x, 0),
}


@pytest.mark.parametrize("name", list(MOVES))
def test_element_moves_are_native(name, no_fallback_here):
    """What only moves or picks elements runs on the pairs (remaps, triangles, indexing)."""
    f = MOVES[name]
    c, i = _c((3, 4, 5), seed=7), torch.tensor([2, 0])
    _same(f(c.to(VKML), i.to(VKML)), f(c, i))


def test_complex128_indexing_moves_both_halves(no_fallback_here):
    """complex128 elements (16 bytes) move as two 8-byte lanes through the index kernels
    and as two halves through masked_select / masked_scatter: each raised before."""
    if not torch_vkml.get_device_properties().supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    x = _c((4, 5), torch.complex128, seed=21)
    m = _c((4, 5), seed=22).real > 0
    i = torch.tensor([3, 0, 2, 2])
    cases = {
        "index_select": lambda t, d: t.index_select(0, i.to(d)),
        "gather": lambda t, d: t.gather(1, torch.tensor([[0, 4], [1, 1], [2, 3], [4, 0]]).to(d)),
        "getitem": lambda t, d: t[i.to(d), 1:],
        "take": lambda t, d: t.take(torch.tensor([0, 19, 7]).to(d)),
        "index_put": lambda t, d: t.clone().index_put_((i[:2].to(d),), t[1:3] * (2 - 1j)),
        "index_copy": lambda t, d: t.clone().index_copy_(0, torch.tensor([1, 3]).to(d), t[:2]),
        "scatter": lambda t, d: t.clone().scatter_(0, torch.tensor([[1, 0, 2, 3, 0]]).to(d), t),
        "masked_select": lambda t, d: t.masked_select(m.to(d)),
        "masked_select of a conjugate": lambda t, d: t.conj().masked_select(m.to(d)),
        "masked_scatter": lambda t, d: t.clone().masked_scatter_(m.to(d), t * 5),
        "repeat_interleave": lambda t, d: t.repeat_interleave(2, dim=0),
        "combinations": lambda t, d: torch.combinations(t[0]),
    }
    for name, fn in cases.items():
        got = fn(x.to(VKML), VKML)
        assert torch.equal(got.cpu().resolve_conj(), fn(x, "cpu").resolve_conj()), name


@pytest.mark.parametrize("dtype", [C64, torch.complex128], ids=dtype_id)
def test_complex_products_in_index_reductions_take_the_cpu_route(dtype):
    """The index kernels reduce complex values as (re, im) lanes, which is right for sums
    only: products take the counted CPU route (they came back multiplied lane by lane),
    and amax / amin raise as on the CPU."""
    if dtype == torch.complex128 and not torch_vkml.get_device_properties().supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    x, s = _c((4, 5), dtype, seed=23), _c((2, 5), dtype, seed=24)
    idx = torch.tensor([[1, 0, 2, 3, 0], [1, 1, 2, 3, 3]])
    cases = {
        "aten::scatter_reduce_.two": lambda t, s, i: t.scatter_reduce(0, i, s, "prod"),
        "aten::scatter_.reduce": lambda t, s, i: t.scatter(0, i, s, reduce="multiply"),
        "aten::scatter_.value_reduce": lambda t, s, i: t.scatter(0, i, 2 - 1j, reduce="multiply"),
        "aten::index_reduce_": lambda t, s, i: t.index_reduce(0, i[0, :2], s, "prod"),
    }
    for op, fn in cases.items():
        torch_vkml.reset_fallback_counts()
        got = fn(x.to(VKML), s.to(VKML), idx.to(VKML))
        _same(got, fn(x, s, idx), dict(atol=1e-5, rtol=1e-5))
        assert torch_vkml.fallback_counts() == {op: 1}, torch_vkml.fallback_counts()
    # Means are sums, then a true division by the counts (it was a floor division, which
    # complex values do not have).
    torch_vkml.reset_fallback_counts()
    for include_self in (True, False):
        got = x.to(VKML).scatter_reduce(
            0, idx.to(VKML), s.to(VKML), "mean", include_self=include_self
        )
        _same(got, x.scatter_reduce(0, idx, s, "mean", include_self=include_self))
    assert torch_vkml.fallback_counts() == {}, torch_vkml.fallback_counts()
    with pytest.raises(NotImplementedError):
        x.scatter_reduce(0, idx, s, "amax")
    with pytest.raises(NotImplementedError):
        x.to(VKML).scatter_reduce(0, idx.to(VKML), s.to(VKML), "amax")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=dtype_id)
def test_complex_result_into_a_real_out_raises(dtype):
    # The imaginary part was dropped in silence; the CPU raises "can't be cast".
    a, b = _c(dtype=dtype), _c(dtype=torch.complex128, seed=1)
    for op in (torch.add, torch.sub, torch.mul, torch.div):
        for out_dtype in (torch.float64, torch.int64):
            for dev in ("cpu", VKML):
                with pytest.raises(RuntimeError, match="can't be cast"):
                    op(a.to(dev), b.to(dev), out=torch.empty(2, 3, dtype=out_dtype, device=dev))
    x = torch.randn(2, 3, dtype=torch.float64, device=VKML)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(b.to(VKML))
    # what may be cast still is: a complex out of a wider dtype, and |z| into a real out
    out = torch.empty(2, 3, dtype=torch.complex128, device=VKML)
    torch.add(a.to(VKML), b.to(VKML), out=out)
    _same(out, torch.add(a, b))
    real = torch.empty(2, 3, dtype=torch.float64, device=VKML)
    torch.abs(b.to(VKML), out=real)
    _same(real, b.abs())


def test_complex_order_ops_raise_the_cpu_words():
    a = _c()
    for fn in (torch.maximum, torch.minimum, torch.fmax, torch.fmin, torch.heaviside):
        with pytest.raises(RuntimeError) as cpu:
            fn(a, a)
        with pytest.raises(type(cpu.value), match=str(cpu.value).splitlines()[0]):
            fn(a.to(VKML), a.to(VKML))
    # heaviside names complex operands before different dtypes, as the CPU
    with pytest.raises(RuntimeError, match="complex tensors"):
        torch.heaviside(a.to(VKML), a.to(VKML, torch.complex128))
    with pytest.raises(RuntimeError, match="complex tensors"):
        torch.heaviside(
            a.real.to(VKML), a.real.to(VKML), out=torch.empty(2, 3, dtype=C64, device=VKML)
        )
    with pytest.raises(RuntimeError, match=r"different dtypes\."):
        torch.heaviside(a.real.to(VKML), a.real.to(VKML, torch.float64))


def test_complex128_division_scales_as_the_cpu():
    # Smith's division: |b|^2 overflowed (or underflowed) where the quotient does not.
    big, tiny = 1e300, 1e-300
    a = torch.tensor(
        [complex(big, big), complex(1, 1), complex(tiny, tiny), complex(3, -2)],
        dtype=torch.complex128,
    )
    b = torch.tensor(
        [complex(big, big), complex(tiny, tiny), complex(tiny, 2 * tiny), complex(0, 0)],
        dtype=torch.complex128,
    )
    _same((a.to(VKML) / b.to(VKML)).cpu().to(VKML), a / b, tol=dict(atol=0, rtol=1e-15))


def test_in_place_complex_ops_keep_their_shape():
    # a.add_(b) with b broadcasting a resized a; the CPU raises.
    for dev in ("cpu", VKML):
        a = torch.ones(5, dtype=C64, device=dev)
        b = torch.ones(5, 5, dtype=C64, device=dev)
        for fn in (torch.Tensor.add_, torch.Tensor.mul_, torch.Tensor.div_):
            with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
                fn(a, b)
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            a.lerp_(b, 0.5)
        assert a.shape == (5,)


@pytest.mark.parametrize("fn", [torch.tanh, torch.sigmoid], ids=lambda f: f.__name__)
def test_complex_tanh_sigmoid_backward(fn):
    # tanh_backward / sigmoid_backward raised NotImplementedError for complex64.
    x = _c((3, 4))
    grads = []
    for dev in ("cpu", VKML):
        xd = x.to(dev).detach().requires_grad_()
        fn(xd).abs().sum().backward()
        grads.append(xd.grad)
    _same(grads[1], grads[0])


def test_complex_lstsq_outputs_are_real_where_the_cpu_s_are():
    # The gelsy driver's empty singular_values were made complex, and the out check
    # (no complex result into a real out) then raised.
    a, b = _c((5, 3)), _c((5, 2), seed=1)
    want = torch.linalg.lstsq(a, b)
    got = torch.linalg.lstsq(a.to(VKML), b.to(VKML))
    for name in ("solution", "residuals", "rank", "singular_values"):
        assert getattr(got, name).dtype == getattr(want, name).dtype, name
    _same(got.solution, want.solution, tol=dict(atol=1e-4, rtol=1e-4))
