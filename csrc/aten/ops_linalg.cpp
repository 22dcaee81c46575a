// torch.linalg's triangular factorizations and solves on their backend kernels
// (vkml/ops/linalg.h): Cholesky, LU with partial pivoting, triangular and LU solves, and
// what ATen builds of them per backend: solve, inv, det, slogdet, cholesky_solve /
// cholesky_inverse, triangular_solve, lu_unpack. The composite entries (linalg.solve,
// inv, det, logdet, cholesky, matrix_power, tensorsolve, ...) reach these. Errors come
// back through the info tensors without a host wait; check_errors=True reads them, as
// on CUDA. QR, eigh, SVD and lstsq: ops_linalg_orthogonal.cpp.
//
// float32 and float64 (where the device has shaderFloat64), and their complex types: LU,
// its solves and triangular solves on complex kernels, Cholesky factors through the real
// embedding (linalg_complex.h).
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include "fallback.h"
#include "linalg_blocked.h"
#include "linalg_common.h"
#include "linalg_complex.h"

namespace vkml_aten {
namespace {

using namespace linalg;

// ---- Cholesky -----------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> cholesky_ex(const at::Tensor& A, bool upper, bool check_errors) {
  at::native::squareCheckInputs(A, "linalg.cholesky");
  at::native::checkFloatingOrComplex(A, "linalg.cholesky");
  const int64_t n = A.size(-1);
  if (embeddable(A, LinalgAlgo::Cholesky)) {
    // The Hermitian matrix LAPACK reads (one triangle, the diagonal's real parts), its
    // factor through the interleaved embedding's (linalg_complex.h).
    const at::Tensor E = interleaved_embedding(hermitian_from_triangle(A, upper));
    auto [R, info] = cholesky_ex(E, false, false);
    const at::Tensor L = complex_from_interleaved(R);
    info = info_of_interleaved(info);
    if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", A.dim() == 2);
    return {upper ? L.mH().resolve_conj() : L, info};
  }
  if (!on_device(A, LinalgAlgo::Cholesky))
    return cpu_route<at::_ops::linalg_cholesky_ex>(A, upper, check_errors);
  const Shape batch = batch_shape(A);
  // LAPACK reads one triangle: the lower one, or the upper one as its transpose.
  at::Tensor L = fresh(upper ? A.mT() : A, A.sizes().vec());
  at::Tensor info = at::zeros(batch, A.options().dtype(at::kInt));
  if (L.numel() && by_blocks(L, LinalgAlgo::Cholesky)) {
    blocked_cholesky(L, info);
  } else if (L.numel()) {
    run(L, {.algo = LinalgAlgo::Cholesky,
            .a = addr(L),
            .info = addr(info),
            .m = n,
            .n = n,
            .batch = numel_of(batch)});
  }
  if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", A.dim() == 2);
  return {upper ? L.mT() : L, info};
}
std::tuple<at::Tensor&, at::Tensor&> cholesky_ex_out(const at::Tensor& A, bool upper,
                                                     bool check_errors, at::Tensor& L,
                                                     at::Tensor& info) {
  return write_outs(cholesky_ex(A, upper, check_errors), L, info);
}

// The deprecated torch.cholesky (gone from torch 2.14): errors raised at once, as its CPU
// kernel does.
#if __has_include(<ATen/ops/cholesky.h>)
#define VKML_HAS_DEPRECATED_CHOLESKY 1
at::Tensor vk_cholesky(const at::Tensor& A, bool upper) {
  if (!(embeddable(A, LinalgAlgo::Cholesky) || on_device(A, LinalgAlgo::Cholesky)))
    return cpu_route<at::_ops::cholesky>(A, upper);
  auto [L, info] = cholesky_ex(A, upper, false);
  at::_linalg_check_errors(info, "cholesky", A.dim() == 2);
  return L;
}
at::Tensor& cholesky_out(const at::Tensor& A, bool upper, at::Tensor& out) {
  return write_out_castable(out, vk_cholesky(A, upper));
}
#endif

// ---- LU -----------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_factor_ex(const at::Tensor& A, bool pivot,
                                                            bool check_errors) {
  TORCH_CHECK(A.dim() >= 2,
              "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", A.sizes(),
              " instead");
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  if (!on_device(A, LinalgAlgo::Lu))
    return cpu_route<at::_ops::linalg_lu_factor_ex>(A, pivot, check_errors);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const Shape batch = batch_shape(A);
  at::Tensor LU = fresh(A, A.sizes().vec());
  at::Tensor pivots = at::empty(with(batch, {k}), A.options().dtype(at::kInt));
  at::Tensor info = at::zeros(batch, A.options().dtype(at::kInt));
  if (LU.numel() && by_blocks(LU, LinalgAlgo::Lu))
    blocked_lu(LU, pivots, info);
  else if (LU.numel())
    run(LU, {.algo = LinalgAlgo::Lu,
             .a = addr(LU),
             .pivots = addr(pivots),
             .info = addr(info),
             .m = m,
             .n = n,
             .batch = numel_of(batch)});
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", A.dim() == 2);
  return {LU, pivots, info};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_factor_ex_out(const at::Tensor& A, bool pivot,
                                                                   bool check_errors,
                                                                   at::Tensor& LU,
                                                                   at::Tensor& pivots,
                                                                   at::Tensor& info) {
  return write_outs(lu_factor_ex(A, pivot, check_errors), LU, pivots, info);
}

// A = P L U from LU's packed factors and LAPACK's pivots; empty tensors for what is not
// asked for, as ATen returns.
std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_lu_unpack(const at::Tensor& LU,
                                                            const at::Tensor& pivots,
                                                            bool unpack_data, bool unpack_pivots) {
  // The permutation kernel reads the pivots alone: LU's dtype need only be one the LU
  // kernels take.
  if (!native(LU, LinalgAlgo::Permutation) && !native_complex(LU, LinalgAlgo::Lu))
    return cpu_route<at::_ops::lu_unpack>(LU, pivots, unpack_data, unpack_pivots);
  TORCH_CHECK(LU.dim() >= 2,
              "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", LU.sizes(),
              " instead");
  TORCH_CHECK(
      pivots.scalar_type() == at::kInt,
      "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.",
      " Note: this function is intended to be used with the output produced by "
      "torch.linalg.lu_factor");
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  at::Tensor P, L, U;
  if (unpack_data) {
    L = LU.narrow(-1, 0, k).tril(-1) + at::eye(m, k, LU.options());
    U = LU.narrow(-2, 0, k).triu();
  } else {
    L = at::empty({0}, LU.options());
    U = at::empty({0}, LU.options());
  }
  if (unpack_pivots) {
    const Shape batch = batch_shape(LU);
    at::Tensor piv = fresh(pivots, with(batch, {k}));
    at::Tensor perm = at::empty(with(batch, {m}), pivots.options());
    run(LU, {.algo = LinalgAlgo::Permutation,
             .b = addr(perm),
             .pivots = addr(piv),
             .m = m,
             .k = k,
             .batch = numel_of(batch)});
    // P[perm[i], i] = 1: (P^T A)[i] = A[perm[i]].
    P = at::zeros(with(batch, {m, m}), LU.options())
            .scatter_(-2, perm.to(at::kLong).unsqueeze(-2), 1.0);
  } else {
    P = at::empty({0}, LU.options());
  }
  return {P, L, U};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_unpack_out(const at::Tensor& LU,
                                                                const at::Tensor& pivots,
                                                                bool unpack_data,
                                                                bool unpack_pivots, at::Tensor& P,
                                                                at::Tensor& L, at::Tensor& U) {
  return write_outs(vk_lu_unpack(LU, pivots, unpack_data, unpack_pivots), P, L, U);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_linalg_lu(const at::Tensor& A, bool pivot) {
  if (!on_device(A, LinalgAlgo::Lu)) return cpu_route<at::_ops::linalg_lu>(A, pivot);
  TORCH_CHECK(pivot, "linalg.lu: LU without pivoting is not implemented on the CPU");
  auto [LU, pivots, info] = lu_factor_ex(A, true, false);
  return vk_lu_unpack(LU, pivots, true, true);
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_lu_out(const at::Tensor& A, bool pivot,
                                                                at::Tensor& P, at::Tensor& L,
                                                                at::Tensor& U) {
  return write_outs(vk_linalg_lu(A, pivot), P, L, U);
}

at::Tensor lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left,
                    bool adjoint) {
  if (!on_device(LU, LinalgAlgo::LuSolve) || B.scalar_type() != LU.scalar_type())
    return cpu_route<at::_ops::linalg_lu_solve>(LU, pivots, B, left, adjoint);
  // X A = B is A^H X^H = B^H.
  if (!left) return lu_solve(LU, pivots, B.mH(), true, !adjoint).mH();
  at::native::squareCheckInputs(LU, "torch.linalg.lu_solve");
  const int64_t n = LU.size(-1);
  TORCH_CHECK(B.dim() >= 2 && B.size(-2) == n,
              "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (",
              LU.size(-2), "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  TORCH_CHECK(pivots.scalar_type() == at::kInt,
              "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  const Shape batch = system_batch(LU, B);
  const int64_t k = B.size(-1);
  at::Tensor a = fresh(LU, with(batch, {n, n}));
  at::Tensor p = fresh(pivots, with(batch, {n}));
  at::Tensor X = fresh(B, with(batch, {n, k}));
  if (X.numel() && by_blocks(a, LinalgAlgo::LuSolve)) {
    // A = P L U: X = U^-1 L^-1 P^T B, and A^T X = B is X = P L^-T U^-T B.
    at::Tensor order = pivot_order(p, n).unsqueeze(-1).expand(X.sizes());
    if (!adjoint) {
      X = at::take_along_dim(X, order, -2);
      blocked_trsm(a, X, false, true);
      blocked_trsm(a, X, true, false);
    } else {
      blocked_trsm(a.mT(), X, false, false);
      blocked_trsm(a.mT(), X, true, true);
      X = at::empty_like(X).scatter_(-2, order, X);
    }
  } else if (X.numel())
    run(X, {.algo = LinalgAlgo::LuSolve,
            .a = addr(a),
            .b = addr(X),
            .pivots = addr(p),
            .n = n,
            .k = k,
            .batch = numel_of(batch),
            .adjoint = adjoint});
  return X;
}
at::Tensor& lu_solve_out(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B,
                         bool left, bool adjoint, at::Tensor& out) {
  return write_out_exact(out, lu_solve(LU, pivots, B, left, adjoint));
}

// ---- Triangular solves ----------------------------------------------------------------

// A^-1 B for triangular A (left), or B A^-1 (right: A^T X^T = B^T).
at::Tensor solve_triangular(const at::Tensor& A, const at::Tensor& B, bool upper, bool left,
                            bool unitriangular) {
  const bool embedded = !on_device(A, LinalgAlgo::Trsm) && embeddable(A, LinalgAlgo::LuSolve);
  if (!(embedded || on_device(A, LinalgAlgo::Trsm)) || B.scalar_type() != A.scalar_type())
    return cpu_route<at::_ops::linalg_solve_triangular>(A, B, upper, left, unitriangular);
  if (!left) return solve_triangular(A.mT(), B.mT(), !upper, true, unitriangular).mT();
  at::native::squareCheckInputs(A, "linalg.solve_triangular");
  const int64_t n = A.size(-1);
  TORCH_CHECK(B.dim() >= 2 && B.size(-2) == n,
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (",
              n, "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  if (embedded) return triangular_by_embedding(A, B, upper, unitriangular);
  const Shape batch = system_batch(A, B);
  const int64_t k = B.size(-1);
  at::Tensor a = fresh(A, with(batch, {n, n}));
  at::Tensor X = fresh(B, with(batch, {n, k}));
  if (X.numel() && by_blocks(a, LinalgAlgo::Trsm))
    blocked_trsm(a, X, upper, unitriangular);
  else if (X.numel())
    run(X, {.algo = LinalgAlgo::Trsm,
            .a = addr(a),
            .b = addr(X),
            .n = n,
            .k = k,
            .batch = numel_of(batch),
            .upper = upper,
            .unit = unitriangular});
  return X;
}
at::Tensor& solve_triangular_out(const at::Tensor& A, const at::Tensor& B, bool upper, bool left,
                                 bool unitriangular, at::Tensor& out) {
  return write_out_exact(out, solve_triangular(A, B, upper, left, unitriangular));
}

std::tuple<at::Tensor, at::Tensor> vk_triangular_solve(const at::Tensor& b, const at::Tensor& A,
                                                       bool upper, bool transpose,
                                                       bool unitriangular) {
  if (!(embeddable(A, LinalgAlgo::LuSolve) || on_device(A, LinalgAlgo::Trsm)) ||
      b.scalar_type() != A.scalar_type())
    return cpu_route<at::_ops::triangular_solve>(b, A, upper, transpose, unitriangular);
  at::Tensor X = transpose ? solve_triangular(A.mT(), b, !upper, true, unitriangular)
                           : solve_triangular(A, b, upper, true, unitriangular);
  const Shape batch = system_batch(A, b);
  return {X, fresh(A, with(batch, {A.size(-2), A.size(-1)}))};
}
std::tuple<at::Tensor&, at::Tensor&> triangular_solve_out(const at::Tensor& b, const at::Tensor& A,
                                                          bool upper, bool transpose,
                                                          bool unitriangular, at::Tensor& X,
                                                          at::Tensor& M) {
  return write_outs(vk_triangular_solve(b, A, upper, transpose, unitriangular), X, M);
}

// ---- What ATen builds of them per backend ---------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> solve_ex(const at::Tensor& A,
                                                                    const at::Tensor& B, bool left,
                                                                    bool check_errors) {
  if (!on_device(A, LinalgAlgo::LuSolve) || B.scalar_type() != A.scalar_type())
    return cpu_route<at::_ops::_linalg_solve_ex>(A, B, left, check_errors);
  auto [LU, pivots, info] = lu_factor_ex(A, true, false);
  // A vector right-hand side (B of A's batch plus one dim) is one column.
  const bool vector =
      B.dim() == 1 ||
      (B.dim() == A.dim() - 1 && B.sizes().vec() == Shape(A.sizes().begin(), A.sizes().end() - 1));
  at::Tensor X = vector ? lu_solve(LU, pivots, B.unsqueeze(-1), left, false).squeeze(-1)
                        : lu_solve(LU, pivots, B, left, false);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  return {X, LU, pivots, info};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> solve_ex_out(
    const at::Tensor& A, const at::Tensor& B, bool left, bool check_errors, at::Tensor& result,
    at::Tensor& LU, at::Tensor& pivots, at::Tensor& info) {
  return write_outs(solve_ex(A, B, left, check_errors), result, LU, pivots, info);
}

std::tuple<at::Tensor, at::Tensor> inv_ex(const at::Tensor& A, bool check_errors) {
  at::native::squareCheckInputs(A, "linalg.inv");
  if (!on_device(A, LinalgAlgo::LuSolve) && embeddable(A, LinalgAlgo::LuSolve)) {
    const int64_t n = A.size(-1);
    auto [inverse, info] = inv_ex(real_embedding(A), false);
    at::Tensor result = complex_from_embedded(inverse, n);
    info = info_of_embedded(info, n);
    if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
    return {result, info};
  }
  if (!on_device(A, LinalgAlgo::LuSolve))
    return cpu_route<at::_ops::linalg_inv_ex>(A, check_errors);
  auto [LU, pivots, info] = lu_factor_ex(A, true, false);
  at::Tensor eye = at::eye(A.size(-1), A.options()).expand(A.sizes());
  at::Tensor inverse = lu_solve(LU, pivots, eye, true, false);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
  return {inverse, info};
}
std::tuple<at::Tensor&, at::Tensor&> inv_ex_out(const at::Tensor& A, bool check_errors,
                                                at::Tensor& inverse, at::Tensor& info) {
  return write_outs(inv_ex(A, check_errors), inverse, info);
}

// The sign of the permutation LAPACK's pivots describe: -1 per row swap.
at::Tensor pivot_sign(const at::Tensor& pivots, const at::TensorOptions& options) {
  const int64_t k = pivots.size(-1);
  at::Tensor identity = at::arange(1, k + 1, pivots.options());
  at::Tensor swaps = pivots.ne(identity).sum(-1);
  return (1 - 2 * swaps.remainder(2)).to(options.dtype());
}

// The matrix whose LU _linalg_det and _linalg_slogdet return: as ATen's CPU and CUDA
// kernels, that of A^T when A is contiguous and real (det A^T = det A), which their
// backward formulas assume.
at::Tensor factored_for_det(const at::Tensor& A) {
  return A.is_contiguous() && !A.is_complex() ? A.mH() : A;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_det(const at::Tensor& A) {
  at::native::squareCheckInputs(A, "linalg.det");
  at::native::checkFloatingOrComplex(A, "linalg.det");
  if (!on_device(A, LinalgAlgo::Lu)) return cpu_route<at::_ops::_linalg_det>(A);
  auto [LU, pivots, info] = lu_factor_ex(factored_for_det(A), true, false);
  at::Tensor d = LU.diagonal(0, -2, -1).prod(-1) * pivot_sign(pivots, A.options());
  return {d, LU, pivots};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> det_out(const at::Tensor& A, at::Tensor& result,
                                                          at::Tensor& LU, at::Tensor& pivots) {
  return write_outs(vk_det(A), result, LU, pivots);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> vk_slogdet(const at::Tensor& A) {
  at::native::squareCheckInputs(A, "linalg.slogdet");
  at::native::checkFloatingOrComplex(A, "linalg.slogdet");
  if (!on_device(A, LinalgAlgo::Lu)) return cpu_route<at::_ops::_linalg_slogdet>(A);
  auto [LU, pivots, info] = lu_factor_ex(factored_for_det(A), true, false);
  at::Tensor diag = LU.diagonal(0, -2, -1);
  at::Tensor sign = diag.sgn().prod(-1) * pivot_sign(pivots, A.options());
  at::Tensor logabs = diag.abs().log().sum(-1);
  return {sign, logabs, LU, pivots};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> slogdet_out(
    const at::Tensor& A, at::Tensor& sign, at::Tensor& logabs, at::Tensor& LU, at::Tensor& pivots) {
  return write_outs(vk_slogdet(A), sign, logabs, LU, pivots);
}

// (L L^H)^-1 B from the Cholesky factor (or U^H U from the upper one); ATen's
// cholesky_solve has broadcast the batches.
at::Tensor cholesky_solve_helper(const at::Tensor& B, const at::Tensor& factor, bool upper) {
  if (!(embeddable(factor, LinalgAlgo::LuSolve) || on_device(factor, LinalgAlgo::LuSolve)) ||
      B.scalar_type() != factor.scalar_type())
    return cpu_route<at::_ops::_cholesky_solve_helper>(B, factor, upper);
  at::Tensor L = upper ? factor.mH() : factor;
  // Complex factors too large for the triangular kernel: one LU of L L^H's embedding.
  if (factor.is_complex() && !on_device(factor, LinalgAlgo::Trsm))
    return solve_by_embedding(at::matmul(L, L.mH()), B);
  at::Tensor y = solve_triangular(L, B, false, true, false);
  return solve_triangular(L.mH(), y, true, true, false);
}

at::Tensor vk_cholesky_inverse(const at::Tensor& factor, bool upper) {
  at::native::squareCheckInputs(factor, "cholesky_inverse");
  if (!(embeddable(factor, LinalgAlgo::LuSolve) || on_device(factor, LinalgAlgo::LuSolve)))
    return cpu_route<at::_ops::cholesky_inverse>(factor, upper);
  at::Tensor eye = at::eye(factor.size(-1), factor.options()).expand(factor.sizes());
  return cholesky_solve_helper(eye, factor, upper);
}
at::Tensor& cholesky_inverse_out(const at::Tensor& factor, bool upper, at::Tensor& out) {
  return write_out_castable(out, vk_cholesky_inverse(factor, upper));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#ifdef VKML_HAS_DEPRECATED_CHOLESKY
  m.impl("cholesky", TORCH_FN(vk_cholesky));
  m.impl("cholesky.out", TORCH_FN(cholesky_out));
#endif
  m.impl("linalg_cholesky_ex", TORCH_FN(cholesky_ex));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(cholesky_ex_out));
  m.impl("linalg_lu_factor_ex", TORCH_FN(lu_factor_ex));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(lu_factor_ex_out));
  m.impl("linalg_lu", TORCH_FN(vk_linalg_lu));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
  m.impl("lu_unpack", TORCH_FN(vk_lu_unpack));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu_solve", TORCH_FN(lu_solve));
  m.impl("linalg_lu_solve.out", TORCH_FN(lu_solve_out));
  m.impl("linalg_solve_triangular", TORCH_FN(solve_triangular));
  m.impl("linalg_solve_triangular.out", TORCH_FN(solve_triangular_out));
  m.impl("triangular_solve", TORCH_FN(vk_triangular_solve));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("_linalg_solve_ex", TORCH_FN(solve_ex));
  m.impl("_linalg_solve_ex.result", TORCH_FN(solve_ex_out));
  m.impl("linalg_inv_ex", TORCH_FN(inv_ex));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(inv_ex_out));
  m.impl("_linalg_det", TORCH_FN(vk_det));
  m.impl("_linalg_det.result", TORCH_FN(det_out));
  m.impl("_linalg_slogdet", TORCH_FN(vk_slogdet));
  m.impl("_linalg_slogdet.sign", TORCH_FN(slogdet_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
  m.impl("cholesky_inverse", TORCH_FN(vk_cholesky_inverse));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
}

}  // namespace vkml_aten
