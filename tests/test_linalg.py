"""Linear algebra on vkml: Cholesky, LU, triangular and LU solves, and what builds on
them (solve, inv, det, slogdet, cholesky_solve / cholesky_inverse, QR).

Each result is compared with the CPU's (LAPACK) on the same inputs: well-conditioned
matrices (diagonally dominant, or A A^T + n I for the positive definite ones), so that
float32 results agree to 1e-4 relative to their largest magnitude. Errors (not positive
definite, singular) come back through the info tensors as LAPACK's codes. Every test
asserts that nothing ran on the CPU fallback.
"""

import pytest
import torch
from conftest import LONG_TESTS, VKML

import torch_vkml

F32 = dict(atol=1e-4, rtol=1e-4)


def _general(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, generator=g, dtype=dtype)
    if shape[-2] != shape[-1]:
        return a
    return a + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def _spd(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, generator=g, dtype=dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def _same(got, ref, tol=F32):
    assert got.device.type == "vkml", got.device
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    torch.testing.assert_close(got.cpu(), ref, **tol)


@pytest.fixture(autouse=True)
def _no_fallback():
    torch_vkml.reset_fallback_counts()
    yield
    assert torch_vkml.fallback_counts() == {}, torch_vkml.fallback_counts()


# torch.cholesky (deprecated since 1.9) is gone from torch 2.14.
HAS_DEPRECATED_CHOLESKY = hasattr(torch.ops.aten, "cholesky")

SIZES = [(1, 1), (3, 3), (2, 5, 5), (4, 2, 17, 17), (64, 64), (130, 130)]


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, upper):
    a = _spd(shape)
    L, info = torch.linalg.cholesky_ex(a.to(VKML), upper=upper)
    rL, _ = torch.linalg.cholesky_ex(a, upper=upper)
    _same(L, rL)
    assert info.cpu().eq(0).all()
    _same(torch.linalg.cholesky(a.to(VKML)), torch.linalg.cholesky(a))
    if HAS_DEPRECATED_CHOLESKY:  # torch.cholesky, gone from torch 2.14
        _same(torch.cholesky(a.to(VKML), upper=upper), torch.cholesky(a, upper=upper))


