"""Complex linear algebra on vkml (complex64, and complex128 where the device has
float64): the complex kernels (shaders/linalg_complex.comp: LU and its solves,
triangular solves, Householder QR, Jacobi eigh and SVD) and what builds on them, and the
real embedding (csrc/aten/linalg_complex.h) for Cholesky factors and for the values of
matrices past the Jacobi kernels.

Each result is compared with the CPU's (LAPACK) on the same inputs; eigenvectors and
singular vectors, unique up to a phase per column, by their magnitudes and by what they
reconstruct. Every test asserts that nothing ran on the CPU fallback.
"""

import pytest
import torch
from conftest import VKML

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

F32 = dict(atol=1e-4, rtol=1e-4)


def _same(got, ref, tol=F32):
    assert got.device.type == "vkml", got.device
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    torch.testing.assert_close(got.cpu(), ref, **tol)


COMPLEX_DTYPES = [torch.complex64] + (
    [torch.complex128] if torch_vkml.get_device_properties().supports_fp64 else []
)


def _complex(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    real = torch.randn(shape, generator=g, dtype=torch.float64)
    imag = torch.randn(shape, generator=g, dtype=torch.float64)
    return torch.complex(real, imag).to(dtype)


def _tol(dtype):
    return F32 if dtype == torch.complex64 else dict(atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 6, 6), (2, 2, 20, 20)], ids=str)
def test_complex_inverse_runs_on_the_device(shape, dtype):
    a = _complex(shape, dtype, 41)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    _same(torch.linalg.inv(a.to(VKML)), torch.linalg.inv(a), tol)
    # lazy conjugate and negative views
    _same(torch.linalg.inv(a.to(VKML).conj()), torch.linalg.inv(a.conj()), tol)
    _same(torch.linalg.inv(-a.to(VKML).conj()), torch.linalg.inv(-a.conj()), tol)
    if shape[-1] > 1:
        got = torch.linalg.matrix_power(a.to(VKML), -2)
        _same(got, torch.linalg.matrix_power(a, -2), dict(atol=1e-3, rtol=1e-3))


def test_complex_inverse_of_a_singular_matrix_is_reported_as_on_the_cpu():
    s = torch.zeros(2, 4, 4, dtype=torch.complex64)
    s[:, 0, 0], s[:, 1, 1] = 1, 1j
    s[1] = torch.eye(4)
    inverse, info = torch.linalg.inv_ex(s.to(VKML))
    assert info.cpu().tolist() == torch.linalg.inv_ex(s).info.tolist() == [3, 0]
    with pytest.raises(torch.linalg.LinAlgError, match="diagonal element 3 is zero"):
        torch.linalg.inv(s[0].to(VKML))


def test_complex_inverse_gradient():
    a = _complex((4, 4), torch.complex64, 43)
    x = a.to(VKML).requires_grad_()
    torch.linalg.inv(x).abs().sum().backward()
    ref = a.clone().requires_grad_()
    torch.linalg.inv(ref).abs().sum().backward()
    _same(x.grad, ref.grad, dict(atol=1e-3, rtol=1e-3))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_complex_eigvalsh_runs_on_the_device(dtype, uplo):
    # Not Hermitian: only the named triangle counts (and the diagonal's real parts).
    a = _complex((3, 7, 7), dtype, 45)
    _same(torch.linalg.eigvalsh(a.to(VKML), UPLO=uplo), torch.linalg.eigvalsh(a, UPLO=uplo))
    h = a + a.mH
    got = torch.linalg.eigvalsh(h.to(VKML).conj(), UPLO=uplo)
    _same(got, torch.linalg.eigvalsh(h.conj(), UPLO=uplo), _tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 9, 9), (3, 40, 12)], ids=str)
def test_complex_singular_values_run_on_the_device(shape, dtype):
    a = _complex(shape, dtype, 47)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    _same(torch.linalg.svdvals(a.to(VKML)), torch.linalg.svdvals(a), tol)
    _same(torch.linalg.matrix_norm(a.to(VKML), "nuc"), torch.linalg.matrix_norm(a, "nuc"), tol)
    _same(torch.linalg.matrix_norm(a.to(VKML), 2), torch.linalg.matrix_norm(a, 2), tol)
    _same(torch.linalg.cond(a.to(VKML)), torch.linalg.cond(a), dict(atol=1e-3, rtol=1e-3))
    assert torch.equal(torch.linalg.matrix_rank(a.to(VKML)).cpu(), torch.linalg.matrix_rank(a))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES + [torch.float64], ids=str)
