// _weight_norm_interface and its backward (torch.nn.utils.weight_norm and
// parametrizations.weight_norm with dim 0 or the last dim) as compositions of native
// vkml ops: a 2-norm over every dim but `dim`, then w = v * (g / norm); backward the
// analytic form ATen's differentiable backward also uses. Composite files hold ops
// whose speed is their parts' (two reductions and a few elementwise kernels); an op
// that needs a kernel of its own goes to an ops_<family>.cpp.
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <vector>

#include "aten/fallback.h"
#include "aten/vkml_tensor.h"

namespace vkml_aten {
namespace {

// ATen's fused kernels take only these two (other dims run its composite path).
void check_dim(const at::Tensor& v, int64_t dim) {
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1,
              "fused kernels can only be applied for first or last dim");
}

// Every dim of v but `dim`: the norm's reduction.
std::vector<int64_t> other_dims(const at::Tensor& v, int64_t dim) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (d != dim) dims.push_back(d);
  return dims;
}

// g as a tensor of v's rank, 1 except at dim, to broadcast against v.
std::vector<int64_t> broadcast_shape(const at::Tensor& v, int64_t dim) {
  std::vector<int64_t> shape(size_t(v.dim()), 1);
  shape[size_t(dim)] = v.size(dim);
  return shape;
}

// float16 / bfloat16 compute in float32, and ATen keeps their norms in float32 too.
// Reductions have no float64 kernel yet: float64 takes the counted CPU route.
bool on_cpu(const at::Tensor& v, const at::Tensor& g) {
  return v.scalar_type() == at::kDouble || g.scalar_type() == at::kDouble;
}

std::tuple<at::Tensor, at::Tensor> weight_norm(const at::Tensor& v, const at::Tensor& g,
                                               int64_t dim) {
  TORCH_CHECK(v.device() == g.device(), "weight_norm: v and g must be on the same device");
  if (on_cpu(v, g)) return cpu_route<at::_ops::_weight_norm_interface>(v, g, dim);
  check_dim(v, dim);
  TORCH_CHECK(g.numel() == v.size(dim), "weight_norm: g must have ", v.size(dim), " elements, got ",
              g.sizes());
  const at::ScalarType acc = at::toOpMathType(v.scalar_type());
  const at::ScalarType norm_type = at::toOpMathType(g.scalar_type());
  if (v.numel() == 0) {
    return {at::empty(v.sizes(), v.options()), at::zeros(g.sizes(), g.options().dtype(norm_type))};
  }
  const auto shape = broadcast_shape(v, dim);
  at::Tensor vv = v.to(acc);
  at::Tensor norm = at::linalg_vector_norm(vv, 2, other_dims(v, dim), /*keepdim=*/true);
  at::Tensor w = (vv * (g.to(acc).reshape(shape) / norm)).to(v.scalar_type()).contiguous();
  return {w, norm.to(norm_type).reshape(g.sizes())};
}

std::tuple<at::Tensor, at::Tensor> weight_norm_backward(const at::Tensor& grad_w,
                                                        const at::Tensor& saved_v,
                                                        const at::Tensor& saved_g,
                                                        const at::Tensor& saved_norms,
                                                        int64_t dim) {
  if (on_cpu(saved_v, saved_g)) {
    return cpu_route<at::_ops::_weight_norm_interface_backward>(grad_w, saved_v, saved_g,
                                                                saved_norms, dim);
  }
  check_dim(saved_v, dim);
  if (saved_v.numel() == 0) {
    return {at::empty(saved_v.sizes(), saved_v.options()), at::zeros_like(saved_g)};
  }
  const at::ScalarType acc = at::toOpMathType(saved_v.scalar_type());
  const auto shape = broadcast_shape(saved_v, dim);
  at::Tensor v = saved_v.to(acc), gw = grad_w.to(acc);
  at::Tensor g = saved_g.to(acc).reshape(shape), norms = saved_norms.to(acc).reshape(shape);
  at::Tensor sums = (gw * v).sum(other_dims(saved_v, dim), /*keepdim=*/true);
  at::Tensor grad_v = (g / norms) * (gw - v * (sums / (norms * norms)));
  at::Tensor grad_g = sums / norms;
  return {grad_v.to(saved_v.scalar_type()).contiguous(),
          grad_g.to(saved_g.scalar_type()).reshape(saved_g.sizes()).contiguous()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_weight_norm_interface", TORCH_FN(weight_norm));
  m.impl("_weight_norm_interface_backward", TORCH_FN(weight_norm_backward));
}

}  // namespace vkml_aten