@pytest.mark.parametrize("shape", [(300, 300), (2, 513, 513)], ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_blocked_cholesky(shape, upper):
    """Past order 256 (float32) by blocks: kernel, triangular solve, matrix product. Every
    piece is a block's size, so this runs on the device under a loop-limited driver too."""
    a = _spd(shape, seed=4)
    L, info = torch.linalg.cholesky_ex(a.to(VKML), upper=upper)
    _same(L, torch.linalg.cholesky(a, upper=upper), dict(atol=2e-4, rtol=1e-4))
    assert info.cpu().eq(0).all()
    # A failing minor past the first block: LAPACK's order of it, the rest unchanged.
    m = torch.eye(300).expand(2, 300, 300).clone()
    m[1, 200, 200] = -1.0
    _same(torch.linalg.cholesky_ex(m.to(VKML)).info, torch.tensor([0, 201], dtype=torch.int32))
    with pytest.raises(torch.linalg.LinAlgError, match="order 201 is not positive"):
        torch.linalg.cholesky(m[1].to(VKML))


@pytest.mark.parametrize("shape", [(300, 300), (2, 513, 513), (700, 300), (300, 700)], ids=str)
def test_blocked_lu(shape):
    """Past order 256 (float32) by blocks: the kernel on each panel, its row swaps on the
    columns beside it, a triangular solve and a matrix product; LAPACK's pivots exactly."""
    a = torch.randn(shape, generator=torch.Generator().manual_seed(5))
    LU, pivots, info = torch.linalg.lu_factor_ex(a.to(VKML))
    rLU, rpivots, _ = torch.linalg.lu_factor_ex(a)
    # Entries reach 30 and the trailing updates sum in another order than LAPACK's.
    _same(LU, rLU, dict(atol=5e-3, rtol=1e-3))
    _same(pivots, rpivots, dict(atol=0, rtol=0))
    assert info.cpu().eq(0).all()
    p, lo, up = torch.lu_unpack(LU.cpu(), pivots.cpu())
    torch.testing.assert_close(p @ lo @ up, a, atol=1e-4, rtol=1e-4)
    singular = torch.eye(400)
    singular[350, 350] = 0.0
    _same(torch.linalg.lu_factor_ex(singular.to(VKML)).info, torch.tensor(351, dtype=torch.int32))


# Order 600 (three blocks) takes 18 s on lavapipe: with TORCH_VKML_LONG_TESTS=1. Many
# blocks are also covered at small orders by the small_blocks fixture's tests.
BLOCKED_ORDERS = [300, 600] if LONG_TESTS else [300]


@pytest.mark.parametrize("n", BLOCKED_ORDERS)
def test_blocked_solves(n):
    """Solves of systems past order 256 (float32): by blocks of the triangular kernel and
    matrix products, left and right, transposed, and what builds on them."""
    g = torch.Generator().manual_seed(6)
    a, b = _general((2, n, n), seed=6), torch.randn(2, n, 5, generator=g)
    av, bv = a.to(VKML), b.to(VKML)
    tol = dict(atol=1e-4, rtol=1e-4)
    _same(torch.linalg.solve(av, bv), torch.linalg.solve(a, b), tol)
    _same(torch.linalg.solve(av, bv.mT, left=False), torch.linalg.solve(a, b.mT, left=False), tol)
    _same(torch.linalg.inv(av), torch.linalg.inv(a), tol)
    _same(torch.linalg.slogdet(av).logabsdet, torch.linalg.slogdet(a).logabsdet, tol)
    LU, pivots = torch.linalg.lu_factor(av)
    _same(torch.linalg.lu_solve(LU, pivots, bv, adjoint=True), torch.linalg.solve(a.mT, b), tol)
    # Off-diagonal entries small: a unit triangle of N(0, 1) ones grows exponentially.
    t = a.triu(1) / n + 2 * torch.eye(n)
    for upper, unit in ((True, False), (False, True), (False, False)):
        m = t if upper else t.mT
        _same(
            torch.linalg.solve_triangular(m.to(VKML), bv, upper=upper, unitriangular=unit),
            torch.linalg.solve_triangular(m, b, upper=upper, unitriangular=unit),
            tol,
        )
    spd = _spd((n, n), seed=7)
    _same(
        torch.cholesky_solve(b[0].to(VKML), torch.linalg.cholesky(spd.to(VKML))),
        torch.cholesky_solve(b[0], torch.linalg.cholesky(spd)),
        tol,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_orders_below_the_blocking_order_that_the_whole_kernels_cannot_take(dtype):
    """On lavapipe the whole-matrix LU solve fits up to order 241 while blocks start past
    256: the orders between go by blocks (not to the CPU), float64 as float32. Order 300 in
    float64 by blocks too (torchmetrics' SignalDistortionRatio solves 512 in float64)."""
    for n in (250, 300):
        a, b = _general((n, n), 11, dtype), torch.randn(n, 3, dtype=dtype)
        spd = _spd((n, n), 12, dtype)
        tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-11, rtol=1e-11)
        _same(torch.linalg.solve(a.to(VKML), b.to(VKML)), torch.linalg.solve(a, b), tol)
        _same(torch.linalg.inv(a.to(VKML)), torch.linalg.inv(a), tol)
        _same(torch.linalg.slogdet(a.to(VKML))[1], torch.linalg.slogdet(a)[1], tol)
        L = torch.linalg.cholesky(spd.to(VKML))
        _same(L, torch.linalg.cholesky(spd), tol)
        _same(
            torch.cholesky_solve(b.to(VKML), L),
            torch.cholesky_solve(b, torch.linalg.cholesky(spd)),
            tol,
        )


@pytest.fixture
def small_blocks():
    """Linear algebra by blocks of 16 from order 32: many blocks on small matrices, so the
    blocked paths run here under any driver's loop limit (the defaults: 256 and 64)."""
    old = torch_vkml._C._set_linalg_blocking(32, 16)
    yield
    torch_vkml._C._set_linalg_blocking(*old)


@pytest.mark.parametrize("shape", [(40, 40), (2, 70, 50), (50, 70), (100, 45)], ids=str)
def test_many_blocks(small_blocks, shape):
    """Every blocked path with several blocks and ragged last ones: Cholesky, LU (pivots
    exactly LAPACK's), triangular and LU solves, QR (geqrf's R and taus, Q by block
    reflectors) and what builds on them."""
    g = torch.Generator().manual_seed(8)
    a = torch.randn(shape, generator=g)
    av = a.to(VKML)
    tol = dict(atol=1e-4, rtol=1e-4)
    LU, pivots, _ = torch.linalg.lu_factor_ex(av)
    rLU, rpivots, _ = torch.linalg.lu_factor_ex(a)
    _same(LU, rLU, dict(atol=1e-3, rtol=1e-3))
    _same(pivots, rpivots, dict(atol=0, rtol=0))
    got, tau = torch.geqrf(av)
    ref, rtau = torch.geqrf(a)
    _same(got, ref, dict(atol=1e-3, rtol=1e-3))
    _same(tau, rtau, dict(atol=1e-4, rtol=1e-4))
    for mode in ("reduced", "complete"):
        q, r = torch.linalg.qr(av, mode=mode)
        rq, rr = torch.linalg.qr(a, mode=mode)
        _same(q, rq, dict(atol=1e-4, rtol=1e-3))
        _same(r, rr, dict(atol=1e-3, rtol=1e-3))
    c = torch.randn(*shape[:-1], 3, generator=g)
    _same(torch.ormqr(got, tau, c.to(VKML)), torch.ormqr(ref, rtau, c), dict(atol=1e-4, rtol=1e-3))
    n = shape[-1]
    sq = _general((*shape[:-2], n, n), seed=9)
    b = torch.randn(*shape[:-2], n, 4, generator=g)
    _same(torch.linalg.solve(sq.to(VKML), b.to(VKML)), torch.linalg.solve(sq, b), tol)
    LUs, piv = torch.linalg.lu_factor(sq.to(VKML))
    _same(
        torch.linalg.lu_solve(LUs, piv, b.to(VKML), adjoint=True), torch.linalg.solve(sq.mT, b), tol
    )
    spd = _spd((*shape[:-2], n, n), seed=10)
    _same(
        torch.linalg.cholesky(spd.to(VKML)), torch.linalg.cholesky(spd), dict(atol=2e-4, rtol=1e-4)
    )
    t = sq.triu(1) / n + 2 * torch.eye(n)
    _same(
        torch.linalg.solve_triangular(t.to(VKML), b.to(VKML), upper=True),
        torch.linalg.solve_triangular(t, b, upper=True),
        tol,
    )


@pytest.mark.parametrize("n", [1, 2, 5, 17, 40])
def test_ldl_factor_and_solve(n):
    """Bunch-Kaufman LDL^T as LAPACK's sytf2 on the lower triangle: LD's layout and the
    pivots (2x2 blocks as negative pairs) are the CPU's, so either device's factors
    solve on the other. A zero leading entry forces the pivoting."""
    g = torch.Generator().manual_seed(11)
    a = torch.randn(3, n, n, generator=g)
    a = a + a.mT
    if n > 1:  # (order 1 would be singular)
        a[1, 0, 0] = 0.0
    LD, pivots, info = torch.linalg.ldl_factor_ex(a.to(VKML))
    rLD, rpivots, rinfo = torch.linalg.ldl_factor_ex(a)
    _same(LD, rLD, dict(atol=1e-4, rtol=1e-4))
    _same(pivots, rpivots, dict(atol=0, rtol=0))
    _same(info, rinfo, dict(atol=0, rtol=0))
    b = torch.randn(3, n, 2, generator=g)
    ref = torch.linalg.ldl_solve(rLD, rpivots, b)
    _same(torch.linalg.ldl_solve(LD, pivots, b.to(VKML)), ref, dict(atol=1e-3, rtol=1e-3))
    _same(torch.linalg.solve(a.to(VKML), b.to(VKML)), ref, dict(atol=1e-3, rtol=1e-3))


def test_ldl_of_singular_matrices_reports_the_zero_block():
    zero = torch.zeros(2, 4, 4)
    eye = torch.eye(4).expand(2, 4, 4).clone()
    eye[1, 2, 2] = 0.0
    for a in (zero, eye):
        _same(torch.linalg.ldl_factor_ex(a.to(VKML)).info, torch.linalg.ldl_factor_ex(a).info)


def test_cholesky_reports_the_failing_minor():
    a = _spd((3, 4, 4))
    a[1, 2, 2] = -100.0  # the leading minor of order 3 is not positive definite
    a[2, 0, 0] = 0.0
    L, info = torch.linalg.cholesky_ex(a.to(VKML))
    _, rinfo = torch.linalg.cholesky_ex(a)
    assert info.cpu().tolist() == rinfo.tolist() == [0, 3, 1]
    _same(L[0], torch.linalg.cholesky(a[0]))
    with pytest.raises(torch.linalg.LinAlgError, match="order 3"):
        torch.linalg.cholesky(a[1].to(VKML))


@pytest.mark.parametrize(
    "shape", [(1, 1), (4, 4), (3, 6, 6), (5, 3), (3, 5), (2, 40, 40), (150, 150)], ids=str
)
def test_lu_factor(shape):
    a = _general(shape, seed=1)
    LU, piv, info = torch.linalg.lu_factor_ex(a.to(VKML))
    rLU, rpiv, rinfo = torch.linalg.lu_factor_ex(a)
    _same(LU, rLU)
    assert piv.dtype == torch.int32 and piv.cpu().equal(rpiv)
    assert info.cpu().equal(rinfo)


def test_lu_factor_of_singular_matrices():
    a = _general((2, 4, 4), seed=2)
    a[1, :, 2] = 0  # column 2 is zero: the third pivot is zero
    LU, piv, info = torch.linalg.lu_factor_ex(a.to(VKML))
    rLU, rpiv, rinfo = torch.linalg.lu_factor_ex(a)
    assert info.cpu().tolist() == rinfo.tolist() == [0, 3]
    _same(LU, rLU)
    assert piv.cpu().equal(rpiv)


@pytest.mark.parametrize(
    "shape,rhs",
    [((4, 4), (4, 3)), ((2, 9, 9), (2, 9, 1)), ((3, 8, 8), (8, 5)), ((1, 1), (1, 2))],
    ids=str,
)
def test_solves(shape, rhs):
    a = _general(shape, seed=3)
    b = torch.randn(rhs)
    av, bv = a.to(VKML), b.to(VKML)
    _same(torch.linalg.solve(av, bv), torch.linalg.solve(a, b))
    LU, piv = torch.linalg.lu_factor(av)
    rLU, rpiv = torch.linalg.lu_factor(a)
    for left, adjoint in ((True, False), (True, True), (False, False), (False, True)):
        rhs = b if left else b.mT
        _same(
            torch.linalg.lu_solve(LU, piv, rhs.to(VKML), left=left, adjoint=adjoint),
            torch.linalg.lu_solve(rLU, rpiv, rhs, left=left, adjoint=adjoint),
        )
    _same(torch.linalg.solve(av, bv.mT, left=False), torch.linalg.solve(a, b.mT, left=False))
    _same(torch.linalg.inv(av), torch.linalg.inv(a))
    vec = torch.randn(shape[:-1])
    _same(torch.linalg.solve(av, vec.to(VKML)), torch.linalg.solve(a, vec))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solves(upper, left, unit):
    a = _general((3, 6, 6), seed=4)
    a = a.triu() if upper else a.tril()
    b = torch.randn((3, 6, 4) if left else (3, 4, 6))
    args = dict(upper=upper, left=left, unitriangular=unit)
    _same(
        torch.linalg.solve_triangular(a.to(VKML), b.to(VKML), **args),
        torch.linalg.solve_triangular(a, b, **args),
    )
    if left:
        for transpose in (False, True):
            x, m = torch.triangular_solve(b.to(VKML), a.to(VKML), upper, transpose, unit)
            rx, rm = torch.triangular_solve(b, a, upper, transpose, unit)
            _same(x, rx)
            _same(m, rm)


def test_determinants():
    a = _general((4, 5, 5), seed=5) * 0.3
    a[3] = a[3].flip(0)  # an odd number of row swaps: a negative sign
    av = a.to(VKML)
    _same(torch.linalg.det(av), torch.linalg.det(a))
    sign, logabs = torch.linalg.slogdet(av)
    rsign, rlogabs = torch.linalg.slogdet(a)
    _same(sign, rsign)
    _same(logabs, rlogabs)
    spd = _spd((2, 4, 4))
    _same(torch.logdet(spd.to(VKML)), torch.logdet(spd))
    singular = torch.ones(3, 3)
    _same(torch.linalg.det(singular.to(VKML)), torch.linalg.det(singular))


def test_cholesky_solve_and_inverse():
    a = _spd((3, 7, 7), seed=6)
    b = torch.randn(3, 7, 2)
    for upper in (False, True):
        f = torch.linalg.cholesky(a, upper=upper)
        fv = f.to(VKML)
        _same(torch.cholesky_solve(b.to(VKML), fv, upper), torch.cholesky_solve(b, f, upper))
        _same(torch.cholesky_inverse(fv, upper), torch.cholesky_inverse(f, upper))


def test_gaussian_process_fit():
    # A GP regression's posterior mean and log marginal likelihood: Cholesky of the
    # kernel matrix, two triangular solves, a log determinant.
    g = torch.Generator().manual_seed(7)
    x = torch.rand(80, 1, generator=g) * 6
    y = torch.sin(x).squeeze(1) + 0.1 * torch.randn(80, generator=g)
    xs = torch.linspace(0, 6, 25).unsqueeze(1)

    def fit(x, y, xs):
        k = torch.exp(-0.5 * torch.cdist(x, x) ** 2) + 0.01 * torch.eye(len(x), device=x.device)
        ks = torch.exp(-0.5 * torch.cdist(xs, x) ** 2)
        L = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(y.unsqueeze(1), L)
        mean = (ks @ alpha).squeeze(1)
        nll = 0.5 * (y @ alpha.squeeze(1)) + L.diagonal().log().sum()
        return mean, nll

    mean, nll = fit(x.to(VKML), y.to(VKML), xs.to(VKML))
    rmean, rnll = fit(x, y, xs)
    _same(mean, rmean, dict(atol=1e-3, rtol=1e-3))
    _same(nll, rnll, dict(atol=1e-3, rtol=1e-4))


def test_lu_unpack_and_lu():
    for shape in ((5, 5), (2, 6, 4), (2, 4, 6)):
        a = _general(shape, seed=10)
        LU, piv = torch.linalg.lu_factor(a)
        for data, pivots in ((True, True), (True, False), (False, True)):
            got = torch.lu_unpack(LU.to(VKML), piv.to(VKML), data, pivots)
            ref = torch.lu_unpack(LU, piv, data, pivots)
            for g, r in zip(got, ref, strict=True):
                _same(g, r)
        P, L, U = torch.linalg.lu(a.to(VKML))
        _same(P @ L @ U, a)


def test_gradients():
    a = _general((2, 5, 5), seed=8)
    b = torch.randn(2, 5, 3)
    for fn in (
        lambda a, b: torch.linalg.solve(a, b),
        lambda a, b: torch.linalg.cholesky(a @ a.mT + 5 * torch.eye(5, device=a.device)) @ b,
        lambda a, b: torch.linalg.lu_factor(a).LU @ b,
        lambda a, b: torch.linalg.inv(a) @ b,
        # det's backward reads the LU ATen returns (of A^T for contiguous real A): a wrong
        # one gave the transposed gradient.
        lambda a, b: torch.linalg.det(a * 0.3)[:, None, None] * b,
        lambda a, b: torch.linalg.slogdet(a).logabsdet[:, None, None] * b,
        lambda a, b: torch.linalg.det(a.mT * 0.3)[:, None, None] * b,  # not contiguous
    ):
        ca, cb = a.clone().requires_grad_(), b.clone().requires_grad_()
        va, vb = a.to(VKML).requires_grad_(), b.to(VKML).requires_grad_()
        rc, rv = fn(ca, cb), fn(va, vb)
        _same(rv.detach(), rc.detach())
        g = torch.randn(rc.shape)
        rc.backward(g)
        rv.backward(g.to(VKML))
        _same(va.grad, ca.grad, dict(atol=2e-4, rtol=2e-4))
        _same(vb.grad, cb.grad, dict(atol=2e-4, rtol=2e-4))


def test_matrix_powers():
    a = _general((3, 6, 6), seed=9) * 0.05
    av = a.to(VKML)
    _same(
        torch.linalg.matrix_power(av + torch.eye(6, device=VKML), -2),
        torch.linalg.matrix_power(a + torch.eye(6), -2),
    )


def test_matrix_exp():
    """Scaling and squaring with the [7/7] Pade approximant. Against float64 (truth)
    rather than the CPU's float32 elementwise: at a 1-norm of 27 the result reaches 1e5
    with entries near 1, and any two float32 algorithms (the CPU's is Taylor's) differ
    there by ~1e-6 of the largest element. Both must be that close to the truth."""
    g = torch.Generator().manual_seed(31)
    # A batch whose matrices need 0, 1, 3 and 6 squarings: each its own.
    scales = torch.tensor([0.1, 5.0, 20.0, 150.0]).view(4, 1, 1)
    for a in (
        torch.randn(4, 6, 6, generator=g) * scales / 6,
        18 * torch.rand(5, 5, generator=g) - 9,
    ):
        ref = torch.linalg.matrix_exp(a.double())
        got = torch.linalg.matrix_exp(a.to(VKML))
        assert got.device.type == "vkml" and got.dtype == torch.float32
        biggest = ref.abs().amax((-2, -1), keepdim=True)
        cpu_error = ((torch.linalg.matrix_exp(a).double() - ref).abs() / biggest).max()
        error = ((got.cpu().double() - ref).abs() / biggest).max()
        assert error < max(2e-6, 10 * cpu_error), (error, cpu_error)
        _same(torch.matrix_exp(a.to(VKML)), got.cpu(), dict(atol=0, rtol=0))
    # Small and edge cases: 1 x 1, empty, zero, half precision (float32 inside).
    _same(
        torch.linalg.matrix_exp(torch.full((2, 1, 1), 0.5).to(VKML)),
        torch.full((2, 1, 1), 0.5).exp(),
    )
    _same(torch.linalg.matrix_exp(torch.zeros(0, 3, 3).to(VKML)), torch.zeros(0, 3, 3))
    _same(torch.linalg.matrix_exp(torch.zeros(3, 3).to(VKML)), torch.eye(3))
    # float16 against the float32 result rounded: the CPU's own float16 matrix_exp is
    # wrong in torch 2.13 (-2e4 on the diagonal of exp of a matrix of norm 1).
    h = (torch.randn(4, 4, generator=g) / 4).half()
    _same(
        torch.linalg.matrix_exp(h.to(VKML)),
        torch.linalg.matrix_exp(h.float()).half(),
        dict(atol=1e-3, rtol=1e-3),
    )
    # Non-finite input gives a non-finite result, not an exception, as on the CPU.
    bad = torch.eye(3)
    bad[0, 1] = float("nan")
    assert torch.linalg.matrix_exp(bad.to(VKML)).cpu().isnan().any()


def test_matrix_exp_gradients():
    # ATen's backward takes the exponential of a 2n x 2n block matrix: through vkml again.
    g = torch.Generator().manual_seed(32)
    a = torch.randn(2, 5, 5, generator=g)
    w = torch.randn(2, 5, 5, generator=g)
    x = a.to(VKML).requires_grad_()
    (torch.linalg.matrix_exp(x) * w.to(VKML)).sum().backward()
    ref = a.double().requires_grad_()
    (torch.linalg.matrix_exp(ref) * w.double()).sum().backward()
    _same(x.grad, ref.grad.float(), dict(atol=1e-4, rtol=1e-4))


def test_float64():
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.skip("the device has no float64")
    a = _spd((3, 9, 9), dtype=torch.float64)
    b = torch.randn(3, 9, 2, dtype=torch.float64)
    tol = dict(atol=1e-10, rtol=1e-10)
    _same(torch.linalg.cholesky(a.to(VKML)), torch.linalg.cholesky(a), tol)
    _same(torch.linalg.solve(a.to(VKML), b.to(VKML)), torch.linalg.solve(a, b), tol)
    _same(torch.linalg.det(a.to(VKML)), torch.linalg.det(a), dict(atol=0, rtol=1e-10))


@pytest.mark.parametrize("shape", [(5, 5), (7, 4), (4, 7), (2, 30, 20), (1, 1)], ids=str)
def test_qr(shape):
    a = _general(shape, seed=11)
    av = a.to(VKML)
    got, tau = torch.geqrf(av)
    ref, rtau = torch.geqrf(a)
    _same(got, ref)  # LAPACK's reflectors and signs
    _same(tau, rtau)
    for mode in ("reduced", "complete", "r"):
        q, r = torch.linalg.qr(av, mode=mode)
        rq, rr = torch.linalg.qr(a, mode=mode)
        _same(q, rq)
        _same(r, rr)
    k = min(shape[-2:])
    if shape[-2] >= shape[-1]:
        _same(
            torch.linalg.householder_product(got, tau), torch.linalg.householder_product(ref, rtau)
        )
    c = torch.randn(*shape[:-2], shape[-2], 3)
    for transpose in (False, True):
        _same(
            torch.ormqr(got, tau, c.to(VKML), left=True, transpose=transpose),
            torch.ormqr(ref, rtau, c, left=True, transpose=transpose),
        )
        _same(
            torch.ormqr(got, tau, c.mT.to(VKML), left=False, transpose=transpose),
            torch.ormqr(ref, rtau, c.mT, left=False, transpose=transpose),
        )
    assert k == tau.shape[-1]


EIGH_SHAPES = [(1, 1), (2, 2), (4, 4), (3, 10, 10), (48, 48), (49, 49), (2, 64, 64), (96, 96)]


@pytest.mark.parametrize("shape", EIGH_SHAPES, ids=str)
def test_eigh(shape):
    # Cyclic Jacobi up to order 48, a tridiagonal form and QL steps beyond: eigenvalues
    # ascending as LAPACK's; eigenvectors up to sign, so checked as an orthonormal basis
    # that diagonalizes A.
    g = torch.Generator().manual_seed(12)
    a = torch.randn(shape, generator=g)
    a = a + a.mT
    w, v = torch.linalg.eigh(a.to(VKML))
    rw = torch.linalg.eigvalsh(a)
    tol = dict(atol=2e-4, rtol=1e-4)
    _same(w, rw, tol)
    _same(torch.linalg.eigvalsh(a.to(VKML)), rw, tol)
    n = shape[-1]
    _same(v.mT @ v, torch.eye(n).expand(shape).contiguous(), tol)
    _same(v @ torch.diag_embed(w) @ v.mT, a, tol)
    upper = a.triu() + a.triu(1).mT  # the upper triangle is what UPLO="U" reads
    _same(torch.linalg.eigvalsh(a.triu().to(VKML), UPLO="U"), torch.linalg.eigvalsh(upper), tol)


SVD_SHAPES = [
    (1, 1),
    (5, 3),
    (3, 5),
    (6, 6),
    (2, 32, 20),
    (40, 32),
    (33, 33),
    (2, 100, 40),
    (48, 64),
]


@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
def test_svd(shape):
    # One-sided Jacobi up to 32 columns of the tall side, a bidiagonal form and
    # Golub-Kahan steps beyond.
    g = torch.Generator().manual_seed(13)
    a = torch.randn(shape, generator=g)
    u, s, vh = torch.linalg.svd(a.to(VKML), full_matrices=False)
    rs = torch.linalg.svdvals(a)
    tol = dict(atol=1e-4, rtol=1e-4)
    _same(s, rs, tol)
    _same(torch.linalg.svdvals(a.to(VKML)), rs, tol)
    _same(u @ torch.diag_embed(s) @ vh, a, tol)
    k = min(shape[-2:])
    _same(u.mT @ u, torch.eye(k).expand(*shape[:-2], k, k).contiguous(), tol)
    # Full matrices (the default): the square factors are orthogonal, and the first k
    # columns (rows of Vh) are the reduced ones.
    fu, fs, fvh = torch.linalg.svd(a.to(VKML))
    m, n = shape[-2:]
    _same(fu.mT @ fu, torch.eye(m).expand(*shape[:-2], m, m).contiguous(), tol)
    _same(fvh @ fvh.mT, torch.eye(n).expand(*shape[:-2], n, n).contiguous(), tol)
    _same(fu[..., :k] @ torch.diag_embed(fs) @ fvh[..., :k, :], a, tol)
    _same(torch.linalg.pinv(a.to(VKML)), torch.linalg.pinv(a), dict(atol=1e-3, rtol=1e-3))
    _same(torch.linalg.matrix_norm(a.to(VKML), "nuc"), torch.linalg.matrix_norm(a, "nuc"), tol)
    with pytest.raises(RuntimeError, match="only supported on CUDA"):
        torch.linalg.svd(a.to(VKML), driver="gesvd")


@pytest.mark.parametrize("n", [31, 32])
def test_svd_of_slowly_converging_square_matrices(n):
    """Uniform entries (one dominant singular value) take Jacobi the most sweeps: on Mesa
    22.3's lavapipe, whose loop limit ended them early, order 31 came back wrong and 32
    crashed the process (the bench's svd case); there such sizes take the condensed form.
    No fallback either way."""
    g = torch.Generator().manual_seed(31)
    a = torch.rand(2, n, n, generator=g)
    u, s, vh = torch.linalg.svd(a.to(VKML), full_matrices=False)
    tol = dict(atol=1e-4, rtol=1e-4)
    _same(s, torch.linalg.svdvals(a), tol)
    _same(u @ torch.diag_embed(s) @ vh, a, tol)
    _same(u.mT @ u, torch.eye(n).expand(2, n, n).contiguous(), tol)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 6, 4), (4, 4), (60, 40), (40, 44)], ids=str)