def test_matrix_exp_in_double_and_complex(dtype):
    """[13/13] Pade in double precision, [7/7] in single; complex through the embedding's
    solve. Against the exponential in complex128 / float64, relative to the largest
    element, as test_matrix_exp."""
    if (
        dtype in (torch.float64, torch.complex128)
        and not torch_vkml.get_device_properties().supports_fp64
    ):
        pytest.xfail("the device has no float64 arithmetic")
    g = torch.Generator().manual_seed(51)
    scales = torch.tensor([0.1, 5.0, 20.0, 150.0], dtype=torch.float64).view(4, 1, 1)
    a = torch.randn(4, 6, 6, generator=g, dtype=torch.float64) * scales / 6
    if dtype.is_complex:
        a = torch.complex(a, torch.randn(4, 6, 6, generator=g, dtype=torch.float64) * scales / 6)
    truth = torch.linalg.matrix_exp(a)
    got = torch.linalg.matrix_exp(a.to(dtype).to(VKML))
    assert got.device.type == "vkml" and got.dtype == dtype
    biggest = truth.abs().amax((-2, -1), keepdim=True)
    error = ((got.cpu().to(truth.dtype) - truth).abs() / biggest).max().item()
    assert error < (1e-13 if dtype in (torch.float64, torch.complex128) else 3e-5), error
    if dtype == torch.complex64:  # the gradient: ATen's block-matrix formula, through vkml
        w = torch.randn(4, 6, 6, generator=g).to(dtype)
        x = a.to(dtype).to(VKML).requires_grad_()
        (torch.linalg.matrix_exp(x) * w.to(VKML)).real.sum().backward()
        ref = a.clone().requires_grad_()
        (torch.linalg.matrix_exp(ref) * w.to(torch.complex128)).real.sum().backward()
        grad_error = (x.grad.cpu().to(ref.grad.dtype) - ref.grad).abs().max() / ref.grad.abs().max()
        assert grad_error.item() < 1e-4, grad_error


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_complex_triangular_solves_run_on_the_device(dtype, upper, left, unit):
    """Only the named triangle of A is read (the rest is garbage here), its diagonal taken
    as ones where unitriangular; left and right solves, broadcast batches."""
    a = _complex((2, 6, 6), dtype, 53) + 4 * torch.eye(6, dtype=dtype)
    b = _complex((3, 1, 6, 4) if left else (3, 1, 4, 6), dtype, 54)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    got = torch.linalg.solve_triangular(
        a.to(VKML), b.to(VKML), upper=upper, left=left, unitriangular=unit
    )
    want = torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)
    _same(got, want, tol)
    if left:
        got_x, got_a = torch.triangular_solve(
            b.to(VKML), a.to(VKML), upper=upper, transpose=unit, unitriangular=unit
        )
        want_x, want_a = torch.triangular_solve(
            b, a, upper=upper, transpose=unit, unitriangular=unit
        )
        _same(got_x, want_x, tol)
        _same(got_a, want_a.expand_as(got_a.cpu()).contiguous(), dict(atol=0, rtol=0))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_complex_cholesky_solve_and_inverse_run_on_the_device(dtype, upper):
    h = _complex((2, 5, 5), dtype, 55)
    spd = h @ h.mH + 5 * torch.eye(5, dtype=dtype)
    factor = torch.linalg.cholesky(spd, upper=upper)
    b = _complex((2, 5, 3), dtype, 56)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    got = torch.cholesky_solve(b.to(VKML), factor.to(VKML), upper=upper)
    _same(got, torch.cholesky_solve(b, factor, upper=upper), tol)
    got = torch.cholesky_inverse(factor.to(VKML), upper=upper)
    _same(got, torch.cholesky_inverse(factor, upper=upper), tol)


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 6, 140], ids=str)  # 140: the embedding goes by blocks
def test_complex_cholesky_runs_on_the_device(dtype, upper, n):
    """The Cholesky factor of a Hermitian matrix's interleaved embedding is its own factor
    embedded; only the named triangle is read (the other is garbage here)."""
    h = _complex((2, n, n), dtype, 57)
    spd = h @ h.mH + n * torch.eye(n, dtype=dtype)
    garbage = spd + (torch.triu(h, 1) if not upper else torch.tril(h, -1))
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    L, info = torch.linalg.cholesky_ex(garbage.to(VKML), upper=upper)
    _same(L, torch.linalg.cholesky_ex(garbage, upper=upper).L, tol)
    assert info.cpu().eq(0).all()
    if hasattr(torch.ops.aten, "cholesky"):  # torch.cholesky, gone from torch 2.14
        _same(torch.cholesky(spd.to(VKML), upper=upper), torch.cholesky(spd, upper=upper), tol)


