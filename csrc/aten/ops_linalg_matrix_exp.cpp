// torch.linalg.matrix_exp (and torch.matrix_exp) on vkml: scaling and squaring with the
// [7/7] Padé approximant (Higham, "The scaling and squaring method for the matrix
// exponential revisited", 2005; degree 7 is the one it picks for single precision), out
// of vkml's matrix products and LU solve. ATen's own kernel cannot be registered: it
// builds its work tensors on the CPU. The backward reaches this again (ATen's formula
// takes the exponential of a 2n x 2n block matrix).
//
// float32; float16 and bfloat16 computed in float32 and rounded once; float64 (vkml has
// no float64 matrix product) and complex take the counted CPU route.
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include <array>

#include "fallback.h"
#include "linalg_common.h"

namespace vkml_aten {
namespace {

// The [7/7] approximant's coefficients b_k (p(x) = sum b_k x^k, q(x) = p(-x)), and the
// largest 1-norm for which it is accurate to single precision's unit roundoff.
constexpr std::array<double, 8> kPade7 = {17297280.0, 8648640.0, 1995840.0, 277200.0,
                                          25200.0,    1512.0,    56.0,      1.0};
constexpr double kTheta7 = 3.925724783138660;
// Squarings at most: a 1-norm of float32's largest value needs 127.
constexpr double kMaxSquarings = 128.0;

at::Tensor matrix_exp_f32(const at::Tensor& A) {
  const int64_t n = A.size(-1);
  // s_i squarings bring matrix i's 1-norm under theta_7; non-finite input keeps s = 0
  // (its result is not finite either, as on the CPU).
  at::Tensor norm = A.abs().sum(-2).amax(-1);
  at::Tensor s = at::ceil(at::log2(norm / kTheta7)).clamp(0.0, kMaxSquarings);
  s = at::nan_to_num(s, 0.0, 0.0, 0.0);
  at::Tensor X = A * at::exp2(s.neg()).unsqueeze(-1).unsqueeze(-1);
  at::Tensor I = at::eye(n, A.options()).expand_as(A);
  at::Tensor X2 = at::matmul(X, X), X4 = at::matmul(X2, X2), X6 = at::matmul(X2, X4);
  // Coefficients over b_0, so that the terms stay near 1 in float32.
  auto c = [](int k) { return kPade7[k] / kPade7[0]; };
  at::Tensor U = at::matmul(X, X6 * c(7) + X4 * c(5) + X2 * c(3) + I * c(1));
  at::Tensor V = X6 * c(6) + X4 * c(4) + X2 * c(2) + I * c(0);
  // q(X) = V - U is well conditioned at these norms; no error check (a NaN input's
  // result is NaN, not an exception, as on the CPU).
  at::Tensor R = std::get<0>(at::linalg_solve_ex(V - U, V + U, true, false));
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
  if (t != at::kFloat && t != at::kHalf && t != at::kBFloat16)
    return cpu_route<at::_ops::linalg_matrix_exp>(A);
  if (A.numel() == 0) return at::empty_like(A, at::MemoryFormat::Contiguous);
  if (A.size(-1) == 1) return A.exp();
  at::Tensor a = t == at::kFloat ? A : A.to(at::kFloat);
  at::Tensor R = matrix_exp_f32(a);
  return t == at::kFloat ? R : R.to(t);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("linalg_matrix_exp", TORCH_FN(vk_matrix_exp)); }

}  // namespace vkml_aten