def test_svd_of_a_rank_deficient_matrix_has_orthonormal_factors(shape):
    """Zero singular values: LAPACK (the CPU) still returns orthonormal U and Vh, which
    callers use as bases (projections onto the complement, orthogonal completions); the
    vectors A v / s of a one-sided Jacobi SVD are zero there and must be completed."""
    g = torch.Generator().manual_seed(3)
    *batch, m, n = shape
    a = torch.randn(*batch, m, 1, generator=g) @ torch.randn(*batch, 1, n, generator=g)
    a[..., :, -1] = 0.0  # rank 1, with an exactly zero column too
    tol = dict(atol=1e-4, rtol=1e-4)
    for full in (False, True):
        u, s, vh = torch.linalg.svd(a.to(VKML), full_matrices=full)
        _same(s, torch.linalg.svdvals(a), tol)
        k = min(m, n)
        _same(u.mT @ u, torch.eye(u.shape[-1]).expand(*batch, -1, -1).contiguous(), tol)
        _same(vh @ vh.mT, torch.eye(vh.shape[-2]).expand(*batch, -1, -1).contiguous(), tol)
        _same(u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :], a, tol)
    zero = torch.zeros(4, 3)
    u, s, vh = torch.linalg.svd(zero.to(VKML), full_matrices=False)
    _same(u.mT @ u, torch.eye(3), tol)
    _same(s, torch.zeros(3), tol)