def test_complex_cholesky_of_a_matrix_that_is_not_positive_definite():
    h = _complex((3, 5, 5), torch.complex64, 58)
    a = h @ h.mH + 5 * torch.eye(5, dtype=torch.complex64)
    a[1, 3, 3] = -40
    info = torch.linalg.cholesky_ex(a.to(VKML)).info
    assert info.cpu().tolist() == torch.linalg.cholesky_ex(a).info.tolist() == [0, 4, 0]
    with pytest.raises(torch.linalg.LinAlgError, match="leading minor of order 4"):
        torch.linalg.cholesky(a[1].to(VKML))


def test_complex_cholesky_gradient():
    h = _complex((4, 4), torch.complex64, 59)
    a = h @ h.mH + 4 * torch.eye(4, dtype=torch.complex64)
    x = a.to(VKML).requires_grad_()
    torch.linalg.cholesky(x).abs().sum().backward()
    ref = a.clone().requires_grad_()
    torch.linalg.cholesky(ref).abs().sum().backward()
    _same(x.grad, ref.grad, dict(atol=1e-3, rtol=1e-3))


# ---- the complex kernels (shaders/linalg_complex.comp)


def _invertible(shape, dtype, seed):
    n = shape[-1]
    return _complex(shape, dtype, seed) + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 4, 6), (2, 6, 4), (2, 1, 33, 33)], ids=str)
def test_complex_lu_factor_and_unpack(shape, dtype):
    """Pivots as LAPACK's icamax picks them (the largest |re| + |im|), so pivots and factors
    match the CPU's exactly and to rounding; a conjugated view reads as its values."""
    a = _complex(shape, dtype, 61)
    tol = _tol(dtype)
    for x in (a, a.conj()):
        LU, pivots, info = torch.linalg.lu_factor_ex(x.to(VKML))
        rLU, rpivots, rinfo = torch.linalg.lu_factor_ex(x)
        _same(LU, rLU, tol)
        assert torch.equal(pivots.cpu(), rpivots) and torch.equal(info.cpu(), rinfo)
        unpacked = torch.lu_unpack(LU, pivots)
        for got, want in zip(unpacked, torch.lu_unpack(rLU, rpivots), strict=True):
            _same(got, want, tol)
        for got, want in zip(torch.linalg.lu(x.to(VKML)), torch.linalg.lu(x), strict=True):
            _same(got, want, tol)


