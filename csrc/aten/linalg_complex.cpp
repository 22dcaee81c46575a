// Complex matrices through their real embedding (linalg_complex.h).
#include "linalg_complex.h"

#include "linalg_common.h"

namespace vkml_aten::linalg {

bool embeddable(const at::Tensor& A, vkml::ops::LinalgAlgo algo) {
  if (!A.is_complex() || A.dim() < 2) return false;
  const at::ScalarType real = c10::toRealValueType(A.scalar_type());
  if (!vkml::ops::linalg_supported(vkml_device(A), to_vkml(real))) return false;
  return vkml::ops::linalg_fits(vkml_device(A), algo, 2 * A.size(-2), 2 * A.size(-1));
}

at::Tensor real_embedding(const at::Tensor& A) {
  const at::Tensor a = A.resolve_conj().resolve_neg();
  const at::Tensor x = at::real(a), y = at::imag(a);
  return at::cat({at::cat({x, -y}, -1), at::cat({y, x}, -1)}, -2);
}

at::Tensor complex_from_embedded(const at::Tensor& E, int64_t n) {
  // The first block column of [[P, -Q], [Q, P]] holds P and Q.
  return at::complex(E.narrow(-2, 0, n).narrow(-1, 0, n), E.narrow(-2, n, n).narrow(-1, 0, n));
}

at::Tensor info_of_embedded(const at::Tensor& info, int64_t n) {
  // The embedding's column j (1-based) is A's column j, or j - n past n.
  return at::where(info > n, info - n, info);
}

at::Tensor hermitian_from_triangle(const at::Tensor& A, bool upper) {
  const at::Tensor a = A.resolve_conj().resolve_neg();
  const at::Tensor strict = upper ? at::triu(a, 1) : at::tril(a, -1);
  const at::Tensor diagonal = at::real(at::diagonal(a, 0, -2, -1));
  return strict + strict.mH() + at::diag_embed(diagonal).to(a.scalar_type());
}

at::Tensor triangular_by_embedding(const at::Tensor& A, const at::Tensor& B, bool upper,
                                   bool unit) {
  const int64_t n = A.size(-1);
  const at::Tensor a = A.resolve_conj().resolve_neg(), b = B.resolve_conj().resolve_neg();
  at::Tensor T = upper ? at::triu(a) : at::tril(a);
  if (unit) T = T - at::diag_embed(at::diagonal(T, 0, -2, -1)) + at::eye(n, T.options());
  // E(T) [Re X; Im X] = [Re B; Im B].
  const at::Tensor rhs = at::cat({at::real(b), at::imag(b)}, -2);
  const at::Tensor z = std::get<0>(at::linalg_solve_ex(real_embedding(T), rhs, true, false));
  return at::complex(z.narrow(-2, 0, n), z.narrow(-2, n, n));
}

at::Tensor one_of_each_pair(const at::Tensor& values) {
  return values.slice(-1, 0, values.size(-1), 2).contiguous();
}

}  // namespace vkml_aten::linalg