def test_non_finite_input_raises_as_on_the_cpu():
    a = torch.randn(2, 4, 4)
    a = a + a.mT
    a[1, 1, 2] = a[1, 2, 1] = float("nan")
    for fn in (torch.linalg.eigh, torch.linalg.eigvalsh, torch.linalg.svd, torch.linalg.svdvals):
        with pytest.raises(torch.linalg.LinAlgError) as cpu:
            fn(a)
        with pytest.raises(torch.linalg.LinAlgError) as got:
            fn(a.to(VKML))
        # The same words; eigh's LAPACK error code (elements that failed to converge) is
        # LAPACK's own.
        assert str(got.value).split(" (error code")[0] == str(cpu.value).split(" (error code")[0]
    _same(
        torch.linalg.eigvalsh(a[0].to(VKML)),
        torch.linalg.eigvalsh(a[0]),
        dict(atol=1e-4, rtol=1e-4),
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_condensed_eigh_and_svd_of_structured_matrices(dtype):
    """The condensed forms' special paths: clustered and repeated eigenvalues (QL's
    deflation), a diagonal matrix (every reflector the identity), the zero matrix (no
    scaling), tiny and huge magnitudes (scaled by a power of two, so no square under-
    or overflows), and a singular bidiagonal (the zero-diagonal chases)."""
    n = 72
    g = torch.Generator().manual_seed(21)
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=dtype))
    values = torch.cat([torch.ones(30), 2 * torch.ones(30), torch.linspace(3, 4, 12)]).to(dtype)
    cases = {
        "repeated": q @ torch.diag(values) @ q.mT,
        "diagonal": torch.diag(torch.randn(n, generator=g, dtype=dtype)),
        "zero": torch.zeros(n, n, dtype=dtype),
        "tiny": 1e-30 * (q @ torch.diag(values) @ q.mT),
        "huge": 1e30 * (q @ torch.diag(values) @ q.mT),
    }
    close = torch.testing.assert_close
    for a in cases.values():
        a = (a + a.mT) / 2
        scale = max(float(a.abs().max()), 1e-300)
        tol = dict(atol=2e-5 * scale if dtype == torch.float32 else 1e-12 * scale, rtol=0)
        w, v = torch.linalg.eigh(a.to(VKML))
        _same(w, torch.linalg.eigvalsh(a), tol)
        w, v = w.cpu(), v.cpu()  # products on the CPU: vkml has no float64 matmul
        close(v @ torch.diag(w) @ v.mT, a, **tol)
        close(v.mT @ v, torch.eye(n, dtype=dtype), atol=tol["atol"] / scale, rtol=0)
        b = a[:, :40]  # columns past the Jacobi kernel's 32
        u, s, vh = torch.linalg.svd(b.to(VKML), full_matrices=False)
        _same(s, torch.linalg.svdvals(b), tol)
        u, s, vh = u.cpu(), s.cpu(), vh.cpu()
        close(u @ torch.diag(s) @ vh, b, **tol)
        close(vh @ vh.mT, torch.eye(40, dtype=dtype), atol=tol["atol"] / scale, rtol=0)


