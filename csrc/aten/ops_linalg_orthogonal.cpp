// torch.linalg's orthogonal factorizations on their backend kernels (vkml/ops/linalg.h):
// Householder QR and its Q (geqrf, householder_product, ormqr, linalg_qr), symmetric
// eigendecomposition and SVD (Jacobi for small matrices, condensed forms up to order
// 4096, larger ones on the CPU, counted), and least squares through the SVD. float32, and float64
// where the device has it (ormqr: float32, through a matrix product); complex ones on the complex
// kernels (eigh and SVD by Jacobi; their values alone of larger matrices through the real
// embedding, linalg_complex.h).
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include "fallback.h"
#include "linalg_blocked.h"
#include "linalg_common.h"
#include "linalg_complex.h"

namespace vkml_aten {
namespace {

using namespace linalg;

// The dtype of eigenvalues and singular values: A's, or its complex type's real one.
at::ScalarType real_dtype(const at::Tensor& A) { return c10::toRealValueType(A.scalar_type()); }

// ---- QR -------------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> vk_geqrf(const at::Tensor& A) {
  TORCH_CHECK(A.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  if (!on_device(A, LinalgAlgo::Geqrf)) return cpu_route<at::_ops::geqrf>(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const Shape batch = batch_shape(A);
  at::Tensor a = fresh(A, A.sizes().vec());
  at::Tensor tau = at::empty(with(batch, {k}), A.options());
  if (a.numel() && by_blocks(a, LinalgAlgo::Geqrf))
    blocked_geqrf(a, tau);
  else if (a.numel())
    run(a, {.algo = LinalgAlgo::Geqrf,
            .a = addr(a),
            .b = addr(tau),
            .m = m,
            .n = n,
            .batch = numel_of(batch)});
  return {a, tau};
}
std::tuple<at::Tensor&, at::Tensor&> geqrf_out(const at::Tensor& A, at::Tensor& a,
                                               at::Tensor& tau) {
  auto [qr, taus] = vk_geqrf(A);  // the CPU casts into wider outs here
  check_out_castable(a, qr.scalar_type());
  check_out_castable(tau, taus.scalar_type());
  write_out(a, qr);
  write_out(tau, taus);
  return {a, tau};
}

// Q's first n columns from the reflectors below the diagonal of `input` (m x n) and tau.
at::Tensor vk_householder_product(const at::Tensor& input, const at::Tensor& tau) {
  if (!on_device(input, LinalgAlgo::Orgqr) || tau.scalar_type() != input.scalar_type())
    return cpu_route<at::_ops::linalg_householder_product>(input, tau);
  TORCH_CHECK(input.dim() >= 2,
              "torch.linalg.householder_product: input must have at least 2 dimensions.");
  const int64_t m = input.size(-2), n = input.size(-1), k = tau.size(-1);
  TORCH_CHECK(m >= n,
              "torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
              "input.shape[-1]");
  TORCH_CHECK(n >= k,
              "torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
              "tau.shape[-1]");
  const Shape batch = batch_shape(input);
  at::Tensor q = fresh(input, input.sizes().vec());
  at::Tensor t = fresh(tau, with(batch, {k}));
  if (q.numel() && by_blocks(q, LinalgAlgo::Orgqr)) return blocked_orgqr(q, t);
  if (q.numel())
    run(q, {.algo = LinalgAlgo::Orgqr,
            .a = addr(q),
            .b = addr(t),
            .m = m,
            .n = n,
            .k = k,
            .batch = numel_of(batch)});
  return q;
}
at::Tensor& householder_product_out(const at::Tensor& input, const at::Tensor& tau,
                                    at::Tensor& out) {
  return write_out_castable(out, vk_householder_product(input, tau));
}

// The whole m x m Q of k reflectors: the reflectors padded with identity ones (tau 0).
at::Tensor full_q(const at::Tensor& reflectors, const at::Tensor& tau) {
  const int64_t m = reflectors.size(-2), k = tau.size(-1);
  at::Tensor v = reflectors.narrow(-1, 0, k);
  if (k < m) v = at::cat({v, at::zeros(with(batch_shape(v), {m, m - k}), v.options())}, -1);
  at::Tensor t =
      k < m ? at::cat({tau, at::zeros(with(batch_shape(v), {m - k}), tau.options())}, -1) : tau;
  return vk_householder_product(v, t);
}

at::Tensor vk_ormqr(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other,
                    bool left, bool transpose) {
  // Through the full Q and a matrix product, which float64 lacks on vkml.
  if (!on_device(input, LinalgAlgo::Orgqr) ||
      (input.scalar_type() != at::kFloat && input.scalar_type() != at::kComplexFloat) ||
      tau.scalar_type() != input.scalar_type() || other.scalar_type() != input.scalar_type())
    return cpu_route<at::_ops::ormqr>(input, tau, other, left, transpose);
  at::Tensor q = full_q(input, tau);
  if (transpose) q = q.mH();  // Q^H, as LAPACK's unmqr
  return left ? at::matmul(q, other) : at::matmul(other, q);
}
at::Tensor& ormqr_out(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other,
                      bool left, bool transpose, at::Tensor& out) {
  return write_out_exact(out, vk_ormqr(input, tau, other, left, transpose));
}

std::tuple<at::Tensor, at::Tensor> vk_linalg_qr(const at::Tensor& A, c10::string_view mode) {
  if (!on_device(A, LinalgAlgo::Geqrf)) return cpu_route<at::_ops::linalg_qr>(A, mode);
  TORCH_CHECK(A.dim() >= 2, "linalg.qr: The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
              "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  auto [a, tau] = vk_geqrf(A);
  const bool complete = mode == "complete";
  at::Tensor R = (complete ? a : a.narrow(-2, 0, k)).triu();
  at::Tensor Q;
  if (mode == "r")
    Q = at::empty({0}, A.options());
  else if (complete || m <= n)
    Q = full_q(a, tau);
  else
    Q = vk_householder_product(a.narrow(-1, 0, k), tau);
  return {Q, R};
}
std::tuple<at::Tensor&, at::Tensor&> linalg_qr_out(const at::Tensor& A, c10::string_view mode,
                                                   at::Tensor& Q, at::Tensor& R) {
  return write_outs(vk_linalg_qr(A, mode), Q, R);
}

// ---- Eigenvalues and singular values ---------------------------------------------------
// Jacobi up to kEighMax / kSvdMax (more accurate for small matrices), condensed forms
// beyond (linalg_condensed.comp), and also where the driver's loop limit would cut Jacobi's
// sweeps short (vkml::ops::eigh_by_jacobi, svd_by_jacobi).

// The condensed forms' scratch (none for Jacobi).
at::Tensor scratch_for(const at::Tensor& A, const Shape& batch, int64_t n, bool condensed) {
  if (!condensed) return at::Tensor();
  return at::empty({numel_of(batch) * vkml::ops::kCondensedScratch * n}, A.options());
}

std::tuple<at::Tensor, at::Tensor> vk_eigh(const at::Tensor& A, c10::string_view uplo,
                                           bool compute_v) {
  at::native::squareCheckInputs(A, "linalg.eigh");
  const int64_t n = A.size(-1);
  const bool upper = uplo == "U" || uplo == "u";
  TORCH_CHECK(upper || uplo == "L" || uplo == "l",
              "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  // eigvalsh of a complex A past the Jacobi kernel: its Hermitian matrix's embedding has
  // each eigenvalue twice.
  if (!compute_v && !native(A, LinalgAlgo::Eigh) && embeddable(A, LinalgAlgo::Eigh)) {
    at::Tensor values =
        std::get<0>(vk_eigh(real_embedding(hermitian_from_triangle(A, upper)), "L", false));
    return {one_of_each_pair(values), at::empty({0}, A.options())};
  }
  if (!native(A, LinalgAlgo::Eigh)) return cpu_route<at::_ops::_linalg_eigh>(A, uplo, compute_v);
  const Shape batch = batch_shape(A);
  const bool condensed = !vkml::ops::eigh_by_jacobi(vkml_device(A), n);
  // The kernels read the lower triangle: the upper one is that of A^H.
  at::Tensor a = fresh(upper ? A.mH() : A, A.sizes().vec());
  at::Tensor values = at::empty(with(batch, {n}), A.options().dtype(real_dtype(A)));
  at::Tensor vectors = at::empty(condensed && !compute_v ? Shape{0} : A.sizes().vec(), A.options());
  at::Tensor scratch = scratch_for(A, batch, n, condensed);
  at::Tensor info = at::zeros(batch, A.options().dtype(at::kInt));
  if (a.numel())
    run(a, {.algo = condensed ? LinalgAlgo::EighTridiagonal : LinalgAlgo::Eigh,
            .a = addr(a),
            .b = addr(values),
            .c = addr(vectors),
            .info = addr(info),
            .m = n,
            .n = n,
            .batch = numel_of(batch),
            .values_only = !compute_v,
            .scratch = condensed ? addr(scratch) : 0});
  // As on the CPU and CUDA: a failure (non-finite input) raises, after one host read.
  at::_linalg_check_errors(info, "linalg.eigh", A.dim() == 2);
  return {values, compute_v ? vectors : at::empty({0}, A.options())};
}
std::tuple<at::Tensor&, at::Tensor&> eigh_out(const at::Tensor& A, c10::string_view uplo,
                                              bool compute_v, at::Tensor& values,
                                              at::Tensor& vectors) {
  return write_outs(vk_eigh(A, uplo, compute_v), values, vectors);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_svd(const at::Tensor& A, bool full_matrices,
                                                      bool compute_uv,
                                                      std::optional<c10::string_view> driver) {
  TORCH_CHECK(A.dim() >= 2, "linalg.svd: The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
              "cuSOLVER backend.");
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  // svdvals of a complex A past the Jacobi kernel: its embedding has each singular value
  // twice.
  if (!compute_uv && !native(A, LinalgAlgo::Svd) && embeddable(A, LinalgAlgo::Svd)) {
    at::Tensor S = std::get<1>(vk_svd(real_embedding(A), false, false, std::nullopt));
    return {at::empty({0}, A.options()), one_of_each_pair(S), at::empty({0}, A.options())};
  }
  if (!native(A, LinalgAlgo::Svd))
    return cpu_route<at::_ops::_linalg_svd>(A, full_matrices, compute_uv, driver);
  // Work on the tall one of A and A^H: A^H = U' S V'^H gives A = V' S U'^H.
  const bool wide = m < n;
  at::Tensor tall = wide ? A.mH() : A;
  const int64_t rows = tall.size(-2);
  const Shape batch = batch_shape(A);
  const bool condensed = !vkml::ops::svd_by_jacobi(vkml_device(A), m, n);
  const bool vectors = compute_uv || !condensed;
  at::Tensor a = fresh(tall, tall.sizes().vec());
  at::Tensor S = at::empty(with(batch, {k}), A.options().dtype(real_dtype(A)));
  at::Tensor left = at::empty(vectors ? with(batch, {rows, k}) : Shape{0}, A.options());
  at::Tensor right = at::empty(vectors ? with(batch, {k, k}) : Shape{0}, A.options());
  at::Tensor scratch = scratch_for(A, batch, k, condensed);
  at::Tensor info = at::zeros(batch, A.options().dtype(at::kInt));
  if (a.numel())
    run(a, {.algo = condensed ? LinalgAlgo::SvdBidiagonal : LinalgAlgo::Svd,
            .a = addr(a),
            .b = addr(S),
            .c = addr(right),
            .d = addr(left),
            .info = addr(info),
            .m = rows,
            .n = k,
            .batch = numel_of(batch),
            .values_only = !compute_uv,
            .scratch = condensed ? addr(scratch) : 0});
  at::_linalg_check_errors(info, "linalg.svd", A.dim() == 2);
  if (!compute_uv) return {at::empty({0}, A.options()), S, at::empty({0}, A.options())};
  // Jacobi's tall-side vectors are A v / s: zero where s is 0 (a rank-deficient A),
  // where LAPACK returns orthonormal ones. Such columns come last (s descends), so a
  // reduced QR of them keeps the others' span in its leading columns, and its columns
  // at the zero ones complete an orthonormal set: taken there, on the device (no read
  // of S), the rest left as they are. The condensed form's are orthonormal already.
  if (left.numel() && !condensed) {
    at::Tensor Q = std::get<0>(vk_linalg_qr(left, "reduced"));
    left = at::where(at::linalg_vector_norm(left, 2, {-2}, true) < 0.5, Q, left);
  }
  // Full matrices: the tall side's k vectors completed to an orthonormal basis by the
  // last columns of a complete QR of them (orthogonal to their span).
  if (full_matrices && rows > k) {
    at::Tensor Q = std::get<0>(vk_linalg_qr(left, "complete"));
    left = at::cat({left, Q.narrow(-1, k, rows - k)}, -1);
  }
  at::Tensor U = wide ? right : left;
  at::Tensor Vh = (wide ? left : right).mH();
  return {U, S, Vh};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> svd_out(const at::Tensor& A, bool full_matrices,
                                                          bool compute_uv,
                                                          std::optional<c10::string_view> driver,
                                                          at::Tensor& U, at::Tensor& S,
                                                          at::Tensor& Vh) {
  return write_outs(vk_svd(A, full_matrices, compute_uv, driver), U, S, Vh);
}

// Least squares through the SVD: X = V S^+ U^T B with singular values under rcond * the
// largest dropped, the minimum-norm solution (LAPACK's gelsd / gelss). For a full-rank
// A it is every driver's solution; gels and gelsy solve rank-deficient systems
// otherwise, so those take the CPU route after one host read of the ranks.
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> lstsq_out(
    const at::Tensor& A, const at::Tensor& B, std::optional<double> rcond,
    std::optional<c10::string_view> driver_name, at::Tensor& solution, at::Tensor& residuals,
    at::Tensor& rank, at::Tensor& singular_values) {
  auto cpu = [&] {
    return cpu_route<at::_ops::linalg_lstsq_out>(A, B, rcond, driver_name, solution, residuals,
                                                 rank, singular_values);
  };
  const std::string driver(driver_name.value_or("gelsy"));
  TORCH_CHECK(
      driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
      "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  if (!native(A, LinalgAlgo::Svd) || B.scalar_type() != A.scalar_type() || A.dim() < 2)
    return cpu();
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool vector = B.dim() == A.dim() - 1;
  at::Tensor b = vector ? B.unsqueeze(-1) : B;
  if (k == 0 || b.size(-2) != m) return cpu();
  auto [U, S, Vh] = vk_svd(A, false, true, std::nullopt);
  const double eps = A.scalar_type() == at::kDouble ? 2.220446049250313e-16 : 1.1920929e-07;
  const double r = rcond.value_or(eps * double(std::max(m, n)));
  at::Tensor keep = S > (S.narrow(-1, 0, 1) * r);
  at::Tensor ranks = keep.sum(-1);
  const bool full = ranks.min().item<int64_t>() == k;
  if (!full && (driver == "gels" || driver == "gelsy")) return cpu();
  at::Tensor inv = at::where(keep, S.reciprocal(), 0.0);
  at::Tensor X = at::matmul(Vh.mH() * inv.unsqueeze(-2), at::matmul(U.mH(), b));
  at::Tensor res = at::empty({0}, A.options().dtype(real_dtype(A)));
  if (m > n && full && driver != "gelsy") res = (at::matmul(A, X) - b).abs().square().sum(-2);
  const at::Tensor results[] = {
      vector ? X.squeeze(-1) : X,
      res,  // a vector right-hand side keeps its one column here
      driver == "gels" ? at::empty({0}, ranks.options()) : ranks,
      driver == "gelsd" || driver == "gelss" ? S : at::empty({0}, S.options())};  // real
  at::Tensor* outs[] = {&solution, &residuals, &rank, &singular_values};
  for (int k = 0; k < 4; ++k) check_out_castable(*outs[k], results[k].scalar_type());
  for (int k = 0; k < 4; ++k) write_out(*outs[k], results[k]);
  return {solution, residuals, rank, singular_values};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lstsq.out", TORCH_FN(lstsq_out));
  m.impl("_linalg_eigh", TORCH_FN(vk_eigh));
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(eigh_out));
  m.impl("_linalg_svd", TORCH_FN(vk_svd));
  m.impl("_linalg_svd.U", TORCH_FN(svd_out));
  m.impl("geqrf", TORCH_FN(vk_geqrf));
  m.impl("geqrf.a", TORCH_FN(geqrf_out));
  m.impl("linalg_householder_product", TORCH_FN(vk_householder_product));
  m.impl("linalg_householder_product.out", TORCH_FN(householder_product_out));
  m.impl("ormqr", TORCH_FN(vk_ormqr));
  m.impl("ormqr.out", TORCH_FN(ormqr_out));
  m.impl("linalg_qr", TORCH_FN(vk_linalg_qr));
  m.impl("linalg_qr.out", TORCH_FN(linalg_qr_out));
}

}  // namespace vkml_aten