def test_complex_lu_of_singular_matrices_reports_the_first_zero_pivot():
    s = torch.zeros(3, 4, 4, dtype=torch.complex64)
    s[0, 0, 0], s[0, 1, 1], s[0, 3, 3] = 1, 1j, 2 - 1j  # column 3 has no pivot
    s[1] = torch.eye(4)
    s[2, :, 0] = torch.tensor([0, 1j, 0, 0])  # rank 1
    info = torch.linalg.lu_factor_ex(s.to(VKML)).info
    assert info.cpu().tolist() == torch.linalg.lu_factor_ex(s).info.tolist() == [3, 0, 2]
    with pytest.raises(RuntimeError, match="U\\[3,3\\] is zero"):  # as the CPU's
        torch.linalg.lu_factor(s[0].to(VKML))
    d = torch.linalg.det(s.to(VKML))
    _same(d, torch.linalg.det(s))
    sign, logabs = torch.linalg.slogdet(s.to(VKML))
    rsign, rlogabs = torch.linalg.slogdet(s)
    _same(sign, rsign)
    _same(logabs, rlogabs)


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_complex_lu_solve(dtype, left, adjoint):
    """A X = B, X A = B, A^H X = B and X A^H = B from one LU, broadcast batches."""
    a = _invertible((2, 1, 5, 5), dtype, 63)
    b = _complex((2, 3, 5, 2) if left else (2, 3, 2, 5), dtype, 64)
    LU, pivots = torch.linalg.lu_factor(a.to(VKML))
    rLU, rpivots = torch.linalg.lu_factor(a)
    got = torch.linalg.lu_solve(LU, pivots, b.to(VKML), left=left, adjoint=adjoint)
    _same(got, torch.linalg.lu_solve(rLU, rpivots, b, left=left, adjoint=adjoint), _tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
def test_complex_solve_det_and_slogdet(dtype):
    a = _complex((3, 6, 6), dtype, 65)
    b = _complex((3, 6, 2), dtype, 66)
    v = _complex((3, 6), dtype, 67)
    tol = dict(atol=1e-3, rtol=1e-3) if dtype == torch.complex64 else _tol(dtype)
    _same(torch.linalg.solve(a.to(VKML), b.to(VKML)), torch.linalg.solve(a, b), tol)
    _same(torch.linalg.solve(a.to(VKML), v.to(VKML)), torch.linalg.solve(a, v), tol)
    got = torch.linalg.solve(a.to(VKML), b.mT.to(VKML), left=False)
    _same(got, torch.linalg.solve(a, b.mT, left=False), tol)
    _same(torch.linalg.det(a.to(VKML)), torch.linalg.det(a), tol)
    for got, want in zip(torch.linalg.slogdet(a.to(VKML)), torch.linalg.slogdet(a), strict=True):
        _same(got, want, tol)
    if dtype == torch.complex64:  # complex128's log is on the CPU route
        _same(torch.logdet(a.to(VKML)), torch.logdet(a), tol)


def test_complex_solve_and_det_gradients():
    a = _invertible((2, 4, 4), torch.complex64, 68)
    b = _complex((2, 4, 3), torch.complex64, 69)
    grads = []
    for device in (VKML, "cpu"):
        x = a.to(device).requires_grad_()
        y = b.to(device).requires_grad_()
        loss = torch.linalg.solve(x, y).abs().sum() + torch.linalg.det(x).abs().sum()
        loss = loss + torch.linalg.slogdet(x).logabsdet.sum()
        loss.backward()
        grads.append((x.grad, y.grad))
    for got, want in zip(*grads, strict=True):
        _same(got, want, dict(atol=1e-3, rtol=1e-3))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (3, 7, 4), (2, 4, 7), (1, 1)], ids=str)
def test_complex_qr(shape, dtype):
    """R's diagonal real (clarfg's beta), so Q and R match LAPACK's to rounding."""
    a = _complex(shape, dtype, 71)
    tol = _tol(dtype)
    for mode in ("reduced", "complete", "r"):
        got = torch.linalg.qr(a.to(VKML), mode=mode)
        for g, w in zip(got, torch.linalg.qr(a, mode=mode), strict=True):
            _same(g, w, tol)
    reflectors, tau = torch.geqrf(a.to(VKML))
    rreflectors, rtau = torch.geqrf(a)
    _same(reflectors, rreflectors, tol)
    _same(tau, rtau, tol)
    if shape[-2] >= shape[-1]:
        got = torch.linalg.householder_product(reflectors, tau)
        _same(got, torch.linalg.householder_product(rreflectors, rtau), tol)
    if dtype == torch.complex64:
        c = _complex(shape[:-1] + (3,), dtype, 72)
        for transpose in (False, True):
            got = torch.ormqr(reflectors, tau, c.to(VKML), left=True, transpose=transpose)
            _same(got, torch.ormqr(rreflectors, rtau, c, left=True, transpose=transpose), tol)


