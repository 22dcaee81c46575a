#pragma once
// What the linear-algebra adapters (ops_linalg.cpp, ops_linalg_orthogonal.cpp) share:
// which inputs the kernels take, batch shapes, fresh contiguous copies for the kernels
// to work in, the launch, and writing multi-output out= arguments.
#include <ATen/ATen.h>

#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include "op_helpers.h"
#include "vkml/ops/linalg.h"
#include "vkml_tensor.h"

namespace vkml_aten::linalg {

using vkml::ops::LinalgAlgo;
using Shape = std::vector<int64_t>;

// Whether the kernels take matrices of t's dtype: float32, or float64 where the device
// has it.
inline bool native_dtype(const at::Tensor& t) {
  return (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble) &&
         vkml::ops::linalg_supported(vkml_device(t), to_vkml(t.scalar_type()));
}

// Whether the complex kernels of `algo` take t's dtype (vkml::ops::complex_algo):
// complex64, or complex128 where the device has float64.
inline bool native_complex(const at::Tensor& t, LinalgAlgo algo) {
  return (t.scalar_type() == at::kComplexFloat || t.scalar_type() == at::kComplexDouble) &&
         vkml::ops::complex_algo(algo) &&
         vkml::ops::linalg_supported(vkml_device(t),
                                     to_vkml(c10::toRealValueType(t.scalar_type())));
}

// Whether the kernels of `algo` take the matrices t: of a native dtype (complex ones
// where `algo` has a complex kernel: eigh and SVD only by Jacobi), and of a size the
// device's kernels take (vkml::ops::linalg_fits: where the driver limits an
// invocation's loop iterations, Mesa 22.3's lavapipe, not every size).
inline bool native(const at::Tensor& t, LinalgAlgo algo) {
  const bool complex = native_complex(t, algo);
  if (!native_dtype(t) && !complex) return false;
  if (t.dim() < 2) return true;
  vkml::Device& dev = vkml_device(t);
  const int64_t m = t.size(-2), n = t.size(-1);
  if (complex && algo == LinalgAlgo::Eigh && !vkml::ops::eigh_by_jacobi(dev, n)) return false;
  if (complex && algo == LinalgAlgo::Svd && !vkml::ops::svd_by_jacobi(dev, m, n)) return false;
  return vkml::ops::linalg_fits(dev, algo, m, n);
}

inline Shape batch_shape(const at::Tensor& t) {
  return Shape(t.sizes().begin(), t.sizes().end() - 2);
}

// The broadcast batch of a system's matrix and right-hand sides.
inline Shape system_batch(const at::Tensor& A, const at::Tensor& B) {
  return at::infer_size(batch_shape(A), batch_shape(B));
}

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

inline Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

// A fresh contiguous copy (the kernels work in place).
inline at::Tensor fresh(const at::Tensor& t, const Shape& shape) {
  at::Tensor out = at::empty(shape, t.options().memory_format(at::MemoryFormat::Contiguous));
  out.copy_(t.expand(shape));
  return out;
}

// The kernel call for matrices like `on` (complex ones as pairs of their real dtype; the
// permutation reads only its int32 pivots).
inline void run(const at::Tensor& on, vkml::ops::LinalgArgs a) {
  a.dtype = to_vkml(c10::toRealValueType(on.scalar_type()));
  a.complex = on.is_complex() && a.algo != LinalgAlgo::Permutation;
  guarded([&] { vkml::ops::linalg(vkml_device(on), a); });
}

// out= forms: each result written into its out argument (resized as ATen does), once
// every out has the dtype of its result (the structured kernels' check: no casts, and
// nothing written when one of them is wrong).
template <class Results, class... Outs, size_t... I>
void write_each(const Results& results, std::index_sequence<I...>, Outs&... outs) {
  (check_out(outs, std::get<I>(results).scalar_type()), ...);
  (write_out(outs, std::get<I>(results)), ...);
}
template <class Results, class... Outs>
std::tuple<Outs&...> write_outs(const Results& results, Outs&... outs) {
  write_each(results, std::index_sequence_for<Outs...>{}, outs...);
  return {outs...};
}

}  // namespace vkml_aten::linalg
