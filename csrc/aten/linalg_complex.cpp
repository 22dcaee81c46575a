// Complex matrices through their real embedding (linalg_complex.h).
#include "linalg_complex.h"

#include <vector>

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

at::Tensor solve_by_embedding(const at::Tensor& A, const at::Tensor& B) {
  const int64_t n = A.size(-1);
  const at::Tensor b = B.resolve_conj().resolve_neg();
  // E(A) [Re X; Im X] = [Re B; Im B].
  const at::Tensor rhs = at::cat({at::real(b), at::imag(b)}, -2);
  const at::Tensor z = std::get<0>(at::linalg_solve_ex(real_embedding(A), rhs, true, false));
  return at::complex(z.narrow(-2, 0, n), z.narrow(-2, n, n));
}

at::Tensor triangular_by_embedding(const at::Tensor& A, const at::Tensor& B, bool upper,
                                   bool unit) {
  const at::Tensor a = A.resolve_conj().resolve_neg();
  at::Tensor T = upper ? at::triu(a) : at::tril(a);
  if (unit) T = T - at::diag_embed(at::diagonal(T, 0, -2, -1)) + at::eye(A.size(-1), T.options());
  return solve_by_embedding(T, B);
}

at::Tensor interleaved_embedding(const at::Tensor& A) {
  const at::Tensor a = A.resolve_conj().resolve_neg();
  const at::Tensor x = at::real(a), y = at::imag(a);
  // (..., i, j, r, c): [[x, -y], [y, x]], then rows (i, r) and columns (j, c).
  at::Tensor blocks = at::stack({at::stack({x, -y}, -1), at::stack({y, x}, -1)}, -2);
  const int64_t m = A.size(-2), n = A.size(-1);
  std::vector<int64_t> shape(A.sizes().begin(), A.sizes().end() - 2);
  shape.push_back(2 * m);
  shape.push_back(2 * n);
  const int64_t d = blocks.dim();
  std::vector<int64_t> order;
  for (int64_t i = 0; i < d - 4; ++i) order.push_back(i);
  order.insert(order.end(), {d - 4, d - 2, d - 3, d - 1});
  return blocks.permute(order).reshape(shape);
}

at::Tensor complex_from_interleaved(const at::Tensor& E) {
  const int64_t m = E.size(-2) / 2, n = E.size(-1) / 2;
  std::vector<int64_t> shape(E.sizes().begin(), E.sizes().end() - 2);
  shape.insert(shape.end(), {m, 2, n, 2});
  const at::Tensor first_column = E.reshape(shape).select(-1, 0);  // (..., m, 2, n)
  return at::complex(first_column.select(-2, 0), first_column.select(-2, 1));
}

at::Tensor info_of_interleaved(const at::Tensor& info) {
  return at::floor_divide(info + 1, 2);  // rows 2i - 1 and 2i (1-based) are A's row i
}

at::Tensor one_of_each_pair(const at::Tensor& values) {
  return values.slice(-1, 0, values.size(-1), 2).contiguous();
}

}  // namespace vkml_aten::linalg
