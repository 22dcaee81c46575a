// scaled_dot_product_attention: until a fused attention kernel exists (issue 4),
// vkml picks PyTorch's math path, which decomposes into native matmul,
// softmax, masking and dropout ops. Without this choice op the backend query
// itself would fall back to the CPU on every call.
#include <ATen/SDPBackend.h>
#include <torch/library.h>

namespace vkml_aten {
namespace {

int64_t fused_sdp_choice(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                         const std::optional<at::Tensor>&, double, bool, std::optional<double>,
                         bool) {
  return static_cast<int64_t>(at::SDPBackend::math);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice)); }

}  // namespace vkml_aten