def test_condensed_eigh_gradients():
    g = torch.Generator().manual_seed(22)
    a = torch.randn(56, 56, generator=g)
    a = a + a.mT
    x = a.to(VKML).requires_grad_()
    w, v = torch.linalg.eigh(x)
    (w.square().sum() + (v[:, :4] ** 4).sum()).backward()
    ref = a.clone().requires_grad_()
    rw, rv = torch.linalg.eigh(ref)
    (rw.square().sum() + (rv[:, :4] ** 4).sum()).backward()
    _same(x.grad, ref.grad, dict(atol=1e-3, rtol=1e-3))


def test_orders_past_the_devices_kernels_take_the_counted_cpu_route():
    """Mesa 22.3's lavapipe ends an invocation's loops after 65535 iterations in all
    (DeviceInfo::loop_iteration_limit): the one-workgroup kernels would return garbage
    (or crash the process) past a few hundred rows, so there those sizes are LAPACK's on
    the CPU, counted. Elsewhere they run on the device; and sizes whose every thread
    stays under the count (a solve of order 200, a tall-skinny QR) run there too."""
    limited = torch_vkml.get_device_properties().loop_iteration_limit > 0
    g = torch.Generator().manual_seed(23)
    a = torch.randn(200, 200, generator=g)
    torch_vkml.reset_fallback_counts()
    tol = dict(atol=1e-3, rtol=1e-4)
    _same(torch.linalg.eigvalsh(a.to(VKML) + a.mT.to(VKML)), torch.linalg.eigvalsh(a + a.mT), tol)
    _same(torch.linalg.svdvals(a[:, :60].to(VKML)), torch.linalg.svdvals(a[:, :60]), tol)
    _same(torch.linalg.solve(a.to(VKML), a[:, :3].to(VKML)), torch.linalg.solve(a, a[:, :3]), tol)
    tall = torch.randn(1000, 12, generator=g)
    q, r = torch.linalg.qr(tall.to(VKML))
    _same(q @ r, tall, tol)
    counts = torch_vkml.fallback_counts()
    if limited:
        assert set(counts) == {"aten::_linalg_eigh", "aten::_linalg_svd"}, counts
    else:
        assert not counts, counts
    torch_vkml.reset_fallback_counts()  # the autouse check: this test's fallbacks are its point


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq(driver):
    g = torch.Generator().manual_seed(14)
    tol = dict(atol=1e-4, rtol=1e-4)
    for shape, rhs in (((6, 3), (6, 2)), ((2, 8, 5), (2, 8, 1)), ((3, 6), (3, 2)), ((5, 4), (5,))):
        a, b = torch.randn(shape, generator=g), torch.randn(rhs, generator=g)
        got = torch.linalg.lstsq(a.to(VKML), b.to(VKML), driver=driver)
        ref = torch.linalg.lstsq(a, b, driver=driver)
        for name in ("solution", "residuals", "rank", "singular_values"):
            _same(getattr(got, name), getattr(ref, name), tol)