def _hermitian_of(a, upper):
    h = a.triu() if upper else a.tril()
    h = h + h.mH
    return h - torch.diag_embed(h.diagonal(dim1=-2, dim2=-1)) / 2


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("n", [1, 7, 30], ids=str)
def test_complex_eigh(dtype, uplo, n):
    """Only the named triangle is read (and the real parts of the diagonal)."""
    a = _complex((2, n, n), dtype, 73)
    w, v = torch.linalg.eigh(a.to(VKML), UPLO=uplo)
    rw, rv = torch.linalg.eigh(a, UPLO=uplo)
    tol = dict(atol=1e-4 * n, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    _same(w, rw, tol)
    _same(v.abs(), rv.abs(), dict(atol=2e-3, rtol=2e-3) if dtype == torch.complex64 else tol)
    h = _hermitian_of(a, uplo == "U").real.to(dtype) + 1j * _hermitian_of(a, uplo == "U").imag
    _same(v @ torch.diag_embed(w.to(dtype)) @ v.mH, h.to(dtype), tol)
    _same(v.mH @ v, torch.eye(n, dtype=dtype).expand(2, n, n), tol)


def test_complex_eigh_of_repeated_eigenvalues_has_a_unitary_basis():
    """Eigenvectors of a repeated eigenvalue are not unique: the basis must still be
    unitary and reconstruct the matrix (the real embedding's pairs could not promise
    that: its eigenvectors of a pair are multiples of one complex vector)."""
    b = _complex((6, 6), torch.complex128, 74)
    b = b + b.mH
    a = torch.block_diag(b, b, 3 * torch.eye(2, dtype=b.dtype)).to(torch.complex64)
    w, v = torch.linalg.eigh(a.to(VKML))
    _same(w, torch.linalg.eigvalsh(a))
    _same(v.mH @ v, torch.eye(14, dtype=a.dtype))
    _same(v @ torch.diag_embed(w.to(a.dtype)) @ v.mH, a)


def test_complex_eigh_gradient():
    h = _complex((5, 5), torch.complex64, 75)
    h = h + h.mH
    grads = []
    for device in (VKML, "cpu"):
        x = h.to(device).requires_grad_()
        w, v = torch.linalg.eigh(x)
        # A loss that does not depend on the eigenvectors' phases.
        (w.square().sum() + (v.abs() ** 4).sum()).backward()
        grads.append(x.grad)
    _same(grads[0], grads[1], dict(atol=1e-3, rtol=1e-3))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 9, 9), (3, 40, 12), (5, 1)], ids=str)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_complex_svd(shape, dtype, full_matrices):
    a = _complex(shape, dtype, 77)
    U, S, Vh = torch.linalg.svd(a.to(VKML), full_matrices=full_matrices)
    rU, rS, rVh = torch.linalg.svd(a, full_matrices=full_matrices)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.complex64 else _tol(dtype)
    _same(S, rS, tol)
    k = S.shape[-1]
    assert U.shape == rU.shape and Vh.shape == rVh.shape
    _same(U[..., :k].abs(), rU[..., :k].abs(), dict(atol=1e-3, rtol=1e-3))
    _same(Vh[..., :k, :].abs(), rVh[..., :k, :].abs(), dict(atol=1e-3, rtol=1e-3))
    _same(U[..., :k] @ torch.diag_embed(S.to(dtype)) @ Vh[..., :k, :], a, tol)
    _same(U.mH @ U, torch.eye(U.shape[-1], dtype=dtype).expand(U.mH.shape[:-1] + U.shape[-1:]), tol)
    _same(torch.linalg.pinv(a.to(VKML)), torch.linalg.pinv(a), dict(atol=1e-3, rtol=1e-3))


def test_complex_svd_of_a_rank_deficient_matrix_has_unitary_factors():
    g = torch.Generator().manual_seed(78)
    x = torch.randn(7, 2, generator=g, dtype=torch.complex64)
    y = torch.randn(2, 5, generator=g, dtype=torch.complex64)
    a = x @ y  # rank 2
    U, S, Vh = torch.linalg.svd(a.to(VKML))
    _same(S, torch.linalg.svdvals(a), dict(atol=1e-4, rtol=1e-4))
    _same(U.mH @ U, torch.eye(7, dtype=a.dtype))
    _same(Vh @ Vh.mH, torch.eye(5, dtype=a.dtype))
    _same(U[:, :5] @ torch.diag_embed(S.to(a.dtype)) @ Vh, a)


def test_complex_svd_gradient_and_lstsq():
    a = _complex((6, 4), torch.complex64, 79)
    b = _complex((6, 2), torch.complex64, 80)
    grads = []
    for device in (VKML, "cpu"):
        x = a.to(device).requires_grad_()
        U, S, Vh = torch.linalg.svd(x, full_matrices=False)
        (S.sum() + (U @ Vh).abs().sum()).backward()  # gauge invariant
        grads.append(x.grad)
    _same(grads[0], grads[1], dict(atol=1e-3, rtol=1e-3))
    got = torch.linalg.lstsq(a.to(VKML), b.to(VKML), driver="gelsd")
    want = torch.linalg.lstsq(a, b, driver="gelsd")
    _same(got.solution, want.solution, dict(atol=1e-4, rtol=1e-4))
    _same(got.residuals, want.residuals, dict(atol=1e-4, rtol=1e-4))
    _same(got.singular_values, want.singular_values, dict(atol=1e-4, rtol=1e-4))
