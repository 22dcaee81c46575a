// nn.Embedding(max_norm=...) renormalizes, in place, the rows its indices name whose
// norm exceeds max_norm, to max_norm / (norm + 1e-7) times themselves, as the CPU does.
// Composed of native ops (unique, index_select, a row norm, index_copy_); each row
// once, so repeated indices scale it once.
#include <ATen/TensorUtils.h>
#include <torch/library.h>

namespace vkml_aten {
namespace {

at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm,
                              double norm_type) {
  at::TensorArg self_arg(self, "self", 1), indices_arg(indices, "indices", 2);
  at::checkDim("embedding_renorm_", self_arg, 2);
  at::checkScalarTypes("embedding_renorm_", indices_arg, {at::kLong, at::kInt});
  if (indices.numel() == 0 || self.numel() == 0) return self;
  at::Tensor rows = std::get<0>(at::_unique(indices.reshape(-1).to(at::kLong), false, false));
  at::Tensor picked = self.index_select(0, rows);
  at::Tensor norms = at::linalg_vector_norm(picked, norm_type, {1}, /*keepdim=*/true);
  at::Tensor scale = at::where(norms.gt(max_norm), norms.add(1e-7).reciprocal().mul_(max_norm),
                               at::ones_like(norms));
  self.index_copy_(0, rows, picked.mul_(scale));
  return self;
}

}  // namespace
}  // namespace vkml_aten

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_renorm_", TORCH_FN(vkml_aten::embedding_renorm_));
}