@pytest.mark.parametrize(
    "dtype",
    [torch.float32] + ([torch.float64] if torch_vkml.get_device_properties().supports_fp64 else []),
    ids=str,
)
def test_eigh_of_exactly_repeated_eigenvalues(dtype):
    """Each eigenvalue twice (a block diagonal of one matrix twice). A complex matrix's real
    embedding has only such pairs; its float64 eigvalsh did not converge until Jacobi
    zeroed each annihilated pair (test_complex_eigvalsh_runs_on_the_device)."""
    g = torch.Generator().manual_seed(49)
    b = torch.randn(2, 9, 9, generator=g, dtype=dtype)
    b = b + b.mT
    a = torch.stack([torch.block_diag(m, m) for m in b])
    w, v = torch.linalg.eigh(a.to(VKML))
    tol = F32 if dtype == torch.float32 else dict(atol=1e-10, rtol=1e-10)
    _same(w, torch.linalg.eigvalsh(a), tol)
    recon = v @ torch.diag_embed(w) @ v.mT
    _same(recon, a, dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else tol)


def test_eigh_past_the_loop_limit_of_jacobi_in_float64():
    """float64 Jacobi of order 48 takes 9 sweeps, which crashed Mesa 22.3's lavapipe
    (its loop limit): such orders go through the tridiagonal form there."""
    if not torch_vkml.get_device_properties().supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    g = torch.Generator().manual_seed(15)
    a = torch.randn(2, 48, 48, generator=g, dtype=torch.float64)
    a = a + a.mT
    w, v = torch.linalg.eigh(a.to(VKML))
    tol = dict(atol=1e-10, rtol=1e-10)
    _same(w, torch.linalg.eigvalsh(a), tol)
    _same(v @ torch.diag_embed(w) @ v.mT, a, tol)
