// torch.linalg.matrix_exp (and torch.matrix_exp) on vkml: scaling and squaring with the
// [7/7] Padé approximant in single precision and the [13/13] one in double (Higham, "The
// scaling and squaring method for the matrix exponential revisited", 2005: the degrees it
// picks for each unit roundoff), out of vkml's matrix products and LU solve. ATen's own
// kernel cannot be registered: it builds its work tensors on the CPU. The backward
// reaches this again (ATen's formula takes the exponential of a 2n x 2n block matrix).
//
// float32 and float64 (where the device has it), complex64 and complex128 (their solve
// through the real embedding, linalg_complex.h); float16 and bfloat16 computed in float32
// and rounded once.
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include <array>

#include "fallback.h"
#include "linalg_common.h"
#include "linalg_complex.h"

namespace vkml_aten {
namespace {

// The approximants' coefficients b_k (p(x) = sum b_k x^k, q(x) = p(-x)), and the largest
// 1-norm for which each is accurate to its precision's unit roundoff.
constexpr std::array<double, 8> kPade7 = {17297280.0, 8648640.0, 1995840.0, 277200.0,
                                          25200.0,    1512.0,    56.0,      1.0};
constexpr double kTheta7 = 3.925724783138660;
constexpr std::array<double, 14> kPade13 = {64764752532480000.0,
                                            32382376266240000.0,
                                            7771770303897600.0,
                                            1187353796428800.0,
                                            129060195264000.0,
                                            10559470521600.0,
                                            670442572800.0,
                                            33522128640.0,
                                            1323241920.0,
                                            40840800.0,
                                            960960.0,
                                            16380.0,
                                            182.0,
                                            1.0};
constexpr double kTheta13 = 5.371920351148152;
// Squarings at most: a 1-norm of float32's largest value needs 127 (float64's: 1024).
constexpr double kMaxSquarings = 128.0, kMaxSquaringsDouble = 1024.0;

// q(X)^-1 p(X), p = V + U and q = V - U: an LU solve, complex ones through the embedding.
// q(X) is well conditioned at these norms; no error check (a NaN input's result is NaN,
// not an exception, as on the CPU).
at::Tensor pade_quotient(const at::Tensor& U, const at::Tensor& V) {
  if (!U.is_complex()) return std::get<0>(at::linalg_solve_ex(V - U, V + U, true, false));
  const int64_t n = U.size(-1);
  at::Tensor e = std::get<0>(at::linalg_solve_ex(linalg::real_embedding(V - U),
                                                 linalg::real_embedding(V + U), true, false));
  return linalg::complex_from_embedded(e, n);
}

at::Tensor matrix_exp_pade(const at::Tensor& A) {
  const int64_t n = A.size(-1);
  const bool dbl = A.scalar_type() == at::kDouble || A.scalar_type() == at::kComplexDouble;
  // s_i squarings bring matrix i's 1-norm under theta; non-finite input keeps s = 0 (its
  // result is not finite either, as on the CPU).
  at::Tensor norm = A.abs().sum(-2).amax(-1);
  at::Tensor s = at::ceil(at::log2(norm / (dbl ? kTheta13 : kTheta7)))
                     .clamp(0.0, dbl ? kMaxSquaringsDouble : kMaxSquarings);
  s = at::nan_to_num(s, 0.0, 0.0, 0.0);
  at::Tensor X = A * at::exp2(s.neg()).unsqueeze(-1).unsqueeze(-1).to(A.scalar_type());
  at::Tensor I = at::eye(n, A.options()).expand_as(A);
  at::Tensor X2 = at::matmul(X, X), X4 = at::matmul(X2, X2), X6 = at::matmul(X2, X4);
  at::Tensor U, V;
  if (dbl) {
    // Coefficients over b_0, as below; degree 13 from X2, X4, X6 (Higham's algorithm 2.3).
    auto c = [](int k) { return kPade13[k] / kPade13[0]; };
    U = at::matmul(X, at::matmul(X6, X6 * c(13) + X4 * c(11) + X2 * c(9)) + X6 * c(7) + X4 * c(5) +
                          X2 * c(3) + I * c(1));
    V = at::matmul(X6, X6 * c(12) + X4 * c(10) + X2 * c(8)) + X6 * c(6) + X4 * c(4) + X2 * c(2) +
        I * c(0);
  } else {
    // Coefficients over b_0, so that the terms stay near 1 in float32.
    auto c = [](int k) { return kPade7[k] / kPade7[0]; };
    U = at::matmul(X, X6 * c(7) + X4 * c(5) + X2 * c(3) + I * c(1));
    V = X6 * c(6) + X4 * c(4) + X2 * c(2) + I * c(0);
  }
  at::Tensor R = pade_quotient(U, V);
  // Every matrix squared its own number of times: one host read for the most (ATen's
  // CUDA kernel reads the norms too).
  const auto most = static_cast<int64_t>(s.max().item<double>());
  at::Tensor squarings = s.unsqueeze(-1).unsqueeze(-1);
  for (int64_t k = 0; k < most; ++k) R = at::where(squarings > double(k), at::matmul(R, R), R);
  return R;
}

at::Tensor vk_matrix_exp(const at::Tensor& A) {
  at::native::squareCheckInputs(A, "linalg.matrix_exp");
  at::native::checkFloatingOrComplex(A, "linalg.matrix_exp");
  const auto t = A.scalar_type();
  const bool half = t == at::kHalf || t == at::kBFloat16;
  // The real type's kernels: float64 ones where the device has them.
  const at::ScalarType real = half ? at::kFloat : c10::toRealValueType(t);
  if (!vkml::ops::linalg_supported(vkml_device(A), to_vkml(real)))
    return cpu_route<at::_ops::linalg_matrix_exp>(A);
  if (A.numel() == 0) return at::empty_like(A, at::MemoryFormat::Contiguous);
  if (A.size(-1) == 1) return A.exp();
  if (!half) return matrix_exp_pade(A.contiguous());
  return matrix_exp_pade(A.to(at::kFloat)).to(t);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("linalg_matrix_exp", TORCH_FN(vk_matrix_exp)); }

}  // namespace vkml_aten
