// Autocast on vkml with CUDA's policy: torch.autocast("vkml", dtype=...) runs the
// matrix products, convolutions, RNN cells and attention in the autocast dtype
// (float16 by default, as on CUDA; bfloat16 on request), the ops that lose range or
// precision in 16 bits (exp/log/pow, norms, losses, softmax, sums, upsampling) in
// float32, and the mixed-input ops in their widest input dtype. The op lists are
// PyTorch's own (ATen/autocast_mode.h), shared with CUDA, so vkml follows them as
// they change. Ops in no list run as they are (the fallthrough in fallback.cpp).
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace vkml_aten {
namespace {

// binary_cross_entropy on 16-bit probabilities loses what the sigmoid before it kept;
// CUDA refuses it under autocast, and so does vkml.
at::Tensor bce_refused(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast: run the sigmoid and the loss as one with "
              "torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss, which are safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // The lists' signatures name ATen's types unqualified, as in ATen itself.
  using namespace at;
#define VKML_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define VKML_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define VKML_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define VKML_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
#define VKML_DIFFERENT_REDISPATCH(REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE, \
                                  REDISPATCH_SIGNATURE, POLICY)                       \
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(                                \
      REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE, REDISPATCH_SIGNATURE, POLICY)

  AT_FORALL_LOWER_PRECISION_FP(VKML_LOWER_PRECISION)
  AT_FORALL_FP32(VKML_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(VKML_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(VKML_DIFFERENT_REDISPATCH)
  AT_FORALL_PROMOTE(VKML_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(bce_refused));
  // cross_entropy_loss is in no list: on CUDA its decomposition's log_softmax and
  // nll_loss reach autocast and run in float32, so the loss is float32 and 16-bit
  // logits get their gradient through a cast. vkml's fused kernel (ops_cross_entropy.cpp)
  // replaces that decomposition below autocast, so the cast is made here, before it.
  VKML_FP32(cross_entropy_loss)

#undef VKML_LOWER_PRECISION
#undef VKML_FP32
#undef VKML_FP32_SET_OPT_DTYPE
#undef VKML_PROMOTE
#undef VKML_DIFFERENT_REDISPATCH
}

}  // namespace vkml_aten
